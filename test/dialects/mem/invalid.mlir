// RUN: npuir-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Every error the `mem` dialect's attribute checks report, one case per chunk.

// Tests that an offset must be 512-byte aligned.
func.func @case(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.relu' op 'mem.offset' must be -1 or a non-negative multiple of 512, got 100
  %y = npu.relu %x {mem.offset = 100 : i64, mem.size = 512 : i64} : (tensor<4x8xf16>) -> tensor<4x8xf16>
  %z = npu.exp %y : (tensor<4x8xf16>) -> tensor<4x8xf16>
  func.return %z : tensor<4x8xf16>
}

// -----

// Tests that a size must be an i64 or an array of them.
func.func @case(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.relu' op 'mem.size' must be an i64 or an array<i64: ...>, got "big"
  %y = npu.relu %x {mem.offset = 0 : i64, mem.size = "big"} : (tensor<4x8xf16>) -> tensor<4x8xf16>
  func.return %y : tensor<4x8xf16>
}

// -----

// Tests that a two-result op gives one place per result.
func.func @case(%x: tensor<4x8xf16>) -> tensor<4x2xi64> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.topk' op 'mem.offset' gives 1 value(s) but 'npu.topk' has 2 result(s)
  %v, %i = npu.topk %x {k = 2 : i64, mem.offset = 0 : i64, mem.size = array<i64: 512, 512>} : (tensor<4x8xf16>) -> (tensor<4x2xf16>, tensor<4x2xi64>)
  func.return %i : tensor<4x2xi64>
}

// -----

// Tests that the pool size belongs on a function.
func.func @case(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.relu' op 'mem.pool' belongs on a 'func.func', not on 'npu.relu'
  %y = npu.relu %x {mem.pool = 512 : i64} : (tensor<4x8xf16>) -> tensor<4x8xf16>
  func.return %y : tensor<4x8xf16>
}
