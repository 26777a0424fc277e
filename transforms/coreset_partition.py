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
   `budget` combinations, judge it on the compact program `coreset-lower` and
   `insert-events` would produce (`npuir.schedule`: the same event plan, the
   limits overridden, the same simulator) and keep the combination with the
   lowest makespan (ties: more cores).
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
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from npuir.analysis.core_limits import CoreLimits, engines_used, limit_fn
from npuir.analysis.events import lowered_program
from npuir.analysis.partition import Assignment
from npuir.analysis.program import (
    NOT_PARTITIONED,
    NodeKind,
    Program,
    build_program,
    module_streams,
    scheduled_functions,
)
from npuir.backends.npu.hardware import Hardware
from npuir.backends.npu.profile import Profile, read_profile
from npuir.backends.npu.simulator import SimCache, simulate
from npuir.context import remark, warn
from npuir.diagnostics import Kind, error
from npuir.dialects import coreset, stream
from npuir.dialects.npu import NpuOp
from npuir.passes import LIMITS_LOWERED, PARTITIONED, IRState, option
from npuir.schedule.auto import INFEASIBLE, Judge
from npuir.schedule.core_check import CoreChecker, OverriddenLimits
from npuir.schedule.device import device_of

LIMITS_CHOSEN = Kind(
    "core.limits-chosen",
    "coreset-partition limits {limited} in @{function} to {count} {engine} cores (simulated "
    "makespans of the module's functions sum to {makespan_ns} ns)",
)
"""The limits coreset-partition chose; arguments: `limited` (the op), `function`, `count`, `engine`,
`makespan_ns`."""
NO_HAZARD_FREE_LIMITS = Kind(
    "core.no-hazard-free-limits", "coreset-partition found no hazard-free limits within its budget"
)
"""No hazard-free limits within the budget."""
HAZARD_UNFIXABLE = Kind(
    "core.hazard-unfixable",
    "coreset-partition cannot remove this hazard: every op involved has a limit the user set; "
    "lower one of them",
)
"""A hazard whose ops all carry user limits."""


@dataclass(frozen=True)
class Choice:
    """One flexible holder's limit on one engine (`op` is in the module being partitioned)."""

    op: NpuOp
    engine: str
    count: int


@dataclass(frozen=True)
class Found:
    """A hazard at the op of the module it involves."""

    holder: NpuOp
    engine: str
    other_demand: int


def _with_events(prog: Program) -> Program:
    """The compact program `insert-events` would make of a partitioned function."""
    if any(k in (NodeKind.RECORD, NodeKind.WAIT) for k in prog.kind):
        return prog
    lowered, _ = lowered_program(prog, Assignment(prog.streams, prog.stream))
    return lowered


class _Search:
    """Judges limit choices on a partitioned module with the judge `auto` uses.

    Nothing is rewritten while judging: a choice overrides the limits `coreset-lower` would
    write.  The makespan is `npuir.schedule.auto.Judge`'s -- the function's own streams as
    an assignment, lowered with the events `insert-events` would insert, simulated on one
    rank -- so that `stream-partition{mode=auto limits=true}` and this pass judge limits
    alike; the hazards are `coreset-check`'s, on the same lowered program.
    """

    def __init__(self, module: ModuleOp, hw: Hardware, profile: Profile | None = None) -> None:
        self.hw = hw
        self.profile = profile
        self.limits = CoreLimits(module, hw).run()
        streams = module_streams(module)
        self.sources = [build_program(f, streams) for f in scheduled_functions(module)]
        self.programs = [_with_events(p) for p in self.sources]
        self.cache = SimCache(hw)
        # Happens-before does not depend on the limits: compute it once per function.
        self.checkers = [CoreChecker(p, self.limits, hw) for p in self.programs]

    def _limits(self, choices: list[Choice]) -> OverriddenLimits:
        return OverriddenLimits(self.limits, {(c.op, c.engine): c.count for c in choices})

    def hazards(self, choices: list[Choice]) -> list[Found]:
        limits = self._limits(choices)
        out: list[Found] = []
        for base in self.checkers:
            checker = CoreChecker(base.prog, limits, self.hw, base.hb)
            for h in checker.hazards():
                holder = base.prog.ops[h.holder]
                assert isinstance(holder, NpuOp)
                out.append(Found(holder, h.engine, h.other_demand))
        return out

    def makespan(self, choices: list[Choice]) -> int | None:
        """Sum over functions of the judged makespan; None if any deadlocks."""
        limit = limit_fn(self._limits(choices))
        total = 0
        for source, lowered in zip(self.sources, self.programs):
            if lowered is source:  # already lowered: its events are in it
                result = simulate(
                    [lowered],
                    self.hw,
                    limits=limit,
                    cache=self.cache,
                    mirror_peers=True,
                    profile=self.profile,
                )
                span = result.makespan_ns if result.deadlock is None else INFEASIBLE
            else:
                judge = Judge(source, self.hw, limit, self.profile, self.cache)
                span = judge(
                    "coreset-partition", Assignment(source.streams, source.stream)
                ).makespan
            if span >= INFEASIBLE:
                return None
            total += span
        return total


def _halvings(room: int) -> list[int]:
    """room, room // 2, ... down to 1."""
    values = []
    while room >= 1:
        values.append(room)
        room //= 2
    return values or [1]


def _function_of(op: Operation) -> FuncOp:
    func = op.parent_op()
    while not isinstance(func, FuncOp):
        assert func is not None
        func = func.parent_op()
    return func


@dataclass(frozen=True)
class CoresetPartitionPass(ModulePass):
    """Choose core limits that remove hold-and-wait hazards, keeping the simulated makespan low."""

    name = "coreset-partition"

    REQUIRES: ClassVar[tuple[IRState, ...]] = (PARTITIONED,)
    # The limits it chooses are coreset.limit scopes (or stream limits) for coreset-lower.
    INVALIDATES: ClassVar[tuple[IRState, ...]] = (LIMITS_LOWERED,)

    hw: str | None = option(
        None, "the device preset or TOML file (default: the module's npu.target, else 910b2)"
    )
    budget: int = option(64, "the most limit combinations to simulate")
    profile: str | None = option(
        None,
        "an msprof-style op summary CSV whose task durations and block dims the simulations "
        "use instead of the cost model's for the ops it covers (npuir.backends.npu.profile)",
    )

    def __post_init__(self) -> None:
        if self.budget < 1:
            raise ValueError(f"budget must be >= 1, got {self.budget}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not module_streams(op):
            where = next(iter(scheduled_functions(op)), op)
            raise error(where, NOT_PARTITIONED, needs="coreset-partition", unit="module")
        hw = device_of(op, self.hw)
        search = _Search(op, hw, read_profile(self.profile) if self.profile else None)
        hazards = search.hazards([])
        if not hazards:
            return
        limits = search.limits
        order = {o: i for i, o in enumerate(op.walk())}
        rooms: dict[tuple[NpuOp, str], int] = {}
        stuck: list[NpuOp] = []
        for found in hazards:
            if limits.limit(found.holder, found.engine).source is not None:
                stuck.append(found.holder)
                continue
            key = (found.holder, found.engine)
            room = hw.cores(found.engine) - found.other_demand
            rooms[key] = min(room, rooms.get(key, room))
        if not rooms:
            raise error(stuck[0], HAZARD_UNFIXABLE)
        keys = sorted(rooms, key=lambda k: (order[k[0]], k[1]))
        best: tuple[int, list[int], list[Choice]] | None = None
        options = [_halvings(rooms[k]) for k in keys]
        for combo in itertools.islice(itertools.product(*options), self.budget):
            choices = [Choice(o, e, c) for (o, e), c in zip(keys, combo)]
            if search.hazards(choices):
                continue
            span = search.makespan(choices)
            if span is None:
                continue
            rank = (span, [-c for c in combo], choices)
            if best is None or rank[:2] < best[:2]:
                best = rank
        if best is None:
            warn(ctx, op, NO_HAZARD_FREE_LIMITS)
            return
        for c in best[2]:
            name = c.op.results[0].name_hint if c.op.results else None
            what = f"'{c.op.name}'" + (f" (%{name})" if name else "")
            remark(
                ctx,
                c.op,
                LIMITS_CHOSEN,
                limited=what,
                function=_function_of(c.op).sym_name.data,
                count=c.count,
                engine=c.engine,
                makespan_ns=best[0],
            )
        self._write(op, best[2])

    @staticmethod
    def _write(module: ModuleOp, chosen: list[Choice]) -> None:
        tags = {d.symbol: d.tag.data for d in module.ops if isinstance(d, stream.DeclOp)}

        def tag_of(o: Operation) -> str | None:
            symbol = stream.stream_of(o)
            return None if symbol is None else tags.get(symbol)

        for c in chosen:
            func = _function_of(c.op)
            tag = tag_of(c.op)
            shares_engine = any(
                isinstance(o, NpuOp)
                and o is not c.op
                and c.engine in engines_used(o)
                and tag_of(o) == tag
                for o in func.body.walk()
            )
            if shares_engine or tag is None:
                coreset.wrap(c.op, c.engine, c.count)
                continue
            limit = coreset.StreamLimitOp(
                tag,
                c.count if c.engine == "cube" else None,
                c.count if c.engine == "vector" else None,
            )
            limit.location = c.op.location
            first = func.body.block.first_op
            assert first is not None
            func.body.block.insert_op_before(limit, first)
