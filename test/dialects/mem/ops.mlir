// RUN: npuir-opt %s | filecheck %s
// RUN: npuir-opt %s --print-op-generic | npuir-opt | filecheck %s

// The `mem` dialect has no ops: its attributes place a lowered function's
// tensors in device memory, and they survive printing and the generic form.

module {
  stream.decl @s0 "default" priority 0

// Tests that one result is placed by an i64 pair, two results by arrays, and the
// pool size sits on the function.
// CHECK-LABEL: func.func @case
// CHECK-SAME:    attributes {mem.pool = 1024 : i64}
// CHECK:       npu.relu %x {stream.on = @s0, mem.offset = 0 : i64, mem.size = 512 : i64}
// CHECK:       npu.topk %y {k = 2 : i64, stream.on = @s0, mem.offset = array<i64: 512, -1>, mem.size = array<i64: 512, 0>}
  func.func @case(%x: tensor<4x8xf16>) -> tensor<4x2xi64> attributes {mem.pool = 1024 : i64} {
    %y = npu.relu %x {stream.on = @s0, mem.offset = 0 : i64, mem.size = 512 : i64} : (tensor<4x8xf16>) -> tensor<4x8xf16>
    %v, %i = npu.topk %y {k = 2 : i64, stream.on = @s0, mem.offset = array<i64: 512, -1>, mem.size = array<i64: 512, 0>} : (tensor<4x8xf16>) -> (tensor<4x2xf16>, tensor<4x2xi64>)
    func.return %i : tensor<4x2xi64>
  }
}
