"""Collectives that pair up across ranks must agree (`npuir.backends.npu.groups`): the
simulator and the numeric executor refuse an all_reduce paired with an all_to_all, or
inputs of another shape or element type, naming both ops (before, such a pair ran and
`--check` passed).  `test/runner/collective-mismatch.mlir` checks the tool's message."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.func import FuncOp

import npuir
from npuir.analysis.program import build_program, module_streams
from npuir.backends.npu.groups import collectives, mismatched_pairs
from npuir.backends.npu.hardware import PRESETS
from npuir.backends.npu.numerics import NumericsError, run_ranks
from npuir.backends.npu.simulator import simulate

TEXT = """
module attributes {npu.target = "tiny"} {
  func.func @a(%x: tensor<8xf32>) -> tensor<8xf32> {
    %r = npu.all_reduce %x {group_size = 2 : i64} : (tensor<8xf32>) -> tensor<8xf32>
    func.return %r : tensor<8xf32>
  }
  func.func @b(%x: tensor<8xf32>) -> tensor<8xf32> {
    %r = npu.all_to_all %x {group_size = 2 : i64} : (tensor<8xf32>) -> tensor<8xf32>
    func.return %r : tensor<8xf32>
  }
  func.func @c(%x: tensor<8xf16>) -> tensor<8xf16> {
    %r = npu.all_reduce %x {group_size = 2 : i64} : (tensor<8xf16>) -> tensor<8xf16>
    func.return %r : tensor<8xf16>
  }
  func.func @d(%x: tensor<8xf32>) -> tensor<8xf32> {
    %r = npu.all_reduce %x {group_size = 2 : i64, mode = "aiv"} : (tensor<8xf32>) -> tensor<8xf32>
    func.return %r : tensor<8xf32>
  }
}
"""


def _module() -> tuple[npuir.NpuirContext, dict[str, FuncOp], object]:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, TEXT)
    return ctx, {f.sym_name.data: f for f in module.ops if isinstance(f, FuncOp)}, module


@pytest.mark.parametrize(
    ("peer", "why"),
    [("b", "one is 'npu.all_to_all'"), ("c", "element type"), ("d", "modes differ")],
)
def test_a_pair_that_differs_is_refused_by_both_backends(peer: str, why: str) -> None:
    ctx, funcs, module = _module()
    pair = [funcs["a"], funcs[peer]]
    found = mismatched_pairs([collectives(f) for f in pair], 2)
    assert len(found) == 1 and found[0].rank == 1 and why in found[0].describe()
    x = np.ones(8, np.float32)
    inputs = [[x], [x.astype(np.float16) if peer == "c" else x]]
    with pytest.raises(NumericsError, match="pairs with") as info:
        run_ranks(module, pair, inputs)  # type: ignore[arg-type]
    assert info.value.op is found[0].op
    npuir.run_passes(ctx, module, npuir.build_pipeline("npu-default"))  # type: ignore[arg-type]
    streams = module_streams(module)  # type: ignore[arg-type]
    progs = [build_program(f, streams) for f in pair]
    with pytest.raises(ValueError, match="pairs with"):
        simulate(progs, PRESETS["tiny"])


def test_a_matching_pair_runs() -> None:
    _, funcs, module = _module()
    pair = [funcs["a"], funcs["a"]]
    assert mismatched_pairs([collectives(f) for f in pair], 2) == []
    out = run_ranks(module, pair, [[np.ones(8, np.float32)], [np.ones(8, np.float32)]])  # type: ignore[arg-type]
    assert out[0][0].tolist() == [2.0] * 8
