// RUN: npuir-opt %s | filecheck %s
// RUN: npuir-opt %s --print-op-generic | npuir-opt | filecheck %s
// RUN: npuir-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Every `gear` op and attribute in its custom syntax: printing the parsed IR
// reproduces it, and so does printing the generic form and parsing that back.

module {

// Tests `#gear.dims` on function arguments (one dim, several dims) and the
// `gear.policy` function attribute.
// CHECK-LABEL: func.func @forward(%x1: tensor<?x2xf32> {gear.dims = #gear.dims<0: [2, 4]>}, %x2: tensor<?x?xf32> {gear.dims = #gear.dims<0: [2, 4], 1: [8, 16]>}, %w: tensor<2x2xf32>) -> tensor<?x2xf32> attributes {gear.policy = "zip"} {
// CHECK-NEXT:    func.return %x1 : tensor<?x2xf32>
// GENERIC:       "func.func"() <{sym_name = "forward", function_type = (tensor<?x2xf32>, tensor<?x?xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>, arg_attrs = [{gear.dims = #gear.dims<0: [2, 4]>}, {gear.dims = #gear.dims<0: [2, 4], 1: [8, 16]>}, {}]}> ({
// GENERIC:       }) {gear.policy = "zip"} : () -> ()
  func.func @forward(%x1: tensor<?x2xf32> {gear.dims = #gear.dims<0: [2, 4]>},
                     %x2: tensor<?x?xf32> {gear.dims = #gear.dims<0: [2, 4], 1: [8, 16]>},
                     %w: tensor<2x2xf32>) -> tensor<?x2xf32>
      attributes {gear.policy = "zip"} {
    func.return %x1 : tensor<?x2xf32>
  }

// Tests the "product" policy with dims annotated out of order.
// CHECK-LABEL: func.func @product(%x: tensor<?x4x?xf16> {gear.dims = #gear.dims<2: [64, 128], 0: [2, 3, 100]>}) attributes {gear.policy = "product"} {
  func.func @product(%x: tensor<?x4x?xf16> {gear.dims = #gear.dims<2: [64, 128], 0: [2, 3, 100]>})
      attributes {gear.policy = "product"} {
    func.return
  }

  func.func @f_g0(%x1: tensor<2x2xf32>, %x2: tensor<2x2xf32>) -> tensor<2x2xf32> {
    func.return %x1 : tensor<2x2xf32>
  }
  func.func @f_g1(%x1: tensor<4x2xf32>, %x2: tensor<4x2xf32>) -> tensor<4x2xf32> {
    func.return %x1 : tensor<4x2xf32>
  }
  func.func @f_dyn(%x1: tensor<?x2xf32>, %x2: tensor<?x2xf32>) -> tensor<?x2xf32> {
    func.return %x1 : tensor<?x2xf32>
  }
  func.func @two(%x: tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>) {
    func.return %x, %x : tensor<?x2xf32>, tensor<?x2xf32>
  }

// Tests a dispatcher over two gears without a default version.
// CHECK-LABEL: func.func @dispatch
// CHECK-NEXT:    %r = gear.dispatch(%x1, %x2) dims [0:0, 1:0] cases {[2, 2] -> @f_g0, [4, 4] -> @f_g1} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
// CHECK-NEXT:    func.return %r : tensor<?x2xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "dispatch"
// GENERIC:       %r = "gear.dispatch"(%x1, %x2) <{dims = array<i64: 0, 0, 1, 0>, cases = [array<i64: 2, 2>, array<i64: 4, 4>], callees = [@f_g0, @f_g1]}> : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  func.func @dispatch(%x1: tensor<?x2xf32>, %x2: tensor<?x2xf32>) -> tensor<?x2xf32> {
    %r = gear.dispatch(%x1, %x2) dims [0:0, 1:0] cases {[2, 2] -> @f_g0, [4, 4] -> @f_g1} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    func.return %r : tensor<?x2xf32>
  }

// Tests a dispatcher with a default version (`fallback=dynamic`), an
// attribute dictionary, and one with several results and one gear dim.
// CHECK-LABEL: func.func @dispatch_default
// CHECK-NEXT:    %r = gear.dispatch(%x1, %x2) dims [0:0, 1:0] cases {[2, 2] -> @f_g0} default @f_dyn {ge.dynamicDims = "2,2"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
// CHECK-NEXT:    %a, %a_1 = gear.dispatch(%x1) dims [0:0] cases {[2] -> @two, [4] -> @two} : (tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>)
// CHECK-NEXT:    func.return %r : tensor<?x2xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "dispatch_default"
// GENERIC:       %r = "gear.dispatch"(%x1, %x2) <{dims = array<i64: 0, 0, 1, 0>, cases = [array<i64: 2, 2>], callees = [@f_g0], fallback = @f_dyn}> {ge.dynamicDims = "2,2"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  func.func @dispatch_default(%x1: tensor<?x2xf32>, %x2: tensor<?x2xf32>) -> tensor<?x2xf32> {
    %r = gear.dispatch(%x1, %x2) dims [0:0, 1:0] cases {[2, 2] -> @f_g0} default @f_dyn {ge.dynamicDims = "2,2"} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %a:2 = gear.dispatch(%x1) dims [0:0] cases {[2] -> @two, [4] -> @two} : (tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>)
    func.return %r : tensor<?x2xf32>
  }
}
