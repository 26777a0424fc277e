"""`stream-partition{mode=auto mem-budget=...}`: the fastest schedule whose memory plan fits.

Streams buy overlap with memory: a buffer freed on one stream is reusable by
another only once an event orders them, so the more streams run at once, the
larger the plan (`npuir.analysis.memory`).  Given the assignment `auto` found,
this search judges each candidate by its planned peak (the same planners
`mem-plan` runs, on the compact lowered program `insert-events` would make) and
its simulated makespan:

1. the assignment itself, in its issue order and (when auto reordered) in the
   written one, since another order can need more memory on the same streams;
2. then, from each, repeatedly: every merge of two of the four streams that
   hold the most bytes of the peak (the heaviest antichain of buffers, i.e.
   what is live together), the one with fewer ops into the other -- the op
   order stays, so the merged stream runs them first-in first-out and the
   buffers of the peak become ordered -- is judged, and the search goes on
   from the one whose plan is smallest, down to one stream.

Merging keeps the issue order, so every rank keeps each group's collectives in
the order it had.  Pinned ops (user tags, when they are honoured) never move: a
stream holding one is only merged into, never away.  `favor=max-concurrency`
keeps the fastest candidate that fits, `favor=min-peak-memory` the smallest
plan (then the fastest).  If none fits -- one stream included -- the error names
the buffers live together at the peak.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from npuir.analysis.events import lowered_program
from npuir.analysis.happens_before import HappensBefore
from npuir.analysis.mem_planners import FunctionPlan, over_budget, plan_program
from npuir.analysis.memory import antichain_bound
from npuir.analysis.partition import Assignment, permuted
from npuir.analysis.program import Program
from npuir.hardware import Hardware
from npuir.schedule.auto import Judge, LimitFn


class Favor(Enum):
    """What to keep when several candidates fit (IREE's names for the trade-off)."""

    MAX_CONCURRENCY = "max-concurrency"
    MIN_PEAK_MEMORY = "min-peak-memory"


class BudgetError(Exception):
    """No candidate fits: the message names the buffers live together at the peak."""


@dataclass
class Fitted:
    """A candidate: its assignment, planned peak and simulated makespan."""

    assignment: Assignment
    peak: int
    makespan: int
    streams: int


def _in_issue_order(prog: Program, assignment: Assignment) -> tuple[Program, Assignment]:
    if assignment.order is None:
        return prog, assignment
    order = assignment.order
    return permuted(prog, order), Assignment(
        assignment.streams, [assignment.stream_of[n] for n in order]
    )


def planned(prog: Program, assignment: Assignment) -> FunctionPlan:
    """The memory plan `mem-plan` would make for `prog` partitioned as `assignment`."""
    ordered, local = _in_issue_order(prog, assignment)
    lowered, _ = lowered_program(ordered, local)
    return plan_program(lowered, HappensBefore(lowered).run())


_PAIRS_FROM = 4
"""Merges are tried between the streams holding the most bytes of the peak, this many."""


def _merges(
    prog: Program, assignment: Assignment, fp: FunctionPlan, pinned: Sequence[str | None]
) -> list[Assignment]:
    """`assignment` with two of the streams heaviest at the peak merged, every such pair."""
    used = sorted(set(assignment.stream_of[n] for n in range(len(prog))))
    if len(used) < 2:
        return []
    chain = antichain_bound(fp.lifetimes)
    lowered = fp.buffers.prog
    weight = {s: 0 for s in used}
    for b in chain.buffers:
        weight[lowered.stream[fp.buffers.writer[b]]] += fp.buffers.size[b]
    size = {s: 0 for s in used}
    fixed = set()
    for n, s in enumerate(assignment.stream_of):
        size[s] += 1
        if pinned[n] is not None:
            fixed.add(s)
    by_weight = sorted(used, key=lambda s: (-weight[s], -size[s], s))[:_PAIRS_FROM]
    out = []
    for i, a in enumerate(by_weight):
        for b in by_weight[i + 1 :]:
            keep, away = (a, b) if (size[a], -a) >= (size[b], -b) else (b, a)
            if away == 0 or away in fixed:
                keep, away = away, keep
            if away == 0 or away in fixed:
                continue
            stream_of = [keep if s == away else s for s in assignment.stream_of]
            out.append(Assignment(assignment.streams, stream_of, assignment.order))
    return out


def fit_budget(
    prog: Program,
    assignment: Assignment,
    pinned: Sequence[str | None],
    hw: Hardware,
    limits: LimitFn | None,
    budget: int,
    favor: Favor = Favor.MAX_CONCURRENCY,
    name: str = "the function",
) -> Fitted:
    """The candidate to keep (see the module docstring); raises `BudgetError`."""
    tried: list[Fitted] = []
    last_plan: FunctionPlan | None = None
    starts = [assignment]
    if assignment.order is not None:
        # The written order too: another order can need more memory on the same streams.
        starts.append(Assignment(assignment.streams, assignment.stream_of, None))
    for start in starts:
        ordered, _ = _in_issue_order(prog, start)
        judge = Judge(ordered, hw, limits)
        step = [start]
        while step:
            judged = []
            for candidate in step:
                fp = planned(prog, candidate)
                _, local = _in_issue_order(prog, candidate)
                span = judge("budget", local).makespan
                streams = len({candidate.stream_of[n] for n in range(len(prog))})
                fitted = Fitted(candidate, fp.peak, span, streams)
                tried.append(fitted)
                judged.append((fitted, fp))
            if favor is Favor.MAX_CONCURRENCY and any(f.peak <= budget for f, _ in judged):
                break
            # Go on from the merge that shrank the plan most (the fastest among equals).
            chosen, last_plan = min(judged, key=lambda j: (j[0].peak, j[0].makespan))
            step = _merges(prog, chosen.assignment, last_plan, pinned)
    fitting = [f for f in tried if f.peak <= budget]
    if not fitting:
        assert last_plan is not None
        raise BudgetError(over_budget(name, last_plan, budget))
    if favor is Favor.MIN_PEAK_MEMORY:
        best = min(fitting, key=lambda f: (f.peak, f.makespan, -f.streams))
    else:
        best = min(fitting, key=lambda f: (f.makespan, f.peak))
    best.assignment = _compact(best.assignment)
    return best


def _compact(assignment: Assignment) -> Assignment:
    """`assignment` without the streams merges emptied (the default stream stays first)."""
    used = sorted({0, *assignment.stream_of})
    index = {s: i for i, s in enumerate(used)}
    return Assignment(
        [assignment.streams[s] for s in used],
        [index[s] for s in assignment.stream_of],
        assignment.order,
    )


__all__ = ["BudgetError", "Favor", "Fitted", "fit_budget", "planned"]
