"""Tests for the Chrome/Perfetto trace and the PNG timeline of a simulation."""

from __future__ import annotations

import dataclasses
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from xdsl.dialects.func import FuncOp

import npuir
from npuir.analysis.program import Program, build_program, module_streams
from npuir.backends.npu.hardware import PRESETS
from npuir.backends.npu.simulator import SimResult, simulate
from npuir.backends.npu.trace import (
    PlotUnavailable,
    Span,
    merge_thin_spans,
    plot_timeline,
    timeline_figure,
    trace_events,
    trace_json,
)

TINY = PRESETS["tiny"]
T = "tensor<1024xf16>"
BIN = f"({T}, {T}) -> {T}"

# Same program as test_simulator's "a wait delays its stream": two adds on 2 vector cores
# each, joined by two record/wait pairs.  The times the trace shows are the simulator's
# (its own tests pin them), so these tests compare the trace with the `SimResult`.
TEXT = f"""module {{
  stream.decl @s0 "<main>" priority 0
  stream.decl @s1 "side" priority 0
  func.func @f(%a: {T}, %b: {T}) -> {T} {{
    %x = npu.add %a, %b {{stream.on = @s0}} : {BIN}
    %e = sync.record on @s0
    sync.wait %e on @s1
    %y = npu.add %x, %b {{stream.on = @s1}} : {BIN}
    %f = sync.record on @s1
    sync.wait %f on @s0
    func.return %y : {T}
  }}
}}"""


def run(ranks: int = 1) -> tuple[SimResult, list[Program]]:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, TEXT)
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    prog = build_program(func, module_streams(module))
    progs = [prog] * ranks
    return simulate(progs, TINY), progs


def of(events: list[dict[str, Any]], ph: str) -> list[dict[str, Any]]:
    return [e for e in events if e["ph"] == ph]


def test_trace_has_a_process_per_rank_and_a_thread_per_stream() -> None:
    result, progs = run(ranks=2)
    events = trace_events(result, progs)["traceEvents"]
    names = {
        (e["pid"], e.get("tid"), e["args"]["name"]) for e in of(events, "M") if "name" in e["args"]
    }
    # As torch_npu's trace_view.json: a hardware process per device, a thread per stream
    # (named by its tag), and the device's "Overlap Analysis" process.
    assert (0, 0, "Ascend Hardware (rank 0)") in names and (
        1,
        0,
        "Ascend Hardware (rank 1)",
    ) in names
    assert (0, 0, "<main>") in names and (1, 1, "side") in names
    assert (2, 0, "Overlap Analysis (rank 0)") in names and (3, 3, "Free") in names
    labels = {e["pid"]: e["args"]["labels"] for e in of(events, "M") if "labels" in e["args"]}
    assert labels == {0: "NPU 0", 1: "NPU 1", 2: "NPU 0", 3: "NPU 1"}


def test_trace_slices_flows_and_counters() -> None:
    result, progs = run()
    events = trace_events(result, progs)["traceEvents"]
    slices = [e for e in of(events, "X") if e["pid"] == 0 and e["cat"] != "critical_path"]
    assert len(slices) == len(result.ops) == 7
    y = next(e for e in slices if e["name"] == "npu.add %y")
    rec = {n: result.op(0, n) for n in range(7)}
    y_rec = rec[3]
    assert y_rec is not None
    assert (y["pid"], y["tid"], y["ts"], y["dur"]) == (
        0,
        1,
        y_rec.start / 1000,
        (y_rec.end - y_rec.start) / 1000,
    )
    assert y["args"] == {
        "node": 3,
        "engine": "vector",
        "cores": 2,
        "flops": 1024,
        "bytes": 6144,
        "Block Num": 2,
        "Accelerator Core": "AI_VECTOR_CORE",
        "critical_path": True,
    }
    # One flow per executed wait, from the record's slice to the wait's.
    starts, finishes = of(events, "s"), of(events, "f")
    at = {n: r.start / 1000 for n, r in rec.items() if r is not None}
    assert [(s["tid"], s["ts"]) for s in starts] == [(0, at[1]), (1, at[4])]
    assert [(f["tid"], f["ts"], f["bp"]) for f in finishes] == [(1, at[2], "e"), (0, at[5], "e")]
    assert [s["id"] for s in starts] == [f["id"] for f in finishes]
    # Vector cores in use: 2 during each add, none in between.
    x_rec = rec[0]
    assert x_rec is not None
    vector = [
        (c["ts"], c["args"]["cores"]) for c in of(events, "C") if c["name"] == "vector cores in use"
    ]
    assert vector == [(0.0, 2), (x_rec.end / 1000, 0), (at[3], 2), (y_rec.end / 1000, 0)]


def test_a_stream_counter_shows_the_cores_an_op_holds_as_they_free_up() -> None:
    """An op that starts on one core and spreads onto three more when another stream's op
    frees them: its stream's counter steps 1 -> 4 -> 3 -> 0 at the simulator's times."""
    text = """module {
  stream.decl @s0 "default" priority 1
  stream.decl @s1 "side" priority 0
  func.func @f(%a: tensor<1536xf16>, %b: tensor<4096xf16>) {
    %y = npu.add %a, %a {stream.on = @s1} : (tensor<1536xf16>, tensor<1536xf16>) -> tensor<1536xf16>
    %x = npu.add %b, %b {stream.on = @s0} : (tensor<4096xf16>, tensor<4096xf16>) -> tensor<4096xf16>
    func.return
  }
}"""
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, text)
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    prog = build_program(func, module_streams(module))
    hw = dataclasses.replace(TINY, hbm_bandwidth=10**18)  # compute-bound blocks
    result = simulate([prog], hw)
    x = result.op(0, 1)
    assert x is not None
    assert [c for _, c in x.core_steps] == [1, 4, 3, 0]
    events = trace_events(result, [prog])["traceEvents"]
    held = [
        (c["ts"], c["args"]["cores"])
        for c in of(events, "C")
        if c["name"] == "cores held on default"
    ]
    assert held == [(t / 1000, c) for t, c in x.core_steps]


def test_trace_marks_races_and_deadlocks() -> None:
    racy = TEXT.replace("    sync.wait %e on @s1\n", "")
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, racy)
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    prog = build_program(func, module_streams(module))
    result = simulate([prog], TINY)
    instants = of(trace_events(result, [prog])["traceEvents"], "i")
    assert [i["name"] for i in instants if i["cat"] != "memory"] == ["race"]


def test_trace_json_is_the_trace() -> None:
    result, progs = run()
    data = json.loads(trace_json(result, progs))
    assert data["displayTimeUnit"] == "ns"
    assert data["otherData"]["makespan_ns"] == result.makespan_ns


def test_trace_needs_one_program_per_rank() -> None:
    result, progs = run(ranks=2)
    with pytest.raises(ValueError, match="one per rank"):
        trace_events(result, progs[:1])


def test_plot_timeline_without_matplotlib(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    result, progs = run()
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = io.BytesIO()
    with pytest.raises(PlotUnavailable, match="pip install matplotlib"):
        plot_timeline(result, progs, out)
    assert issubclass(PlotUnavailable, ImportError)
    assert out.getvalue() == b""


@pytest.mark.slow
def test_plot_timeline_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    result, progs = run(ranks=2)
    out = io.BytesIO()
    plot_timeline(result, progs, out)
    assert out.getvalue()[:8] == b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------
# What the PNG timeline shows (matplotlib is optional: these skip without it)
# --------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[3]


def texts_of(fig: Any) -> list[Any]:
    (ax,) = fig.axes
    return list(ax.texts)


def test_timeline_labels_ops_and_draws_event_arrows() -> None:
    pytest.importorskip("matplotlib")
    result, progs = run(ranks=2)
    fig = timeline_figure(result, progs)
    texts = texts_of(fig)
    labels = sorted(t.get_text() for t in texts if t.get_text())
    # Both adds of both ranks are wide enough to carry their names.
    assert labels == ["npu.add %x", "npu.add %x", "npu.add %y", "npu.add %y"]
    arrows = [t for t in texts if not t.get_text() and t.arrow_patch is not None]
    assert len(arrows) == len(result.event_edges) == 4
    # Each arrow runs from a record's end to the end of the wait it released.
    ends = sorted(
        (result.op(r, rec).end / 1000, result.op(r, wait).end / 1000)  # type: ignore[union-attr]
        for r, rec, wait in result.event_edges
    )
    drawn = sorted((a.xyann[0], a.xy[0]) for a in arrows)
    assert drawn == ends
    assert "makespan 24836 ns" in fig.axes[0].get_title()


def test_timeline_marks_a_deadlocks_blocked_ops() -> None:
    pytest.importorskip("matplotlib")
    from npuir.driver.run import RunConfig, run_program

    config = RunConfig(
        path=str(ROOT / "test" / "runner" / "deadlock.mlir"),
        hw="tiny",
        entries=["ab", "ba"],
        timing_only=True,
    )
    outcome = run_program(config)
    assert outcome.result is not None and outcome.result.deadlock is not None
    fig = timeline_figure(outcome.result, outcome.programs)
    blocked = [t.get_text() for t in texts_of(fig) if t.get_text().startswith("blocked: ")]
    assert blocked == [
        "blocked: 'npu.all_reduce' (%a) (peers)",
        "blocked: 'npu.all_reduce' (%b) (peers)",
    ]
    (ax,) = fig.axes
    assert "DEADLOCK at 0 ns, 2 op(s) blocked" in ax.get_title()
    marks = [line for line in ax.lines if line.get_marker() == "X"]
    assert len(marks) == 2


def test_thin_spans_merge_into_busy_stretches() -> None:
    # 20,000 ops of 10 ns back to back (alternating engines), at 1000 ns a pixel: the
    # 200 us they take become bars of at most four pixels, not 20,000 slivers.
    spans = [(10 * i, 10 * i + 10, "cube" if i % 2 else "vector") for i in range(20_000)]
    bars = merge_thin_spans(spans, pixel_ns=1000)
    assert 50 <= len(bars) <= 200
    assert sum(b.ops for b in bars) == 20_000
    assert bars[0].start == 0 and bars[-1].end == 200_000
    assert all(b.end - b.start <= 4000 for b in bars)


def test_wide_spans_and_gaps_are_kept() -> None:
    spans = [
        (0, 100, "vector"),  # thin
        (150, 250, "cube"),  # thin, 50 ns after: merged, cube covers as much, tie -> cube
        (300, 400, "cube"),
        (5000, 6000, "vector"),  # a gap of many pixels: a new bar
        (6000, 60000, "comm"),  # wide: kept as it is
        (60000, 60010, "vector"),  # thin after a wide op: not swallowed by it
    ]
    bars = merge_thin_spans(spans, pixel_ns=1000)
    assert bars == [
        Span(0, 400, "cube", 3),
        Span(5000, 6000, "vector", 1),
        Span(6000, 60000, "comm", 1),
        Span(60000, 60010, "vector", 1),
    ]


def test_deadlock_counters_show_the_cores_the_blocked_ops_hold() -> None:
    """The core-limiting seed's deadlock: at the deadlock each rank's vector-core counter
    equals the sum of what the report says the blocked ops hold (48 on each card; on main
    the tracks stayed at 0)."""
    from npuir.driver.run import RunConfig, run_program

    example = Path(__file__).resolve().parents[3] / "examples" / "core_limit_deadlock.mlir"
    outcome = run_program(
        RunConfig(path=str(example), entries=["rank0", "rank1"], timing_only=True)
    )
    result = outcome.result
    assert result is not None and result.deadlock is not None
    events = trace_events(result, outcome.programs)["traceEvents"]
    for rank in (0, 1):
        held = {
            pool: sum(b.holds for b in result.deadlock.blocked if b.rank == rank and b.pool == pool)
            for pool in ("cube", "vector")
        }
        assert held["vector"] == 48
        for pool, cores in held.items():
            track = [
                c
                for c in of(events, "C")
                if c["pid"] == rank and c["name"] == f"{pool} cores in use"
            ]
            at_deadlock = [c for c in track if c["ts"] <= result.deadlock.time_ns / 1000]
            assert at_deadlock[-1]["args"]["cores"] == cores, (rank, pool)
