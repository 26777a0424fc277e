"""What a simulation measured: `SimResult` and the records it holds.

`measure.collect` fills them in from a finished run (makespan, per-stream busy time,
per-engine utilisation, the critical path, events, peak memory, races and any deadlock);
per-op records (`OpRecord`) are built only when asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from npuir.analysis.program import DepKind

__all__ = [
    "BlockedOp",
    "Deadlock",
    "OpRecord",
    "Race",
    "SimResult",
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
    op_source: Callable[[], list[OpRecord]] = field(repr=False, compare=False)
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
    rank_source: Callable[[int], list[OpRecord]] | None = field(
        default=None, repr=False, compare=False
    )
    """Builds one rank's records (`ops_of`) without building every rank's."""
    node_source: Callable[[int, int], OpRecord | None] | None = field(
        default=None, repr=False, compare=False
    )
    """Builds one node's record (`op`) without building every rank's."""
    times_source: Callable[[int], tuple[Sequence[int], Sequence[int]]] | None = field(
        default=None, repr=False, compare=False
    )
    """Gives one rank's start and end times by node (`times_of`)."""
    _ops: list[OpRecord] | None = field(default=None, init=False, repr=False, compare=False)
    _by_key: dict[tuple[int, int], OpRecord] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def ops(self) -> list[OpRecord]:
        """Every node that ran, by rank then issue order."""
        if self._ops is None:
            self._ops = self.op_source()
        return self._ops

    def ops_of(self, rank: int) -> list[OpRecord]:
        """The records of `rank`'s nodes that ran, in issue order (built for that rank alone
        until every rank's are: a report of a thousand ranks reads them rank by rank)."""
        if self._ops is None and self.rank_source is not None:
            return self.rank_source(rank)
        return [o for o in self.ops if o.rank == rank]

    def times_of(self, rank: int, nodes: int) -> tuple[Sequence[int], Sequence[int]]:
        """Start and end times of `rank`'s `nodes` nodes, by node (-1: it did not start;
        an end of -1 after a start: it never ended)."""
        if self.times_source is not None:
            return self.times_source(rank)
        start, end = [-1] * nodes, [-1] * nodes
        for o in self.ops_of(rank):
            start[o.node], end[o.node] = o.start, o.end
        return start, end

    def op(self, rank: int, node: int) -> OpRecord | None:
        """The record of `node` on `rank`, or None if it did not run."""
        if self._by_key is None and self._ops is None and self.node_source is not None:
            return self.node_source(rank, node)
        if self._by_key is None:
            self._by_key = {(r.rank, r.node): r for r in self.ops}
        return self._by_key.get((rank, node))
