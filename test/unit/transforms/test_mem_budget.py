"""`stream-partition{mode=auto mem-budget=...}` never returns a schedule whose plan exceeds the
budget, and refuses (with a kind) only budgets below what one stream needs.

Over random annotated DAGs and budgets drawn between the smallest single-stream plan and
the unconstrained auto plan: the planned pool (`mem.pool`, written by `mem-plan`) is at
most the budget, or the pass refuses with `stream.over-memory-budget`; the budget of the
unconstrained plan always fits; and every rank's collective order is kept because the
issue order is (checked by the lowered program passing `sync-verify` and `mem-verify`).
"""

from __future__ import annotations

import random
import sys
from itertools import pairwise
from pathlib import Path

import pytest
from xdsl.dialects.func import FuncOp

import npuir
from npuir.analysis.partition import STRATEGIES, Assignment, assign
from npuir.analysis.program import Program, build_program, scheduled_functions
from npuir.backends.npu.hardware import load_hardware
from npuir.diagnostics import DiagnosticError
from npuir.dialects import mem, stream
from npuir.schedule.auto import cost_strategies
from npuir.schedule.mem_budget import BudgetError, BudgetSearch, Favor, fit_budget, planned

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

import mem_mutations

HW = load_hardware("910b2")
AUTO = (
    "gear-multiversion,stream-partition{{mode=auto ignore-tags=true{extra}}},coreset-lower,"
    "insert-events,coreset-check,sync-verify,mem-plan,mem-verify"
)


def _pool(text: str, extra: str) -> int:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, text)
    npuir.run_passes(ctx, module, npuir.build_pipeline(AUTO.format(extra=extra)))
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    pool = mem.pool_size(func)
    assert pool is not None
    return pool


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_auto_never_exceeds_the_budget(seed: int) -> None:
    text = mem_mutations.random_program(100 + seed, 14)
    free = _pool(text, "")
    single = _pool(text, " max-streams=1")
    assert _pool(text, f" mem-budget={free}") <= free
    rng = random.Random(seed)
    low, high = min(free, single), max(free, single)
    for budget in {low, high, rng.randint(low // 2, high), max(0, low - 512)}:
        try:
            got = _pool(text, f" mem-budget={budget}")
        except DiagnosticError as exc:
            assert exc.diagnostic.kind == "stream.over-memory-budget"
            assert budget < high
            continue
        assert got <= budget


def _searched(text: str) -> tuple[Program, list[str | None], Assignment, int, int]:
    """`text`'s function before partitioning, auto's assignment, and the planned peaks of
    auto's schedule and of one stream."""
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, text)
    npuir.run_passes(ctx, module, npuir.build_pipeline("gear-multiversion"))
    prog = build_program(scheduled_functions(module)[0])
    none: list[str | None] = [None] * len(prog)
    strategies = {**STRATEGIES, **cost_strategies(HW, None, None)}
    auto = assign("auto", prog, none, {}, 8, strategies=strategies)
    free = planned(prog, auto).peak
    single = planned(prog, assign("single", prog, none, {}, 8)).peak
    return prog, none, auto, free, single


def _fit(
    prog: Program,
    none: list[str | None],
    auto: Assignment,
    budget: int,
    favor: Favor = Favor.MAX_CONCURRENCY,
    orderings: bool = True,
) -> BudgetSearch | None:
    try:
        return fit_budget(prog, auto, none, HW, None, budget, favor, orderings=orderings)
    except BudgetError:
        return None


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_ordering_at_the_peak_is_never_slower_than_merges_alone(seed: int) -> None:
    """Over random DAGs and budgets between one stream's plan and auto's: both searches
    stay within the budget, and ordering at the peak is at least as fast as merging only
    (it judges every candidate merging judges, and more)."""
    text = mem_mutations.random_program(200 + seed, 20)
    prog, none, auto, free, single = _searched(text)
    rng = random.Random(seed)
    for budget in {single, (single + free) // 2, rng.randint(single, max(free, single))}:
        merged = _fit(prog, none, auto, budget, orderings=False)
        ordered = _fit(prog, none, auto, budget)
        if merged is None:
            continue
        assert ordered is not None
        assert merged.best.peak <= budget and ordered.best.peak <= budget
        assert ordered.best.makespan <= merged.best.makespan
        assert {id(f) for f in ordered.pareto()} <= {id(f) for f in ordered.tried}


@pytest.mark.slow
def test_ordering_at_the_peak_is_what_the_pass_writes() -> None:
    """The orderings the search keeps are the ones the lowered program has: `mem-plan` on
    the pass's output gives exactly the peak the search judged, within the budget, and the
    pass writes one `stream.wait_tensor` per ordering; over these programs the search
    keeps an ordering at least once and is then strictly faster than merging alone."""
    used = faster = 0
    for seed in range(12):
        text = mem_mutations.random_program(300 + seed, 24)
        prog, none, auto, free, single = _searched(text)
        budget = (free + single) // 2
        found = _fit(prog, none, auto, budget)
        assert found is not None
        ctx = npuir.make_context()
        module = npuir.parse_text(ctx, text)
        written = sum(1 for op in module.walk() if isinstance(op, stream.WaitTensorOp))
        npuir.run_passes(
            ctx, module, npuir.build_pipeline(AUTO.format(extra=f" mem-budget={budget}"))
        )
        func = next(op for op in module.ops if isinstance(op, FuncOp))
        assert mem.pool_size(func) == found.best.peak <= budget
        waits = sum(1 for op in module.walk() if isinstance(op, stream.WaitTensorOp))
        assert waits == written + len(found.best.orderings)
        if found.best.orderings:
            used += 1
            merged = _fit(prog, none, auto, budget, orderings=False)
            assert merged is not None
            faster += found.best.makespan < merged.best.makespan
    assert used and faster


@pytest.mark.slow  # about 1 s a seed: four runs of auto with a memory budget
@pytest.mark.parametrize("seed", range(4))
def test_favor_trades_makespan_for_peak(seed: int) -> None:
    """`min-peak-memory` keeps a plan no larger than `max-concurrency` does, and
    `max-concurrency` a schedule no slower; each is a Pareto point of its own search."""
    text = mem_mutations.random_program(400 + seed, 20)
    prog, none, auto, free, single = _searched(text)
    budget = max(free, single)
    fast = _fit(prog, none, auto, budget)
    small = _fit(prog, none, auto, budget, Favor.MIN_PEAK_MEMORY)
    assert fast is not None and small is not None
    assert small.best.peak <= fast.best.peak <= budget
    assert fast.best.makespan <= small.best.makespan
    for found in (fast, small):
        front = found.pareto()
        assert all(a.makespan <= b.makespan and a.peak > b.peak for a, b in pairwise(front))
        for f in found.tried:
            # Nothing judged beats a Pareto point on both counts.
            assert not any(f.makespan < p.makespan and f.peak < p.peak for p in front)
        best = found.best
        assert any(p.makespan == best.makespan and p.peak == best.peak for p in front) or (
            found is small
        )
