"""Bound 14's search: the blocks one core runs, one after another.

`npuir.schedule.bounds` (its docstring, bound 14) reduces a question about an engine's
schedules to one about a single core: which of the engine's ops run blocks on that core,
how many, and in what order.  This module answers the reduced question: the least makespan
of a *chain problem*, by best-first branch and bound.

A chain problem has ops ``0..k-1`` of one engine, each with

- a least start ``head[j]`` and a least time after its end ``tail[j]`` (the makespan is at
  least ``end + tail``);
- lags: ``lags[i][j] >= 0`` when j depends on i, and then j starts at least that long after
  i ends;
- ``runs[j]`` blocks on the core (0, 1 or 2), each of duration ``block[j]``, computing one
  after another on the core and no earlier than ``start + launch``;
- a least duration ``least[j]``: its end is at least its start plus that, and at least the
  end of its last block on the core.

A schedule of the problem is an order of the core's blocks; given the order, every start,
end and block is at its earliest (all constraints say "at least", so the earliest values
are the least ones, and so is the makespan).  The search places ops and blocks in an order
that respects the lags and takes the least makespan over all such orders.  It is exact
unless it runs out of `budget` or meets `cap`: then it returns the least bound left in its
queue, which no order beats either -- so the result is always a lower bound on the
problem's least makespan, which is all bound 14 needs.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

__all__ = ["ChainProblem", "least_makespan"]


@dataclass(frozen=True)
class ChainProblem:
    """The ops of one engine as a chain problem (module docstring), without `runs`."""

    head: list[int]
    tail: list[int]
    block: list[int]
    lags: list[list[int]]
    """``lags[i][j]``: the least time from i's end to j's start, or -1 when j does not
    depend on i."""
    launch: int
    preds: list[int] = field(init=False)
    """Per op, the ops it depends on, as a bit mask."""

    def __post_init__(self) -> None:
        preds = [0] * len(self.head)
        for i, row in enumerate(self.lags):
            for j, lag in enumerate(row):
                if lag >= 0:
                    preds[j] |= 1 << i
        object.__setattr__(self, "preds", preds)

    @property
    def size(self) -> int:
        return len(self.head)


_State = tuple[int, int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]
"""(the core's time, the makespan so far, per op its start or -1, its blocks placed, its end
or -1)."""


def least_makespan(
    problem: ChainProblem, runs: list[int], least: list[int], cap: int, budget: list[int]
) -> int:
    """A lower bound on the least makespan of `problem` with `runs` blocks per op on the
    core and `least` durations: the least makespan itself, unless the search reaches a bound
    of `cap` (then a bound at least `cap`) or spends `budget[0]` (decremented in place, one
    per op placed; then the least bound left)."""
    k = problem.size
    preds = problem.preds
    head, tail, block, lags, launch = (
        problem.head,
        problem.tail,
        problem.block,
        problem.lags,
        problem.launch,
    )

    def start_of(j: int, ends: tuple[int, ...]) -> int:
        s = head[j]
        for i in range(k):
            if lags[i][j] >= 0 and ends[i] >= 0:
                s = max(s, ends[i] + lags[i][j])
        return s

    def floor(state: _State) -> int:
        """No completion of `state` has a smaller makespan."""
        core, span, starts, placed, ends = state
        bound = span
        left = 0  # the core's blocks not placed yet
        least_tail = -1
        for j in range(k):
            if ends[j] >= 0:
                continue
            s = starts[j] if starts[j] >= 0 else start_of(j, ends)
            rest = runs[j] - placed[j]
            end = s + least[j]
            if rest:
                end = max(end, max(core, s + launch) + rest * block[j])
                left += rest * block[j]
                least_tail = tail[j] if least_tail < 0 else min(least_tail, tail[j])
            bound = max(bound, end + tail[j])
        if left:
            bound = max(bound, core + left + least_tail)
        return bound

    none = (-1,) * k
    root: _State = (0, 0, none, (0,) * k, none)
    queue: list[tuple[int, int, int, _State]] = [(floor(root), 0, 0, root)]
    seen: dict[tuple[tuple[int, ...], tuple[int, ...]], list[_State]] = {}
    pushed = 0
    while queue:
        bound, _, _, state = heapq.heappop(queue)
        core, span, starts, placed, ends = state
        if bound >= cap or budget[0] <= 0 or all(e >= 0 for e in ends):
            return bound
        done = _done(ends)
        for j in range(k):
            if ends[j] >= 0 or preds[j] & ~done:
                continue
            budget[0] -= 1
            s = starts[j] if starts[j] >= 0 else start_of(j, ends)
            new_core, new_placed, end = core, placed, -1
            if runs[j]:
                new_core = max(core, s + launch) + block[j]
                new_placed = _replaced(placed, j, placed[j] + 1)
                if new_placed[j] == runs[j]:
                    end = max(new_core, s + least[j])
            else:
                end = s + least[j]
            new_starts = _replaced(starts, j, s)
            new_ends = _replaced(ends, j, end)
            new_span = max(span, end + tail[j]) if end >= 0 else span
            child: _State = (new_core, new_span, new_starts, new_placed, new_ends)
            if _dominated(seen.setdefault((new_placed, _finished(new_ends)), []), child):
                continue
            pushed += 1
            heapq.heappush(queue, (floor(child), -sum(new_placed), pushed, child))
    raise AssertionError("a chain problem's lags form a cycle")  # pragma: no cover


def _replaced(values: tuple[int, ...], j: int, value: int) -> tuple[int, ...]:
    return (*values[:j], value, *values[j + 1 :])


def _done(ends: tuple[int, ...]) -> int:
    """The ops with an end, as a bit mask."""
    mask = 0
    for j, end in enumerate(ends):
        if end >= 0:
            mask |= 1 << j
    return mask


def _finished(ends: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if end >= 0 else 0 for end in ends)


def _dominated(states: list[_State], state: _State) -> bool:
    """Whether a state with the same blocks placed and ops ended is at least as early in
    every respect; if not, `state` is recorded."""
    core, span, starts, _, ends = state
    for other in states:
        if (
            other[0] <= core
            and other[1] <= span
            and all(a <= b for a, b in zip(other[2], starts, strict=True))
            and all(a <= b for a, b in zip(other[4], ends, strict=True))
        ):
            return True
    states.append(state)
    return False
