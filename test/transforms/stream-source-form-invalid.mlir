// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p stream-source-form | filecheck %s

// Tests that a lowered function is refused: its order is its events', not the user's.

!t = tensor<8x8xf16>
stream.decl @s0 "<main>" priority 0
stream.decl @s1 "1" priority 0
func.func @lowered(%x: !t) -> !t {
  %a = npu.relu %x {stream.on = @s1} : (!t) -> !t
  %e = sync.record on @s1 {event_id = 0 : i64}
  sync.wait %e on @s0
  func.return %a : !t
}

// CHECK: stream-source-form-invalid.mlir:[[# @LINE - 7]]:1: error: stream-source-form: @lowered is lowered (its events fix an order); give it the partitioned or source-form function
