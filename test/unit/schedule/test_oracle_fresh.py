"""`auto` against the exact optimum on graphs of the fresh seed set of `bench/run.py oracle
--first 1000` (docs/benchmarks.md): the smallest ones, and the ones auto once missed, so that
they fit the slow tier's budget; the bench command runs all 400 (sizes 4 to 8, 40 each,
without and with core limits)."""

from __future__ import annotations

import pytest
from oracle_quality import run_oracle

FIRST = 1000
"""The fresh set's first seed: `bench/run.py oracle --first 1000`."""


def _check(found: dict[str, object], count: int) -> None:
    """Each graph within 1% of the optimum, at least 95% exactly optimal (the issue's
    target), and none below it: the optimum is a real schedule's, auto can never beat it."""
    graphs = found["graphs"]
    assert isinstance(graphs, list)
    assert found["count"] == count
    assert all(g["ratio"] <= 1.01 for g in graphs), [g for g in graphs if g["ratio"] > 1.01]
    assert found["optimal"] >= 0.95 * count  # type: ignore[operator]
    assert all(g["ratio"] >= 1.0 for g in graphs)


@pytest.mark.oracle
@pytest.mark.parametrize("ops", [4, 5])
def test_auto_is_optimal_on_the_fresh_set(ops: int) -> None:
    _check(run_oracle([ops], 8, first=FIRST), 8)


@pytest.mark.oracle
@pytest.mark.parametrize(("ops", "seed"), [(6, 1015), (6, 1030), (7, 1018), (7, 1021)])
def test_auto_is_optimal_where_it_was_not(ops: int, seed: int) -> None:
    # 1015, 1030, 1018: auto was 3-4% over (another default stream *and* another move);
    # 1021: the oracle's optimum was 3.7% slower than auto (it took two ops whose records
    # the return waits on as commuting, and their order changes when the return starts).
    found = run_oracle([ops], 1, first=seed)
    assert found["graphs"][0]["seed"] == seed
    _check(found, 1)
    assert found["optimal"] == 1


@pytest.mark.oracle
def test_auto_with_limits_is_optimal_on_the_fresh_set() -> None:
    # Sizes 4 and 5 with core limits searched (aiv collectives, full_core_sync ops).
    _check(run_oracle([4, 5], 2, limits=True, first=FIRST), 4)


@pytest.mark.oracle
@pytest.mark.parametrize(("ops", "seed"), [(5, 1527), (5, 1530), (6, 1603), (6, 1632), (8, 1814)])
def test_auto_with_limits_is_optimal_where_it_was_not(ops: int, seed: int) -> None:
    # Core limits searched: 1527 and 1530 need two ops moved to one stream together,
    # 1603 and 1632 three changes at once (another default stream, a move, another issue
    # position), 1814 a walk across schedules of equal makespan: auto was 1.1-3.3% over.
    found = run_oracle([ops], 1, limits=True, first=seed - 100 * ops)
    assert found["graphs"][0]["seed"] == seed
    _check(found, 1)
    assert found["optimal"] == 1
