"""An exact schedule for small graphs: the oracle `stream-partition{mode=auto}` is tested against.

Test and research support, not part of the `npuir` package (no product module may need it):
`bench/` scripts and the tests under test/unit import it as `oracle`, with bench/ on
`sys.path` (test/unit/conftest.py puts it there).

`exact_schedule` finds the fastest of every schedule `auto` could return for a
program of a few ops under the same judge (`npuir.schedule.auto.Judge`: the
program lowered with `plan_events`' minimal events, each group's collectives
chained, simulated on one rank with mirrored peers).  A schedule is a
topological issue order (the return last, the collectives in their written
order) and a stream per op.  The space is enumerated without repeats and cut
by branch and bound:

- **Streams.** Streams carry no identity but one: label 0 is the default
  stream, where the return and its joins sit.  So a labelling is canonical:
  the other labels are numbered by first appearance in node order (a
  restricted growth string), at most `max_streams` in all, and every
  partition of the ops into streams, with every choice of which part (or
  none) is the default stream, comes exactly once.
- **Priorities.** `auto` leaves every stream at priority 0 or makes one other
  than the default one its background stream (`BACKGROUND`,
  `npuir.schedule.auto`), so every labelling is judged under each such choice
  that can change the simulation: the simulator reads a
  priority only to order the waiting core requests of one pool (lower first,
  then issue order), so two choices that order the streams of every pool
  alike -- the same levels wherever a pool's streams differ, all equal
  wherever they do not -- run alike.  And a priority orders requests only
  when some wait for cores: the ops whose requests stand at one instant
  (running or waiting) are on distinct streams (a stream runs one op at a
  time) and on no common path of the graph (a consumer waits for its
  producer's end, through a wait or its stream), so a stream's level can
  change the simulation only if it holds an op of a *crowd* -- ops of one
  pool, on no common path, on distinct streams, that together want more
  than the pool's cores -- and only those choices are judged
  (`_priority_choices`).  Streams still carry no identity beyond the
  default one and their level, so the canonical labellings stay exhaustive.
- **Orders.** The simulator reads the issue order in two places only: each
  stream runs its ops first-in first-out, and free cores of a pool go to
  waiting requests of one pool by priority, then in issue order (the events `plan_events`
  inserts follow from the per-stream sequences).  So two ops on different
  streams and different pools, neither depending on the other, *commute*:
  swapping them where they are adjacent cannot change the simulation, and the
  orders of one labelling fall into classes of orders equal up to such swaps
  (Mazurkiewicz traces).  Each class is generated once, as its
  lexicographically least order (Anisimov and Knuth): an op is appended only
  if no later-numbered op it commutes with stands after the last op it does
  not commute with.  Ops without a pool (collectives on links, ops without a
  device task) count as one more pool, and two collectives never commute,
  which can only keep more classes apart than needed.  Nor do two ops that a
  node of a third stream may wait on together (`_Search._tied`: a common user,
  or the return, which joins the last op of every stream): `plan_events` puts
  a node's waits in their producers' issue order, and each wait holds the
  stream in turn, so the order of the two can change when the node starts
  (7-op seed 1021 of `bench/run.py oracle --first 1000`: the return's waits in
  one order end 1 us later than in the other).
- **Bounds.** A class is simulated only if a lower bound on its makespan is
  below the best found so far (at first: every op on the default stream in
  written order; with a `start`, such as `auto`'s schedule, also one more than
  its makespan).  Per labelling, and again after each op placed, the placed ops
  are timed as `npuir.schedule.auto`'s makespan floor times a whole schedule
  (`_State`): each op lasts at least its shortest run
  (`npuir.schedule.bounds.shortest_runs`), a stream runs its ops one after
  another, and the waits `plan_events` would put before an op -- decided by the
  ops issued before it alone, so known once it is placed -- start no earlier
  than their records' ends and hold the stream a wait's time.  After a placed
  op come its longest path of shortest runs (an event on each edge between
  streams) and, on a stream other than the default one, the join before the
  return; a stream's unplaced ops run after its placed ones, and an unplaced op
  whose producer on another stream its stream does not know to have ended yet
  starts after a wait.  A whole schedule's floor (its records holding their
  streams too) is checked before it is simulated.  On the graphs of
  `bench/run.py oracle` the floor is the simulated makespan unless ops crowd a
  core pool, so few schedules but the optimum are simulated.  The search stops
  early when the best found meets `npuir.schedule.bounds`' bound of the whole
  program.

- **Limits.** `exact_with_limits` adds the core-limit policies of
  `npuir.schedule.limits` (its docstring states the grid) to the same search:
  a policy's plan depends on the labelling alone, so each labelling is given
  the policies whose plans are distinct and can act (`_Search._plans`) and
  every schedule is simulated without limits and under each of them.  A
  plan's bound lengthens the ops that hold cores while they wait to their
  run on the cores it leaves them (`_Search._durations`), per labelling and
  again per order, so a plan that cannot beat the best is not simulated.

A schedule with a hold-and-wait hazard is infeasible, as in `auto`
(`Judge`'s `refuse_hazards`: `stream-partition` would not keep it).

Ops that are not schedulable (`func.return`, ops outside the `npu` dialect)
stay on the default stream, as in `auto`; pinned ops are refused.  The cost
grows as (labellings x classes), about Bell(n + 1) labellings, so the solver
refuses more than `MAX_OPS` ops.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from npuir.analysis.partition import Assignment, permuted
from npuir.analysis.program import DEFAULT_STREAM, NodeKind, Program, StreamInfo
from npuir.backends.npu import timing
from npuir.backends.npu.hardware import Hardware
from npuir.backends.npu.simulator import POOL_ENGINES, NodeCosts, SimCache
from npuir.dialects.npu import CollectiveOp, NpuOp
from npuir.dialects.stream import MAIN_TAG
from npuir.schedule.auto import BACKGROUND, Judge, LimitFn
from npuir.schedule.bounds import program_bound, shortest_runs
from npuir.schedule.limits import LimitPolicy, policies

MAX_OPS = 8
"""The most schedulable ops `exact_schedule` accepts (Bell(9) = 21147 labellings)."""


@dataclass(frozen=True)
class Exact:
    """The optimum found and how much was searched."""

    makespan: int
    assignment: Assignment
    """Indexed by the nodes of the program given; `order` is the issue order (None: as written)."""
    labellings: int
    """Stream labellings met before the search stopped (most are cut by the bound)."""
    schedules: int
    """Schedules simulated."""
    start_outside: bool = False
    """Whether the `start` given beat every schedule of the space (then the space was
    searched again without it: the answer is always a schedule of the space)."""


def topological_orders(prog: Program) -> Iterator[list[int]]:
    """Every topological order of `prog`'s nodes with the return(s) last, each once."""
    n = len(prog)
    returns = [i for i in range(n) if prog.kind[i] is NodeKind.RETURN]
    body = [i for i in range(n) if prog.kind[i] is not NodeKind.RETURN]
    producers = [{p for p, _ in prog.deps[i]} for i in range(n)]
    placed: list[int] = []
    done: set[int] = set()

    def extend() -> Iterator[list[int]]:
        if len(placed) == len(body):
            yield placed + returns
            return
        for i in body:
            if i not in done and producers[i] <= done:
                placed.append(i)
                done.add(i)
                yield from extend()
                done.discard(i)
                placed.pop()

    yield from extend()


def _labellings(
    movable: Sequence[bool], fixed: Sequence[int], max_streams: int
) -> Iterator[list[int]]:
    """Canonical stream labellings of nodes in issue order (see the module docstring):
    a movable node takes 0 (the default stream), an existing label or the next new one;
    a fixed node takes its given label (which then counts as existing)."""
    n = len(movable)
    labels = [0] * n

    def extend(i: int, used: int) -> Iterator[list[int]]:
        if i == n:
            yield list(labels)
            return
        if not movable[i]:
            labels[i] = fixed[i]
            yield from extend(i + 1, max(used, fixed[i]))
            return
        top = min(used + 1, max_streams - 1)
        for label in range(top + 1):
            labels[i] = label
            yield from extend(i + 1, max(used, label))

    yield from extend(0, 0)


def _check_solvable(prog: Program) -> None:
    """Raise ValueError unless the exact solver can take `prog`: at most `MAX_OPS`
    schedulable ops, none pinned (the solver assigns every op)."""
    schedulable = sum(
        prog.kind[n] is NodeKind.COMPUTE and isinstance(prog.ops[n], NpuOp)
        for n in range(len(prog))
    )
    if schedulable > MAX_OPS:
        raise ValueError(f"{schedulable} ops: the exact solver takes at most {MAX_OPS}")
    if any(tag is not None for tag in prog.pinned):
        raise ValueError("the exact solver assigns every op: the program has pinned ops")


def exact_schedule(
    prog: Program,
    hw: Hardware,
    max_streams: int = 8,
    limits: LimitFn | None = None,
    policy: LimitPolicy | None = None,
    priorities: bool = True,
    start: Assignment | None = None,
) -> Exact:
    """The fastest schedule of `prog` over every issue order, stream assignment and
    stream priorities (see the module docstring; `priorities` False: every stream at
    priority 0).  Raises ValueError for more than `MAX_OPS`
    schedulable ops or for pinned ops (the solver assigns freely).  With `policy` every
    schedule is judged under that core-limit policy (`exact_with_limits`); the bound stays
    valid, since a limit never makes an op faster than its shortest run.

    `start` (e.g. `auto`'s schedule) only speeds the search up: judged as it is
    (`judged_makespan`), its makespan cuts every branch that cannot match it, and the
    answer is still the fastest schedule of the space (`_searched`)."""
    _check_solvable(prog)
    search = _searched(
        prog,
        hw,
        start,
        limits,
        lambda known: _Search(
            prog,
            hw,
            max(1, max_streams),
            limits,
            policy=policy,
            priorities=priorities,
            known_span=known,
        ),
    )
    assert search.best is not None
    return Exact(
        search.best_span,
        search.best,
        search.labellings,
        search.schedules,
        search.known_span is None and start is not None,
    )


def judged_makespan(
    prog: Program, assignment: Assignment, hw: Hardware, limits: LimitFn | None = None
) -> int:
    """The makespan `Judge` gives `assignment` (issued in its own order, if it has one), with
    the core limits it carries (elsewhere `limits`, by default the program's own); a schedule
    with a hold-and-wait hazard is infeasible, as in the search (`stream-partition` would not
    keep it)."""
    chosen = {prog.ops[n]: (engine, count) for n, engine, count in assignment.limits}

    def limit(p: Program, n: int, engine: str) -> int | None:
        given = chosen.get(p.ops[n])
        if given is not None and given[0] == engine:
            return given[1]
        return None if limits is None else limits(p, n, engine)

    fn = limit if chosen else limits
    if assignment.order is None:
        return Judge(prog, hw, fn, refuse_hazards=True)("judged", assignment).makespan
    order = assignment.order
    moved = Assignment(assignment.streams, [assignment.stream_of[n] for n in order])
    return Judge(permuted(prog, order), hw, fn, refuse_hazards=True)("judged", moved).makespan


def _searched(
    prog: Program,
    hw: Hardware,
    start: Assignment | None,
    limits: LimitFn | None,
    make: Callable[[int | None], _Search],
) -> _Search:
    """The search `make` builds, run with the makespan of `start` (if any) as the schedule
    to match; if no schedule of the space matches it (`start` lies outside the space: more
    streams, or a plan the grid does not hold), run again without it."""
    known = None if start is None else judged_makespan(prog, start, hw, limits)
    search = make(known)
    search.run()
    if known is not None and search.best_span > known:
        search = make(None)
        search.run()
    return search


class _Search:
    """The branch and bound of the module docstring."""

    def __init__(
        self,
        prog: Program,
        hw: Hardware,
        max_streams: int,
        limits: LimitFn | None,
        prune: bool = True,
        policy: LimitPolicy | None = None,
        tried: Sequence[LimitPolicy] = (),
        priorities: bool = True,
        known_span: int | None = None,
    ) -> None:
        self.prog = prog
        self.known_span = known_span
        """The makespan of a schedule known to be in the space (`exact_schedule`'s `start`):
        only what can match or beat it is searched."""
        self.priorities = priorities
        """Whether each labelling is judged under every priority choice that can matter
        (`_priority_choices`), else with every stream at 0."""
        self.tied: list[set[int]] = []
        """The current labelling's `_tied` nodes."""
        self.choices: list[list[int]] = [[]]
        """The current labelling's priority choices (per stream), the all-0 one first."""
        self.policy = policy
        self.tried = list(tried)
        """With limits (`exact_with_limits`): every schedule is judged under each policy of
        `tried` that gives its labelling a distinct feasible plan, after no limits."""
        self.plans: list[tuple[LimitPolicy, list[int], list[int]]] = []
        """The policies of `tried` that give the current labelling distinct plans, each with
        its ops' shortest runs under the plan and the tails those give (`_plans`)."""
        self.best_policy: LimitPolicy | None = None
        self.prune = prune
        """False: simulate every class (the tests count them)."""
        self.hw = hw
        self.max_streams = max_streams
        self.cache = SimCache(hw)
        first = Judge(prog, hw, limits, cache=self.cache, policy=policy)
        self.limits = first.limits  # the program's own limits, read once
        self.known: dict[tuple[int, str], int | None] = {}
        n = len(prog)
        self.n = n
        self.deps = [sorted({p for p, _ in d}) for d in first.chained.deps]
        self.users: list[list[int]] = [[] for _ in range(n)]
        for v in range(n):
            for p in self.deps[v]:
                self.users[p].append(v)
        self.schedulable = [
            prog.kind[v] is NodeKind.COMPUTE and isinstance(prog.ops[v], NpuOp) for v in range(n)
        ]
        self.returns = [v for v in range(n) if prog.kind[v] is NodeKind.RETURN]
        self.sink = [all(u in self.returns for u in self.users[v]) for v in range(n)]
        """Per node, whether nothing but the return uses it."""
        self.collective = [isinstance(op, CollectiveOp) for op in prog.ops]
        self.colls = [v for v in range(n) if self.collective[v]]
        costs = NodeCosts(prog, hw, limits=self.limits, cache=self.cache)
        self.pool = list(costs.pool)  # -1 (no pool) is one more pool
        self.want = list(costs.want)
        self.crowds = self._crowds(NodeCosts(prog, hw, cache=self.cache).want, hw)
        """Sets of ops of one core pool, no two on one path of the graph, that together ask
        for more cores than the pool has (each op's request without any limit, which a
        limit only lowers): only where such a set runs on distinct streams can a stream's
        priority change the simulation (`_priority_choices`)."""
        self.costs = costs
        self.node_of = {op: v for v, op in enumerate(prog.ops)}
        self.duration = shortest_runs(prog, hw)
        self.event = timing.event_cost(hw)
        self.record, self.wait = timing.record_cost(hw), timing.wait_cost(hw)
        self.floor = math.ceil(program_bound(prog, hw).ns)
        self.labellings = 0
        self.schedules = 0
        self.floored = 0
        """Whole schedules not simulated: their floor (`_State.floor`) cannot beat the best."""
        self.best: Assignment | None = None
        self.best_span = 0
        # Start from every op on the default stream, as written.
        single = [DEFAULT_STREAM] * n
        self._judge(list(range(n)), single)

    def run(self) -> None:
        """Search the labellings, those with the least bound first."""
        movable = [self.schedulable[v] for v in range(self.n)]
        fixed = [DEFAULT_STREAM] * self.n
        ranked: list[tuple[int, int, list[int], list[int]]] = []
        for k, labels in enumerate(_labellings(movable, fixed, self.max_streams)):
            tail = self._tails(labels)
            bound = self._bound(labels, tail, self._state(labels))
            ranked.append((bound, k, labels, tail))
        ranked.sort(key=lambda r: r[:2])
        for bound, _, labels, tail in ranked:
            if self.prune and (bound >= self._cut() or self.best_span <= self.floor):
                return  # the rest are bounded no lower, or nothing beats the whole bound
            if self.tried:
                self.plans = self._plans(labels)
            self.choices = self._priority_choices(labels)
            self.tied = self._tied(labels)
            self.labellings += 1
            self._orders(labels, tail, self._state(labels), [])

    def _cut(self) -> int:
        """A schedule whose bound reaches this cannot be the answer: the best found so far,
        or one more than the known schedule's makespan (a schedule that only matches it is
        still searched, so that the answer is a schedule of the search's own)."""
        if self.known_span is None:
            return self.best_span
        return min(self.best_span, self.known_span + 1)

    def _crowds(self, want: Sequence[int], hw: Hardware) -> list[list[int]]:
        """`crowds`: every set of ops of one core pool that lie on no common path of the
        (chained) graph and together want more than the pool's cores."""
        reach = [set(self.deps[v]) for v in range(self.n)]
        for v in range(self.n):  # nodes are in a topological order
            for p in list(reach[v]):
                reach[v] |= reach[p]
        crowds: list[list[int]] = []
        for pool, engine in enumerate(POOL_ENGINES):
            ops = [v for v in range(self.n) if self.pool[v] == pool]
            for size in range(2, len(ops) + 1):
                for crowd in itertools.combinations(ops, size):
                    if sum(want[v] for v in crowd) <= hw.cores(engine):
                        continue
                    if all(a not in reach[b] for a, b in itertools.combinations(crowd, 2)):
                        crowds.append(list(crowd))
        return crowds

    def _priority_choices(self, labels: list[int]) -> list[list[int]]:
        """Per stream of `labels`, a priority for each choice `auto` can make that can
        change the simulation (module docstring): every stream at 0 first, then each stream
        other than the default one at `BACKGROUND` that holds an op of a crowd (`crowds`)
        whose ops are on distinct streams.  Without `priorities`, the first only."""
        count = max(labels) + 1
        zero = [0] * count
        if not self.priorities or count < 2:
            return [zero]
        behind: set[int] = set()
        for crowd in self.crowds:
            streams = {labels[v] for v in crowd}
            if len(streams) == len(crowd):
                behind |= streams
        behind.discard(DEFAULT_STREAM)
        out = [zero]
        for background in sorted(behind):
            levels = list(zero)
            levels[background] = BACKGROUND
            out.append(levels)
        return out

    def _plans(self, labels: list[int]) -> list[tuple[LimitPolicy, list[int], list[int]]]:
        """The policies of `tried` whose plans for `labels` are feasible, limit some op below
        what it asks for, differ from each other's (the first of equal plans kept) and whose
        bound under `labels` is below the best found; each with its ops' shortest runs under
        the plan and their tails.  A count at or above an op's request is no limit: such
        plans are the same schedule."""
        seen: set[frozenset[tuple[int, str, int]]] = set()
        out: list[LimitPolicy] = []
        for policy in self.tried:
            counts = policy.limits(self.prog, labels)
            if counts is None:
                continue  # breaks the pair rule under these streams
            plan = frozenset(
                (v, policy.engine, count)
                for op, count in counts.items()
                for v in [self.node_of[op]]
                if not (self.pool[v] >= 0 and POOL_ENGINES[self.pool[v]] == policy.engine)
                or count < self.want[v]
            )
            if not plan or plan in seen:
                continue
            seen.add(plan)
            duration = self._durations(plan)
            tail = self._tails(labels, duration)
            if self._bound(labels, tail, self._state(labels, duration), duration) < self._cut():
                out.append((policy, duration, tail))
        return out

    def _durations(self, plan: frozenset[tuple[int, str, int]]) -> list[int]:
        """Per node, no run of it under `plan` is shorter: a node that holds cores while it
        waits runs exactly on the cores its limit leaves it (`NodeCosts.duration_ns`), the
        others are bounded by their shortest run whatever their cores."""
        duration = list(self.duration)
        for v, _, count in plan:
            if self.costs.holds_and_waits[v]:
                cores = min(count, self.want[v])
                duration[v] = max(duration[v], self.costs.duration_ns(v, cores))
        return duration

    def _state(self, labels: list[int], duration: list[int] | None = None) -> _State:
        """Nothing placed yet under `labels` (ops lasting `duration`, by default their
        shortest runs)."""
        duration = duration if duration is not None else self.duration
        return _State(labels, self.deps, self.prog.kind, duration, self.record, self.wait)

    def _tails(self, labels: list[int], duration: list[int] | None = None) -> list[int]:
        """Per node, what must follow its end: its longest path of shortest runs (or of
        `duration`; an event on each edge between streams) and the join before the return."""
        duration = duration if duration is not None else self.duration
        tail = [0] * self.n
        for v in range(self.n - 1, -1, -1):
            best = self.event if labels[v] != DEFAULT_STREAM and self.schedulable[v] else 0
            for u in self.users[v]:
                cross = self.event if labels[u] != labels[v] else 0
                best = max(best, cross + duration[u] + tail[u])
            tail[v] = best
        return tail

    def _open(self, labels: list[int], tail: list[int], state: _State) -> bool:
        """Whether the completions of the placed ops may beat the best found."""
        return not self.prune or self._bound(labels, tail, state) < self._cut()

    def _bound(
        self, labels: list[int], tail: list[int], state: _State, duration: list[int] | None = None
    ) -> int:
        """A lower bound on every completion of the placed ops (module docstring), the ops
        lasting at least `duration` (by default their shortest runs)."""
        duration = duration if duration is not None else self.duration
        bound = 0
        for s, left in enumerate(state.rest):
            join = self.event if s != DEFAULT_STREAM and left else 0
            bound = max(bound, state.stream_end[s] + left + join)
        if any(not state.placed[r] for r in self.returns):
            bound = max(bound, self._join(labels, state))
        for v in range(self.n):
            if state.placed[v]:
                bound = max(bound, state.end[v] + tail[v])
                continue
            # An unplaced op starts after its stream's placed ops; if its producers are
            # all placed and one on another stream is not yet known to have ended, after a
            # wait on its stream and after that producer's record and a wait.
            start = state.stream_end[labels[v]]
            if self.prog.kind[v] is not NodeKind.RETURN and all(
                state.placed[p] for p in self.deps[v]
            ):
                latest = state.uncovered(v)
                if latest >= 0:
                    start = max(start + self.wait, latest + self.event)
            bound = max(bound, start + duration[v] + tail[v])
        return bound

    def _join(self, labels: list[int], state: _State) -> int:
        """A lower bound on the return's start: after the default stream's ops, it waits in
        turn (each wait holding the stream) on the last op of every other stream that no
        node it waits on already knows to have ended -- sure for a stream whose last op is a
        sink (no user but the return: only its own stream's later ops could know it has
        ended, and there are none).  In the best order of those waits, by their records'
        ends (a stream's ops to place run first)."""
        released: list[int] = []
        for s in range(1, len(state.rest)):
            if state.rest[s]:
                if all(self.sink[v] for v in state.on_stream[s] if not state.placed[v]):
                    released.append(state.stream_end[s] + state.rest[s] + self.record)
                continue
            last = state.last_on[s]
            if last >= 0 and self.sink[last]:
                held = 0 if state.recorded[last] else self.record
                released.append(state.stream_end[s] + held)
        start = state.stream_end[DEFAULT_STREAM] + state.rest[DEFAULT_STREAM]
        for time in sorted(released):
            start = (start if start > time else time) + self.wait
        return start

    def _orders(self, labels: list[int], tail: list[int], state: _State, order: list[int]) -> None:
        """Extend `order` by every op that keeps it the least of its class."""
        if len(order) == self.n - len(self.returns):
            joins = [state.place(r) for r in self.returns]
            # The floor of the whole schedule (its records included) is known now: a
            # schedule that cannot beat the best is not simulated.
            if not self.prune or state.floor(order + self.returns) < self._cut():
                self._judge(order + self.returns, labels)
            else:
                self.floored += 1
            for r, back in zip(reversed(self.returns), reversed(joins), strict=True):
                state.unplace(r, back)
            return
        next_coll = next((c for c in self.colls if not state.placed[c]), -1)
        for v in range(self.n):
            if state.placed[v] or self.prog.kind[v] is NodeKind.RETURN:
                continue
            if any(not state.placed[p] for p in self.deps[v]):
                continue
            if self.collective[v] and v != next_coll:
                continue
            if not self._least(labels, order, v):
                continue
            saved = state.place(v)
            if self._open(labels, tail, state):
                order.append(v)
                self._orders(labels, tail, state, order)
                order.pop()
            state.unplace(v, saved)

    def _tied(self, labels: list[int]) -> list[set[int]]:
        """Per node, the nodes on other streams that some third stream's node may wait on
        together with it: the waits before a node follow their producers' issue order and
        hold its stream one after another, so issuing two such nodes the other way round
        can change the simulation.  A node may be waited on by its users on other streams
        and, off the default stream, by the return (which joins every stream's last op)."""
        waiters: list[set[int]] = [
            {u for u in self.users[v] if labels[u] != labels[v]} for v in range(self.n)
        ]
        for v in range(self.n):
            if labels[v] != DEFAULT_STREAM and self.prog.kind[v] is NodeKind.COMPUTE:
                waiters[v].update(self.returns)
        return [
            {c for c in range(self.n) if labels[c] != labels[v] and waiters[c] & waiters[v]}
            for v in range(self.n)
        ]

    def _least(self, labels: list[int], order: list[int], v: int) -> bool:
        """Whether `order` + [v] is the least order of its class, given `order` is."""
        producers = self.deps[v]
        tied = self.tied[v]
        for c in reversed(order):
            if (
                labels[c] == labels[v]
                or self.pool[c] == self.pool[v]
                or c in producers
                or c in tied
                or (self.collective[c] and self.collective[v])
            ):
                return True  # v cannot move before c, nor further
            if c > v:
                return False  # v commutes with everything from c on: v before c is less
        return True

    def _judge(self, order: list[int], labels: list[int]) -> None:
        """Simulate the schedule (with limits: under each of the labelling's plans); keep it
        if it is the fastest so far."""
        count = max(labels) + 1
        judge = Judge(
            permuted(self.prog, order),
            self.hw,
            self.limits,
            cache=self.cache,
            known_limits=self.known,
            refuse_hazards=True,
        )
        tried = [self.policy]
        if self.tried:
            # Under a plan whose bound for this order is no lower than the best, no need.
            tried = [None] + [
                policy
                for policy, duration, tail in self.plans
                if self._placed_bound(order, labels, duration, tail) < self._cut()
            ]
        for levels in self.choices if len(self.choices[0]) == count else [[0] * count]:
            streams = [
                StreamInfo(f"s{s}", MAIN_TAG if s == 0 else f"x{s}", levels[s])
                for s in range(count)
            ]
            assignment = Assignment(streams, [labels[v] for v in order])
            for policy, judged in zip(tried, judge.under_policies("exact", assignment, tried)):
                self.schedules += 1
                span = judged.makespan
                if self.best is None or span < self.best_span:
                    keep = None if order == list(range(self.n)) else list(order)
                    self.best = Assignment(streams, list(labels), keep)
                    self.best_span = span
                    self.best_policy = policy

    def _placed_bound(
        self, order: list[int], labels: list[int], duration: list[int], tail: list[int]
    ) -> int:
        """`_bound` of the whole of `order` placed, the ops lasting `duration`."""
        state = self._state(labels, duration)
        for v in order:
            state.place(v)
        return max(self._bound(labels, tail, state, duration), state.floor(order))


@dataclass
class _Saved:
    """What `_State.unplace` restores: the stream's end, clock and last compute node before
    the node was placed, and each producer it made recorded with its stream's end before."""

    end: int
    clock: list[int]
    last: int
    pushed: list[tuple[int, int]]


class _State:
    """The placed ops of one partial order, timed as `npuir.schedule.auto`'s makespan
    floor times a whole schedule: each stream runs its ops one after another, each op at
    least its shortest run, with the waits `plan_events` puts before it (found the same way,
    along the issue order: the waits before an op depend on the ops issued before it only),
    a wait starting no earlier than its record's end and holding its stream
    `timing.wait_cost`.  A record holds its producer's stream `timing.record_cost` too, but
    whether an op is recorded is known only once a later op waits on it: the partial times
    count it only where nothing after the op on its stream is placed yet (elsewhere they
    leave it out, so they stay lower bounds); `floor` of a whole order counts every one."""

    def __init__(
        self,
        labels: list[int],
        deps: list[list[int]],
        kind: list[NodeKind],
        duration: list[int],
        record: int,
        wait: int,
    ) -> None:
        n, streams = len(labels), max(labels) + 1
        self.labels, self.deps, self.kind = labels, deps, kind
        self.duration, self.record, self.wait = duration, record, wait
        self.placed = [False] * n
        self.end = [0] * n
        """Per placed node, the earliest its run can end."""
        self.stream_end = [0] * streams
        self.rest = [0] * streams
        """Per stream, the shortest runs of its ops still to place."""
        self.on_stream: list[list[int]] = [[] for _ in range(streams)]
        for v in range(n):
            self.rest[labels[v]] += duration[v]
            self.on_stream[labels[v]].append(v)
        self.clock = [[0] * streams for _ in range(streams)]
        """`plan_events`' vector clocks: per stream, how many ops of each stream it knows
        to have ended."""
        self.position = [-1] * n
        """Per placed node, its position on its stream."""
        self.after: list[list[int]] = [[] for _ in range(n)]
        """Per placed node, its stream's clock after it."""
        self.waits: list[list[int]] = [[] for _ in range(n)]
        """Per placed node, the producers whose records it waits on, in issue order."""
        self.index = [-1] * n
        """Per placed node, its place in the issue order."""
        self.count = 0
        self.last_on = [-1] * streams
        """Per stream, its last placed compute node (the return joins them)."""
        self.recorded = [False] * n
        """Per placed node, whether a record after it holds its stream in the times."""

    def place(self, v: int) -> _Saved:
        """Place `v` next (after every placed node); return what `unplace` needs."""
        labels, position, after = self.labels, self.position, self.after
        s = labels[v]
        clock = self.clock[s]
        saved = _Saved(self.stream_end[s], list(clock), self.last_on[s], [])
        producers = {p for p in self.deps[v] if labels[p] != s}
        if self.kind[v] is NodeKind.RETURN:
            producers.update(last for t, last in enumerate(self.last_on) if last >= 0 and t != s)
        # As `plan_events`: per other stream, its latest producer this stream does not
        # know to have ended, less those another chosen producer's record implies.
        latest: dict[int, int] = {}
        for p in producers:
            t = labels[p]
            if clock[t] > position[p]:
                continue
            if t not in latest or position[p] > position[latest[t]]:
                latest[t] = p
        chosen = list(latest.values())
        if len(chosen) > 1:
            chosen = [
                p
                for p in chosen
                if not any(q != p and after[q][labels[p]] > position[p] for q in chosen)
            ]
            chosen.sort(key=self.index.__getitem__)
        start = self.stream_end[s]
        for p in chosen:
            for t, known in enumerate(after[p]):
                if known > clock[t]:
                    clock[t] = known
            released = self.end[p] + self.record
            start = (start if start > released else released) + self.wait
            t = labels[p]
            if not self.recorded[p] and self.stream_end[t] == self.end[p]:
                # `p` is recorded, and nothing after it on its stream is placed yet: the
                # record holds its stream before whatever comes next there.
                saved.pushed.append((p, self.stream_end[t]))
                self.recorded[p] = True
                self.stream_end[t] = released
        position[v] = clock[s]
        clock[s] += 1
        after[v] = list(clock)
        if self.kind[v] is NodeKind.COMPUTE:
            self.last_on[s] = v
        self.waits[v] = chosen
        self.index[v] = self.count
        self.count += 1
        self.placed[v] = True
        self.end[v] = self.stream_end[s] = start + self.duration[v]
        self.rest[s] -= self.duration[v]
        return saved

    def unplace(self, v: int, saved: _Saved) -> None:
        """Undo `place(v)` (`v` the last placed)."""
        s = self.labels[v]
        self.stream_end[s], self.clock[s], self.last_on[s] = saved.end, saved.clock, saved.last
        for p, before in reversed(saved.pushed):
            self.recorded[p] = False
            self.stream_end[self.labels[p]] = before
        self.placed[v] = False
        self.end[v] = 0
        self.position[v] = self.index[v] = -1
        self.waits[v] = []
        self.count -= 1
        self.rest[s] += self.duration[v]

    def uncovered(self, v: int) -> int:
        """For an unplaced `v` whose producers are all placed: the latest end of a
        producer on another stream that `v`'s stream does not know to have ended yet, or
        -1 if there is none.  Some wait before `v` on its stream must then follow that
        producer's record (`v`'s own, or one before an earlier op of its stream, or one
        further up a chain of events)."""
        s = self.labels[v]
        clock = self.clock[s]
        latest = -1
        for p in self.deps[v]:
            t = self.labels[p]
            if t != s and clock[t] <= self.position[p]:
                latest = max(latest, self.end[p])
        return latest

    def floor(self, order: list[int]) -> int:
        """The makespan floor of `order`, every node placed in it: the partial times with
        each recorded producer's stream held by its record."""
        recorded = {p for v in order for p in self.waits[v]}
        last = [0] * len(self.stream_end)
        released = [0] * len(self.labels)
        for v in order:
            s = self.labels[v]
            t = last[s]
            for p in self.waits[v]:
                t = (t if t > released[p] else released[p]) + self.wait
            t += self.duration[v]
            if v in recorded:
                t = released[v] = t + self.record
            last[s] = t
        return max(last)


@dataclass(frozen=True)
class ExactWithLimits:
    """The optimum over streams, order and core limits, and the policy that gives it."""

    exact: Exact
    policy: LimitPolicy | None
    """None: the optimum needs no limits."""
    policies: int
    """Limit policies on the grid (besides none)."""


def exact_with_limits(
    prog: Program,
    hw: Hardware,
    max_streams: int = 8,
    limits: LimitFn | None = None,
    priorities: bool = True,
    start: Assignment | None = None,
) -> ExactWithLimits:
    """The fastest schedule of `prog` over every issue order, stream assignment, stream
    priority choice (as `exact_schedule`; `priorities` False: none) and core-limit policy
    `stream-partition{mode=auto limits=true}` may choose.

    The grid (`npuir.schedule.limits.policies`): per engine, for each of the first
    `MAX_SINGLE_HOLDERS` free ops that hold cores while they wait, and for all of them
    together, a half, a quarter or an eighth of the engine (`GRID`) on their streams and the
    rest on the other streams that hold ops the engine's limits act on (seed 003's pair rule
    kept, its kernel table deciding which ops a limit acts on).

    The grid's other stream count is `total - count` when one other stream holds such ops,
    else `min(total - count, total // 2)`; on the 910B2's 48 vector cores: 24/24, 12/36 or
    12/24, 6/42 or 6/24.

    One branch and bound for the whole grid: the canonical labellings and least orders of
    `exact_schedule` are searched once, every schedule judged without limits and then under
    each policy that gives its labelling a plan of its own (`_Search._plans`: feasible under
    the pair rule, limiting some op below what it asks for, unlike every earlier policy's
    plan, and with a bound below the best); a policy replaces the best only when strictly
    faster, so ties within a schedule go to no limits.  The bound without limits prunes
    every policy at once: it holds under any limits, since a limit never makes an op faster
    than its shortest run.  The cost is about that of `exact_schedule` times the plans per
    schedule: 7-8-op graphs in seconds to minutes (`bench/run.py oracle --limits`).
    `start` as in `exact_schedule` (judged with the limits it carries)."""
    _check_solvable(prog)
    tried = policies(prog, hw)
    search = _searched(
        prog,
        hw,
        start,
        limits,
        lambda known: _Search(
            prog,
            hw,
            max(1, max_streams),
            limits,
            tried=tried,
            priorities=priorities,
            known_span=known,
        ),
    )
    assert search.best is not None
    found = Exact(
        search.best_span,
        search.best,
        search.labellings,
        search.schedules,
        search.known_span is None and start is not None,
    )
    return ExactWithLimits(found, search.best_policy, len(tried))
