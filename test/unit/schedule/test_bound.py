"""The schedule lower bound: never above a simulated makespan, and tighter than it was."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from randgraph import random_annotated_graph
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

import npuir
from npuir.analysis.program import build_program, module_streams, scheduled_functions
from npuir.backends.npu.hardware import load_hardware
from npuir.backends.npu.simulator import simulate
from npuir.schedule.bounds import program_bound as lower_bound

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from workloads import DagConfig, random_dag

HW = load_hardware("910b2")
MODES = ("single", "engine", "minidag:weighted", "opara", "auto")
"""Schedules from one stream to the searched one, in written and in new issue orders."""


def _func(module: ModuleOp) -> FuncOp:
    return next(op for op in module.ops if isinstance(op, FuncOp))


def _makespans(text: str, max_streams: int) -> tuple[float, list[int]]:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, text)
    bound = lower_bound(build_program(_func(module)), HW).ns
    spans: list[int] = []
    for name in MODES:
        mode, _, variant = name.partition(":")
        lowered = module.clone()
        spec = (
            f"stream-partition{{mode={mode} variant={variant or 'loadbalance'} "
            f"ignore-tags=true max-streams={max_streams}}},coreset-lower,insert-events"
        )
        npuir.run_passes(ctx, lowered, npuir.build_pipeline(spec))
        streams = module_streams(lowered)
        # One rank of an SPMD program: its collectives' peers are taken as mirrors of it.
        program = build_program(scheduled_functions(lowered)[0], streams)
        result = simulate([program], HW, mirror_peers=True)
        assert result.deadlock is None and not result.races
        spans.append(result.makespan_ns)
    return bound, spans


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31), ops=st.integers(2, 30), cap=st.integers(1, 8))
def test_the_bound_never_exceeds_a_simulated_makespan_of_cube_vector_comm_graphs(
    seed: int, ops: int, cap: int
) -> None:
    text = random_dag(seed, DagConfig(ops=ops, rows=256, cols=512))
    bound, spans = _makespans(text, cap)
    assert bound <= min(spans), (bound, spans)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31), ops=st.integers(1, 25))
def test_the_bound_never_exceeds_a_simulated_makespan_of_vector_graphs(seed: int, ops: int) -> None:
    text = random_annotated_graph(seed, ops, num_tags=2, wait_tensor_rate=0.2)
    bound, spans = _makespans(text, 8)
    assert bound <= min(spans), (bound, spans)


def test_the_window_term_counts_the_path_before_and_after_the_wide_part() -> None:
    """A vector prologue, eight independent matmuls, a vector epilogue: the cube work can
    neither start before the prologue nor end after the epilogue starts, so the bound is
    prologue + cube work + epilogue, above both the critical path and the cube work."""
    t = "tensor<2048x2048xf16>"
    body = [f"  %p = npu.exp %x : ({t}) -> {t}"]
    body += [f"  %m{i} = npu.matmul %p, %w : ({t}, {t}) -> {t}" for i in range(8)]
    acc = "%m0"
    for i in range(1, 8):
        body.append(f"  %a{i} = npu.add {acc}, %m{i} : ({t}, {t}) -> {t}")
        acc = f"%a{i}"
    text = "\n".join(
        [f"func.func @f(%x: {t}, %w: {t}) -> {t} {{", *body, f"  func.return {acc} : {t}", "}"]
    )
    prog = build_program(_func(npuir.parse_text(npuir.make_context(), text)))
    bound = lower_bound(prog, HW)
    assert bound.window_ns["cube"] > bound.plain_ns
    assert bound.ns == bound.window_ns["cube"]
    _, spans = _makespans(text, 8)
    assert bound.ns <= min(spans)
