"""The benchmark workloads are valid programs, the examples match their generators, and the
schedule harness prints valid JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import npuir
from npuir.driver.run import EXIT_OK, RunConfig, run_program

BENCH = Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH))

import workloads  # noqa: E402

ALL: dict[str, Callable[[], str]] = {
    **{f"full/{n}": g for n, g in workloads.WORKLOADS.items()},
    **{f"quick/{n}": g for n, g in workloads.QUICK_WORKLOADS.items()},
}


@pytest.mark.parametrize("name", sorted(ALL))
def test_workload_verifies_and_lowers(name: str) -> None:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, ALL[name](), f"{name}.mlir")
    npuir.run_passes(ctx, module, npuir.build_pipeline("npu-default"))


def test_registry_names() -> None:
    expected = {
        "seed",
        "moe_decode",
        "moe_decode_aiv",
        "moe_decoder",
        "tp_decoder_decode",
        "tp_decoder_prefill",
        "multi_branch",
        "random_dag_0",
        "random_dag_1",
        "random_dag_2",
    }
    assert set(workloads.WORKLOADS) == expected
    assert set(workloads.QUICK_WORKLOADS) == expected


def test_annotations() -> None:
    annotated = {n for n, g in workloads.WORKLOADS.items() if workloads.is_annotated(g())}
    assert annotated == {
        "seed",
        "moe_decode",
        "moe_decode_aiv",
        "moe_decoder",
        "tp_decoder_decode",
        "tp_decoder_prefill",
    }


def test_random_dag_is_seeded() -> None:
    cfg = workloads.DagConfig(ops=30, rows=16, cols=32)
    a, b = workloads.random_dag(5, cfg), workloads.random_dag(5, cfg)
    assert a == b
    assert a != workloads.random_dag(6, cfg)
    assert sum(line.strip().startswith("%") and " = npu." in line for line in a.splitlines()) == 30


@pytest.mark.parametrize("name", sorted(workloads.EXAMPLES))
def test_example_matches_generator(name: str) -> None:
    filename, _ = workloads.EXAMPLES[name]
    path = workloads.EXAMPLES_DIR / filename
    assert path.read_text() == workloads.example_text(name), (
        f"examples/{filename} is stale: run `python bench/run.py examples`"
    )


@pytest.mark.parametrize("name", ["moe_decode", "tp_decoder_decode", "tp_decoder_prefill"])
def test_quick_workload_checks_numerically(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.mlir"
    path.write_text(workloads.QUICK_WORKLOADS[name]())
    # SPMD over the eight ranks of their tensor- or expert-parallel group, each real.
    outcome = run_program(RunConfig(path=str(path), ranks=8, check=True))
    assert outcome.status == EXIT_OK
    assert outcome.report["check"]["passed"]
    assert outcome.report["ranks"] == 8 and outcome.report["mirrored_peers"] is None


@pytest.mark.slow
def test_schedule_quick_json() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH / "run.py"),
            "schedule",
            "--quick",
            "--json",
            "--workloads",
            "seed",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    doc = json.loads(proc.stdout)
    seed = doc["schedule"]["workloads"]["seed"]
    assert seed["annotated"]
    assert seed["lower_bound_ns"] > 0
    single = seed["modes"]["single"]
    assert single["status"] == "ok"
    assert single["makespan_ns"] >= seed["lower_bound_ns"]
    assert single["streams"] == 1
    for result in seed["modes"].values():
        assert result["status"] in ("ok", "n/a", "error", "deadlock")
        if result["status"] == "ok":
            assert result["makespan_ns"] >= seed["lower_bound_ns"]
    assert "geomean_speedup_over_single" in doc["schedule"]["summary"]


def test_schedule_runs_spmd_workloads_on_all_their_ranks() -> None:
    """The MoE and tensor-parallel workloads' collectives span 8 ranks: the harness simulates
    all 8 and its JSON says so; a workload without collectives runs on one."""
    import schedule_quality

    hw = schedule_quality.load_hardware(schedule_quality.HW)
    for name, ranks in (("moe_decode", 8), ("tp_decoder_decode", 8), ("multi_branch", 1)):
        result = schedule_quality.run_workload(
            name, workloads.QUICK_WORKLOADS[name](), hw, ("single",)
        ).to_json()
        assert result["ranks"] == ranks, name
        assert result["modes"]["single"]["status"] == "ok"
        assert result["modes"]["single"]["ranks"] == ranks, name


def test_ges_modes_are_not_slower_than_one_stream_on_the_moe_decoder() -> None:
    """The moe_decoder workload at its real sizes, where gathering two experts' weights is a
    wide vector op: GE's automatic mode (`minidag`) and Nimble stay within 1.15x of one
    stream, as they do when an op's blocks spread onto cores that free up (an op kept to
    the cores free at its start made minidag many times slower)."""
    import schedule_quality

    hw = schedule_quality.load_hardware(schedule_quality.HW)
    modes = ("single", "nimble", "minidag")
    result = schedule_quality.run_workload(
        "moe_decoder", workloads.WORKLOADS["moe_decoder"](), hw, modes
    )
    span = {m: result.modes[m].makespan_ns for m in modes}
    assert all(s is not None for s in span.values()), span
    single = span["single"]
    assert single is not None
    for mode in ("nimble", "minidag"):
        value = span[mode]
        assert value is not None and value <= 1.15 * single, (mode, span)


def test_oracle_first_draws_another_set_of_graphs() -> None:
    """`bench/run.py oracle --first N` leaves out each size's first N seeds (with `--limits`,
    seeds `100 * ops + k`), so its graphs are others than the default set's."""
    from oracle_quality import _graphs

    from npuir.backends.npu.hardware import load_hardware

    hw = load_hardware("910b2")
    assert [seed for seed, _ in _graphs(4, 3, False, hw, first=2)] == [2, 3, 4]
    default = {seed for seed, _ in _graphs(5, 2, True, hw)}
    other = [seed for seed, prog in _graphs(5, 2, True, hw, first=50) if prog is not None]
    assert len(other) == 2 and all(seed >= 550 for seed in other)
    assert not default & set(other)
