"""The search behind `stream-partition{mode=auto}`: cost-model-driven stream assignment.

The baselines each know one thing: GE follows producers and isolates
communication, the engine split separates cube from vector work, Nimble
maximises logical concurrency with the fewest synchronisations.  None knows
what an op costs, which ops fight over the same cores, or what an event
costs.  `auto` does, because it judges every assignment with the simulator:

1. **Candidates.** Every baseline (`single`, `ge`, `engine`, `nimble`), GE's
   automatic multi-stream in its three variants (`minidag`) and Opara's
   order and streams (`opara`, judged in its own issue order), the
   user's own annotation when the function has one (even under
   `ignore-tags`, so auto is never worse than what the user wrote), and an
   engine-aware earliest-finish list schedule: ops in issue order, each put
   on the stream where it can start first, where a wait costs the event
   overheads and an op that saturates its engine cannot start before the
   previous saturating op of that engine ends (so no stream is opened just
   to queue for the same cores).
   Each is tried in two issue orders: as written, and a list-scheduling
   order (HEFT's upward rank: of the ops whose producers are issued, the one
   with the longest cost-weighted path to the end first), since a stream
   runs its ops first-in first-out and a badly placed op blocks the ops
   queued behind it.  The order stays topological, the return last.
2. **Timed candidates.** Resource-aware list schedules
   (`npuir.schedule.list_schedule`): the ops are timed on the device's core
   pools as the simulator would run them — an op started on part of its
   engine keeps that part, so a matmul does not start on the fragment
   another op leaves when waiting for the whole cube finishes it sooner —
   and streams and the issue order follow from the times (an op takes a
   stream where it is ready exactly when the plan starts it, the issue
   order is the start order).  Ops go by upward rank, with and without
   keeping a pool idle for the op the plan holds back; on small graphs also
   with the ranks jittered (up to 24 schedules, about 20k planned ops in
   all, from a fixed seed).  When a function's order is fixed, the plans go
   by written order and give streams only.
3. **Judge.** Each candidate becomes a lowered compact program — the same
   minimal events `insert-events` would insert (`plan_events`), the core
   limits `coreset-lower` would write, each group's collectives one after
   another as `stream-partition` chains them — and is simulated on the device; the
   fastest wins (ties: fewer waits, then fewer streams, then the earlier
   candidate).  No IR is rewritten until the end.
4. **Refine.** Local search from the winners of the two best issue orders,
   along each one's simulated critical path: move one op — or the chain it
   starts on its stream (the later ops there that depend on it through that
   stream) — to another stream or a new one within `max-streams`, and keep
   the move if the simulated makespan drops.  After the critical ops' own
   moves: each off-critical producer of a critical op to another stream,
   another stream made the default one (its ops need no join before the
   return), and each stream merged into another.
   On programs of up to `HAZARD_SEARCH_NODES` nodes, a schedule with a
   hold-and-wait hazard (an aiv collective or a `full_core_sync` op beside an
   op it can starve, under the limits it is judged with:
   `npuir.schedule.core_check.assignment_hazard`) is judged infeasible:
   `stream-partition` would not keep it but fall back to the written
   partition, so the search looks for the best schedule it keeps.
5. **Reorder.** Issue-position moves on the winner: an op (critical path
   first) moved anywhere between its last producer and its first user, each
   followed by a stream refinement in the new order, the pair kept if it
   lowers the key (an order can pay only once the streams follow it: on a
   generated 4-op graph the optimum needed both another default stream and
   another order; each move's refinement is capped, and the phase simulates
   about 10k ops in all).  The number of trials of steps 4 and 5 is fixed by
   the graph size (not by a clock), so results are deterministic and a 10k-op
   graph finishes in seconds.  Above about 2.5k ops the two steps share one
   budget of simulated ops (at least four whole-program simulations), so the
   search's cost stays linear in the program's size; below, each keeps its own.
   The judges of one search share their judgements, so no assignment is
   simulated twice in the same issue order.
6. **Kick.** On programs of up to `_KICK_OPS // _KICK_MIN` nodes (in the search
   without limit policies, the one every call starts with), an iterated
   local search from the winner (`_kick`): two random moves -- an op to
   another stream, an op issued elsewhere, or a **stream priority**: one
   stream other than the default one made the background stream
   (`BACKGROUND`, every other stream at 0: a pool's freed cores go to every
   other stream's waiting ops first) -- then a short refinement whose moves
   also try their target stream as the background one; kept if it lowers
   the key.  This is how `auto` chooses priorities: the simulator hands free
   cores out by stream priority before issue order, so a stream behind the
   others lets a later-issued op win a core tie that no topological order
   gives it.  `stream-partition` writes the chosen priority on the stream's
   `stream.decl` (TorchAir's `npu_stream_switch(tag, priority)`).  About
   `_KICK_OPS` simulated ops (at most `_KICK_MAX` trials) from a fixed seed.

Ops inside a `coreset.limit` scope keep the written order: then every
candidate is issued as written.  Pinned ops stay on their tag's stream in
every candidate and move.

Since every other mode is a candidate and the judge is the same simulator the
benchmarks use, `auto` is never slower than any of them on the program it is
given (the benchmark gate checks this on every workload).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import random
import weakref
from array import array
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from npuir.analysis.core_limits import CoreLimits, engines_used, limit_fn
from npuir.analysis.events import EventPlan, lowered_program, plan_events, with_assignment
from npuir.analysis.partition import (
    Assignment,
    Mode,
    Request,
    Strategy,
    assign,
    keep_collective_order,
    nearest_topological,
    permuted,
    with_collective_chain,
)
from npuir.analysis.program import DEFAULT_STREAM, NodeKind, Program, StreamInfo
from npuir.backends.npu import timing
from npuir.backends.npu.hardware import Hardware
from npuir.backends.npu.profile import Profile
from npuir.backends.npu.simulator import (
    POOL_ENGINES,
    NodeCosts,
    Prepared,
    SimCache,
    Span,
    coreset_limit,
    refuse_unlowered_scopes,
    span_task,
)
from npuir.dialects.npu import CollectiveOp, NpuOp
from npuir.dialects.stream import MAIN_TAG
from npuir.executor import Task, current
from npuir.executor import best as least
from npuir.progress import progress
from npuir.schedule.bounds import program_bound
from npuir.schedule.core_check import CoreChecker, OpTraits, has_holder
from npuir.schedule.limits import LimitPolicy, LimitSpace, policies
from npuir.schedule.list_schedule import fresh_tag, list_schedule, upward_ranks
from npuir.schedule.minidag import Variant, assign_minidag, assign_opara, solo_durations
from npuir.schedule.pair_rule import as_lowered, keeping_pair_rule

BASELINES = (Mode.SINGLE, Mode.GE, Mode.ENGINE, Mode.NIMBLE)
"""The cost-free modes auto starts from."""

INFEASIBLE = 1 << 62
"""The makespan of a schedule that deadlocks or whose limits break seed 003's pair rule."""

HAZARD_SEARCH_NODES = 100
"""Programs of at most this many nodes are searched for hazard-free schedules only: the
check costs a happens-before relation a trial, which made auto with limits 5x slower on a
200-op program with aiv collectives (8.5 -> 43 CPU-s); above it, a hazardous result is
left to `stream-partition`'s fallback to the written partition, as before."""

LimitFn = Callable[[Program, int, str], int | None]
"""Core limit of a node of the *un-partitioned* program (None: unlimited)."""

Key = tuple[str, int]
"""A candidate's task key: (gear, its position among the candidates judged together)."""

Memos = dict[bytes, dict[bytes, "Judged"]]
"""Judgements shared by the judges of one search (one policy): digest of a judge's issue
order (its program's ops) -> digest of an assignment (`_digest`) -> its judgement."""

# Trials of the local search: about this many simulated ops in total, so the
# search costs the same few seconds whatever the graph size (bounded below and
# above for tiny and huge graphs).
_SEARCH_OPS = 150_000
_MIN_TRIALS, _MAX_TRIALS = 4, 400
# The winners of this many issue orders are refined, sharing the trials.
_REFINED = 2
# Issue-position moves: about this many simulated ops in all (at most the refinement's
# trials), and each move's stream refinement at most this share of them.
_REORDER_OPS, _REORDER_REFINE = 10_000, 16
# Both phases together: at most about this many simulated ops (and at least _MIN_SIMS
# whole simulations).  Small programs never reach it (their trials are the phases' own);
# on large ones the per-phase floors above would each simulate the whole program a
# fixed number of times, so the phases share this instead (`_phase_trials`).
_PHASE_OPS, _MIN_SIMS = _SEARCH_OPS + _REORDER_OPS, 4
# List schedules with jittered priorities: at most this many, and about this many
# planned ops in all, so that only small graphs get them; ranks move by up to
# +-_JITTER of themselves, from a fixed seed (results stay deterministic).
_JITTERED, _JITTER_OPS, _JITTER, _JITTER_SEED = 24, 20_000, 0.3, 1
# Kicks (`_kick`): about this many simulated ops in all and at most this many trials
# (none below _KICK_MIN: a program too big for them is not kicked); each kick makes
# _KICK_MOVES random moves, then refines with at most _KICK_REFINE trials; a fixed seed.
_KICK_OPS, _KICK_MAX, _KICK_MIN = 40_000, 1500, 100
_KICK_MOVES, _KICK_REFINE, _KICK_SEED = 2, 20, 2
# The polish after the kicks, without limits (`_settle`): at most this many simulated ops.
_SETTLE_OPS = 20_000


@dataclass
class Judged:
    """A candidate and what the simulator said of it."""

    name: str
    assignment: Assignment
    makespan: int
    waits: int
    critical: list[int]
    """The program's compute nodes on the simulated critical path, in order.  (Only this
    is kept of the simulation: a search holds many candidates, and a whole `SimResult`
    keeps its run's arrays and lowered program alive.)"""

    def key(self) -> tuple[int, int, int]:
        return (self.makespan, self.waits, len(self.assignment.streams))


def _written_limits(prog: Program, hw: Hardware) -> LimitFn | None:
    """The core limits `prog`'s module writes (scopes, stream limits, the module's global),
    as `coreset-lower` would resolve them; None for a program without ops."""
    if not prog.ops:
        return None
    module = prog.ops[0].get_toplevel_object()
    if not isinstance(module, ModuleOp):
        return None
    return limit_fn(CoreLimits(module, hw).run())


class Judge:
    """Simulates assignments of one program on one device, sharing the IR reads."""

    def __init__(
        self,
        prog: Program,
        hw: Hardware,
        limits: LimitFn | None,
        profile: Profile | None = None,
        cache: SimCache | None = None,
        known_limits: dict[tuple[int, str], int | None] | None = None,
        policy: LimitPolicy | None = None,
        memos: Memos | None = None,
        refuse_hazards: bool = False,
    ) -> None:
        self.prog = prog
        self.refuse_hazards = (
            refuse_hazards and len(prog) <= HAZARD_SEARCH_NODES and has_holder(prog)
        )
        """Whether a schedule with a hold-and-wait hazard (`assignment_hazard`, under the
        limits it is simulated with) is judged `INFEASIBLE`: `stream-partition` would not
        keep it, but fall back to the written partition.  Only up to
        `HAZARD_SEARCH_NODES` nodes (the check costs a happens-before relation a trial)."""
        self.refuse_pair_rule = refuse_hazards and keeping_pair_rule()
        """Whether a schedule that breaks seed 003's pair rule is judged `INFEASIBLE`: when
        `stream-partition` asks (`npuir.schedule.pair_rule.keep_pair_rule_in_search`: the
        written program keeps the rule), it would undo such a schedule's moves after the
        search; refused here, the search finds the best schedule that keeps it instead."""
        self.chained = with_collective_chain(prog)
        """`prog` as it is lowered and judged: each group's collectives one after another
        (`stream-partition` chains them in every mode that places ops)."""
        self.policy = policy
        """Core limits chosen with the streams (`npuir.schedule.limits`): each assignment is
        judged with the limits the policy gives it, or refused when they break the pair rule."""
        self.known_limits = known_limits if known_limits is not None else {}
        """(id of an op, engine) -> its core limit, shared by the judges of one search
        (the ops outlive it)."""
        self.judged: dict[bytes, Judged] = (
            {} if memos is None else memos.setdefault(_order_digest(prog), {})
        )
        """Digest of an assignment -> its judgement; with `memos`, shared with every judge
        of the same issue order (the search's judges apply one policy and one set of
        limits and refuse the same hazards, so an assignment judged in one is judged in all: a reordering that comes
        back to an order, or starts from the refinement's winner, simulates nothing new)."""
        self.hw = hw
        self.profile = profile
        self.cache = cache if cache is not None else SimCache(hw)
        # No limits given: the program's own (its scopes and stream limits), never none.
        self.limits = limits if limits is not None else _written_limits(prog, hw)
        self._written: dict[str, list[object]] = {}
        """Per engine, each node's written limit once read (`_written_limit`)."""
        self._floors: list[int] | None = None
        """Per node, its least run time (`_floor_costs`), once computed."""
        self._floorable = True
        self._prepared: tuple[Prepared, dict[Operation, int]] | None = None
        """The simulator's inputs for `chained` and its op index (`_inputs`), once read."""
        self._scopes_refused = False
        self.trials = 0

    def __call__(self, name: str, assignment: Assignment) -> Judged:
        judged = self._judge(name, assignment, None)
        assert judged is not None
        return judged

    def within(self, name: str, assignment: Assignment, most: int) -> Judged | None:
        """`assignment` judged, or None when its makespan is sure to exceed `most` (its
        `_makespan_floor` does) -- then it is not simulated: a search that keeps only a
        candidate that beats one of makespan `most` takes the same steps without it.  It
        counts as a trial either way."""
        return self._judge(name, assignment, most)

    def _judge(self, name: str, assignment: Assignment, beat: int | None) -> Judged | None:
        self.trials += 1
        progress.advance()
        # Candidates often coincide (GE, Nimble and the minidag variants on a graph with
        # one kind of branch; a move that undoes an earlier one): simulate each once.
        # It still counts as a trial, so the search takes the same steps.
        digest = _digest(assignment)
        seen = self.judged.get(digest)
        if seen is not None:
            return Judged(name, assignment, seen.makespan, seen.waits, seen.critical)
        lowering = None
        floors = self._floor_costs() if beat is not None and self.policy is None else None
        if floors is not None and beat is not None:
            assigned = with_assignment(self.chained, assignment)
            plan = plan_events(assigned, assign_ids=False)
            if _makespan_floor(assigned, plan, floors, self.hw) > beat:
                return None  # not kept: a caller without a bound still simulates it
            lowering = lowered_program(self.chained, assignment, plan)
        judged = self._simulate(name, assignment, self.policy, lowering)
        self.judged[digest] = judged
        return judged

    def _inputs(self) -> tuple[Prepared, dict[Operation, int]]:
        """The simulator's inputs for the chained program under its written limits, read
        once per judge (every schedule judged is a `Prepared.view` of them), and each
        op's node there."""
        if self._prepared is None:
            prog = self.chained
            limit_fn: LimitFn = coreset_limit
            if self.limits is not None:
                written = self._written_limit

                def limit_fn(_p: Program, n: int, engine: str) -> int | None:
                    return written(n, engine)

            base = Prepared.unscheduled(prog, self.hw, limit_fn, self.cache, self.profile)
            self._prepared = (base, prog.index)
        return self._prepared

    def _floor_costs(self) -> list[int] | None:
        """Per node of the chained program, the least time it can run in the simulator
        (`_makespan_floor`) under the limits it is simulated with when no policy chooses
        any; None when the program has `sync` nodes of its own (their events bind by id,
        which the floor does not follow)."""
        if self._floors is None and self._floorable:
            prog = self.chained
            if any(k is NodeKind.RECORD or k is NodeKind.WAIT for k in prog.kind):
                self._floorable = False
                return None
            written = self._written_limit
            costs = NodeCosts(
                prog,
                self.hw,
                limits=(lambda _p, n, engine: written(n, engine))
                if self.limits is not None
                else None,
                cache=self.cache,
                profile=self.profile,
            )
            self._floors = [costs.duration_ns(n, costs.want[n]) for n in range(len(prog))]
        return self._floors

    def _written_limit(self, node: int, engine: str) -> int | None:
        """The core limit the program writes for `node` on `engine` (None: unlimited).  A
        node's written limit depends on its op alone, whatever the assignment: it is read
        once per judge and engine (and once per op for judges sharing `known_limits`)."""
        table = self._written.get(engine)
        if table is None:
            table = self._written[engine] = [_UNREAD] * len(self.prog)
        limit = table[node]
        if limit is _UNREAD:
            if self.limits is None:
                limit = None
            else:
                key = (id(self.prog.ops[node]), engine)
                limit = self.known_limits.get(key, _UNREAD)
                if limit is _UNREAD:
                    limit = self.known_limits[key] = self.limits(self.prog, node, engine)
            table[node] = limit
        return limit  # type: ignore[return-value]

    def under_policies(
        self, name: str, assignment: Assignment, tried: Sequence[LimitPolicy | None]
    ) -> list[Judged]:
        """`assignment` judged under each of `tried` (None: no chosen limits) instead of this
        judge's policy, lowered once for all (the oracle's many policies per schedule).  Not
        cached: a judgement depends on the policy."""
        lowering = lowered_program(self.chained, assignment)
        out: list[Judged] = []
        for policy in tried:
            self.trials += 1
            out.append(self._simulate(name, assignment, policy, lowering))
        return out

    def _simulate(
        self,
        name: str,
        assignment: Assignment,
        policy: LimitPolicy | None = None,
        lowering: tuple[Program, list[int]] | None = None,
    ) -> Judged:
        """`assignment` simulated under `policy` (given with `lowering`, its lowered program:
        see `under_policies`; else this judge's own)."""
        ready = self._ready(name, assignment, policy, lowering)
        if isinstance(ready, Judged):
            return ready
        view, origin = ready
        span = span_task(self.hw, list(self.cache.works), view)
        return self._finish(name, assignment, view, origin, span)

    def _ready(
        self,
        name: str,
        assignment: Assignment,
        policy: LimitPolicy | None = None,
        lowering: tuple[Program, list[int]] | None = None,
    ) -> Judged | tuple[Prepared, list[int]]:
        """What simulating `assignment` takes: its lowered program's inputs and origin
        map, or its judgement when it needs no simulation (infeasible)."""
        if lowering is None:
            policy = self.policy
        chosen: dict[Operation, int] = {}
        if policy is not None:
            planned = policy.limits(self.prog, assignment.stream_of)
            if planned is None:
                return Judged(name, assignment, INFEASIBLE, 0, [])
            chosen = planned
        lowered, origin = lowering or lowered_program(self.chained, assignment)
        limit_fn: LimitFn | None = None
        if self.limits is not None or chosen:
            written = self._written_limit
            if not chosen:

                def limit_fn(p: Program, n: int, engine: str) -> int | None:
                    return written(origin[n], engine)

            else:
                ops = self.prog.ops
                policy_engine = policy.engine if policy is not None else None

                def limit_fn(p: Program, n: int, engine: str) -> int | None:
                    node = origin[n]
                    if engine == policy_engine and ops[node] in chosen:
                        return chosen[ops[node]]
                    return written(node, engine)

        if self.refuse_hazards and _has_hazard(
            lowered, origin, limit_fn, self.hw, _traits(self.cache)
        ):
            return Judged(name, assignment, INFEASIBLE, 0, [])
        if self.refuse_pair_rule and _breaks_pair_rule(
            lowered, origin, limit_fn, self.hw, _traits(self.cache)
        ):
            return Judged(name, assignment, INFEASIBLE, 0, [])
        if limit_fn is None and not self._scopes_refused:
            # As `simulate` does before reading `coreset.cores` (the lowered program has
            # the chained program's ops).
            refuse_unlowered_scopes(self.chained)
            self._scopes_refused = True
        # The op's work was read once (`_inputs`); a policy's chosen limits read again the
        # nodes they change.
        base, index = self._inputs()
        redo: Iterable[int] = ()
        if chosen:
            # Without written limits the inputs were read with the ops' `coreset.cores`,
            # which a limit function does not read: read every node again then.
            redo = (
                range(len(base.kind))
                if self.limits is None
                else (index[op] for op in chosen if op in index)
            )
        return base.view(lowered, origin, limit_fn or coreset_limit, redo), origin

    @staticmethod
    def _finish(
        name: str, assignment: Assignment, view: Prepared, origin: list[int], result: Span
    ) -> Judged:
        """The judgement of `assignment` from its simulation (of `view`, one rank: an SPMD
        program's peers run the same schedule)."""
        waits = view.kind.count(_WAIT)
        span = INFEASIBLE if result.deadlocked else result.makespan_ns
        critical = [origin[n] for r, n in result.critical_path if r == 0 and origin[n] >= 0]
        return Judged(name, assignment, span, waits, critical)

    def gear(self) -> str:
        """The name of the function judged (a gear version or a rank's function)."""
        return self.prog.func.sym_name.data


def judge_batch(judge: Judge, named: Sequence[tuple[str, Assignment]]) -> dict[Key, Judged]:
    """Each of `named` judged by `judge`, as calling it on each in turn would (the same
    trials and judgements, the same memo), keyed (gear, position in `named`); the
    simulations run as one batch on the current executor (`npuir.executor.current`).
    Pick among them with `npuir.executor.best` by `Judged.key`: by (cost, key), so ties go
    to the earlier candidate, whatever order the tasks finished in."""
    gear = judge.gear()
    out: dict[Key, Judged | bytes] = {}
    pending: dict[bytes, tuple[str, Assignment, Prepared, list[int]]] = {}
    to_simulate: list[Key] = []
    for i, (name, assignment) in enumerate(named):
        judge.trials += 1
        progress.advance()
        digest = _digest(assignment)
        seen = judge.judged.get(digest)
        key = (gear, i)
        if seen is not None:
            out[key] = Judged(name, assignment, seen.makespan, seen.waits, seen.critical)
        elif digest in pending:
            out[key] = digest  # the same schedule as an earlier candidate: judged once
        else:
            ready = judge._ready(name, assignment)
            if isinstance(ready, Judged):
                judge.judged[digest] = out[key] = ready
                continue
            view, origin = ready
            pending[digest] = (name, assignment, view, origin)
            out[key] = digest
            to_simulate.append(key)
    # The work table as the views left it (reading ops may have added to it).
    works = list(judge.cache.works)
    tasks: dict[Key, Task[Span]] = {
        key: (span_task, (judge.hw, works, view))
        for key, (_, _, view, _) in zip(to_simulate, pending.values(), strict=True)
    }
    spans = iter(current().run(tasks).values()) if tasks else iter(())
    for digest, (name, assignment, view, origin) in pending.items():
        judge.judged[digest] = judge._finish(name, assignment, view, origin, next(spans))
    final: dict[Key, Judged] = {}
    for key, value in out.items():
        if isinstance(value, bytes):
            seen = judge.judged[value]
            name, assignment = named[key[1]]
            value = Judged(name, assignment, seen.makespan, seen.waits, seen.critical)
        final[key] = value
    return final


def _makespan_floor(assigned: Program, plan: EventPlan, floors: list[int], hw: Hardware) -> int:
    """A lower bound on the makespan `simulate_span` gives `assigned` lowered with
    `plan` (its records and waits), each node running at least `floors[n]` (per node of
    the unlowered program: its run time with every core it asks for).

    The longest path along each stream and from each record to its waits, every node
    at its least duration.  Sound because in the simulator (i) a stream issues a node
    only once the node before it has ended, (ii) a wait starts no earlier than its
    record ends (`timing.wait_end`, `timing.record_end`), and (iii) a node runs no shorter than its floor: an ordinary op its
    launch, then its blocks, at most `want` at a time and each `block_ns` long, so
    that its last block starts no earlier than ``(ceil(blocks / want) - 1)`` block
    durations after the launch (at any instant before ``m`` block durations, at most
    ``m * want`` blocks have started); a hold-and-wait op, a collective, a record, a
    wait and the return run their fixed time once they start.  The makespan is the
    latest end, so it is at least the latest floor end.  (Data dependencies add no
    edge: the simulator does not wait on them, the events order them.)"""
    waits_before = plan.waits_before
    recorded = set(plan.recorded)
    last = [0] * len(assigned.streams)
    record_end: dict[int, int] = {}
    for n, s in enumerate(assigned.stream):
        t = last[s]
        for p in waits_before.get(n, ()):
            t = timing.wait_end(hw, t, record_end[p])
        t += floors[n]
        if n in recorded:
            t = record_end[n] = timing.record_end(hw, t)
        last[s] = t
    return max(last, default=0)


_UNREAD = object()
"""A written limit not read yet (None is a limit: unlimited)."""

_WAIT = int(NodeKind.WAIT)


def _order_digest(prog: Program) -> bytes:
    """A digest of `prog`'s issue order: its ops, by identity (they outlive the search)."""
    return hashlib.blake2b(array("q", map(id, prog.ops)).tobytes(), digest_size=20).digest()


@dataclass(frozen=True)
class _SimulatedLimits:
    """The core counts a judge simulates a lowered program with, as `CoreChecker` reads
    them (`Limits`): per op, its limit on each engine it uses, else the device's."""

    node_of: dict[Operation, int]
    limit_fn: LimitFn | None
    prog: Program
    hw: Hardware

    def of(self, op: NpuOp) -> dict[str, int]:
        n = self.node_of[op]
        out: dict[str, int] = {}
        for engine in engines_used(op):
            given = self.limit_fn(self.prog, n, engine) if self.limit_fn is not None else None
            out[engine] = self.hw.cores(engine) if given is None else given
        return out

    def configured(self, op: NpuOp, engine: str) -> bool:
        fn = self.limit_fn
        return fn is not None and fn(self.prog, self.node_of[op], engine) is not None


def _breaks_pair_rule(
    lowered: Program,
    origin: Sequence[int],
    limit_fn: LimitFn | None,
    hw: Hardware,
    traits: dict[Operation, OpTraits] | None = None,
) -> bool:
    """Whether the lowered program breaks seed 003's pair rule (`CoreChecker.pair_violations`,
    `coreset-check`'s error) under the limits it is simulated with, read as `coreset-check`
    reads them after `coreset-lower` (a count equal to the device's is no limit)."""
    node_of = {
        lowered.ops[n]: n
        for n in range(len(lowered))
        if lowered.kind[n] is NodeKind.COMPUTE and origin[n] >= 0
    }
    counts = as_lowered(_SimulatedLimits(node_of, limit_fn, lowered, hw), hw)
    return bool(CoreChecker(lowered, counts, hw, traits=traits).pair_violations())


_TRAITS: weakref.WeakKeyDictionary[SimCache, dict[Operation, OpTraits]] = (
    weakref.WeakKeyDictionary()
)


def _traits(cache: SimCache) -> dict[Operation, OpTraits]:
    """What the hazard checks read of each op (`CoreChecker.traits`), kept as long as the
    search's `cache` and valid as long as it is (the ops are not changed in place)."""
    found = _TRAITS.get(cache)
    if found is None:
        found = _TRAITS[cache] = {}
    return found


def _has_hazard(
    lowered: Program,
    origin: Sequence[int],
    limit_fn: LimitFn | None,
    hw: Hardware,
    traits: dict[Operation, OpTraits] | None = None,
) -> bool:
    """Whether the lowered program has a hold-and-wait hazard (`CoreChecker.any_hazard`, the
    check `assignment_hazard` makes for `stream-partition`) under the limits it is
    simulated with."""
    node_of = {
        lowered.ops[n]: n
        for n in range(len(lowered))
        if lowered.kind[n] is NodeKind.COMPUTE and origin[n] >= 0
    }
    counts = _SimulatedLimits(node_of, limit_fn, lowered, hw)
    return CoreChecker(lowered, counts, hw, traits=traits).any_hazard() is not None


def _digest(assignment: Assignment) -> bytes:
    """A digest of everything in `assignment` that its simulation depends on: the streams
    of the nodes, and each stream's priority (not its tag or symbol, which the simulator
    does not read: two assignments that differ only in the names a move made up run
    alike)."""
    h = hashlib.blake2b(digest_size=20)
    h.update(array("q", assignment.stream_of).tobytes())
    h.update(array("q", [info.priority for info in assignment.streams]).tobytes())
    if assignment.order is not None:
        h.update(b"order")
        h.update(array("q", assignment.order).tobytes())
    return h.digest()


@dataclass(frozen=True)
class _Solo:
    """Per node, its duration alone on the device (launch included) and the engine whose
    every core it takes (None when it leaves some free, or takes none), as the simulator
    costs it (`NodeCosts`)."""

    duration: list[int]
    saturates: list[str | None]

    @staticmethod
    def of(costs: NodeCosts, hw: Hardware, size: int) -> _Solo:
        duration = [costs.duration_ns(n, costs.want[n]) for n in range(size)]
        saturates: list[str | None] = [None] * size
        for n in range(size):
            pool = costs.pool[n]
            if pool >= 0 and POOL_ENGINES[pool] in ("cube", "vector"):
                engine = POOL_ENGINES[pool]
                if costs.want[n] >= hw.cores(engine):
                    saturates[n] = engine
        return _Solo(duration, saturates)

    def in_order(self, order: Sequence[int] | None) -> _Solo:
        """The same figures indexed by position in `order` (a permuted program's nodes)."""
        if order is None:
            return self
        return _Solo([self.duration[n] for n in order], [self.saturates[n] for n in order])


def _earliest_finish(
    prog: Program,
    solo: _Solo,
    pinned: Sequence[str | None],
    priorities: dict[str, int],
    max_streams: int,
    hw: Hardware,
    reserved: Collection[str],
) -> Assignment:
    """The engine-aware earliest-finish list schedule (see the module docstring)."""
    streams = [StreamInfo("s0", MAIN_TAG, priorities.get(MAIN_TAG, 0))]
    by_tag = {MAIN_TAG: 0}
    for tag in pinned:
        if tag is not None and tag not in by_tag:
            by_tag[tag] = len(streams)
            streams.append(StreamInfo(f"s{len(streams)}", tag, priorities.get(tag, 0)))
    event = timing.event_cost(hw)
    stream_free = [0] * len(streams)
    finish = [0] * len(prog)
    saturated_free: dict[str, int] = {}
    stream_of = [DEFAULT_STREAM] * len(prog)
    for n in range(len(prog)):
        op = prog.ops[n]
        if prog.kind[n] is NodeKind.RETURN or not isinstance(op, NpuOp):
            stream_of[n] = DEFAULT_STREAM
            continue
        duration = solo.duration[n]
        engine = solo.saturates[n]
        options: list[int]
        if pinned[n] is not None:
            options = [by_tag[pinned[n]]]
        else:
            options = list(range(len(streams)))
            if len(streams) < max_streams:
                options.append(len(streams))
        best: tuple[int, int] | None = None
        for s in options:
            start = stream_free[s] if s < len(streams) else 0
            for p, _ in prog.deps[n]:
                ready = finish[p] + (event if stream_of[p] != s else 0)
                start = max(start, ready)
            if engine is not None:
                start = max(start, saturated_free.get(engine, 0))
            if best is None or start < best[0]:
                best = (start, s)
        assert best is not None
        start, s = best
        if s == len(streams):
            tag = fresh_tag(s, set(by_tag) | set(reserved))
            by_tag[tag] = s
            streams.append(StreamInfo(f"s{s}", tag, 0))
            stream_free.append(0)
        stream_of[n] = s
        finish[n] = start + duration
        stream_free[s] = finish[n]
        if engine is not None:
            saturated_free[engine] = finish[n]
    return Assignment(streams, stream_of)


def _chain_from(
    prog: Program, assignment: Assignment, node: int, users: list[list[int]]
) -> list[int]:
    """`node` and the later ops of its stream that depend on it through that stream alone.

    Linear in the size of the chain (plus its users): a search builds it only
    when it tries the move, so a long chain costs once per trial."""
    s = assignment.stream_of[node]
    chain = [node]
    seen = {node}
    for n in chain:
        for m in users[n]:
            if m not in seen and assignment.stream_of[m] == s and prog.kind[m] is NodeKind.COMPUTE:
                seen.add(m)
                chain.append(m)
    chain.sort()
    return chain


def _move(
    assignment: Assignment,
    nodes: Sequence[int],
    target: int,
    max_streams: int,
    reserved: Collection[str],
) -> Assignment | None:
    streams = list(assignment.streams)
    if target == len(streams):
        if len(streams) >= max_streams:
            return None
        tag = fresh_tag(target, {info.tag for info in streams} | set(reserved))
        streams.append(StreamInfo(f"s{target}", tag, 0))
    stream_of = list(assignment.stream_of)
    for node in nodes:
        stream_of[node] = target
    used = sorted(set(stream_of) | {DEFAULT_STREAM})
    if len(used) != len(streams):
        remap = {old: new for new, old in enumerate(used)}
        streams = [
            dataclasses.replace(streams[old], symbol=f"s{new}") for new, old in enumerate(used)
        ]
        stream_of = [remap[s] for s in stream_of]
    return Assignment(streams, stream_of)


def upward_rank_order(prog: Program, duration: Sequence[int]) -> list[int]:
    """A list-scheduling issue order: among the ops whose producers are issued,
    the one with the longest `duration`-weighted path to the end goes first
    (HEFT's upward rank); ties keep the written order, and the return stays last."""
    rank = upward_ranks(prog, duration.__getitem__)
    order = nearest_topological(prog, sorted(range(len(prog)), key=lambda n: (-rank[n], n)))
    returns = [n for n in order if prog.kind[n] is NodeKind.RETURN]
    return [n for n in order if prog.kind[n] is not NodeKind.RETURN] + returns


def _candidates(
    judge: Judge,
    solo: _Solo,
    pinned: Sequence[str | None],
    priorities: dict[str, int],
    user: Sequence[str | None],
    user_priorities: dict[str, int],
    max_streams: int,
    hw: Hardware,
    reserved: Collection[str],
) -> list[tuple[str, Assignment]]:
    """Every baseline, the user's annotation and the earliest-finish schedule, to be judged
    (by `judge`, in its order)."""
    prog = judge.prog
    # `single` puts every op on the default stream, pins or not; with pins it is no
    # candidate (the user mode below is its pinned form).
    pins = any(tag is not None for tag in pinned)
    judged: list[tuple[str, Assignment]] = [
        (mode, assign(mode, prog, pinned, priorities, max_streams, reserved=reserved))
        for mode in BASELINES
        if not (pins and mode is Mode.SINGLE)
    ]
    if any(t is not None for t in user):
        try:
            annotation = assign(
                Mode.USER, prog, user, user_priorities, max_streams, reserved=reserved
            )
            judged.append(("user", annotation))
        except ValueError:
            pass  # the annotation itself exceeds max-streams: not a candidate
    eft = _earliest_finish(judge.chained, solo, pinned, priorities, max_streams, hw, reserved)
    judged.append(("eft", eft))
    return judged


def _refine(
    judge: Judge,
    best: Judged,
    pinned: Sequence[str | None],
    max_streams: int,
    reserved: Collection[str],
    trials: int,
    levels: bool = False,
) -> Judged:
    """Local search along the critical path: move one op, or the chain it starts
    on its stream, elsewhere (with `levels`, each move also with its target stream at the
    other priority level: `_with_levels`); each accepted move restarts the scan.

    Every step is a trial (one simulation, linear in the program) or costs no
    more than the trial it prepares: the critical path is read once per
    accepted move, a chain is built only when its move is tried, and the whole
    search stops as soon as the budget is spent."""
    prog = judge.chained
    budget = judge.trials + trials
    users = prog.users()
    while judge.trials < budget:
        improved = _improve(judge, best, pinned, max_streams, reserved, budget, users, levels)
        if improved is None:
            break
        best = improved
    return best


def _improve(
    judge: Judge,
    best: Judged,
    pinned: Sequence[str | None],
    max_streams: int,
    reserved: Collection[str],
    budget: int,
    users: list[list[int]],
    levels: bool = False,
) -> Judged | None:
    """The first move along `best`'s critical path that lowers its key, or None
    when no move does (or the budget runs out first)."""
    prog = judge.chained
    targets = len(best.assignment.streams) + 1
    for node in best.critical:
        if pinned[node] is not None or prog.kind[node] is not NodeKind.COMPUTE:
            continue
        current = best.assignment.stream_of[node]
        for whole_chain in (False, True):
            group: list[int] | None = None
            for target in range(targets):
                if target == current:
                    continue
                if judge.trials >= budget:
                    return None
                if group is None:
                    group = [node]
                    if whole_chain:
                        chain = _chain_from(prog, best.assignment, node, users)
                        group = [n for n in chain if pinned[n] is None]
                        if len(group) <= 1:
                            break  # the op alone: tried already
                moved = _move(best.assignment, group, target, max_streams, reserved)
                if moved is None:
                    continue
                variants = _with_levels(moved, moved.stream_of[node], pinned) if levels else [moved]
                for variant in variants:
                    if judge.trials >= budget:
                        return None
                    candidate = judge.within(f"{best.name}+move", variant, best.makespan)
                    if candidate is not None and candidate.key() < best.key():
                        return candidate
    for name, moved in _structural_moves(prog, best, pinned, max_streams, reserved):
        if judge.trials >= budget:
            return None
        candidate = judge.within(f"{best.name}+{name}", moved, best.makespan)
        if candidate is not None and candidate.key() < best.key():
            return candidate
    return None


BACKGROUND = 1
"""The priority of the one stream `auto` may make less urgent than all others (which keep
priority 0, as the default stream has): the cores a pool frees go to the waiting requests
of every other stream first, then to its own."""


def _with_levels(
    assignment: Assignment, stream: int, pinned: Sequence[str | None]
) -> Iterator[Assignment]:
    """`assignment`, then (unless `stream` is the default one, or `stream` or the present
    background stream holds a pinned op: the user gave those their priorities) the same
    with `stream` made the background stream (`BACKGROUND`, every other stream at 0) or,
    if it is that already, with no background stream."""
    yield assignment
    held = {s for n, s in enumerate(assignment.stream_of) if pinned[n] is not None}
    background = [s for s, info in enumerate(assignment.streams) if info.priority == BACKGROUND]
    if stream == DEFAULT_STREAM or stream in held or held.intersection(background):
        return
    if any(info.priority not in (0, BACKGROUND) for info in assignment.streams):
        return  # the user's own priorities: left alone
    making = assignment.streams[stream].priority != BACKGROUND
    streams = [
        dataclasses.replace(info, priority=BACKGROUND if making and s == stream else 0)
        for s, info in enumerate(assignment.streams)
    ]
    yield dataclasses.replace(assignment, streams=streams)


def _structural_moves(
    prog: Program,
    best: Judged,
    pinned: Sequence[str | None],
    max_streams: int,
    reserved: Collection[str],
) -> Iterator[tuple[str, Assignment]]:
    """The moves beyond the critical ops' own (tried after them, lazily): every
    off-critical producer of a critical op to each other stream (it may be what its
    consumer's wait waits for); another stream made the default one (the default
    stream's ops need no join before the return); each stream merged into another."""
    assignment = best.assignment
    count = len(assignment.streams)
    on_path = set(best.critical)
    tried: set[int] = set()
    for node in best.critical:
        for producer, _ in prog.deps[node]:
            if (
                producer in on_path
                or producer in tried
                or pinned[producer] is not None
                or prog.kind[producer] is not NodeKind.COMPUTE
            ):
                continue
            tried.add(producer)
            for target in range(count + 1):
                if target != assignment.stream_of[producer]:
                    moved = _move(assignment, [producer], target, max_streams, reserved)
                    if moved is not None:
                        yield "producer", moved
    members: list[list[int]] = [[] for _ in range(count)]
    for n, s in enumerate(assignment.stream_of):
        if prog.kind[n] is NodeKind.COMPUTE:
            members[s].append(n)
    held = [any(pinned[n] is not None for n in members[s]) for s in range(count)]
    for s in range(1, count):
        if held[0] or held[s]:
            continue
        swap = {0: s, s: 0}
        stream_of = [
            s_ if prog.kind[n] is not NodeKind.COMPUTE else swap.get(s_, s_)
            for n, s_ in enumerate(assignment.stream_of)
        ]
        yield "default", Assignment(assignment.streams, stream_of)
    for s in range(count):
        if held[s] or not members[s]:
            continue
        for t in range(count):
            if t != s:
                moved = _move(assignment, members[s], t, max_streams, reserved)
                if moved is not None:
                    yield "merge", moved


def has_parallelism(prog: Program) -> bool:
    """Whether two of `prog`'s compute nodes could run at the same time (or be issued in
    another order): false when each one reads the one before it, a single chain."""
    previous = -1
    for n, kind in enumerate(prog.kind):
        if kind is not NodeKind.COMPUTE:
            continue
        if previous >= 0 and all(p != previous for p, _ in prog.deps[n]):
            return True
        previous = n
    return False


def _keeping_collectives(prog: Program, result: Assignment) -> Assignment:
    """`result` with its issue order made to keep the collectives' written order."""
    if result.order is None:
        return result
    order = keep_collective_order(prog, result.order)
    return dataclasses.replace(result, order=None if order == list(range(len(prog))) else order)


def _in_order(result: Assignment, order: list[int] | None) -> Assignment:
    """`result`'s streams indexed by position in `order` (the nodes of a permuted program)."""
    if order is None:
        return result
    return Assignment(result.streams, [result.stream_of[n] for n in order])


def _by_node(judged: Assignment, order: list[int]) -> Assignment:
    """`_in_order`'s inverse: a schedule of the program permuted to `order` (indexed by
    position) as one of the program itself, issued in `order`."""
    stream_of = [0] * len(order)
    for new, old in enumerate(order):
        stream_of[old] = judged.stream_of[new]
    return Assignment(judged.streams, stream_of, order)


def assign_auto(
    prog: Program,
    pinned: Sequence[str | None],
    priorities: dict[str, int],
    max_streams: int,
    hw: Hardware,
    limits: LimitFn | None = None,
    reserved: Collection[str] = (),
    reorder: bool = True,
    profile: Profile | None = None,
    search_limits: bool = False,
) -> Assignment:
    """The cost-model-driven assignment (see the module docstring).

    `reserved` tags are never given to a stream auto makes (the module's
    other scope tags); `limits` gives each node's core limit; with `reorder`
    the candidates may issue the ops in another order than the written one
    (else every candidate keeps it); `profile` costs the ops it covers in the
    judge's simulations.  With `search_limits`, core limits are chosen with the
    streams and order (`_with_limits`) and returned in the assignment's `limits`.
    """
    result = _shared_search(
        prog, pinned, priorities, max_streams, hw, limits, reserved, reorder, profile
    )
    if not search_limits:
        return result
    return _with_limits(
        prog, pinned, priorities, max_streams, hw, limits, reserved, reorder, profile, result
    )


_SHARED: ContextVar[dict[Hashable, Assignment] | None] = ContextVar(
    "npuir_auto_shared_searches", default=None
)


@contextmanager
def shared_searches() -> Iterator[None]:
    """Within this block, `assign_auto` searches each program once: a second call on a
    program of the same IR (another copy of it) with the same device, core limits, pins,
    priorities, stream cap, reserved tags and order freedom returns the first call's
    streams and order without searching again (the search is deterministic, so the
    result is the one it would find).  Only the search without limit policies is shared,
    the one every call starts with.  `npuir-advise` times auto's row and searches auto's
    memory trade-off from the same program: one search, not two."""
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


def _search_key(
    prog: Program,
    pinned: Sequence[str | None],
    priorities: dict[str, int],
    max_streams: int,
    hw: Hardware,
    limits: LimitFn | None,
    reserved: Collection[str],
    reorder: bool,
) -> Hashable:
    """Everything `_search` (without a policy or profile) reads, as a value: the function's
    IR text (ops, types, attributes, order, scopes), each node's core limit per engine
    (what the module's scopes and stream limits give it), and the other arguments."""
    if limits is None:
        limits = _written_limits(prog, hw)
    counts = (
        ()
        if limits is None
        else tuple(
            limits(prog, n, engine)
            for n, kind in enumerate(prog.kind)
            if kind is NodeKind.COMPUTE
            for engine in POOL_ENGINES
        )
    )
    return (
        str(prog.func),
        len(prog),
        counts,
        repr(hw),
        tuple(pinned),
        tuple(sorted(priorities.items())),
        max_streams,
        tuple(sorted(reserved)),
        reorder,
        keeping_pair_rule(),
    )


def _copy(assignment: Assignment) -> Assignment:
    """A copy of `assignment` whose lists the caller may keep or change."""
    return dataclasses.replace(
        assignment,
        streams=list(assignment.streams),
        stream_of=list(assignment.stream_of),
        order=None if assignment.order is None else list(assignment.order),
    )


def _shared_search(
    prog: Program,
    pinned: Sequence[str | None],
    priorities: dict[str, int],
    max_streams: int,
    hw: Hardware,
    limits: LimitFn | None,
    reserved: Collection[str],
    reorder: bool,
    profile: Profile | None,
) -> Assignment:
    """`_search` without a policy, once per program within `shared_searches`."""
    memo = _SHARED.get()
    if memo is None or profile is not None:
        return _search(
            prog, pinned, priorities, max_streams, hw, limits, reserved, reorder, profile, None
        )
    key = _search_key(prog, pinned, priorities, max_streams, hw, limits, reserved, reorder)
    found = memo.get(key)
    if found is None:
        found = memo[key] = _search(
            prog, pinned, priorities, max_streams, hw, limits, reserved, reorder, None, None
        )
    return _copy(found)


LIMIT_SEARCHES = 2
"""How many limit policies `_with_limits` runs the whole search under (the best screened)."""


_POLISH_ROUNDS = 2
"""How many times `_with_limits` reorders the polished schedule and polishes it again."""

_POLISH_TRIALS = 4000
"""At most this many simulations per `_polish` descent (fewer on bigger graphs: `_SEARCH_OPS`
simulated ops in all); a graph whose neighbourhood under every policy needs more is not
polished."""

_POLISH_KICKS = 16
"""At most this many times `_with_limits`'s polish kicks its schedule (`_KICK_MOVES` random
neighbours) and descends again from there."""

_KICK_SHARE = 3
"""The kicks stop once they have simulated this many times what the descents before them
did: a bigger program's kicks cost more each, and it gets fewer."""


def _judged(
    prog: Program,
    hw: Hardware,
    limits: LimitFn | None,
    profile: Profile | None,
    cache: SimCache,
    policy: LimitPolicy | None,
    result: Assignment,
) -> Judged:
    """`result` (indexed by `prog`'s nodes, issued in its own order) judged under `policy`."""
    if result.order is None:
        return Judge(prog, hw, limits, profile, cache, policy=policy, refuse_hazards=True)(
            "limits", result
        )
    judged, _ = _judge_in_order(prog, hw, limits, profile, cache, {}, result, result.order, policy)
    return judged


def _with_limits(
    prog: Program,
    pinned: Sequence[str | None],
    priorities: dict[str, int],
    max_streams: int,
    hw: Hardware,
    limits: LimitFn | None,
    reserved: Collection[str],
    reorder: bool,
    profile: Profile | None,
    unlimited: Assignment,
) -> Assignment:
    """Core limits chosen jointly with streams and order (`npuir.schedule.limits`).

    Every policy is first judged on the schedule found without limits; the whole search
    (candidates, refinement, reordering) then runs again under each of the
    `LIMIT_SEARCHES` best, its judge applying the policy to every schedule it tries.  The
    fastest of all these and the schedule without limits wins (ties: no limits), so the
    result is never slower than `limits=false` under the same judge."""
    space = LimitSpace.of(prog, hw)
    tried = policies(prog, hw, space)
    if not tried:
        return unlimited
    cache = SimCache(hw)
    if limits is None:
        limits = _written_limits(prog, hw)
    best_key = _judged(prog, hw, limits, profile, cache, None, unlimited).key()
    best: tuple[Assignment, LimitPolicy | None] = (unlimited, None)
    screened = sorted(
        (
            (_judged(prog, hw, limits, profile, cache, policy, unlimited).key(), i)
            for i, policy in enumerate(tried)
        ),
    )
    for _, i in screened[:LIMIT_SEARCHES]:
        policy = tried[i]
        found = _search(
            prog, pinned, priorities, max_streams, hw, limits, reserved, reorder, profile, policy
        )
        restarts: list[Assignment] = []
        if reorder:
            # Limits change which stream is best as the default one (its ops need no join):
            # restart the reordering from each other stream made the default.
            trials = max(_MIN_TRIALS, min(_MAX_TRIALS, _SEARCH_OPS // max(1, len(prog))))
            restarts = [
                _reorder(
                    prog,
                    hw,
                    limits,
                    profile,
                    cache,
                    swapped,
                    pinned,
                    max_streams,
                    reserved,
                    trials // 4,
                    policy,
                )
                for swapped in _default_swaps(prog, found, pinned)
            ]
        for candidate in (unlimited, found, *restarts):
            key = _judged(prog, hw, limits, profile, cache, policy, candidate).key()
            if key < best_key:
                best_key, best = key, (candidate, policy)
    result, chosen = best
    trials = max(_MIN_TRIALS, min(_MAX_TRIALS, _SEARCH_OPS // max(1, len(prog))))
    polish = max(_MIN_TRIALS, min(_POLISH_TRIALS, _SEARCH_OPS // max(1, len(prog))))
    result, chosen = _polish(
        prog,
        hw,
        limits,
        profile,
        cache,
        result,
        chosen,
        tried,
        pinned,
        max_streams,
        reserved,
        polish,
        reorder,
        kicks=_POLISH_KICKS,
    )
    if reorder and _polishable(prog, pinned, result, tried, polish):
        # Compound moves: an issue-position move with a stream refinement after it
        # (`_reorder`), under the polished policy, then the polish again; kept while better.
        key = _judged(prog, hw, limits, profile, cache, chosen, result).key()
        for _ in range(_POLISH_ROUNDS):
            moved = _reorder(
                prog,
                hw,
                limits,
                profile,
                cache,
                result,
                pinned,
                max_streams,
                reserved,
                polish // 4,
                chosen,
            )
            again = _polish(
                prog,
                hw,
                limits,
                profile,
                cache,
                moved,
                chosen,
                tried,
                pinned,
                max_streams,
                reserved,
                polish,
                reorder,
            )
            again_key = _judged(prog, hw, limits, profile, cache, again[1], again[0]).key()
            if again_key >= key:
                break
            (result, chosen), key = again, again_key
    if chosen is None:
        return result
    counts = chosen.limits(prog, result.stream_of)
    assert counts is not None  # it was judged feasible
    index = {op: n for n, op in enumerate(prog.ops)}
    written = tuple(sorted((index[op], chosen.engine, c) for op, c in counts.items()))
    return dataclasses.replace(result, limits=written)


def _polish(
    prog: Program,
    hw: Hardware,
    limits: LimitFn | None,
    profile: Profile | None,
    cache: SimCache,
    result: Assignment,
    policy: LimitPolicy | None,
    tried: Sequence[LimitPolicy],
    pinned: Sequence[str | None],
    max_streams: int,
    reserved: Collection[str],
    trials: int,
    reorder: bool,
    memos: Memos | None = None,
    kicks: int = 0,
) -> tuple[Assignment, LimitPolicy | None]:
    """The last step of `_with_limits` on small graphs: a local search over streams, issue
    order and policy together, where the searches before it fix the policy first.

    First the schedule's policy is chosen again among all of `tried` and none.  Then each
    neighbour (`_neighbours`: another stream made the default one, one op on another stream,
    two ops of different streams exchanged, one op issued elsewhere: with `reorder` only,
    as ops in a `coreset.limit` scope keep the written order) is judged under the
    policy and, when it moves an op some policies hold, under those; when none lowers the
    key, every neighbour under every other policy (a move may pay only under a limit the
    schedule has no use for yet: on a generated 7-op graph the optimum puts an all_to_all
    and a vector op beside another collective, limited to an eighth).  The change kept is
    the first that lowers the key, and the scan restarts.  Two such descents run from
    `result`, the better one wins: one as said, one that under the schedule's own policies
    keeps the best neighbour instead of the first (on seed 703 of `bench/run.py oracle
    --limits` the first move that pays, another collective limited, leads away from the
    optimum; on seed 851 of `--first 50` the best one does).

    A neighbour that is refused (a hold-and-wait hazard, the pair rule, a deadlock) is
    judged again with each op it moved issued elsewhere (`_reissued`), the best of those
    standing for it: the result is hazard-free, yet the search can pass through a stream
    assignment that is hazard-free only in another order (seed 703 of `bench/run.py oracle
    --limits`: the optimum's all_to_all, moved beside a `full_core_sync` matmul under a
    limit of its own, must be issued before the matmul, which then waits for the
    collective's producer on the other stream).  When no neighbour pays, another stream is
    made the default one together with one more move (under the schedule's policy): the
    swap alone costs the joins of the old default stream's ops, which the move can take
    away (seed 656 of `--first 50`).  When that does not pay either, two ops are moved to
    one stream together, under the policy and those that hold either (on 5-op seed 1530
    of `bench/run.py oracle --limits --first 1000` the optimum moves a matmul and the
    vector op after it to the all_to_all's stream; either alone is slower).

    Then, with `kicks`, an iterated local search: up to `kicks` times, the walk's schedule
    (at first the best) is kicked by `_KICK_MOVES` random neighbours and a descent runs from there (without the
    rounds under every other policy: the kick is what leaves the valley); the next kick
    starts from its result when that is no worse -- equal keys too, a walk across a
    plateau (8-op seed 1814 of that set reaches its optimum only so) -- and the result is
    the first schedule of the best key found (a plateau walk alone changes nothing).  The
    kicks stop at the lower bound (`npuir.schedule.bounds`: a schedule there is optimal;
    on 117 of those 200 graphs the optimum is the bound) and once they have simulated
    `_KICK_SHARE` times what the descents did (on 10-op programs 16 kicks multiplied
    auto's time by six).  The descents' moves are each one change; on 6-op seeds 1603
    and 1632 the optimum is three away (another stream made the default one, an op moved,
    one issued elsewhere), where no step above pays.  The kicks' random choices come from
    a fixed seed: the result is deterministic.

    At most `trials` simulations per descent; a graph whose neighbourhood under every
    policy needs more is left as it is (`_polishable`); every descent simulates nothing an
    earlier one judged (one memo per issue order and policy).  `memos`: judgements
    without a policy shared with the caller's judges (`Judge`)."""
    if not _polishable(prog, pinned, result, tried, trials):
        return result, policy
    known: dict[tuple[int, str], int | None] = {}
    judges: dict[tuple[tuple[int, ...], int], Judge] = {}
    written = list(range(len(prog)))

    def judge(candidate: Assignment, under: LimitPolicy | None) -> Judged:
        order = candidate.order if candidate.order is not None else written
        key = (tuple(order), -1 if under is None else tried.index(under))
        if key not in judges:
            issued = prog if candidate.order is None else permuted(prog, order)
            shared = memos if under is None else None
            judges[key] = Judge(
                issued, hw, limits, profile, cache, known, under, shared, refuse_hazards=True
            )
        judged = judges[key]("polish", _in_order(candidate, order))
        return Judged(judged.name, candidate, judged.makespan, judged.waits, judged.critical)

    def descend(
        start: Assignment,
        start_policy: LimitPolicy | None,
        steepest: bool,
        wide: bool = True,
    ) -> tuple[Judged, LimitPolicy | None]:
        """One descent from `start`; `steepest`: the best neighbour under the schedule's
        own policies, else the first that pays; not `wide`: no round of every neighbour
        under every other policy."""
        best, policy = judge(start, start_policy), start_policy
        spent, improved = 1, True

        def tried_moved(
            candidate: Assignment, moved: list[int], under: LimitPolicy | None
        ) -> Judged:
            """`candidate` judged under `under`; when refused, the best of it and it with
            one of the `moved` nodes issued elsewhere (`_reissued`)."""
            nonlocal spent
            spent += 1
            judged = judge(candidate, under)
            if judged.makespan == INFEASIBLE and reorder:
                for reissued in _reissued(prog, candidate, moved):
                    if spent >= trials:
                        break
                    spent += 1
                    again = judge(reissued, under)
                    if again.key() < judged.key():
                        judged = again
            return judged

        def holding(moved: list[int]) -> list[LimitPolicy | None]:
            """The schedule's policy, then the others that hold an op `moved`."""
            ops = {prog.ops[n] for n in moved}
            return [policy] + [p for p in tried if p is not policy and p.holders & ops]

        while improved and spent < trials:
            improved = False
            for under in (None, *tried):
                if under is not policy:
                    spent += 1
                    judged = judge(best.assignment, under)
                    if judged.key() < best.key():
                        best, policy = judged, under
            rounds = [None, *(p for p in (None, *tried) if p is not policy)] if wide else [None]
            for i, under in enumerate(rounds):
                neighbours = _neighbours(
                    prog, best.assignment, pinned, max_streams, reserved, reorder
                )
                found: tuple[Judged, LimitPolicy | None] | None = None
                for candidate, moved in neighbours:
                    for each in holding(moved) if i == 0 else [under]:
                        if spent >= trials:
                            break
                        judged = tried_moved(candidate, moved, each)
                        if judged.key() < (best if found is None else found[0]).key():
                            found = judged, each
                            if i > 0 or not steepest:
                                break
                    if (found is not None and (i > 0 or not steepest)) or spent >= trials:
                        break
                if found is not None:
                    (best, policy), improved = found, True
                    break
                if spent >= trials:
                    break
            if not improved:
                # Stuck: another stream made the default one and one more move (the swap alone
                # costs the old default stream's joins; the move can take one away).
                for swapped in _default_swaps(prog, best.assignment, pinned):
                    more = _neighbours(prog, swapped, pinned, max_streams, reserved, reorder)
                    for candidate, moved in more:
                        if spent >= trials:
                            break
                        if not moved:
                            continue
                        spent += 1
                        judged = judge(candidate, policy)
                        if judged.key() < best.key():
                            best, improved = judged, True
                            break
                    if improved or spent >= trials:
                        break
            if not improved:
                # Still stuck: two ops moved to one stream together.
                pairs = _pair_moves(prog, best.assignment, pinned, max_streams, reserved)
                for candidate, moved in pairs:
                    for each in holding(moved):
                        if spent >= trials:
                            break
                        judged = tried_moved(candidate, moved, each)
                        if judged.key() < best.key():
                            best, policy, improved = judged, each, True
                            break
                    if improved or spent >= trials:
                        break
        return best, policy

    found = [descend(result, policy, steepest) for steepest in (False, True)]
    best, policy = min(found, key=lambda d: d[0].key())
    # A schedule at the lower bound (`npuir.schedule.bounds`: the cost model's, so none
    # with a profile) is optimal: no kick can beat it.
    floor = program_bound(prog, hw).ns if kicks and profile is None else -1.0
    rng = random.Random(_KICK_SEED)
    walk, walk_policy = best, policy

    def simulated() -> int:
        return sum(len(judge.judged) for judge in judges.values())

    descended = max(1, simulated())
    for _ in range(kicks):
        if best.makespan <= floor or simulated() - descended >= _KICK_SHARE * descended:
            break
        kicked = walk.assignment
        for _ in range(_KICK_MOVES):
            options = list(_neighbours(prog, kicked, pinned, max_streams, reserved, reorder))
            if options:
                kicked = rng.choice(options)[0]
        again, under = descend(kicked, walk_policy, False, wide=False)
        if again.key() <= walk.key():  # equal: a walk across the plateau
            walk, walk_policy = again, under
        if again.key() < best.key():
            best, policy = again, under
    return best.assignment, policy


def _polishable(
    prog: Program,
    pinned: Sequence[str | None],
    result: Assignment,
    tried: Sequence[LimitPolicy],
    trials: int,
) -> bool:
    """Whether `_polish` can judge every neighbour of `result` under every policy in `trials`
    (counting every op issued anywhere, an upper bound on the order moves)."""
    free = len(_free_ops(prog, pinned))
    streams = len(result.streams)
    neighbours = free * streams + free * (free - 1) // 2 + streams + free * len(prog)
    return neighbours * (len(tried) + 1) <= trials


def _neighbours(
    prog: Program,
    assignment: Assignment,
    pinned: Sequence[str | None],
    max_streams: int,
    reserved: Collection[str],
    reorder: bool,
) -> Iterator[tuple[Assignment, list[int]]]:
    """`_polish`'s neighbours of `assignment` (indexed by `prog`'s nodes), each with the nodes
    it moves: another stream made the default one, one op on another stream, two ops of
    different streams exchanged and, with `reorder`, one op issued anywhere after its last
    producer (its users, and any collective that would pass an earlier one of its group,
    issued after it as early as they can: every rank issues each group's collectives in the
    written order).  Pinned ops and nodes that are not compute ops stay on their stream."""
    free = _free_ops(prog, pinned)
    for swapped in _default_swaps(prog, assignment, pinned):
        yield swapped, []
    for n in free:
        for target in range(len(assignment.streams) + 1):
            if target != assignment.stream_of[n]:
                moved = _move(assignment, [n], target, max_streams, reserved)
                if moved is not None:
                    yield dataclasses.replace(moved, order=assignment.order), [n]
    for i, a in enumerate(free):
        for b in free[i + 1 :]:
            if assignment.stream_of[a] != assignment.stream_of[b]:
                stream_of = list(assignment.stream_of)
                stream_of[a], stream_of[b] = stream_of[b], stream_of[a]
                yield dataclasses.replace(assignment, stream_of=stream_of), [a, b]
    if not reorder:
        return
    order = list(assignment.order) if assignment.order is not None else list(range(len(prog)))
    seen = {tuple(order)}
    for n in order:
        if prog.kind[n] is NodeKind.COMPUTE:
            for moved in _issue_moves(prog, order, n, seen):
                yield dataclasses.replace(assignment, order=moved), [n]


def _free_ops(prog: Program, pinned: Sequence[str | None]) -> list[int]:
    """The compute nodes a search may move: those no tag pins to a stream."""
    return [n for n in range(len(prog)) if pinned[n] is None and prog.kind[n] is NodeKind.COMPUTE]


def _pair_moves(
    prog: Program,
    assignment: Assignment,
    pinned: Sequence[str | None],
    max_streams: int,
    reserved: Collection[str],
) -> Iterator[tuple[Assignment, list[int]]]:
    """`assignment` with two free ops moved together to a stream neither is on (a new one
    too), the issue order kept, each with the nodes it moves."""
    free = _free_ops(prog, pinned)
    for i, a in enumerate(free):
        for b in free[i + 1 :]:
            for target in range(len(assignment.streams) + 1):
                if assignment.stream_of[a] == target or assignment.stream_of[b] == target:
                    continue
                moved = _move(assignment, [a, b], target, max_streams, reserved)
                if moved is not None:
                    yield dataclasses.replace(moved, order=assignment.order), [a, b]


def _reissued(prog: Program, assignment: Assignment, moved: Sequence[int]) -> Iterator[Assignment]:
    """`assignment` with one of the `moved` nodes issued elsewhere (`_issue_moves`)."""
    order = list(assignment.order) if assignment.order is not None else list(range(len(prog)))
    seen = {tuple(order)}
    for n in moved:
        for again in _issue_moves(prog, order, n, seen):
            yield dataclasses.replace(assignment, order=again)


def _issue_moves(
    prog: Program, order: list[int], n: int, seen: set[tuple[int, ...]]
) -> Iterator[list[int] | None]:
    """The issue orders with node `n` issued anywhere after its last producer in `order`
    (None: the written order), each not in `seen` (which gains it).  What `n` needs comes
    with it: issued earlier than a collective before it (every rank issues the collectives
    in their written order), `n` takes that collective and its producers along, just before
    it; issued past its users, they follow it (each as early as it can), as do the
    collectives after it."""
    colls = [m for m, op in enumerate(prog.ops) if isinstance(op, CollectiveOp)]
    earlier = {b: a for a, b in itertools.pairwise(colls)}
    needs: set[int] = set()
    stack = [n]
    while stack:
        m = stack.pop()
        for p in [p for p, _ in prog.deps[m]] + ([earlier[m]] if m in earlier else []):
            if p not in needs:
                needs.add(p)
                stack.append(p)
    position = {m: i for i, m in enumerate(order)}
    low = max((position[p] + 1 for p, _ in prog.deps[n]), default=0)
    rest = [m for m in order if m != n]
    for target in range(low, len(order) - 1):  # the return stays last
        after = rest[target:]
        moved = rest[:target] + [m for m in after if m in needs] + [n]
        moved += [m for m in after if m not in needs]
        moved = keep_collective_order(prog, _topological(prog, moved))
        if tuple(moved) in seen:
            continue
        seen.add(tuple(moved))
        yield None if moved == list(range(len(prog))) else moved


def _topological(prog: Program, wanted: Sequence[int]) -> list[int]:
    """`prog`'s nodes in a topological order as close to `wanted` as Kahn's algorithm gets
    by always issuing the ready node that comes first in `wanted`."""
    return nearest_topological(prog, wanted)


def _default_swaps(
    prog: Program, result: Assignment, pinned: Sequence[str | None]
) -> list[Assignment]:
    """`result` with each other stream made the default one (streams whose ops are pinned
    stay), the issue order kept."""
    held = {s for n, s in enumerate(result.stream_of) if pinned[n] is not None}
    out: list[Assignment] = []
    for s in range(1, len(result.streams)):
        if s in held or DEFAULT_STREAM in held:
            continue
        swap = {DEFAULT_STREAM: s, s: DEFAULT_STREAM}
        stream_of = [
            t if prog.kind[n] is not NodeKind.COMPUTE else swap.get(t, t)
            for n, t in enumerate(result.stream_of)
        ]
        out.append(dataclasses.replace(result, stream_of=stream_of))
    return out


def _phase_trials(size: int) -> tuple[int, int]:
    """The trials of the refinement and of the reordering for a program of `size` nodes.

    Each trial simulates the whole program, so a trial costs `size` simulated ops.  Each
    phase's own count (`_SEARCH_OPS`, `_REORDER_OPS`, bounded by `_MIN_TRIALS` and
    `_MAX_TRIALS`) is kept while the two together stay within `_PHASE_OPS` simulated ops
    (every program below about 2.5k nodes, so small graphs search exactly as much as ever);
    above, the phases share `max(_MIN_SIMS, _PHASE_OPS // size)` simulations, the
    reordering a quarter of them (at least two: its start and one move)."""
    size = max(1, size)
    trials = max(_MIN_TRIALS, min(_MAX_TRIALS, _SEARCH_OPS // size))
    moves = max(_MIN_TRIALS, min(trials, _REORDER_OPS // size))
    shared = max(_MIN_SIMS, _PHASE_OPS // size)
    if trials + moves <= shared:
        return trials, moves
    moves = min(moves, max(2, shared // 4))
    return shared - moves, moves


def _search(
    prog: Program,
    pinned: Sequence[str | None],
    priorities: dict[str, int],
    max_streams: int,
    hw: Hardware,
    limits: LimitFn | None,
    reserved: Collection[str],
    reorder: bool,
    profile: Profile | None,
    policy: LimitPolicy | None,
) -> Assignment:
    """`assign_auto`'s search for streams and order, every schedule judged under `policy`."""
    progress.phase("stream-partition{mode=auto}: simulated candidates")
    if all(tag is None for tag in pinned) and not has_parallelism(prog):
        # One chain of ops: no two can overlap and the order is the only one, so every
        # other stream would only add events.
        return assign(Mode.SINGLE, prog, pinned, priorities, max_streams, reserved=reserved)
    # The user's own annotation is a candidate even when the pass ignores it.
    user, user_priorities = prog.pinned, prog.priorities
    request = Request(prog, pinned, priorities, max_streams, reserved)
    cache = SimCache(hw)
    known_limits: dict[tuple[int, str], int | None] = {}
    memos: Memos = {}
    costs = NodeCosts(prog, hw, limits=limits, cache=cache, profile=profile)
    solo = _Solo.of(costs, hw, len(prog))
    # GE's automatic multi-stream and Opara are candidates too; Opara brings its own order.
    durations = solo_durations(prog, hw)
    costed = [(f"minidag-{v}", assign_minidag(request, hw, v, durations)) for v in Variant]
    costed.append(("opara", assign_opara(request, hw)))
    # The cost-aware candidates plan with the chain of each group's collectives (the
    # baselines and the user's annotation are the modes themselves, on `prog`).
    chained = with_collective_chain(prog)
    costed += _list_schedules(
        chained, costs, solo, pinned, priorities, max_streams, hw, reserved, reorder
    )
    # Every order judged keeps the collectives' written order, as `assign` will.
    costed = [(name, _keeping_collectives(prog, result)) for name, result in costed]
    orders: list[list[int] | None] = [None]
    if reorder:
        ranked = keep_collective_order(prog, upward_rank_order(chained, solo.duration))
        if ranked != list(range(len(prog))):
            orders.append(ranked)
    listed = len(orders)  # the orders every baseline is tried in
    for _, result in costed:
        if result.order is not None and result.order not in orders:
            orders.append(result.order)
    trials, moves = _phase_trials(len(prog))
    winners: list[tuple[Judged, Judge, list[str | None], list[int] | None]] = []
    for i, order in enumerate(orders):
        if order is None:
            judge = Judge(
                prog, hw, limits, profile, cache, known_limits, policy, memos, refuse_hazards=True
            )
            pins, user_pins = list(pinned), list(user)
        else:
            judge = Judge(
                permuted(prog, order), hw, limits, profile, cache, known_limits, policy, memos, True
            )
            pins, user_pins = [pinned[n] for n in order], [user[n] for n in order]
        candidates: list[tuple[str, Assignment]] = []
        if i < listed:
            candidates = _candidates(
                judge,
                solo.in_order(order),
                pins,
                priorities,
                user_pins,
                user_priorities,
                max_streams,
                hw,
                reserved,
            )
        candidates += [
            (name, _in_order(result, order)) for name, result in costed if result.order == order
        ]
        # The candidates are independent: their simulations run as one batch on the
        # executor, the winner picked by (cost, key) (ties: the earlier candidate).
        _, winner = least(judge_batch(judge, candidates), Judged.key)
        winners.append((winner, judge, pins, order))
    winners.sort(key=lambda w: w[0].key())
    refined_ones = winners[:_REFINED]
    best: Judged | None = None
    best_order: list[int] | None = None
    for start, judge, pins, order in refined_ones:
        refined = _refine(judge, start, pins, max_streams, reserved, trials // len(refined_ones))
        if best is None or refined.key() < best.key():
            best, best_order = refined, order
    assert best is not None
    if best_order is None:
        result = best.assignment
    else:
        result = _by_node(best.assignment, best_order)
    if not reorder:
        return result
    # The reordering's judges share the search's judgements: its start (`best`) and any
    # order it tries again are not simulated twice.
    result = _reorder(
        chained,
        hw,
        limits,
        profile,
        cache,
        result,
        pinned,
        max_streams,
        reserved,
        moves,
        policy,
        memos=memos,
    )
    kicks = min(_KICK_MAX, _KICK_OPS // max(1, len(prog)))
    if kicks < _KICK_MIN or policy is not None:
        # Under a limit policy (`_with_limits`' searches) the schedule found without one,
        # kicked, is a candidate already, and the polish follows: no second kick.
        return result
    result = _kick(
        chained,
        hw,
        limits,
        profile,
        cache,
        result,
        pinned,
        max_streams,
        reserved,
        kicks,
        policy,
        memos,
    )
    return _settle(prog, hw, limits, profile, cache, result, pinned, max_streams, reserved, memos)


def _settle(
    prog: Program,
    hw: Hardware,
    limits: LimitFn | None,
    profile: Profile | None,
    cache: SimCache,
    result: Assignment,
    pinned: Sequence[str | None],
    max_streams: int,
    reserved: Collection[str],
    memos: Memos,
) -> Assignment:
    """The search without limits ends, on small graphs, as `_with_limits` does: `_polish`
    (without policies), whose stuck step makes another stream the default one *and* makes
    one more move.  Neither the reordering (one issue move, then the streams refined) nor a
    kick (random moves) combines the two, and on generated graphs the optimum often needs
    both: 6-op seed 1015 and 7-op seed 1018 of `bench/run.py oracle --first 1000` make
    another branch's stream the default one and issue an op elsewhere (auto was 4.4% and
    4.2% over the optimum).  The descent starts from the kicked schedule and (when no op
    is pinned) again from every op on the default stream as written, the better result kept (ties: the kicked
    one's): a descent stops where no move and no swap with one more move pays, and on 6-op
    seed 1030 the kicked schedule is such a place, 3.2% over the optimum that the descent
    from one stream reaches.  Only where `_polish` can judge the whole neighbourhood within
    `_SETTLE_OPS` simulated ops (graphs of about a dozen ops), so that larger programs keep
    their compile time.  The judges share the search's judgements (`memos`)."""
    trials = max(_MIN_TRIALS, min(_POLISH_TRIALS, _SETTLE_OPS // max(1, len(prog))))
    if not _polishable(prog, pinned, result, (), trials):
        return result
    starts = [result]
    if all(tag is None for tag in pinned):  # `single` would put pinned ops on the default stream
        starts.append(assign(Mode.SINGLE, prog, pinned, {}, max_streams, reserved=reserved))
    best: tuple[tuple[int, int, int], Assignment] | None = None
    for start in starts:
        settled, _ = _polish(
            prog,
            hw,
            limits,
            profile,
            cache,
            start,
            None,
            (),
            pinned,
            max_streams,
            reserved,
            trials,
            True,
            memos,
        )
        order = settled.order if settled.order is not None else list(range(len(prog)))
        issued = prog if settled.order is None else permuted(prog, order)
        judge = Judge(issued, hw, limits, profile, cache, None, None, memos, True)
        key = judge("settle", _in_order(settled, order)).key()
        if best is None or key < best[0]:
            best = key, settled
    assert best is not None
    return best[1]


def _kick(
    prog: Program,
    hw: Hardware,
    limits: LimitFn | None,
    profile: Profile | None,
    cache: SimCache,
    result: Assignment,
    pinned: Sequence[str | None],
    max_streams: int,
    reserved: Collection[str],
    trials: int,
    policy: LimitPolicy | None,
    memos: Memos,
) -> Assignment:
    """Iterated local search over streams, stream priorities and issue order together: the
    best schedule is kicked by `_KICK_MOVES` random moves (`_random_move`: an op to another
    stream, a stream made the background one or back, an op issued elsewhere), the kicked
    schedule refined along its critical path (`_refine`, whose moves also try the target
    stream as the background one: `_with_levels`), and the result kept if it lowers the
    key.

    The refinement before it only takes moves that pay at once; a schedule that needs two
    changes together is out of its reach.  On `multi_branch` (95.3 -> 93.6 us): a vector op
    put ahead of the MLP's wide matmul on its stream *and* that stream made the background
    one.  The low-rank branch's second matmul starts on the 22 cube cores the deep chain's
    last blocks leave; when its first blocks end, the wide matmul (issued before it) is
    ready and, at equal priority, takes every freed core, so the low-rank matmul's last two
    blocks wait for the wide one's 26 us and the joins after them are late; behind the
    background stream, they finish at once.  At most `trials` trials (the caller bounds
    them by the program's size), from a fixed seed, so the result is deterministic; the
    judges share the search's judgements (`memos`).  A background stream in the result is
    dropped when the same schedule with every stream at 0 is as good."""
    if limits is None:
        limits = _written_limits(prog, hw)
    free = _free_ops(prog, pinned)
    if not free:
        return result
    rng = random.Random(_KICK_SEED)
    users = prog.users()
    written = list(range(len(prog)))
    known_limits: dict[tuple[int, str], int | None] = {}
    judges: dict[tuple[int, ...], Judge] = {}
    spent = 0

    def judge_of(order: list[int]) -> Judge:
        key = tuple(order)
        judge = judges.get(key)
        if judge is None:
            if len(judges) >= _KICK_REFINE:
                judges.clear()  # each keeps a permuted program: keep a few
            issued = prog if order == written else permuted(prog, order)
            judge = judges[key] = Judge(
                issued, hw, limits, profile, cache, known_limits, policy, memos, True
            )
        return judge

    def refined(candidate: Assignment) -> tuple[Judged, Assignment]:
        order = candidate.order if candidate.order is not None else written
        judge = judge_of(order)
        start = judge("kick", _in_order(candidate, order))
        before = judge.trials
        pins = [pinned[n] for n in order]
        found = _refine(judge, start, pins, max_streams, reserved, _KICK_REFINE, levels=True)
        nonlocal spent
        spent += 1 + judge.trials - before
        return found, dataclasses.replace(_by_node(found.assignment, order), order=candidate.order)

    best, result = refined(result)
    while spent < trials:
        kicked = result
        for _ in range(_KICK_MOVES):
            kicked = _random_move(prog, kicked, free, users, pinned, max_streams, reserved, rng)
        judged, candidate = refined(kicked)
        if judged.key() < best.key():
            best, result = judged, candidate
    held = {s for n, s in enumerate(result.stream_of) if pinned[n] is not None}
    made = [
        s for s, info in enumerate(result.streams) if info.priority == BACKGROUND and s not in held
    ]
    if made:
        # A background stream is kept only where it pays (a kick moves two things at once).
        levels = [
            dataclasses.replace(info, priority=0) if s in made else info
            for s, info in enumerate(result.streams)
        ]
        plain = dataclasses.replace(result, streams=levels)
        order = plain.order if plain.order is not None else written
        even = judge_of(order)("kick", _in_order(plain, order))
        if even.key() <= best.key():
            result = plain
    if result.order == written:
        return dataclasses.replace(result, order=None)
    return result


def _random_move(
    prog: Program,
    assignment: Assignment,
    free: Sequence[int],
    users: list[list[int]],
    pinned: Sequence[str | None],
    max_streams: int,
    reserved: Collection[str],
    rng: random.Random,
) -> Assignment:
    """`assignment` with one random move (`_kick`): one of the `free` ops to another stream
    (or a new one), a stream that holds no pinned op but the default one set to the other
    priority level, or an op issued anywhere between its last producer and its first user
    (never passing a collective: every rank issues them in the written order).  A move that
    cannot be made leaves `assignment` as it is."""
    order = list(assignment.order) if assignment.order is not None else list(range(len(prog)))
    kind = rng.random()
    if kind < 0.4:
        node = rng.choice(free)
        target = rng.randrange(len(assignment.streams) + 1)
        if target == assignment.stream_of[node]:
            return assignment
        moved = _move(assignment, [node], target, max_streams, reserved)
        return assignment if moved is None else dataclasses.replace(moved, order=assignment.order)
    if kind < 0.7:
        if len(assignment.streams) < 2:
            return assignment
        stream = rng.randrange(1, len(assignment.streams))
        variants = list(_with_levels(assignment, stream, pinned))
        return variants[-1]
    node = rng.choice(free)
    position = {n: i for i, n in enumerate(order)}
    low = max((position[p] + 1 for p, _ in prog.deps[node]), default=0)
    high = min(min((position[u] for u in users[node]), default=len(order)), len(order) - 1)
    if high - low < 2:
        return assignment
    order.remove(node)
    order.insert(rng.randrange(low, high), node)
    if keep_collective_order(prog, order) != order:
        return assignment
    return dataclasses.replace(assignment, order=order)


def _judge_in_order(
    prog: Program,
    hw: Hardware,
    limits: LimitFn | None,
    profile: Profile | None,
    cache: SimCache,
    known_limits: dict[tuple[int, str], int | None],
    assignment: Assignment,
    order: list[int],
    policy: LimitPolicy | None = None,
    memos: Memos | None = None,
) -> tuple[Judged, Judge]:
    """`assignment` (indexed by `prog`'s nodes) judged when issued in `order`."""
    judge = Judge(
        permuted(prog, order), hw, limits, profile, cache, known_limits, policy, memos, True
    )
    moved = _in_order(assignment, order)
    return judge("reorder", moved), judge


def _reorder(
    prog: Program,
    hw: Hardware,
    limits: LimitFn | None,
    profile: Profile | None,
    cache: SimCache,
    result: Assignment,
    pinned: Sequence[str | None],
    max_streams: int,
    reserved: Collection[str],
    trials: int,
    policy: LimitPolicy | None = None,
    memos: Memos | None = None,
) -> Assignment:
    """Issue-position moves: each op of the critical path (then every other op) moved to
    another place in the issue order between its last producer and its first user, each
    followed by a stream refinement in the new order (`_refine`) and kept if the pair lowers
    the key; a kept move restarts the scan.  A move that would reorder two collectives is not
    made (every rank issues each group's collectives in the written order).

    Each move's refinement gets at most a `_REORDER_REFINE`-th of the trials, so that more
    moves are tried; at most `trials` simulations in all (the caller bounds them by the
    program's size).  Every place is tried: a move that leaves the op's rank on its own
    stream and core pool alone still matters once the refinement moves it to the stream
    of an op it passed (a generated 8-op graph needs exactly that).

    `memos` are the judgements of the caller's judges under the same policy (see `Judge`)."""
    order = list(result.order) if result.order is not None else list(range(len(prog)))
    if limits is None:
        limits = _written_limits(prog, hw)  # read once, not once per order tried
    known_limits: dict[tuple[int, str], int | None] = {}
    if memos is None:
        memos = {}
    best, _ = _judge_in_order(
        prog, hw, limits, profile, cache, known_limits, result, order, policy, memos
    )
    spent = 1
    per_move = max(_MIN_TRIALS, trials // _REORDER_REFINE)
    users = prog.users()
    improved = True
    while improved and spent < trials:
        improved = False
        position = {n: i for i, n in enumerate(order)}
        critical = [order[n] for n in best.critical]
        on_path = set(critical)
        rest = [n for n in order if n not in on_path]
        for node in critical + rest:
            if prog.kind[node] is not NodeKind.COMPUTE:
                continue
            low = max((position[p] + 1 for p, _ in prog.deps[node]), default=0)
            high = min((position[u] for u in users[node]), default=len(order))
            high = min(high, len(order) - 1)  # the return stays last
            here = position[node]
            for target in range(low, high):
                if target == here:
                    continue
                if spent >= trials:
                    break
                moved = [n for n in order if n != node]
                moved.insert(target, node)
                if keep_collective_order(prog, moved) != moved:
                    continue  # the collectives keep their written order on every rank
                spent += 1
                judged, judge = _judge_in_order(
                    prog, hw, limits, profile, cache, known_limits, result, moved, policy, memos
                )
                # The move and a stream refinement in its order together (an order can pay
                # only once the streams follow it, e.g. with another default stream).
                before = judge.trials
                pins = [pinned[n] for n in moved]
                budget = min(per_move, trials - spent)
                judged = _refine(judge, judged, pins, max_streams, reserved, budget)
                spent += judge.trials - before
                if judged.key() < best.key():
                    result = _by_node(judged.assignment, moved)
                    best, order, improved = judged, moved, True
                    break
            if improved or spent >= trials:
                break
    if order == list(range(len(prog))):
        return dataclasses.replace(result, order=None)
    return dataclasses.replace(result, order=order)


def _list_schedules(
    prog: Program,
    costs: NodeCosts,
    solo: _Solo,
    pinned: Sequence[str | None],
    priorities: dict[str, int],
    max_streams: int,
    hw: Hardware,
    reserved: Collection[str],
    reorder: bool,
) -> list[tuple[str, Assignment]]:
    """The resource-aware list schedules (`npuir.schedule.list_schedule`): by upward
    rank, with and without keeping a pool for a held op, then with the ranks jittered
    (see the module docstring); with `reorder` off, by written order."""

    def plan(priority: Sequence[int], keep_pool: bool) -> Assignment:
        timed = list_schedule(
            prog, costs, priority, pinned, priorities, max_streams, hw, reserved, keep_pool
        )
        return timed.assignment if reorder else dataclasses.replace(timed.assignment, order=None)

    base = (
        upward_ranks(prog, solo.duration.__getitem__) if reorder else [-n for n in range(len(prog))]
    )
    out = [("list", plan(base, False)), ("list-keep", plan(base, True))]
    if reorder:
        rng = random.Random(_JITTER_SEED)
        jittered = min(_JITTERED, _JITTER_OPS // max(1, len(prog)))
        for k in range(jittered):
            priority = [int(r * (1 + _JITTER * (2 * rng.random() - 1))) for r in base]
            out.append((f"list-jitter{k}", plan(priority, k % 2 == 1)))
    return out


def cost_strategies(
    hw: Hardware,
    limits: LimitFn | None = None,
    profile: Profile | None = None,
    search_limits: bool = False,
) -> dict[Mode, Strategy]:
    """The modes that need the device, as strategies for `npuir.analysis.partition.assign`."""

    def auto(req: Request) -> Assignment:
        return assign_auto(
            req.prog,
            req.pinned,
            req.priorities,
            req.max_streams,
            hw,
            limits,
            req.reserved,
            reorder=req.reorderable,
            profile=profile,
            search_limits=search_limits,
        )

    def minidag(req: Request) -> Assignment:
        try:
            variant = Variant(req.variant)
        except ValueError:
            choices = ", ".join(Variant)
            raise ValueError(f"variant '{req.variant}' is not one of: {choices}") from None
        return assign_minidag(req, hw, variant)

    def opara(req: Request) -> Assignment:
        return assign_opara(req, hw)

    def ios(req: Request) -> Assignment:
        # Imported here: npuir.schedule.ios costs its stages with this module's `Judge`.
        from npuir.schedule.ios import assign_ios

        return assign_ios(req, hw, limits, profile)

    return {Mode.MINIDAG: minidag, Mode.OPARA: opara, Mode.AUTO: auto, Mode.IOS: ios}
