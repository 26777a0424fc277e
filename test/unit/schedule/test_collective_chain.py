"""A group's collectives run one after another, and `auto` judges what the passes lower.

`stream-partition` chains each collective to the previous one of its group in every mode
that places ops; auto's judge (and so the oracle) must simulate that chain, or it picks
schedules by a makespan the lowered program does not have.  The chain orders the
collective alone: a later use of its input does not wait for the earlier collective.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from xdsl.dialects.func import FuncOp

import npuir
from npuir.analysis.partition import Assignment, collective_chain, with_collective_chain
from npuir.analysis.program import (
    DepKind,
    NodeKind,
    StreamInfo,
    build_program,
    module_streams,
    scheduled_functions,
)
from npuir.backends.npu.hardware import load_hardware
from npuir.backends.npu.simulator import simulate
from npuir.backends.npu.timing import collective_ns
from npuir.dialects.stream import MAIN_TAG
from npuir.schedule.auto import Judge, assign_auto

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from oracle_quality import judged_makespan
from workloads import DagConfig, random_dag

HW = load_hardware("910b2")
TY = "tensor<1024x2048xf16>"


def _func(text: str) -> FuncOp:
    module = npuir.parse_text(npuir.make_context(), text)
    return next(op for op in module.ops if isinstance(op, FuncOp))


TWO_GROUPS = f"""
func.func @g(%a: {TY}, %b: {TY}) -> ({TY}, {TY}, {TY}, {TY}) {{
  %x = npu.all_reduce %a {{group_size = 8 : i64, group = "tp", mode = "sdma"}} : ({TY}) -> {TY}
  %y = npu.all_to_all %b {{group_size = 8 : i64, group = "ep", mode = "sdma"}} : ({TY}) -> {TY}
  %z = npu.all_reduce %b {{group_size = 8 : i64, group = "tp", mode = "sdma"}} : ({TY}) -> {TY}
  %w = npu.exp %b : ({TY}) -> {TY}
  func.return %x, %y, %z, %w : {TY}, {TY}, {TY}, {TY}
}}
"""


def test_each_collective_follows_the_previous_one_of_its_group() -> None:
    prog = build_program(_func(TWO_GROUPS))
    # Nodes: 0 all_reduce tp, 1 all_to_all ep, 2 all_reduce tp, 3 exp, 4 return.
    assert collective_chain(prog.ops) == [(0, 2)]
    chained = with_collective_chain(prog)
    assert (0, DepKind.CONTROL) in chained.deps[2]
    assert chained.deps[3] == prog.deps[3] == []
    assert prog.deps[2] == []  # the program given is left alone
    # No missing order: the same program back.
    assert with_collective_chain(chained) is chained


def test_the_judge_runs_a_groups_collectives_in_series() -> None:
    prog = build_program(_func(TWO_GROUPS))
    ring = HW.launch_ns + collective_ns(HW, "all_reduce", 8, 1024 * 2048 * 2)
    streams = [StreamInfo("s0", MAIN_TAG, 0), StreamInfo("s1", "x", 0)]
    # The two all_reduces of "tp" on two streams still cannot overlap.
    apart = Assignment(streams, [0, 0, 1, 0, 0])
    assert Judge(prog, HW, None)("apart", apart).makespan >= 2 * ring
    chosen = assign_auto(prog, [None] * len(prog), {}, 8, HW)
    assert judged_makespan(prog, chosen, HW) >= 2 * ring


def _lowered_makespan(text: str, mode: str) -> int:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, text)
    spec = f"stream-partition{{mode={mode} ignore-tags=true}},coreset-lower,insert-events"
    npuir.run_passes(ctx, module, npuir.build_pipeline(spec))
    prog = build_program(scheduled_functions(module)[0], module_streams(module))
    result = simulate([prog], HW, mirror_peers=True)
    assert result.deadlock is None and not result.races
    return result.makespan_ns


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_auto_judges_the_makespan_its_lowered_program_has(seed: int) -> None:
    text = random_dag(seed, DagConfig(ops=24, rows=256, cols=512))
    prog = build_program(_func(text))
    chosen = assign_auto(prog, [None] * len(prog), {}, 8, HW)
    assert judged_makespan(prog, chosen, HW) == _lowered_makespan(text, "auto")


def test_a_later_use_of_a_chained_collectives_input_does_not_wait_for_the_chain() -> None:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, TWO_GROUPS)
    spec = "stream-partition{mode=nimble ignore-tags=true},coreset-lower,insert-events"
    npuir.run_passes(ctx, module, npuir.build_pipeline(spec))
    prog = build_program(scheduled_functions(module)[0], module_streams(module))
    exp = next(n for n, op in enumerate(prog.ops) if op.name == "npu.exp")
    first = next(n for n, op in enumerate(prog.ops) if op.name == "npu.all_reduce")
    assert prog.kind[exp] is NodeKind.COMPUTE
    assert all(p != first for p, _ in prog.deps[exp])
