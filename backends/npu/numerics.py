"""Running npuir functions numerically on several ranks at once.

Each rank has an xDSL `Interpreter` with npuir's interpreter functions and its
own values; ranks may run different functions (MPMD) on different shapes.
Ops are pure, so what a function computes does not depend on the order its
ops run in — only on dataflow.  The executor therefore runs each rank's ops in
issue order as their operands become ready and lets a collective wait until
every rank of its group has reached it: a collective of `group_size` G is
formed by consecutive ranks (0..G-1, G..2G-1, ...) and matches the k-th
collective of the same `group` on each of them.  Two ranks issuing two
collectives in opposite order therefore still compute (on the device, their
streams would run them concurrently); whether they finish *in time* is the
simulator's question.

A group that reaches past the ranks run (one rank of a `group_size = 8`
program) is an error naming the collective, unless the caller asks for
`mirror_peers`: then the missing peers are taken to be identical to the ranks
present, cyclically (a single rank's peers are copies of itself), as
`npuir.backends.npu.groups` describes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.interpreter import Interpreter
from xdsl.ir import Block, Operation, SSAValue

from npuir.backends.npu.groups import (
    collectives,
    group_range,
    mismatched_pairs,
    partial_groups,
)
from npuir.backends.npu.interpreters import npu_functions
from npuir.backends.npu.interpreters.gear import NoGearMatch, choose_version
from npuir.backends.npu.kernels import KernelError, MissingKernelError
from npuir.backends.npu.pools import Pool
from npuir.dialects import coreset, gear, mem
from npuir.dialects.npu import CollectiveOp
from npuir.dialects.scope import ScopeOp, Visit, issue_order

Array = np.ndarray[Any, Any]


class NumericsError(Exception):
    """A run that cannot compute: no gear matches, a kernel rejects its inputs, …"""

    def __init__(self, message: str, op: Operation | None = None) -> None:
        super().__init__(message)
        self.op = op


@dataclass
class _Step:
    op: Operation
    closes_scope: bool = False


def _flatten(block: Block) -> list[_Step]:
    """The function's ops in issue order; a scope's results are set when it closes."""
    return [
        _Step(op, closes_scope=visit is Visit.EXIT)
        for visit, op in issue_order(block)
        if visit is not Visit.ENTER and not isinstance(op, coreset.StreamLimitOp)
    ]


def resolve_entry(
    module: ModuleOp, func: FuncOp, shapes: Sequence[tuple[int, ...]]
) -> tuple[FuncOp, str | None]:
    """The function that really runs for `func` on inputs of `shapes`, and which gear.

    A gear dispatcher (a function whose body is a `gear.dispatch`) is entered
    directly: the matching static version runs, so its collectives join the
    other ranks' like any others.
    """
    first = func.body.block.first_op
    if not isinstance(first, gear.DispatchOp):
        return func, None
    try:
        callee, index = choose_version(first, shapes)
    except NoGearMatch as exc:
        raise NumericsError(f"@{func.sym_name.data}: {exc}", first) from None
    target = next(
        (op for op in module.ops if isinstance(op, FuncOp) and op.sym_name.data == callee), None
    )
    if target is None:
        raise NumericsError(f"gear.dispatch names @{callee}, which does not exist", first)
    label = f"@{callee}" + ("" if index is None else f" (gear {index})")
    return target, label


@dataclass
class _Rank:
    index: int
    func: FuncOp
    interpreter: Interpreter
    steps: list[_Step]
    values: dict[SSAValue, Any] = field(default_factory=dict[SSAValue, Any])
    pending: list[int] = field(default_factory=list[int])
    arrived: set[int] = field(default_factory=set[int])
    collective_key: dict[int, tuple[str, int]] = field(default_factory=dict[int, tuple[str, int]])
    outputs: list[Array] | None = None
    pool: Pool | None = None
    """With `--check-memory`: the rank's device memory, and ops run in a hostile order."""
    done: set[Operation] = field(default_factory=set[Operation])


def _make_rank(index: int, module: ModuleOp, func: FuncOp, inputs: Sequence[Array]) -> _Rank:
    interpreter = Interpreter(module)
    for functions in npu_functions():
        interpreter.register_implementations(functions)
    steps = _flatten(func.body.block)
    rank = _Rank(index, func, interpreter, steps)
    args = func.body.block.args
    if len(inputs) != len(args):
        raise NumericsError(f"@{func.sym_name.data} takes {len(args)} inputs, got {len(inputs)}")
    rank.values.update(zip(args, inputs))
    rank.pending = list(range(len(steps)))
    seen: dict[str, int] = {}
    for i, step in enumerate(steps):
        if isinstance(step.op, CollectiveOp) and not step.closes_scope:
            k = seen.get(step.op.group, 0)
            seen[step.op.group] = k + 1
            rank.collective_key[i] = (step.op.group, k)
    return rank


def _ready(rank: _Rank, step: _Step) -> bool:
    if isinstance(step.op, ScopeOp) and step.closes_scope:
        return all(v in rank.values for v in step.op.yielded())
    return all(v in rank.values for v in step.op.operands)


def _execute(rank: _Rank, step: _Step) -> None:
    op = step.op
    if isinstance(op, ScopeOp) and step.closes_scope:
        rank.values.update(zip(op.results, (rank.values[v] for v in op.yielded())))
        return
    args = tuple(rank.values[v] for v in op.operands)
    if isinstance(op, ReturnOp):
        rank.outputs = [np.array(a) if rank.pool is not None else a for a in args]
        return
    if rank.pool is not None and op.name not in mem.VIEW_OPS:
        rank.pool.poison(op.results)
    try:
        results = rank.interpreter.run_op(op, args)
    except (KernelError, MissingKernelError, ValueError) as exc:
        raise NumericsError(f"rank {rank.index}: {exc}", op) from None
    if rank.pool is not None:
        results = tuple(rank.pool.place(r, v) for r, v in zip(op.results, results, strict=False))
        rank.done.add(op)
    rank.values.update(zip(op.results, results))


def _candidates(rank: _Rank) -> list[int]:
    """The steps to try, in order: every pending one in issue order, or on a pool only the
    latest-issued of those happens-before lets start (one step per pass)."""
    if rank.pool is None:
        return list(rank.pending)
    preds = rank.pool.layout.preds
    done = rank.done
    for i in reversed(rank.pending):
        if i in rank.arrived:
            continue
        op = rank.steps[i].op
        if all(p in done for p in preds.get(op, ())) and _ready(rank, rank.steps[i]):
            return [i]
    return []


def _collective_inputs(member: tuple[_Rank, int]) -> list[Array]:
    rank, step = member
    return [rank.values[v] for v in rank.steps[step].op.operands]


def _run_collective(members: list[tuple[_Rank, int]], group_size: int) -> None:
    present = len(members)
    # Each operand stacked over the group (an MC2 collective has two: input and weight).
    per_rank = [_collective_inputs(members[i % present]) for i in range(group_size)]
    stacked = [operands[0] for operands in per_rank]
    first_rank, first_step = members[0]
    op = first_rank.steps[first_step].op
    shapes = {tuple(x.shape) for x in stacked}
    if len(shapes) != 1:
        raise NumericsError(
            f"collective '{op.name}' of group \"{getattr(op, 'group', '?')}\" gets inputs of "
            f"different shapes on its ranks: {sorted(shapes)}",
            op,
        )
    try:
        args = tuple(np.stack(column) for column in zip(*per_rank, strict=True))
        (out,) = first_rank.interpreter.run_op(op, args)
    except (KernelError, ValueError) as exc:
        raise NumericsError(str(exc), op) from None
    for position, (rank, step) in enumerate(members):
        result = rank.steps[step].op.results[0]
        rank.values[result] = (
            out[position] if rank.pool is None else rank.pool.place(result, out[position])
        )
        rank.done.add(rank.steps[step].op)
        rank.pending.remove(step)
        rank.arrived.discard(step)


def run_ranks(
    module: ModuleOp,
    funcs: Sequence[FuncOp],
    inputs: Sequence[Sequence[Array]],
    *,
    mirror_peers: bool = False,
    pools: Sequence[Pool] | None = None,
) -> list[list[Array]]:
    """Run `funcs[r]` on `inputs[r]` for every rank r; return each rank's outputs.

    Raises `NumericsError` at the first collective that differs from the one it pairs
    with on another rank (`groups.mismatched_pairs`), and at the first whose group is
    partial, unless `mirror_peers` (see the module docstring).  With `pools` (one per rank,
    lowered functions with a memory plan) every value lives in its rank's pool and the ops
    run in the hostile order `npuir.backends.npu.pools` describes.
    """
    mismatched = mismatched_pairs([collectives(f) for f in funcs], len(funcs))
    if mismatched:
        raise NumericsError(mismatched[0].describe(), mismatched[0].op)
    if not mirror_peers:
        partial = partial_groups([collectives(f) for f in funcs], len(funcs))
        if partial:
            raise NumericsError(partial[0].describe(), partial[0].op)
    ranks = [_make_rank(r, module, f, x) for r, (f, x) in enumerate(zip(funcs, inputs))]
    if pools is not None:
        for rank, pool in zip(ranks, pools, strict=True):
            rank.pool = pool
    waiting: dict[tuple[str, int, int], dict[int, int]] = {}
    while True:
        progress = False
        for rank in ranks:
            for i in _candidates(rank):
                if i in rank.arrived:
                    continue
                step = rank.steps[i]
                if not _ready(rank, step):
                    continue
                key = rank.collective_key.get(i)
                if key is None:
                    _execute(rank, step)
                    rank.pending.remove(i)
                    progress = True
                    continue
                op = step.op
                assert isinstance(op, CollectiveOp)
                group_size = op.group_size
                slot = (key[0], key[1], rank.index // group_size)
                waiting.setdefault(slot, {})[rank.index] = i
                rank.arrived.add(i)
                progress = True
                expected = [r for r in group_range(rank.index, group_size) if r < len(ranks)]
                if set(waiting[slot]) == set(expected):
                    members = [(ranks[r], waiting[slot][r]) for r in expected]
                    del waiting[slot]
                    _run_collective(members, group_size)
        if all(not r.pending for r in ranks):
            break
        if not progress:
            stuck = [
                f"rank {r.index} at '{r.steps[i].op.name}' (group \"{r.collective_key[i][0]}\", "
                f"#{r.collective_key[i][1]})"
                for r in ranks
                for i in sorted(r.arrived)
            ]
            raise NumericsError(
                "the ranks' collectives cannot be matched: " + "; ".join(stuck or ["no progress"])
            )
    out: list[list[Array]] = []
    for rank in ranks:
        assert rank.outputs is not None
        out.append(rank.outputs)
    return out
