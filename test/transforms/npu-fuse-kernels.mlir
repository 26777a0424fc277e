// RUN: npuir-opt %s --split-input-file -p npu-fuse-kernels | filecheck %s

// Tests that a half-precision model's RMSNorm (cast to f32, mean of squares, rsqrt, cast
// back, times gamma) becomes one npu.rms_norm on the f16 input, with its epsilon, its
// name and its line, and that none of the chain is left.

func.func @rms_norm(%x: tensor<4x8xf16>, %gamma: tensor<8xf16>) -> tensor<4x8xf16> {
  %n = npu.constant dense<8.0> : tensor<f32>
  %eps = npu.constant dense<1.0e-05> : tensor<f32>
  %x32 = npu.cast %x : (tensor<4x8xf16>) -> tensor<4x8xf32>
  %s = npu.mul %x32, %x32 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = npu.reduce_sum %s {axes = array<i64: -1>, keepdims} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %v = npu.div %m, %n : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %e = npu.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r = npu.rsqrt %e : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %h = npu.mul %x32, %r : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %h16 = npu.cast %h : (tensor<4x8xf32>) -> tensor<4x8xf16>
  %y = npu.mul %gamma, %h16 {npu.op_name = "mul_4"} : (tensor<8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
  func.return %y : tensor<4x8xf16>
}

// CHECK-LABEL: func.func @rms_norm
// CHECK-NOT:     npu.rsqrt
// CHECK:         %y = npu.rms_norm %x, %gamma {epsilon = 1.000000e-05 : f32, npu.op_name = "mul_4"} : (tensor<4x8xf16>, tensor<8xf16>) -> tensor<4x8xf16>
// CHECK-NEXT:    func.return %y

// -----

// Tests that a chain whose value another op reads stays as it is: fusing it would compute
// that value twice.

func.func @shared(%x: tensor<4x8xf32>, %gamma: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  %n = npu.constant dense<8.0> : tensor<f32>
  %eps = npu.constant dense<1.0e-06> : tensor<f32>
  %s = npu.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = npu.reduce_sum %s {axes = array<i64: 1>, keepdims} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %v = npu.div %m, %n : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %e = npu.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r = npu.rsqrt %e : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %h = npu.mul %x, %r : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %y = npu.mul %h, %gamma : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %y, %r : tensor<4x8xf32>, tensor<4x1xf32>
}

// CHECK-LABEL: func.func @shared
// CHECK-NOT:     npu.rms_norm
// CHECK:         npu.rsqrt

// -----

// Tests that a mean over another count than the last dim is no RMSNorm.

func.func @not_a_mean(%x: tensor<4x8xf32>, %gamma: tensor<8xf32>) -> tensor<4x8xf32> {
  %n = npu.constant dense<4.0> : tensor<f32>
  %eps = npu.constant dense<1.0e-06> : tensor<f32>
  %s = npu.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = npu.reduce_sum %s {axes = array<i64: 1>, keepdims} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %v = npu.div %m, %n : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %e = npu.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r = npu.rsqrt %e : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %h = npu.mul %x, %r : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %y = npu.mul %h, %gamma : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @not_a_mean
// CHECK-NOT:     npu.rms_norm

// -----

// Tests that rotate-half rotary embedding (x * cos + cat(-x2, x1) * sin) becomes one
// npu.rotary_embedding.

!q = tensor<1x4x6x8xf32>
!h = tensor<1x4x6x4xf32>
!c = tensor<1x1x6x8xf32>
func.func @rotary(%x: !q, %cos: !c, %sin: !c) -> !q {
  %a = npu.mul %x, %cos : (!q, !c) -> !q
  %x1 = npu.slice %x {offsets = array<i64: 0, 0, 0, 0>, sizes = array<i64: 1, 4, 6, 4>} : (!q) -> !h
  %x2 = npu.slice %x {offsets = array<i64: 0, 0, 0, 4>, sizes = array<i64: 1, 4, 6, 4>} : (!q) -> !h
  %n = npu.neg %x2 : (!h) -> !h
  %t = npu.concat %n, %x1 {axis = -1 : i64} : (!h, !h) -> !q
  %b = npu.mul %t, %sin : (!q, !c) -> !q
  %y = npu.add %a, %b : (!q, !q) -> !q
  func.return %y : !q
}

// CHECK-LABEL: func.func @rotary
// CHECK-NEXT:    %y = npu.rotary_embedding %x, %cos, %sin : (tensor<1x4x6x8xf32>, tensor<1x1x6x8xf32>, tensor<1x1x6x8xf32>) -> tensor<1x4x6x8xf32>
// CHECK-NEXT:    func.return %y

// -----

// Tests that the halves swapped the other way (cat(x2, -x1)) are not rotate-half.

!q = tensor<1x4x6x8xf32>
!h = tensor<1x4x6x4xf32>
func.func @other_rotation(%x: !q, %cos: !q, %sin: !q) -> !q {
  %a = npu.mul %x, %cos : (!q, !q) -> !q
  %x1 = npu.slice %x {offsets = array<i64: 0, 0, 0, 0>, sizes = array<i64: 1, 4, 6, 4>} : (!q) -> !h
  %x2 = npu.slice %x {offsets = array<i64: 0, 0, 0, 4>, sizes = array<i64: 1, 4, 6, 4>} : (!q) -> !h
  %n = npu.neg %x1 : (!h) -> !h
  %t = npu.concat %x2, %n {axis = -1 : i64} : (!h, !h) -> !q
  %b = npu.mul %t, %sin : (!q, !q) -> !q
  %y = npu.add %a, %b : (!q, !q) -> !q
  func.return %y : !q
}

// CHECK-LABEL: func.func @other_rotation
// CHECK-NOT:     npu.rotary_embedding
