// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p 'coreset-lower{hw=910b2}' | filecheck %s
// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p 'coreset-lower{hw=tiny}' | filecheck %s --check-prefix=TINY

// Tests that a scope count above the device's is an error naming the range.

!t = tensor<64x64xf16>
func.func @scope_too_big(%x: !t) -> !t {
  %r = coreset.limit cube 30 -> !t {
    %m = npu.matmul %x, %x : (!t, !t) -> !t
    coreset.yield %m : !t
  }
  func.return %r : !t
}

// CHECK: coreset-lower-invalid.mlir:[[# @LINE - 7]]:3: error: coreset.limit: cube count is 30, but the device (910b2) has 24 cube cores
// TINY: coreset-lower-invalid.mlir:[[# @LINE - 8]]:3: error: coreset.limit: cube count is 30, but the device (tiny) has 2 cube cores

// -----

// Tests that a stream limit is checked against the device too.

!t = tensor<64x64xf16>
func.func @stream_too_big(%x: !t) -> !t {
  coreset.stream_limit "1" vector 8
  %e = npu.exp %x : (!t) -> !t
  func.return %e : !t
}

// TINY: coreset-lower-invalid.mlir:[[# @LINE - 5]]:3: error: coreset.stream_limit: vector count is 8, but the device (tiny) has 4 vector cores
// CHECK-LABEL: func.func @stream_too_big

// -----

// Tests that the module's global limit is checked.

module attributes {coreset.global = #coreset.cores<vector 64>} {
  func.func @global_too_big(%x: tensor<4xf16>) -> tensor<4xf16> {
    func.return %x : tensor<4xf16>
  }
}

// CHECK: coreset-lower-invalid.mlir:[[# @LINE - 6]]:1: error: coreset.global: vector count is 64, but the device (910b2) has 48 vector cores
