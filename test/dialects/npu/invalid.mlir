// RUN: npuir-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// Every error the `npu` dialect reports, one case per `// -----` chunk; each
// points at the op (or token) at fault, with the absolute line in this file.

// Tests that matmul's inner dimensions must agree.
func.func @case(%a: tensor<64x32xf16>, %b: tensor<16x32xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 3]]:3: error: 'npu.matmul' op inner dimensions differ: lhs 64x32 gives K = 32, rhs 16x32 gives K = 16
// CHECK-NEXT: {{^}}  %0 = npu.matmul %a, %b : (tensor<64x32xf16>, tensor<16x32xf16>) -> tensor<64x32xf16>
// CHECK-NEXT: ^
  %0 = npu.matmul %a, %b : (tensor<64x32xf16>, tensor<16x32xf16>) -> tensor<64x32xf16>
  func.return
}

// -----

// Tests that transpose_b changes which dim of rhs is K.
func.func @case(%a: tensor<64x32xf16>, %b: tensor<32x16xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.matmul' op inner dimensions differ: lhs 64x32 gives K = 32, rhs 32x16 gives K = 16
  %0 = npu.matmul %a, %b {transpose_b} : (tensor<64x32xf16>, tensor<32x16xf16>) -> tensor<64x32xf16>
  func.return
}

// -----

// Tests that matmul's declared result must be the inferred [M,N].
func.func @case(%a: tensor<64x32xf16>, %b: tensor<32x16xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.matmul' op result type tensor<64x32xf16> does not match the inferred type tensor<64x16xf16>
  %0 = npu.matmul %a, %b : (tensor<64x32xf16>, tensor<32x16xf16>) -> tensor<64x32xf16>
  func.return
}

// -----

// Tests that matmul keeps the element type (no implicit f32 result).
func.func @case(%a: tensor<64x32xf16>, %b: tensor<32x16xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.matmul' op result type tensor<64x16xf32> does not match the inferred type tensor<64x16xf16>
  %0 = npu.matmul %a, %b : (tensor<64x32xf16>, tensor<32x16xf16>) -> tensor<64x16xf32>
  func.return
}

// -----

// Tests that matmul takes rank-2 operands only.
func.func @case(%a: tensor<2x64x32xf16>, %b: tensor<32x16xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.matmul' op operands must be rank-2 tensors
  %0 = npu.matmul %a, %b : (tensor<2x64x32xf16>, tensor<32x16xf16>) -> tensor<2x64x16xf16>
  func.return
}

// -----

// Tests that matmul's operands share an element type.
func.func @case(%a: tensor<64x32xf16>, %b: tensor<32x16xbf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.matmul' op operand element types differ: f16 and bf16
  %0 = npu.matmul %a, %b : (tensor<64x32xf16>, tensor<32x16xbf16>) -> tensor<64x16xf16>
  func.return
}

// -----

// Tests that transpose_a is a unit attribute.
func.func @case(%a: tensor<64x32xf16>, %b: tensor<32x16xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.matmul' op true should be of base attribute unit
  %0 = npu.matmul %a, %b {transpose_a = true} : (tensor<64x32xf16>, tensor<32x16xf16>) -> tensor<64x16xf16>
  func.return
}

// -----

// Tests that batch_matmul needs rank >= 3.
func.func @case(%a: tensor<64x32xf16>, %b: tensor<32x16xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.batch_matmul' op operands must have rank >= 3 ([B..,M,K] x [B..,K,N])
  %0 = npu.batch_matmul %a, %b : (tensor<64x32xf16>, tensor<32x16xf16>) -> tensor<64x16xf16>
  func.return
}

// -----

// Tests that batch_matmul's batch dims must broadcast.
func.func @case(%a: tensor<3x64x32xf16>, %b: tensor<4x32x16xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.batch_matmul' op shapes 3 and 4 do not broadcast (3 vs 4)
  %0 = npu.batch_matmul %a, %b : (tensor<3x64x32xf16>, tensor<4x32x16xf16>) -> tensor<4x64x16xf16>
  func.return
}

// -----

// Tests that batch_matmul's inner dimensions must agree.
func.func @case(%a: tensor<8x64x32xf16>, %b: tensor<8x16x16xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.batch_matmul' op inner dimensions differ: lhs 8x64x32 gives K = 32, rhs 8x16x16 gives K = 16
  %0 = npu.batch_matmul %a, %b : (tensor<8x64x32xf16>, tensor<8x16x16xf16>) -> tensor<8x64x16xf16>
  func.return
}

// -----

// Tests that batch_matmul's operands share an element type.
func.func @case(%a: tensor<8x64x32xf16>, %b: tensor<8x32x16xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.batch_matmul' op operand element types differ: f16 and f32
  %0 = npu.batch_matmul %a, %b : (tensor<8x64x32xf16>, tensor<8x32x16xf32>) -> tensor<8x64x16xf16>
  func.return
}

// -----

// Tests that elementwise operands must broadcast like numpy.
func.func @case(%a: tensor<4x8xf32>, %b: tensor<4x3xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.add' op shapes 4x8 and 4x3 do not broadcast (8 vs 3)
  %0 = npu.add %a, %b : (tensor<4x8xf32>, tensor<4x3xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

// Tests that the declared result of a binary op is the broadcast shape.
func.func @case(%a: tensor<4x8xf32>, %b: tensor<8xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.mul' op result type tensor<8xf32> does not match the inferred type tensor<4x8xf32>
  %0 = npu.mul %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return
}

// -----

// Tests that elementwise operands share an element type.
func.func @case(%a: tensor<4x8xf32>, %b: tensor<4x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.sub' op operand element types differ: f32 and f16
  %0 = npu.sub %a, %b : (tensor<4x8xf32>, tensor<4x8xf16>) -> tensor<4x8xf32>
  func.return
}

// -----

// Tests that unary ops keep the operand type.
func.func @case(%a: tensor<4x8xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.exp' op result type tensor<4x8xf16> does not match the inferred type tensor<4x8xf32>
  %0 = npu.exp %a : (tensor<4x8xf32>) -> tensor<4x8xf16>
  func.return
}

// -----

// Tests that element types outside f16, bf16, f32, f64 and integers are rejected.
func.func @case(%a: tensor<4x8xf80>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.relu' op unsupported element type f80
  %0 = npu.relu %a : (tensor<4x8xf80>) -> tensor<4x8xf80>
  func.return
}

// -----

// Tests that a result element type is checked too (cast to f80).
func.func @case(%a: tensor<4x8xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.cast' op unsupported element type f80
  %0 = npu.cast %a : (tensor<4x8xf32>) -> tensor<4x8xf80>
  func.return
}

// -----

// Tests that cast keeps the shape.
func.func @case(%a: tensor<4x8xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.cast' op result type tensor<8x4xf16> does not match the inferred type tensor<4x8xf16>
  %0 = npu.cast %a : (tensor<4x8xf32>) -> tensor<8x4xf16>
  func.return
}

// -----

// Tests that gelu's approximate is "tanh" or "none".
func.func @case(%a: tensor<4x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.gelu' op approximate must be "tanh" or "none", got "fast"
  %0 = npu.gelu %a {approximate = "fast"} : (tensor<4x8xf16>) -> tensor<4x8xf16>
  func.return
}

// -----

// Tests that full_core_sync is a unit attribute.
func.func @case(%a: tensor<4x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.relu' op 'full_core_sync' is a unit attribute
  %0 = npu.relu %a {full_core_sync = 1 : i64} : (tensor<4x8xf16>) -> tensor<4x8xf16>
  func.return
}

// -----

// Tests that npu ops take tensors only.
func.func @case(%a: f32) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.neg' op f32 should be of base attribute tensor
  %0 = npu.neg %a : (f32) -> f32
  func.return
}

// -----

// Tests that swiglu rejects an odd axis.
func.func @case(%a: tensor<4x15xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.swiglu' op axis 1 has odd size 15; swiglu halves it
  %0 = npu.swiglu %a : (tensor<4x15xf16>) -> tensor<4x7xf16>
  func.return
}

// -----

// Tests that swiglu's result halves the axis.
func.func @case(%a: tensor<4x16xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.swiglu' op result type tensor<4x16xf16> does not match the inferred type tensor<4x8xf16>
  %0 = npu.swiglu %a : (tensor<4x16xf16>) -> tensor<4x16xf16>
  func.return
}

// -----

// Tests that softmax's axis must exist.
func.func @case(%a: tensor<4x16xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.softmax' op axis 2 is out of range for rank 2
  %0 = npu.softmax %a {axis = 2 : i64} : (tensor<4x16xf16>) -> tensor<4x16xf16>
  func.return
}

// -----

// Tests that a negative axis counts from the end but must still exist.
func.func @case(%a: tensor<4x16xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.softmax' op axis -3 is out of range for rank 2
  %0 = npu.softmax %a {axis = -3 : i64} : (tensor<4x16xf16>) -> tensor<4x16xf16>
  func.return
}

// -----

// Tests that rms_norm's gamma is a vector of the last dim.
func.func @case(%a: tensor<4x16xf16>, %g: tensor<4xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.rms_norm' op gamma must be a vector of the last dim (16), got 4
  %0 = npu.rms_norm %a, %g : (tensor<4x16xf16>, tensor<4xf16>) -> tensor<4x16xf16>
  func.return
}

// -----

// Tests that rms_norm's gamma has rank 1.
func.func @case(%a: tensor<4x16xf16>, %g: tensor<4x16xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.rms_norm' op gamma must be a vector of the last dim (16), got 4x16
  %0 = npu.rms_norm %a, %g : (tensor<4x16xf16>, tensor<4x16xf16>) -> tensor<4x16xf16>
  func.return
}

// -----

// Tests that rms_norm's input and gamma share an element type.
func.func @case(%a: tensor<4x16xf16>, %g: tensor<16xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.rms_norm' op input and gamma element types differ
  %0 = npu.rms_norm %a, %g : (tensor<4x16xf16>, tensor<16xf32>) -> tensor<4x16xf16>
  func.return
}

// -----

// Tests that rms_norm's epsilon is positive.
func.func @case(%a: tensor<4x16xf16>, %g: tensor<16xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.rms_norm' op epsilon must be > 0
  %0 = npu.rms_norm %a, %g {epsilon = 0.0 : f32} : (tensor<4x16xf16>, tensor<16xf16>) -> tensor<4x16xf16>
  func.return
}

// -----

// Tests that rms_norm's input is not a scalar.
func.func @case(%a: tensor<f16>, %g: tensor<1xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.rms_norm' op input must have rank >= 1
  %0 = npu.rms_norm %a, %g : (tensor<f16>, tensor<1xf16>) -> tensor<f16>
  func.return
}

// -----

// Tests that a reduction names each axis once (1 and -1 are the same axis).
func.func @case(%a: tensor<4x8xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.reduce_sum' op axes [1, -1] name an axis twice
  %0 = npu.reduce_sum %a {axes = array<i64: 1, -1>} : (tensor<4x8xf32>) -> tensor<4xf32>
  func.return
}

// -----

// Tests that a reduction's axes must exist.
func.func @case(%a: tensor<4x8xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.reduce_max' op axis 2 is out of range for rank 2
  %0 = npu.reduce_max %a {axes = array<i64: 2>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

// Tests that keepdims keeps reduced axes as 1.
func.func @case(%a: tensor<4x8xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.reduce_sum' op result type tensor<4xf32> does not match the inferred type tensor<4x1xf32>
  %0 = npu.reduce_sum %a {axes = array<i64: 1>, keepdims} : (tensor<4x8xf32>) -> tensor<4xf32>
  func.return
}

// -----

// Tests that transpose's perm is a permutation of the dims.
func.func @case(%a: tensor<4x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.transpose' op perm [0, 0] is not a permutation of the 2 dims
  %0 = npu.transpose %a {perm = array<i64: 0, 0>} : (tensor<4x8xf16>) -> tensor<4x4xf16>
  func.return
}

// -----

// Tests that transpose's perm names every dim.
func.func @case(%a: tensor<4x8x2xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.transpose' op perm [1, 0] is not a permutation of the 3 dims
  %0 = npu.transpose %a {perm = array<i64: 1, 0>} : (tensor<4x8x2xf16>) -> tensor<8x4xf16>
  func.return
}

// -----

// Tests that transpose needs a perm.
func.func @case(%a: tensor<4x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.transpose' op attribute 'perm' expected in operation 'npu.transpose'
  %0 = npu.transpose %a : (tensor<4x8xf16>) -> tensor<8x4xf16>
  func.return
}

// -----

// Tests that transpose's result follows the perm.
func.func @case(%a: tensor<4x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.transpose' op result type tensor<4x8xf16> does not match the inferred type tensor<8x4xf16>
  %0 = npu.transpose %a {perm = array<i64: 1, 0>} : (tensor<4x8xf16>) -> tensor<4x8xf16>
  func.return
}

// -----

// Tests that reshape keeps the element count.
func.func @case(%a: tensor<4x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.reshape' op cannot reshape 4x8 (32 elements) to 30 (30 elements)
  %0 = npu.reshape %a : (tensor<4x8xf16>) -> tensor<30xf16>
  func.return
}

// -----

// Tests that reshape solves at most one unknown dim.
func.func @case(%a: tensor<4x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.reshape' op cannot infer 2 unknown dims of ?x? from 4x8; at most one may be '?'
  %0 = npu.reshape %a : (tensor<4x8xf16>) -> tensor<?x?xf16>
  func.return
}

// -----

// Tests that reshape's unknown dim must divide the element count.
func.func @case(%a: tensor<4x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.reshape' op cannot reshape 4x8 to 5x?
  %0 = npu.reshape %a : (tensor<4x8xf16>) -> tensor<5x?xf16>
  func.return
}

// -----

// Tests that reshape keeps the element type.
func.func @case(%a: tensor<4x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.reshape' op reshape keeps the element type
  %0 = npu.reshape %a : (tensor<4x8xf16>) -> tensor<32xf32>
  func.return
}

// -----

// Tests that concat's operands agree off the concat axis.
func.func @case(%a: tensor<4x8xf16>, %b: tensor<4x6xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.concat' op operands differ in dim 1 (8 vs 6), which is not the concat axis
  %0 = npu.concat %a, %b {axis = 0 : i64} : (tensor<4x8xf16>, tensor<4x6xf16>) -> tensor<8x8xf16>
  func.return
}

// -----

// Tests that concat's operands share element type and rank.
func.func @case(%a: tensor<4x8xf16>, %b: tensor<8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.concat' op operands must share element type and rank
  %0 = npu.concat %a, %b : (tensor<4x8xf16>, tensor<8xf16>) -> tensor<4x16xf16>
  func.return
}

// -----

// Tests that concat needs an operand.
func.func @case() {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.concat' op needs at least one operand
  %0 = npu.concat : () -> tensor<4x8xf16>
  func.return
}

// -----

// Tests that concat's result adds up the axis.
func.func @case(%a: tensor<4x8xf16>, %b: tensor<2x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.concat' op result type tensor<4x8xf16> does not match the inferred type tensor<6x8xf16>
  %0 = npu.concat %a, %b {axis = 0 : i64} : (tensor<4x8xf16>, tensor<2x8xf16>) -> tensor<4x8xf16>
  func.return
}

// -----

// Tests that a slice stays inside the tensor.
func.func @case(%a: tensor<4x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.slice' op dim 1: offset 6 + size 4 exceeds the dim (8)
  %0 = npu.slice %a {offsets = array<i64: 0, 6>, sizes = array<i64: 4, 4>} : (tensor<4x8xf16>) -> tensor<4x4xf16>
  func.return
}

// -----

// Tests that a slice gives one offset, size and stride per dim.
func.func @case(%a: tensor<4x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.slice' op offsets, sizes and strides need one entry per dim (2)
  %0 = npu.slice %a {offsets = array<i64: 0>, sizes = array<i64: 4>} : (tensor<4x8xf16>) -> tensor<4xf16>
  func.return
}

// -----

// Tests that slice strides are positive.
func.func @case(%a: tensor<4x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.slice' op dim 1: offset and size must be >= 0 and stride >= 1
  %0 = npu.slice %a {offsets = array<i64: 0, 0>, sizes = array<i64: 4, 8>, strides = array<i64: 1, 0>} : (tensor<4x8xf16>) -> tensor<4x8xf16>
  func.return
}

// -----

// Tests that a slice needs offsets and sizes.
func.func @case(%a: tensor<4x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.slice' op attribute 'sizes' expected in operation 'npu.slice'
  %0 = npu.slice %a {offsets = array<i64: 0, 0>} : (tensor<4x8xf16>) -> tensor<4x8xf16>
  func.return
}

// -----

// Tests that a strided slice's result has ceil(size / stride) elements.
func.func @case(%a: tensor<4x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.slice' op result type tensor<4x2xf16> does not match the inferred type tensor<4x3xf16>
  %0 = npu.slice %a {offsets = array<i64: 0, 0>, sizes = array<i64: 4, 8>, strides = array<i64: 1, 3>} : (tensor<4x8xf16>) -> tensor<4x2xf16>
  func.return
}

// -----

// Tests that gather's indices are integers, not floats.
func.func @case(%t: tensor<100x16xf16>, %i: tensor<4xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.gather' op indices must be i32 or i64, got f32
  %0 = npu.gather %t, %i : (tensor<100x16xf16>, tensor<4xf32>) -> tensor<4x16xf16>
  func.return
}

// -----

// Tests that gather's indices are not booleans.
func.func @case(%t: tensor<100x16xf16>, %i: tensor<4xi1>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.gather' op indices must be i32 or i64, got i1
  %0 = npu.gather %t, %i : (tensor<100x16xf16>, tensor<4xi1>) -> tensor<4x16xf16>
  func.return
}

// -----

// Tests that gather's axis must exist.
func.func @case(%t: tensor<100x16xf16>, %i: tensor<4xi64>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.gather' op axis 2 is out of range for rank 2
  %0 = npu.gather %t, %i {axis = 2 : i64} : (tensor<100x16xf16>, tensor<4xi64>) -> tensor<4x16xf16>
  func.return
}

// -----

// Tests that topk's k fits the axis.
func.func @case(%a: tensor<4x8xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.topk' op k = 9 must be in [1, 8]
  %v, %i = npu.topk %a {k = 9 : i64} : (tensor<4x8xf32>) -> (tensor<4x9xf32>, tensor<4x9xi64>)
  func.return
}

// -----

// Tests that topk's k is at least 1.
func.func @case(%a: tensor<4x8xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.topk' op k = 0 must be in [1, 8]
  %v, %i = npu.topk %a {k = 0 : i64} : (tensor<4x8xf32>) -> (tensor<4x0xf32>, tensor<4x0xi64>)
  func.return
}

// -----

// Tests that topk needs k.
func.func @case(%a: tensor<4x8xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.topk' op attribute 'k' expected in operation 'npu.topk'
  %v, %i = npu.topk %a : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi64>)
  func.return
}

// -----

// Tests that topk's indices are i64 (the second result is checked too).
func.func @case(%a: tensor<4x8xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.topk' op result #1 type tensor<4x2xi32> does not match the inferred type tensor<4x2xi64>
  %v, %i = npu.topk %a {k = 2 : i64} : (tensor<4x8xf32>) -> (tensor<4x2xf32>, tensor<4x2xi32>)
  func.return
}

// -----

// Tests that topk has two results.
func.func @case(%a: tensor<4x8xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.topk' op Expected 2 result types, but got 1
  %v = npu.topk %a {k = 2 : i64} : (tensor<4x8xf32>) -> tensor<4x2xf32>
  func.return
}

// -----

// Tests that nonzero gives one row of rank i64 indices per element.
func.func @case(%a: tensor<4x8xi1>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.nonzero' op result type tensor<?x3xi64> does not match the inferred type tensor<?x2xi64>
  %0 = npu.nonzero %a : (tensor<4x8xi1>) -> tensor<?x3xi64>
  func.return
}

// -----

// Tests that a collective's dim 0 splits evenly over the group.
func.func @case(%a: tensor<63x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.reduce_scatter' op dim 0 (63) is not divisible by group_size (2)
  %0 = npu.reduce_scatter %a {group_size = 2 : i64} : (tensor<63x8xf16>) -> tensor<31x8xf16>
  func.return
}

// -----

// Tests that all_to_all's dim 0 splits evenly over the group.
func.func @case(%a: tensor<6x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.all_to_all' op dim 0 (6) is not divisible by group_size (4)
  %0 = npu.all_to_all %a {group_size = 4 : i64} : (tensor<6x8xf16>) -> tensor<6x8xf16>
  func.return
}

// -----

// Tests that a collective's mode is "sdma" or "aiv".
func.func @case(%a: tensor<64xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.all_reduce' op mode must be "sdma" or "aiv", got "rdma"
  %0 = npu.all_reduce %a {group_size = 2 : i64, mode = "rdma"} : (tensor<64xf16>) -> tensor<64xf16>
  func.return
}

// -----

// Tests that a collective's group has at least one rank.
func.func @case(%a: tensor<64xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.all_gather' op group_size must be >= 1, got 0
  %0 = npu.all_gather %a {group_size = 0 : i64} : (tensor<64xf16>) -> tensor<64xf16>
  func.return
}

// -----

// Tests that reduce_scatter needs a dim 0.
func.func @case(%a: tensor<f16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.reduce_scatter' op needs a tensor of rank >= 1
  %0 = npu.reduce_scatter %a {group_size = 2 : i64} : (tensor<f16>) -> tensor<f16>
  func.return
}

// -----

// Tests that all_gather needs a dim 0.
func.func @case(%a: tensor<f16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.all_gather' op needs a tensor of rank >= 1
  %0 = npu.all_gather %a {group_size = 2 : i64} : (tensor<f16>) -> tensor<f16>
  func.return
}

// -----

// Tests that all_gather's result joins dim 0 over the group.
func.func @case(%a: tensor<32x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.all_gather' op result type tensor<32x8xf16> does not match the inferred type tensor<64x8xf16>
  %0 = npu.all_gather %a {group_size = 2 : i64} : (tensor<32x8xf16>) -> tensor<32x8xf16>
  func.return
}

// -----

// Tests that a collective's group is a string.
func.func @case(%a: tensor<64xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.all_reduce' op 3 : i64 should be of base attribute string
  %0 = npu.all_reduce %a {group_size = 2 : i64, group = 3 : i64} : (tensor<64xf16>) -> tensor<64xf16>
  func.return
}

// -----

// Tests that a collective names its group size: the interpreter and the cost
// model must not guess it.
func.func @case(%a: tensor<64xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.all_reduce' op attribute 'group_size' expected in operation 'npu.all_reduce'
  %0 = npu.all_reduce %a {mode = "aiv"} : (tensor<64xf16>) -> tensor<64xf16>
  func.return
}

// -----

// Tests that group_size is an i64 integer.
func.func @case(%a: tensor<64xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.all_reduce' op 'group_size' must be an i64 integer (N : i64), got 2 : i32
  %0 = npu.all_reduce %a {group_size = 2 : i32} : (tensor<64xf16>) -> tensor<64xf16>
  func.return
}

// -----

// Tests that a collective's mode is a string.
func.func @case(%a: tensor<64xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.all_reduce' op mode must be "sdma" or "aiv", got 1 : i64
  %0 = npu.all_reduce %a {group_size = 2 : i64, mode = 1 : i64} : (tensor<64xf16>) -> tensor<64xf16>
  func.return
}

// -----

// Tests that transpose's perm is an i64 array, not a float one.
func.func @case(%a: tensor<4x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'npu.transpose' op 'perm' must be an i64 array (array<i64: ...>), got array<f32: 1.000000e+00, 0.000000e+00>
// CHECK-NEXT: {{^}}  %0 = npu.transpose %a {perm = array<f32: 1.0, 0.0>} : (tensor<4x8xf16>) -> tensor<8x4xf16>
  %0 = npu.transpose %a {perm = array<f32: 1.0, 0.0>} : (tensor<4x8xf16>) -> tensor<8x4xf16>
  func.return
}

// -----

// Tests that transpose's perm is an array, not a list attribute.
func.func @case(%a: tensor<4x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.transpose' op 'perm' must be an i64 array (array<i64: ...>), got [1 : i64, 0 : i64]
  %0 = npu.transpose %a {perm = [1, 0]} : (tensor<4x8xf16>) -> tensor<8x4xf16>
  func.return
}

// -----

// Tests that a reduction's axes are an i64 array (i32 is not enough).
func.func @case(%a: tensor<4x8xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.reduce_sum' op 'axes' must be an i64 array (array<i64: ...>), got array<i32: 1>
  %0 = npu.reduce_sum %a {axes = array<i32: 1>} : (tensor<4x8xf32>) -> tensor<4xf32>
  func.return
}

// -----

// Tests that a slice's offsets are an i64 array.
func.func @case(%a: tensor<4x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.slice' op 'offsets' must be an i64 array (array<i64: ...>), got array<i32: 0, 0>
  %0 = npu.slice %a {offsets = array<i32: 0, 0>, sizes = array<i64: 4, 4>} : (tensor<4x8xf16>) -> tensor<4x4xf16>
  func.return
}

// -----

// Tests that a slice's optional strides are an i64 array too.
func.func @case(%a: tensor<4x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.slice' op 'strides' must be an i64 array (array<i64: ...>), got array<f32: 1.000000e+00, 2.000000e+00>
  %0 = npu.slice %a {offsets = array<i64: 0, 0>, sizes = array<i64: 4, 4>, strides = array<f32: 1.0, 2.0>} : (tensor<4x8xf16>) -> tensor<4x2xf16>
  func.return
}

// -----

// Tests that a slice needs offsets as well as sizes.
func.func @case(%a: tensor<4x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.slice' op attribute 'offsets' expected in operation 'npu.slice'
  %0 = npu.slice %a {sizes = array<i64: 4, 4>} : (tensor<4x8xf16>) -> tensor<4x4xf16>
  func.return
}

// -----

// Tests that an axis is an i64 integer.
func.func @case(%a: tensor<4x8xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.softmax' op 'axis' must be an i64 integer (N : i64), got 1 : i32
  %0 = npu.softmax %a {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

// Tests that topk's k is an i64 integer, not a float.
func.func @case(%a: tensor<4x8xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.topk' op 'k' must be an i64 integer (N : i64), got 2.000000e+00 : f32
  %v, %i = npu.topk %a {k = 2.0 : f32} : (tensor<4x8xf32>) -> (tensor<4x2xf32>, tensor<4x2xi64>)
  func.return
}

// -----

// Tests that rms_norm's epsilon is an f32 float.
func.func @case(%a: tensor<4x8xf16>, %g: tensor<8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.rms_norm' op 'epsilon' must be an f32 float (X : f32), got 1 : i64
  %0 = npu.rms_norm %a, %g {epsilon = 1 : i64} : (tensor<4x8xf16>, tensor<8xf16>) -> tensor<4x8xf16>
  func.return
}

// -----

// Tests that gelu's approximate is a string.
func.func @case(%a: tensor<4x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.gelu' op approximate must be "tanh" or "none", got unit
  %0 = npu.gelu %a {approximate} : (tensor<4x8xf16>) -> tensor<4x8xf16>
  func.return
}

// -----

// Tests that the module's npu.target names a device.
// CHECK: invalid.mlir:[[# @LINE + 1]]:1: error: 'builtin.module' op 'npu.target' must be a non-empty string naming a device preset
module attributes {npu.target = ""} {
}

// -----

// Tests that the module's npu.target is a string.
// CHECK: invalid.mlir:[[# @LINE + 1]]:1: error: 'builtin.module' op 'npu.target' must be a non-empty string naming a device preset
module attributes {npu.target = 910} {
}

// -----

// Tests that an unknown npu op is a parse error at its name.
func.func @case(%a: tensor<4xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 3]]:8: error: Operation npu.frobnicate is not registered
// CHECK-NEXT: {{^}}  %0 = npu.frobnicate %a : (tensor<4xf16>) -> tensor<4xf16>
// CHECK-NEXT: ^
  %0 = npu.frobnicate %a : (tensor<4xf16>) -> tensor<4xf16>
  func.return
}

// -----

// Tests that the custom syntax needs a functional type after the colon.
func.func @case(%a: tensor<4xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:25: error: Expected '('
  %0 = npu.add %a, %a : tensor<4xf16>
  func.return
}

// -----

// Tests that the functional type gives one type per operand.
func.func @case(%a: tensor<4xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:26: error: Expected 2 operand types, but got 1
  %0 = npu.add %a, %a : (tensor<4xf16>) -> tensor<4xf16>
  func.return
}

// -----

// Tests that operand types in the functional type match the values'.
func.func @case(%a: tensor<4xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 3]]:17: error: operand is used with type tensor<4xf32>, but has been previously used or defined with type tensor<4xf16>
// CHECK-NEXT: {{^}}  %0 = npu.relu %a : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: ^
  %0 = npu.relu %a : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// Tests that the custom syntax needs the colon and types.
func.func @case(%a: tensor<4xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: Expected ':'
  %0 = npu.relu %a
  func.return
}

// -----

// Tests that conv2d's input channels must match the filter's channels times groups.
func.func @case(%x: tensor<1x4x8x8xf16>, %w: tensor<6x3x3x3xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.conv2d' op input has 4 channels but the filter takes 3 per group x 1 groups
  %0 = npu.conv2d %x, %w : (tensor<1x4x8x8xf16>, tensor<6x3x3x3xf16>) -> tensor<1x6x6x6xf16>
  func.return
}

// -----

// Tests that conv2d's declared result must be the window formula's output.
func.func @case(%x: tensor<1x4x8x8xf16>, %w: tensor<6x4x3x3xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.conv2d' op result type tensor<1x6x6x6xf16> does not match the inferred type tensor<1x6x3x3xf16>
  %0 = npu.conv2d %x, %w {strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf16>, tensor<6x4x3x3xf16>) -> tensor<1x6x6x6xf16>
  func.return
}

// -----

// Tests that conv2d's bias has one value per output channel of the result's type.
func.func @case(%x: tensor<1x4x8x8xf16>, %w: tensor<6x4x3x3xf16>, %b: tensor<4xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.conv2d' op bias must be tensor<6xf16> (one value per output channel), got tensor<4xf16>
  %0 = npu.conv2d %x, %w, %b : (tensor<1x4x8x8xf16>, tensor<6x4x3x3xf16>, tensor<4xf16>) -> tensor<1x6x6x6xf16>
  func.return
}

// -----

// Tests that conv2d's strides name two dims.
func.func @case(%x: tensor<1x4x8x8xf16>, %w: tensor<6x4x3x3xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.conv2d' op 'strides' needs 2 values, got 4
  %0 = npu.conv2d %x, %w {strides = array<i64: 1, 1, 2, 2>} : (tensor<1x4x8x8xf16>, tensor<6x4x3x3xf16>) -> tensor<1x6x6x6xf16>
  func.return
}

// -----

// Tests that pool2d's kind is max or avg.
func.func @case(%x: tensor<1x4x8x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.pool2d' op kind must be "max" or "avg", got "min"
  %0 = npu.pool2d %x {kind = "min", window = array<i64: 2, 2>} : (tensor<1x4x8x8xf16>) -> tensor<1x4x7x7xf16>
  func.return
}

// -----

// Tests that pool2d needs a window.
func.func @case(%x: tensor<1x4x8x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.pool2d' op needs 'window'
  %0 = npu.pool2d %x {kind = "max"} : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  func.return
}

// -----

// Tests that layout_transform keeps the type.
func.func @case(%x: tensor<1x4x8x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.layout_transform' op result type tensor<1x4x8x8xf32> does not match the inferred type tensor<1x4x8x8xf16>
  %0 = npu.layout_transform %x {src_format = "NC1HWC0", dst_format = "NCHW"} : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf32>
  func.return
}

// -----

// Tests that opaque's engine is one of the engines an op can run on.
func.func @case(%x: tensor<4xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.opaque' op engine must be one of "cube", "vector", "aicpu", got "gpu"
  %0 = npu.opaque %x {ge_type = "Foo", engine = "gpu"} : (tensor<4xf16>) -> tensor<4xf16>
  func.return
}

// -----

// Tests that opaque needs its ge_type.
func.func @case(%x: tensor<4xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.opaque' op attribute 'ge_type' expected in operation 'npu.opaque'
  %0 = npu.opaque %x {engine = "vector"} : (tensor<4xf16>) -> tensor<4xf16>
  func.return
}

// -----

// Tests that a constant's element type is one the NPU has.
func.func @case() {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.constant' op unsupported element type index
  %c = npu.constant dense<1> : tensor<index>
  func.return
}

// -----

// Tests that a dense literal of an element type with no storage format is a located
// error at the literal, not a crash.
func.func @case() {
// CHECK: invalid.mlir:[[# @LINE + 1]]:26: error: a dense literal of element type f80 cannot be stored
  %c = npu.constant dense<0.5> : tensor<f80>
  func.return
}

// -----

// Tests that fused attention's query heads must group over the key/value heads.
func.func @case(%q: tensor<1x3x4x8xf16>, %k: tensor<1x2x4x8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.fusion_attention' op query heads (3) must be a multiple of key/value heads (2)
  %0 = npu.fusion_attention %q, %k, %k : (tensor<1x3x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>) -> tensor<1x3x4x8xf16>
  func.return
}

// -----

// Tests that mask_drops needs an i1 mask.
func.func @case(%q: tensor<1x2x4x8xf16>, %m: tensor<4x4xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.fusion_attention' op mask_drops needs an i1 mask
  %0 = npu.fusion_attention %q, %q, %q, %m {mask_drops} : (tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<4x4xf16>) -> tensor<1x2x4x8xf16>
  func.return
}

// -----

// Tests that a grouped matmul has one offset per expert.
func.func @case(%x: tensor<8x4xf16>, %w: tensor<3x4x2xf16>, %o: tensor<2xi32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.grouped_matmul' op offsets has 2 entries for 3 experts
  %0 = npu.grouped_matmul %x, %w, %o : (tensor<8x4xf16>, tensor<3x4x2xf16>, tensor<2xi32>) -> tensor<8x2xf16>
  func.return
}

// -----

// Tests that the MoE gate's k is at most the number of experts.
func.func @case(%l: tensor<4x2xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.moe_gating_topk_softmax' op k = 3 must be in [1, 2] (the experts)
  %w, %e, %r = npu.moe_gating_topk_softmax %l {k = 3 : i64} : (tensor<4x2xf32>) -> (tensor<4x3xf32>, tensor<4x3xi32>, tensor<4x3xi32>)
  func.return
}

// -----

// Tests that the MoE combine needs T * k expanded rows.
func.func @case(%x: tensor<6x4xf16>, %s: tensor<4x2xf16>, %r: tensor<6xi32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.moe_finalize_routing' op expanded (6x4) and expanded_rows (6) must have T * k = 8 rows for scales 4x2
  %0 = npu.moe_finalize_routing %x, %s, %r : (tensor<6x4xf16>, tensor<4x2xf16>, tensor<6xi32>) -> tensor<4x4xf16>
  func.return
}

// -----

// Tests that npu.select's condition is i1.
func.func @case(%m: tensor<4xf32>, %a: tensor<4xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.select' op the condition must be i1, got f32
  %0 = npu.select %m, %a, %a : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// Tests that a bitwise op takes integers, as torch's does.
func.func @case(%a: tensor<4xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.bitwise_and' op operands must be integers or i1, got f32
  %0 = npu.bitwise_and %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// Tests that a comparison gives i1.
func.func @case(%a: tensor<4xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.lt' op result type tensor<4xf32> does not match the inferred type tensor<4xi1>
  %0 = npu.lt %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// Tests that npu.index takes integer index tensors.
func.func @case(%x: tensor<4x8xf32>, %i: tensor<3xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.index' op an index must be i32 or i64, got f32
  %0 = npu.index %x, %i {dims = array<i64: 1>} : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

// Tests that npu.pad has a before and an after pad for each dim.
func.func @case(%x: tensor<4x8xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.pad' op 'pads' needs 4 values, got 2
  %0 = npu.pad %x {pads = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x10xf32>
  func.return
}

// -----

// Tests that npu.scatter's reduction is one it knows.
func.func @case(%x: tensor<4xf32>, %i: tensor<2xi64>, %u: tensor<2xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.scatter' op reduce must be one of none, sum, prod, amax, amin, mean, got 'max'
  %0 = npu.scatter %x, %i, %u {reduce = "max"} : (tensor<4xf32>, tensor<2xi64>, tensor<2xf32>) -> tensor<4xf32>
  func.return
}

// -----

// Tests that npu.as_strided stays inside its operand.
func.func @case(%x: tensor<4x8xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.as_strided' op elements up to 40 from offset 4 exceed the 32 of 4x8
  %0 = npu.as_strided %x {sizes = array<i64: 5>, strides = array<i64: 9>, offset = 4 : i64} : (tensor<4x8xf32>) -> tensor<5xf32>
  func.return
}

// -----

// Tests that npu.arange makes a 1-D tensor.
func.func @case() {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.arange' op the result must be 1-D, got tensor<2x4xi64>
  %0 = npu.arange : () -> tensor<2x4xi64>
  func.return
}
