"""Why a schedule takes the time it takes, in a model engineer's words, from the simulator's records.

`explain(result, programs)` reads one simulation (every op's start, end, cores and pool, the
critical path) and says where the time went:

- **the critical path**, split into compute on each engine, task launches, events (record and
  wait nodes) and waiting: for cores held by other streams' ops (the op was ready -- its
  stream, its producers and its events done -- but no core of its engine was free), or for an
  event;
- **core contention per stream**: how long each stream's ops sat ready but without cores, and
  on which engine;
- **overlap**: the busy time of all streams over the makespan (1.0 means no overlap at all).

`compare(mine, baseline)` then says, in one sentence each, why one schedule is slower or
faster than another (typically: the annotated program against the same program on one
stream), naming the larger of the differences above.

The numbers are exactly the simulator's: a reader can check each against the trace.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import StringAttr

from npuir.analysis.program import NodeKind, Program
from npuir.backends.npu.hardware import Hardware
from npuir.dialects.npu import OP_NAME

from . import timing
from .simulator import OpRecord, SimResult


@dataclass
class Explanation:
    """Where the time of one simulated schedule went (nanoseconds)."""

    makespan_ns: int
    critical_compute_ns: dict[str, int] = field(default_factory=dict[str, int])
    """Engine -> compute time of the critical path's ops (launches excluded)."""
    critical_launch_ns: int = 0
    critical_event_ns: int = 0
    """Record and wait nodes on the critical path."""
    core_wait_ns: dict[str, dict[str, int]] = field(default_factory=dict[str, dict[str, int]])
    """Stream tag -> engine -> time its ops sat ready without cores."""
    contenders: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    """Stream tag -> the ops (by name) that held the cores it waited for."""
    waits: int = 0
    records: int = 0
    busy_ns: int = 0
    """Sum over streams of the time they executed something."""
    streams: int = 0

    @property
    def overlap(self) -> float:
        return self.busy_ns / self.makespan_ns if self.makespan_ns else 0.0

    def lines(self) -> list[str]:
        """The explanation as sentences."""
        out: list[str] = []
        parts = [
            f"{_us(ns)} µs {engine} compute" for engine, ns in self.critical_compute_ns.items()
        ]
        if self.critical_launch_ns:
            parts.append(f"{_us(self.critical_launch_ns)} µs task launches")
        if self.critical_event_ns:
            parts.append(f"{_us(self.critical_event_ns)} µs events")
        out.append(f"critical path {_us(self.makespan_ns)} µs: " + ", ".join(parts))
        for tag, by_engine in self.core_wait_ns.items():
            for engine, ns in by_engine.items():
                who = self.contenders.get(tag, [])
                held = f" held by {', '.join(who[:3])}" if who else ""
                out.append(f"stream '{tag}' waits {_us(ns)} µs for {engine} cores{held}")
        if self.waits:
            out.append(
                f"{self.waits} event wait(s) and {self.records} record(s) executed "
                f"({self.streams} stream(s) busy {self.overlap:.2f}x the makespan)"
            )
        return out


def _us(ns: int) -> str:
    return f"{ns / 1000:.1f}"


def _name(prog: Program, node: int) -> str:
    op = prog.ops[node]
    named = op.attributes.get(OP_NAME)
    if isinstance(named, StringAttr):
        return named.data
    if op.results and op.results[0].name_hint:
        return f"%{op.results[0].name_hint}"
    return op.name


def _ready_times(records: Sequence[OpRecord], prog: Program) -> dict[int, int]:
    """Node -> when it could have started: its stream's previous node, its producers and
    the record a wait is bound to all done (`prog.deps` carries the last for waits)."""
    end = {r.node: r.end for r in records}
    previous: dict[int, int] = {}
    ready: dict[int, int] = {}
    for n in range(len(prog)):
        if n not in end:
            continue
        s = prog.stream[n]
        at = previous.get(s, 0)
        for p, _ in prog.deps[n]:
            at = max(at, end.get(p, 0))
        if prog.kind[n] is NodeKind.WAIT:
            at = max(at, end.get(prog.event_of[n], 0))
        ready[n] = at
        previous[s] = end[n]
    return ready


def _holders(records: Sequence[OpRecord], waiting: Sequence[int]) -> dict[int, list[int]]:
    """For each record index in `waiting`, the indices (ascending) of the records of
    other streams that held cores of its pool when it started (`held_from < start <=
    end`).

    One sweep per pool over the holders sorted by `held_from`, the waiting records
    sorted by `start`, and a heap of the open holders by `end`: at most as many are
    open at once as the pool has cores, so this is O(n log n), not one scan of every
    record per waiting op.
    """
    by_pool: dict[str, list[int]] = {}
    for j, o in enumerate(records):
        if o.pool:
            by_pool.setdefault(o.pool, []).append(j)
    queries: dict[str, list[int]] = {}
    for i in waiting:
        queries.setdefault(records[i].pool, []).append(i)
    out: dict[int, list[int]] = {}
    for pool, asked in queries.items():
        held = sorted(by_pool[pool], key=lambda j: records[j].held_from)
        asked.sort(key=lambda i: records[i].start)
        open_: set[int] = set()
        by_end: list[tuple[int, int]] = []
        k = 0
        for i in asked:
            t = records[i].start
            while k < len(held) and records[held[k]].held_from < t:
                j = held[k]
                open_.add(j)
                heapq.heappush(by_end, (records[j].end, j))
                k += 1
            while by_end and by_end[0][0] < t:
                open_.discard(heapq.heappop(by_end)[1])
            stream = records[i].stream
            out[i] = sorted(j for j in open_ if records[j].stream != stream)
    return out


def explain(
    result: SimResult, programs: Sequence[Program], hw: Hardware, rank: int = 0
) -> Explanation:
    """Where rank `rank`'s time went (see the module docstring)."""
    prog = programs[rank]
    records = result.ops_of(rank)
    ready = _ready_times(records, prog)
    out = Explanation(result.makespan_ns)
    out.streams = len({r.stream for r in records})
    out.busy_ns = sum(ns for (r, _), ns in result.stream_busy_ns.items() if r == rank)
    out.waits = sum(1 for r in records if prog.kind[r.node] is NodeKind.WAIT)
    out.records = sum(1 for r in records if prog.kind[r.node] is NodeKind.RECORD)
    waiting: list[tuple[int, str]] = []
    for i, r in enumerate(records):
        if not r.pool or prog.kind[r.node] is not NodeKind.COMPUTE:
            continue
        waited = r.start - ready.get(r.node, r.start)
        if waited <= 0:
            continue
        tag = prog.streams[r.stream].tag if prog.streams else str(r.stream)
        by_engine = out.core_wait_ns.setdefault(tag, {})
        by_engine[r.pool] = by_engine.get(r.pool, 0) + waited
        out.contenders.setdefault(tag, [])
        waiting.append((i, tag))
    holders = _holders(records, [i for i, _ in waiting])
    names: dict[int, str] = {}
    seen: dict[str, set[str]] = {}
    for i, tag in waiting:
        known, known_set = out.contenders[tag], seen.setdefault(tag, set())
        for j in holders[i]:
            node = records[j].node
            name = names.get(node)
            if name is None:
                name = names[node] = _name(prog, node)
            if name not in known_set:
                known_set.add(name)
                known.append(name)
    # The critical path may run through every rank (collectives join them).
    for rk, node in result.critical_path:
        # One record at a time: a run of a thousand ranks has a million.
        rec = result.op(rk, node)
        if rec is None:
            continue
        kind = programs[rk].kind[node]
        if kind in (NodeKind.RECORD, NodeKind.WAIT):
            out.critical_event_ns += rec.end - rec.start
        elif kind is NodeKind.COMPUTE:
            launch = min(timing.launch_cost(hw), rec.end - rec.start)
            out.critical_launch_ns += launch
            engine = rec.engine or "compute"
            out.critical_compute_ns[engine] = (
                out.critical_compute_ns.get(engine, 0) + rec.end - rec.start - launch
            )
    return out


def compare(mine: Explanation, baseline: Explanation, label: str, base_label: str) -> str:
    """One sentence: why `mine` is slower or faster than `baseline`."""
    delta = mine.makespan_ns - baseline.makespan_ns
    if delta == 0:
        return f"{label} takes as long as {base_label}"
    verdict = "slower" if delta > 0 else "faster"
    reasons: list[str] = []
    core_wait = sum(sum(v.values()) for v in mine.core_wait_ns.values())
    if delta > 0:
        if core_wait:
            engines = sorted({e for v in mine.core_wait_ns.values() for e in v})
            reasons.append(
                f"its streams wait {_us(core_wait)} µs in all for {'/'.join(engines)} cores "
                "that ops on other streams hold, so they run one after another anyway"
            )
        if mine.critical_event_ns > baseline.critical_event_ns:
            reasons.append(
                f"{mine.waits} event wait(s) add "
                f"{_us(mine.critical_event_ns - baseline.critical_event_ns)} µs to the critical path"
            )
    else:
        reasons.append(
            f"its {mine.streams} streams overlap ({mine.overlap:.2f}x busy over the makespan, "
            f"against {baseline.overlap:.2f}x)"
        )
    why = "; ".join(reasons) if reasons else "the streams' ops are ordered differently"
    return f"{label} is {_us(abs(delta))} µs {verdict} than {base_label}: {why}"
