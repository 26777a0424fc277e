"""Bound 14's chain search: exact against every order of a small chain problem, and a
lower bound when it stops early."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from npuir.schedule.core_chain import ChainProblem, least_makespan

UNBOUNDED = 1 << 62


def _problem(seed: int, ops: int) -> tuple[ChainProblem, list[int], list[int]]:
    """A random chain problem: a DAG of `ops` ops in index order, 0-2 blocks each."""
    rng = random.Random(seed)
    launch = rng.choice([0, 3, 20])
    lags = [[-1] * ops for _ in range(ops)]
    for j in range(ops):
        for i in range(j):
            if rng.random() < 0.35:
                lags[i][j] = rng.randrange(0, 30)
    block = [rng.randrange(1, 40) for _ in range(ops)]
    head = [rng.randrange(0, 50) for _ in range(ops)]
    tail = [rng.randrange(0, 50) for _ in range(ops)]
    runs = [rng.choice([0, 1, 1, 2]) for _ in range(ops)]
    least = [launch + b * rng.choice([1, 2]) for b in block]
    return ChainProblem(head, tail, block, lags, launch), runs, least


def _brute_force(problem: ChainProblem, runs: list[int], least: list[int]) -> int:
    """The least makespan over every order of the chain's blocks (and of the ops without
    one) that puts each op after the ops it depends on, each value at its earliest."""
    k = problem.size
    items = [(j, n) for j in range(k) for n in range(max(1, runs[j]))]
    best = UNBOUNDED

    def visit(done: list[int], core: int, starts: list[int], ends: list[int], span: int) -> None:
        nonlocal best
        if all(e >= 0 for e in ends):
            best = min(best, span)
            return
        for j, n in items:
            if done[j] != n or ends[j] >= 0:
                continue
            if any(problem.lags[i][j] >= 0 and ends[i] < 0 for i in range(k)):
                continue
            s = starts[j]
            if s < 0:
                s = max(
                    [problem.head[j]]
                    + [ends[i] + problem.lags[i][j] for i in range(k) if problem.lags[i][j] >= 0]
                )
            new_core, end = core, -1
            if runs[j]:
                new_core = max(core, s + problem.launch) + problem.block[j]
                if n + 1 == runs[j]:
                    end = max(new_core, s + least[j])
            else:
                end = s + least[j]
            new_done, new_starts, new_ends = list(done), list(starts), list(ends)
            new_done[j], new_starts[j], new_ends[j] = n + 1, s, end
            new_span = max(span, end + problem.tail[j]) if end >= 0 else span
            visit(new_done, new_core, new_starts, new_ends, new_span)

    visit([0] * k, 0, [-1] * k, [-1] * k, 0)
    return best


@settings(max_examples=60, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31), ops=st.integers(1, 5))
def test_the_search_finds_the_least_makespan_over_every_order(seed: int, ops: int) -> None:
    problem, runs, least = _problem(seed, ops)
    assert least_makespan(problem, runs, least, UNBOUNDED, [10**6]) == _brute_force(
        problem, runs, least
    )


@settings(max_examples=30, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31), ops=st.integers(2, 5), budget=st.integers(0, 6))
def test_a_search_stopped_early_gives_a_lower_bound(seed: int, ops: int, budget: int) -> None:
    """Out of budget, or at a cap below the answer, the search returns the least bound left
    in its queue: never above the least makespan, and at least the cap when it stopped there."""
    problem, runs, least = _problem(seed, ops)
    exact = _brute_force(problem, runs, least)
    assert least_makespan(problem, runs, least, UNBOUNDED, [budget]) <= exact
    cap = max(1, exact // 2)
    capped = least_makespan(problem, runs, least, cap, [10**6])
    assert cap <= capped <= exact


def test_two_blocks_of_one_op_need_not_be_adjacent_on_the_chain() -> None:
    """Op 0 runs two blocks of 10 on the chain, op 1 one block of 5 released at 12; both
    have long tails.  Op 0's blocks on either side of op 1's end both ops soonest (117):
    op 1 first ends op 0 at 37 (127), op 0's blocks together end op 1 at 25 (125)."""
    problem = ChainProblem(
        head=[0, 12], tail=[90, 100], block=[10, 5], lags=[[-1, -1], [-1, -1]], launch=0
    )
    assert least_makespan(problem, [2, 1], [20, 5], UNBOUNDED, [1000]) == 117
