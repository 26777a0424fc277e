"""Timelines of a simulation: Chrome/Perfetto trace JSON and a PNG.

`trace_events` turns a `SimResult` into the Chrome trace-event format that
Perfetto (ui.perfetto.dev), chrome://tracing and MindStudio Insight open, laid out as
torch_npu's profiler lays out `trace_view.json` (`torch_npu/profiler/analysis/`):

- per rank, an "Ascend Hardware" process labelled ``NPU <rank>`` with a thread per stream
  named by its tag (TorchAir's stream tag), an ``"X"`` slice per executed node (args:
  engine, cores, flops, bytes, and the profiler's "Block Num" and "Accelerator Core"); an
  op that overlaps another of its stream (Perfetto drops such slices) goes to an extra
  thread of that stream, and a "critical path" thread repeats the ops on the critical path;
- per rank, an "Overlap Analysis" process with the profiler's Computing, Communication,
  Communication(Not Overlapped) and Free threads (`npuir.backends.npu.report.overlap_intervals`),
  the slices its `step_trace_time.csv` adds up;
- flow events (``"s"`` on the record's slice, ``"f"`` on the wait's) for every wait;
- counter tracks (``"C"``) for the cube and vector cores in use, counting the
  cores a hold-and-wait op holds before it starts -- and, in a deadlock, the
  cores the blocked ops hold for ever, so the tracks show what the report lists -- with
  the device's core count beside them; a memory track per rank, the planned bytes live
  over time (`npuir.backends.npu.memory.live_bytes`), against the memory budget (or HBM),
  with an instant event at the planned peak;
- a counter track per stream of the cores its op holds: an ordinary op's blocks
  go to cores as they free up, so the count moves during the op's run;
- instant events (``"i"``) for races and for each op a deadlock blocks.

Trace timestamps are microseconds (the format's unit); the simulator's
integer nanoseconds become exact decimal fractions.

`plot_timeline` draws the same slices, event arrows and deadlock with
matplotlib, which is optional and imported only when called.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, BinaryIO, NamedTuple

from npuir.analysis.program import NodeKind, Program
from npuir.dialects.npu import LIMITED_ENGINES, NpuOp

from .hardware import Hardware
from .memory import live_bytes
from .profile import TASK_TYPES
from .report import OVERLAP_THREADS, overlap_intervals
from .simulator import SimResult

__all__ = [
    "PlotUnavailable",
    "Span",
    "merge_thin_spans",
    "plot_timeline",
    "timeline_figure",
    "trace_events",
    "trace_json",
]

# The AI Core's pools get counter tracks: those are what core limits are about.
_COUNTED_POOLS: tuple[str, ...] = LIMITED_ENGINES


class PlotUnavailable(ImportError):
    """matplotlib is not installed, so no PNG timeline can be drawn."""


def _us(ns: float) -> float:
    return ns / 1000


def _slice_name(prog: Program, node: int) -> str:
    op = prog.ops[node]
    name = str(op.name)
    if op.results and op.results[0].name_hint:
        return f"{name} %{op.results[0].name_hint}"
    return name


def _stream_label(prog: Program, s: int) -> str:
    return str(prog.streams[s].tag)


def _lanes(
    result: SimResult, programs: Sequence[Program]
) -> tuple[dict[tuple[int, int], int], list[int]]:
    """The trace thread of every executed (rank, node): its stream's own thread, or an extra
    thread of that stream when the op overlaps one before it there (Perfetto drops a JSON
    slice that overlaps another on its thread without nesting in it); and per rank, the
    first thread id left free."""
    lane_of: dict[tuple[int, int], int] = {}
    ends: dict[tuple[int, int], list[int]] = {}  # (rank, stream) -> end of each lane's last op
    extra = [len(p.streams) for p in programs]
    extra_tid: dict[tuple[int, int, int], int] = {}
    for rec in sorted(result.ops, key=lambda o: (o.start, o.end)):
        busy = ends.setdefault((rec.rank, rec.stream), [])
        lane = next((i for i, end in enumerate(busy) if end <= rec.start), len(busy))
        if lane == len(busy):
            busy.append(rec.end)
        else:
            busy[lane] = rec.end
        if lane == 0:
            tid = rec.stream
        else:
            key = (rec.rank, rec.stream, lane)
            if key not in extra_tid:
                extra_tid[key] = extra[rec.rank]
                extra[rec.rank] += 1
            tid = extra_tid[key]
        lane_of[(rec.rank, rec.node)] = tid
    return lane_of, extra


def _thread(pid: int, tid: int, name: str, sort_index: int) -> list[dict[str, Any]]:
    return [
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}},
        {
            "ph": "M",
            "name": "thread_sort_index",
            "pid": pid,
            "tid": tid,
            "args": {"sort_index": sort_index},
        },
    ]


def _process(pid: int, name: str, label: str, sort_index: int) -> list[dict[str, Any]]:
    return [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}},
        {"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": label}},
        {
            "ph": "M",
            "name": "process_sort_index",
            "pid": pid,
            "tid": 0,
            "args": {"sort_index": sort_index},
        },
    ]


def trace_events(
    result: SimResult,
    programs: Sequence[Program],
    *,
    hw: Hardware | None = None,
    memory_budget: int | None = None,
) -> dict[str, Any]:
    """The Chrome trace-event JSON object (``{"traceEvents": [...], ...}``) of `result`.

    `programs` are the ones given to `simulate`, one per rank.  With `hw` (the device
    simulated) the core counters get their limits; `memory_budget` (bytes) is drawn against
    the bytes live (without it, the device's HBM when `hw` is given).
    """
    if len(programs) != result.ranks:
        raise ValueError(f"expected {result.ranks} program(s), one per rank, got {len(programs)}")
    lane_of, critical_tid = _lanes(result, programs)
    events: list[dict[str, Any]] = []
    overlap_pid = result.ranks  # the "Overlap Analysis" processes follow the devices
    for r, prog in enumerate(programs):
        # As torch_npu's trace_view.json: "Ascend Hardware" labelled "NPU <device>".
        events += _process(r, f"Ascend Hardware (rank {r})", f"NPU {r}", r)
        for s, info in enumerate(prog.streams):
            events += _thread(r, s, str(info.tag), s)
        named = set(range(len(prog.streams)))
        for (r2, node), tid in sorted(lane_of.items()):
            if r2 == r and tid not in named:
                named.add(tid)
                label = _stream_label(prog, prog.stream[node])
                events += _thread(r, tid, f"{label} (overlapping)", tid)
        events += _thread(r, critical_tid[r], "critical path", critical_tid[r])
        events += _process(
            overlap_pid + r, f"Overlap Analysis (rank {r})", f"NPU {r}", result.ranks + r
        )
        for i, name in enumerate(OVERLAP_THREADS):
            events += _thread(overlap_pid + r, i, name, i)

    critical = set(result.critical_path)
    for rec in result.ops:
        prog = programs[rec.rank]
        op = prog.ops[rec.node]
        kind = prog.kind[rec.node]
        args: dict[str, Any] = {"node": rec.node, "engine": rec.engine or kind.name.lower()}
        if isinstance(op, NpuOp):
            args.update(cores=rec.cores, flops=op.flops(), bytes=op.bytes_moved())
            # The profiler's names: "Block Num" is the cores the task ran on.
            args["Block Num"] = rec.cores
            args["Accelerator Core"] = TASK_TYPES.get(rec.engine, rec.engine)
            if rec.held_from < rec.start:
                args["held_from_us"] = _us(rec.held_from)
        elif kind is NodeKind.RECORD and prog.event_id[rec.node] >= 0:
            args["event_id"] = prog.event_id[rec.node]
        on_path = (rec.rank, rec.node) in critical
        if on_path:
            args["critical_path"] = True
        slice_ = {
            "ph": "X",
            "name": _slice_name(prog, rec.node),
            "cat": rec.engine or "sync",
            "pid": rec.rank,
            "tid": lane_of[(rec.rank, rec.node)],
            "ts": _us(rec.start),
            "dur": _us(rec.end - rec.start),
            "args": args,
        }
        events.append(slice_)
        if on_path:
            events.append({**slice_, "tid": critical_tid[rec.rank], "cat": "critical_path"})

    for flow_id, (r, record, wait) in enumerate(result.event_edges):
        src = result.op(r, record)
        dst = result.op(r, wait)
        if src is None or dst is None:
            continue
        common = {"name": "event", "cat": "sync", "id": flow_id, "pid": r}
        events.append({**common, "ph": "s", "tid": lane_of[(r, record)], "ts": _us(src.start)})
        events.append(
            {**common, "ph": "f", "bp": "e", "tid": lane_of[(r, wait)], "ts": _us(dst.start)}
        )

    for r, summary in enumerate(overlap_intervals(result)):
        for i, name in enumerate(OVERLAP_THREADS):
            for start, end in summary[name]:
                events.append(
                    {
                        "ph": "X",
                        "name": name,
                        "cat": "overlap_analysis",
                        "pid": overlap_pid + r,
                        "tid": i,
                        "ts": _us(start),
                        "dur": _us(end - start),
                        "args": {},
                    }
                )

    by_rank: list[list[tuple[str, tuple[tuple[int, int], ...]]]] = [[] for _ in range(result.ranks)]
    held_on: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for o in result.ops:
        if o.core_steps:
            by_rank[o.rank].append((o.pool, o.core_steps))
            held_on.setdefault((o.rank, o.stream), []).extend(o.core_steps)
    if result.deadlock is not None:
        for b in result.deadlock.blocked:
            if b.holds and result.op(b.rank, b.node) is None:
                by_rank[b.rank].append((b.pool, ((b.held_from, b.holds),)))
                held_on.setdefault((b.rank, b.stream), []).append((b.held_from, b.holds))
    end_ns = max(result.makespan_ns, result.deadlock.time_ns if result.deadlock else 0)
    for r, holdings in enumerate(by_rank):
        events.extend(_core_counters(r, holdings))
        if hw is not None:
            for pool in _COUNTED_POOLS:
                events.extend(
                    {
                        "ph": "C",
                        "name": f"{pool} core limit",
                        "pid": r,
                        "ts": _us(t),
                        "args": {"cores": hw.cores(pool)},
                    }
                    for t in (0, end_ns)
                )
    for (r, s), steps in sorted(held_on.items()):
        label = _stream_label(programs[r], s)
        for t, cores in steps:
            events.append(
                {
                    "ph": "C",
                    "name": f"cores held on {label}",
                    "pid": r,
                    "ts": _us(t),
                    "args": {"cores": cores},
                }
            )
    if result.deadlock is None:
        budget = memory_budget if memory_budget is not None else hw.hbm_bytes if hw else None
        budget_name = "memory budget" if memory_budget is not None else "HBM"
        for r, steps in enumerate(live_bytes(result, programs)):
            events.extend(
                {
                    "ph": "C",
                    "name": "planned bytes live",
                    "pid": r,
                    "ts": _us(t),
                    "args": {"bytes": level},
                }
                for t, level in steps
            )
            if budget is not None:
                events.extend(
                    {
                        "ph": "C",
                        "name": f"{budget_name} bytes",
                        "pid": r,
                        "ts": _us(t),
                        "args": {"bytes": budget},
                    }
                    for t in (0, end_ns)
                )
            peak_t, peak = max(steps, key=lambda step: (step[1], -step[0]))
            events.append(
                {
                    "ph": "i",
                    "s": "p",
                    "name": f"planned peak: {peak} bytes live",
                    "cat": "memory",
                    "pid": r,
                    "tid": 0,
                    "ts": _us(peak_t),
                    "args": {"bytes": peak},
                }
            )

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
    rank: int, holdings: list[tuple[str, tuple[tuple[int, int], ...]]]
) -> list[dict[str, Any]]:
    """One counter track per pool, from each op's (pool, steps): (time, cores held from
    then on); a last step above 0 is never released (an op a deadlock blocks)."""
    out: list[dict[str, Any]] = []
    for pool in _COUNTED_POOLS:
        deltas: dict[int, int] = {0: 0}
        for held_pool, steps in holdings:
            if held_pool == pool:
                level = 0
                for t, cores in steps:
                    deltas[t] = deltas.get(t, 0) + cores - level
                    level = cores
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


def trace_json(
    result: SimResult,
    programs: Sequence[Program],
    *,
    hw: Hardware | None = None,
    memory_budget: int | None = None,
) -> bytes:
    """`result` as Chrome/Perfetto trace JSON (what `npuir-run --trace` writes); `hw` and
    `memory_budget` as `trace_events` takes them."""
    data = trace_events(result, programs, hw=hw, memory_budget=memory_budget)
    return json.dumps(data, separators=(",", ":")).encode("utf-8")


_COLOURS = {
    "cube": "#1f77b4",
    "vector": "#2ca02c",
    "comm": "#9467bd",
    "aicpu": "#8c564b",
    "": "#7f7f7f",
}

# The PNG's geometry: 14 x (1 + 0.5 per row) inches at 100 dpi.  The axes get about three
# quarters of the width (the rest is row names and the legend); bars are merged and labels
# placed against that estimate.
_DPI = 100
_WIDTH_IN = 14.0
_AXES_PX = _WIDTH_IN * _DPI * 0.75
_CHAR_PX = 5.5  # width of one character at the labels' 7-point font
_MAX_LABELS = 60
_MAX_ARROWS = 400
"""With more event edges than this the arrows would hide the bars: none are drawn and the
legend says so (the `--trace` JSON has every one, as flow events)."""


class Span(NamedTuple):
    """A bar of one row: `start`..`end` in ns, the engine covering most of it, and how many
    ops it stands for (more than one where ops thinner than a pixel were merged)."""

    start: int
    end: int
    engine: str
    ops: int


def merge_thin_spans(spans: Sequence[tuple[int, int, str]], pixel_ns: float) -> list[Span]:
    """Bars of one row as they can be seen at `pixel_ns` per pixel.

    `spans` are (start, end, engine) of the ops of one stream, in any order.  A span
    narrower than two pixels is merged with the thin spans before it when less than a pixel
    of idle time separates them and the merged bar stays under four pixels, so a run of 20,000
    short ops shows as the busy stretches it makes (in the colours of the engines that
    made them) instead of a smear of edges; wider spans stay as they are.  A merged bar takes the
    colour of the engine that covers most of it.
    """
    out: list[Span] = []
    busy: dict[str, int] = {}
    for start, end, engine in sorted(spans):
        thin = end - start < 2 * pixel_ns
        if out and thin:
            last = out[-1]
            last_thin = last.ops > 1 or last.end - last.start < 2 * pixel_ns
            # A merged bar stops at a few pixels, so that the engines' mix still shows.
            if last_thin and start - last.end < pixel_ns and end - last.start < 4 * pixel_ns:
                busy[engine] = busy.get(engine, 0) + end - start
                main = max(sorted(busy), key=lambda e: busy[e])
                out[-1] = Span(last.start, max(last.end, end), main, last.ops + 1)
                continue
        busy = {engine: end - start}
        out.append(Span(start, end, engine, 1))
    return out


def plot_timeline(result: SimResult, programs: Sequence[Program], out: BinaryIO) -> None:
    """Write `timeline_figure` as a PNG to the binary stream `out` (what `npuir-run --plot`
    writes).

    Raises `PlotUnavailable` (an `ImportError`) when matplotlib is not installed.
    """
    timeline_figure(result, programs).savefig(out, format="png", dpi=_DPI)


def timeline_figure(result: SimResult, programs: Sequence[Program]) -> Any:
    """The run as a matplotlib `Figure`: one row per (rank, stream), a bar per op coloured by
    engine, the longest ops labelled, an arrow from each record to the wait it released,
    hatched cores a hold-and-wait op holds before it starts, and for a deadlock a red mark
    on every blocked op (with arrows along the wait-for edges).  Ops thinner than a pixel
    are merged into the busy stretches they make (`merge_thin_spans`), so a 20k-op run
    stays readable.

    Raises `PlotUnavailable` (an `ImportError`) when matplotlib is not installed.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D
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
    deadlock = result.deadlock
    end_ns = max(result.makespan_ns, deadlock.time_ns if deadlock is not None else 0)
    # Room on the right for the deadlock's marks and labels.
    span_ns = max(end_ns * (1.12 if deadlock is not None else 1.0), 1000.0)
    pixel_ns = span_ns / _AXES_PX

    fig = Figure(figsize=(_WIDTH_IN, 1.2 + 0.5 * len(rows)))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()

    def y(rank: int, stream: int) -> int:
        return row_of[(rank, stream)]

    holds: dict[int, list[tuple[float, float]]] = {}
    lanes: dict[int, list[tuple[int, int, str]]] = {}
    for o in result.ops:
        if o.held_from < o.start:
            holds.setdefault(y(o.rank, o.stream), []).append(
                (_us(o.held_from), _us(o.start - o.held_from))
            )
        if o.end > o.start:
            lanes.setdefault(y(o.rank, o.stream), []).append((o.start, o.end, o.engine))
    for row, held in holds.items():
        # Cores a hold-and-wait op holds before it can start: hatched.
        ax.broken_barh(held, (row - 0.4, 0.8), facecolors="none", hatch="///", edgecolor="grey")
    merged_any = False
    for row, spans in lanes.items():
        by_engine: dict[str, list[tuple[float, float]]] = {}
        for bar in merge_thin_spans(spans, pixel_ns):
            merged_any |= bar.ops > 1
            by_engine.setdefault(bar.engine, []).append((_us(bar.start), _us(bar.end - bar.start)))
        for engine, bars in sorted(by_engine.items()):
            # Edges only on bars wide enough for them not to hide the fill.
            edges_of = ["black" if w >= 3 * _us(pixel_ns) else "none" for _, w in bars]
            ax.broken_barh(
                bars,
                (row - 0.4, 0.8),
                facecolors=_COLOURS.get(engine, _COLOURS[""]),
                edgecolors=edges_of,
                linewidth=0.3,
            )

    # Labels: the longest ops, inside their bars, shortened to fit (records and waits, whose
    # bars are the launch overhead, are left unnamed).
    labelled = 0
    for o in sorted((o for o in result.ops if o.engine), key=lambda o: o.start - o.end):
        chars = int((o.end - o.start) / pixel_ns / _CHAR_PX) - 1
        if labelled == _MAX_LABELS or chars < 3:
            break
        name = _slice_name(programs[o.rank], o.node)
        text = name if len(name) <= chars else name[: chars - 1] + "…"
        ax.text(
            _us((o.start + o.end) / 2),
            y(o.rank, o.stream),
            text,
            ha="center",
            va="center",
            fontsize=7,
            color="white",
            clip_on=True,
        )
        labelled += 1

    # Event arrows: from the end of each record to the end of the wait it released.
    edges: list[tuple[tuple[float, float], tuple[float, float]]] = []
    for rank, record, wait in result.event_edges:
        src, dst = result.op(rank, record), result.op(rank, wait)
        if src is not None and dst is not None:
            edges.append(
                (
                    (_us(src.end), y(rank, src.stream)),
                    (_us(max(dst.end, src.end)), y(rank, dst.stream)),
                )
            )
    if len(edges) <= _MAX_ARROWS:
        for (x0, y0), (x1, y1) in edges:
            ax.annotate(
                "",
                xy=(x1, y1),
                xytext=(x0, y0),
                arrowprops={"arrowstyle": "->", "color": "#d62728", "lw": 0.8, "alpha": 0.8},
            )

    if deadlock is not None:
        at = _us(deadlock.time_ns)
        ax.axvline(at, color="red", linestyle="--", linewidth=1)
        spots = {(b.rank, b.node): (at, y(b.rank, b.stream)) for b in deadlock.blocked}
        for b in deadlock.blocked:
            x0, y0 = spots[(b.rank, b.node)]
            ax.plot([x0], [y0], marker="X", color="red", markersize=10, zorder=5)
            ax.annotate(
                f"blocked: {b.op} ({b.reason})",
                xy=(x0, y0),
                xytext=(6, -10),
                textcoords="offset points",
                fontsize=7,
                color="darkred",
            )
            for key in b.blocked_by:
                if key in spots and key != (b.rank, b.node):
                    ax.annotate(
                        "",
                        xy=spots[key],
                        xytext=(x0, y0),
                        arrowprops={
                            "arrowstyle": "->",
                            "color": "red",
                            "connectionstyle": "arc3,rad=0.3",
                        },
                    )

    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"rank {r} · {_stream_label(programs[r], s)}" for r, s in rows])
    ax.set_ylim(len(rows) - 0.4, -0.6)
    ax.set_xlabel("time (µs)")
    ax.set_xlim(0, _us(span_ns))
    title = f"{result.hw_name}: {len(result.ops)} ops, "
    if deadlock is not None:
        title += f"DEADLOCK at {deadlock.time_ns} ns, {len(deadlock.blocked)} op(s) blocked"
    else:
        title += f"makespan {result.makespan_ns} ns"
    if result.races:
        title += f" — {len(result.races)} race(s)"
    ax.set_title(title)
    used = sorted({o.engine for o in result.ops})
    handles: list[Any] = [
        Patch(color=_COLOURS.get(e, _COLOURS[""]), label=e or "sync") for e in used
    ]
    if len(edges) > _MAX_ARROWS:
        label = f"{len(edges)} record → wait arrows: too many to draw"
        handles.append(Patch(color="none", label=label))
    elif edges:
        handles.append(Line2D([], [], color="#d62728", label="record → wait"))
    if holds:
        handles.append(Patch(facecolor="none", hatch="///", edgecolor="grey", label="cores held"))
    if deadlock is not None:
        handles.append(
            Line2D([], [], color="red", marker="X", linestyle="none", label="blocked op")
        )
    if merged_any:
        handles.append(Patch(color="none", label="ops < 1 px merged"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    fig.tight_layout()
    return fig
