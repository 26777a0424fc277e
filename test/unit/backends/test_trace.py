"""Tests for the Chrome/Perfetto trace and the PNG timeline of a simulation."""

from __future__ import annotations

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
from npuir.backends.npu.trace import PlotUnavailable, plot_timeline, trace_events, write_trace

TINY = PRESETS["tiny"]
T = "tensor<1024xf16>"
BIN = f"({T}, {T}) -> {T}"

# Same program as test_simulator's "a wait delays its stream": two adds of 12388 ns on 2
# vector cores each, joined by two record/wait pairs.
TEXT = f"""module {{
  stream.decl @s0 "default" priority 0
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
    assert (0, 0, "rank 0") in names and (1, 0, "rank 1") in names
    assert (0, 0, "default (@s0)") in names and (1, 1, "side (@s1)") in names


def test_trace_slices_flows_and_counters() -> None:
    result, progs = run()
    events = trace_events(result, progs)["traceEvents"]
    slices = of(events, "X")
    assert len(slices) == len(result.ops) == 7
    y = next(e for e in slices if e["name"] == "npu.add %y")
    assert (y["pid"], y["tid"], y["ts"], y["dur"]) == (0, 1, 12.418, 12.388)
    assert y["args"] == {"node": 3, "engine": "vector", "cores": 2, "flops": 1024, "bytes": 6144}
    # One flow per executed wait, from the record's slice to the wait's.
    starts, finishes = of(events, "s"), of(events, "f")
    assert [(s["tid"], s["ts"]) for s in starts] == [(0, 12.388), (1, 24.806)]
    assert [(f["tid"], f["ts"], f["bp"]) for f in finishes] == [(1, 12.398, "e"), (0, 24.816, "e")]
    assert [s["id"] for s in starts] == [f["id"] for f in finishes]
    # Vector cores in use: 2 during each add, none in between.
    vector = [
        (c["ts"], c["args"]["cores"]) for c in of(events, "C") if c["name"].startswith("vector")
    ]
    assert vector == [(0.0, 2), (12.388, 0), (12.418, 2), (24.806, 0)]


def test_trace_marks_races_and_deadlocks() -> None:
    racy = TEXT.replace("    sync.wait %e on @s1\n", "")
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, racy)
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    prog = build_program(func, module_streams(module))
    result = simulate([prog], TINY)
    instants = of(trace_events(result, [prog])["traceEvents"], "i")
    assert [i["name"] for i in instants] == ["race"]


def test_write_trace_writes_json(tmp_path: Path) -> None:
    result, progs = run()
    path = tmp_path / "trace.json"
    write_trace(result, progs, path)
    data = json.loads(path.read_text())
    assert data["displayTimeUnit"] == "ns" and data["otherData"]["makespan_ns"] == 24836
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def test_trace_needs_one_program_per_rank() -> None:
    result, progs = run(ranks=2)
    with pytest.raises(ValueError, match="one per rank"):
        trace_events(result, progs[:1])


def test_plot_timeline_without_matplotlib(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    result, progs = run()
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(PlotUnavailable, match="pip install matplotlib"):
        plot_timeline(result, progs, tmp_path / "t.png")
    assert issubclass(PlotUnavailable, ImportError)
    assert not (tmp_path / "t.png").exists()


def test_plot_timeline_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    result, progs = run(ranks=2)
    path = tmp_path / "timeline.png"
    plot_timeline(result, progs, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


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
