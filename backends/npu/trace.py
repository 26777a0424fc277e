"""Timelines of a simulation: Chrome/Perfetto trace JSON and a PNG.

`trace_events` turns a `SimResult` into the Chrome trace-event format that
Perfetto (ui.perfetto.dev) and chrome://tracing open:

- a process per rank, a thread per stream (named by its tag);
- an ``"X"`` slice per executed node (args: engine, cores, flops, bytes);
- flow events (``"s"`` at the record, ``"f"`` at the wait) for every wait;
- counter tracks (``"C"``) for the cube and vector cores in use, counting the
  cores a hold-and-wait op holds before it starts -- and, in a deadlock, the
  cores the blocked ops hold for ever, so the tracks show what the report lists;
- instant events (``"i"``) for races and for each op a deadlock blocks.

Trace timestamps are microseconds (the format's unit); the simulator's
integer nanoseconds become exact decimal fractions.

`plot_timeline` draws the same slices with matplotlib, which is optional and
imported only when called.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any, BinaryIO

from npuir.analysis.program import NodeKind, Program
from npuir.dialects.npu import NpuOp
from npuir.output import write_bytes, write_output

from .simulator import SimResult

__all__ = ["PlotUnavailable", "plot_timeline", "trace_events", "write_trace"]

_COUNTED_POOLS: tuple[str, ...] = ("cube", "vector")


class PlotUnavailable(ImportError):
    """matplotlib is not installed, so no PNG timeline can be drawn."""


def _us(ns: int) -> float:
    return ns / 1000


def _slice_name(prog: Program, node: int) -> str:
    op = prog.ops[node]
    name = str(op.name)
    if op.results and op.results[0].name_hint:
        return f"{name} %{op.results[0].name_hint}"
    return name


def _stream_label(prog: Program, s: int) -> str:
    return str(prog.streams[s].tag)


def trace_events(result: SimResult, programs: Sequence[Program]) -> dict[str, Any]:
    """The Chrome trace-event JSON object (``{"traceEvents": [...], ...}``) of `result`.

    `programs` are the ones given to `simulate`, one per rank.
    """
    if len(programs) != result.ranks:
        raise ValueError(f"expected {result.ranks} program(s), one per rank, got {len(programs)}")
    events: list[dict[str, Any]] = []
    for r, prog in enumerate(programs):
        events.append(
            {"ph": "M", "name": "process_name", "pid": r, "tid": 0, "args": {"name": f"rank {r}"}}
        )
        events.append(
            {"ph": "M", "name": "process_sort_index", "pid": r, "tid": 0, "args": {"sort_index": r}}
        )
        for s, info in enumerate(prog.streams):
            events.append(
                {
                    "ph": "M",
                    "name": "thread_name",
                    "pid": r,
                    "tid": s,
                    "args": {"name": f"{info.tag} (@{info.symbol})"},
                }
            )
            events.append(
                {
                    "ph": "M",
                    "name": "thread_sort_index",
                    "pid": r,
                    "tid": s,
                    "args": {"sort_index": s},
                }
            )

    for rec in result.ops:
        prog = programs[rec.rank]
        op = prog.ops[rec.node]
        kind = prog.kind[rec.node]
        args: dict[str, Any] = {"node": rec.node, "engine": rec.engine or kind.name.lower()}
        if isinstance(op, NpuOp):
            args.update(cores=rec.cores, flops=op.flops(), bytes=op.bytes_moved())
            if rec.held_from < rec.start:
                args["held_from_us"] = _us(rec.held_from)
        elif kind is NodeKind.RECORD and prog.event_id[rec.node] >= 0:
            args["event_id"] = prog.event_id[rec.node]
        events.append(
            {
                "ph": "X",
                "name": _slice_name(prog, rec.node),
                "cat": rec.engine or "sync",
                "pid": rec.rank,
                "tid": rec.stream,
                "ts": _us(rec.start),
                "dur": _us(rec.end - rec.start),
                "args": args,
            }
        )

    for flow_id, (r, record, wait) in enumerate(result.event_edges):
        src = result.op(r, record)
        dst = result.op(r, wait)
        if src is None or dst is None:
            continue
        common = {"name": "event", "cat": "sync", "id": flow_id, "pid": r}
        events.append({**common, "ph": "s", "tid": src.stream, "ts": _us(src.start)})
        events.append({**common, "ph": "f", "bp": "e", "tid": dst.stream, "ts": _us(dst.start)})

    by_rank: list[list[tuple[str, int, int, int | None]]] = [[] for _ in range(result.ranks)]
    for o in result.ops:
        if o.cores:
            by_rank[o.rank].append((o.pool, o.cores, o.held_from, o.end))
    if result.deadlock is not None:
        for b in result.deadlock.blocked:
            if b.holds:
                by_rank[b.rank].append((b.pool, b.holds, b.held_from, None))
    for r, holdings in enumerate(by_rank):
        events.extend(_core_counters(r, holdings))

    for race in result.races:
        prog = programs[race.rank]
        events.append(
            {
                "ph": "i",
                "s": "t",
                "name": "race",
                "cat": "race",
                "pid": race.rank,
                "tid": prog.stream[race.consumer],
                "ts": _us(race.at_ns),
                "args": {"message": race.message},
            }
        )
    if result.deadlock is not None:
        for blocked in result.deadlock.blocked:
            events.append(
                {
                    "ph": "i",
                    "s": "t",
                    "name": f"deadlock: {blocked.op}",
                    "cat": "deadlock",
                    "pid": blocked.rank,
                    "tid": blocked.stream,
                    "ts": _us(result.deadlock.time_ns),
                    "args": {"reason": blocked.reason, "detail": blocked.detail},
                }
            )
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {"hw": result.hw_name, "makespan_ns": result.makespan_ns},
    }


def _core_counters(
    rank: int, holdings: list[tuple[str, int, int, int | None]]
) -> list[dict[str, Any]]:
    """One counter track per pool: (pool, cores, from, until) held, until None = never
    released (an op a deadlock blocks)."""
    out: list[dict[str, Any]] = []
    for pool in _COUNTED_POOLS:
        deltas: dict[int, int] = {0: 0}
        for held_pool, cores, start, end in holdings:
            if held_pool == pool:
                deltas[start] = deltas.get(start, 0) + cores
                if end is not None:
                    deltas[end] = deltas.get(end, 0) - cores
        level = 0
        for t in sorted(deltas):
            level += deltas[t]
            out.append(
                {
                    "ph": "C",
                    "name": f"{pool} cores in use",
                    "pid": rank,
                    "ts": _us(t),
                    "args": {"cores": level},
                }
            )
    return out


def write_trace(
    result: SimResult, programs: Sequence[Program], path: str | os.PathLike[str]
) -> None:
    """Write `result` as Chrome/Perfetto trace JSON to `path` (`npuir.output.write_output`:
    raises `OutputError` when it cannot)."""
    data = trace_events(result, programs)
    write_bytes(os.fspath(path), json.dumps(data, separators=(",", ":")).encode("utf-8"))


_COLOURS = {
    "cube": "#1f77b4",
    "vector": "#2ca02c",
    "comm": "#9467bd",
    "aicpu": "#8c564b",
    "": "#7f7f7f",
}


def plot_timeline(
    result: SimResult, programs: Sequence[Program], path: str | os.PathLike[str]
) -> None:
    """Draw one row per (rank, stream) with a bar per node, coloured by engine, as a PNG.

    Raises `PlotUnavailable` (an `ImportError`) when matplotlib is not installed.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError as err:
        raise PlotUnavailable(
            "plot_timeline needs matplotlib: pip install matplotlib (or pip install 'npuir[plot]')"
        ) from err
    if len(programs) != result.ranks:
        raise ValueError(f"expected {result.ranks} program(s), one per rank, got {len(programs)}")

    rows: list[tuple[int, int]] = [
        (r, s) for r, prog in enumerate(programs) for s in range(len(prog.streams))
    ]
    row_of = {key: i for i, key in enumerate(rows)}
    fig = Figure(figsize=(12, 1.0 + 0.45 * len(rows)))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    bars: dict[int, dict[str, list[tuple[float, float]]]] = {}
    for o in result.ops:
        if o.end <= o.start:
            continue
        lane = bars.setdefault(row_of[(o.rank, o.stream)], {})
        lane.setdefault(o.engine, []).append((_us(o.start), _us(o.end - o.start)))
    holds: dict[int, list[tuple[float, float]]] = {}
    for o in result.ops:
        if o.held_from < o.start:
            holds.setdefault(row_of[(o.rank, o.stream)], []).append(
                (_us(o.held_from), _us(o.start - o.held_from))
            )
    for y, held in holds.items():
        # Cores a hold-and-wait op holds before it can start: hatched.
        ax.broken_barh(held, (y - 0.4, 0.8), facecolors="none", hatch="///", edgecolor="grey")
    for y, by_engine in bars.items():
        for engine, spans in sorted(by_engine.items()):
            ax.broken_barh(
                spans,
                (y - 0.4, 0.8),
                facecolors=_COLOURS.get(engine, _COLOURS[""]),
                edgecolor="black",
                linewidth=0.3,
            )
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"rank {r} · {_stream_label(programs[r], s)}" for r, s in rows])
    ax.invert_yaxis()
    ax.set_xlabel("time (µs)")
    ax.set_xlim(0, max(_us(result.makespan_ns), 1e-3))
    title = f"{result.hw_name}: makespan {result.makespan_ns} ns"
    if result.deadlock is not None:
        title += f" — DEADLOCK at {result.deadlock.time_ns} ns"
    if result.races:
        title += f" — {len(result.races)} race(s)"
    ax.set_title(title)
    used = sorted({o.engine for o in result.ops})
    ax.legend(
        handles=[Patch(color=_COLOURS.get(e, _COLOURS[""]), label=e or "sync") for e in used],
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        fontsize="small",
    )
    fig.tight_layout()

    def save(out: BinaryIO) -> None:
        fig.savefig(out, format="png", dpi=100)

    write_output(os.fspath(path), save)
