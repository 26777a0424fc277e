// RUN: npuir-opt %s | filecheck %s
// RUN: npuir-opt %s --print-op-generic | npuir-opt | filecheck %s

// npu.fft on complex element types: each kind prints as it parses (fft-invalid.mlir has
// its errors).

// CHECK-LABEL: func.func @kinds
// CHECK:  npu.fft %x {kind = "r2c", axes = array<i64: 1>, onesided} : (tensor<4x8xf32>) -> tensor<4x5xcomplex<f32>>
// CHECK:  npu.fft %{{.*}} {kind = "c2c", axes = array<i64: 0, 1>, normalization = 2 : i64, inverse} : (tensor<4x5xcomplex<f32>>) -> tensor<4x5xcomplex<f32>>
// CHECK:  npu.fft %{{.*}} {kind = "c2r", axes = array<i64: 1>, last_dim_size = 8 : i64} : (tensor<4x5xcomplex<f32>>) -> tensor<4x8xf32>
// CHECK:  npu.fft %d {kind = "r2c", axes = array<i64: 0>} : (tensor<6xf64>) -> tensor<6xcomplex<f64>>
func.func @kinds(%x: tensor<4x8xf32>, %d: tensor<6xf64>) -> (tensor<4x8xf32>, tensor<6xcomplex<f64>>) {
  %s = npu.fft %x {kind = "r2c", axes = array<i64: 1>, onesided} : (tensor<4x8xf32>) -> tensor<4x5xcomplex<f32>>
  %i = npu.fft %s {kind = "c2c", axes = array<i64: 0, 1>, normalization = 2 : i64, inverse} : (tensor<4x5xcomplex<f32>>) -> tensor<4x5xcomplex<f32>>
  %r = npu.fft %i {kind = "c2r", axes = array<i64: 1>, last_dim_size = 8 : i64} : (tensor<4x5xcomplex<f32>>) -> tensor<4x8xf32>
  %w = npu.fft %d {kind = "r2c", axes = array<i64: 0>} : (tensor<6xf64>) -> tensor<6xcomplex<f64>>
  func.return %r, %w : tensor<4x8xf32>, tensor<6xcomplex<f64>>
}
