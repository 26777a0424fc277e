"""torch_npu's kernel_details.csv as a profile: read as the profiler writes it, it refits
the cost model.

data/kernel_details.csv is tp_decoder_prefill measured on the device data/truth_910b2.toml
describes (a 910b2 with its own launch overhead, f16 cube rate and HBM bandwidth), in every
column the profiler documents (data/make_kernel_details.py wrote it).  Fitted to it, the
model must predict the truth's makespan within 1%; costed from it directly, likewise.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from npuir.backends.npu.hardware import load_hardware
from npuir.backends.npu.profile import read_profile
from npuir.diagnostics import DiagnosticError
from npuir.driver.run import RunConfig, fit_program, run_program
from npuir.tools.run import run

DATA = Path(__file__).resolve().parent / "data"
FIXTURE = DATA / "kernel_details.csv"
TRUTH = DATA / "truth_910b2.toml"
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "tp_decoder_prefill.mlir"


def makespan(hw: str | None = None) -> int:
    outcome = run_program(RunConfig(path=str(EXAMPLE), mirror_peers=True, timing_only=True, hw=hw))
    assert outcome.result is not None
    return outcome.result.makespan_ns


@pytest.fixture(scope="module")
def truth_ns() -> int:
    return makespan(hw=str(TRUTH))


def test_the_fit_recovers_the_devices_rates_and_makespan(tmp_path: Path, truth_ns: int) -> None:
    fit, _ = fit_program(RunConfig(path=str(EXAMPLE), mirror_peers=True), str(FIXTURE))
    truth = load_hardware(str(TRUTH))
    assert fit.ops == read_profile(str(FIXTURE)).rows
    for got, want in (
        (fit.hw.launch_ns, truth.launch_ns),
        (fit.hw.cube_flops["f16"], truth.cube_flops["f16"]),
        (fit.hw.hbm_bandwidth, truth.hbm_bandwidth),
    ):
        assert abs(got - want) / want < 0.01
    hw = tmp_path / "fitted.toml"
    hw.write_text(fit.to_toml())
    assert abs(makespan(hw=str(hw)) - truth_ns) / truth_ns < 0.01
    assert abs(makespan() - truth_ns) / truth_ns > 0.05  # the preset alone is not that close


def test_costs_from_the_kernel_details_give_the_truths_makespan(truth_ns: int) -> None:
    outcome = run_program(
        RunConfig(path=str(EXAMPLE), mirror_peers=True, timing_only=True, profile=str(FIXTURE))
    )
    assert outcome.result is not None
    profile = outcome.report["profile"]
    # Every compute op but the collectives and views is costed from the file.
    assert profile["ops_from_profile"] >= read_profile(str(FIXTURE)).rows
    assert abs(outcome.result.makespan_ns - truth_ns) / truth_ns < 0.01


@pytest.mark.parametrize(
    ("edit", "where", "message"),
    [
        (("Duration(us)", "Elapsed(us)"), 1, "no column 'Task Duration(us)' or 'Duration(us)'"),
        ((",4,N/A,", ",four,N/A,"), 4, "'Block Num' is 'four'"),
    ],
)
def test_a_bad_kernel_details_is_a_located_error(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    edit: tuple[str, str],
    where: int,
    message: str,
) -> None:
    bad = tmp_path / "kernel_details.csv"
    bad.write_text(FIXTURE.read_text().replace(*edit, 1))
    with pytest.raises(DiagnosticError) as info:
        read_profile(str(bad))
    rendered = info.value.diagnostic.render()
    assert rendered.startswith(f"{bad}:{where}: error: ") and message in rendered, rendered
    code = run([str(EXAMPLE), "--mirror-peers", "--timing-only", "--profile", str(bad)])
    assert code == 1 and f"{bad}:{where}: error: " in capsys.readouterr().err


def test_a_row_of_an_unknown_accelerator_core_is_a_warning_not_a_refusal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    odd = tmp_path / "kernel_details.csv"
    odd.write_text(FIXTURE.read_text().replace(",AI_CORE,", ",GPU,", 1))
    profile = read_profile(str(odd))
    assert profile.rows == read_profile(str(FIXTURE)).rows - 1
    assert [w.kind for w in profile.warnings] == ["profile.task-type-unknown"]
    assert profile.warnings[0].render().startswith(f"{odd}:3: warning: row 'q': ")
