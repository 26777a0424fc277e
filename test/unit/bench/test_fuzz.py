"""A seeded, bounded fuzz run: mutated test inputs never crash or hang the tools.

`bench/fuzz.py` mutates the repository's valid inputs (token deletion,
duplication and swaps, truncation, deep nesting, huge numbers, random bytes,
unicode) and runs each case in this process with a time limit.  Every case
must end in success or a located diagnostic.  Longer runs:
`python bench/fuzz.py --cases 10000 [--tool run]`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH))

import fuzz  # noqa: E402


def describe(report: fuzz.Report) -> str:
    return "\n".join(
        f"{result.outcome} seed {seed} {names} (replay: python bench/fuzz.py --replay {seed})\n"
        f"{result.detail}"
        for seed, names, result in report.failures
    )


@pytest.mark.slow
@pytest.mark.parametrize(("tool", "cases"), [("opt", 250), ("run", 50)])
def test_mutated_inputs_end_in_success_or_a_located_error(tool: str, cases: int) -> None:
    report = fuzz.fuzz(cases, tool, seed=0, timeout_s=20.0)
    assert not report.failures, describe(report)
    assert sum(report.counts.values()) == cases
    # The mutations must reach both sides: valid output and located errors.
    assert report.counts["ok"] > 0 and report.counts["located"] > 0


@pytest.mark.parametrize("pipeline", fuzz.OPT_PIPELINES)
def test_every_fuzzed_pipeline_lowers_the_seed_example(pipeline: str, tmp_path: Path) -> None:
    text = (BENCH.parent / "examples" / "seed_multistream.mlir").read_text()
    result = fuzz.run_case(text, "opt", 60.0, tmp_path, False, pipeline)
    assert result.outcome == "ok", result.detail
    assert "sync.wait" in (tmp_path / "out.mlir").read_text()


def test_an_exception_escaping_the_tool_counts_as_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(argv: list[str]) -> int:
        raise RuntimeError("internal")

    monkeypatch.setattr("npuir.tools.opt.run", broken)
    result = fuzz.run_case("func.func @f() {\n func.return\n}\n", "opt", 5.0, tmp_path, False)
    assert result.outcome == "traceback"
    assert "RuntimeError: internal" in result.detail


def test_a_case_past_its_time_limit_counts_as_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def spins(argv: list[str]) -> int:
        while True:
            pass

    monkeypatch.setattr("npuir.tools.opt.run", spins)
    result = fuzz.run_case("", "opt", 0.2, tmp_path, False)
    assert result.outcome == "hang"


def test_an_unlocated_error_is_a_failure() -> None:
    assert fuzz.classify(1, "error: something\n", "opt").outcome == "unlocated"
    assert fuzz.classify(1, "f.mlir:1:2: error: bad\n", "opt").outcome == "located"
    assert fuzz.classify(70, "internal error\n", "opt").outcome == "traceback"
    assert fuzz.classify(3, "", "run").outcome == "ok"
