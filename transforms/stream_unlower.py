"""`stream-unlower`: take a lowered module back to one that `stream-partition` can partition
again.

It removes what `stream-partition` and `insert-events` added -- each op's `stream.on`, the
`sync.record` / `sync.wait` events and the module's `stream.decl`s -- and keeps what the
user's program says: the ops, their order, their `stream.wait_tensor` orderings and each
op's effective `coreset.cores`.  Functions that are not lowered are left as they are.  The
runner uses it to measure a lowered input against its own one-stream baseline:

```mlir
stream.decl @s0 "default" priority 0
func.func @f(%a: tensor<4xf16>) -> tensor<4xf16> {
  %b = npu.relu %a {stream.on = @s0} : (tensor<4xf16>) -> tensor<4xf16>
  func.return %b : tensor<4xf16>
}
// becomes
func.func @f(%a: tensor<4xf16>) -> tensor<4xf16> {
  %b = npu.relu %a : (tensor<4xf16>) -> tensor<4xf16>
  func.return %b : tensor<4xf16>
}
```
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass

from npuir.analysis.program import is_lowered
from npuir.dialects import stream, sync
from npuir.passes import PARTITIONED, IRState


@dataclass(frozen=True)
class StreamUnlowerPass(ModulePass):
    """Remove streams and events from lowered functions, keeping the program they order."""

    name = "stream-unlower"

    INVALIDATES: ClassVar[tuple[IRState, ...]] = (PARTITIONED,)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lowered = [f for f in op.ops if isinstance(f, FuncOp) and is_lowered(f)]
        for func in lowered:
            # Waits before records: a record's event may only go once nothing waits on it.
            for inner in reversed(list(func.body.walk())):
                if isinstance(inner, sync.WaitOp | sync.RecordOp):
                    inner.detach()
                    inner.erase()
                else:
                    inner.attributes.pop(stream.STREAM_ON, None)
        if lowered:
            for decl in [d for d in op.ops if isinstance(d, stream.DeclOp)]:
                decl.detach()
                decl.erase()
