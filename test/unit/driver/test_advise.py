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
    # The bound holds under the user's own core limits (aiv collectives hold only theirs).
    spans = [v.makespan_ns for v in advice.variants if v.makespan_ns is not None]
    assert advice.lower_bound_ns is not None and advice.lower_bound_ns <= min(spans)


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


def test_npuir_run_says_why_and_what_auto_would_take() -> None:
    outcome = run_program(RunConfig(path=SEED, timing_only=True))
    why = outcome.report["why"]
    assert why[0].startswith("this schedule is 3.5 µs slower than one stream")
    assert any("waits 6.7 µs for cube cores" in line for line in why)
    assert outcome.report["auto"]["makespan_ns"] < outcome.report["single_stream_ns"]
    assert "mode=auto" in why[-1] and "22.1 µs" in why[-1]
    # A schedule that already beats one stream is explained, with no auto run for it.
    auto = run_program(
        RunConfig(path=SEED, timing_only=True, pipeline=outcome.report["auto"]["pipeline"])
    )
    assert auto.report["auto"] is None
    assert auto.report["why"][0].startswith("this schedule is 4.8 µs faster than one stream")


def test_a_ge_dump_is_advised_by_op_name() -> None:
    dump = str(ROOT / "test" / "frontends" / "Inputs" / "seed_multistream.pbtxt")
    advice = advise(AdviseConfig(path=dump))
    assert advice.best == "auto"
    assert [str(e) for e in advice.edits] == [
        'MatMul: remove torchair.scope.npu_stream_switch("1")',
        'Add_1: remove torchair.scope.npu_stream_switch("2")',
        'MatMul_1: wrap in torchair.scope.npu_stream_switch("chain1")',
    ]


@pytest.mark.parametrize("tool", ["npuir-import", "npuir-opt", "npuir-run", "npuir-advise"])
def test_every_tool_recognises_an_archive_by_content_and_says_what_to_install(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tool: str
) -> None:
    """One loader: every tool takes a torch.export archive, whatever its file is called."""
    import importlib
    import importlib.util
    import zipfile

    if importlib.util.find_spec("torch") is not None:
        pytest.skip("torch is installed: the archive would be loaded")
    archive = tmp_path / "model.bin"  # judged by content, not by the name
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("model/version", "1")
    module = {"npuir-import": "import_dump", "npuir-opt": "opt"}.get(tool, tool.split("-")[1])
    run = importlib.import_module(f"npuir.tools.{module}").run
    assert run([str(archive)]) == 2
    err = capsys.readouterr().err
    assert "is a torch.export archive" in err and "pip install 'npuir[torch]'" in err


def test_opt_prints_locations_that_read_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from npuir.context import make_context
    from npuir.diagnostics import op_location
    from npuir.dialects.npu import NpuOp
    from npuir.frontends.load import parse_file
    from npuir.tools.opt import run as opt_tool

    assert opt_tool([SEED, "--mlir-print-debuginfo"]) == 0
    printed = capsys.readouterr().out
    assert f'loc("{SEED}":14:' in printed
    again = tmp_path / "again.mlir"
    again.write_text(printed)
    module = parse_file(make_context(), again)
    lines = [op_location(op).line for op in module.walk() if isinstance(op, NpuOp)]  # type: ignore[union-attr]
    assert lines == [8, 11, 14, 17]  # the original file's lines, not the printed file's


def test_hazards_are_counted_by_kind_not_by_wording(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rewording the hold-and-wait warning must not change what advise counts."""
    from npuir.transforms import coreset_check

    hazards = lambda: {  # noqa: E731
        v.name: v.hazards
        for v in advise(AdviseConfig(path=DEADLOCK, entries=["rank0", "rank1"])).variants
    }
    before = hazards()
    report = coreset_check.CoresetCheckPass._report

    def reworded(
        self: object, ctx: object, at: object, message: str, kind: object, **args: object
    ) -> None:
        report(self, ctx, at, "something else entirely", kind, **args)  # type: ignore[arg-type]

    monkeypatch.setattr(coreset_check.CoresetCheckPass, "_report", reworded)
    assert hazards() == before
    assert any(before.values())
