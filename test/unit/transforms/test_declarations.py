"""Every pass leaves an external function declaration alone.

`func.func private @ext(...) -> ...` is ordinary MLIR: code npuir does not
see.  Passes schedule the functions that have a body and keep the
declaration as it was written.
"""

from __future__ import annotations

import pytest
from xdsl.dialects.func import FuncOp

import npuir
from npuir.transforms import PASSES
from npuir.transforms.pipelines import PIPELINES

DECLARATION = "func.func private @ext(tensor<8xf16>) -> tensor<8xf16>"

MODULE = f"""module attributes {{npu.target = "910b2"}} {{
  {DECLARATION}
  func.func @main(%a: tensor<8xf16>) -> tensor<8xf16> {{
    %0 = npu.relu %a : (tensor<8xf16>) -> tensor<8xf16>
    %1 = stream.switch "1" -> tensor<8xf16> {{
      %2 = npu.neg %0 : (tensor<8xf16>) -> tensor<8xf16>
      stream.yield %2 : tensor<8xf16>
    }}
    func.return %1 : tensor<8xf16>
  }}
}}
"""

# Passes that need a partitioned (or synchronised) module get one first.
BEFORE = {
    "coreset-check": "stream-partition",
    "core-deadlock-check": "stream-partition,insert-events",
    "capture-close": "stream-partition,coreset-lower,insert-events",
    "capture-verify": "stream-partition,coreset-lower,insert-events,capture-close",
    "coreset-partition": "stream-partition",
    "insert-events": "stream-partition",
    "sync-verify": "stream-partition,insert-events",
    "mem-plan": "stream-partition,insert-events",
    "mem-verify": "stream-partition,insert-events,mem-plan",
}


@pytest.mark.parametrize("name", sorted([*PASSES, *PIPELINES]))
def test_every_pass_keeps_the_declaration(name: str) -> None:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, MODULE)
    spec = f"{BEFORE[name]},{name}" if name in BEFORE else name
    npuir.run_passes(ctx, module, npuir.build_pipeline(spec))
    decls = [f for f in module.ops if isinstance(f, FuncOp) and f.is_declaration]
    assert [f.sym_name.data for f in decls] == ["ext"]
    assert DECLARATION in npuir.print_ir(module)
