"""Buffer lifetimes, the antichain bound, the planners and `mem-verify`, against brute force.

The brute force is `bench/mem_mutations.py`'s oracle: happens-before by graph
search over stream order and record -> wait edges, every pair of buffers
compared.  On random annotated programs lowered by `npu-default`:

- the conflicts `Lifetimes` finds in its sweep are exactly the unordered pairs;
- the antichain bound equals a brute-force heaviest clique of the conflict graph,
  and its certificate is pairwise conflicting and weighs what it claims;
- every planner's plan is safe (the oracle and `mem-verify` agree), never below
  the bound, and `best-of` is the smallest;
- mutated plans are refused exactly when the oracle finds them unsafe (the
  5,000-case run is `python bench/mem_mutations.py`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from xdsl.dialects.func import FuncOp

from npuir.analysis.happens_before import HappensBefore
from npuir.analysis.mem_planners import Algo, parse_budget, plan, plan_program
from npuir.analysis.memory import Lifetimes, antichain_bound, find_buffers
from npuir.analysis.program import build_program, module_streams

BENCH = Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH))

import mem_mutations  # noqa: E402


def _heaviest_clique(sizes: list[int], adj: list[set[int]]) -> int:
    best = 0

    def grow(chosen: int, candidates: list[int]) -> None:
        nonlocal best
        best = max(best, chosen)
        if chosen + sum(sizes[c] for c in candidates) <= best:
            return
        for i, c in enumerate(candidates):
            grow(chosen + sizes[c], [d for d in candidates[i + 1 :] if d in adj[c]])

    grow(0, sorted(range(len(sizes)), key=lambda b: -sizes[b]))
    return best


@pytest.mark.parametrize("seed", range(12))
def test_conflicts_bound_and_plans_match_brute_force(seed: int) -> None:
    module = next(mem_mutations.lowered(seed, 16))
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    prog = build_program(func, module_streams(module))
    hb = HappensBefore(prog).run()
    bufs = find_buffers(prog)
    lt = Lifetimes(bufs, hb)
    adj = lt.conflicts()

    # Brute force: b before c iff every access of b reaches c's writer.
    nodes, succ = mem_mutations._edges(func)
    reach = {op: mem_mutations._reach(op, succ) for op in nodes}
    accesses = [
        [prog.ops[bufs.writer[b]]] + [prog.ops[r] for r in bufs.readers[b]]
        for b in range(len(bufs))
    ]

    def before(b: int, c: int) -> bool:
        w = prog.ops[bufs.writer[c]]
        return all(w in reach[a] for a in accesses[b])

    for b in range(len(bufs)):
        for c in range(len(bufs)):
            if b == c:
                continue
            conflict = not before(b, c) and not before(c, b)
            assert (c in adj[b]) == conflict, (seed, bufs.describe(b), bufs.describe(c))
            assert lt.before(b, c) == before(b, c)

    sets = [set(a) for a in adj]
    chain = antichain_bound(lt)
    assert chain.bytes == _heaviest_clique(bufs.size, sets)
    assert sum(bufs.size[b] for b in chain.buffers) == chain.bytes
    for i, b in enumerate(chain.buffers):
        for c in chain.buffers[i + 1 :]:
            assert c in sets[b]

    best = plan(bufs.size, adj, Algo.BEST_OF)
    for algo in (Algo.BY_SIZE, Algo.BY_CONFLICTS, Algo.BY_ORDER):
        one = plan(bufs.size, adj, algo)
        assert one.peak >= chain.bytes
        assert best.peak <= one.peak
        for b in range(len(bufs)):
            for c in adj[b]:
                lo_b, lo_c = one.offsets[b], one.offsets[c]
                assert lo_b + bufs.size[b] <= lo_c or lo_c + bufs.size[c] <= lo_b
    # npu-default planned it with best-of: the oracle finds the plan safe.
    assert not mem_mutations.oracle_unsafe(func)
    assert plan_program(prog, hb).peak == best.peak


@pytest.mark.slow
def test_mutated_plans_are_refused_exactly_when_unsafe() -> None:
    tally = mem_mutations.run(160, seed=7, ops=16)
    assert tally.unsafe > 40  # the mutations do damage
    assert tally.false_accepts == 0, tally.failures
    assert tally.false_refusals == 0, tally.failures


@pytest.mark.parametrize(
    ("spec", "expected"),
    [("1024", 1024), ("2KiB", 2048), ("3MiB", 3 << 20), ("1GiB", 1 << 30), ("hbm", 1000 - 24)],
)
def test_budget_spellings(spec: str, expected: int) -> None:
    assert parse_budget(spec, 1000, 24) == expected


@pytest.mark.parametrize("spec", ["", "lots", "-5", "1.5GiB"])
def test_bad_budgets_are_refused(spec: str) -> None:
    with pytest.raises(ValueError, match="memory budget"):
        parse_budget(spec, 1000, 0)
