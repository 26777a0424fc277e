"""One self-contained HTML page for a run (`npuir-run --report`) or an advice
(`npuir-advise --report`), to open from disk: no network, no CDN, no external file.

A run's page has

- the timeline: a lane per stream, grouped per rank, each op a rectangle coloured by
  engine (the critical path outlined), an arrow from each record to the wait it released,
  and a dashed line joining the k-th collective of each rank.  It is plain SVG, positioned
  in Python; about forty lines of JavaScript (`_ZOOM_JS`) re-place it when the user zooms
  (mouse wheel), pans (drag) or resets (double click).  Without JavaScript the page
  still shows the whole run;
- per-stream busy time and the cores in use against the device's count, the memory curve
  (planned bytes live) against the plan, its lower bound and the budget: matplotlib
  figures, inlined as SVG;
- the step_trace_time rows (torch_npu's columns) and the "why" lines.

An advice's page has, per gear, the table of the variants compared with the recommended one
highlighted, the edits that make it, the makespan-against-memory Pareto front, and the
"why" lines.

matplotlib is needed (`npuir[plot]`); `ReportUnavailable` says so when it is missing.
"""

from __future__ import annotations

import html
import io
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Any, NamedTuple

from npuir.analysis.program import Program
from npuir.dialects.npu import LIMITED_ENGINES, CollectiveOp

from .hardware import Hardware
from .memory import live_bytes
from .report import STEP_TRACE_COLUMNS
from .simulator import SimResult
from .trace import PlotUnavailable

__all__ = ["GearRun", "ReportUnavailable", "Run", "advice_report_html", "run_report_html"]

ReportUnavailable = PlotUnavailable
"""matplotlib is not installed (the static plots need it)."""

_LABEL_W = 200
_PLOT_W = 1000
_ROW_H = 22
_HEAD_H = 20
_AXIS_H = 24

_PLOTTED_RANKS = 8
"""The static plots draw the first ranks only (the timeline has every one)."""

_COLOURS = {
    "cube": "#1f77b4",
    "vector": "#2ca02c",
    "comm": "#9467bd",
    "aicpu": "#8c564b",
    "": "#b0b0b0",
}

_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { border: 1px solid #ccc; padding: 2px 8px; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.recommended { background: #fff3b0; font-weight: bold; }
.why li { margin: .2em 0; }
svg.timeline { border: 1px solid #ddd; cursor: grab; user-select: none; }
svg.timeline .lane-label { font-size: 12px; }
svg.timeline .rank-label { font-size: 12px; font-weight: bold; }
svg.timeline .op.critical { stroke: #d62728; stroke-width: 1.5; }
svg.timeline .wait-arrow { stroke: #d62728; stroke-width: 1; opacity: .8; }
svg.timeline .collective-join { stroke: #9467bd; stroke-dasharray: 4 3; }
svg.timeline .tick { stroke: #ddd; } svg.timeline .tick-label { font-size: 11px; fill: #555; }
.plot svg { max-width: 100%; height: auto; }
.legend span { display: inline-block; margin-right: 1em; }
.legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; }
"""

# Zoom and pan, for each timeline on the page: every element with data-t0/data-t1 (ns) is re-placed from its times; the
# axis ticks are redrawn at round numbers of the visible span.
_ZOOM_JS = """
document.querySelectorAll("svg.timeline").forEach(function (svg) {
  var left = +svg.dataset.left, width = +svg.dataset.width, end = +svg.dataset.end;
  var v0 = 0, v1 = end, drag = null, NS = "http://www.w3.org/2000/svg";
  var items = svg.querySelectorAll("[data-t0]"), axis = svg.querySelector("g.axis");
  function x(t) { return left + (t - v0) * width / (v1 - v0); }
  function draw() {
    items.forEach(function (e) {
      var a = x(+e.dataset.t0), b = x(+e.dataset.t1);
      if (e.tagName === "rect") {
        e.setAttribute("x", a); e.setAttribute("width", Math.max(b - a, 0.5));
      } else { e.setAttribute("x1", a); e.setAttribute("x2", b); }
    });
    while (axis.firstChild) { axis.removeChild(axis.firstChild); }
    var raw = (v1 - v0) / 8, step = Math.pow(10, Math.floor(Math.log10(raw)));
    if (raw / step > 5) { step *= 5; } else if (raw / step > 2) { step *= 2; }
    for (var t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
      var line = document.createElementNS(NS, "line"), label = document.createElementNS(NS, "text");
      line.setAttribute("class", "tick"); line.setAttribute("x1", x(t)); line.setAttribute("x2", x(t));
      line.setAttribute("y1", 0); line.setAttribute("y2", svg.getAttribute("height") - 14);
      label.setAttribute("class", "tick-label"); label.setAttribute("x", x(t));
      label.setAttribute("y", svg.getAttribute("height") - 3);
      label.textContent = (t / 1000).toFixed(step < 1000 ? 2 : 0) + " \\u00b5s";
      axis.appendChild(line); axis.appendChild(label);
    }
  }
  function at(ev) {
    var box = svg.getBoundingClientRect();
    return v0 + (ev.clientX - box.left - left) * (v1 - v0) / width;
  }
  svg.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    var t = Math.min(Math.max(at(ev), v0), v1), f = ev.deltaY > 0 ? 1.25 : 0.8;
    var span = Math.min(Math.max((v1 - v0) * f, 1), end);
    v0 = Math.max(0, t - (t - v0) * span / (v1 - v0)); v1 = Math.min(end, v0 + span);
    v0 = v1 - span; draw();
  }, { passive: false });
  svg.addEventListener("mousedown", function (ev) { drag = { x: ev.clientX, v0: v0, v1: v1 }; });
  window.addEventListener("mouseup", function () { drag = null; });
  window.addEventListener("mousemove", function (ev) {
    if (!drag) { return; }
    var shift = (drag.x - ev.clientX) * (drag.v1 - drag.v0) / width;
    shift = Math.min(Math.max(shift, -drag.v0), end - drag.v1);
    v0 = drag.v0 + shift; v1 = drag.v1 + shift; draw();
  });
  svg.addEventListener("dblclick", function () { v0 = 0; v1 = end; draw(); });
  draw();
});
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _page(title: str, sections: Iterable[str], script: bool) -> str:
    body = "\n".join(sections)
    js = f"<script>{_ZOOM_JS}</script>" if script else ""
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n"
        f"<body><h1>{_e(title)}</h1>\n{body}\n{js}</body></html>\n"
    )


def _table(
    header: Sequence[str], rows: Iterable[Sequence[object]], classes: Sequence[str] = ()
) -> str:
    out = ["<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in header) + "</tr>"]
    for i, row in enumerate(rows):
        cls = f" class='{classes[i]}'" if i < len(classes) and classes[i] else ""
        cells = "".join(
            f"<td class='num'>{_e(c)}</td>" if isinstance(c, int | float) else f"<td>{_e(c)}</td>"
            for c in row
        )
        out.append(f"<tr{cls}>{cells}</tr>")
    return "".join(out) + "</table>"


def _why(lines: Sequence[str]) -> str:
    if not lines:
        return ""
    items = "".join(f"<li>{_e(line)}</li>" for line in lines)
    return f"<h2>Why</h2><ul class='why'>{items}</ul>"


# ---------------------------------------------------------------------------------------------
# Static plots: matplotlib, inlined as SVG
# ---------------------------------------------------------------------------------------------


def _figure(width: float, height: float) -> Any:
    try:
        from matplotlib.backends.backend_svg import FigureCanvasSVG
        from matplotlib.figure import Figure
    except ImportError as err:
        raise ReportUnavailable(
            "--report needs matplotlib: pip install matplotlib (or pip install 'npuir[plot]')"
        ) from err
    fig = Figure(figsize=(width, height))
    FigureCanvasSVG(fig)
    return fig


def _svg(fig: Any, name: str) -> str:
    """`fig` as an inline <svg> (text kept as text; ids salted by `name` so that the page's
    several figures do not share one)."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": name}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buf.getvalue()
    return f"<div class='plot' id='plot-{_e(name)}'>{text[text.index('<svg') :]}</div>"


def _busy_plot(result: SimResult, programs: Sequence[Program], suffix: str = "") -> str:
    keys = [k for k in sorted(result.stream_busy_ns) if k[0] < _PLOTTED_RANKS]
    labels = [f"rank {r} · {programs[r].streams[s].tag}" for r, s in keys]
    fig = _figure(7, 0.6 + 0.3 * len(keys))
    ax = fig.add_subplot()
    ax.barh(range(len(keys)), [result.stream_busy_ns[k] / 1000 for k in keys], color="#1f77b4")
    ax.axvline(result.makespan_ns / 1000, color="black", linestyle="--", label="makespan")
    ax.set_yticks(range(len(keys)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("busy time (µs)")
    ax.legend(loc="lower right", fontsize="small")
    return _svg(fig, "busy" + suffix)


def _core_plot(result: SimResult, hw: Hardware | None, suffix: str = "") -> str:
    """Cores of each limited engine in use over time (every rank), against the device's."""
    fig = _figure(9, 1.2 + 1.6 * len(LIMITED_ENGINES))
    end = result.makespan_ns / 1000
    changes: dict[tuple[int, str], dict[int, int]] = {}
    for o in result.ops:
        if o.rank < _PLOTTED_RANKS and o.core_steps:
            deltas = changes.setdefault((o.rank, o.pool), {0: 0})
            level = 0
            for t, cores in o.core_steps:
                deltas[t] = deltas.get(t, 0) + cores - level
                level = cores
    for i, pool in enumerate(LIMITED_ENGINES):
        ax = fig.add_subplot(len(LIMITED_ENGINES), 1, i + 1)
        for r in range(min(result.ranks, _PLOTTED_RANKS)):
            deltas = changes.get((r, pool), {0: 0})
            xs, ys, level = [], [], 0
            for t in sorted(deltas):
                level += deltas[t]
                xs.append(t / 1000)
                ys.append(level)
            xs.append(end)
            ys.append(level)
            ax.step(xs, ys, where="post", label=f"rank {r}")
        if hw is not None:
            ax.axhline(
                hw.cores(pool), color="red", linestyle="--", label=f"{hw.name}'s {pool} cores"
            )
        ax.set_ylabel(f"{pool} cores")
        ax.legend(loc="upper right", fontsize="small")
    ax.set_xlabel("time (µs)")
    return _svg(fig, "cores" + suffix)


def _memory_plot(
    result: SimResult,
    programs: Sequence[Program],
    memory: dict[str, Any] | None,
    budget: int | None,
    hw: Hardware | None,
    suffix: str = "",
) -> str:
    fig = _figure(9, 3.2)
    ax = fig.add_subplot()
    end = result.makespan_ns / 1000
    top = 0
    for r, steps in enumerate(live_bytes(result, programs)[:_PLOTTED_RANKS]):
        xs = [t / 1000 for t, _ in steps] + [end]
        ys = [level for _, level in steps] + [steps[-1][1]]
        top = max(top, *ys)
        ax.step(xs, ys, where="post", label=f"rank {r}: planned bytes live")
    marks: list[tuple[str, int, str]] = []
    if memory is not None:
        marks.append(("memory plan (peak)", memory["peak_bytes"], "black"))
        if memory.get("bound_bytes") is not None:
            marks.append(("lower bound (antichain)", memory["bound_bytes"], "grey"))
    if budget is not None:
        marks.append(("memory budget", budget, "red"))
    elif hw is not None and hw.hbm_bytes <= 4 * max(top, 1):
        marks.append((f"{hw.name} HBM", hw.hbm_bytes, "red"))  # only when it is in scale
    for label, value, colour in marks:
        ax.axhline(value, color=colour, linestyle="--", linewidth=1, label=f"{label}: {value} B")
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("bytes")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return _svg(fig, "memory" + suffix)


def _pareto_plot(
    points: Sequence[dict[str, Any]], variants: Sequence[dict[str, Any]], best: str
) -> str:
    fig = _figure(7, 3.6)
    ax = fig.add_subplot()
    front = sorted((p["peak_bytes"], p["makespan_ns"] / 1000) for p in points)
    if front:
        ax.step(
            [b for b, _ in front], [m for _, m in front], where="post", marker="o", color="#1f77b4",
            label="Pareto front (auto)",
        )  # fmt: skip
    for v in variants:
        if v.get("makespan_ns") is None or v.get("peak_bytes") is None:
            continue
        chosen = v["name"] == best
        ax.scatter(
            [v["peak_bytes"]], [v["makespan_ns"] / 1000], marker="*" if chosen else "s",
            s=140 if chosen else 40, color="#d62728" if chosen else "#7f7f7f", zorder=3,
        )  # fmt: skip
        ax.annotate(v["name"], (v["peak_bytes"], v["makespan_ns"] / 1000), fontsize=7,
                    xytext=(4, 4), textcoords="offset points")  # fmt: skip
    ax.set_xlabel("planned peak memory (bytes)")
    ax.set_ylabel("makespan (µs)")
    if front:
        ax.legend(loc="upper right", fontsize="small")
    return _svg(fig, "pareto")


# ---------------------------------------------------------------------------------------------
# The timeline: plain SVG
# ---------------------------------------------------------------------------------------------


def _timeline(result: SimResult, programs: Sequence[Program], index: int = 0) -> str:
    """The run's timeline as SVG; `index` numbers the page's timelines (a geared run draws
    one per gear), so that their ids differ: the first is `timeline`."""
    ident = "timeline" if index == 0 else f"timeline-{index}"
    end = max(result.makespan_ns, result.deadlock.time_ns if result.deadlock else 0, 1)
    row_y: dict[tuple[int, int], float] = {}
    parts: list[str] = []
    y = 0.0
    for r, prog in enumerate(programs):
        parts.append(f"<g class='rank-group' data-rank='{r}'>")
        parts.append(f"<text class='rank-label' x='4' y='{y + 14}'>rank {r}</text>")
        y += _HEAD_H
        for s, info in enumerate(prog.streams):
            row_y[(r, s)] = y
            parts.append(
                f"<g class='lane' data-rank='{r}' data-stream='{_e(info.tag)}'>"
                f"<rect class='lane-bg' x='{_LABEL_W}' y='{y}' width='{_PLOT_W}' "
                f"height='{_ROW_H}' fill='{'#fafafa' if s % 2 else '#f0f0f0'}'/>"
                f"<text class='lane-label' x='14' y='{y + 15}'>{_e(info.tag)}</text></g>"
            )
            y += _ROW_H
        parts.append("</g>")
    height = y + _AXIS_H

    def x(t: int) -> float:
        return round(_LABEL_W + t * _PLOT_W / end, 2)

    ops: list[str] = []
    critical = set(result.critical_path)
    for o in result.ops:
        prog = programs[o.rank]
        name = prog.describe(o.node)
        top = row_y[(o.rank, o.stream)] + 3
        cls = "op critical" if (o.rank, o.node) in critical else "op"
        tip = f"{name}: {o.start} to {o.end} ns" + (
            f", {o.cores} {o.engine} cores" if o.cores else ""
        )
        ops.append(
            f"<rect class='{cls}' data-engine='{_e(o.engine or 'sync')}' data-t0='{o.start}' "
            f"data-t1='{o.end}' x='{x(o.start)}' y='{top}' "
            f"width='{max(x(o.end) - x(o.start), 0.5)}' height='{_ROW_H - 6}' "
            f"fill='{_COLOURS.get(o.engine, _COLOURS[''])}'><title>{_e(tip)}</title></rect>"
        )
    arrows: list[str] = []
    for r, record, wait in result.event_edges:
        src, dst = result.op(r, record), result.op(r, wait)
        if src is None or dst is None:
            continue
        t1 = max(dst.end, src.end)
        arrows.append(
            f"<line class='wait-arrow' data-t0='{src.end}' data-t1='{t1}' x1='{x(src.end)}' "
            f"y1='{row_y[(r, src.stream)] + _ROW_H / 2}' x2='{x(t1)}' "
            f"y2='{row_y[(r, dst.stream)] + _ROW_H / 2}' marker-end='url(#{ident}-arrow)'/>"
        )
    # Collectives joined across ranks: a rank's k-th collective of a communicator is the same
    # collective as every other rank's k-th of that communicator (the simulator matches them
    # so), whichever engine runs it and whatever else the ranks run (MPMD entries).
    joined: dict[tuple[str, int], list[Any]] = {}
    seen: Counter[tuple[int, str]] = Counter()
    for o in sorted(result.ops, key=lambda o: (o.rank, o.node)):
        op = programs[o.rank].ops[o.node]
        if isinstance(op, CollectiveOp):
            k = seen[(o.rank, op.group)]
            seen[(o.rank, op.group)] += 1
            joined.setdefault((op.group, k), []).append(o)
    for members in joined.values():
        for a, b in pairwise(members):
            mid_a, mid_b = (a.start + a.end) // 2, (b.start + b.end) // 2
            arrows.append(
                f"<line class='collective-join' data-t0='{mid_a}' data-t1='{mid_b}' "
                f"x1='{x(mid_a)}' y1='{row_y[(a.rank, a.stream)] + _ROW_H / 2}' x2='{x(mid_b)}' "
                f"y2='{row_y[(b.rank, b.stream)] + _ROW_H / 2}'/>"
            )
    legend = "".join(
        f"<span><i style='background:{c}'></i>{_e(e or 'sync')}</span>" for e, c in _COLOURS.items()
    )
    return (
        f"<p class='legend'>{legend}<span>red outline: critical path; red arrow: record → "
        "wait; dashed: a collective joined across ranks.  Wheel to zoom, drag to pan, "
        "double-click to reset.</span></p>"
        f"<svg id='{ident}' class='timeline' xmlns='http://www.w3.org/2000/svg' width='{_LABEL_W + _PLOT_W}' "
        f"height='{height}' data-left='{_LABEL_W}' data-width='{_PLOT_W}' data-end='{end}'>"
        f"<defs><clipPath id='{ident}-clip'>"
        f"<rect x='{_LABEL_W}' y='0' width='{_PLOT_W}' height='{height}'/></clipPath>"
        f"<marker id='{ident}-arrow' viewBox='0 0 10 10' refX='10' refY='5' markerWidth='6' "
        "markerHeight='6' orient='auto-start-reverse'><path d='M0,0 L10,5 L0,10 z' "
        "fill='#d62728'/></marker></defs>"
        + "".join(parts)
        + "<g class='axis'></g>"
        + f"<g clip-path='url(#{ident}-clip)'>"
        + "".join(ops)
        + "".join(arrows)
        + "</g></svg>"
    )


# ---------------------------------------------------------------------------------------------
# The pages
# ---------------------------------------------------------------------------------------------


class Run(NamedTuple):
    """A run to draw: `npuir-run --json`'s report and what it was computed from."""

    report: dict[str, Any]
    result: SimResult
    programs: Sequence[Program]
    hw: Hardware | None


class GearRun(NamedTuple):
    """One gear of a geared program, for `run_report_html`: its label (`gear_cases`), its run
    (None when it could not be run: `note` says why) and whether it is the run's own."""

    label: str
    run: Run | None
    note: str = ""
    taken: bool = False


def run_report_html(
    report: dict[str, Any],
    result: SimResult,
    programs: Sequence[Program],
    hw: Hardware | None,
    *,
    title: str,
    memory_budget: int | None = None,
    gears: Sequence[GearRun] = (),
) -> str:
    """The page of a run: `report` is `npuir-run --json`'s (`build_report` and what the
    driver adds), `result` and `programs` what it was computed from.  A geared program's
    page has one section per gear (`gears`): the run's own gear is drawn from `result`, the
    others from their own runs."""
    if not gears:
        return _page(title, _run_sections(report, result, programs, hw, memory_budget), script=True)
    sections = [
        f"<p>Geared program: one section per gear ({len(gears)}); the run took "
        f"{_e(', '.join(g.label for g in gears if g.taken) or 'none of them')}.</p>"
    ]
    for index, g in enumerate(gears):
        if g.taken:
            body = _run_sections(report, result, programs, hw, memory_budget, index)
        elif g.run is not None:
            body = _run_sections(*g.run, None, index)
        else:
            body = [f"<p>{_e(g.note)}</p>"]
        sections.append(_gear_section(g.label, body, g.taken))
    return _page(title, sections, script=True)


def _gear_section(label: str | None, body: Sequence[str], taken: bool = False) -> str:
    """One gear's part of a page (a run's or an advice's), headed by its label; `taken`
    marks the gear the run itself took."""
    heading = ""
    if label:
        text = label[:1].upper() + label[1:] + (" (this run)" if taken else "")
        heading = f"<h2 class='gear-heading'>{_e(text)}</h2>"
    cls = "gear taken" if taken else "gear"
    return (
        f"<section class='{cls}' data-gear='{_e(label or '')}'>{heading}{''.join(body)}</section>"
    )


def _run_sections(
    report: dict[str, Any],
    result: SimResult,
    programs: Sequence[Program],
    hw: Hardware | None,
    memory_budget: int | None,
    index: int = 0,
) -> list[str]:
    suffix = f"-{index}" if index else ""  # the page's ids stay unique
    gears = [g for g in report.get("gears") or [] if g]
    head = [
        f"device {report['device']}, {report['ranks']} rank(s)",
        *(f"rank {r}: @{e}" + (f" → gear {g}" if g else "") for r, (e, g) in enumerate(
            zip(report["entries"], report.get("gears") or [None] * len(report["entries"]))
        )),
    ]  # fmt: skip
    if report.get("deadlock") is not None:
        head.append(report["deadlock"]["description"])
    else:
        head.append(f"makespan {report['makespan_ns']} ns")
        if report.get("single_stream_ns") is not None:
            head.append(
                f"one stream {report['single_stream_ns']} ns "
                f"(speedup {report['speedup_over_single_stream']}x)"
            )
    sections = ["<ul class='summary'>" + "".join(f"<li>{_e(h)}</li>" for h in head) + "</ul>"]
    if gears:
        sections.append(f"<p>Geared program: this run took gear(s) {_e(', '.join(gears))}.</p>")
    sections.append("<h2>Timeline</h2>" + _timeline(result, programs, index))
    if result.ranks > _PLOTTED_RANKS:
        sections.append(f"<p>The plots below show ranks 0 to {_PLOTTED_RANKS - 1}.</p>")
    sections.append(_why(report.get("why") or []))
    streams = report.get("streams") or []
    makespan = report.get("makespan_ns") or 0
    sections.append(
        "<h2>Streams</h2>"
        + _table(
            ("rank", "stream", "busy ns", "share of the makespan"),
            [
                (
                    s["rank"],
                    s["stream"],
                    s["busy_ns"],
                    f"{s['busy_ns'] / makespan:.1%}" if makespan else "",
                )
                for s in streams
            ],
        )
        + _table(
            ("engine", "utilisation"),
            [(e, f"{share:.1%}") for e, share in (report.get("utilisation") or {}).items()],
        )
        + _busy_plot(result, programs, suffix)
    )
    sections.append("<h2>Cores in use</h2>" + _core_plot(result, hw, suffix))
    if result.deadlock is None:
        sections.append(
            "<h2>Memory</h2>"
            + _memory_plot(result, programs, report.get("memory"), memory_budget, hw, suffix)
        )
    rows = report.get("step_trace_time") or []
    if rows:
        sections.append(
            "<h2>Step trace (µs, torch_npu's step_trace_time.csv columns)</h2>"
            + _table(STEP_TRACE_COLUMNS, [[row[c] for c in STEP_TRACE_COLUMNS] for row in rows])
        )
    return sections


def _variant_rows(variants: Sequence[dict[str, Any]]) -> list[tuple[object, ...]]:
    out: list[tuple[object, ...]] = []
    for v in variants:
        out.append(
            (
                v["name"],
                v.get("torchair") or "",
                "deadlock" if v.get("deadlock") else v.get("makespan_ns", ""),
                v.get("streams", ""),
                v.get("waits", ""),
                v.get("peak_bytes", ""),
            )
        )
    return out


def advice_report_html(
    advice: dict[str, Any], *, title: str, recommended: Run | None = None, note: str = ""
) -> str:
    """The page of an advice: `advice` is `npuir-advise --json`'s object; `recommended`, the
    run of the program with the recommended edits, is drawn after the tables (`note` says
    why there is none)."""
    best = advice.get("best") or ""
    variants: list[dict[str, Any]] = advice.get("variants") or []
    cases: list[Any] = []
    for v in variants:
        if v.get("case") not in cases:
            cases.append(v.get("case"))
    sections: list[str] = []
    for case in cases:
        of_case = [v for v in variants if v.get("case") == case]
        body = [
            ("" if case is not None else "<h2>Variants</h2>")
            + _table(
                ("variant", "TorchAir", "makespan ns", "streams", "waits", "peak bytes"),
                _variant_rows(of_case),
                ["recommended" if v["name"] == best else "" for v in of_case],
            )
        ]
        body += [_why(v["why"]) for v in of_case if v["name"] == best and v.get("why")]
        sections.append(_gear_section(case, body))
    sections.append(f"<p>Recommended: <b>{_e(best)}</b></p>")
    edits = advice.get("edits") or []
    if edits:
        sections.append(
            "<h2>Edits</h2>"
            + _table(
                ("where", "edit", "TorchAir"),
                [(e.get("where", ""), e.get("action", ""), e.get("torchair") or "") for e in edits],
            )
        )
    sections.append(
        "<h2>Makespan against memory</h2>"
        + _pareto_plot(advice.get("memory_pareto") or [], variants, best)
    )
    sections.append(_why(advice.get("why") or []))
    if recommended is not None:
        sections.append("<h2>The recommended schedule, run</h2>")
        sections += _run_sections(*recommended, None)
    elif note:
        sections.append(f"<p>{_e(note)}</p>")
    return _page(title, sections, script=recommended is not None)
