"""Core-limit checks on a lowered function: the stream pair rule and hold-and-wait hazards.

`coreset-check` reports what `CoreChecker` finds; `coreset-partition` uses it to judge the
limits it tries.  The rules themselves are described in `npuir.transforms.coreset_check`.
Two streams can overlap unless one's last op happens before the other's first.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation

from npuir.analysis.core_limits import ENGINES, CoreLimits, engines_used
from npuir.analysis.events import lowered_program
from npuir.analysis.happens_before import HappensBefore
from npuir.analysis.manager import AnalysisManager, LoweredFunction
from npuir.analysis.partition import Assignment, permuted, with_collective_chain
from npuir.analysis.program import (
    NOT_PARTITIONED,
    NodeKind,
    Program,
    module_streams,
    scheduled_functions,
)
from npuir.backends.npu.cost import op_work, parallelism
from npuir.backends.npu.hardware import Hardware
from npuir.diagnostics import error
from npuir.dialects.npu import CollectiveOp, NpuOp


def holds_while_waiting(op: NpuOp) -> bool:
    """Ops that accumulate cores and hold them until they have all they ask for."""
    return op.full_core_sync or (isinstance(op, CollectiveOp) and op.uses_vector_cores)


def _holds(op: Operation) -> bool:
    return isinstance(op, NpuOp) and holds_while_waiting(op)


def waits_for_peers(op: Operation) -> bool:
    """A collective that holds vector cores (aiv mode) while it waits for its peers."""
    return isinstance(op, CollectiveOp) and op.uses_vector_cores


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
    """Two streams that can overlap whose limits on `engine` together exceed the device."""

    first: int
    second: int
    engine: str
    limits: tuple[int, int]
    """Each stream's limit: the largest of its ops' (the device's count when unlimited)."""
    at: tuple[int, int]
    """Each stream's op with that limit."""
    configured: tuple[bool, bool]
    """Whether each stream has a configured limit (op scope, stream or global)."""


@dataclass(frozen=True)
class OpTraits:
    """What the hazard checks read of an op, read once (a search checks many schedules of
    the same ops)."""

    full_core_sync: bool
    waits: bool
    """An aiv collective: it holds vector cores while it waits for its peers."""
    holds: bool
    """It holds cores while it waits (`holds_while_waiting`)."""
    engines: frozenset[str]
    spread: int
    """The cores of its engine it can use at once (at least 1)."""

    @staticmethod
    def of(op: NpuOp, hw: Hardware) -> OpTraits:
        spread = max(1, parallelism(hw, op_work(op, hw)))
        return OpTraits(
            op.full_core_sync,
            waits_for_peers(op),
            holds_while_waiting(op),
            frozenset(engines_used(op)),
            spread,
        )


@dataclass(frozen=True)
class _Node:
    """An npu op node as the hazard checks read it."""

    n: int
    stream: int
    traits: OpTraits


class Limits(Protocol):
    """Each op's effective core counts (`CoreLimits` is one)."""

    def of(self, op: NpuOp) -> Mapping[str, int]: ...

    def configured(self, op: NpuOp, engine: str) -> bool:
        """Whether the count comes from a limit the program sets (not the device)."""
        ...


@dataclass(frozen=True)
class OverriddenLimits:
    """`base` with some (op, engine) counts replaced: limits a search tries before writing them."""

    base: Limits
    overrides: Mapping[tuple[Operation, str], int]

    def configured(self, op: NpuOp, engine: str) -> bool:
        return (op, engine) in self.overrides or self.base.configured(op, engine)

    def of(self, op: NpuOp) -> Mapping[str, int]:
        counts = dict(self.base.of(op))
        for engine in counts:
            count = self.overrides.get((op, engine))
            if count is not None:
                counts[engine] = count
        return counts


class CoreChecker:
    """Finds pair-rule violations and hazards in one lowered function.

    `hb` is the function's happens-before relation when the caller already has it; else
    it is built when a check first needs it (a pair of streams or ops whose cores exceed
    the device: a search checks thousands of schedules, most with no such pair).
    """

    def __init__(
        self,
        prog: Program,
        limits: Limits,
        hw: Hardware,
        hb: HappensBefore | None = None,
        traits: dict[Operation, OpTraits] | None = None,
    ) -> None:
        self.prog = prog
        self.limits = limits
        self.hw = hw
        self._hb = hb
        self.traits = traits if traits is not None else {}
        """Each op's `OpTraits`, once read: a search that checks many schedules of the same
        ops shares one (keyed by op identity, valid while the ops are not changed in place,
        as `SimCache`)."""
        self._demands: dict[tuple[int, str], int] = {}
        self._nodes: list[_Node] | None = None

    @property
    def hb(self) -> HappensBefore:
        if self._hb is None:
            self._hb = HappensBefore(self.prog).run()
        return self._hb

    def demand(self, n: int, engine: str) -> int:
        """The most cores of `engine` node n may hold."""
        found = self._demands.get((n, engine))
        if found is not None:
            return found
        op = self.prog.ops[n]
        assert isinstance(op, NpuOp)
        limit = self.limits.of(op)[engine]
        traits = self._traits(op)
        if not traits.holds:
            limit = min(limit, traits.spread)
        self._demands[(n, engine)] = limit
        return limit

    def _can_overlap(self, s: tuple[int, int], t: tuple[int, int]) -> bool:
        """Whether two streams' spans (first and last op) can overlap: unless one's last op
        happens before the other's first."""
        (first_s, last_s), (first_t, last_t) = s, t
        return not (self.hb.ordered(last_s, first_t) or self.hb.ordered(last_t, first_s))

    def pair_violations(self) -> list[PairViolation]:
        """Every pair of streams that can run at the same time and whose configured limits on
        an engine both use, where at least one of them is limited, exceed the device (the
        rule of `npuir.transforms.coreset_check`)."""
        prog = self.prog
        span: dict[tuple[int, str], tuple[int, int]] = {}
        most: dict[tuple[int, str], tuple[int, int]] = {}
        limited: set[tuple[int, str]] = set()
        for n in range(len(prog)):
            if prog.kind[n] is not NodeKind.COMPUTE:
                continue
            op = prog.ops[n]
            assert isinstance(op, NpuOp)
            s = prog.stream[n]
            counts = self.limits.of(op)
            for engine in self._traits(op).engines:
                key = (s, engine)
                first, _ = span.get(key, (n, n))
                span[key] = (first, n)
                # A stream's limit is the largest of its ops'; unlimited ops count the device.
                count = min(counts[engine], self.hw.cores(engine))
                if count > most.get(key, (0, -1))[0]:
                    most[key] = (count, n)
                if self.limits.configured(op, engine):
                    limited.add(key)
        out: list[PairViolation] = []
        for engine in ENGINES:
            total = self.hw.cores(engine)
            streams = sorted(s for s, e in span if e == engine)
            for i, s in enumerate(streams):
                for t in streams[i + 1 :]:
                    a, b = (s, engine), (t, engine)
                    if a not in limited and b not in limited:
                        continue
                    (ls, ns), (lt, nt) = most[a], most[b]
                    if ls + lt > total and self._can_overlap(span[a], span[b]):
                        out.append(
                            PairViolation(
                                s, t, engine, (ls, lt), (ns, nt), (a in limited, b in limited)
                            )
                        )
        return out

    def _traits(self, op: NpuOp) -> OpTraits:
        traits = self.traits.get(op)
        if traits is None:
            traits = self.traits[op] = OpTraits.of(op, self.hw)
        return traits

    def _npu_nodes(self) -> list[_Node]:
        """The function's npu op nodes with what the hazard checks read of them, once."""
        if self._nodes is None:
            prog = self.prog
            self._nodes = [
                _Node(n, prog.stream[n], self._traits(op))
                for n, op in enumerate(prog.ops)
                if prog.kind[n] is NodeKind.COMPUTE and isinstance(op, NpuOp)
            ]
        return self._nodes

    def hazards(self) -> list[Hazard]:
        holders = [node for node in self._npu_nodes() if node.traits.holds]
        out: list[Hazard] = []
        for a in holders:
            if not a.traits.full_core_sync:
                continue
            for b in holders:
                if b.n == a.n or b.stream == a.stream:
                    continue
                found: list[Hazard] = []
                for engine in sorted(a.traits.engines & b.traits.engines):
                    x, y = self.demand(a.n, engine), self.demand(b.n, engine)
                    if x + y > self.hw.cores(engine):
                        found.append(Hazard(a.n, b.n, engine, x, y))
                # (The happens-before relation only where the cores do not fit.)
                if found and not self._ordered(a.n, b.n):
                    out.extend(found)
        return out

    def collective_hazards(self) -> list[Hazard]:
        """Every aiv collective (`holder`) that can run beside an op of a shared engine on
        another stream (`other`), the two asking for more cores than the device has.

        The collective takes cores as they free up and holds them until its peers on the
        other ranks join it; if it starves the other op, and a peer's progress needs that
        op (through a collective of another group the peer issued first, or data), the
        ranks wait on each other for ever.  A pair `hazards` reports (the other op is
        `full_core_sync`) is left to it; a pair of aiv collectives is reported once."""
        compute = self._npu_nodes()
        out: list[Hazard] = []
        for a in compute:
            if not a.traits.waits:
                continue
            for b in compute:
                if b.n == a.n or b.stream == a.stream or b.traits.full_core_sync:
                    continue
                if b.n < a.n and b.traits.waits:
                    continue
                for engine in sorted(a.traits.engines & b.traits.engines):
                    x, y = self.demand(a.n, engine), self.demand(b.n, engine)
                    if x + y > self.hw.cores(engine):
                        if not self._ordered(a.n, b.n):
                            out.append(Hazard(a.n, b.n, engine, x, y))
                        break
        return out

    def _ordered(self, n: int, m: int) -> bool:
        """Whether one of nodes n and m happens before the other."""
        return self.hb.ordered(n, m) or self.hb.ordered(m, n)

    def any_hazard(self) -> Hazard | None:
        """The first hold-and-wait hazard of either kind, or None."""
        found = self.hazards() or self.collective_hazards()
        return found[0] if found else None


def has_holder(prog: Program) -> bool:
    """Whether an op of `prog` holds cores while it waits (only then can a hazard arise)."""
    return any(k is NodeKind.COMPUTE and _holds(prog.ops[n]) for n, k in enumerate(prog.kind))


def assignment_hazard(
    prog: Program, assignment: Assignment, limits: Limits, hw: Hardware
) -> tuple[Operation, Operation] | None:
    """A hold-and-wait hazard of `prog` (un-partitioned) run as `assignment` says, ordered
    as `stream-partition` (its collective chain) and `insert-events` would order it: its
    holder and the other op, or None.

    One check for every mode that places ops (`stream-partition` calls it on each mode's
    result; a search may call it on its candidates): a schedule with no hazard on any
    rank cannot deadlock on cores, since every op an aiv collective could starve is
    ordered before it (and done) or after it (and not needed by its peers)."""
    if not has_holder(prog):
        return None
    # Every mode that places ops orders a group's collectives one after another.
    prog = with_collective_chain(prog)
    if assignment.order is not None:
        prog = permuted(prog, assignment.order)
        assignment = Assignment(
            assignment.streams, [assignment.stream_of[n] for n in assignment.order]
        )
    lowered, _ = lowered_program(prog, assignment)
    found = CoreChecker(lowered, limits, hw).any_hazard()
    return None if found is None else (lowered.ops[found.holder], lowered.ops[found.other])


def function_checkers(
    module: ModuleOp, hw: Hardware, cache: AnalysisManager | None = None
) -> Iterator[tuple[FuncOp, CoreChecker]]:
    """A `CoreChecker` for each scheduled function of a partitioned module, sharing the
    programs and happens-before relations in `cache` when given."""
    limits = CoreLimits(module, hw).run()
    streams = tuple(module_streams(module))
    manager = cache if cache is not None else AnalysisManager()
    for func in scheduled_functions(module):
        if not streams:
            raise error(func, NOT_PARTITIONED, needs="coreset-check", unit="module")
        lowered = manager.get(LoweredFunction, func, streams)
        yield func, CoreChecker(lowered.prog, limits, hw, lowered.happens_before)
