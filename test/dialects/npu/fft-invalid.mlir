// RUN: npuir-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// npu.fft's errors, each at the op at fault.


func.func @c2c_of_real(%x: tensor<4x8xf32>) {
// CHECK: fft-invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.fft' op a c2c transform takes a complex tensor, got f32
  %0 = npu.fft %x {kind = "c2c", axes = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @no_kind(%x: tensor<4x8xcomplex<f32>>) {
// CHECK: fft-invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.fft' op kind must be one of r2c, c2r, c2c, got 'dct'
  %0 = npu.fft %x {kind = "dct", axes = array<i64: 1>} : (tensor<4x8xcomplex<f32>>) -> tensor<4x8xcomplex<f32>>
  func.return
}
