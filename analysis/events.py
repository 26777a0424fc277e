"""Event planning: the fewest `sync.record`/`sync.wait` that order a stream assignment.

One implementation serves `insert-events` (which writes the plan into the IR) and every
search that judges assignments without touching IR (`stream-partition{mode=auto}`,
`coreset-partition`): `lowered_program` builds the compact program the passes would produce,
and `program_with_events` the graph of what `insert-events` wrote (one construction for both).

For the stream assignment and issue order it is given, `plan_events` sweeps the program once
along issue order, keeping a vector clock per stream (what each stream knows to have
finished, `npuir.analysis.happens_before.ClockSweep`).  At each op it looks at the
dependencies on other streams that the clocks do not already cover -- through stream order
and the waits placed so far -- keeps, per producing stream, only the latest one, and drops
any that another chosen producer's record already implies.  What is left is waited on: a
record right after each such producer (shared by all its waits) and a wait right before the
consumer.  `func.return` (default stream) is treated as a consumer of the last op of every
stream, which joins all work before the function returns.

Physical event ids: records are numbered in issue order, first fit; a record may reuse an id
only when every wait on the id's previous event is ordered before it, so no wait can be
released by the newer record.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.ir import Operation

from npuir.analysis.happens_before import Clock, ClockSweep
from npuir.analysis.partition import Assignment
from npuir.analysis.program import NodeKind, Program

__all__ = [
    "EventPlan",
    "assign_event_ids",
    "lowered_program",
    "plan_events",
    "program_with_events",
    "with_assignment",
]


@dataclass
class EventPlan:
    """What the sweep decided for one function."""

    waits_before: dict[int, list[int]]
    """consumer node -> producer nodes whose records it waits on, in issue order."""
    recorded: list[int]
    """producer nodes that get a record, in issue order."""
    event_ids: dict[int, int]
    """producer node -> physical id of its record."""
    cross_deps: int
    """cross-stream dependencies found (the joins before return included)."""


def plan_events(prog: Program, assign_ids: bool = True) -> EventPlan:
    """The minimal waits for `prog` as assigned and ordered (see the module docstring).

    Without `assign_ids` the plan has no physical ids (a search that only
    times the result does not need them).
    """
    sweep = ClockSweep(len(prog.streams))
    clocks = sweep.clocks  # read and advanced in place below (`covers`, `op`), for speed
    position = [-1] * len(prog)
    after: dict[int, Clock] = {}
    published: dict[int, Clock] = {}
    last_on: dict[int, int] = {}
    waits_before: dict[int, list[int]] = {}
    needs_record: set[int] = set()
    cross_deps = 0
    streams, kinds, deps = prog.stream, prog.kind, prog.deps
    wait, record, ret, compute = NodeKind.WAIT, NodeKind.RECORD, NodeKind.RETURN, NodeKind.COMPUTE

    for n in range(len(prog)):
        s = streams[n]
        kind = kinds[n]
        if kind is wait:
            sweep.join(s, published[prog.event_of[n]])
            continue
        if kind is record:
            published[n] = list(clocks[s])
            continue
        producers = {p for p, _ in deps[n] if streams[p] != s}
        if kind is ret:
            producers.update(last for t, last in last_on.items() if t != s)
        clock = clocks[s]
        if producers:
            cross_deps += len(producers)
            latest: dict[int, int] = {}
            for p in producers:
                t = streams[p]
                if clock[t] > position[p]:
                    continue  # already finished before stream s goes on
                if t not in latest or position[p] > position[latest[t]]:
                    latest[t] = p
            if latest:
                candidates = list(latest.values())
                chosen = (
                    candidates
                    if len(candidates) == 1
                    else sorted(
                        p
                        for p in candidates
                        if not any(
                            q != p and after[q][streams[p]] > position[p] for q in candidates
                        )
                    )
                )
                for p in chosen:
                    sweep.join(s, after[p])
                    needs_record.add(p)
                if chosen:
                    waits_before[n] = chosen
        pos = clock[s]
        clock[s] = pos + 1
        position[n] = pos
        if kind is compute:
            last_on[s] = n
            after[n] = list(clock)
    recorded = sorted(needs_record)
    ids = assign_event_ids(prog, recorded, waits_before, position, after) if assign_ids else {}
    return EventPlan(waits_before, recorded, ids, cross_deps)


def assign_event_ids(
    prog: Program,
    recorded: list[int],
    waits_before: dict[int, list[int]],
    position: list[int],
    after: dict[int, Clock],
) -> dict[int, int]:
    """First-fit physical ids (see the module docstring)."""
    waiters: dict[int, list[int]] = {}
    for consumer, producers in waits_before.items():
        for p in producers:
            waiters.setdefault(p, []).append(consumer)
    base = 1 + max((i for i in prog.event_id if i >= 0), default=-1)
    holders: list[int] = []  # id - base -> producer whose record holds it now
    ids: dict[int, int] = {}
    for r in recorded:
        t, clock = prog.stream[r], after[r]
        for slot, holder in enumerate(holders):
            if all(_wait_done(prog, w, r, t, clock, position) for w in waiters[holder]):
                holders[slot] = r
                ids[r] = base + slot
                break
        else:
            ids[r] = base + len(holders)
            holders.append(r)
    return ids


def _wait_done(
    prog: Program, consumer: int, r: int, t: int, clock: Clock, position: list[int]
) -> bool:
    """Is the wait placed before `consumer` finished before the record after `r`?"""
    u = prog.stream[consumer]
    if u == t:
        return consumer <= r
    return clock[u] > position[consumer]


def with_assignment(prog: Program, assignment: Assignment) -> Program:
    """`prog` with its nodes on `assignment`'s streams (the same issue order)."""
    return dataclasses.replace(
        prog, stream=list(assignment.stream_of), streams=list(assignment.streams)
    )


def lowered_program(
    prog: Program, assignment: Assignment, plan: EventPlan | None = None
) -> tuple[Program, list[int]]:
    """The compact program `stream-partition` + `insert-events` would produce.

    Nodes keep their issue order; each cross-stream dependency gets the waits
    `plan_events` chooses, a record right after its producer and waits right
    before the consumer, exactly as the passes place them.  Also returns, per
    lowered node, the node of `prog` it comes from (-1 for records and waits).
    `plan` is `plan_events(with_assignment(prog, assignment), assign_ids=False)`
    when the caller has it already.
    """
    assigned = with_assignment(prog, assignment)
    if plan is None:
        plan = plan_events(assigned, assign_ids=False)
    return _with_sync_nodes(assigned, plan, lambda n: prog.ops[n], lambda n, _p: prog.ops[n])


def program_with_events(
    prog: Program,
    plan: EventPlan,
    records: dict[int, Operation],
    waits: dict[int, list[Operation]],
) -> Program:
    """The program graph of `prog`'s function once `insert-events` has written `plan` into
    it: `records[p]` is the `sync.record` placed right after node `p`, `waits[n]` the
    `sync.wait`s placed right before node `n` (in `plan.waits_before[n]`'s order).

    It is what `build_program` reads from the rewritten function -- the same nodes in the
    same issue order, the same dependencies, streams and event ids (a test compares the
    two on every example) -- made from what the pass already knows, so the passes after it
    and the runner share it through the analysis cache instead of reading the IR again.
    """
    out, origin = _with_sync_nodes(
        prog, plan, lambda p: records[p], lambda n, i: waits[n][i], plan.event_ids
    )
    out.pinned = [None] * len(out.ops)
    new_of = [-1] * (len(prog) + 1)
    for lowered, n in enumerate(origin):
        if n >= 0:
            new_of[n] = lowered
    new_of[len(prog)] = len(out.ops)
    out.wait_tensors = [(wait, None) for wait, _ in prog.wait_tensors]
    # A wait_tensor stands before node `at` and after its producer's record: before the
    # sync.waits placed in front of `at`.
    out.wait_positions = [
        new_of[at] - len(plan.waits_before.get(at, ())) for at in prog.wait_positions
    ]
    return out


def _with_sync_nodes(
    prog: Program,
    plan: EventPlan,
    record_op: Callable[[int], Operation],
    wait_op: Callable[[int, int], Operation],
    event_ids: dict[int, int] | None = None,
) -> tuple[Program, list[int]]:
    """`prog` (streams assigned) with `plan`'s records and waits as nodes, and per node
    the node of `prog` it comes from (-1 for records and waits).  `record_op(p)` is the op
    of the record after node `p`, `wait_op(n, i)` of the `i`-th wait before node `n`."""
    recorded = set(plan.recorded)
    out = Program(prog.func, streams=list(prog.streams))
    new_index: dict[int, int] = {}
    record_node: dict[int, int] = {}
    origin: list[int] = []
    # The node lists are appended to directly (a node is seven appends), for speed.
    ops, kinds, streams, deps = out.ops, out.kind, out.stream, out.deps
    event_of, event_id = out.event_of, out.event_id
    waits_before = plan.waits_before
    wait, record = NodeKind.WAIT, NodeKind.RECORD

    for n in range(len(prog)):
        s = prog.stream[n]
        for i, p in enumerate(waits_before.get(n, ())):
            ops.append(wait_op(n, i))
            kinds.append(wait)
            streams.append(s)
            deps.append([])
            event_of.append(record_node[p])
            event_id.append(-1)
            origin.append(-1)
        new_index[n] = len(ops)
        ops.append(prog.ops[n])
        kinds.append(prog.kind[n])
        streams.append(s)
        deps.append([(new_index[p], k) for p, k in prog.deps[n]])
        origin.append(n)
        if prog.event_of[n] >= 0:  # a record or wait the function already had
            event_of.append(new_index[prog.event_of[n]])
            event_id.append(prog.event_id[n])
        else:
            event_of.append(-1)
            event_id.append(-1)
        if n in recorded:
            r = len(ops)
            ops.append(record_op(n))
            kinds.append(record)
            streams.append(s)
            deps.append([])
            event_of.append(r)
            event_id.append(-1)
            origin.append(-1)
            if event_ids is not None:
                out.event_id[r] = event_ids[n]
            record_node[n] = r
    # `out.index` is derived when first read (`Program.index`): each op at its own node, as
    # `lowered_program` stands the producer's op in for its record and the consumer's for
    # its waits.
    return out, origin
