"""Keeping seed 003's pair rule when a mode places ops.

Seed 003: "any two streams' cores together must not exceed the device's"
(任意两条流使用的核总数不能超过当前设备核的总数); `coreset-check` refuses a lowered function
that breaks it (`npuir.transforms.coreset_check`).  The written program can keep the rule
by order alone: ops on the default stream run one after another, so a limited stream that
starts after the default stream's last vector op never overlaps it.  A mode that moves some
of those ops onto streams of its own (nimble's path cover, opara's, minidag's merged
paths, one stream per engine), onto the user's streams (auto) or issues them in another
order takes that order away, and two streams that never overlapped as written now can --
one of them at the device's full cores beside a limited one.  The mode would then build a
program its own check refuses, from one the check accepts.

`keep_pair_rule` judges a mode's assignment as `coreset-check` will judge the lowered
function (the collective chain, the events, the core limits each op will have on its new
stream) and, when it breaks the rule where the written partition keeps it, undoes the
mode's moves one at a time, greedily, each time taking the undo that leaves the fewest
violations:

- **merge**: a stream the mode made goes back onto the default stream (where the written
  program ran its ops), in the mode's issue order;
- **return**: the ops the mode put on one of the user's streams, though no scope pins them
  there, go back onto the default stream.

When no single undo lowers the count, every move is undone at once (the written streams
in the mode's order), then the written order is restored too; what is left is the written
partition itself, which keeps the rule: the **fallback**.  Undoing only ever serialises
work, so a repaired assignment is as correct as the mode's; it is as fast as the mode's
where the violating streams had nothing to overlap, and no slower than the written one
in the cost model's usual case.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from enum import StrEnum

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation

from npuir.analysis.core_limits import ENGINES, CoreLimits, limit_has_no_effect
from npuir.analysis.events import lowered_program
from npuir.analysis.partition import Assignment, permuted
from npuir.analysis.program import DEFAULT_STREAM, DepKind, NodeKind, Program
from npuir.backends.npu.hardware import Hardware
from npuir.dialects import coreset, stream
from npuir.dialects.npu import CollectiveOp, NpuOp
from npuir.schedule.core_check import CoreChecker, Limits, OverriddenLimits, PairViolation


class Outcome(StrEnum):
    """What `keep_pair_rule` did to a mode's assignment."""

    KEPT = "kept"
    """The mode's assignment keeps the rule (or the written one breaks it too)."""
    REPAIRED = "repaired"
    """Some of the mode's moves were undone; the rest of its placement stands."""
    WRITTEN = "written"
    """Nothing short of the written partition keeps the rule: the fallback."""


@dataclass(frozen=True)
class Found:
    """One pair-rule violation of an assignment, by stream tag, with the op it points at."""

    first: str
    second: str
    engine: str
    limits: tuple[int, int]
    at: Operation


@dataclass(frozen=True)
class Kept:
    """`keep_pair_rule`'s answer: the assignment to use and how it came about."""

    assignment: Assignment
    outcome: Outcome
    found: Found | None = None
    """The mode's first violation (None when it had none)."""
    undone: tuple[str, ...] = ()
    """The streams whose moves were undone (by tag), in the order they were undone."""
    order_restored: bool = False
    """Whether the written issue order replaced the mode's."""


def stream_limit_table(module: ModuleOp, prog: Program) -> dict[str, dict[str, int]]:
    """Per stream tag, the counts `coreset.stream_limit` gives it in `prog`'s function (the
    function's own over the module's, engine by engine; `-1` gives none)."""
    table: dict[str, dict[str, int]] = {}
    limits = [op for op in module.ops if isinstance(op, coreset.StreamLimitOp)]
    limits += [op for op in prog.func.body.walk() if isinstance(op, coreset.StreamLimitOp)]
    for op in limits:
        given = {e: c for e in ENGINES if (c := op.limit(e)) is not None}
        table.setdefault(op.tag.data, {}).update(given)
    return table


def _fallback_count(module: ModuleOp, hw: Hardware, engine: str) -> int:
    """What an op no scope or stream limits gets: the module's global limit, else the device."""
    attr = module.attributes.get(coreset.GLOBAL)
    count = attr.count(engine) if isinstance(attr, coreset.CoresAttr) else None
    return count if count is not None else hw.cores(engine)


def placed_limits(
    base: CoreLimits,
    prog: Program,
    pinned: Sequence[str | None],
    assignment: Assignment,
    table: Mapping[str, Mapping[str, int]],
    hw: Hardware,
) -> Limits:
    """Each op's counts once `assignment` is written: what `coreset-check` will read.

    `base` resolved every op on the stream of its scope (the default one when unpinned); an
    op the mode moved takes its new stream's `coreset.stream_limit` where no `coreset.limit`
    scope gives the count (precedence: scope, stream, global, device), and the limits the
    assignment chose itself (auto's) over all of them."""
    module = base.module
    overrides: dict[tuple[Operation, str], int] = {}
    for n, op in enumerate(prog.ops):
        if prog.kind[n] is not NodeKind.COMPUTE or pinned[n] is not None:
            continue
        assert isinstance(op, NpuOp)
        tag = assignment.streams[assignment.stream_of[n]].tag
        given = table.get(tag, {})
        for engine in ENGINES:
            if isinstance(base.limit(op, engine).source, coreset.LimitOp):
                continue  # a scope's count wins wherever the op runs
            count = given.get(engine)
            if count is None or limit_has_no_effect(op, engine) is not None:
                count = _fallback_count(module, hw, engine)
            if count != base.of(op)[engine]:
                overrides[(op, engine)] = count
    for n, engine, count in assignment.limits:
        overrides[(prog.ops[n], engine)] = count
    return as_lowered(OverriddenLimits(base, overrides) if overrides else base, hw)


def as_lowered(limits: Limits, hw: Hardware) -> Limits:
    """`limits` as `coreset-check` reads them after `coreset-lower` (`_AsLowered`)."""
    return _AsLowered(limits, hw)


_IN_SEARCH: ContextVar[bool] = ContextVar("npuir_keep_pair_rule_in_search", default=False)


@contextmanager
def keep_pair_rule_in_search() -> Iterator[None]:
    """Within this block, `auto`'s search judges a schedule that breaks the pair rule
    infeasible (`npuir.schedule.auto.Judge`): `stream-partition` opens it around auto's
    assignment of a function whose written partition keeps the rule, so that the search
    looks for the fastest schedule that keeps it rather than having its winner undone."""
    token = _IN_SEARCH.set(True)
    try:
        yield
    finally:
        _IN_SEARCH.reset(token)


def keeping_pair_rule() -> bool:
    """Whether a `keep_pair_rule_in_search` block is open."""
    return _IN_SEARCH.get()


@dataclass(frozen=True)
class _AsLowered:
    """`limits` as `coreset-check` reads them after `coreset-lower`: each op carries its
    count, and a count equal to the device's reads as no limit (it sums the same)."""

    limits: Limits
    hw: Hardware

    def of(self, op: NpuOp) -> Mapping[str, int]:
        return self.limits.of(op)

    def configured(self, op: NpuOp, engine: str) -> bool:
        return self.limits.configured(op, engine) and (
            self.limits.of(op)[engine] < self.hw.cores(engine)
        )


def violations(
    prog: Program, assignment: Assignment, limits: Limits, hw: Hardware, chained: bool
) -> list[Found]:
    """The pair-rule violations of `prog` run as `assignment` says, ordered as
    `stream-partition` and `insert-events` order it: with the collective chain when
    `chained` (a mode that places ops adds it), in the assignment's issue order."""
    if chained:
        prog = _with_flat_chain(prog)
    if assignment.order is not None:
        prog = permuted(prog, assignment.order)
        assignment = dataclasses.replace(
            assignment, stream_of=[assignment.stream_of[n] for n in assignment.order]
        )
    lowered, _ = lowered_program(prog, assignment)
    out: list[Found] = []
    for v in CoreChecker(lowered, limits, hw).pair_violations():
        at = v.at[1] if v.configured[1] else v.at[0]
        out.append(_found(assignment, v, lowered.ops[at]))
    return out


def _flat_home(op: Operation) -> Block | None:
    """The block `op` stands in once `stream-partition` has flattened its `stream.switch`
    scopes (a `coreset.limit` scope stays)."""
    block = op.parent_block()
    while block is not None and isinstance(block.parent_op(), stream.SwitchOp):
        switch = block.parent_op()
        assert switch is not None
        block = switch.parent_block()
    return block


def _with_flat_chain(prog: Program) -> Program:
    """`prog` with each collective ordered after the previous one of its group, as
    `stream-partition`'s `chain_collectives` orders them -- on the function with its
    `stream.switch` scopes flattened, where a previous collective is visible unless a
    `coreset.limit` scope holds it and not the later one.  (`with_collective_chain` judges
    visibility before flattening, so it leaves out a pair in two different switch scopes,
    which the pass chains.)"""
    last: dict[str, int] = {}
    added: dict[int, int] = {}
    for n, op in enumerate(prog.ops):
        if not isinstance(op, CollectiveOp):
            continue
        previous = last.get(op.group)
        last[op.group] = n
        if previous is None or any(p == previous for p, _ in prog.deps[n]):
            continue
        home = _flat_home(prog.ops[previous])
        current: Operation | None = op
        while current is not None and _flat_home(current) is not home:
            current = current.parent_op()
        if current is not None:
            added[n] = previous
    if not added:
        return prog
    deps = [[*d, (added[n], DepKind.CONTROL)] if n in added else d for n, d in enumerate(prog.deps)]
    return dataclasses.replace(prog, deps=deps)


def _found(assignment: Assignment, v: PairViolation, at: Operation) -> Found:
    tags = [info.tag for info in assignment.streams]
    return Found(tags[v.first], tags[v.second], v.engine, v.limits, at)


def _undo(assignment: Assignment, written: Assignment, streams: set[int]) -> Assignment:
    """`assignment` with the unpinned ops on `streams` back on the default stream (pinned
    ops stay: they are on `written`'s streams already), empty streams the mode made
    dropped."""
    stream_of = [
        DEFAULT_STREAM if s in streams and w == DEFAULT_STREAM else s
        for s, w in zip(assignment.stream_of, written.stream_of)
    ]
    keep_tags = {info.tag for info in written.streams}
    used = set(stream_of) | {DEFAULT_STREAM}
    kept = [i for i, info in enumerate(assignment.streams) if i in used or info.tag in keep_tags]
    renumber = {old: new for new, old in enumerate(kept)}
    return dataclasses.replace(
        assignment,
        streams=[assignment.streams[i] for i in kept],
        stream_of=[renumber[s] for s in stream_of],
    )


def _moves(assignment: Assignment, written: Assignment) -> list[int]:
    """The streams holding an op the written partition runs on the default stream: the
    streams the mode made, and the user's streams it put unpinned ops on."""
    return sorted(
        {
            s
            for s, w in zip(assignment.stream_of, written.stream_of)
            if w == DEFAULT_STREAM and s != DEFAULT_STREAM
        }
    )


def keep_pair_rule(
    prog: Program,
    placed: Assignment,
    written: Assignment,
    limits_of: Callable[[Assignment], Limits],
    hw: Hardware,
) -> Kept:
    """`placed` (a mode's assignment of `prog`), or the least undoing of it that keeps the
    pair rule where `written` (the written partition: `user`, or `single` under
    ignore-tags) keeps it; `limits_of` gives each op's counts under an assignment
    (`placed_limits`).  The module docstring describes the search."""
    found = violations(prog, placed, limits_of(placed), hw, chained=True)
    if not found:
        return Kept(placed, Outcome.KEPT)
    if violations(prog, written, limits_of(written), hw, chained=False):
        # The written program breaks the rule itself: coreset-check says so either way.
        return Kept(placed, Outcome.KEPT, found[0])

    def count(a: Assignment) -> int:
        return len(violations(prog, a, limits_of(a), hw, chained=True))

    current, left, undone = placed, len(found), []
    while True:
        moves = _moves(current, written)
        if not moves:
            break
        undos = [(s, _undo(current, written, {s})) for s in moves]
        scored = [(count(a), i) for i, (_, a) in enumerate(undos)]
        best, i = min(scored)
        s, a = undos[i]
        if best >= left:
            break
        undone.append(current.streams[s].tag)
        current, left = a, best
        if left == 0:
            return Kept(current, Outcome.REPAIRED, found[0], tuple(undone))
    moves = _moves(current, written)
    if moves:
        undone += [current.streams[s].tag for s in moves]
        current = _undo(current, written, set(moves))
        if count(current) == 0:
            return Kept(current, Outcome.REPAIRED, found[0], tuple(undone))
    if current.order is not None:
        current = dataclasses.replace(current, order=None)
        if count(current) == 0:
            return Kept(current, Outcome.REPAIRED, found[0], tuple(undone), order_restored=True)
    return Kept(written, Outcome.WRITTEN, found[0], tuple(undone))
