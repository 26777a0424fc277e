"""`coreset-partition`: choose core limits that make a partitioned program hazard-free.

Runs after `stream-partition` and before `coreset-lower`.  The hazards are
those of `coreset-check`: a `full_core_sync` op that can run at the same time
as another core-holding op (an aiv collective, or another `full_core_sync`
op) on another stream, when their demands on one engine exceed the device.

The choice, per function:

1. Find the *flexible* holders: `full_core_sync` ops whose count on an engine
   comes from no user limit (they would ask for every core).  Limits the user
   wrote are kept as they are.
2. For each, the room it may take is the device's count minus the largest
   demand of a holder it can overlap: any value from 1 to that room removes
   its hazards (and keeps the stream pair rule for the streams involved).
3. Candidates: the room, its halves down to 1, per flexible holder; for up to
   `budget` combinations, lower a copy, simulate it with the cost model and
   keep the combination with the lowest makespan (ties: more cores).
4. Write the choice: a `coreset.stream_limit` when the op is the only user of
   that engine on its stream, otherwise a `coreset.limit` scope around the op
   (limiting the whole stream would slow its other ops), and report it.

If a hazard remains with no flexible op to limit (two user-limited holders
that do not fit together), the pass says so at the op: only the user can
choose which of their limits to give up.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, Region
from xdsl.passes import ModulePass

from npuir.analysis.core_limits import CoreLimits, engines_used
from npuir.analysis.program import build_program, module_streams, scheduled_functions
from npuir.backends.npu.hardware import Hardware
from npuir.backends.npu.simulator import simulate
from npuir.context import remark, warn
from npuir.diagnostics import error
from npuir.dialects import coreset, stream
from npuir.dialects.npu import NpuOp
from npuir.pipeline import build_pipeline, run_passes
from npuir.transforms.coreset_check import CoreChecker
from npuir.transforms.coreset_lower import device_of

LOWER = "coreset-lower,insert-events"


@dataclass(frozen=True)
class Choice:
    """One flexible holder's limit on one engine."""

    func: str
    op_index: int
    engine: str
    count: int


def _ops(module: ModuleOp, func_name: str) -> list[Operation]:
    func = next(f for f in module.ops if isinstance(f, FuncOp) and f.sym_name.data == func_name)
    return list(func.body.walk())


def _apply(module: ModuleOp, choices: list[Choice]) -> None:
    """Wrap each chosen op in a `coreset.limit` (a copy is then lowered and simulated)."""
    for c in choices:
        op = _ops(module, c.func)[c.op_index]
        _wrap(op, c.engine, c.count)


def _wrap(op: Operation, engine: str, count: int) -> coreset.LimitOp:
    """Put `op` alone in a `coreset.limit` scope giving `engine` `count` cores."""
    block = op.parent_block()
    assert block is not None
    body = Block()
    scope = coreset.LimitOp(
        count if engine == "cube" else None,
        count if engine == "vector" else None,
        Region(body),
        [r.type for r in op.results],
    )
    scope.location = op.location
    block.insert_op_before(scope, op)
    for result, new in zip(op.results, scope.results):
        result.replace_all_uses_with(new)
    op.detach()
    body.add_op(op)
    body.add_op(coreset.YieldOp(*op.results))
    return scope


class _Search:
    def __init__(self, ctx: Context, module: ModuleOp, hw: Hardware) -> None:
        self.ctx = ctx
        self.module = module
        self.hw = hw

    def lowered(self, choices: list[Choice]) -> ModuleOp:
        copy = self.module.clone()
        _apply(copy, choices)
        run_passes(self.ctx, copy, build_pipeline(LOWER), verify_each=False)
        return copy

    def makespan(self, copy: ModuleOp) -> int | None:
        """Sum over functions of the single-rank makespan; None if any deadlocks."""
        streams = module_streams(copy)
        total = 0
        for func in scheduled_functions(copy):
            result = simulate([build_program(func, streams)], self.hw)
            if result.deadlock is not None:
                return None
            total += result.makespan_ns
        return total

    def hazards(self, copy: ModuleOp) -> list[tuple[str, int, int, str, int]]:
        """(function, holder node, other node, engine, other's demand) per hazard."""
        limits = CoreLimits(copy, self.hw).run()
        streams = module_streams(copy)
        out = []
        for func in scheduled_functions(copy):
            prog = build_program(func, streams)
            for h in CoreChecker(prog, limits, self.hw).hazards():
                out.append((func.sym_name.data, h.holder, h.other, h.engine, h.other_demand))
        return out


@dataclass(frozen=True)
class CoresetPartitionPass(ModulePass):
    """Choose core limits that remove hold-and-wait hazards, keeping the simulated makespan low.

    Options:
    - `hw`: the device preset or TOML file (default: the module's `npu.target`,
      else 910b2).
    - `budget`: the most limit combinations to simulate (default 64).
    """

    name = "coreset-partition"

    hw: str | None = None
    budget: int = 64

    def __post_init__(self) -> None:
        if self.budget < 1:
            raise ValueError(f"budget must be >= 1, got {self.budget}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not module_streams(op):
            raise error(
                op, "coreset-partition needs a partitioned module; run stream-partition first"
            )
        hw = device_of(op, self.hw)
        search = _Search(ctx, op, hw)
        base = search.lowered([])
        hazards = search.hazards(base)
        if not hazards:
            return
        limits = CoreLimits(op, hw).run()
        candidates: dict[tuple[str, int, str], int] = {}
        stuck: list[tuple[str, int]] = []
        base_ops = {
            f.sym_name.data: build_program(f, module_streams(base))
            for f in scheduled_functions(base)
        }
        for func_name, holder, _other, engine, other_demand in hazards:
            prog = base_ops[func_name]
            lowered_op = prog.ops[holder]
            index = self._source_index(op, func_name, lowered_op)
            source = _ops(op, func_name)[index]
            assert isinstance(source, NpuOp)
            if limits.limit(source, engine).source is not None:
                stuck.append((func_name, index))
                continue
            room = hw.cores(engine) - other_demand
            key = (func_name, index, engine)
            candidates[key] = min(room, candidates.get(key, room))
        if not candidates:
            func_name, index = stuck[0]
            raise error(
                _ops(op, func_name)[index],
                "coreset-partition cannot remove this hazard: every op involved has a limit the "
                "user set; lower one of them",
            )
        keys = sorted(candidates)
        options = []
        for key in keys:
            room = candidates[key]
            values = []
            v = room
            while v >= 1:
                values.append(v)
                v //= 2
            options.append(values or [1])
        best: tuple[int, list[int], list[Choice]] | None = None
        for combo in itertools.islice(itertools.product(*options), self.budget):
            choices = [Choice(f, i, e, c) for (f, i, e), c in zip(keys, combo)]
            copy = search.lowered(choices)
            if search.hazards(copy):
                continue
            span = search.makespan(copy)
            if span is None:
                continue
            rank = (span, [-c for c in combo], choices)
            if best is None or rank[:2] < best[:2]:
                best = rank
        if best is None:
            warn(ctx, op, "coreset-partition found no hazard-free limits within its budget")
            return
        chosen = best[2]
        for c in chosen:
            target = _ops(op, c.func)[c.op_index]
            name = target.results[0].name_hint if target.results else None
            what = f"'{target.name}'" + (f" (%{name})" if name else "")
            remark(
                ctx,
                target,
                f"coreset-partition limits {what} in @{c.func} to {c.count} {c.engine} cores "
                f"(simulated makespans of the module's functions sum to {best[0]} ns)",
            )
        self._write(op, chosen)

    @staticmethod
    def _source_index(module: ModuleOp, func_name: str, lowered_op: Operation) -> int:
        """Index (in walk order) of the op in `module` that `lowered_op` was cloned from."""
        for i, candidate in enumerate(_ops(module, func_name)):
            if candidate.location == lowered_op.location and candidate.name == lowered_op.name:
                return i
        raise AssertionError("a lowered op has no source op")

    @staticmethod
    def _write(module: ModuleOp, chosen: list[Choice]) -> None:
        ops_by_func = {c.func: _ops(module, c.func) for c in chosen}
        for c in chosen:
            op = ops_by_func[c.func][c.op_index]
            assert isinstance(op, NpuOp)
            tag = _stream_tag(module, op)
            same_engine = [
                o
                for o in ops_by_func[c.func]
                if isinstance(o, NpuOp)
                and o is not op
                and c.engine in engines_used(o)
                and _stream_tag(module, o) == tag
            ]
            if not same_engine and tag is not None:
                limit = coreset.StreamLimitOp(
                    tag,
                    c.count if c.engine == "cube" else None,
                    c.count if c.engine == "vector" else None,
                )
                limit.location = op.location
                func = op.parent_op()
                while func is not None and not isinstance(func, FuncOp):
                    func = func.parent_op()
                assert isinstance(func, FuncOp)
                first = func.body.block.first_op
                assert first is not None
                func.body.block.insert_op_before(limit, first)
            else:
                _wrap(op, c.engine, c.count)


def _stream_tag(module: ModuleOp, op: Operation) -> str | None:
    symbol = stream.stream_of(op)
    for decl in module.ops:
        if isinstance(decl, stream.DeclOp) and decl.symbol == symbol:
            return decl.tag.data
    return None
