"""Every stream-assignment mode keeps each rank's collectives in their written order.

The ranks' collectives pair up by issue order, and every rank's function is partitioned
on its own, so a mode that issued one rank's collectives in another order would pair
them wrongly (a wrong answer) or deadlock.  The property is checked on the functions of
generated multi-rank programs (`bench/valid_programs.py`) for every mode, the cost-aware
ones (minidag's variants, opara, auto with its list schedules and refinements) included;
`test/unit/bench/test_check_modes.py` runs the same programs end to end with `--check`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from xdsl.dialects.func import FuncOp

import npuir
from npuir.analysis.partition import STRATEGIES, Mode, assign, keep_collective_order, pinned_tags
from npuir.analysis.program import build_program
from npuir.backends.npu.hardware import load_hardware
from npuir.dialects.npu import CollectiveOp
from npuir.dialects.stream import bind_later_uses
from npuir.schedule.auto import cost_strategies

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

import valid_programs

TABLE = {**STRATEGIES, **cost_strategies(load_hardware("tiny"))}
SEEDS = [s for s in range(60) if valid_programs.program(s).text.count('group = "') >= 3][:6]


def _functions(seed: int) -> list[FuncOp]:
    gen = valid_programs.program(seed)
    module = npuir.parse_text(npuir.make_context(), gen.text)
    funcs = [f for f in module.ops if isinstance(f, FuncOp)]
    for func in funcs:
        bind_later_uses(func)
    return funcs


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "mode",
    [
        # IOS's stage search takes seconds on these programs: the slow tier's.
        pytest.param(m, marks=pytest.mark.slow) if m is Mode.IOS else m
        for m in Mode
        if m is not Mode.SINGLE
    ],
)
def test_every_mode_keeps_the_collectives_written_order(seed: int, mode: Mode) -> None:
    for func in _functions(seed):
        prog = build_program(func)
        colls = [n for n, op in enumerate(prog.ops) if isinstance(op, CollectiveOp)]
        pinned, priorities = pinned_tags(prog)
        result = assign(mode, prog, pinned, priorities, 8, strategies=TABLE)
        order = result.order if result.order is not None else list(range(len(prog)))
        assert sorted(order) == list(range(len(prog)))
        assert [n for n in order if n in set(colls)] == colls, (seed, mode, func.sym_name.data)


def test_a_swapped_order_is_mended_and_a_kept_one_left_alone() -> None:
    text = """
    func.func @f(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
      %a = npu.all_reduce %x {group_size = 2 : i64} : (tensor<8xf32>) -> tensor<8xf32>
      %e = npu.exp %y : (tensor<8xf32>) -> tensor<8xf32>
      %b = npu.all_reduce %e {group_size = 2 : i64} : (tensor<8xf32>) -> tensor<8xf32>
      func.return %a, %b : tensor<8xf32>, tensor<8xf32>
    }
    """
    module = npuir.parse_text(npuir.make_context(), text)
    func = next(f for f in module.ops if isinstance(f, FuncOp))
    prog = build_program(func)
    # Nodes: 0 all_reduce(x), 1 exp, 2 all_reduce(e), 3 return.
    assert keep_collective_order(prog, [1, 0, 2, 3]) == [1, 0, 2, 3]
    # The exp's all_reduce issued first: it moves after the first all_reduce, no further.
    assert keep_collective_order(prog, [1, 2, 0, 3]) == [1, 0, 2, 3]
