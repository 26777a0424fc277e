"""A seeded, small run of the mode-correctness harness (`bench/check_modes.py`).

Generated valid multi-rank programs (collectives, nested scopes, waits, core and stream
limits, gears) run as written and under every stream-partition mode with `--check`:
no wrong answer, no deadlock the compiler made, no refusal of a valid program, no
traceback.  The seeds 110-177 are programs on which, before modes kept the
collectives' order, opara, nimble, minidag and auto gave wrong answers, deadlocks and
"cannot be matched" errors; a test puts that bug back and shows the harness
finds it.  The seeds of `HOLD_AND_WAIT` (at 10 ops) are programs with an aiv collective
beside vector work, which run as written and deadlocked under ge, engine, nimble, minidag,
opara or auto (the modes placed a peer's collective behind work the collective starved);
a mode now keeps such a module as written (`stream-partition`), and the last test takes
that guard out and shows the harness counts the deadlocks as faults.  Larger runs: `python bench/check_modes.py --programs 5000`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH))

import check_modes  # noqa: E402

REGRESSIONS = [110, 125, 166, 171, 177]
HOLD_AND_WAIT = [1006, 1016, 1066]


def _faults(report: check_modes.Report) -> str:
    return "\n".join(
        f"seed {f.seed} {f.mode}: {f.outcome}\n{f.detail}"
        for f in report.findings
        if f.outcome in check_modes.FAULTS
    )


@pytest.mark.slow
def test_generated_programs_give_the_same_answer_in_every_mode() -> None:
    report = check_modes.run(0, seeds=[*range(6), *REGRESSIONS], advise_every=5)
    assert report.programs == 6 + len(REGRESSIONS)
    assert report.outcomes["ok"] >= report.programs * len(check_modes.MODES) // 2
    assert report.faults == 0, _faults(report)


@pytest.mark.slow
def test_the_harness_finds_collectives_taken_out_of_order(monkeypatch: pytest.MonkeyPatch) -> None:
    import npuir.analysis.partition as partition
    import npuir.schedule.auto as auto
    import npuir.transforms.stream_partition as stream_partition

    def unchanged(prog: object, order: list[int]) -> list[int]:
        return list(order)

    monkeypatch.setattr(partition, "keep_collective_order", unchanged)
    monkeypatch.setattr(auto, "keep_collective_order", unchanged)
    monkeypatch.setattr(stream_partition, "chain_collectives", lambda func: [])
    report = check_modes.run(0, seeds=[171, 177])
    assert report.outcomes["deadlock"] + report.outcomes["wrong"] + report.outcomes["rejected"] > 0


@pytest.mark.slow
def test_no_mode_deadlocks_a_program_with_a_hold_and_wait_hazard() -> None:
    report = check_modes.run(0, seeds=HOLD_AND_WAIT, max_ops=10)
    assert report.programs == len(HOLD_AND_WAIT)
    assert report.outcomes["written-deadlock"] == 0
    assert report.faults == 0, _faults(report)


@pytest.mark.slow
def test_the_harness_counts_a_deadlock_the_written_program_risked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import npuir.transforms.stream_partition as stream_partition

    monkeypatch.setattr(stream_partition, "assignment_hazard", lambda *args: None)
    report = check_modes.run(0, seeds=[1016], max_ops=10)
    deadlocks = [f for f in report.findings if f.outcome == "deadlock"]
    assert deadlocks and report.faults >= len(deadlocks)
    assert all("hold-and-wait hazard" in f.detail for f in deadlocks)
