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
from pathlib import Path

import pytest
from xdsl.dialects.func import FuncOp

import npuir
from npuir.diagnostics import DiagnosticError
from npuir.dialects import mem

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

import mem_mutations

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
