// RUN: npuir-opt %s | filecheck %s
// RUN: npuir-opt %s --print-op-generic | npuir-opt | filecheck %s
// RUN: npuir-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Every `npu` op in its custom syntax: printing the parsed IR reproduces it,
// and so does printing the generic form and parsing that back.

// The module's target device survives the round trip.
// CHECK:      builtin.module attributes {npu.target = "910b2"} {
// GENERIC:    "builtin.module"() ({
module attributes {npu.target = "910b2"} {

// Tests that a constant prints its value with its type and feeds ops like an argument.
// CHECK-LABEL: func.func @constant
// CHECK-NEXT:    %c = npu.constant dense<5.000000e-01> : tensor<f16>
// CHECK-NEXT:    %n = npu.constant dense<[1, 2]> : tensor<2xi32>
// CHECK-NEXT:    %0 = npu.mul %x, %c : (tensor<4xf16>, tensor<f16>) -> tensor<4xf16>
// GENERIC-LABEL: "func.func"() <{sym_name = "constant"
// GENERIC:       %c = "npu.constant"() <{value = dense<5.000000e-01> : tensor<f16>}> : () -> tensor<f16>
  func.func @constant(%x: tensor<4xf16>) -> tensor<4xf16> {
    %c = npu.constant dense<0.5> : tensor<f16>
    %n = npu.constant dense<[1, 2]> : tensor<2xi32>
    %0 = npu.mul %x, %c : (tensor<4xf16>, tensor<f16>) -> tensor<4xf16>
    func.return %0 : tensor<4xf16>
  }

// Tests that matmul prints both transpose flags as unit attributes.
// CHECK-LABEL: func.func @matmul
// CHECK-NEXT:    %0 = npu.matmul %a, %b : (tensor<64x32xf16>, tensor<32x16xf16>) -> tensor<64x16xf16>
// CHECK-NEXT:    %1 = npu.matmul %a, %bt {transpose_b} : (tensor<64x32xf16>, tensor<16x32xf16>) -> tensor<64x16xf16>
// CHECK-NEXT:    %2 = npu.matmul %at, %bt {transpose_a, transpose_b} : (tensor<32x64xf16>, tensor<16x32xf16>) -> tensor<64x16xf16>
// CHECK-NEXT:    %3 = npu.matmul %d, %b : (tensor<?x32xf16>, tensor<32x16xf16>) -> tensor<?x16xf16>
// GENERIC-LABEL: "func.func"() <{sym_name = "matmul"
// GENERIC:       %1 = "npu.matmul"(%a, %bt) {transpose_b} : (tensor<64x32xf16>, tensor<16x32xf16>) -> tensor<64x16xf16>
  func.func @matmul(%a: tensor<64x32xf16>, %b: tensor<32x16xf16>, %at: tensor<32x64xf16>,
                    %bt: tensor<16x32xf16>, %d: tensor<?x32xf16>) {
    %0 = npu.matmul %a, %b : (tensor<64x32xf16>, tensor<32x16xf16>) -> tensor<64x16xf16>
    %1 = npu.matmul %a, %bt {transpose_b} : (tensor<64x32xf16>, tensor<16x32xf16>) -> tensor<64x16xf16>
    %2 = npu.matmul %at, %bt {transpose_a, transpose_b} : (tensor<32x64xf16>, tensor<16x32xf16>) -> tensor<64x16xf16>
    %3 = npu.matmul %d, %b : (tensor<?x32xf16>, tensor<32x16xf16>) -> tensor<?x16xf16>
    func.return
  }

// Tests that batch_matmul broadcasts leading batch dims and takes transpose flags.
// CHECK-LABEL: func.func @batch_matmul
// CHECK-NEXT:    %0 = npu.batch_matmul %a, %b : (tensor<8x64x32xf16>, tensor<8x32x16xf16>) -> tensor<8x64x16xf16>
// CHECK-NEXT:    %1 = npu.batch_matmul %a, %c {transpose_b} : (tensor<8x64x32xf16>, tensor<1x16x32xf16>) -> tensor<8x64x16xf16>
  func.func @batch_matmul(%a: tensor<8x64x32xf16>, %b: tensor<8x32x16xf16>, %c: tensor<1x16x32xf16>) {
    %0 = npu.batch_matmul %a, %b : (tensor<8x64x32xf16>, tensor<8x32x16xf16>) -> tensor<8x64x16xf16>
    %1 = npu.batch_matmul %a, %c {transpose_b} : (tensor<8x64x32xf16>, tensor<1x16x32xf16>) -> tensor<8x64x16xf16>
    func.return
  }

// Tests the elementwise binary ops, with numpy broadcasting.
// CHECK-LABEL: func.func @binary
// CHECK-NEXT:    %0 = npu.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %1 = npu.sub %a, %row : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %2 = npu.mul %a, %col : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %3 = npu.div %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %4 = npu.maximum %col, %row : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %5 = npu.add %dyn, %row : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "binary"
// GENERIC:       %4 = "npu.maximum"(%col, %row) : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.func @binary(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %row: tensor<8xf32>,
                    %col: tensor<4x1xf32>, %dyn: tensor<?x8xf32>) {
    %0 = npu.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %1 = npu.sub %a, %row : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %2 = npu.mul %a, %col : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
    %3 = npu.div %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %4 = npu.maximum %col, %row : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %5 = npu.add %dyn, %row : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
    func.return
  }

// Tests the elementwise unary ops, gelu's `approximate` and cast's element type.
// CHECK-LABEL: func.func @unary
// CHECK-NEXT:    %0 = npu.neg %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK-NEXT:    %1 = npu.exp %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK-NEXT:    %2 = npu.sqrt %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK-NEXT:    %3 = npu.rsqrt %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK-NEXT:    %4 = npu.relu %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK-NEXT:    %5 = npu.gelu %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK-NEXT:    %6 = npu.gelu %x {approximate = "tanh"} : (tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK-NEXT:    %7 = npu.gelu %x {approximate = "none"} : (tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK-NEXT:    %8 = npu.silu %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK-NEXT:    %9 = npu.sigmoid %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK-NEXT:    %10 = npu.cast %x : (tensor<4x8xf16>) -> tensor<4x8xf32>
// CHECK-NEXT:    %11 = npu.cast %x : (tensor<4x8xf16>) -> tensor<4x8xbf16>
// CHECK-NEXT:    %12 = npu.cast %x : (tensor<4x8xf16>) -> tensor<4x8xi32>
// CHECK-NEXT:    %13 = npu.cast %x : (tensor<4x8xf16>) -> tensor<4x8xi1>
// CHECK-NEXT:    %14 = npu.exp %d : (tensor<?x?xf32>) -> tensor<?x?xf32>
  func.func @unary(%x: tensor<4x8xf16>, %d: tensor<?x?xf32>) {
    %0 = npu.neg %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
    %1 = npu.exp %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
    %2 = npu.sqrt %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
    %3 = npu.rsqrt %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
    %4 = npu.relu %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
    %5 = npu.gelu %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
    %6 = npu.gelu %x {approximate = "tanh"} : (tensor<4x8xf16>) -> tensor<4x8xf16>
    %7 = npu.gelu %x {approximate = "none"} : (tensor<4x8xf16>) -> tensor<4x8xf16>
    %8 = npu.silu %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
    %9 = npu.sigmoid %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
    %10 = npu.cast %x : (tensor<4x8xf16>) -> tensor<4x8xf32>
    %11 = npu.cast %x : (tensor<4x8xf16>) -> tensor<4x8xbf16>
    %12 = npu.cast %x : (tensor<4x8xf16>) -> tensor<4x8xi32>
    %13 = npu.cast %x : (tensor<4x8xf16>) -> tensor<4x8xi1>
    %14 = npu.exp %d : (tensor<?x?xf32>) -> tensor<?x?xf32>
    func.return
  }

// Tests swiglu and softmax with default and explicit axes, and rms_norm's epsilon.
// CHECK-LABEL: func.func @along_axis
// CHECK-NEXT:    %0 = npu.swiglu %x : (tensor<4x16xf16>) -> tensor<4x8xf16>
// CHECK-NEXT:    %1 = npu.swiglu %x {axis = 0 : i64} : (tensor<4x16xf16>) -> tensor<2x16xf16>
// CHECK-NEXT:    %2 = npu.softmax %x : (tensor<4x16xf16>) -> tensor<4x16xf16>
// CHECK-NEXT:    %3 = npu.softmax %x {axis = -2 : i64} : (tensor<4x16xf16>) -> tensor<4x16xf16>
// CHECK-NEXT:    %4 = npu.rms_norm %x, %gamma {epsilon = 1.000000e-06 : f32} : (tensor<4x16xf16>, tensor<16xf16>) -> tensor<4x16xf16>
// CHECK-NEXT:    %5 = npu.rms_norm %x, %gamma : (tensor<4x16xf16>, tensor<16xf16>) -> tensor<4x16xf16>
  func.func @along_axis(%x: tensor<4x16xf16>, %gamma: tensor<16xf16>) {
    %0 = npu.swiglu %x : (tensor<4x16xf16>) -> tensor<4x8xf16>
    %1 = npu.swiglu %x {axis = 0 : i64} : (tensor<4x16xf16>) -> tensor<2x16xf16>
    %2 = npu.softmax %x : (tensor<4x16xf16>) -> tensor<4x16xf16>
    %3 = npu.softmax %x {axis = -2 : i64} : (tensor<4x16xf16>) -> tensor<4x16xf16>
    %4 = npu.rms_norm %x, %gamma {epsilon = 1.0e-06 : f32} : (tensor<4x16xf16>, tensor<16xf16>) -> tensor<4x16xf16>
    %5 = npu.rms_norm %x, %gamma : (tensor<4x16xf16>, tensor<16xf16>) -> tensor<4x16xf16>
    func.return
  }

// Tests reductions over all axes, listed axes, negative axes and with keepdims.
// CHECK-LABEL: func.func @reduce
// CHECK-NEXT:    %0 = npu.reduce_sum %x : (tensor<4x8xf32>) -> tensor<f32>
// CHECK-NEXT:    %1 = npu.reduce_sum %x {axes = array<i64: 1>, keepdims} : (tensor<4x8xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:    %2 = npu.reduce_sum %x {axes = array<i64: 0, -1>} : (tensor<4x8xf32>) -> tensor<f32>
// CHECK-NEXT:    %3 = npu.reduce_max %x {axes = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<8xf32>
// CHECK-NEXT:    %4 = npu.reduce_max %x {keepdims} : (tensor<4x8xf32>) -> tensor<1x1xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "reduce"
// GENERIC:       %1 = "npu.reduce_sum"(%x) {axes = array<i64: 1>, keepdims} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  func.func @reduce(%x: tensor<4x8xf32>) {
    %0 = npu.reduce_sum %x : (tensor<4x8xf32>) -> tensor<f32>
    %1 = npu.reduce_sum %x {axes = array<i64: 1>, keepdims} : (tensor<4x8xf32>) -> tensor<4x1xf32>
    %2 = npu.reduce_sum %x {axes = array<i64: 0, -1>} : (tensor<4x8xf32>) -> tensor<f32>
    %3 = npu.reduce_max %x {axes = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<8xf32>
    %4 = npu.reduce_max %x {keepdims} : (tensor<4x8xf32>) -> tensor<1x1xf32>
    func.return
  }

// Tests the data-movement ops: transpose, reshape (with one solved `?`), concat, slice (with strides), gather.
// CHECK-LABEL: func.func @movement
// CHECK-NEXT:    %0 = npu.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x8xf16>) -> tensor<8x4xf16>
// CHECK-NEXT:    %1 = npu.reshape %x : (tensor<4x8xf16>) -> tensor<32xf16>
// CHECK-NEXT:    %2 = npu.reshape %x : (tensor<4x8xf16>) -> tensor<2x?x4xf16>
// CHECK-NEXT:    %3 = npu.concat %x, %y {axis = 0 : i64} : (tensor<4x8xf16>, tensor<2x8xf16>) -> tensor<6x8xf16>
// CHECK-NEXT:    %4 = npu.concat %x, %x, %x : (tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x24xf16>
// CHECK-NEXT:    %5 = npu.slice %x {offsets = array<i64: 0, 2>, sizes = array<i64: 4, 4>} : (tensor<4x8xf16>) -> tensor<4x4xf16>
// CHECK-NEXT:    %6 = npu.slice %x {offsets = array<i64: 1, 0>, sizes = array<i64: 3, 8>, strides = array<i64: 2, 3>} : (tensor<4x8xf16>) -> tensor<2x3xf16>
// CHECK-NEXT:    %7 = npu.gather %table, %ids : (tensor<100x16xf16>, tensor<4xi64>) -> tensor<4x16xf16>
// CHECK-NEXT:    %8 = npu.gather %table, %ids32 {axis = 1 : i64} : (tensor<100x16xf16>, tensor<2x3xi32>) -> tensor<100x2x3xf16>
  func.func @movement(%x: tensor<4x8xf16>, %y: tensor<2x8xf16>, %table: tensor<100x16xf16>,
                      %ids: tensor<4xi64>, %ids32: tensor<2x3xi32>) {
    %0 = npu.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x8xf16>) -> tensor<8x4xf16>
    %1 = npu.reshape %x : (tensor<4x8xf16>) -> tensor<32xf16>
    %2 = npu.reshape %x : (tensor<4x8xf16>) -> tensor<2x?x4xf16>
    %3 = npu.concat %x, %y {axis = 0 : i64} : (tensor<4x8xf16>, tensor<2x8xf16>) -> tensor<6x8xf16>
    %4 = npu.concat %x, %x, %x : (tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x24xf16>
    %5 = npu.slice %x {offsets = array<i64: 0, 2>, sizes = array<i64: 4, 4>} : (tensor<4x8xf16>) -> tensor<4x4xf16>
    %6 = npu.slice %x {offsets = array<i64: 1, 0>, sizes = array<i64: 3, 8>, strides = array<i64: 2, 3>} : (tensor<4x8xf16>) -> tensor<2x3xf16>
    %7 = npu.gather %table, %ids : (tensor<100x16xf16>, tensor<4xi64>) -> tensor<4x16xf16>
    %8 = npu.gather %table, %ids32 {axis = 1 : i64} : (tensor<100x16xf16>, tensor<2x3xi32>) -> tensor<100x2x3xf16>
    func.return
  }

// Tests topk's two results (values, i64 indices) and nonzero's data-dependent shape.
// CHECK-LABEL: func.func @topk_nonzero
// CHECK-NEXT:    %v, %i = npu.topk %x {k = 2 : i64} : (tensor<4x8xf32>) -> (tensor<4x2xf32>, tensor<4x2xi64>)
// CHECK-NEXT:    %v2, %i2 = npu.topk %x {k = 3 : i64, axis = 0 : i64} : (tensor<4x8xf32>) -> (tensor<3x8xf32>, tensor<3x8xi64>)
// CHECK-NEXT:    %nz = npu.nonzero %mask : (tensor<4x8xi1>) -> tensor<?x2xi64>
// CHECK-NEXT:    %nz2 = npu.nonzero %x {full_core_sync} : (tensor<4x8xf32>) -> tensor<?x2xi64>
// CHECK-NEXT:    func.return %v, %i, %nz : tensor<4x2xf32>, tensor<4x2xi64>, tensor<?x2xi64>
// GENERIC-LABEL: "func.func"() <{sym_name = "topk_nonzero"
// GENERIC:       %v, %i = "npu.topk"(%x) {k = 2 : i64} : (tensor<4x8xf32>) -> (tensor<4x2xf32>, tensor<4x2xi64>)
  func.func @topk_nonzero(%x: tensor<4x8xf32>, %mask: tensor<4x8xi1>)
      -> (tensor<4x2xf32>, tensor<4x2xi64>, tensor<?x2xi64>) {
    %v, %i = npu.topk %x {k = 2 : i64} : (tensor<4x8xf32>) -> (tensor<4x2xf32>, tensor<4x2xi64>)
    %v2, %i2 = npu.topk %x {k = 3 : i64, axis = 0 : i64} : (tensor<4x8xf32>) -> (tensor<3x8xf32>, tensor<3x8xi64>)
    %nz = npu.nonzero %mask : (tensor<4x8xi1>) -> tensor<?x2xi64>
    %nz2 = npu.nonzero %x {full_core_sync} : (tensor<4x8xf32>) -> tensor<?x2xi64>
    func.return %v, %i, %nz : tensor<4x2xf32>, tensor<4x2xi64>, tensor<?x2xi64>
  }

// Tests the collectives with group_size, mode, group and the full_core_sync unit attribute.
// CHECK-LABEL: func.func @collectives
// CHECK-NEXT:    %0 = npu.all_reduce %x {group_size = 2 : i64} : (tensor<64x8xf16>) -> tensor<64x8xf16>
// CHECK-NEXT:    %1 = npu.all_reduce %x {group_size = 2 : i64, mode = "aiv"} : (tensor<64x8xf16>) -> tensor<64x8xf16>
// CHECK-NEXT:    %2 = npu.reduce_scatter %x {group_size = 2 : i64, mode = "sdma"} : (tensor<64x8xf16>) -> tensor<32x8xf16>
// CHECK-NEXT:    %3 = npu.all_gather %x {group_size = 4 : i64, group = "tp"} : (tensor<64x8xf16>) -> tensor<256x8xf16>
// CHECK-NEXT:    %4 = npu.all_to_all %x {group_size = 4 : i64, group = "ep"} : (tensor<64x8xf16>) -> tensor<64x8xf16>
// CHECK-NEXT:    %5 = npu.all_reduce %x {group_size = 8 : i64, full_core_sync} : (tensor<64x8xf16>) -> tensor<64x8xf16>
// CHECK-NEXT:    %6 = npu.reduce_scatter %d {group_size = 3 : i64} : (tensor<?x8xf16>) -> tensor<?x8xf16>
// CHECK-NEXT:    %7 = npu.add %x, %x {full_core_sync} : (tensor<64x8xf16>, tensor<64x8xf16>) -> tensor<64x8xf16>
// GENERIC-LABEL: "func.func"() <{sym_name = "collectives"
// GENERIC:       %1 = "npu.all_reduce"(%x) {group_size = 2 : i64, mode = "aiv"} : (tensor<64x8xf16>) -> tensor<64x8xf16>
  func.func @collectives(%x: tensor<64x8xf16>, %d: tensor<?x8xf16>) {
    %0 = npu.all_reduce %x {group_size = 2 : i64} : (tensor<64x8xf16>) -> tensor<64x8xf16>
    %1 = npu.all_reduce %x {group_size = 2 : i64, mode = "aiv"} : (tensor<64x8xf16>) -> tensor<64x8xf16>
    %2 = npu.reduce_scatter %x {group_size = 2 : i64, mode = "sdma"} : (tensor<64x8xf16>) -> tensor<32x8xf16>
    %3 = npu.all_gather %x {group_size = 4 : i64, group = "tp"} : (tensor<64x8xf16>) -> tensor<256x8xf16>
    %4 = npu.all_to_all %x {group_size = 4 : i64, group = "ep"} : (tensor<64x8xf16>) -> tensor<64x8xf16>
    %5 = npu.all_reduce %x {group_size = 8 : i64, full_core_sync} : (tensor<64x8xf16>) -> tensor<64x8xf16>
    %6 = npu.reduce_scatter %d {group_size = 3 : i64} : (tensor<?x8xf16>) -> tensor<?x8xf16>
    %7 = npu.add %x, %x {full_core_sync} : (tensor<64x8xf16>, tensor<64x8xf16>) -> tensor<64x8xf16>
    func.return
  }

// Tests the imported-graph ops: conv2d (with bias, groups, the int8 path),
// pool2d, layout_transform, leaky_relu, and opaque with several results and
// unsigned element types.
// CHECK-LABEL: func.func @imported
// CHECK-NEXT:    %0 = npu.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf16>, tensor<6x4x3x3xf16>) -> tensor<1x6x4x4xf16>
// CHECK-NEXT:    %1 = npu.conv2d %x, %wg, %b {groups = 2 : i64, dilations = array<i64: 2, 2>} : (tensor<1x4x8x8xf16>, tensor<6x2x3x3xf16>, tensor<6xf16>) -> tensor<1x6x4x4xf16>
// CHECK-NEXT:    %2 = npu.conv2d %q, %qw : (tensor<1x4x8x8xi8>, tensor<6x4x1x1xi8>) -> tensor<1x6x8x8xi32>
// CHECK-NEXT:    %3 = npu.pool2d %0 {kind = "max", window = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode} : (tensor<1x6x4x4xf16>) -> tensor<1x6x2x2xf16>
// CHECK-NEXT:    %4 = npu.pool2d %0 {kind = "avg", window = array<i64: 4, 4>} : (tensor<1x6x4x4xf16>) -> tensor<1x6x1x1xf16>
// CHECK-NEXT:    %5 = npu.layout_transform %0 {src_format = "NC1HWC0", dst_format = "NCHW"} : (tensor<1x6x4x4xf16>) -> tensor<1x6x4x4xf16>
// CHECK-NEXT:    %6 = npu.leaky_relu %5 {negative_slope = 1.000000e-01 : f32} : (tensor<1x6x4x4xf16>) -> tensor<1x6x4x4xf16>
// CHECK-NEXT:    %7, %8 = npu.opaque %6, %u {ge_type = "RequantHostCpuOp", engine = "aicpu"} : (tensor<1x6x4x4xf16>, tensor<6xui64>) -> (tensor<6xf32>, tensor<1xui8>)
// GENERIC-LABEL: "func.func"() <{sym_name = "imported"
// GENERIC:       "npu.opaque"(%6, %u) {ge_type = "RequantHostCpuOp", engine = "aicpu"} : (tensor<1x6x4x4xf16>, tensor<6xui64>) -> (tensor<6xf32>, tensor<1xui8>)
  func.func @imported(%x: tensor<1x4x8x8xf16>, %w: tensor<6x4x3x3xf16>, %wg: tensor<6x2x3x3xf16>,
                      %b: tensor<6xf16>, %q: tensor<1x4x8x8xi8>, %qw: tensor<6x4x1x1xi8>,
                      %u: tensor<6xui64>) {
    %0 = npu.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf16>, tensor<6x4x3x3xf16>) -> tensor<1x6x4x4xf16>
    %1 = npu.conv2d %x, %wg, %b {groups = 2 : i64, dilations = array<i64: 2, 2>} : (tensor<1x4x8x8xf16>, tensor<6x2x3x3xf16>, tensor<6xf16>) -> tensor<1x6x4x4xf16>
    %2 = npu.conv2d %q, %qw : (tensor<1x4x8x8xi8>, tensor<6x4x1x1xi8>) -> tensor<1x6x8x8xi32>
    %3 = npu.pool2d %0 {kind = "max", window = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode} : (tensor<1x6x4x4xf16>) -> tensor<1x6x2x2xf16>
    %4 = npu.pool2d %0 {kind = "avg", window = array<i64: 4, 4>} : (tensor<1x6x4x4xf16>) -> tensor<1x6x1x1xf16>
    %5 = npu.layout_transform %0 {src_format = "NC1HWC0", dst_format = "NCHW"} : (tensor<1x6x4x4xf16>) -> tensor<1x6x4x4xf16>
    %6 = npu.leaky_relu %5 {negative_slope = 0.1 : f32} : (tensor<1x6x4x4xf16>) -> tensor<1x6x4x4xf16>
    %7, %8 = npu.opaque %6, %u {ge_type = "RequantHostCpuOp", engine = "aicpu"} : (tensor<1x6x4x4xf16>, tensor<6xui64>) -> (tensor<6xf32>, tensor<1xui8>)
    func.return
  }

// Tests every table-made op (npuir.dialects.npu_math) in its custom syntax: one of each
// family's shape, and the attributes of the ops with their own.
// CHECK-LABEL: func.func @math
// CHECK-NEXT:    %r0 = npu.abs %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r1 = npu.sign %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r2 = npu.reciprocal %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r3 = npu.floor %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r4 = npu.ceil %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r5 = npu.round %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r6 = npu.trunc %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r7 = npu.bitwise_not %n : (tensor<4x8xi32>) -> tensor<4x8xi32>
// CHECK-NEXT:    %r8 = npu.log %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r9 = npu.log2 %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r10 = npu.log10 %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r11 = npu.log1p %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r12 = npu.expm1 %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r13 = npu.sin %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r14 = npu.cos %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r15 = npu.tan %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r16 = npu.asin %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r17 = npu.acos %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r18 = npu.atan %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r19 = npu.sinh %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r20 = npu.cosh %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r21 = npu.tanh %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r22 = npu.asinh %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r23 = npu.acosh %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r24 = npu.atanh %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r25 = npu.erf %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r26 = npu.isnan %x : (tensor<4x8xf32>) -> tensor<4x8xi1>
// CHECK-NEXT:    %r27 = npu.isinf %x : (tensor<4x8xf32>) -> tensor<4x8xi1>
// CHECK-NEXT:    %r28 = npu.logical_not %x : (tensor<4x8xf32>) -> tensor<4x8xi1>
// CHECK-NEXT:    %r29 = npu.minimum %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r30 = npu.pow %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r31 = npu.remainder %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r32 = npu.fmod %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r33 = npu.floor_divide %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r34 = npu.atan2 %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r35 = npu.bitwise_and %n, %q : (tensor<4x8xi32>, tensor<8xi32>) -> tensor<4x8xi32>
// CHECK-NEXT:    %r36 = npu.bitwise_or %n, %q : (tensor<4x8xi32>, tensor<8xi32>) -> tensor<4x8xi32>
// CHECK-NEXT:    %r37 = npu.bitwise_xor %n, %q : (tensor<4x8xi32>, tensor<8xi32>) -> tensor<4x8xi32>
// CHECK-NEXT:    %r38 = npu.eq %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
// CHECK-NEXT:    %r39 = npu.ne %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
// CHECK-NEXT:    %r40 = npu.lt %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
// CHECK-NEXT:    %r41 = npu.le %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
// CHECK-NEXT:    %r42 = npu.gt %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
// CHECK-NEXT:    %r43 = npu.ge %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
// CHECK-NEXT:    %r44 = npu.logical_and %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
// CHECK-NEXT:    %r45 = npu.logical_or %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
// CHECK-NEXT:    %r46 = npu.logical_xor %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
// CHECK-NEXT:    %r47 = npu.select %m, %a, %s : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r48 = npu.cumsum %x {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r49 = npu.cumprod %x {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r50 = npu.reduce_min %x {axes = array<i64: 1>, keepdims} : (tensor<4x8xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:    %r51 = npu.reduce_prod %x {axes = array<i64: 1>, keepdims} : (tensor<4x8xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:    %r52 = npu.argmax %x {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4xi64>
// CHECK-NEXT:    %r53 = npu.argmin %x {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4xi64>
// CHECK-NEXT:    %r54a, %r54b = npu.sort %x {axis = -1 : i64, descending} : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi64>)
// CHECK-NEXT:    %r55 = npu.fill {value = 0xfff0000000000000 : f64} : () -> tensor<4x8xf16>
// CHECK-NEXT:    %r56 = npu.arange {start = 1.000000e+00 : f64, step = 2.000000e+00 : f64} : () -> tensor<8xi64>
// CHECK-NEXT:    %r57 = npu.gather_elements %x, %j {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x2xi64>) -> tensor<4x2xf32>
// CHECK-NEXT:    %r58 = npu.scatter %x, %k, %v {axis = 0 : i64, reduce = "amax", exclude_self} : (tensor<4x8xf32>, tensor<2x8xi64>, tensor<2x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r59 = npu.index %x, %p, %p {dims = array<i64: 0, 1>} : (tensor<4x8xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2xf32>
// CHECK-NEXT:    %r60 = npu.index_put %x, %b, %p {dims = array<i64: 0>, accumulate} : (tensor<4x8xf32>, tensor<8xf32>, tensor<2xi64>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r61 = npu.flip %x {axes = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %r62 = npu.pad %x {pads = array<i64: 0, 0, 1, -2>, mode = "edge"} : (tensor<4x8xf32>) -> tensor<4x7xf32>
// CHECK-NEXT:    %r63 = npu.as_strided %x {sizes = array<i64: 4>, strides = array<i64: 9>, offset = 0 : i64} : (tensor<4x8xf32>) -> tensor<4xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "math"
  func.func @math(%x: tensor<4x8xf32>, %a: tensor<4x8xf32>, %b: tensor<8xf32>, %m: tensor<4x8xi1>,
                  %s: tensor<f32>, %j: tensor<4x2xi64>, %k: tensor<2x8xi64>, %v: tensor<2x8xf32>,
                  %p: tensor<2xi64>, %n: tensor<4x8xi32>, %q: tensor<8xi32>) {
    %r0 = npu.abs %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r1 = npu.sign %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r2 = npu.reciprocal %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r3 = npu.floor %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r4 = npu.ceil %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r5 = npu.round %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r6 = npu.trunc %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r7 = npu.bitwise_not %n : (tensor<4x8xi32>) -> tensor<4x8xi32>
    %r8 = npu.log %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r9 = npu.log2 %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r10 = npu.log10 %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r11 = npu.log1p %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r12 = npu.expm1 %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r13 = npu.sin %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r14 = npu.cos %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r15 = npu.tan %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r16 = npu.asin %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r17 = npu.acos %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r18 = npu.atan %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r19 = npu.sinh %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r20 = npu.cosh %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r21 = npu.tanh %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r22 = npu.asinh %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r23 = npu.acosh %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r24 = npu.atanh %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r25 = npu.erf %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r26 = npu.isnan %x : (tensor<4x8xf32>) -> tensor<4x8xi1>
    %r27 = npu.isinf %x : (tensor<4x8xf32>) -> tensor<4x8xi1>
    %r28 = npu.logical_not %x : (tensor<4x8xf32>) -> tensor<4x8xi1>
    %r29 = npu.minimum %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %r30 = npu.pow %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %r31 = npu.remainder %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %r32 = npu.fmod %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %r33 = npu.floor_divide %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %r34 = npu.atan2 %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %r35 = npu.bitwise_and %n, %q : (tensor<4x8xi32>, tensor<8xi32>) -> tensor<4x8xi32>
    %r36 = npu.bitwise_or %n, %q : (tensor<4x8xi32>, tensor<8xi32>) -> tensor<4x8xi32>
    %r37 = npu.bitwise_xor %n, %q : (tensor<4x8xi32>, tensor<8xi32>) -> tensor<4x8xi32>
    %r38 = npu.eq %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
    %r39 = npu.ne %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
    %r40 = npu.lt %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
    %r41 = npu.le %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
    %r42 = npu.gt %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
    %r43 = npu.ge %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
    %r44 = npu.logical_and %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
    %r45 = npu.logical_or %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
    %r46 = npu.logical_xor %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
    %r47 = npu.select %m, %a, %s : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %r48 = npu.cumsum %x {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r49 = npu.cumprod %x {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r50 = npu.reduce_min %x {axes = array<i64: 1>, keepdims} : (tensor<4x8xf32>) -> tensor<4x1xf32>
    %r51 = npu.reduce_prod %x {axes = array<i64: 1>, keepdims} : (tensor<4x8xf32>) -> tensor<4x1xf32>
    %r52 = npu.argmax %x {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4xi64>
    %r53 = npu.argmin %x {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4xi64>
    %r54a, %r54b = npu.sort %x {axis = -1 : i64, descending} : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi64>)
    %r55 = npu.fill {value = 0xFFF0000000000000 : f64} : () -> tensor<4x8xf16>
    %r56 = npu.arange {start = 1.000000e+00 : f64, step = 2.000000e+00 : f64} : () -> tensor<8xi64>
    %r57 = npu.gather_elements %x, %j {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x2xi64>) -> tensor<4x2xf32>
    %r58 = npu.scatter %x, %k, %v {axis = 0 : i64, reduce = "amax", exclude_self} : (tensor<4x8xf32>, tensor<2x8xi64>, tensor<2x8xf32>) -> tensor<4x8xf32>
    %r59 = npu.index %x, %p, %p {dims = array<i64: 0, 1>} : (tensor<4x8xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2xf32>
    %r60 = npu.index_put %x, %b, %p {dims = array<i64: 0>, accumulate} : (tensor<4x8xf32>, tensor<8xf32>, tensor<2xi64>) -> tensor<4x8xf32>
    %r61 = npu.flip %x {axes = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %r62 = npu.pad %x {pads = array<i64: 0, 0, 1, -2>, mode = "edge"} : (tensor<4x8xf32>) -> tensor<4x7xf32>
    %r63 = npu.as_strided %x {sizes = array<i64: 4>, strides = array<i64: 9>, offset = 0 : i64} : (tensor<4x8xf32>) -> tensor<4xf32>
    func.return
  }

// Tests the fused kernels (npu_fused.py): attention with GQA heads, causal, a mask and a
// scale; grouped matmul; rotary embedding; the MoE gate, dispatch and combine; MC2.
// CHECK-LABEL: func.func @fused
// CHECK-NEXT:    %0 = npu.fusion_attention %q, %k, %v {causal} : (tensor<1x8x16x64xf16>, tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16>) -> tensor<1x8x16x64xf16>
// CHECK-NEXT:    %1 = npu.fusion_attention %q, %k, %v, %m {scale = 1.250000e-01 : f32} : (tensor<1x8x16x64xf16>, tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16>, tensor<16x16xi1>) -> tensor<1x8x16x64xf16>
// CHECK-NEXT:    %2 = npu.grouped_matmul %x, %w, %offs : (tensor<16x32xf16>, tensor<4x32x64xf16>, tensor<4xi32>) -> tensor<16x64xf16>
// CHECK-NEXT:    %3 = npu.rotary_embedding %q, %cos, %cos : (tensor<1x8x16x64xf16>, tensor<1x1x16x64xf16>, tensor<1x1x16x64xf16>) -> tensor<1x8x16x64xf16>
// CHECK-NEXT:    %4, %5, %6 = npu.moe_gating_topk_softmax %logits {k = 2 : i64} : (tensor<16x8xf16>) -> (tensor<16x2xf16>, tensor<16x2xi32>, tensor<16x2xi32>)
// CHECK-NEXT:    %7, %8, %9 = npu.moe_init_routing %x, %6, %5 : (tensor<16x32xf16>, tensor<16x2xi32>, tensor<16x2xi32>) -> (tensor<32x32xf16>, tensor<32xi32>, tensor<32xi32>)
// CHECK-NEXT:    %10 = npu.moe_finalize_routing %7, %4, %8, %x : (tensor<32x32xf16>, tensor<16x2xf16>, tensor<32xi32>, tensor<16x32xf16>) -> tensor<16x32xf16>
// CHECK-NEXT:    %11 = npu.moe_finalize_routing %7, %4, %8 : (tensor<32x32xf16>, tensor<16x2xf16>, tensor<32xi32>) -> tensor<16x32xf16>
// CHECK-NEXT:    %12 = npu.matmul_all_reduce %x, %7 {group_size = 2 : i64, mode = "aiv"} : (tensor<16x32xf16>, tensor<32x32xf16>) -> tensor<16x32xf16>
// GENERIC-LABEL: "func.func"() <{sym_name = "fused"
// GENERIC:       "npu.fusion_attention"(%q, %k, %v) {causal} : (tensor<1x8x16x64xf16>, tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16>) -> tensor<1x8x16x64xf16>
  func.func @fused(%q: tensor<1x8x16x64xf16>, %k: tensor<1x2x16x64xf16>, %v: tensor<1x2x16x64xf16>,
                   %m: tensor<16x16xi1>, %x: tensor<16x32xf16>, %w: tensor<4x32x64xf16>,
                   %offs: tensor<4xi32>, %cos: tensor<1x1x16x64xf16>, %logits: tensor<16x8xf16>) {
    %0 = npu.fusion_attention %q, %k, %v {causal} : (tensor<1x8x16x64xf16>, tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16>) -> tensor<1x8x16x64xf16>
    %1 = npu.fusion_attention %q, %k, %v, %m {scale = 0.125 : f32} : (tensor<1x8x16x64xf16>, tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16>, tensor<16x16xi1>) -> tensor<1x8x16x64xf16>
    %2 = npu.grouped_matmul %x, %w, %offs : (tensor<16x32xf16>, tensor<4x32x64xf16>, tensor<4xi32>) -> tensor<16x64xf16>
    %3 = npu.rotary_embedding %q, %cos, %cos : (tensor<1x8x16x64xf16>, tensor<1x1x16x64xf16>, tensor<1x1x16x64xf16>) -> tensor<1x8x16x64xf16>
    %4, %5, %6 = npu.moe_gating_topk_softmax %logits {k = 2 : i64} : (tensor<16x8xf16>) -> (tensor<16x2xf16>, tensor<16x2xi32>, tensor<16x2xi32>)
    %7, %8, %9 = npu.moe_init_routing %x, %6, %5 : (tensor<16x32xf16>, tensor<16x2xi32>, tensor<16x2xi32>) -> (tensor<32x32xf16>, tensor<32xi32>, tensor<32xi32>)
    %10 = npu.moe_finalize_routing %7, %4, %8, %x : (tensor<32x32xf16>, tensor<16x2xf16>, tensor<32xi32>, tensor<16x32xf16>) -> tensor<16x32xf16>
    %11 = npu.moe_finalize_routing %7, %4, %8 : (tensor<32x32xf16>, tensor<16x2xf16>, tensor<32xi32>) -> tensor<16x32xf16>
    %12 = npu.matmul_all_reduce %x, %7 {group_size = 2 : i64, mode = "aiv"} : (tensor<16x32xf16>, tensor<32x32xf16>) -> tensor<16x32xf16>
    func.return
  }

// The FFTs, on complex element types (fft.mlir has every kind).
// CHECK-LABEL: func.func @fft
// CHECK-NEXT:    %0 = npu.fft %x {kind = "r2c", axes = array<i64: 1>, onesided} : (tensor<4x8xf32>) -> tensor<4x5xcomplex<f32>>
// GENERIC-LABEL: "func.func"() <{sym_name = "fft"
// GENERIC:       "npu.fft"(%x) {kind = "r2c", axes = array<i64: 1>, onesided} : (tensor<4x8xf32>) -> tensor<4x5xcomplex<f32>>
  func.func @fft(%x: tensor<4x8xf32>) -> tensor<4x5xcomplex<f32>> {
    %0 = npu.fft %x {kind = "r2c", axes = array<i64: 1>, onesided} : (tensor<4x8xf32>) -> tensor<4x5xcomplex<f32>>
    func.return %0 : tensor<4x5xcomplex<f32>>
  }

}
// GENERIC: }) {npu.target = "910b2"} : () -> ()
