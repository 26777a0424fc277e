"""Core limits chosen with the streams (`stream-partition{mode=auto limits=true}`): faster
with limits than without where a collective holds vector cores, never slower anywhere, seed
003's rules kept, and optimal against the exact solver on small graphs."""

from __future__ import annotations

import dataclasses
import itertools
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import ExactWithLimits, exact_schedule, exact_with_limits
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

import npuir
from npuir.analysis.partition import Assignment, permuted
from npuir.analysis.program import Program, build_program, module_streams, scheduled_functions
from npuir.backends.npu.hardware import load_hardware
from npuir.backends.npu.simulator import simulate
from npuir.dialects import coreset
from npuir.dialects.npu import CollectiveOp, NpuOp
from npuir.schedule.auto import INFEASIBLE, Judge, _issue_moves, assign_auto
from npuir.schedule.limits import LimitPolicy, LimitSpace, grid, policies

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from workloads import DagConfig, random_dag

HW = load_hardware("910b2")
A = "tensor<2048x1024xf16>"

# The issue's case: an aiv all_reduce beside a chain of vector ops.  Unlimited, the
# collective holds every vector core it asks for (all 48) for its whole link time, so the
# chain waits for it; limited, the chain runs beside it.
AIV_CASE = f"""
module attributes {{npu.target = "910b2"}} {{
  func.func @f(%x: {A}, %y: {A}) -> ({A}, {A}) {{
    %r = npu.all_reduce %x {{group_size = 8 : i64, group = "tp", mode = "aiv"}} : ({A}) -> {A}
    %v1 = npu.gelu %y : ({A}) -> {A}
    %v2 = npu.silu %v1 : ({A}) -> {A}
    %v3 = npu.mul %v2, %v1 : ({A}, {A}) -> {A}
    %v4 = npu.add %v3, %r : ({A}, {A}) -> {A}
    func.return %v4, %v3 : {A}, {A}
  }}
}}
"""


def _lowered(text: str, limits: bool) -> ModuleOp:
    """`text` partitioned by auto and lowered; `coreset-check` refuses a broken pair rule."""
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, text)
    flag = "true" if limits else "false"
    spec = (
        f"stream-partition{{mode=auto ignore-tags=true limits={flag}}},"
        "coreset-lower,insert-events,coreset-check,sync-verify"
    )
    npuir.run_passes(ctx, module, npuir.build_pipeline(spec))
    return module


def _makespan(module: ModuleOp) -> int:
    streams = module_streams(module)
    total = 0
    for func in scheduled_functions(module):
        result = simulate([build_program(func, streams)], HW, mirror_peers=True)
        assert result.deadlock is None
        total += result.makespan_ns
    return total


def _prog(text: str) -> Program:
    module = npuir.parse_text(npuir.make_context(), text)
    return build_program(next(op for op in module.ops if isinstance(op, FuncOp)))


def _judged(prog: Program, assignment: Assignment) -> int:
    """What the judge gives `assignment` with the limits it carries (`INFEASIBLE` with a
    hold-and-wait hazard, as the oracle judges it: `stream-partition` would not keep it)."""
    chosen = {prog.ops[n]: (engine, count) for n, engine, count in assignment.limits}

    def limit(p: Program, n: int, engine: str) -> int | None:
        given = chosen.get(p.ops[n])
        return given[1] if given is not None and given[0] == engine else None

    if assignment.order is None:
        return Judge(prog, HW, limit, refuse_hazards=True)("t", assignment).makespan
    order = assignment.order
    moved = Assignment(assignment.streams, [assignment.stream_of[n] for n in order])
    return Judge(permuted(prog, order), HW, limit, refuse_hazards=True)("t", moved).makespan


def test_limiting_an_aiv_collective_makes_auto_faster() -> None:
    with_limits = _lowered(AIV_CASE, limits=True)
    without = _lowered(AIV_CASE, limits=False)
    assert _makespan(with_limits) < _makespan(without)
    # The limit is written where the user sees it: a scope around the collective.
    ctx = npuir.make_context()
    partitioned = npuir.parse_text(ctx, AIV_CASE)
    spec = "stream-partition{mode=auto limits=true}"
    npuir.run_passes(ctx, partitioned, npuir.build_pipeline(spec))
    (scope,) = [
        op
        for op in partitioned.walk()
        if isinstance(op, coreset.LimitOp)
        and any(isinstance(o, CollectiveOp) for o in op.body.walk())
    ]
    assert scope.count("vector") in grid(HW, "vector")


def test_limits_leave_a_program_without_holders_alone() -> None:
    sdma = AIV_CASE.replace('mode = "aiv"', 'mode = "sdma"')
    assert policies(_prog(sdma), HW) == []
    module = _lowered(sdma, limits=True)
    assert not any(isinstance(op, coreset.LimitOp) for op in module.walk())


def test_limits_act_only_where_the_kernel_table_lets_them() -> None:
    # An ATB kernel takes no limit: it is never limited, and it counts the whole vector
    # engine in the pair rule, so no plan may limit a stream beside it.
    atb = AIV_CASE.replace(
        f"%v1 = npu.gelu %y : ({A}) -> {A}",
        f'%v1 = npu.gelu %y {{npu.kernel = "atb"}} : ({A}) -> {A}',
    )
    prog = _prog(atb)
    space = LimitSpace.of(prog, HW)
    gelu = next(op for op in prog.ops if isinstance(op, NpuOp) and op.name == "npu.gelu")
    assert gelu not in space.free["vector"]
    module = _lowered(atb, limits=True)
    for op in module.walk():
        if isinstance(op, coreset.LimitOp):
            assert not any(o.name == "npu.gelu" for o in op.body.walk())


def test_a_policy_fits_every_pair_of_streams() -> None:
    prog = _prog(
        random_dag(3, DagConfig(ops=6, rows=256, cols=512, comm_rate=0.3, comm_mode="aiv"))
    )
    tried = policies(prog, HW)
    assert tried
    total = HW.cores("vector")
    for policy in tried:
        for stream_of in (
            [0] * len(prog),
            list(range(len(prog))),
            [n % 3 for n in range(len(prog))],
        ):
            counts = policy.limits(prog, stream_of)
            assert counts is not None
            most: dict[int, int] = {}
            for n, op in enumerate(prog.ops):
                if op in counts:
                    most[stream_of[n]] = max(most.get(stream_of[n], 0), counts[op])
            assert all(a + b <= total for s, a in most.items() for t, b in most.items() if s < t)


def test_a_user_limit_that_breaks_the_pair_rule_refuses_the_plan() -> None:
    limited = AIV_CASE.replace(
        f"%v1 = npu.gelu %y : ({A}) -> {A}",
        f"%v1 = coreset.limit vector 40 -> {A} {{\n"
        f"      %g = npu.gelu %y : ({A}) -> {A}\n      coreset.yield %g : {A}\n    }}",
    )
    prog = _prog(limited)
    collective = next(op for op in prog.ops if isinstance(op, CollectiveOp))
    space = LimitSpace.of(prog, HW)
    policy = LimitPolicy("vector", frozenset([collective]), 24, space)
    stream_of = [0] * len(prog)
    stream_of[prog.ops.index(collective)] = 1
    assert policy.limits(prog, stream_of) is None  # 24 + 40 > 48
    fitting = LimitPolicy("vector", frozenset([collective]), 6, space)
    assert fitting.limits(prog, stream_of) is not None  # 6 + 40 <= 48


@pytest.mark.slow
@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**31), ops=st.integers(2, 10), sync=st.sampled_from([0.0, 0.3]))
def test_limits_are_never_slower_and_keep_the_rules(seed: int, ops: int, sync: float) -> None:
    cfg = DagConfig(ops=ops, rows=256, cols=512, comm_rate=0.3, comm_mode="aiv", sync_rate=sync)
    text = random_dag(seed, cfg)
    with_limits = _lowered(text, limits=True)  # coreset-check: the pair rule holds
    assert _makespan(with_limits) <= _makespan(_lowered(text, limits=False))
    # Every group's collectives stay in their written order.
    written = [
        o.results[0].name_hint
        for o in npuir.parse_text(npuir.make_context(), text).walk()
        if isinstance(o, CollectiveOp)
    ]
    for group in ("tp", "ep"):
        issued = [
            op.results[0].name_hint
            for op in with_limits.walk()
            if isinstance(op, CollectiveOp) and op.group == group
        ]
        assert issued == sorted(issued, key=lambda n: written.index(n) if n in written else 0)


@pytest.mark.slow
def test_auto_with_limits_is_near_optimal_on_small_graphs() -> None:
    # The issue's target, on a few 4-op graphs: within 1% of the optimum over streams,
    # order and limits on every graph, exactly optimal on most.
    exact = paid = 0
    for seed in (0, 1, 2, 5):
        cfg = DagConfig(ops=4, rows=256, cols=512, comm_rate=0.3, comm_mode="aiv")
        prog = _prog(random_dag(seed, cfg))
        best = exact_with_limits(prog, HW)
        unlimited = exact_schedule(prog, HW).makespan
        assert best.exact.makespan <= unlimited
        paid += best.exact.makespan < unlimited
        auto = assign_auto(prog, [None] * len(prog), {}, 8, HW, search_limits=True)
        span = _judged(prog, auto)
        assert best.exact.makespan <= span <= 1.01 * best.exact.makespan, seed
        exact += span == best.exact.makespan
    assert exact >= 3
    assert paid >= 2  # not vacuous: on these graphs the optimum needs limits


@pytest.mark.oracle
@pytest.mark.parametrize(
    ("ops", "seed"),
    [(5, 501), (5, 503), (6, 601), (6, 604), (6, 605), (6, 656), (7, 753), (8, 851)],
)
def test_auto_with_limits_meets_the_optimum_on_bench_graphs(ops: int, seed: int) -> None:
    """Graphs of `bench/run.py oracle --limits` (aiv collectives; on odd seeds a quarter of
    the ops full_core_sync) whose optimum needs limits: auto with limits finds it.  From the
    set of `--first 50`, each missed at some stage of auto's polish: seed 656 needs two moves
    at once where the polish is stuck (another stream made the default one, then one op
    moved), 753 was missed before refused moves were issued elsewhere, 851 needs the descent
    that takes the first move that pays (the one taking the best move misses it)."""
    sync = 0.25 if seed % 2 else 0.0
    cfg = DagConfig(ops=ops, rows=256, cols=512, comm_rate=0.3, comm_mode="aiv", sync_rate=sync)
    prog = _prog(random_dag(seed, cfg))
    best = exact_with_limits(prog, HW)
    assert best.policy is not None  # not vacuous: the optimum needs limits
    auto = assign_auto(prog, [None] * len(prog), {}, 8, HW, search_limits=True)
    assert auto.limits
    assert _judged(prog, auto) == best.exact.makespan


@pytest.mark.slow
def test_a_move_refused_as_issued_is_tried_in_another_issue_order() -> None:
    """Seed 703 of `bench/run.py oracle --limits` (7 ops, aiv collectives, full_core_sync
    matmuls): the optimum's streams are hazard-free only in its own issue order (its
    all_to_all, limited to an eighth beside a full_core_sync matmul, issued before the
    matmul, which then waits for the collective's producer on the other stream); issued
    as written, a hold-and-wait hazard refuses them.  Auto's polish issues the op of a
    refused move elsewhere, and finds the optimum."""
    cfg = DagConfig(ops=7, rows=256, cols=512, comm_rate=0.3, comm_mode="aiv", sync_rate=0.25)
    prog = _prog(random_dag(703, cfg))
    best = exact_with_limits(prog, HW)
    plan = _with_plan(prog, best)
    assert plan.order is not None
    # Not vacuous: the same streams and limits issued as written are refused.
    assert _judged(prog, dataclasses.replace(plan, order=None)) == INFEASIBLE
    auto = assign_auto(prog, [None] * len(prog), {}, 8, HW, search_limits=True)
    assert _judged(prog, auto) == best.exact.makespan


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31), ops=st.integers(2, 9))
def test_an_issue_move_takes_what_the_op_needs_along(seed: int, ops: int) -> None:
    """Each order `_issue_moves` gives is topological, keeps the collectives' written order
    and is new; the earliest one issues the op right after its last producer, with only what
    it needs (its producers, the collectives before it and theirs) moved ahead of it."""
    cfg = DagConfig(ops=ops, rows=64, cols=64, comm_rate=0.4, comm_mode="aiv")
    prog = _prog(random_dag(seed, cfg))
    written = list(range(len(prog)))
    colls = [n for n, op in enumerate(prog.ops) if isinstance(op, CollectiveOp)]
    earlier = {b: a for a, b in itertools.pairwise(colls)}
    for n in range(len(prog) - 1):
        seen = {tuple(written)}
        orders = [o if o is not None else written for o in _issue_moves(prog, written, n, seen)]
        assert len({tuple(o) for o in orders}) == len(orders)
        for order in orders:
            position = {m: i for i, m in enumerate(order)}
            assert sorted(order) == written and order[-1] == written[-1]
            assert all(position[p] < position[m] for m in written for p, _ in prog.deps[m])
            assert [m for m in order if m in colls] == colls
        needs: set[int] = set()
        stack = [n]
        while stack:
            m = stack.pop()
            for p in [p for p, _ in prog.deps[m]] + ([earlier[m]] if m in earlier else []):
                if p not in needs:
                    needs.add(p)
                    stack.append(p)
        low = max((p + 1 for p, _ in prog.deps[n]), default=0)
        first = written[:low] + sorted(needs - set(written[:low])) + [n]
        if tuple(first) != tuple(written[: len(first)]):
            assert orders and orders[0][: len(first)] == first


@pytest.mark.oracle
@pytest.mark.parametrize(
    ("seed", "sync"), [(1, 0.0), (5, 0.0), (0, 0.4), (1, 0.4), (4, 0.4), (7, 0.4)]
)
def test_one_search_over_the_grid_finds_the_optimum_of_a_search_per_policy(
    seed: int, sync: float
) -> None:
    """`exact_with_limits` searches the labellings and orders once, each schedule judged
    under the distinct plans its labelling gives; the optimum is that of one exact search
    per policy (and one without), on 4-op graphs with aiv collectives and, with `sync`,
    full_core_sync ops."""
    cfg = DagConfig(ops=4, rows=256, cols=512, comm_rate=0.3, comm_mode="aiv", sync_rate=sync)
    prog = _prog(random_dag(seed, cfg))
    tried = policies(prog, HW)
    assert tried  # not vacuous: some op holds cores while it waits
    each = [exact_schedule(prog, HW).makespan]
    each += [exact_schedule(prog, HW, policy=policy).makespan for policy in tried]
    found = exact_with_limits(prog, HW)
    assert found.exact.makespan == min(each)
    assert found.policies == len(tried)
    if found.policy is not None:  # the optimum needs its limits
        assert found.exact.makespan < each[0]
        assert _judged(prog, _with_plan(prog, found)) == found.exact.makespan


def _with_plan(prog: Program, found: ExactWithLimits) -> Assignment:
    """The oracle's optimum with the limits its policy gives it, as `assign_auto` writes them."""
    assert found.policy is not None
    assignment = found.exact.assignment
    counts = found.policy.limits(prog, assignment.stream_of)
    assert counts is not None
    index = {op: n for n, op in enumerate(prog.ops)}
    written = tuple(sorted((index[op], found.policy.engine, c) for op, c in counts.items()))
    return Assignment(assignment.streams, assignment.stream_of, assignment.order, written)
