"""`npu_wait_tensor` as seed 001 defines it: every later use of `self` waits, before and after lowering."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

import npuir
from npuir.analysis.program import build_program, module_streams
from npuir.backends.npu.hardware import load_hardware
from npuir.backends.npu.simulator import Race, simulate
from npuir.dialects import sync

ROOT = Path(__file__).resolve().parents[3]
SEED = (ROOT / "examples" / "seed_multistream.mlir").read_text()
# The seed as TorchAir code writes it: the wait is a statement and the scope keeps using %in4.
LITERAL = SEED.replace("%in3, %in4_w :", "%in3, %in4 :").replace("%in3, %in4_w2 :", "%in3, %in4 :")


def _lower(text: str) -> ModuleOp:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, text, "seed.mlir")
    npuir.run_passes(ctx, module, npuir.build_pipeline("npu-default"))
    return module


def _makespan(module: ModuleOp) -> tuple[int, list[Race]]:
    func = next(f for f in module.ops if isinstance(f, FuncOp))
    result = simulate([build_program(func, module_streams(module))], load_hardware("910b2"))
    return result.makespan_ns, list(result.races)


def test_the_literal_seed_lowers_like_the_result_form() -> None:
    assert LITERAL != SEED
    literal = _lower(LITERAL)
    result_form = _lower(SEED)
    waits = [op for op in literal.walk() if isinstance(op, sync.WaitOp)]
    assert len(waits) == 3
    assert _makespan(literal) == _makespan(result_form)


def test_dropping_the_wait_that_implements_a_wait_tensor_is_refused() -> None:
    module = _lower(LITERAL)
    before, races = _makespan(module)
    assert races == []
    first = next(op for op in module.walk() if isinstance(op, sync.WaitOp))
    first.detach()
    with pytest.raises(npuir.DiagnosticError, match=r"must wait for 'npu\.add'"):
        npuir.run_passes(npuir.make_context(), module, npuir.build_pipeline("sync-verify"))
    after, races = _makespan(module)
    assert races, "the simulator's own race check must see the dropped ordering"
    assert after < before  # what silently got faster before the ordering stayed visible
