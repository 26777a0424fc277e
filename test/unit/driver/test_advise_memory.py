"""npuir-advise's memory column and the makespan/memory Pareto points of auto's budgeted search."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from npuir.context import make_context
from npuir.driver.advise import AdviseConfig, advise
from npuir.driver.run import RunConfig, run_program

EXAMPLES = Path(__file__).parents[3] / "examples"


@pytest.mark.slow
def test_every_variant_has_its_planned_peak_and_the_front_trades_time_for_memory() -> None:
    """Each row's peak is what `npuir-run` plans for the same pipeline; the Pareto points
    get strictly smaller as they get slower, the smallest is no larger than one stream's
    plan, and the text shows the column and the points."""
    path = str(EXAMPLES / "multi_branch.mlir")
    advice = advise(AdviseConfig(path=path))
    rows = {v.name: v for v in advice.variants}
    for name in ("single stream", "auto (per op)"):
        row = rows[name]
        run = run_program(RunConfig(path=path, pipeline=row.pipeline, timing_only=True))
        assert row.peak_bytes == run.report["memory"]["peak_bytes"]
    front = advice.memory_pareto
    assert len(front) >= 2
    assert all(
        a.makespan_ns <= b.makespan_ns and a.peak_bytes > b.peak_bytes for a, b in pairwise(front)
    )
    single = rows["single stream"]
    assert single.peak_bytes is not None and front[-1].peak_bytes <= single.peak_bytes
    auto = rows["auto (per op)"]
    assert auto.peak_bytes is not None and front[0].peak_bytes <= auto.peak_bytes
    text = advice.render()
    assert "peak (MiB)" in text and "Pareto points" in text
    json_rows = advice.to_json()["variants"]
    assert all(isinstance(v["peak_bytes"], int) for v in json_rows)
    assert advice.to_json()["memory_pareto"][0]["peak_bytes"] == front[0].peak_bytes


def test_a_geared_program_has_no_single_front() -> None:
    advice = advise(AdviseConfig(path=str(EXAMPLES / "gears.mlir")))
    assert advice.memory_pareto == []
    assert all(v.peak_bytes is not None for v in advice.variants)


@pytest.mark.slow
def test_auto_row_and_front_search_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Auto's row, `--granularity op`'s advice and the memory front start from the same
    search of the same program: it runs once (`shared_searches`), and the front is the one
    a search of its own gives."""
    import npuir.schedule.auto as auto
    from npuir.driver.advise import _without_scopes
    from npuir.driver.mem_tradeoff import memory_tradeoff
    from npuir.frontends.load import load_source, read

    path = str(EXAMPLES / "multi_branch.mlir")
    searches: list[object] = []
    original = auto._search

    def counting(*args: Any, **kwargs: Any) -> Any:
        if args[-1] is None:  # no limit policy: the search every auto call starts with
            searches.append(args[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(auto, "_search", counting)
    advice = advise(AdviseConfig(path=path, granularity="op"))
    assert len(searches) == 1
    module = _without_scopes(load_source(read(path), make_context()))
    alone = memory_tradeoff(module, "multi_branch", None)
    assert len(searches) == 2
    assert advice.memory_pareto == alone
