"""`auto` searches schedules without hold-and-wait hazards only.

`stream-partition` never keeps a schedule in which an op that holds cores while it waits
(an aiv collective, a `full_core_sync` op) can run beside an op it can starve: it falls
back to the written partition.  So `auto` judges such a schedule infeasible and returns the
best one the pass keeps, rather than a faster one the pass would throw away."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation

import npuir
import npuir.schedule.auto as auto
from npuir.analysis.core_limits import CoreLimits
from npuir.analysis.partition import Assignment, Mode, assign, permuted
from npuir.analysis.program import Program, build_program
from npuir.backends.npu.hardware import load_hardware
from npuir.schedule.auto import INFEASIBLE, Judge, assign_auto
from npuir.schedule.core_check import OverriddenLimits, assignment_hazard

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from workloads import WORKLOADS

HW = load_hardware("910b2")


def _program(text: str) -> Program:
    module = npuir.parse_text(npuir.make_context(), text)
    return build_program(next(op for op in module.ops if isinstance(op, FuncOp)))


def _hazard(prog: Program, result: Assignment) -> object:
    module = prog.ops[0].get_toplevel_object()
    counts = CoreLimits(module, HW).run()
    limited = OverriddenLimits(counts, {(prog.ops[n], e): c for n, e, c in result.limits})
    return assignment_hazard(prog, result, limited, HW)


def test_a_judge_that_refuses_hazards_judges_them_infeasible(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An aiv all_reduce beside an independent vector op on another stream: each may hold
    vector cores the other needs.  The refusing judge calls it infeasible; a plain judge
    simulates it; one stream has no hazard either way."""
    big = "tensor<256x1024xf16>"
    prog = _program(
        f"func.func @f(%a: {big}, %b: {big}) -> ({big}, {big}) {{\n"
        f'  %x = npu.all_reduce %a {{group_size = 2 : i64, mode = "aiv"}} : ({big}) -> {big}\n'
        f"  %y = npu.exp %b : ({big}) -> {big}\n"
        f"  func.return %x, %y : {big}, {big}\n}}"
    )
    none: list[str | None] = [None] * len(prog)
    apart = assign(Mode.ENGINE, prog, none, {}, 8)
    assert len(set(apart.stream_of[:2])) == 2 and _hazard(prog, apart) is not None
    assert Judge(prog, HW, None)("apart", apart).makespan < INFEASIBLE
    assert Judge(prog, HW, None, refuse_hazards=True)("apart", apart).makespan == INFEASIBLE
    single = assign(Mode.SINGLE, prog, none, {}, 8)
    assert Judge(prog, HW, None, refuse_hazards=True)("one", single).makespan < INFEASIBLE
    # Above the size the check is affordable at, the judge leaves it to the pass.
    monkeypatch.setattr(auto, "HAZARD_SEARCH_NODES", len(prog) - 1)
    assert Judge(prog, HW, None, refuse_hazards=True)("apart", apart).makespan < INFEASIBLE


@pytest.mark.slow
def test_auto_returns_a_schedule_the_pass_keeps_on_the_aiv_moe_layer() -> None:
    """The MoE decode layer with aiv all_to_alls: auto's schedule, with the limits it
    chose, has no hazard (so `stream-partition` keeps it), and it is faster than the
    one-stream schedule the pass would otherwise fall back to."""
    prog = _program(WORKLOADS["moe_decode_aiv"]())
    none: list[str | None] = [None] * len(prog)
    for search_limits in (False, True):
        result = assign_auto(prog, none, {}, 8, HW, search_limits=search_limits)
        assert _hazard(prog, result) is None
        assert len(set(result.stream_of)) > 1
        single = Judge(prog, HW, None)("single", assign(Mode.SINGLE, prog, none, {}, 8))
        chosen = {prog.ops[n]: c for n, e, c in result.limits}

        def limit(
            p: Program, n: int, engine: str, chosen: dict[Operation, int] = chosen
        ) -> int | None:
            return chosen.get(p.ops[n]) if engine == "vector" else None

        order = result.order if result.order is not None else list(range(len(prog)))
        moved = Assignment(result.streams, [result.stream_of[n] for n in order])
        judge = Judge(permuted(prog, order), HW, limit if chosen else None)
        assert judge("auto", moved).makespan < single.makespan
