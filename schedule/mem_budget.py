"""`stream-partition{mode=auto mem-budget=...}`: the fastest schedule whose memory plan fits.

Streams buy overlap with memory: a buffer freed on one stream is reusable by
another only once an event orders them, so the more streams run at once, the
larger the plan (`npuir.analysis.memory`).  Given the assignment `auto` found,
this search judges each candidate by its planned peak (the same planners
`mem-plan` runs, on the compact lowered program `insert-events` would make) and
its simulated makespan.  Two moves lower a peak:

- **ordering at the peak** (the finer one): among the buffers live together at
  the peak (the heaviest antichain of buffers), take two, X and Y, that nothing
  orders yet and whose accesses allow it (every access of X is issued before Y
  is written), and make Y's writer wait for X's last access on each stream that
  does not already precede it; then X and Y may share space.  The pass spells
  each such ordering as a `stream.wait_tensor` on an operand of Y's writer (the
  seed's way of saying "wait for that op"; `insert-events` turns it into an
  event), choosing an operand whose later readers all run on Y's writer's
  stream, so the ordering is exactly the one judged and no other op is held up.
  The pairs tried are the largest buffers at the peak, the bytes they could
  share first; each is planned and simulated, and the one that lowers the peak
  at the least makespan per byte saved is kept, repeatedly, until the plan fits
  or no ordering lowers it any more;
- **merging two streams** (the coarse one): every merge of two of the four
  streams that hold the most bytes of the peak, the one with fewer ops into the
  other -- the op order stays, so the merged stream runs them first-in
  first-out and the buffers of the peak become ordered -- is judged, and the
  search goes on from the one whose plan is smallest, down to one stream.

From the assignment itself -- in its issue order and (when auto reordered) in
the written one, since another order can need more memory on the same streams
-- the search walks the merges as before, and from every point of that walk that
does not fit it first descends by orderings.  So every candidate the merges
alone would judge is judged too, and with `favor=max-concurrency` the result is
never slower than merges alone would give.

Neither move changes the issue order, so every rank keeps each group's
collectives in the order it had.  Pinned ops (user tags, when they are honoured)
never move: a stream holding one is only merged into, never away.
`favor=max-concurrency` keeps the fastest candidate that fits,
`favor=min-peak-memory` the smallest plan (then the fastest), and its descents
go on lowering the peak after it fits.  If none fits -- one stream included --
the error names the buffers live together at the peak.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, OpResult

from npuir.analysis.events import lowered_program
from npuir.analysis.happens_before import HappensBefore
from npuir.analysis.mem_planners import FunctionPlan, over_budget_facts, plan_program
from npuir.analysis.memory import Antichain, antichain_bound
from npuir.analysis.partition import Assignment, permuted, with_collective_chain
from npuir.analysis.program import DepKind, NodeKind, Program, waited_value
from npuir.backends.npu.hardware import Hardware
from npuir.diagnostics import Kind
from npuir.dialects import stream
from npuir.dialects.npu import CollectiveOp
from npuir.schedule.auto import Judge, LimitFn


class Favor(Enum):
    """What to keep when several candidates fit (IREE's names for the trade-off)."""

    MAX_CONCURRENCY = "max-concurrency"
    MIN_PEAK_MEMORY = "min-peak-memory"


class BudgetError(Exception):
    """No candidate fits: `kind` and `facts` (`npuir.analysis.mem_planners.over_budget_facts`
    of the last plan tried) name the buffers live together at its peak; the message is
    them rendered."""

    def __init__(self, kind: Kind, facts: dict[str, Any]) -> None:
        super().__init__(kind.render(facts))
        self.kind = kind
        self.facts = facts


class Ordering(NamedTuple):
    """Node `after` of the un-partitioned program starts only once node `before` has
    finished; the pass spells it as a `stream.wait_tensor` on `after`'s operand
    `operand` with `before`'s first result as its `dep`."""

    before: int
    after: int
    operand: int


@dataclass
class Fitted:
    """A candidate: its assignment, added orderings, planned peak and simulated makespan."""

    assignment: Assignment
    peak: int
    makespan: int
    streams: int
    orderings: tuple[Ordering, ...] = ()


@dataclass
class BudgetSearch:
    """What `fit_budget` found: the candidate kept and every candidate it judged."""

    best: Fitted
    tried: list[Fitted] = field(default_factory=list[Fitted])

    def pareto(self) -> list[Fitted]:
        """The candidates no other one beats on both makespan and peak, fastest first
        (one per point)."""
        out: list[Fitted] = []
        for f in sorted(self.tried, key=lambda f: (f.makespan, f.peak, len(f.orderings))):
            if not out or f.peak < out[-1].peak:
                out.append(f)
        return out


def with_orderings(prog: Program, orderings: Sequence[Ordering]) -> Program:
    """`prog` with each ordering added as a control dependency."""
    if not orderings:
        return prog
    deps = list(prog.deps)
    for o in orderings:
        deps[o.after] = [*deps[o.after], (o.before, DepKind.CONTROL)]
    return dataclasses.replace(prog, deps=deps)


def _in_issue_order(prog: Program, assignment: Assignment) -> tuple[Program, Assignment]:
    if assignment.order is None:
        return prog, assignment
    order = assignment.order
    return permuted(prog, order), Assignment(
        assignment.streams, [assignment.stream_of[n] for n in order]
    )


def planned(
    prog: Program, assignment: Assignment, orderings: Sequence[Ordering] = ()
) -> FunctionPlan:
    """The memory plan `mem-plan` would make for `prog` partitioned as `assignment`."""
    return _planned(prog, assignment, orderings)[0]


def _planned(
    prog: Program, assignment: Assignment, orderings: Sequence[Ordering]
) -> tuple[FunctionPlan, list[int]]:
    """The plan, and per node of its lowered program the node of `prog` (or -1)."""
    # As `auto` judges it and `stream-partition` lowers it: each group's collectives chained.
    chained = with_collective_chain(with_orderings(prog, orderings))
    ordered, local = _in_issue_order(chained, assignment)
    lowered, origin = lowered_program(ordered, local)
    if assignment.order is not None:
        order = assignment.order
        origin = [-1 if n < 0 else order[n] for n in origin]
    return plan_program(lowered, HappensBefore(lowered).run()), origin


_PAIRS_FROM = 4
"""Merges are tried between the streams holding the most bytes of the peak, this many."""

_PEAK_BUFFERS = 12
"""Orderings are tried between the largest buffers of the peak, this many."""

_ORDERINGS_TRIED = 10
"""Orderings judged per step of a descent (the pairs that could share most bytes)."""

_DESCENT_STEPS = 16
"""Steps of one descent by orderings, at most."""


def _merges(prog: Program, judged: _Judged, pinned: Sequence[str | None]) -> list[Assignment]:
    """A candidate with two of the streams heaviest at its peak merged, every such pair."""
    assignment, fp, chain = judged.fitted.assignment, judged.plan, judged.chain
    used = sorted(set(assignment.stream_of[n] for n in range(len(prog))))
    if len(used) < 2:
        return []
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


class _Writable:
    """Which orderings the pass can spell exactly, for one program."""

    def __init__(self, prog: Program) -> None:
        self.prog = prog
        self.users = prog.users()
        # A value some `stream.wait_tensor` waits after: a wait on a value that such a
        # wait's `dep` reads would order that wait's users too.
        self.waited_deps = set()
        for wait, _ in prog.wait_tensors:
            owner = waited_value(wait.dep).owner
            if isinstance(owner, Operation) and owner in prog.index:
                self.waited_deps.add(prog.index[owner])

    def operand(self, after: int, position: Sequence[int], stream_of: Sequence[int]) -> int | None:
        """An operand of node `after` to wait on: one produced by a node (not an argument
        or a constant, not a collective, not what a wait waits after) whose readers issued
        later all run on `after`'s stream, so that the seed's rule (every later use of the
        waited tensor waits too) orders nothing else; None if there is none."""
        prog = self.prog
        s = stream_of[after]
        for i, operand in enumerate(prog.ops[after].operands):
            value = waited_value(operand)
            if (
                not isinstance(operand.type, TensorType)
                or not isinstance(value, OpResult)
                or value.op not in prog.index
            ):
                continue
            p = prog.index[value.op]
            if isinstance(value.op, CollectiveOp) or p in self.waited_deps:
                continue
            if all(
                position[u] <= position[after]
                or stream_of[u] == s
                or prog.kind[u] is NodeKind.RETURN
                for u in self.users[p]
            ):
                return i
        return None

    def visible(self, before: int, after: int) -> bool:
        """Whether `before`'s result can be named at `after` once the stream scopes are
        flattened (a `coreset.limit` scope hides what it does not yield)."""
        op = self.prog.ops[before]
        if not op.results or not isinstance(op.results[0].type, TensorType):
            return False
        home = _scope(op)
        current = self.prog.ops[after].parent_op()
        while current is not None:
            if current is home:
                return True
            current = current.parent_op()
        return False


def _scope(op: Operation) -> Operation | None:
    parent = op.parent_op()
    while isinstance(parent, stream.SwitchOp):
        parent = parent.parent_op()
    return parent


def _orderings(judged: _Judged, writable: _Writable) -> list[tuple[Ordering, ...]]:
    """Orderings of two buffers live together at the peak of a candidate (see the module
    docstring), the most promising first, each as the whole tuple of orderings."""
    state, fp, origin = judged.fitted, judged.plan, judged.origin
    bufs, lt = fp.buffers, fp.lifetimes
    hb = lt.hb
    members = sorted(judged.chain.buffers, key=lambda b: (-bufs.size[b], b))[:_PEAK_BUFFERS]
    assignment = state.assignment
    n = len(writable.prog)
    if assignment.order is None:
        position = list(range(n))
    else:
        position = [0] * n
        for i, node in enumerate(assignment.order):
            position[node] = i
    # Per buffer: its last access on each stream (a node of the lowered program).
    last_on: dict[int, dict[int, int]] = {}
    for b in members:
        last: dict[int, int] = {}
        for a in (bufs.writer[b], *bufs.readers[b]):
            t = bufs.prog.stream[a]
            if last.get(t, -1) < a:
                last[t] = a
        last_on[b] = last
    have = set(state.orderings)
    scored: list[tuple[tuple[int, int, int, int], tuple[Ordering, ...]]] = []
    for x in members:
        final = max(last_on[x].values())
        for y in members:
            w = bufs.writer[y]
            if x == y or final >= w:
                continue
            after = origin[w]
            operand = writable.operand(after, position, assignment.stream_of)
            if operand is None:
                continue
            clock = hb.start_clock[w]
            added = []
            for t, a in sorted(last_on[x].items()):
                if clock[t] > hb.position[a]:
                    continue  # already before y's writer
                before = origin[a]
                if not writable.visible(before, after):
                    break
                added.append(Ordering(before, after, operand))
            else:
                if added and not have.issuperset(added):
                    shared = min(bufs.size[x], bufs.size[y])
                    key = (-shared, -(w - final), x, y)
                    scored.append((key, (*state.orderings, *added)))
    scored.sort(key=lambda s: s[0])
    out: list[tuple[Ordering, ...]] = []
    for _, orderings in scored:
        if orderings not in out:
            out.append(orderings)
        if len(out) == _ORDERINGS_TRIED:
            break
    return out


@dataclass
class _Judged:
    """A candidate with its plan, its lowered program's origins and (when asked for) its
    peak's antichain."""

    fitted: Fitted
    plan: FunctionPlan
    origin: list[int]
    _chain: Antichain | None = None

    @property
    def chain(self) -> Antichain:
        """The heaviest antichain of the plan's buffers (a maximum flow: computed once,
        only for the candidates a move starts from)."""
        if self._chain is None:
            self._chain = antichain_bound(self.plan.lifetimes)
        return self._chain


def _cheapest(
    base: _Judged, moves: Sequence[_Judged], fits: Callable[[Fitted], bool], favor: Favor
) -> _Judged | None:
    """The move to go on from: among those that lower the planned peak (else, that keep
    it but lower the bound, making room for the next ordering), the one that costs the
    least makespan per byte saved; None when there is none, or (with `max-concurrency`)
    when one of them fits already."""
    peak, bound = base.fitted.peak, base.chain.bytes
    lower = [(peak - m.fitted.peak, m) for m in moves if m.fitted.peak < peak]
    if not lower:
        lower = [
            (bound - m.chain.bytes, m)
            for m in moves
            if m.fitted.peak == peak and m.chain.bytes < bound
        ]
    if not lower or (favor is Favor.MAX_CONCURRENCY and any(fits(m.fitted) for _, m in lower)):
        return None
    span = base.fitted.makespan
    return min(lower, key=lambda s: (max(s[1].fitted.makespan - span, 0) / s[0], -s[0]))[1]


class _Search:
    """Plans and simulates candidates of one program, keeping every one it judged."""

    def __init__(
        self,
        prog: Program,
        hw: Hardware,
        limits: LimitFn | None,
        budget: int,
        favor: Favor,
        max_trials: int | None = None,
    ) -> None:
        self.prog = prog
        self.max_trials = max_trials
        self.hw = hw
        self.budget = budget
        self.favor = favor
        self.tried: list[Fitted] = []
        self.writable = _Writable(prog)
        self._first = Judge(prog, hw, limits)
        self._seen: dict[tuple[object, ...], _Judged] = {}

    def judge(self, assignment: Assignment, orderings: tuple[Ordering, ...] = ()) -> _Judged:
        key = (
            tuple(assignment.stream_of),
            None if assignment.order is None else tuple(assignment.order),
            orderings,
        )
        seen = self._seen.get(key)
        if seen is not None:
            return seen
        fp, origin = _planned(self.prog, assignment, orderings)
        ordered, local = _in_issue_order(with_orderings(self.prog, orderings), assignment)
        first = self._first
        judge = Judge(
            ordered, self.hw, first.limits, cache=first.cache, known_limits=first.known_limits
        )
        span = judge("budget", local).makespan
        streams = len(set(assignment.stream_of[: len(self.prog)]))
        fitted = Fitted(assignment, fp.peak, span, streams, orderings)
        self.tried.append(fitted)
        judged = self._seen[key] = _Judged(fitted, fp, origin)
        return judged

    def fits(self, f: Fitted) -> bool:
        return f.peak <= self.budget

    def best_fitting(self) -> Fitted | None:
        fitting = [f for f in self.tried if self.fits(f)]
        if not fitting:
            return None
        if self.favor is Favor.MIN_PEAK_MEMORY:
            return min(fitting, key=lambda f: (f.peak, f.makespan, -f.streams, len(f.orderings)))
        return min(fitting, key=lambda f: (f.makespan, f.peak, len(f.orderings)))

    def descend(self, state: _Judged) -> None:
        """Add orderings at the peak, one pair at a time, while they shrink it (see the
        module docstring); with `max-concurrency`, until the plan fits."""
        current = state
        for _ in range(_DESCENT_STEPS):
            if self.fits(current.fitted) and self.favor is Favor.MAX_CONCURRENCY:
                return
            if self.max_trials is not None and len(self.tried) >= self.max_trials:
                return
            best = self.best_fitting()
            if (
                best is not None
                and self.favor is Favor.MAX_CONCURRENCY
                and current.fitted.makespan >= best.makespan
            ):
                return  # orderings only slow it down further: a faster fit is known
            moves = [
                self.judge(current.fitted.assignment, o) for o in _orderings(current, self.writable)
            ]
            step = _cheapest(current, moves, self.fits, self.favor)
            if step is None:
                return
            current = step


def fit_budget(
    prog: Program,
    assignment: Assignment,
    pinned: Sequence[str | None],
    hw: Hardware,
    limits: LimitFn | None,
    budget: int,
    favor: Favor = Favor.MAX_CONCURRENCY,
    name: str = "the function",
    orderings: bool = True,
    max_trials: int | None = None,
) -> BudgetSearch:
    """The candidate to keep and all judged (see the module docstring); raises
    `BudgetError`.  Without `orderings`, only merges are tried; with `max_trials`, no
    descent by orderings starts a step once that many candidates have been judged (the
    merges still go down to one stream)."""
    search = _Search(prog, hw, limits, budget, favor, max_trials)
    last_plan: FunctionPlan | None = None
    starts = [assignment]
    if assignment.order is not None:
        # The written order too: another order can need more memory on the same streams.
        starts.append(Assignment(assignment.streams, assignment.stream_of, None))
    for start in starts:
        step = [start]
        while step:
            judged = [search.judge(candidate) for candidate in step]
            # Go on from the merge that shrank the plan most (the fastest among equals).
            chosen = min(judged, key=lambda j: (j.fitted.peak, j.fitted.makespan))
            last_plan = chosen.plan
            if orderings and (not search.fits(chosen.fitted) or favor is Favor.MIN_PEAK_MEMORY):
                search.descend(chosen)
            if favor is Favor.MAX_CONCURRENCY and any(search.fits(j.fitted) for j in judged):
                break
            step = _merges(prog, chosen, pinned)
    best = search.best_fitting()
    if best is None:
        assert last_plan is not None
        raise BudgetError(*over_budget_facts(name, last_plan, budget))
    kept = dataclasses.replace(best, assignment=_compact(best.assignment))
    return BudgetSearch(kept, search.tried)


def _compact(assignment: Assignment) -> Assignment:
    """`assignment` without the streams merges emptied (the default stream stays first)."""
    used = sorted({0, *assignment.stream_of})
    index = {s: i for i, s in enumerate(used)}
    return Assignment(
        [assignment.streams[s] for s in used],
        [index[s] for s in assignment.stream_of],
        assignment.order,
    )


__all__ = [
    "BudgetError",
    "BudgetSearch",
    "Favor",
    "Fitted",
    "Ordering",
    "fit_budget",
    "planned",
    "with_orderings",
]
