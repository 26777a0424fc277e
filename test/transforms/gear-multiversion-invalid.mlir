// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p gear-multiversion | filecheck %s
// RUN: not npuir-opt %s -p 'gear-multiversion{fallback=static}' 2>&1 | filecheck %s --check-prefix=OPT

// OPT: error: bad option for pass 'gear-multiversion': option 'fallback' expects one of: none, dynamic, got 'static'

// Tests that zip lists of unequal length are an error that gives the lengths.

func.func @unequal(%x1: tensor<?x2xf32> {gear.dims = #gear.dims<0: [2, 4, 8]>},
                   %x2: tensor<?x2xf32> {gear.dims = #gear.dims<0: [2, 4]>}) -> tensor<?x2xf32> {
  %s = npu.add %x1, %x2 : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %s : tensor<?x2xf32>
}

// CHECK: gear-multiversion-invalid.mlir:[[# @LINE - 6]]:1: error: gear.policy "zip" pairs the i-th values of every annotated dim, so all lists need the same length; got arg0 dim 0: 3, arg1 dim 0: 2

// -----

// Tests that more than 100 gears after merging is an error that counts them.

func.func @too_many(%x: tensor<?x?xf32> {gear.dims = #gear.dims<0: [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], 1: [2, 3, 4, 5, 6, 7, 8, 9, 10, 11]>}) -> tensor<?x?xf32>
    attributes {gear.policy = "product"} {
  %e = npu.exp %x : (tensor<?x?xf32>) -> tensor<?x?xf32>
  func.return %e : tensor<?x?xf32>
}

// CHECK: gear-multiversion-invalid.mlir:[[# @LINE - 6]]:1: error: 110 gears after merging; at most 100 are allowed

// -----

// Tests that a single gear after merging duplicates is rejected (GE's rule).

func.func @one_gear(%x: tensor<?x2xf32> {gear.dims = #gear.dims<0: [4, 4]>}) -> tensor<?x2xf32> {
  %e = npu.exp %x : (tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %e : tensor<?x2xf32>
}

// CHECK: gear-multiversion-invalid.mlir:[[# @LINE - 5]]:1: error: 1 gear after merging; a gear set needs at least 2

// -----

// Tests that in zip mode a listed combination that does not type-check is an
// error at the op that fails, naming the gear.

func.func @zip_mismatch(%x1: tensor<?x2xf32> {gear.dims = #gear.dims<0: [2, 4]>},
                        %x2: tensor<?x2xf32> {gear.dims = #gear.dims<0: [4, 4]>}) -> tensor<?x2xf32> {
  %s = npu.add %x1, %x2 : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %s : tensor<?x2xf32>
}

// CHECK: gear-multiversion-invalid.mlir:[[# @LINE - 4]]:3: error: gear (arg0 dim 0 = 2, arg1 dim 0 = 4) does not type-check: shapes 2x2 and 4x2 do not broadcast (2 vs 4)

// -----

// Tests that a type that cannot be re-inferred (a reshape with two unknown
// dims) is an error at the reshape.

func.func @reshape_two_unknowns(%x: tensor<?x8xf32> {gear.dims = #gear.dims<0: [2, 4]>}) -> tensor<?x?xf32> {
  %r = npu.reshape %x : (tensor<?x8xf32>) -> tensor<?x?xf32>
  func.return %r : tensor<?x?xf32>
}

// CHECK: gear-multiversion-invalid.mlir:[[# @LINE - 4]]:3: error: gear (arg0 dim 0 = 2) does not type-check: cannot infer 2 unknown dims of ?x? from 2x8; at most one may be '?'
