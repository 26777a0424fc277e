"""Reading a finished (or deadlocked) run into its `SimResult`.

`loop.Simulation` leaves per-node start and end times, core holdings and the pools'
releases in integer arrays; `collect` turns them into a `SimResult` (makespan, per-stream
busy time, per-engine utilisation, the critical path, events, peak memory), and
`last_to_end` and `critical_path` give a search just the makespan and the path.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from npuir.analysis.program import DepKind

from .inputs import NPOOLS, POOL_ENGINES, RECORD, WAIT, Prepared
from .loop import Simulation
from .results import Deadlock, OpRecord, SimResult

__all__ = ["collect", "critical_path", "last_to_end"]


def _critical_path(sim: Simulation, last: int) -> list[tuple[int, int]]:
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
            if prep.kind[mn] == WAIT:
                p = base + prep.bound[mn]
                pe = end[p]
                if best_end < pe <= t and p not in seen:
                    best, best_end = p, pe
            p = core_pred[member]
            if p >= 0:
                pe = end[p]
                if best_end < pe <= t and p not in seen:
                    best, best_end = p, pe
        g = best
    path.reverse()
    return path


class _MemoryShape:
    """What `_peak_memory` reads of one program, as arrays, once per distinct program: its
    data edges, the sized arguments' readers and the sized results."""

    def __init__(self, prep: Prepared) -> None:
        src: list[int] = []
        dst: list[int] = []
        for n, deps in enumerate(prep.prog.deps):
            for p, kind in deps:
                if kind is DepKind.DATA:
                    src.append(p)
                    dst.append(n)
        self.src = np.array(src, dtype=np.int64)
        self.dst = np.array(dst, dtype=np.int64)
        seg: list[int] = []
        users: list[int] = []
        sizes: list[int] = []
        for size, readers in zip(prep.arg_bytes, prep.arg_users, strict=True):
            if size and readers:
                seg += [len(sizes)] * len(readers)
                users += readers
                sizes.append(size)
        self.arg_seg = np.array(seg, dtype=np.int64)
        self.arg_users = np.array(users, dtype=np.int64)
        self.arg_bytes = np.array(sizes, dtype=np.int64)
        sized = [n for n, size in enumerate(prep.result_bytes) if size]
        self.sized = np.array(sized, dtype=np.int64)
        self.sized_bytes = np.array([prep.result_bytes[n] for n in sized], dtype=np.int64)


def _peak_memory(sim: Simulation, r: int, makespan: int, shapes: dict[int, _MemoryShape]) -> int:
    """Peak bytes of live values on rank r: a node's results from its start to the end of
    its last data reader (its own end without one), arguments from 0 to their last reader.
    A reader that never ran keeps the value alive to the end.  (`shapes` keeps each distinct
    program's arrays: SPMD ranks share one.)"""
    prep = sim.preps[r]
    shape = shapes.get(id(prep))
    if shape is None:
        shape = shapes[id(prep)] = _MemoryShape(prep)
    base = sim.base[r]
    n_nodes = len(prep.kind)
    start = np.frombuffer(sim.start[base : base + n_nodes], dtype=np.int64)
    end = np.frombuffer(sim.end[base : base + n_nodes], dtype=np.int64).copy()
    end[end < 0] = makespan
    dies = end.copy()
    np.maximum.at(dies, shape.src, end[shape.dst])
    arg_dies = np.zeros(len(shape.arg_bytes), dtype=np.int64)
    np.maximum.at(arg_dies, shape.arg_seg, end[shape.arg_users])
    ran = shape.sized[start[shape.sized] >= 0]
    ran_bytes = shape.sized_bytes[start[shape.sized] >= 0]
    times = np.concatenate((np.zeros_like(arg_dies), arg_dies, start[ran], dies[ran]))
    deltas = np.concatenate((shape.arg_bytes, -shape.arg_bytes, ran_bytes, -ran_bytes))
    if not len(times):
        return 0
    # Frees sort before allocations at the same instant: a value dies when its last reader
    # ends, and memory freed then can hold a value born at that moment.
    order = np.lexsort((deltas, times))
    return max(0, int(np.cumsum(deltas[order]).max()))


_POOL_NAMES = ("", *POOL_ENGINES)  # indexed by pool + 1


def _op_records(sim: Simulation) -> list[OpRecord]:
    """One `OpRecord` per node that ran (or started), by rank then issue order."""
    ops: list[OpRecord] = []
    for r in range(sim.ranks):
        ops += _rank_records(sim, r)
    return ops


def _rank_records(sim: Simulation, r: int) -> list[OpRecord]:
    """Rank r's records, in issue order."""
    prep = sim.preps[r]
    base = sim.base[r]
    n_nodes = len(prep.kind)
    starts = sim.start[base : base + n_nodes]
    ends = sim.end[base : base + n_nodes]
    peaks = sim.peak[base : base + n_nodes]
    held = sim.held_from[base : base + n_nodes]
    steps_of = sim.steps_of
    ops: list[OpRecord] = []
    append = ops.append
    for n, (st, en, s, pool, cores, engine) in enumerate(
        zip(starts, ends, prep.stream, prep.pool, peaks, prep.engine, strict=True)
    ):
        if st < 0:
            continue
        steps = steps_of(base + n)
        if steps is not None:
            core_steps = steps
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
                _POOL_NAMES[pool + 1],
                held[n] if cores else st,
                core_steps,
            )
        )
    return ops


def _rank_times(sim: Simulation, r: int) -> tuple[Sequence[int], Sequence[int]]:
    base = sim.base[r]
    n_nodes = len(sim.preps[r].kind)
    start = sim.start[base : base + n_nodes]
    end = sim.end[base : base + n_nodes]
    # A node that started is reported with its end, as its record has it.
    return start, end


def _node_record(sim: Simulation, r: int, n: int) -> OpRecord | None:
    """Node n of rank r's record; None if it did not run (or there is no such node)."""
    if not 0 <= r < sim.ranks or not 0 <= n < len(sim.preps[r].kind):
        return None
    base = sim.base[r]
    return _record(sim, r, n, base) if sim.start[base + n] >= 0 else None


def _record(sim: Simulation, r: int, n: int, base: int) -> OpRecord:
    prep = sim.preps[r]
    g = base + n
    st, en, cores = sim.start[g], sim.end[g], sim.peak[g]
    steps = sim.steps_of(g)
    if steps is not None:
        core_steps = steps
    elif cores:
        core_steps = ((sim.held_from[g], cores), (en, 0))
    else:
        core_steps = ()
    return OpRecord(
        r,
        n,
        prep.stream[n],
        st,
        en,
        cores,
        prep.engine[n],
        _POOL_NAMES[prep.pool[n] + 1],
        sim.held_from[g] if cores else st,
        core_steps,
    )


def last_to_end(sim: Simulation) -> tuple[int, int]:
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


def critical_path(sim: Simulation, last: int) -> list[tuple[int, int]]:
    """The critical path ending at global node `last` (empty for -1), as `collect` gives it."""
    return _critical_path(sim, last) if last >= 0 else []


def collect(sim: Simulation, deadlock: Deadlock | None) -> SimResult:
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
        pool_ns = [0] * (NPOOLS + 1)
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
            if kind == WAIT:
                waits += 1
                edges.append((r, prep.bound[n], n))
            elif kind == RECORD:
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
    shapes: dict[int, _MemoryShape] = {}
    peaks = [_peak_memory(sim, r, makespan, shapes) for r in range(sim.ranks)]
    return SimResult(
        hw_name=hw.name,
        ranks=sim.ranks,
        makespan_ns=makespan,
        op_source=lambda: _op_records(sim),
        rank_source=lambda r: _rank_records(sim, r),
        node_source=lambda r, n: _node_record(sim, r, n),
        times_source=lambda r: _rank_times(sim, r),
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
