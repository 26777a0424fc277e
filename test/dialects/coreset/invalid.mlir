// RUN: npuir-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// Every error the `coreset` dialect reports, one case per `// -----` chunk;
// each points at the op, attribute or token at fault, with the absolute line
// in this file.

// Tests that a limit gives at least one count.
func.func @case() {
// CHECK: invalid.mlir:[[# @LINE + 1]]:17: error: expected 'cube N' and/or 'vector M'
  coreset.limit {
  }
  func.return
}

// -----

// Tests that the generic form of a limit gives at least one count too.
func.func @case() {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'coreset.limit' op needs at least one of 'cube' and 'vector'
  "coreset.limit"() ({
    coreset.yield
  }) : () -> ()
  func.return
}

// -----

// Tests that a count of 0 is rejected (an omitted count means unlimited).
func.func @case() {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'coreset.limit' op cube count must be a whole number >= 1, got 0
  coreset.limit cube 0 {
  }
  func.return
}

// -----

// Tests that negative counts are rejected.
func.func @case() {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'coreset.limit' op vector count must be a whole number >= 1, got -2
  coreset.limit cube 4 vector -2 {
  }
  func.return
}

// -----

// Tests that counts are integers.
func.func @case() {
// CHECK: invalid.mlir:[[# @LINE + 1]]:22: error: Expected integer literal
  coreset.limit cube many {
  }
  func.return
}

// -----

// Tests that the counts come in the order cube, vector.
func.func @case() {
// CHECK: invalid.mlir:[[# @LINE + 1]]:26: error: Expected region!
  coreset.limit vector 4 cube 2 {
  }
  func.return
}

// -----

// Tests that the yielded types are the limit's result types.
func.func @case(%x: tensor<3x3xf32>) -> tensor<3x3xf16> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'coreset.limit' op yields (tensor<3x3xf32>) but the scope declares results (tensor<3x3xf16>)
  %r = coreset.limit cube 2 -> tensor<3x3xf16> {
    coreset.yield %x : tensor<3x3xf32>
  }
  func.return %r : tensor<3x3xf16>
}

// -----

// Tests that coreset.yield only ends a coreset.limit.
func.func @case(%x: tensor<3x3xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'coreset.yield' op expects parent op 'coreset.limit'
  coreset.yield %x : tensor<3x3xf32>
}

// -----

// Tests that coreset.yield does not end a stream.switch.
func.func @case() {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'stream.switch' op terminates with operation coreset.yield instead of stream.yield
  stream.switch "1" {
    coreset.yield
  }
  func.return
}

// -----

// Tests that a value defined inside a limit is not visible after it.
func.func @case(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
  coreset.limit vector 4 {
    %a = npu.relu %x : (tensor<3x3xf32>) -> tensor<3x3xf32>
  }
// CHECK: invalid.mlir:[[# @LINE + 1]]:15: error: use of undefined value '%a'
  func.return %a : tensor<3x3xf32>
}

// -----

// Tests that a stream limit gives at least one count.
module {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'coreset.stream_limit' op needs at least one of 'cube' and 'vector'
  coreset.stream_limit "1"
}

// -----

// Tests that a stream limit's counts are >= 1.
module {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'coreset.stream_limit' op vector count must be a whole number >= 1, or -1 for no limit, got 0
  coreset.stream_limit "1" cube 3 vector 0
}

// -----

// Tests that the generic form of a stream limit gives at least one count.
module {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'coreset.stream_limit' op needs at least one of 'cube' and 'vector'
  "coreset.stream_limit"() <{tag = "1"}> : () -> ()
}

// -----

// Tests that a stream limit names its stream by tag.
module {
// CHECK: invalid.mlir:[[# @LINE + 1]]:24: error: attribute expected
  coreset.stream_limit cube 3
}

// -----

// Tests that #coreset.cores is not empty.
// CHECK: invalid.mlir:[[# @LINE + 1]]:52: error: expected 'cube N' and/or 'vector M'
module attributes {coreset.global = #coreset.cores<>} {
}

// -----

// Tests that #coreset.cores rejects a count of 0.
// CHECK: invalid.mlir:[[# @LINE + 3]]:68: error: vector count must be a whole number >= 1, got 0
// CHECK-NEXT: module attributes {coreset.global = #coreset.cores<cube 20, vector 0>} {
// CHECK-NEXT: ^
module attributes {coreset.global = #coreset.cores<cube 20, vector 0>} {
}

// -----

// Tests that #coreset.cores separates its counts with a comma.
// CHECK: invalid.mlir:[[# @LINE + 1]]:60: error: '>' expected
module attributes {coreset.global = #coreset.cores<cube 20 vector 40>} {
}

// -----

// Tests that #coreset.cores rejects negative counts.
// CHECK: invalid.mlir:[[# @LINE + 1]]:57: error: cube count must be a whole number >= 1, got -1
module attributes {coreset.global = #coreset.cores<cube -1>} {
}

// -----

// Tests that coreset.global is a #coreset.cores.
// CHECK: invalid.mlir:[[# @LINE + 1]]:1: error: 'builtin.module' op 'coreset.global' must be a #coreset.cores attribute, got 20 : i64
module attributes {coreset.global = 20 : i64} {
}

// -----

// Tests that a stream limit's tag is a string.
module {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'coreset.stream_limit' op 1 : i64 should be of base attribute string
  coreset.stream_limit 1 cube 3
}

// -----

// Tests that an op's effective limits, coreset.cores, are a #coreset.cores.
func.func @case(%a: tensor<4xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.relu' op 'coreset.cores' must be a #coreset.cores attribute, got 6 : i64
  %0 = npu.relu %a {coreset.cores = 6 : i64} : (tensor<4xf16>) -> tensor<4xf16>
  func.return
}

// -----

// Tests that coreset.cores is checked on an op of another dialect too.
func.func @case(%a: tensor<4xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'func.return' op 'coreset.cores' must be a #coreset.cores attribute, got "all"
  func.return {coreset.cores = "all"}
}
