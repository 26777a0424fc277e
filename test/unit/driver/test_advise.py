"""npuir-advise: the user's annotation, one stream and auto side by side, and edits that reproduce."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from npuir.driver.advise import AdviseConfig, advise
from npuir.driver.run import RunConfig, run_program
from npuir.tools.advise import run as advise_tool

ROOT = Path(__file__).resolve().parents[3]
SEED = str(ROOT / "examples" / "seed_multistream.mlir")
DEADLOCK = str(ROOT / "examples" / "core_limit_deadlock.mlir")


def test_seed_advice_names_the_regrouping_auto_finds(tmp_path: Path) -> None:
    out = tmp_path / "advised.mlir"
    advice = advise(AdviseConfig(path=SEED, emit_mlir=str(out)))
    spans = {v.name: v.makespan_ns for v in advice.variants}
    assert spans["auto"] is not None and spans["one stream"] is not None
    assert spans["auto"] < spans["one stream"] < (spans["as written"] or 0)
    assert advice.best == "auto"
    assert advice.lower_bound_ns is not None and advice.lower_bound_ns <= min(
        s for s in spans.values() if s is not None
    )
    actions = [str(e) for e in advice.edits]
    # The user's two scopes go; the second matmul (line 14) gets a stream of its own.
    assert actions == [
        f'{SEED}:11: remove torchair.scope.npu_stream_switch("1")',
        f'{SEED}:17: remove torchair.scope.npu_stream_switch("2")',
        f'{SEED}:14: wrap in torchair.scope.npu_stream_switch("chain1")',
    ]
    assert any("slower than one stream" in r and "cube cores" in r for r in advice.reasons)
    # The emitted source form runs, with the default pipeline, at exactly the advised makespan.
    assert advice.reproduced_ns == spans["auto"]
    rerun = run_program(RunConfig(path=str(out), check=True))
    assert rerun.status == 0 and rerun.result is not None
    assert rerun.result.makespan_ns == spans["auto"]


def test_deadlock_advice_names_the_limit_that_removes_it() -> None:
    advice = advise(AdviseConfig(path=DEADLOCK, entries=["rank0", "rank1"]))
    by_name = {v.name: v for v in advice.variants}
    assert by_name["as written"].deadlock
    assert not by_name["as written + core limits"].deadlock
    assert any(
        "removes the deadlock" in r and '6 vector cores on stream "nz"' in r for r in advice.reasons
    )
    assert not by_name[advice.best].deadlock


def test_tool_json_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert advise_tool([SEED, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["best"] == "auto"
    assert {v["name"] for v in report["variants"]} >= {"as written", "one stream", "auto"}
    assert report["edits"] and report["why"]
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f( {\n")
    assert advise_tool([str(bad)]) == 1
    assert f"{bad}:1:" in capsys.readouterr().err
    assert advise_tool([SEED, "--emit-mlir", str(tmp_path / "missing" / "x.mlir")]) == 2
    assert "cannot write" in capsys.readouterr().err
