"""An exact schedule for small graphs: the oracle `stream-partition{mode=auto}` is tested against.

`exact_schedule` tries every schedule `auto` could return for a program of a
few ops and keeps the fastest under the same judge (`npuir.schedule.auto.Judge`:
the program lowered with `plan_events`' minimal events and simulated on one
rank with mirrored peers).  A schedule is a topological issue order (the
return last) and a stream per op; the space is enumerated without repeats:

- **Streams.** Streams carry no identity but one: index 0 is the default
  stream, where the return and its joins sit.  So an assignment is labelled
  canonically: label 0 is the default stream and the other labels are
  numbered by first appearance in the issue order (a restricted growth
  string), at most `max_streams` in all.  Every partition of the ops into
  streams, with every choice of which part (or none) is the default stream,
  comes exactly once.  (Stream priorities are all equal, as `auto` makes
  them, so no other relabelling can change the simulation.)
- **Orders.** Every topological order of the ops that issues the collectives in their
  written order (every rank must issue a group's collectives alike,
  `npuir.analysis.partition.keep_collective_order`, which `auto` keeps too).  The simulator reads the
  issue order in two places only: each stream runs its ops first-in first-out,
  and free cores of a pool go to waiting requests of equal priority in issue
  order (the events `plan_events` inserts follow from the per-stream
  sequences).  So two (order, labelling) pairs with the same stream per op,
  the same sequence on every stream and the same order of the ops of every
  core pool simulate alike, and only the first is simulated.  Ops without a
  pool (collectives on links, ops without a device task) count as one more
  pool, which can only keep more schedules apart than needed.

Ops that are not schedulable (`func.return`, ops outside the `npu` dialect)
stay on the default stream, as in `auto`; pinned ops stay on their tag's
stream.  The cost is at most (orders x labellings) simulations -- about Bell(n + 1)
labellings per order -- so the solver refuses more than `MAX_OPS` ops.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from npuir.analysis.partition import Assignment, keep_collective_order, permuted
from npuir.analysis.program import DEFAULT_STREAM, NodeKind, Program, StreamInfo
from npuir.backends.npu.hardware import Hardware
from npuir.backends.npu.simulator import NodeCosts, SimCache
from npuir.dialects.npu import NpuOp
from npuir.schedule.auto import INFEASIBLE, Judge, LimitFn
from npuir.schedule.limits import LimitPolicy, policies

MAX_OPS = 8
"""The most schedulable ops `exact_schedule` accepts (Bell(9) = 21147 labellings per order)."""


@dataclass(frozen=True)
class Exact:
    """The optimum found and how much was searched."""

    makespan: int
    assignment: Assignment
    """Indexed by the nodes of the program given; `order` is the issue order (None: as written)."""
    orders: int
    """Topological orders tried."""
    schedules: int
    """Schedules simulated (distinct ones of orders x labellings)."""


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


def exact_schedule(
    prog: Program,
    hw: Hardware,
    max_streams: int = 8,
    limits: LimitFn | None = None,
    policy: LimitPolicy | None = None,
) -> Exact:
    """The fastest schedule of `prog` over every issue order and stream assignment
    (see the module docstring); ties go to the first found.  Raises ValueError for
    more than `MAX_OPS` schedulable ops or for pinned ops (the solver assigns freely)."""
    schedulable = [
        prog.kind[n] is NodeKind.COMPUTE and isinstance(prog.ops[n], NpuOp)
        for n in range(len(prog))
    ]
    if sum(schedulable) > MAX_OPS:
        raise ValueError(f"{sum(schedulable)} ops: the exact solver takes at most {MAX_OPS}")
    if any(tag is not None for tag in prog.pinned):
        raise ValueError("the exact solver assigns every op: the program has pinned ops")
    cache = SimCache(hw)
    pool = NodeCosts(prog, hw, limits=limits, cache=cache).pool
    seen: set[tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]] = set()
    best: tuple[int, Assignment] | None = None
    orders = schedules = 0
    for order in topological_orders(prog):
        if keep_collective_order(prog, order) != order:
            continue
        orders += 1
        judge = Judge(permuted(prog, order), hw, limits, cache=cache, policy=policy)
        movable = [schedulable[n] for n in order]
        fixed = [DEFAULT_STREAM] * len(order)
        pools = sorted(set(pool))
        pool_orders = tuple(tuple(n for n in order if pool[n] == p) for p in pools)
        for labels in _labellings(movable, fixed, max(1, max_streams)):
            count = max(labels) + 1
            stream_of = [0] * len(order)
            for position, node in enumerate(order):
                stream_of[node] = labels[position]
            sequences = tuple(tuple(n for n in order if stream_of[n] == s) for s in range(count))
            key = (tuple(stream_of), sequences + pool_orders)
            if key in seen:
                continue
            seen.add(key)
            schedules += 1
            streams = [
                StreamInfo(f"s{s}", "default" if s == 0 else f"x{s}", 0) for s in range(count)
            ]
            judged = judge("exact", Assignment(streams, labels))
            if best is None or judged.makespan < best[0]:
                best = (judged.makespan, Assignment(streams, stream_of, list(order)))
    assert best is not None
    return Exact(best[0], best[1], orders, schedules)


@dataclass(frozen=True)
class ExactWithLimits:
    """The optimum over streams, order and core limits, and the policy that gives it."""

    exact: Exact
    policy: LimitPolicy | None
    """None: the optimum needs no limits."""
    policies: int
    """Limit policies tried (besides none)."""


def exact_with_limits(
    prog: Program, hw: Hardware, max_streams: int = 8, limits: LimitFn | None = None
) -> ExactWithLimits:
    """The fastest schedule of `prog` over every issue order, stream assignment and core-limit
    policy `stream-partition{mode=auto limits=true}` may choose
    (`npuir.schedule.limits.policies`: per holder of cores, or all holders, a half, a quarter
    or an eighth of the engine on their streams and the rest on the others, seed 003's pair
    rule kept): `exact_schedule` once without limits and once per policy; ties go to fewer
    limits.  The cost is (policies + 1) exact solves."""
    tried = policies(prog, hw)
    best = ExactWithLimits(exact_schedule(prog, hw, max_streams, limits), None, len(tried))
    for policy in tried:
        found = exact_schedule(prog, hw, max_streams, limits, policy)
        if found.makespan < best.exact.makespan and found.makespan < INFEASIBLE:
            best = ExactWithLimits(found, policy, len(tried))
    return best
