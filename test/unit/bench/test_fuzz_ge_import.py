"""The GE importer's fuzz harness runs, and a short run finds no traceback."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH))

import fuzz_ge_import  # noqa: E402


def test_mutated_seed_dumps_give_located_errors_or_import_never_a_traceback() -> None:
    dumps = [
        fuzz_ge_import.INPUTS / "seed_multistream.txt",
        fuzz_ge_import.INPUTS / "seed_multistream.pbtxt",
    ]
    failures: list[str] = []
    outcome = fuzz_ge_import.fuzz(dumps, cases=60, seed=7, out=failures)
    assert outcome.cases == 60 and not failures, "\n".join(failures)
    # The mutations really break dumps: most cases end in a located error.
    assert outcome.errors > outcome.cases // 2
