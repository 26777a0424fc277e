"""The verifying passes of lowered IR share one entry: each refuses an unpartitioned module
with a located `stream.not-partitioned` naming itself, even when applied directly (outside a
pipeline, whose declared preconditions would otherwise catch it first)."""

from __future__ import annotations

import pytest
from xdsl.passes import ModulePass

import npuir
from npuir.analysis.program import NOT_PARTITIONED
from npuir.diagnostics import DiagnosticError
from npuir.transforms.capture_verify import CaptureVerifyPass
from npuir.transforms.mem_verify import MemVerifyPass
from npuir.transforms.sync_verify import SyncVerifyPass

UNPARTITIONED = """\
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = npu.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
"""


@pytest.mark.parametrize("pass_", [SyncVerifyPass(), CaptureVerifyPass(), MemVerifyPass()])
def test_a_verifier_refuses_an_unpartitioned_module_at_its_function(pass_: ModulePass) -> None:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, UNPARTITIONED, "case.mlir")
    with pytest.raises(DiagnosticError) as caught:
        pass_.apply(ctx, module)
    diagnostic = caught.value.diagnostic
    assert diagnostic.kind == NOT_PARTITIONED.code
    assert diagnostic.args["needs"] == pass_.name
    assert diagnostic.location is not None and diagnostic.location.line == 1
