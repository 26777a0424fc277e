"""What a simulation measured: the result types, and their collection from the final state.

`npuir.backends.npu.simulator` runs the event loop; once it stops, `collect` reads its
arrays into a `SimResult` (makespan, per-stream busy time, per-engine utilisation, the
critical path, events, peak memory, races and any deadlock).  Per-op records (`OpRecord`)
are built only when asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from npuir.analysis.program import DepKind

from .sim_inputs import _NPOOLS, _RECORD, _WAIT, POOL_ENGINES

if TYPE_CHECKING:
    from .simulator import _Simulation

__all__ = [
    "BlockedOp",
    "Deadlock",
    "OpRecord",
    "Race",
    "SimResult",
    "collect",
    "critical_path",
    "last_to_end",
]

# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


class OpRecord(NamedTuple):
    """One node's run on one rank.  `pool` names the engine whose cores it held ("" for
    none); `cores` is the most it held at once, first from `held_from` (earlier than `start`
    for a hold-and-wait op).  An ordinary op's holding changes as its blocks are dispatched
    and finish: `core_steps` lists ``(time, cores held from then on)`` from its first core
    to ``(end, 0)`` (empty for a node that held none)."""

    rank: int
    node: int
    stream: int
    start: int
    end: int
    cores: int
    engine: str
    """"cube", "vector", "aicpu", "comm", or "" for records, waits and the return."""
    pool: str
    held_from: int
    core_steps: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class Race:
    """`consumer` started on `rank` at `at_ns` before its producer had finished."""

    rank: int
    consumer: int
    producer: int
    kind: DepKind
    at_ns: int
    producer_end: int | None
    """When the producer finished, or None if it had not started."""
    message: str

    def describe(self) -> str:
        return self.message


@dataclass(frozen=True)
class BlockedOp:
    """An op at the head of its stream that cannot go on, and why."""

    rank: int
    node: int
    stream: int
    op: str
    """`Program.describe` of the op."""
    stream_name: str
    reason: str
    """"cores", "event" or "peers"."""
    holds: int = 0
    """Cores of `pool` the op holds while it waits."""
    held_from: int = -1
    """Since when it holds them (-1 when it holds none)."""
    wants: int = 0
    """Cores of `pool` it needs in all (reason "cores")."""
    pool: str = ""
    core_holders: tuple[tuple[int, int, int], ...] = ()
    """(rank, node, cores) of every op holding cores of the same pool (reason "cores")."""
    record: int | None = None
    """The record a wait is bound to (reason "event")."""
    missing_peers: tuple[int, ...] = ()
    """Ranks of the group that have not arrived (reason "peers")."""
    blocked_by: tuple[tuple[int, int], ...] = ()
    """(rank, node) of the blocked ops this one waits for: edges of the wait-for graph."""
    detail: str = ""


@dataclass(frozen=True)
class Deadlock:
    """A state where nothing can progress but work remains."""

    time_ns: int
    blocked: tuple[BlockedOp, ...]
    cycle: tuple[tuple[int, int], ...]
    """(rank, node) of a wait-for cycle, each waiting for the next and the last for the first;
    empty when the blocked ops wait on something outside any cycle."""

    def describe(self) -> str:
        """One paragraph per blocked op, then the cycle."""
        by_key = {(b.rank, b.node): b for b in self.blocked}
        lines = [f"deadlock at {self.time_ns} ns: {len(self.blocked)} op(s) can never start"]
        for b in self.blocked:
            lines.append(f"  rank {b.rank}, stream {b.stream_name}: {b.op} {b.detail}")
        if self.cycle:
            steps = [f"rank {r} {by_key[(r, n)].op}" for r, n in self.cycle]
            steps.append(steps[0])
            lines.append("  wait-for cycle: " + " -> ".join(steps))
        return "\n".join(lines)


@dataclass
class SimResult:
    """What a simulation measured.  Times are integer nanoseconds."""

    hw_name: str
    ranks: int
    makespan_ns: int
    _op_source: Callable[[], list[OpRecord]] = field(repr=False, compare=False)
    """Builds `ops` when first asked for (a search never asks)."""
    stream_busy_ns: dict[tuple[int, int], int]
    """(rank, stream) -> time spent executing nodes (not blocked)."""
    utilisation: dict[str, float]
    """Engine -> busy core-ns / (cores * ranks * makespan)."""
    critical_path: list[tuple[int, int]]
    """(rank, node) from the first to the last-finishing node.  Each node's predecessor is,
    of its stream predecessor, producers, bound record, the node whose finish released the
    cores it was waiting for, and (for a collective) the same of every group member, the one
    that finished last before it started (the stream predecessor on ties)."""
    waits_executed: int
    records_executed: int
    event_ids: list[int]
    """Physical event ids the executed records used."""
    events_used: int
    """Most events one rank used: distinct physical ids plus records without one."""
    event_edges: list[tuple[int, int, int]]
    """(rank, record, wait) for every executed wait."""
    peak_memory_bytes: int
    """Largest peak over the ranks of the bytes of live values."""
    peak_memory_by_rank: list[int]
    races: list[Race] = field(default_factory=list[Race])
    deadlock: Deadlock | None = None
    compute_ops: int = 0
    """Compute ops (collectives included) of the distinct programs simulated."""
    profiled_ops: int = 0
    """How many of them took their cost from a profile (`npuir.backends.npu.profile`)."""
    _ops: list[OpRecord] | None = field(default=None, init=False, repr=False, compare=False)
    _by_key: dict[tuple[int, int], OpRecord] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def ops(self) -> list[OpRecord]:
        """Every node that ran, by rank then issue order."""
        if self._ops is None:
            self._ops = self._op_source()
        return self._ops

    def op(self, rank: int, node: int) -> OpRecord | None:
        """The record of `node` on `rank`, or None if it did not run."""
        if self._by_key is None:
            self._by_key = {(r.rank, r.node): r for r in self.ops}
        return self._by_key.get((rank, node))


# ---------------------------------------------------------------------------------------------
# Results from the final state
# ---------------------------------------------------------------------------------------------


def _critical_path(sim: _Simulation, last: int) -> list[tuple[int, int]]:
    start, end, g_rank, base_of = sim.start, sim.end, sim.g_rank, sim.base
    group_of, core_pred, preps = sim.group_of, sim.core_pred, sim.preps
    path: list[tuple[int, int]] = []
    seen: set[int] = set()
    g = last
    while g >= 0:
        seen.add(g)
        r = g_rank[g]
        path.append((r, g - base_of[r]))
        t = start[g]
        best, best_end = -1, -1
        for member in group_of.get(g, (g,)):
            mr = g_rank[member]
            base = base_of[mr]
            mn = member - base
            prep = preps[mr]
            # The stream predecessor is looked at first so that it wins ties: the
            # plain FIFO chain.
            prev = prep.prev_on_stream[mn]
            if prev >= 0:
                p = base + prev
                pe = end[p]
                if best_end < pe <= t and p not in seen:
                    best, best_end = p, pe
            for q in prep.deps[mn]:
                p = base + q
                pe = end[p]
                if best_end < pe <= t and p not in seen:
                    best, best_end = p, pe
            if prep.kind[mn] == _WAIT:
                p = base + prep.bound[mn]
                pe = end[p]
                if best_end < pe <= t and p not in seen:
                    best, best_end = p, pe
            p = core_pred.get(member, -1)
            if p >= 0:
                pe = end[p]
                if best_end < pe <= t and p not in seen:
                    best, best_end = p, pe
        g = best
    path.reverse()
    return path


def _peak_memory(sim: _Simulation, r: int, makespan: int) -> int:
    """Peak bytes of live values on rank r: a node's results from its start to the end of
    its last data reader (its own end without one), arguments from 0 to their last reader.
    A reader that never ran keeps the value alive to the end."""
    prep = sim.preps[r]
    base = sim.base[r]
    n_nodes = len(prep.kind)
    start = sim.start[base : base + n_nodes]
    end = [makespan if e < 0 else e for e in sim.end[base : base + n_nodes]]
    dies = list(end)
    for n, deps in enumerate(prep.prog.deps):
        e = end[n]
        for p, kind in deps:
            if kind is DepKind.DATA and e > dies[p]:
                dies[p] = e
    deltas: list[tuple[int, int]] = []
    for size, users in zip(prep.arg_bytes, prep.arg_users, strict=True):
        if size and users:
            deltas.append((0, size))
            deltas.append((max(end[u] for u in users), -size))
    for n, size in enumerate(prep.result_bytes):
        if size and start[n] >= 0:
            deltas.append((start[n], size))
            deltas.append((dies[n], -size))
    # Frees sort before allocations at the same instant: a value dies when its last reader
    # ends, and memory freed then can hold a value born at that moment.
    deltas.sort()
    live = peak = 0
    for _, d in deltas:
        live += d
        if live > peak:
            peak = live
    return peak


def _op_records(sim: _Simulation) -> list[OpRecord]:
    """One `OpRecord` per node that ran (or started), by rank then issue order."""
    pool_names = ("", *POOL_ENGINES)  # indexed by pool + 1
    ops: list[OpRecord] = []
    append = ops.append
    steps_of = sim.steps
    for r, prep in enumerate(sim.preps):
        base = sim.base[r]
        n_nodes = len(prep.kind)
        starts = sim.start[base : base + n_nodes]
        ends = sim.end[base : base + n_nodes]
        peaks = sim.peak[base : base + n_nodes]
        held = sim.held_from[base : base + n_nodes]
        for n, (st, en, s, pool, cores, engine) in enumerate(
            zip(starts, ends, prep.stream, prep.pool, peaks, prep.engine, strict=True)
        ):
            if st < 0:
                continue
            steps = steps_of.get(base + n)
            if steps is not None:
                core_steps = tuple(steps)
            elif cores:
                core_steps = ((held[n], cores), (en, 0))
            else:
                core_steps = ()
            append(
                OpRecord(
                    r,
                    n,
                    s,
                    st,
                    en,
                    cores,
                    engine,
                    pool_names[pool + 1],
                    held[n] if cores else st,
                    core_steps,
                )
            )
    return ops


def last_to_end(sim: _Simulation) -> tuple[int, int]:
    """The latest end of a node that ran, and that node (the last by rank then issue order
    among equals; -1 when none ran): where `collect` starts the critical path."""
    makespan = 0
    last = -1
    end = sim.end
    start = sim.start
    for g in range(sim.total):
        en = end[g]
        if en >= makespan and en >= 0 and start[g] >= 0:
            makespan, last = en, g
    return makespan, last


def critical_path(sim: _Simulation, last: int) -> list[tuple[int, int]]:
    """The critical path ending at global node `last` (empty for -1), as `collect` gives it."""
    return _critical_path(sim, last) if last >= 0 else []


def collect(sim: _Simulation, deadlock: Deadlock | None) -> SimResult:
    """The `SimResult` of a finished (or deadlocked) run."""
    hw = sim.hw
    busy: dict[tuple[int, int], int] = {}
    core_ns = dict.fromkeys(POOL_ENGINES, 0)
    waits = records = 0
    ids: set[int] = set()
    events_used = 0
    edges: list[tuple[int, int, int]] = []
    makespan = 0
    last = -1
    for r, prep in enumerate(sim.preps):
        base = sim.base[r]
        prog = prep.prog
        stream_busy = [0] * prep.num_streams
        pool_ns = [0] * (_NPOOLS + 1)
        rank_ids: set[int] = set()
        idless = 0
        n_nodes = len(prep.kind)
        starts = sim.start[base : base + n_nodes]
        ends = sim.end[base : base + n_nodes]
        core_time = sim.busy[base : base + n_nodes]
        for n, (st, en, s, pool, held, kind) in enumerate(
            zip(starts, ends, prep.stream, prep.pool, core_time, prep.kind, strict=True)
        ):
            pool_ns[pool + 1] += held
            if st < 0 or en < 0:
                continue
            stream_busy[s] += en - st
            if en >= makespan:
                makespan, last = en, base + n
            if kind == _WAIT:
                waits += 1
                edges.append((r, prep.bound[n], n))
            elif kind == _RECORD:
                records += 1
                eid = prog.event_id[n]
                if eid >= 0:
                    rank_ids.add(eid)
                else:
                    idless += 1
        for s, ns in enumerate(stream_busy):
            busy[(r, s)] = ns
        for i, engine in enumerate(POOL_ENGINES):
            core_ns[engine] += pool_ns[i + 1]
        ids |= rank_ids
        events_used = max(events_used, len(rank_ids) + idless)
    if deadlock is not None:
        makespan = max(makespan, deadlock.time_ns)
    util = {
        e: (core_ns[e] / (hw.cores(e) * sim.ranks * makespan) if makespan else 0.0)
        for e in POOL_ENGINES
    }
    peaks = [_peak_memory(sim, r, makespan) for r in range(sim.ranks)]
    return SimResult(
        hw_name=hw.name,
        ranks=sim.ranks,
        makespan_ns=makespan,
        _op_source=lambda: _op_records(sim),
        stream_busy_ns=busy,
        utilisation=util,
        critical_path=_critical_path(sim, last) if last >= 0 else [],
        waits_executed=waits,
        records_executed=records,
        event_ids=sorted(ids),
        events_used=events_used,
        event_edges=edges,
        peak_memory_bytes=max(peaks, default=0),
        peak_memory_by_rank=peaks,
        races=sim.races,
        deadlock=deadlock,
    )
