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

// CHECK: coreset-lower-invalid.mlir:[[# @LINE - 7]]:3: error: coreset.limit: cube core count 30 is out of range for 910b2; the valid range is [1, 24]
// TINY: coreset-lower-invalid.mlir:[[# @LINE - 8]]:3: error: coreset.limit: cube core count 30 is out of range for tiny; the valid range is [1, 2]

// -----

// Tests that a stream limit is checked against the device too.

!t = tensor<64x64xf16>
func.func @stream_too_big(%x: !t) -> !t {
  coreset.stream_limit "1" vector 8
  %e = npu.exp %x : (!t) -> !t
  func.return %e : !t
}

// TINY: coreset-lower-invalid.mlir:[[# @LINE - 5]]:3: error: coreset.stream_limit: vector core count 8 is out of range for tiny; the valid range is [1, 4]
// CHECK-LABEL: func.func @stream_too_big

// -----

// Tests that the module's global limit is checked.

module attributes {coreset.global = #coreset.cores<vector 64>} {
  func.func @global_too_big(%x: tensor<4xf16>) -> tensor<4xf16> {
    func.return %x : tensor<4xf16>
  }
}

// CHECK: coreset-lower-invalid.mlir:[[# @LINE - 6]]:1: error: coreset.global: vector core count 64 is out of range for 910b2; the valid range is [1, 48]
