"""The exact small-graph solver, and `auto` tested against it: a regression shows as "not
optimal" on a generated graph."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest
from oracle import _labellings, _Search, exact_schedule, topological_orders
from xdsl.dialects.func import FuncOp

import npuir
from npuir.analysis.events import plan_events, with_assignment
from npuir.analysis.partition import (
    Assignment,
    assign,
    keep_collective_order,
    permuted,
    with_collective_chain,
)
from npuir.analysis.program import NodeKind, Program, StreamInfo, build_program
from npuir.backends.npu.hardware import load_hardware
from npuir.backends.npu.simulator import POOL_ENGINES, NodeCosts
from npuir.dialects.npu import CollectiveOp
from npuir.dialects.stream import MAIN_TAG
from npuir.schedule.auto import BASELINES, Judge, assign_auto
from npuir.schedule.bounds import program_bound

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from workloads import DagConfig, random_dag

HW = load_hardware("910b2")
TY = "tensor<256x512xf16>"


def _prog(text: str) -> Program:
    module = npuir.parse_text(npuir.make_context(), text)
    return build_program(next(op for op in module.ops if isinstance(op, FuncOp)))


def _span(prog: Program, assignment: Assignment) -> int:
    if assignment.order is None:
        return Judge(prog, HW, None)("t", assignment).makespan
    order = assignment.order
    moved = Assignment(assignment.streams, [assignment.stream_of[n] for n in order])
    return Judge(permuted(prog, order), HW, None)("t", moved).makespan


def _bell(n: int) -> int:
    row = [1]
    for _ in range(n):
        nxt = [row[-1]]
        for x in row:
            nxt.append(nxt[-1] + x)
        row = nxt
    return row[0]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_labellings_are_the_partitions_with_a_marked_default_each_once(n: int) -> None:
    # A partition of n ops plus a marked default stream is a partition of n + 1 elements.
    labellings = [tuple(x) for x in _labellings([True] * n, [0] * n, max_streams=n + 1)]
    assert len(labellings) == len(set(labellings)) == _bell(n + 1)


def test_max_streams_caps_the_labels() -> None:
    assert all(max(x) <= 1 for x in _labellings([True] * 4, [0] * 4, max_streams=2))


def test_topological_orders_of_a_diamond() -> None:
    prog = _prog(
        f"func.func @g(%a: {TY}) -> {TY} {{\n"
        f"  %b = npu.relu %a : ({TY}) -> {TY}\n"
        f"  %c = npu.exp %b : ({TY}) -> {TY}\n"
        f"  %d = npu.neg %b : ({TY}) -> {TY}\n"
        f"  %e = npu.add %c, %d : ({TY}, {TY}) -> {TY}\n"
        f"  func.return %e : {TY}\n}}\n"
    )
    orders = list(topological_orders(prog))
    assert sorted(orders) == [[0, 1, 2, 3, 4], [0, 2, 1, 3, 4]]
    assert all(prog.kind[o[-1]] is NodeKind.RETURN for o in orders)


def test_the_solver_refuses_big_graphs() -> None:
    with pytest.raises(ValueError, match="at most"):
        exact_schedule(_prog(random_dag(0, DagConfig(ops=9, rows=256, cols=512))), HW)


@pytest.mark.oracle
@pytest.mark.parametrize("ops", [3, 4])
@pytest.mark.parametrize("seed", range(6))
def test_auto_is_optimal_on_small_graphs_and_no_mode_beats_the_optimum(ops: int, seed: int) -> None:
    # ops=4, seed=5: the optimum needs another default stream *and* another issue order.
    prog = _prog(random_dag(seed, DagConfig(ops=ops, rows=256, cols=512)))
    exact = exact_schedule(prog, HW)
    # The optimum is a schedule: simulated again it gives its makespan.
    assert _span(prog, exact.assignment) == exact.makespan
    pinned: list[str | None] = [None] * len(prog)
    for mode in BASELINES:
        assert exact.makespan <= _span(prog, assign(mode, prog, pinned, {}, 8))
    assert _span(prog, assign_auto(prog, pinned, {}, 8, HW)) == exact.makespan


@pytest.mark.oracle
@pytest.mark.parametrize("seed", range(4))
def test_the_lower_bound_never_exceeds_the_optimum(seed: int) -> None:
    # The optimum is the least makespan over every order and assignment: the bound's claim.
    prog = _prog(random_dag(seed, DagConfig(ops=4, rows=256, cols=512)))
    assert program_bound(prog, HW).ns <= exact_schedule(prog, HW).makespan


def _waits(prog: Program, order: list[int], labels: list[int]) -> tuple[tuple[int, ...], ...]:
    """Per node (in node order), the producers whose records `plan_events` makes it wait on,
    in the order of its waits, for `prog` issued in `order` on the streams of `labels`."""
    issued = with_collective_chain(permuted(prog, order))
    streams = [StreamInfo(f"s{s}", f"x{s}", 0) for s in range(max(labels) + 1)]
    plan = plan_events(with_assignment(issued, Assignment(streams, [labels[v] for v in order])))
    waits: list[tuple[int, ...]] = [()] * len(prog)
    for consumer, producers in plan.waits_before.items():
        waits[order[consumer]] = tuple(order[p] for p in producers)
    return tuple(waits)


Key = tuple[object, ...]


def _class_key(
    prog: Program, pool: list[int], order: list[int], labels: list[int], which: int
) -> Key:
    """What tells a schedule's simulation apart (`_classes`)."""
    streams = tuple(tuple(v for v in order if labels[v] == s) for s in range(max(labels) + 1))
    pools = tuple(tuple(v for v in order if pool[v] == p) for p in sorted(set(pool)))
    return (tuple(labels), streams, pools, _waits(prog, order, labels), which)


def _classes(prog: Program, priorities: bool = False) -> set[Key]:
    """Schedules that may simulate differently, by brute force: every order keeping the
    collectives' order and every labelling, told apart by the stream of each op, the
    sequence on each stream, the order of each core pool's ops (the collectives and
    ops without a pool as one more pool) and the order of the waits before each op; with
    `priorities`, also by which stream is auto's background one, where that stream has an
    op that may wait for cores beside another stream's (ops of one pool, on distinct
    streams and on no common path, that together want more than the pool's cores)."""
    costs = NodeCosts(prog, HW)
    pool = list(costs.pool)
    n = len(prog)

    def below(a: int, b: int) -> bool:  # a path from a to b (the collectives chained)
        return a == b or any(below(a, p) for p, _ in with_collective_chain(prog).deps[b])

    crowds = [
        crowd
        for size in range(2, n + 1)
        for crowd in itertools.combinations(range(n), size)
        if len({pool[v] for v in crowd}) == 1
        and pool[crowd[0]] >= 0
        and sum(costs.want[v] for v in crowd) > HW.cores(POOL_ENGINES[pool[crowd[0]]])
        and not any(below(a, b) for a, b in itertools.combinations(crowd, 2))
    ]
    movable = [prog.kind[v] is NodeKind.COMPUTE for v in range(n)]
    labellings = [list(x) for x in _labellings(movable, [0] * n, 8)]
    keys = set()
    for order in topological_orders(prog):
        if keep_collective_order(prog, order) != order:
            continue
        for labels in labellings:
            behind = {0}  # 0: no background stream
            if priorities:
                for crowd in crowds:
                    if len({labels[v] for v in crowd}) == len(crowd):
                        behind |= {labels[v] for v in crowd}
            for which in behind:
                keys.add(_class_key(prog, pool, order, labels, which))
    return keys


class _Recording(_Search):
    """The search, recording the class key of every schedule it simulates."""

    keys: list[Key]

    def _judge(self, order: list[int], labels: list[int]) -> None:
        count = max(labels) + 1
        choices = self.choices if len(self.choices[0]) == count else [[0] * count]
        for levels in choices:
            which = next((s for s, level in enumerate(levels) if level), 0)
            self.keys.append(_class_key(self.prog, self.pool, order, labels, which))
        super()._judge(order, labels)


@pytest.mark.oracle
@pytest.mark.parametrize("priorities", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_without_the_bound_every_class_of_schedules_is_simulated(
    seed: int, priorities: bool
) -> None:
    # With priorities, wide ops: some of them crowd a pool, so the choices count.  A class
    # may be simulated more than once (two ops a third stream's node may wait on together
    # keep their order even where it waits on one), never one left out or one outside.
    wide = DagConfig(ops=4, rows=256, cols=2048, cube_rate=0.5)
    prog = _prog(random_dag(seed, wide if priorities else DagConfig(ops=4, rows=256, cols=512)))
    _Recording.keys = []
    search = _Recording(prog, HW, 8, None, prune=False, priorities=priorities)
    assert search.crowds or not priorities
    search.run()
    # One more: the first schedule judged, every op on the default stream as written.
    judged = _Recording.keys[1:]
    assert search.schedules == len(judged) + 1
    assert set(judged) == _classes(prog, priorities)
    assert len(judged) <= 2 * len(set(judged))


@pytest.mark.oracle
@pytest.mark.parametrize("seed", range(3))
def test_the_bound_cuts_no_optimum(seed: int) -> None:
    prog = _prog(random_dag(seed, DagConfig(ops=5, rows=256, cols=512)))
    everything = _Search(prog, HW, 8, None, prune=False)
    everything.run()
    exact = exact_schedule(prog, HW)
    assert exact.makespan == everything.best_span
    assert exact.schedules < everything.schedules


@pytest.mark.oracle
@pytest.mark.parametrize("ops", [7, 8])
def test_auto_is_optimal_on_seven_and_eight_ops(ops: int) -> None:
    prog = _prog(random_dag(3, DagConfig(ops=ops, rows=256, cols=512)))
    assert any(isinstance(op, CollectiveOp) for op in prog.ops)
    exact = exact_schedule(prog, HW)
    assert _span(prog, exact.assignment) == exact.makespan
    assert _span(prog, assign_auto(prog, [None] * len(prog), {}, 8, HW)) == exact.makespan


@pytest.mark.oracle
@pytest.mark.parametrize("seed", range(3))
def test_every_bound_is_below_the_simulated_makespan(seed: int) -> None:
    # Every order and labelling of a small graph with a collective: the partial bound after
    # each op placed and the whole schedule's floor never exceed what the simulator gives.
    prog = _prog(random_dag(seed, DagConfig(ops=4, rows=256, cols=512, comm_rate=0.5)))
    search = _Search(prog, HW, 8, None, prune=False)
    movable = [prog.kind[v] is NodeKind.COMPUTE for v in range(len(prog))]
    checked = 0
    for order in topological_orders(prog):
        if keep_collective_order(prog, order) != order:
            continue
        for labels in _labellings(movable, [0] * len(prog), 8):
            tail = search._tails(labels)
            state = search._state(labels)
            bounds = [search._bound(labels, tail, state)]
            for v in order:
                state.place(v)
                bounds.append(search._bound(labels, tail, state))
            streams = [
                StreamInfo(f"s{s}", MAIN_TAG if s == 0 else f"x{s}", 0)
                for s in range(max(labels) + 1)
            ]
            span = _span(prog, Assignment(streams, list(labels), list(order)))
            assert max(bounds) <= span and state.floor(order) <= span
            checked += 1
    assert checked > 50


@pytest.mark.oracle
@pytest.mark.parametrize("seed", range(3))
def test_a_start_cuts_no_optimum(seed: int) -> None:
    # auto's schedule as the start: the answer is still the plain enumeration's optimum.
    prog = _prog(random_dag(seed, DagConfig(ops=4, rows=256, cols=512)))
    everything = _Search(prog, HW, 8, None, prune=False)
    everything.run()
    start = assign_auto(prog, [None] * len(prog), {}, 8, HW)
    exact = exact_schedule(prog, HW, start=start)
    assert exact.makespan == everything.best_span
    assert not exact.start_outside
    assert _span(prog, exact.assignment) == exact.makespan


@pytest.mark.oracle
def test_a_start_outside_the_space_is_not_the_answer() -> None:
    # One stream allowed, but the start uses several and beats every one-stream schedule:
    # the search runs again without it and answers with a one-stream schedule.
    prog = _prog(random_dag(1, DagConfig(ops=5, rows=256, cols=512)))
    free = exact_schedule(prog, HW)
    one = _Search(prog, HW, 1, None, prune=False)
    one.run()
    assert free.makespan < one.best_span  # the graph has parallelism worth a stream
    found = exact_schedule(prog, HW, max_streams=1, start=free.assignment)
    assert found.start_outside
    assert found.makespan == one.best_span
    assert len(found.assignment.streams) == 1
