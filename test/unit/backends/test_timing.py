"""Time has one owner: a timing rule changed in `npuir.backends.npu.timing` alone moves the
simulator, the list schedule's plan and the lower bound together.

The rule changed here is the one the timing module's docstring names: an event wait that
also pays a launch.  Each check below fails if its consumer reads `Hardware.event_wait_ns`
(or adds the record and the wait itself) instead of asking `timing`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from xdsl.dialects.func import FuncOp

import npuir
from npuir.analysis.program import (
    NodeKind,
    Program,
    build_program,
    module_streams,
    scheduled_functions,
)
from npuir.backends.npu import timing
from npuir.backends.npu.hardware import Hardware, load_hardware
from npuir.backends.npu.simulator import NodeCosts, simulate
from npuir.schedule.bounds import program_bound
from npuir.schedule.list_schedule import list_schedule, upward_ranks

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from workloads import DagConfig, random_dag

TINY = load_hardware("tiny")
"""Launch 100 ns, record 10 ns, wait 20 ns: a wait that pays a launch costs 120 ns."""
B2 = load_hardware("910b2")
"""Where two exps of `BIG` can overlap (on `tiny` each saturates HBM, so the bound runs them
in series whatever the events cost)."""
BIG = "tensor<256x1024xf16>"
WEIGHT = "tensor<1024x1024xf16>"


@pytest.fixture
def wait_pays_a_launch(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The changed rule, made where a maintainer would make it: in `timing` only."""
    plain = timing.wait_cost

    def wait_cost(hw: Hardware) -> int:
        return plain(hw) + timing.launch_cost(hw)

    monkeypatch.setattr(timing, "wait_cost", wait_cost)
    for hw in (TINY, B2):
        assert timing.wait_cost(hw) != hw.event_wait_ns  # the rule really changed
    yield


def _program(text: str) -> Program:
    module = npuir.parse_text(npuir.make_context(), text)
    return build_program(next(op for op in module.ops if isinstance(op, FuncOp)))


def _lowered(text: str, mode: str) -> Program:
    """`text` partitioned by `mode`, with its core limits and events lowered."""
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, text)
    spec = (
        f"stream-partition{{mode={mode} ignore-tags=true max-streams=4}},"
        "coreset-lower,insert-events"
    )
    npuir.run_passes(ctx, module, npuir.build_pipeline(spec))
    return build_program(scheduled_functions(module)[0], module_streams(module))


def _fork_join() -> str:
    """A matmul and an independent exp, and an add of both: run side by side (on the cube
    and the vector cores), one of them is joined across streams."""
    return (
        f"func.func @g(%a: {BIG}, %w: {WEIGHT}, %b: {BIG}) -> {BIG} {{\n"
        f"  %x = npu.matmul %a, %w : ({BIG}, {WEIGHT}) -> {BIG}\n"
        f"  %y = npu.exp %b : ({BIG}) -> {BIG}\n"
        f"  %z = npu.add %x, %y : ({BIG}, {BIG}) -> {BIG}\n"
        f"  func.return %z : {BIG}\n}}\n"
    )


def _two_exps() -> str:
    """Two equal independent exps into the return (`test_bound`'s join example)."""
    return (
        f"func.func @g(%a: {BIG}, %b: {BIG}) -> ({BIG}, {BIG}) {{\n"
        f"  %x = npu.exp %a : ({BIG}) -> {BIG}\n"
        f"  %y = npu.exp %b : ({BIG}) -> {BIG}\n"
        f"  func.return %x, %y : {BIG}, {BIG}\n}}\n"
    )


def _small_graphs() -> list[str]:
    return [
        random_dag(seed, DagConfig(ops=ops, rows=64, cols=256)) for seed, ops in ((1, 6), (4, 9))
    ]


@pytest.mark.usefixtures("wait_pays_a_launch")
def test_the_simulator_charges_every_wait_what_timing_says() -> None:
    prog = _lowered(_fork_join(), "engine")
    result = simulate([prog], TINY)
    waits = [r for r in result.ops if prog.kind[r.node] is NodeKind.WAIT]
    assert waits, "the engine mode joins the two exps across streams"
    assert {r.end - r.start for r in waits} == {timing.wait_cost(TINY)}


@pytest.mark.usefixtures("wait_pays_a_launch")
def test_the_list_schedule_plans_every_join_across_streams_with_timings_event_cost() -> None:
    # A chain of two exps pinned to two streams: the second starts as soon as the plan
    # lets it, a record and a wait after the first's end.
    prog = _program(
        f"func.func @g(%a: {BIG}) -> {BIG} {{\n"
        f"  %x = npu.exp %a : ({BIG}) -> {BIG}\n"
        f"  %y = npu.exp %x : ({BIG}) -> {BIG}\n"
        f"  func.return %y : {BIG}\n}}\n"
    )
    pinned = ["a", "b", None]
    costs = NodeCosts(prog, TINY)
    rank = upward_ranks(prog, lambda n: costs.duration_ns(n, max(1, costs.want[n])))
    plan = list_schedule(prog, costs, rank, pinned, {"a": 0, "b": 0}, 4, TINY)
    stream = plan.assignment.stream_of
    assert stream[0] != stream[1]
    assert plan.start[1] == plan.end[0] + timing.event_cost(TINY)


@pytest.mark.usefixtures("wait_pays_a_launch")
def test_the_bound_charges_a_join_what_timing_says_and_stays_below_the_simulation() -> None:
    # Either one exp runs on another stream than the return (its join costs a record and a
    # wait) or both run on the default stream in series.
    bound = program_bound(_program(_two_exps()), B2)
    d = bound.critical_path_ns  # one exp at its shortest
    assert bound.joins_ns == d + min(timing.event_cost(B2), d)
    for text in (_two_exps(), _fork_join(), *_small_graphs()):
        bound_ns = program_bound(_program(text), TINY).ns
        for mode in ("single", "engine", "auto"):
            result = simulate([_lowered(text, mode)], TINY)
            assert result.deadlock is None and not result.races
            assert bound_ns <= result.makespan_ns, (mode, bound_ns, result.makespan_ns)
