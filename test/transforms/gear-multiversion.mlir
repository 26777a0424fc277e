// RUN: npuir-opt %s --split-input-file -p gear-multiversion 2>/dev/null | filecheck %s
// RUN: npuir-opt %s --split-input-file -p gear-multiversion 2>&1 >/dev/null | filecheck %s --check-prefix=WARN

// Tests that zip pairs the i-th values of the annotated dims: the seed
// document's x1 + x2 with gears {0: [2, 4]} on both gives two versions, and
// the dispatcher records the equivalent GE options.

func.func @forward(%x1: tensor<?x2xf32> {gear.dims = #gear.dims<0: [2, 4]>},
                   %x2: tensor<?x2xf32> {gear.dims = #gear.dims<0: [2, 4]>}) -> tensor<?x2xf32> {
  %sum = npu.add %x1, %x2 : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %sum : tensor<?x2xf32>
}

// CHECK-LABEL: func.func @forward(%x1: tensor<?x2xf32>, %x2: tensor<?x2xf32>) -> tensor<?x2xf32> {
// CHECK-NEXT:    %0 = gear.dispatch(%x1, %x2) dims [0:0, 1:0] cases {[2, 2] -> @forward_g0, [4, 4] -> @forward_g1} {ge.inputShape = "arg0:-1,2;arg1:-1,2", ge.dynamicDims = "2,2;4,4"}
// CHECK-NEXT:    func.return %0
// CHECK-LABEL: func.func @forward_g0(%x1: tensor<2x2xf32>, %x2: tensor<2x2xf32>) -> tensor<2x2xf32> {
// CHECK-NEXT:    %sum = npu.add %x1, %x2 : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK-LABEL: func.func @forward_g1(%x1: tensor<4x2xf32>, %x2: tensor<4x2xf32>) -> tensor<4x2xf32> {
// CHECK-NEXT:    %sum = npu.add %x1, %x2 : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
// CHECK-NOT:   func.func

// -----

// Tests that product takes the Cartesian product (4 combinations) and drops,
// with a warning at the op that fails, the 2 whose shapes do not broadcast.

func.func @product(%x1: tensor<?x2xf32> {gear.dims = #gear.dims<0: [2, 4]>},
                   %x2: tensor<?x2xf32> {gear.dims = #gear.dims<0: [2, 4]>}) -> tensor<?x2xf32>
    attributes {gear.policy = "product"} {
  %sum = npu.add %x1, %x2 : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %sum : tensor<?x2xf32>
}

// WARN: gear-multiversion.mlir:[[# @LINE - 4]]:3: warning: dropping gear (arg0 dim 0 = 2, arg1 dim 0 = 4): it does not type-check (shapes 2x2 and 4x2 do not broadcast (2 vs 4))
// WARN: gear-multiversion.mlir:[[# @LINE - 5]]:3: warning: dropping gear (arg0 dim 0 = 4, arg1 dim 0 = 2): it does not type-check
// CHECK-LABEL: func.func @product(
// CHECK-NEXT:    gear.dispatch(%x1, %x2) dims [0:0, 1:0] cases {[2, 2] -> @product_g0, [4, 4] -> @product_g1}
// CHECK-SAME:    ge.dynamicDims = "2,2;4,4"
// CHECK-LABEL: func.func @product_g0(%x1: tensor<2x2xf32>, %x2: tensor<2x2xf32>)
// CHECK-LABEL: func.func @product_g1(%x1: tensor<4x2xf32>, %x2: tensor<4x2xf32>)
// CHECK-NOT:   func.func

// -----

// Tests that two annotated dims of one tensor in product mode give the full
// cross product, re-inferring shapes through a matmul, a scope and the
// function's results, while a data-dependent dim (nonzero) stays dynamic.

func.func @two_dims(%x: tensor<?x?xf16> {gear.dims = #gear.dims<0: [8, 16], 1: [32, 64]>},
                    %w: tensor<64x32xf16>) -> (tensor<?x?xf16>, tensor<8x64xf16>, tensor<?x2xi64>)
    attributes {gear.policy = "product"} {
  %r = stream.switch "1" -> tensor<?x?xf16> {
    %e = npu.exp %x : (tensor<?x?xf16>) -> tensor<?x?xf16>
    stream.yield %e : tensor<?x?xf16>
  }
  %s = npu.slice %r {offsets = array<i64: 0, 0>, sizes = array<i64: 8, 32>} : (tensor<?x?xf16>) -> tensor<8x32xf16>
  %t = npu.transpose %w {perm = array<i64: 1, 0>} : (tensor<64x32xf16>) -> tensor<32x64xf16>
  %m = npu.matmul %s, %t : (tensor<8x32xf16>, tensor<32x64xf16>) -> tensor<8x64xf16>
  %c = npu.concat %r, %r {axis = 0 : i64} : (tensor<?x?xf16>, tensor<?x?xf16>) -> tensor<?x?xf16>
  %k = npu.slice %c {offsets = array<i64: 0, 0>, sizes = array<i64: 8, 32>} : (tensor<?x?xf16>) -> tensor<8x32xf16>
  %z = npu.nonzero %k : (tensor<8x32xf16>) -> tensor<?x2xi64>
  %o = npu.reduce_sum %c {axes = array<i64: 1>, keepdims} : (tensor<?x?xf16>) -> tensor<?x1xf16>
  %b = npu.mul %c, %o : (tensor<?x?xf16>, tensor<?x1xf16>) -> tensor<?x?xf16>
  func.return %b, %m, %z : tensor<?x?xf16>, tensor<8x64xf16>, tensor<?x2xi64>
}

// CHECK-LABEL: func.func @two_dims(
// CHECK-NEXT:    gear.dispatch(%x, %w) dims [0:0, 0:1] cases {[8, 32] -> @two_dims_g0, [8, 64] -> @two_dims_g1, [16, 32] -> @two_dims_g2, [16, 64] -> @two_dims_g3}
// CHECK-SAME:    ge.inputShape = "arg0:-1,-1;arg1:64,32"
// CHECK-SAME:    ge.dynamicDims = "8,32;8,64;16,32;16,64"
// CHECK-LABEL: func.func @two_dims_g0(%x: tensor<8x32xf16>, %w: tensor<64x32xf16>) -> (tensor<16x32xf16>, tensor<8x64xf16>, tensor<?x2xi64>)
// CHECK:         %r = stream.switch "1" -> tensor<8x32xf16> {
// CHECK:         %c = npu.concat %r, %r {axis = 0 : i64} : (tensor<8x32xf16>, tensor<8x32xf16>) -> tensor<16x32xf16>
// CHECK:         %z = npu.nonzero %k : (tensor<8x32xf16>) -> tensor<?x2xi64>
// CHECK:         %o = npu.reduce_sum %c {axes = array<i64: 1>, keepdims} : (tensor<16x32xf16>) -> tensor<16x1xf16>
// CHECK:         %b = npu.mul %c, %o : (tensor<16x32xf16>, tensor<16x1xf16>) -> tensor<16x32xf16>
// CHECK-LABEL: func.func @two_dims_g3(%x: tensor<16x64xf16>, %w: tensor<64x32xf16>) -> (tensor<32x64xf16>, tensor<8x64xf16>, tensor<?x2xi64>)
// WARN-NOT: warning

// -----

// Tests that duplicate gears merge silently, keeping first-occurrence order
// (deterministic, unlike a set): [4, 2, 4, 8] gives the versions 4, 2, 8.

func.func @duplicates(%x: tensor<?x2xf32> {gear.dims = #gear.dims<0: [4, 2, 4, 8]>}) -> tensor<?x2xf32> {
  %e = npu.exp %x : (tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %e : tensor<?x2xf32>
}

// CHECK-LABEL: func.func @duplicates(
// CHECK-NEXT:    gear.dispatch(%x) dims [0:0] cases {[4] -> @duplicates_g0, [2] -> @duplicates_g1, [8] -> @duplicates_g2}
// CHECK-LABEL: func.func @duplicates_g0(%x: tensor<4x2xf32>)
// CHECK-LABEL: func.func @duplicates_g1(%x: tensor<2x2xf32>)
// CHECK-LABEL: func.func @duplicates_g2(%x: tensor<8x2xf32>)
