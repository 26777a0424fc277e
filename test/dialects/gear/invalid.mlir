// RUN: npuir-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// Every error the `gear` dialect reports, one case per `// -----` chunk; each
// points at the op, attribute or token at fault, with the absolute line in
// this file.

// Tests that 1 is not a gear value (the seed reserves 0 and 1).
// CHECK: invalid.mlir:[[# @LINE + 1]]:50: error: gear value 1 on dim 0 is not allowed: gear values are whole numbers >= 2 (0 and 1 are reserved)
func.func @case(%x: tensor<?x2xf32> {gear.dims = #gear.dims<0: [1, 4]>}) {
  func.return
}

// -----

// Tests that 0 is not a gear value.
// CHECK: invalid.mlir:[[# @LINE + 1]]:50: error: gear value 0 on dim 0 is not allowed: gear values are whole numbers >= 2 (0 and 1 are reserved)
func.func @case(%x: tensor<?x2xf32> {gear.dims = #gear.dims<0: [2, 0]>}) {
  func.return
}

// -----

// Tests that a dim is annotated once.
// CHECK: invalid.mlir:[[# @LINE + 1]]:50: error: dim 0 is annotated twice; give each dim one list
func.func @case(%x: tensor<?x?xf32> {gear.dims = #gear.dims<0: [2, 4], 0: [8]>}) {
  func.return
}

// -----

// Tests that a gear dim is not negative.
// CHECK: invalid.mlir:[[# @LINE + 1]]:50: error: gear dim must be >= 0, got -1
func.func @case(%x: tensor<?x2xf32> {gear.dims = #gear.dims<-1: [2]>}) {
  func.return
}

// -----

// Tests that a gear list is not empty.
// CHECK: invalid.mlir:[[# @LINE + 1]]:50: error: dim 0 has 0 gears; give between 2 and 100
func.func @case(%x: tensor<?x2xf32> {gear.dims = #gear.dims<0: []>}) {
  func.return
}

// -----

// Tests that #gear.dims annotates at least one dim.
// CHECK: invalid.mlir:[[# @LINE + 1]]:50: error: #gear.dims needs at least one dim
func.func @case(%x: tensor<?x2xf32> {gear.dims = #gear.dims<>}) {
  func.return
}

// -----

// Tests that #gear.dims spells `dim: [values]`.
// CHECK: invalid.mlir:[[# @LINE + 1]]:63: error: Expected ':'
func.func @case(%x: tensor<?x2xf32> {gear.dims = #gear.dims<0 = [2, 4]>}) {
  func.return
}

// -----

// Tests that a gear dim exists in the argument's type (checked on the function).
// CHECK: invalid.mlir:[[# @LINE + 1]]:1: error: 'func.func' op argument 1: gear dim 2 is out of range for tensor<?x2xf32> (rank 2)
func.func @case(%x: tensor<?x2xf32>,
                %y: tensor<?x2xf32> {gear.dims = #gear.dims<2: [2, 4]>}) {
  func.return
}

// -----

// Tests that only dynamic dims take gears.
// CHECK: invalid.mlir:[[# @LINE + 1]]:1: error: 'func.func' op argument 0: gear dim 1 of tensor<?x2xf32> is static (2); only dynamic ('?') dims take gears
func.func @case(%x: tensor<?x2xf32> {gear.dims = #gear.dims<0: [2, 4], 1: [8, 16]>}) {
  func.return
}

// -----

// Tests that gears apply to tensor arguments.
// CHECK: invalid.mlir:[[# @LINE + 1]]:1: error: 'func.func' op argument 0: gears apply to tensor arguments
func.func @case(%x: i64 {gear.dims = #gear.dims<0: [2, 4]>}) {
  func.return
}

// -----

// Tests that gear.dims holds a #gear.dims.
// CHECK: invalid.mlir:[[# @LINE + 1]]:1: error: 'func.func' op argument 0: 'gear.dims' must be a #gear.dims attribute
func.func @case(%x: tensor<?x2xf32> {gear.dims = [2, 4]}) {
  func.return
}

// -----

// Tests that the policy is "zip" or "product".
// CHECK: invalid.mlir:[[# @LINE + 1]]:1: error: 'func.func' op 'gear.policy' must be "zip" or "product", got "cartesian"
func.func @case(%x: tensor<?x2xf32> {gear.dims = #gear.dims<0: [2, 4]>}) attributes {gear.policy = "cartesian"} {
  func.return
}

// -----

// Tests that the policy is a string.
// CHECK: invalid.mlir:[[# @LINE + 1]]:1: error: 'func.func' op 'gear.policy' must be "zip" or "product", got 1 : i64
func.func @case() attributes {gear.policy = 1 : i64} {
  func.return
}

// -----

// Tests that each dispatch case gives one value per gear dim.
func.func @case(%x1: tensor<?x2xf32>, %x2: tensor<?x2xf32>) -> tensor<?x2xf32> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'gear.dispatch' op case for @f_g1 gives 1 values for 2 dims
  %r = gear.dispatch(%x1, %x2) dims [0:0, 1:0] cases {[2, 2] -> @f_g0, [4] -> @f_g1} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %r : tensor<?x2xf32>
}

// -----

// Tests that a dispatch dim names an existing argument.
func.func @case(%x1: tensor<?x2xf32>) -> tensor<?x2xf32> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'gear.dispatch' op dims names argument 1, but there are 1
  %r = gear.dispatch(%x1) dims [1:0] cases {[2] -> @f_g0} : (tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %r : tensor<?x2xf32>
}

// -----

// Tests that a dispatch dim exists in its argument.
func.func @case(%x1: tensor<?x2xf32>) -> tensor<?x2xf32> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'gear.dispatch' op argument 0 has no dim 2
  %r = gear.dispatch(%x1) dims [0:2] cases {[2] -> @f_g0} : (tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %r : tensor<?x2xf32>
}

// -----

// Tests that the generic form lists (argument, dim) pairs.
func.func @case(%x1: tensor<?x2xf32>) -> tensor<?x2xf32> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'gear.dispatch' op dims must list (argument, dim) pairs
  %r = "gear.dispatch"(%x1) <{dims = array<i64: 0, 0, 1>, cases = [array<i64: 2>], callees = [@f_g0]}> : (tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %r : tensor<?x2xf32>
}

// -----

// Tests that the generic form gives one callee per case.
func.func @case(%x1: tensor<?x2xf32>) -> tensor<?x2xf32> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'gear.dispatch' op needs one callee per case
  %r = "gear.dispatch"(%x1) <{dims = array<i64: 0, 0>, cases = [array<i64: 2>, array<i64: 4>], callees = [@f_g0]}> : (tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %r : tensor<?x2xf32>
}

// -----

// Tests that a dispatch case calls a symbol.
func.func @case(%x1: tensor<?x2xf32>) -> tensor<?x2xf32> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:52: error: expect symbol name
  %r = gear.dispatch(%x1) dims [0:0] cases {[2] -> f_g0} : (tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %r : tensor<?x2xf32>
}

// -----

// Tests that dispatch needs its `cases` keyword.
func.func @case(%x1: tensor<?x2xf32>) -> tensor<?x2xf32> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:38: error: Expected 'cases'
  %r = gear.dispatch(%x1) dims [0:0] {[2] -> @f_g0} : (tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %r : tensor<?x2xf32>
}

// -----

// Tests that dispatch's type is a function type.
func.func @case(%x1: tensor<?x2xf32>) -> tensor<?x2xf32> {
// CHECK: invalid.mlir:[[# @LINE + 3]]:61: error: expected a function type
// CHECK-NEXT: %r = gear.dispatch(%x1) dims [0:0] cases {[2] -> @f_g0} : tensor<?x2xf32>
// CHECK-NEXT: ^
  %r = gear.dispatch(%x1) dims [0:0] cases {[2] -> @f_g0} : tensor<?x2xf32>
  func.return %r : tensor<?x2xf32>
}

// -----

// Tests that dispatch's function type gives one input per argument.
func.func @case(%x1: tensor<?x2xf32>) -> tensor<?x2xf32> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:61: error: expected 2 operand types but had 1
  %r = gear.dispatch(%x1) dims [0:0] cases {[2] -> @f_g0} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %r : tensor<?x2xf32>
}

// -----

// Tests that a dispatch case calls a function that exists.
func.func @case(%x1: tensor<?x2xf32>) -> tensor<?x2xf32> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'gear.dispatch' op @f_g0 does not name a function in the module
  %r = gear.dispatch(%x1) dims [0:0] cases {[2] -> @f_g0} : (tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %r : tensor<?x2xf32>
}

// -----

// Tests that a dispatch's default version exists too.
func.func @f_g0(%x1: tensor<2x2xf32>) -> tensor<2x2xf32> {
  func.return %x1 : tensor<2x2xf32>
}
func.func @case(%x1: tensor<?x2xf32>) -> tensor<?x2xf32> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'gear.dispatch' op @f_dyn does not name a function in the module
  %r = gear.dispatch(%x1) dims [0:0] cases {[2] -> @f_g0} default @f_dyn : (tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %r : tensor<?x2xf32>
}

// -----

// Tests that a dispatch case calls a function, not another symbol.
stream.decl @s0 "<main>" priority 0
func.func @case(%x1: tensor<?x2xf32>) -> tensor<?x2xf32> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'gear.dispatch' op @s0 names a 'stream.decl', not a function
  %r = gear.dispatch(%x1) dims [0:0] cases {[2] -> @s0} : (tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %r : tensor<?x2xf32>
}

// -----

// Tests that a callee takes as many arguments as the dispatcher passes.
func.func @f_g0(%x1: tensor<2x2xf32>, %x2: tensor<2x2xf32>) -> tensor<2x2xf32> {
  func.return %x1 : tensor<2x2xf32>
}
func.func @case(%x1: tensor<?x2xf32>) -> tensor<?x2xf32> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'gear.dispatch' op @f_g0 takes 2 arguments and gives 1 results; the dispatcher passes 1 and expects 1
  %r = gear.dispatch(%x1) dims [0:0] cases {[2] -> @f_g0} : (tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %r : tensor<?x2xf32>
}

// -----

// Tests that a callee's static dims agree with the dispatcher's.
func.func @f_g0(%x1: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %r = npu.slice %x1 {offsets = array<i64: 0, 0>, sizes = array<i64: 2, 2>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  func.return %r : tensor<2x2xf32>
}
func.func @case(%x1: tensor<?x2xf32>) -> tensor<?x2xf32> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'gear.dispatch' op @f_g0 takes tensor<2x3xf32> as argument 0, not tensor<?x2xf32>
  %r = gear.dispatch(%x1) dims [0:0] cases {[2] -> @f_g0} : (tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %r : tensor<?x2xf32>
}

// -----

// Tests that a callee's element types are the dispatcher's.
func.func @f_g0(%x1: tensor<2x2xf32>) -> tensor<2x2xf16> {
  %r = npu.cast %x1 : (tensor<2x2xf32>) -> tensor<2x2xf16>
  func.return %r : tensor<2x2xf16>
}
func.func @case(%x1: tensor<?x2xf32>) -> tensor<?x2xf32> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'gear.dispatch' op @f_g0 gives tensor<2x2xf16> as result 0, not tensor<?x2xf32>
  %r = gear.dispatch(%x1) dims [0:0] cases {[2] -> @f_g0} : (tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %r : tensor<?x2xf32>
}

// -----

// Tests that a case's callee is the version for that case's gear value.
func.func @f_g0(%x1: tensor<2x2xf32>) -> tensor<2x2xf32> {
  func.return %x1 : tensor<2x2xf32>
}
func.func @case(%x1: tensor<?x2xf32>) -> tensor<?x2xf32> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'gear.dispatch' op case [4] calls @f_g0, whose argument 0 has 2 in dim 0, not the gear value 4
  %r = gear.dispatch(%x1) dims [0:0] cases {[4] -> @f_g0} : (tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %r : tensor<?x2xf32>
}
