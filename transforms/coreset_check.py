"""`coreset-check`: the core-limiting rules — the stream pair rule and hold-and-wait hazards.

The pair rule (the core-limiting seed's): for two streams that can run at the
same time, the cores their ops may hold together must fit the device, for
cube and for vector separately.  It is a rule about *limits*, so a stream
counts for an engine when each of its ops using that engine has a configured
limit below the device's count (an op scope, a stream limit or the module's
global limit); an op holds
at most `min(limit, parallelism)` cores, or its whole limit when it must hold
its cores before it starts (`full_core_sync`, aiv collectives).  An unlimited
stream promises nothing to check; the hazard check below is what catches an
unlimited stream that can deadlock.

Hazards: the pair rule alone does not prevent hold-and-wait.  A
`full_core_sync` op takes free cores as they appear and holds them until it
has all it asks for; if a collective that holds vector cores (aiv mode), or
another `full_core_sync` op, on another stream can run at the same time (not
ordered by happens-before) and their demands on one engine together exceed
the device, each may hold what the other waits for — across ranks, a
collective waiting for its peers turns that into a deadlock (the seed's
NonZero against reduceScatter).  Each hazard is a located warning at the
`full_core_sync` op saying which limit would remove it.

Two streams can overlap unless one's last op happens before the other's
first.  Needs a lowered function (after `insert-events`, so events order it).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from npuir.analysis.core_limits import ENGINES, CoreLimits, engines_used
from npuir.analysis.happens_before import HappensBefore
from npuir.analysis.program import (
    NodeKind,
    Program,
    build_program,
    module_streams,
    scheduled_functions,
)
from npuir.backends.npu.cost import parallelism
from npuir.backends.npu.hardware import Hardware
from npuir.backends.npu.simulator import op_work
from npuir.context import warn
from npuir.diagnostics import error
from npuir.dialects.npu import CollectiveOp, NpuOp
from npuir.transforms.coreset_lower import device_of


def holds_while_waiting(op: NpuOp) -> bool:
    """Ops that accumulate cores and hold them until they have all they ask for."""
    return op.full_core_sync or (isinstance(op, CollectiveOp) and op.uses_vector_cores)


def _holds(op: Operation) -> bool:
    return isinstance(op, NpuOp) and holds_while_waiting(op)


@dataclass(frozen=True)
class Hazard:
    """A full_core_sync op and a holder on another stream that can deadlock together."""

    holder: int
    other: int
    engine: str
    demand: int
    other_demand: int


@dataclass(frozen=True)
class PairViolation:
    """Two streams whose limited ops may together hold more cores than the device has."""

    first: int
    second: int
    engine: str
    counts: tuple[int, int]
    at: int


class CoreChecker:
    """Finds pair-rule violations and hazards in one lowered function."""

    def __init__(self, prog: Program, limits: CoreLimits, hw: Hardware) -> None:
        self.prog = prog
        self.limits = limits
        self.hw = hw
        self.hb = HappensBefore(prog).run()

    def demand(self, n: int, engine: str) -> int:
        """The most cores of `engine` node n may hold."""
        op = self.prog.ops[n]
        assert isinstance(op, NpuOp)
        limit = self.limits.of(op)[engine]
        if holds_while_waiting(op):
            return limit
        return min(limit, max(1, parallelism(self.hw, op_work(op, self.hw))))

    def _can_overlap(self, s: int, t: int, span: dict[int, tuple[int, int]]) -> bool:
        (first_s, last_s), (first_t, last_t) = span[s], span[t]
        return not (self.hb.ordered(last_s, first_t) or self.hb.ordered(last_t, first_s))

    def pair_violations(self) -> list[PairViolation]:
        prog = self.prog
        span: dict[int, tuple[int, int]] = {}
        most: dict[tuple[int, str], tuple[int, int]] = {}
        unlimited: set[tuple[int, str]] = set()
        for n in range(len(prog)):
            if prog.kind[n] is not NodeKind.COMPUTE:
                continue
            s = prog.stream[n]
            first, _ = span.get(s, (n, n))
            span[s] = (first, n)
            op = prog.ops[n]
            assert isinstance(op, NpuOp)
            for engine in engines_used(op):
                # An ordinary op at the device's full count is unlimited (coreset-lower
                # writes the device count for those); only holders always count.
                if not holds_while_waiting(op) and self.limits.of(op)[engine] >= self.hw.cores(
                    engine
                ):
                    unlimited.add((s, engine))
                    continue
                d = self.demand(n, engine)
                if d > most.get((s, engine), (0, -1))[0]:
                    most[(s, engine)] = (d, n)
        out: list[PairViolation] = []
        streams = sorted(span)
        for i, s in enumerate(streams):
            for t in streams[i + 1 :]:
                for engine in ENGINES:
                    if {(s, engine), (t, engine)} & unlimited:
                        continue
                    if (s, engine) not in most or (t, engine) not in most:
                        continue
                    (ds, _), (dt, at) = most[(s, engine)], most[(t, engine)]
                    if ds + dt > self.hw.cores(engine) and self._can_overlap(s, t, span):
                        out.append(PairViolation(s, t, engine, (ds, dt), at))
        return out

    def hazards(self) -> list[Hazard]:
        prog = self.prog
        holders = [
            n for n in range(len(prog)) if prog.kind[n] is NodeKind.COMPUTE and _holds(prog.ops[n])
        ]
        out: list[Hazard] = []
        for n in holders:
            op = prog.ops[n]
            assert isinstance(op, NpuOp)
            if not op.full_core_sync:
                continue
            for m in holders:
                if m == n or prog.stream[m] == prog.stream[n]:
                    continue
                if self.hb.ordered(n, m) or self.hb.ordered(m, n):
                    continue
                other = prog.ops[m]
                assert isinstance(other, NpuOp)
                for engine in set(engines_used(op)) & set(engines_used(other)):
                    a, b = self.demand(n, engine), self.demand(m, engine)
                    if a + b > self.hw.cores(engine):
                        out.append(Hazard(n, m, engine, a, b))
        return out


def function_checkers(module: ModuleOp, hw: Hardware) -> Iterator[tuple[FuncOp, CoreChecker]]:
    """A `CoreChecker` for each scheduled function of a partitioned module."""
    limits = CoreLimits(module, hw).run()
    streams = module_streams(module)
    for func in scheduled_functions(module):
        if not streams:
            raise error(
                func, "coreset-check needs a partitioned module; run stream-partition first"
            )
        yield func, CoreChecker(build_program(func, streams), limits, hw)


@dataclass(frozen=True)
class CoresetCheckPass(ModulePass):
    """Check the stream pair rule and report hold-and-wait hazards between core-holding ops.

    Options:
    - `hw`: the device preset or TOML file (default: the module's `npu.target`,
      else 910b2).
    - `strict`: make every finding an error instead of a warning.
    """

    name = "coreset-check"

    hw: str | None = None
    strict: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        hw = device_of(op, self.hw)
        for _, checker in function_checkers(op, hw):
            prog = checker.prog
            for v in checker.pair_violations():
                s, t = prog.stream_name(v.first), prog.stream_name(v.second)
                total = hw.cores(v.engine)
                self._report(
                    ctx,
                    prog.ops[v.at],
                    f"streams {s} and {t} can run at the same time and may hold "
                    f"{v.counts[0]} + {v.counts[1]} = {sum(v.counts)} {v.engine} cores, but "
                    f"{hw.name} has {total}; the limits of any two streams must fit the device",
                )
            for h in checker.hazards():
                total = hw.cores(h.engine)
                room = total - h.other_demand
                fix = (
                    f"'coreset.limit {h.engine} {room}' around it (or a stream limit) removes it"
                    if room >= 1
                    else f"limit {prog.describe(h.other)} below {total} {h.engine} cores to remove it"
                )
                self._report(
                    ctx,
                    prog.ops[h.holder],
                    f"hold-and-wait hazard: {prog.describe(h.holder)} on "
                    f"{prog.stream_name(prog.stream[h.holder])} holds up to {h.demand} {h.engine} "
                    f"cores while it waits for the rest, and {prog.describe(h.other)} on "
                    f"{prog.stream_name(prog.stream[h.other])}, which can run at the same time, "
                    f"holds up to {h.other_demand}: {h.demand + h.other_demand} > {total} on "
                    f"{hw.name}; {fix}",
                )

    def _report(self, ctx: Context, at: Operation, message: str) -> None:
        if self.strict:
            raise error(at, message)
        warn(ctx, at, message)
