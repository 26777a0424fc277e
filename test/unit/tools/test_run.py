"""`npuir-run` as a user drives it: examples, exit codes, outputs, bad flags.

Most cases call the tool in-process (`npuir.tools.run.run(argv)`), which is what
the console script calls, with stdout and stderr captured; one runs the real
executable in a subprocess.  Every case checks that no Python traceback reaches
the user.  The timings themselves are the simulator's (its tests and
test/runner/*.mlir compute them by hand); these cases check that the tool reports
them consistently, not what they are.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import npuir.backends.npu.interpreters.npu as npu_interpreters
from npuir.driver.run import RunConfig, run_program
from npuir.tools.run import run

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
RUNNER_TESTS = ROOT / "test" / "runner"
OVERLAP = RUNNER_TESTS / "overlap.mlir"  # an add and a relu on two streams
DEADLOCK = RUNNER_TESTS / "deadlock.mlir"  # @ab / @ba: collectives in opposite order
GEARS = EXAMPLES / "gears.mlir"
# The line of race.mlir's unordered consumer, where the race is reported.
RACE_EXP_LINE = 1 + next(
    i
    for i, text in enumerate((RUNNER_TESTS / "race.mlir").read_text().splitlines())
    if text.strip().startswith("%b = npu.exp")
)

# How each example is meant to be run (its header says so) and the exit code it must give.
# All are small enough to check numerically at their own size: the slowest, moe_decode.mlir
# and tp_decoder_prefill.mlir, take a few seconds each; none needs --timing-only.
EXAMPLE_RUNS: dict[str, tuple[list[str], int]] = {
    "seed_multistream.mlir": ([], 0),
    "gears.mlir": (["--shape", "0=4x2", "--shape", "1=4x2"], 0),
    "core_limit_fixed.mlir": (["--entries", "rank0,rank1"], 0),
    "core_limit_deadlock.mlir": (["--entries", "rank0,rank1"], 3),
    "multi_branch.mlir": ([], 0),
    # One rank of the eight their collectives need, the seven others mirrored: a real
    # eight-rank --check of these sizes takes minutes (the quick workloads run all eight
    # ranks in test/unit/bench/test_workloads.py).
    "moe_decode.mlir": (["--mirror-peers"], 0),
    "tp_decoder_prefill.mlir": (["--mirror-peers"], 0),
    "tp_decoder_decode.mlir": (["--mirror-peers"], 0),
}


def npuir_run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """Run the tool in-process; (exit code, stdout, stderr), never a traceback."""
    try:
        code = run([str(a) for a in args])
    except SystemExit as exc:  # argparse's own usage errors
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert "Traceback" not in out
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, dict[str, Any]]:
    code, out, _ = npuir_run(capsys, *args, "--json")
    report = json.loads(out)  # the whole of stdout is one JSON object
    assert isinstance(report, dict), out
    return code, report


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --------------------------------------------------------------------------
# Every example, checked against the unscheduled program
# --------------------------------------------------------------------------


def test_every_example_has_a_run() -> None:
    found = {p.name for p in EXAMPLES.glob("*.mlir")}
    assert found == set(EXAMPLE_RUNS), "add new examples to EXAMPLE_RUNS with their flags"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXAMPLE_RUNS))
def test_example_checks(capsys: pytest.CaptureFixture[str], name: str) -> None:
    args, expected = EXAMPLE_RUNS[name]
    code, report = run_json(capsys, EXAMPLES / name, *args, "--check")
    assert code == expected
    assert report["check"] == {"passed": True, "mismatches": []}
    assert (report["deadlock"] is not None) == (expected == 3)


# --------------------------------------------------------------------------
# Exit codes 0-4
# --------------------------------------------------------------------------


def makespan_line(out: str) -> int:
    """The makespan the text report gives, in ns."""
    match = re.search(r"^makespan +(\d+) ns", out, re.MULTILINE)
    assert match is not None, out
    return int(match.group(1))


def test_exit_0_ok(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = npuir_run(capsys, OVERLAP, "--hw", "tiny")
    assert code == 0
    assert err == ""
    _, report = run_json(capsys, OVERLAP, "--hw", "tiny")
    assert makespan_line(out) == report["makespan_ns"] > 0


def test_exit_1_bad_input_is_located(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, "bad.mlir", "func.func @f() {\n  %0 = npu.bogus : () -> ()\n}\n")
    code, out, err = npuir_run(capsys, path)
    assert code == 1
    assert out == ""
    assert err.startswith(f"{path}:2:"), err
    assert "error:" in err.splitlines()[0]


def test_exit_1_race_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = npuir_run(capsys, RUNNER_TESTS / "race.mlir", "--hw", "tiny")
    assert code == 1
    assert out == ""
    line = RACE_EXP_LINE
    assert f"race.mlir:{line}:5: error: race: 'npu.exp' (%b) on stream @s1 (\"1\")" in err
    assert "'npu.relu' (%a) on stream @s0 (\"<main>\")" in err


def test_exit_1_no_gear_matches(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = npuir_run(capsys, GEARS, "--shape", "0=3x2", "--shape", "1=3x2")
    assert code == 1
    assert "the gears are: arg0 dim 0 = 2, arg1 dim 0 = 2; arg0 dim 0 = 4, arg1 dim 0 = 4" in err


def test_exit_1_for_a_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = npuir_run(capsys, tmp_path / "nope.mlir")
    assert code == 1
    assert "cannot read" in err


def test_exit_2_usage(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = npuir_run(capsys, OVERLAP, "--no-such-flag")
    assert code == 2
    assert out == ""
    assert "usage: npuir-run" in err


def test_exit_2_check_needs_numerics(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = npuir_run(capsys, OVERLAP, "--check", "--timing-only")
    assert code == 2
    assert "--timing-only" in err


def test_exit_3_deadlock_also_under_check(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = npuir_run(capsys, DEADLOCK, "--hw", "tiny", "--entries", "ab,ba", "--check")
    assert code == 3
    assert "deadlock at 0 ns: 2 op(s) can never start" in out
    assert "check            passed" not in out  # the table stops at the deadlock


def test_exit_4_check_failed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kernel that computes differently once an op is scheduled fails `--check`.

    The interpreter calls `run_npu_op` for every npu op; the patched one adds 1 to the
    result of an `npu.add` that carries `stream.on` (that is, in the lowered program,
    not in the unscheduled reference), as a scheduling bug that changes a value would.
    """
    real = npu_interpreters.run_npu_op

    def miscompiled(op: Any, args: Any) -> tuple[Any, ...]:
        results = real(op, args)
        if op.name == "npu.add" and "stream.on" in op.attributes:
            return tuple(r + r.dtype.type(1) for r in results)
        return results

    monkeypatch.setattr(npu_interpreters, "run_npu_op", miscompiled)
    code, report = run_json(capsys, OVERLAP, "--hw", "tiny", "--check")
    assert code == 4
    assert report["check"] == {"passed": False, "mismatches": ["rank 0 output 0"]}
    code, out, _ = npuir_run(capsys, OVERLAP, "--hw", "tiny", "--check")
    assert code == 4
    assert "check            FAILED: rank 0 output 0" in out


@pytest.mark.slow
def test_exit_codes_of_the_real_executable(capsys: pytest.CaptureFixture[str]) -> None:
    """The console script maps outcomes to exit codes the same way (0 and 3 here)."""
    tool = Path(sys.executable).with_name("npuir-run")
    ok = subprocess.run(
        [str(tool), str(OVERLAP), "--hw", "tiny", "--json"], capture_output=True, text=True
    )
    assert ok.returncode == 0, ok.stderr
    # The executable reports what the tool in-process does.
    _, report = run_json(capsys, OVERLAP, "--hw", "tiny")
    assert json.loads(ok.stdout)["makespan_ns"] == report["makespan_ns"] > 0
    dead = subprocess.run(
        [str(tool), str(DEADLOCK), "--hw", "tiny", "--entries", "ab,ba", "--timing-only"],
        capture_output=True,
        text=True,
    )
    assert dead.returncode == 3
    assert "Traceback" not in dead.stderr


# --------------------------------------------------------------------------
# Outputs: --json, --trace, --plot
# --------------------------------------------------------------------------


def test_json_is_one_object_for_a_deadlock(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = run_json(capsys, DEADLOCK, "--hw", "tiny", "--entries", "ab,ba")
    assert code == 3
    deadlock = report["deadlock"]
    assert [b["op"] for b in deadlock["blocked"]] == [
        "'npu.all_reduce' (%a)",
        "'npu.all_reduce' (%b)",
    ]
    assert [(c["rank"], c["op"]) for c in deadlock["cycle"]] == [
        (0, "'npu.all_reduce' (%a)"),
        (1, "'npu.all_reduce' (%b)"),
    ]


def test_trace_is_chrome_trace_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    wait = RUNNER_TESTS / "wait-delays.mlir"
    code, _, _ = npuir_run(
        capsys, wait, "--hw", "tiny", "--ranks", "2", "--timing-only", "--trace", out
    )
    assert code == 0
    events = json.loads(out.read_text())["traceEvents"]
    processes = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert processes == {
        0: "Ascend Hardware (rank 0)",
        1: "Ascend Hardware (rank 1)",
        2: "Overlap Analysis (rank 0)",
        3: "Overlap Analysis (rank 1)",
    }
    slices = [e for e in events if e["ph"] == "X" and e["cat"] != "critical_path"]
    slices = [e for e in slices if e["pid"] in (0, 1)]
    assert all(isinstance(e["ts"], int | float) and e["dur"] >= 0 for e in slices)

    def timed(name: str) -> list[tuple[int, float, float]]:
        return sorted((e["pid"], e["ts"], e["dur"]) for e in slices if e["name"] == name)

    adds, firsts = timed("npu.add %y0"), timed("npu.add %x")
    # SPMD: both ranks run the same timeline; the waiting add starts after the first ends.
    assert [a[1:] for a in adds] == [adds[0][1:]] * 2 and [f[1:] for f in firsts] == [
        firsts[0][1:]
    ] * 2
    assert adds[0][1] >= firsts[0][1] + firsts[0][2] and adds[0][2] > 0
    starts = {(e["pid"], e["id"]) for e in events if e["ph"] == "s"}
    finishes = {(e["pid"], e["id"]) for e in events if e["ph"] == "f"}
    assert starts and starts == finishes  # one record -> wait flow per executed wait
    assert len(starts) == 4  # 2 waits per rank


def test_trace_to_an_unwritable_path(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "missing-dir" / "out.json"
    code, _, err = npuir_run(capsys, OVERLAP, "--hw", "tiny", "--timing-only", "--trace", target)
    assert code == 2
    assert f"cannot write '{target}'" in err
    assert not target.parent.exists()


def test_plot_without_matplotlib(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A None entry in sys.modules makes an import fail as if the package were absent
    # (CI installs matplotlib, for the tests that draw).
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    png = tmp_path / "out.png"
    code, out, err = npuir_run(capsys, OVERLAP, "--hw", "tiny", "--plot", png)
    assert code == 2
    assert "pip install 'npuir[plot]'" in err
    assert out == ""
    assert not png.exists()


# --------------------------------------------------------------------------
# Inputs: --inputs, --seed, --shape
# --------------------------------------------------------------------------


def gear_inputs(tmp_path: Path) -> tuple[Path, np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    x1 = np.arange(8, dtype=np.float32).reshape(4, 2)
    x2 = np.full((4, 2), 0.5, dtype=np.float32)
    path = tmp_path / "inputs.npz"
    np.savez(path, arg0=x1, arg1=x2)
    return path, x1, x2


def test_inputs_file_replaces_random_inputs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path, x1, x2 = gear_inputs(tmp_path)
    # The arrays' shapes choose the gear: no --shape needed.
    code, report = run_json(capsys, GEARS, "--inputs", path, "--check")
    assert code == 0
    assert report["gears"] == ["@forward_g1 (gear 1)"]
    assert report["check"]["passed"]
    # The library reports what it computed: the given inputs, whatever the seed.
    for seed in (0, 1):
        outcome = run_program(RunConfig(path=str(GEARS), inputs=str(path), seed=seed))
        np.testing.assert_array_equal(outcome.inputs[0][0], x1)
        np.testing.assert_array_equal(outcome.outputs[0][0], x1 + x2)


def test_inputs_file_must_fit_the_arguments(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cases = {
        "f64.npz": ({"arg0": np.ones((4, 2)), "arg1": np.ones((4, 2))}, "save it as float32"),
        "rank.npz": (
            {"arg0": np.ones(8, np.float32), "arg1": np.ones(8, np.float32)},
            "has shape 8, which does not fit argument 0 of @forward, tensor<?x2xf32>",
        ),
        "missing.npz": (
            {"arg0": np.ones((4, 2), np.float32)},
            "has no array 'arg1' or 'x2' for rank 0",
        ),
    }
    for name, (arrays, message) in cases.items():
        path = tmp_path / name
        np.savez(path, **arrays)  # type: ignore[arg-type]
        code, out, err = npuir_run(capsys, GEARS, "--inputs", path)
        assert code == 1, name
        assert message in err, err
        assert out == ""


def test_seed_changes_random_inputs() -> None:
    def inputs(seed: int) -> list[np.ndarray[Any, Any]]:
        config = RunConfig(path=str(OVERLAP), hw="tiny", seed=seed)
        return run_program(config).inputs[0]

    first, again, other = inputs(0), inputs(0), inputs(1)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], other[0])


@pytest.mark.parametrize("text", ["0=4xq", "4x2", "=4x2", "0=", "0=-1x2"])
def test_bad_shape_text(capsys: pytest.CaptureFixture[str], text: str) -> None:
    code, out, err = npuir_run(capsys, GEARS, "--shape", text)
    assert code == 2
    assert f"'{text}' is not ARG=DxD" in err
    assert out == ""


def test_shape_that_does_not_fit(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = npuir_run(capsys, GEARS, "--shape", "0=4x3", "--shape", "1=4x2")
    assert code == 2
    assert "--shape 0=4x3 does not fit argument 0 of @forward" in err


def test_dynamic_argument_without_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = npuir_run(capsys, GEARS)
    assert code == 2
    assert "give its shape with --shape 0=" in err


# --------------------------------------------------------------------------
# --hw, --entry
# --------------------------------------------------------------------------


def test_unknown_hw_preset(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = npuir_run(capsys, OVERLAP, "--hw", "tpu9")
    assert code == 2
    assert "unknown hardware preset 'tpu9'; valid presets: 910b2, 910b4, a3, tiny" in err


def test_hw_toml_overrides_a_preset(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # overlap.mlir with a 200 ns launch: the add 12288 + 200 = 12488 ns, beside it the relu
    # 8192 + 200 = 8392 ns and its record; then the wait, 20 ns: 12508 ns (12408 on tiny).
    toml = write(tmp_path, "slow_launch.toml", 'base = "tiny"\nlaunch_ns = 200\n')
    code, report = run_json(capsys, OVERLAP, "--hw", toml)
    assert code == 0
    assert report["device"] == "slow_launch"
    assert report["makespan_ns"] == 12508


def test_hw_toml_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = npuir_run(capsys, OVERLAP, "--hw", tmp_path / "none.toml")
    assert code == 2
    assert "cannot read hardware file" in err
    bad = write(tmp_path, "bad.toml", 'base = "tiny"\nlaunch_ns = -3\n')
    code, _, err = npuir_run(capsys, OVERLAP, "--hw", bad)
    assert code == 1
    assert "'launch_ns' must be non-negative" in err


def test_missing_entry_lists_functions(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = npuir_run(capsys, DEADLOCK, "--entry", "main")
    assert code == 2
    assert "no function @main in the module (it has: @ab, @ba)" in err
    code, _, err = npuir_run(capsys, DEADLOCK, "--entries", "ab,nope")
    assert code == 2
    assert "no function @nope" in err


def test_warnings_show_the_source_line(capsys: pytest.CaptureFixture[str]) -> None:
    path = EXAMPLES / "core_limit_deadlock.mlir"
    code, _, err = npuir_run(capsys, path, "--entries", "rank0,rank1", "--timing-only")
    assert code == 3
    lines = err.splitlines()
    first = next(i for i, line in enumerate(lines) if "hold-and-wait hazard" in line)
    assert lines[first].startswith(f"{path}:30:7: warning: hold-and-wait hazard: 'npu.nonzero'")
    assert lines[first + 1].strip() == "%n = npu.nonzero %mask : (!m) -> tensor<?x2xi64>"
    assert lines[first + 2].strip() == "^"


def test_single_stream_baseline_that_deadlocks_is_reported(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # On one stream per rank the two ranks issue their collectives in opposite
    # order, so the single-stream baseline cannot finish; the scheduled run can.
    code, report = run_json(
        capsys, EXAMPLES / "core_limit_fixed.mlir", "--entries", "rank0,rank1", "--timing-only"
    )
    assert code == 0
    assert report["single_stream_deadlocks"] is True
    assert report["single_stream_ns"] is None and report["speedup_over_single_stream"] is None
    code, report = run_json(capsys, EXAMPLES / "seed_multistream.mlir", "--timing-only")
    assert report["single_stream_deadlocks"] is False and report["single_stream_ns"] > 0


def test_warnings_before_a_failing_pass_are_kept(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # gear-multiversion warns about the dropped product gears, then coreset-lower fails on
    # a device that does not exist.  (A pipeline lacking a pass another needs is refused
    # before any pass runs: test_pass_contracts.py.)
    source = EXAMPLES / "gears.mlir"
    text = source.read_text().replace('gear.policy = "zip"', 'gear.policy = "product"')
    path = write(tmp_path, "product.mlir", text)
    spec = "gear-multiversion,stream-partition,coreset-lower{hw=nonexistent}"
    code, _, err = npuir_run(
        capsys, path, "--pipeline", spec, "--shape", "0=2x2", "--shape", "1=2x2"
    )
    assert code == 1
    assert "warning: dropping gear" in err and "error:" in err
    assert "Traceback" not in err


def test_a_module_without_functions(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, "empty.mlir", 'module attributes {npu.target = "tiny"} {\n}\n')
    code, _, err = npuir_run(capsys, path, "--timing-only")
    assert code == 1
    assert "error: the module has no function to run" in err


def test_shapes_that_do_not_type_check_are_located(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # A dynamic function without gears, given shapes whose sum does not broadcast.
    text = """func.func @f(%a: tensor<?x2xf32>, %b: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %s = npu.add %a, %b : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %s : tensor<?x2xf32>
}
"""
    path = write(tmp_path, "dyn.mlir", text)
    code, _, err = npuir_run(capsys, path, "--timing-only", "--shape", "0=2x2", "--shape", "1=3x2")
    assert code == 1
    assert f"{path}:2:3: error: the shapes given do not type-check" in err


# --------------------------------------------------------------------------
# The single-stream baseline of a lowered input
# --------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("pipeline", ["npu-default", "stream-partition{mode=auto},npu-default"])
def test_a_lowered_file_reports_its_sources_single_stream_baseline(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, pipeline: str
) -> None:
    """Running the lowered seed must measure it against the same single-stream baseline as
    running the seed itself (on main it measured the lowered schedule against itself:
    30304 ns instead of 26804 ns)."""
    import npuir

    source = EXAMPLES / "seed_multistream.mlir"
    ctx = npuir.make_context()
    module = npuir.parse_file(ctx, str(source))
    npuir.run_passes(ctx, module, npuir.build_pipeline(pipeline))
    lowered = write(tmp_path, "lowered.mlir", npuir.print_ir(module))
    _, from_source = run_json(capsys, source, "--pipeline", pipeline)
    code, from_lowered = run_json(capsys, lowered)
    assert code == 0
    assert from_lowered["single_stream_ns"] == from_source["single_stream_ns"] == 26804
    assert from_lowered["makespan_ns"] == from_source["makespan_ns"]


# --------------------------------------------------------------------------
# Profiles: --profile, --emit-profile, --fit-hw
# --------------------------------------------------------------------------


@pytest.mark.slow
def test_profile_round_trip_through_the_tool(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """--emit-profile writes the simulated ops; --profile with that file costs every op from
    it (the report says how many) and gives the same makespan."""
    out = tmp_path / "seed.csv"
    code, plain = run_json(capsys, EXAMPLES / "seed_multistream.mlir", "--emit-profile", out)
    assert code == 0 and plain["profile"] is None
    code, profiled = run_json(capsys, EXAMPLES / "seed_multistream.mlir", "--profile", out)
    assert code == 0
    assert profiled["profile"] == {"path": str(out), "rows": 4, "ops_from_profile": 4, "ops": 4}
    assert profiled["makespan_ns"] == plain["makespan_ns"]
    code, text, _ = npuir_run(capsys, EXAMPLES / "seed_multistream.mlir", "--profile", out)
    assert f"profile          4 of 4 ops costed from {out} (4 rows)" in text


def test_a_bad_profile_is_a_located_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = write(tmp_path, "bad.csv", "Op Name,OP Type,Task Type,Task Duration(us)\n")
    code, out, err = npuir_run(capsys, OVERLAP, "--profile", bad)
    assert code == 1 and out == ""
    assert err.startswith(f"{bad}:1: error: the header has no column 'Block Dim'"), err


@pytest.mark.slow
def test_fit_hw_writes_a_device_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    profile = tmp_path / "seed.csv"
    _, plain = run_json(capsys, EXAMPLES / "seed_multistream.mlir", "--emit-profile", profile)
    out = tmp_path / "fitted.toml"
    code, text, err = npuir_run(
        capsys, EXAMPLES / "seed_multistream.mlir", "--fit-hw", profile, "--fit-out", out
    )
    assert code == 0, err
    # Two op shapes cannot separate launch overhead from rate, but the fit reproduces every
    # profiled duration, so the fitted device runs the program as the profile says.
    assert text.startswith("fit over 4 profiled op(s): rms error 0.00%, max 0.00%")
    assert f"wrote {out}" in text
    code, report = run_json(capsys, EXAMPLES / "seed_multistream.mlir", "--hw", out)
    assert code == 0 and report["device"] == "fitted"
    # (up to the rounding of the fitted rates to whole FLOP/s and of durations up to ns)
    assert abs(report["makespan_ns"] - plain["makespan_ns"]) <= 4


def test_fit_hw_needs_fit_out(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = npuir_run(capsys, OVERLAP, "--fit-hw", tmp_path / "p.csv")
    assert code == 2 and "--fit-hw and --fit-out go together" in err
