"""insert-events on a module that declares no streams: nothing to order, not a crash."""

from __future__ import annotations

import pytest

import npuir

NO_WORK = """func.func @f(%x: tensor<4xf16>) -> tensor<4xf16> {
  func.return %x : tensor<4xf16>
}
"""


def test_a_function_without_work_or_streams_is_left_as_it_is() -> None:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, NO_WORK, "nowork.mlir")
    before = npuir.print_ir(module)
    npuir.run_passes(ctx, module, npuir.build_pipeline("insert-events"))
    assert npuir.print_ir(module) == before


def test_a_function_with_work_but_no_streams_is_a_located_error() -> None:
    text = NO_WORK.replace(
        "  func.return %x",
        "  %y = npu.relu %x : (tensor<4xf16>) -> tensor<4xf16>\n  func.return %y",
    )
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, text, "work.mlir")
    with pytest.raises(npuir.DiagnosticError) as caught:
        npuir.run_passes(ctx, module, npuir.build_pipeline("insert-events"))
    # Refused by the pass manager before the pass runs, at the function, naming the pass.
    assert caught.value.diagnostic.kind == "pass.precondition"
    assert caught.value.diagnostic.render().startswith(
        "work.mlir:1:1: error: insert-events needs stream-partition first"
    )
