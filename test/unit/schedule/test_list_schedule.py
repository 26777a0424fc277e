"""The resource-aware list schedule behind one of auto's candidates."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from randgraph import random_annotated_graph
from xdsl.dialects.func import FuncOp

import npuir
from npuir.analysis.partition import pinned_tags
from npuir.analysis.program import NodeKind, Program, build_program
from npuir.backends.npu.hardware import load_hardware
from npuir.backends.npu.simulator import NodeCosts
from npuir.schedule.auto import Judge
from npuir.schedule.list_schedule import TimedSchedule, list_schedule, upward_ranks

TINY = load_hardware("tiny")
"""2 cube cores at 1 FLOP/ns: a 64x64x64 f16 matmul has 4 tiles (takes both cores, 262144 ns
on two, 524288 on one); a 32xKx32 matmul has one tile (one core, 2*32*K*32 ns)."""


def _program(body: str, args: str) -> Program:
    text = f"func.func @f({args}) {{\n{body}\n  func.return\n}}"
    module = npuir.parse_text(npuir.make_context(), text)
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    return build_program(func)


def _thin_and_square(k: int) -> Program:
    """%thin: one-core matmul (2*32*k*32 FLOPs); %sq: independent two-core matmul."""
    return _program(
        f"  %thin = npu.matmul %x, %w : (tensor<32x{k}xf16>, tensor<{k}x32xf16>) -> "
        "tensor<32x32xf16>\n"
        "  %sq = npu.matmul %y, %v : (tensor<64x64xf16>, tensor<64x64xf16>) -> "
        "tensor<64x64xf16>",
        f"%x: tensor<32x{k}xf16>, %w: tensor<{k}x32xf16>, "
        "%y: tensor<64x64xf16>, %v: tensor<64x64xf16>",
    )


def _plan(prog: Program, priority: list[int], max_streams: int = 8) -> TimedSchedule:
    none: list[str | None] = [None] * len(prog)
    return list_schedule(prog, NodeCosts(prog, TINY), priority, none, {}, max_streams, TINY)


def _simulated(prog: Program, timed: TimedSchedule) -> int:
    """The judge's makespan of the plan's streams, in the plan's issue order."""
    from npuir.analysis.partition import Assignment, permuted

    order = timed.assignment.order
    assert order is not None
    in_order = Assignment(timed.assignment.streams, [timed.assignment.stream_of[n] for n in order])
    return Judge(permuted(prog, order), TINY, None)("list", in_order).makespan


def test_a_matmul_waits_for_the_whole_cube_when_that_finishes_it_sooner() -> None:
    """%thin holds one of the two cube cores for 131 us.  Started beside it, %sq would run
    on the other core alone for 524 us; after it, on both for 262 us.  The plan runs them
    one after the other, on one stream, so that the simulator cannot start %sq early on
    the free core either: the simulated makespan is the planned one."""
    prog = _thin_and_square(64)
    thin, sq = 0, 1
    timed = _plan(prog, [2, 1, 0])  # %thin first
    assert timed.cores[sq] == 2
    assert timed.start[sq] == timed.end[thin]
    assert timed.assignment.stream_of[sq] == timed.assignment.stream_of[thin]
    launch = TINY.launch_ns
    assert timed.makespan == (launch + 2 * 32 * 64 * 32) + (launch + 262144)
    assert _simulated(prog, timed) == timed.makespan


def test_a_matmul_takes_the_free_cores_when_waiting_would_finish_it_later() -> None:
    """With %thin holding its core for 2.1 ms, %sq finishes sooner on the one free core:
    the two run side by side, and the return waits for the second stream (whose record ran
    long before)."""
    prog = _thin_and_square(1024)
    thin, sq = 0, 1
    timed = _plan(prog, [2, 1, 0])
    assert (timed.start[sq], timed.cores[sq]) == (0, 1)
    assert timed.assignment.stream_of[sq] != timed.assignment.stream_of[thin]
    assert _simulated(prog, timed) == timed.makespan + TINY.event_wait_ns


def _check_plan(prog: Program, timed: TimedSchedule, pinned: list[str | None], cap: int) -> None:
    assignment = timed.assignment
    order = assignment.order
    assert order is not None and sorted(order) == list(range(len(prog)))
    assert prog.kind[order[-1]] is NodeKind.RETURN
    position = {n: i for i, n in enumerate(order)}
    for n, deps in enumerate(prog.deps):
        for p, _ in deps:
            assert position[p] < position[n]
            if prog.kind[n] is not NodeKind.RETURN:
                assert timed.start[n] >= timed.end[p]
    used = {assignment.stream_of[n] for n in range(len(prog))}
    assert len(used) <= cap
    for n, tag in enumerate(pinned):
        if tag is not None:
            assert assignment.streams[assignment.stream_of[n]].tag == tag


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    num_ops=st.integers(1, 30),
    num_tags=st.integers(0, 2),
    cap=st.integers(1, 5),
)
def test_the_plan_is_a_topological_order_on_at_most_the_cap_of_streams(
    seed: int, num_ops: int, num_tags: int, cap: int
) -> None:
    """Ops start after their producers end, the issue order is the start order (the return
    last), at most `max_streams` streams are used, and pinned ops keep their tag's stream."""
    text = random_annotated_graph(seed, num_ops, num_tags=num_tags, wait_tensor_rate=0.2)
    module = npuir.parse_text(npuir.make_context(), text)
    prog = build_program(next(op for op in module.ops if isinstance(op, FuncOp)))
    pinned, priorities = pinned_tags(prog)
    cap = max(cap, len({t for t in pinned if t is not None}) + 1)
    costs = NodeCosts(prog, TINY)
    rank = upward_ranks(prog, lambda n: costs.duration_ns(n, costs.want[n]))
    for keep_pool in (False, True):
        timed = list_schedule(prog, costs, rank, pinned, priorities, cap, TINY, (), keep_pool)
        _check_plan(prog, timed, pinned, cap)
