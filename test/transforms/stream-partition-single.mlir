// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p 'stream-partition{mode=single}' | filecheck %s
// RUN: npuir-opt %s --split-input-file -p 'stream-partition{mode=single ignore-tags=true}' | filecheck %s --check-prefix=IGNORE

// Tests that single-stream mode puts everything on the default stream.

!t = tensor<8x8xf16>
func.func @plain(%x: !t) -> !t {
  %a = npu.relu %x : (!t) -> !t
  func.return %a : !t
}

// CHECK:         stream.decl @s0 "<main>" priority 0
// CHECK-LABEL: func.func @plain
// CHECK-NEXT:    %a = npu.relu %x {stream.on = @s0}

// -----

// Tests that single-stream mode rejects a stream label, at the scope, as
// TorchAir does.

!t = tensor<8x8xf16>
func.func @labelled(%x: !t) -> !t {
  %a = npu.relu %x : (!t) -> !t
  %r = stream.switch "1" -> !t {
    %b = npu.exp %a : (!t) -> !t
    stream.yield %b : !t
  }
  func.return %r : !t
}

// CHECK: stream-partition-single.mlir:[[# @LINE - 7]]:3: error: single-stream mode conflicts with the stream label "1"

// IGNORE-LABEL: func.func @labelled
// IGNORE-NEXT:    %a = npu.relu %x {stream.on = @s0}
// IGNORE-NEXT:    %b = npu.exp %a {stream.on = @s0}
