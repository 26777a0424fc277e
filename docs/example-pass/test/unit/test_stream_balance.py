"""`example-stream-balance` through npuir's library, as an installed package's pass.

These run after `pip install` of this package: the pass is found by name
through its `npuir.passes` entry point, not imported by the test.
"""

from __future__ import annotations

import re

import pytest

import npuir
from npuir.diagnostics import Diagnostic, DiagnosticError, UsageError

TWO_STREAMS = """
!t = tensor<512x512xf16>
func.func @two_matmuls(%x: !t, %w: !t) -> (!t, !t) {
  %a = npu.matmul %x, %w : (!t, !t) -> !t
  %b = stream.switch "1" -> !t {
    %b0 = npu.matmul %w, %x : (!t, !t) -> !t
    stream.yield %b0 : !t
  }
  func.return %a, %b : !t, !t
}
"""


def _run(text: str, pipeline: str) -> list[Diagnostic]:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, text, "model.mlir")
    with ctx.diagnostics.collect() as found:
        npuir.run_passes(ctx, module, npuir.build_pipeline(pipeline))
    return found


def test_the_shares_cover_the_busy_streams() -> None:
    found = _run(TWO_STREAMS, "npu-default,example-stream-balance")
    (remark,) = [d for d in found if "example-stream-balance" in d.message]
    assert remark.severity == "remark"
    assert remark.location is not None and remark.location.filename == "model.mlir"
    shares = [int(s) for s in re.findall(r"(\d+)%", remark.message)]
    assert len(shares) == 2, remark.message
    assert abs(sum(shares) - 100) <= 1, remark.message
    assert not [d for d in found if d.severity == "warning"]


def test_a_lopsided_partition_is_warned_about() -> None:
    lopsided = """
func.func @lopsided(%x: tensor<2048x2048xf16>, %y: tensor<64x64xf16>)
    -> (tensor<2048x2048xf16>, tensor<64x64xf16>) {
  %a = npu.matmul %x, %x : (tensor<2048x2048xf16>, tensor<2048x2048xf16>) -> tensor<2048x2048xf16>
  %b = stream.switch "1" -> tensor<64x64xf16> {
    %b0 = npu.relu %y : (tensor<64x64xf16>) -> tensor<64x64xf16>
    stream.yield %b0 : tensor<64x64xf16>
  }
  func.return %a, %b : tensor<2048x2048xf16>, tensor<64x64xf16>
}
"""
    found = _run(lopsided, "npu-default,example-stream-balance{max-share=0.6}")
    warnings = [d for d in found if d.severity == "warning"]
    assert len(warnings) == 1, found
    assert "of @lopsided's work (max-share 0.6)" in warnings[0].message
    # The same program passes a looser bound.
    loose = _run(lopsided, "npu-default,example-stream-balance{max-share=1}")
    assert not [d for d in loose if d.severity == "warning"]


def test_an_unordered_use_is_a_located_error() -> None:
    text = """
!t = tensor<64x64xf16>
func.func @f(%x: !t) -> !t {
  %a = npu.relu %x : (!t) -> !t
  %b = stream.switch "1" -> !t {
    %b0 = npu.exp %a : (!t) -> !t
    stream.yield %b0 : !t
  }
  func.return %b : !t
}
"""
    with pytest.raises(DiagnosticError) as info:
        _run(text, "stream-partition,example-stream-balance")
    diagnostic = info.value.diagnostic
    assert diagnostic.location is not None and diagnostic.location.line == 6
    assert diagnostic.message.endswith("run insert-events first")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("{max-share=2}", "max-share must be in (0, 1], got 2.0"),
        ("{max-share=most}", "option 'max-share' expects a number, got 'most'"),
    ],
)
def test_a_bad_option_is_a_usage_error(spec: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        npuir.build_pipeline(f"example-stream-balance{spec}")
    assert message in str(info.value)


def test_the_entry_point_names_the_pass() -> None:
    from importlib.metadata import entry_points

    (entry,) = entry_points(group="npuir.passes", name="example-stream-balance")
    assert entry.load().name == "example-stream-balance"
    assert entry.load().__module__ == "npuir_stream_balance.stream_balance"


def test_it_reuses_the_happens_before_sync_verify_built() -> None:
    computed = []
    for pipeline in ("npu-default", "npu-default,example-stream-balance"):
        ctx = npuir.make_context()
        module = npuir.parse_text(ctx, TWO_STREAMS, "model.mlir")
        with ctx.diagnostics.collect():
            npuir.run_passes(ctx, module, npuir.build_pipeline(pipeline))
        computed.append(ctx.analyses.computed)
    assert computed[0] > 0
    assert computed[1] == computed[0]
