"""What `npuir-run --json`, `--outputs` and `--save-inputs` say.

With `--json` stdout is one JSON object whatever happens: the report carries every
warning (located ones with their file, line and column), an error is
`{"error": {...}, "warnings": [...]}` with the exit code it has without `--json`,
and a deadlocked run has no makespan (`null`).  `--outputs` and `--save-inputs`
write `.npz` files keyed as `--inputs` reads them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npuir.driver.run import RunConfig, run_program
from npuir.tools.run import run

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
OVERLAP = ROOT / "test" / "runner" / "overlap.mlir"
DEADLOCK = ROOT / "test" / "runner" / "deadlock.mlir"
CORE_DEADLOCK = EXAMPLES / "core_limit_deadlock.mlir"
GEARS = EXAMPLES / "gears.mlir"


def npuir_run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    try:
        code = run([str(a) for a in args])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    assert "Traceback" not in err + out
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, dict[str, Any]]:
    code, out, err = npuir_run(capsys, *args, "--json")
    assert err == ""  # everything is in the one object
    report = json.loads(out)
    assert isinstance(report, dict)
    return code, report


def test_json_carries_every_warning(capsys: pytest.CaptureFixture[str]) -> None:
    args = (CORE_DEADLOCK, "--entries", "rank0,rank1", "--timing-only")
    code, _, err = npuir_run(capsys, *args)
    on_stderr = [line for line in err.splitlines() if ": warning: " in line]
    # Per rank, two pair-rule warnings (a limited stream beside the unlimited nonzero's)
    # and two hold-and-wait hazards; without --json they go to stderr.
    assert len(on_stderr) == 8
    code, report = run_json(capsys, *args)
    assert code == 3
    warnings = report["warnings"]
    assert len(warnings) == 8
    assert all(w["severity"] == "warning" for w in warnings)
    rendered = [
        f"{w['location']['file']}:{w['location']['line']}:{w['location']['column']}: "
        f"warning: {w['message']}"
        for w in warnings
    ]
    assert rendered == on_stderr
    assert all(w["location"]["file"] == str(CORE_DEADLOCK) for w in warnings)


def test_a_deadlock_has_no_makespan(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = run_json(capsys, DEADLOCK, "--hw", "tiny", "--entries", "ab,ba")
    assert code == 3
    assert report["makespan_ns"] is None
    assert report["speedup_over_single_stream"] is None
    assert report["deadlock"]["time_ns"] == 0
    code, report = run_json(capsys, OVERLAP, "--hw", "tiny")
    assert code == 0 and report["makespan_ns"] > 0


def test_an_input_error_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    race = ROOT / "test" / "runner" / "race.mlir"
    code, report = run_json(capsys, race, "--hw", "tiny")
    assert code == 1  # as without --json
    error = report["error"]
    assert error["severity"] == "error"
    assert error["message"].startswith("race: 'npu.exp' (%b) on stream @s1")
    line = 1 + next(
        i for i, text in enumerate(race.read_text().splitlines()) if "%b = npu.exp" in text
    )
    assert error["location"] == {"file": str(race), "line": line, "column": 5}
    assert report["warnings"] == []


def test_warnings_before_an_error_are_in_the_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = GEARS.read_text().replace('gear.policy = "zip"', 'gear.policy = "product"')
    path = tmp_path / "product.mlir"
    path.write_text(text)
    shapes = ("--shape", "0=2x2", "--shape", "1=2x2")
    # gear-multiversion warns, then coreset-lower fails on a device that does not exist.
    spec = "gear-multiversion,stream-partition,coreset-lower{hw=nonexistent}"
    code, report = run_json(capsys, path, "--pipeline", spec, *shapes)
    assert code == 1
    assert report["error"]["location"]["file"] == str(path)
    assert report["warnings"]
    assert all(w["message"].startswith("dropping gear") for w in report["warnings"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--entry", "nope"), "no function @nope in the module (it has: @overlap)"),
        (("--shape", "7=4"), "--shape 7=4 names no argument of the function run"),
        (("--hw", "tpu9"), "--hw: unknown hardware preset 'tpu9'"),
        (("--trace", "/nonexistent/t.json"), "cannot write '/nonexistent/t.json'"),
    ],
)
def test_a_usage_error_as_json(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    base = () if "--hw" in args else ("--hw", "tiny")
    code, report = run_json(capsys, OVERLAP, *base, *args)
    assert code == 2
    assert report["error"]["message"].startswith(message)
    assert report["error"]["location"] is None


def test_an_unreadable_input_as_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, report = run_json(capsys, tmp_path / "none.mlir")
    assert code == 1
    assert report["error"]["message"].startswith("cannot read")


def test_save_inputs_round_trips_through_inputs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    saved, outputs = tmp_path / "in.npz", tmp_path / "out.npz"
    code, _, _ = npuir_run(
        capsys, OVERLAP, "--hw", "tiny", "--seed", "7", "--save-inputs", saved, "--outputs", outputs
    )
    assert code == 0
    first = run_program(RunConfig(path=str(OVERLAP), hw="tiny", seed=7))
    with np.load(saved) as data:
        assert sorted(data.files) == ["arg0", "arg1"]
        for index, array in enumerate(first.inputs[0]):
            np.testing.assert_array_equal(data[f"arg{index}"], array)
    with np.load(outputs) as data:
        assert sorted(data.files) == [f"out{i}" for i in range(len(first.outputs[0]))]
        for index, array in enumerate(first.outputs[0]):
            np.testing.assert_array_equal(data[f"out{index}"], array)
    # Read back with --inputs (and another seed, which it overrides): the same outputs.
    again = tmp_path / "again.npz"
    code, _, _ = npuir_run(
        capsys, OVERLAP, "--hw", "tiny", "--seed", "8", "--inputs", saved, "--outputs", again
    )
    assert code == 0
    with np.load(outputs) as a, np.load(again) as b:
        for key in a.files:
            np.testing.assert_array_equal(a[key], b[key])


@pytest.mark.slow
def test_several_ranks_are_keyed_by_rank(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    saved, outputs = tmp_path / "in.npz", tmp_path / "out.npz"
    args = (CORE_DEADLOCK.with_name("core_limit_fixed.mlir"), "--entries", "rank0,rank1")
    code, _, _ = npuir_run(capsys, *args, "--save-inputs", saved, "--outputs", outputs)
    assert code == 0
    with np.load(saved) as data:
        names = sorted(data.files)
    assert names and all(n.startswith(("rank0/arg", "rank1/arg")) for n in names)
    with np.load(outputs) as data:
        keys = sorted(data.files)
    assert keys and all(k.startswith(("rank0/out", "rank1/out")) for k in keys)
    again = tmp_path / "again.npz"
    code, _, _ = npuir_run(capsys, *args, "--inputs", saved, "--outputs", again)
    assert code == 0
    with np.load(outputs) as a, np.load(again) as b:
        for key in keys:
            np.testing.assert_array_equal(a[key], b[key])


@pytest.mark.parametrize("flag", ["--outputs", "--save-inputs"])
def test_arrays_need_the_numerics(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flag: str
) -> None:
    target = tmp_path / "x.npz"
    code, _, err = npuir_run(capsys, OVERLAP, "--hw", "tiny", "--timing-only", flag, target)
    assert code == 2
    assert f"{flag} needs the numerics; it cannot go with --timing-only" in err
    assert not target.exists()


def test_unwritable_outputs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = npuir_run(capsys, OVERLAP, "--hw", "tiny", "--outputs", tmp_path)
    assert code == 2
    assert out == ""
    assert err == f"npuir-run: error: cannot write '{tmp_path}': Is a directory\n"


def test_bfloat16_inputs_round_trip(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """np.savez stores bfloat16 as 2-byte void; --inputs reads it back as bfloat16."""
    t = "tensor<4x8xbf16>"
    path = tmp_path / "bf16.mlir"
    path.write_text(
        f"func.func @f(%a: {t}) -> {t} {{\n"
        f"  %0 = npu.relu %a : ({t}) -> {t}\n"
        f"  func.return %0 : {t}\n}}\n"
    )
    saved, first, again = tmp_path / "in.npz", tmp_path / "out.npz", tmp_path / "again.npz"
    code, _, err = npuir_run(
        capsys, path, "--hw", "tiny", "--save-inputs", saved, "--outputs", first
    )
    assert code == 0, err
    code, _, err = npuir_run(
        capsys, path, "--hw", "tiny", "--seed", "5", "--inputs", saved, "--outputs", again
    )
    assert code == 0, err
    with np.load(first) as a, np.load(again) as b:
        assert a.files == b.files == ["out0"]
        assert a["out0"].tobytes() == b["out0"].tobytes()
