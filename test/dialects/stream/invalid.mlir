// RUN: npuir-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// Every error the `stream` dialect reports, one case per `// -----` chunk;
// each points at the op (or token) at fault, with the absolute line in this file.

// Tests that a value defined inside a switch cannot be used outside it except
// through the yield. The parser scopes names to regions, so a later use is an
// undefined value ...
func.func @case(%x: tensor<8xf16>) -> tensor<8xf16> {
  stream.switch "1" {
    %inner = npu.relu %x : (tensor<8xf16>) -> tensor<8xf16>
  }
// CHECK: invalid.mlir:[[# @LINE + 1]]:18: error: use of undefined value '%inner'
  %out = npu.exp %inner : (tensor<8xf16>) -> tensor<8xf16>
  func.return %out : tensor<8xf16>
}

// -----

// ... and an earlier use (a forward reference) parses but is a use before the
// definition, which npuir's verifier rejects since xDSL does not check
// dominance. (The switch's own check, for IR that passes build, is tested in
// test/unit/dialects/test_scope.py.)
func.func @case(%x: tensor<8xf16>) -> tensor<8xf16> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.exp' op uses %inner before it is defined (a value must be computed before its uses; a wait_tensor cycle looks like this)
  %out = npu.exp %inner : (tensor<8xf16>) -> tensor<8xf16>
  stream.switch "1" {
    %inner = npu.relu %x : (tensor<8xf16>) -> tensor<8xf16>
  }
  func.return %out : tensor<8xf16>
}

// -----

// Tests that a value may not escape a nested switch into the enclosing one either.
func.func @case(%x: tensor<8xf16>) {
  stream.switch "1" {
// CHECK: invalid.mlir:[[# @LINE + 1]]:5: error: 'npu.exp' op uses %inner before it is defined (a value must be computed before its uses; a wait_tensor cycle looks like this)
    %use = npu.exp %inner : (tensor<8xf16>) -> tensor<8xf16>
    stream.switch "2" {
      %inner = npu.relu %x : (tensor<8xf16>) -> tensor<8xf16>
    }
  }
  func.return
}

// -----

// Tests that the yielded types are the switch's result types.
func.func @case(%x: tensor<8xf16>) -> tensor<8xf32> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'stream.switch' op yields (tensor<8xf16>) but the scope declares results (tensor<8xf32>)
  %r = stream.switch "1" -> tensor<8xf32> {
    stream.yield %x : tensor<8xf16>
  }
  func.return %r : tensor<8xf32>
}

// -----

// Tests that a switch with results must yield them (no implicit empty yield).
func.func @case(%x: tensor<8xf16>) -> tensor<8xf16> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'stream.switch' op yields () but the scope declares results (tensor<8xf16>)
  %r = stream.switch "1" -> tensor<8xf16> {
    %y = npu.relu %x : (tensor<8xf16>) -> tensor<8xf16>
  }
  func.return %r : tensor<8xf16>
}

// -----

// Tests that the yield gives as many values as the switch declares.
func.func @case(%x: tensor<8xf16>) -> tensor<8xf16> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'stream.switch' op yields (tensor<8xf16>, tensor<8xf16>) but the scope declares results (tensor<8xf16>)
  %r = stream.switch "1" -> tensor<8xf16> {
    stream.yield %x, %x : tensor<8xf16>, tensor<8xf16>
  }
  func.return %r : tensor<8xf16>
}

// -----

// Tests that priorities are >= 0 (0 is served first).
func.func @case() {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'stream.switch' op priority must be >= 0, got -1
  stream.switch "1" priority -1 {
  }
  func.return
}

// -----

// Tests that stream.yield only ends a stream.switch.
func.func @case(%x: tensor<8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'stream.yield' op expects parent op 'stream.switch'
  stream.yield %x : tensor<8xf16>
}

// -----

// Tests that stream.yield does not end a coreset.limit.
func.func @case(%x: tensor<8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'coreset.limit' op terminates with operation stream.yield instead of coreset.yield
  coreset.limit cube 2 {
    stream.yield
  }
  func.return
}

// -----

// Tests that the generic form's body ends with the yield.
func.func @case(%x: tensor<8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'stream.switch' op terminates with operation npu.relu instead of stream.yield
  "stream.switch"() <{tag = "1", priority = 0 : i64}> ({
    %0 = npu.relu %x : (tensor<8xf16>) -> tensor<8xf16>
  }) : () -> ()
  func.return
}

// -----

// Tests that the body block takes no arguments.
func.func @case(%x: tensor<8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'stream.switch' op body block takes no arguments
  "stream.switch"() <{tag = "1", priority = 0 : i64}> ({
  ^bb0(%arg: tensor<8xf16>):
    stream.yield
  }) : () -> ()
  func.return
}

// -----

// Tests that the body is a single block.
func.func @case(%x: tensor<8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'stream.switch' op Region 'body' at position 0 expected a single block, but got 2 blocks
  "stream.switch"() <{tag = "1", priority = 0 : i64}> ({
    stream.yield
  ^bb1:
    stream.yield
  }) : () -> ()
  func.return
}

// -----

// Tests that the generic form needs the tag property.
func.func @case() {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'stream.switch' op property 'tag' expected in operation 'stream.switch'
  "stream.switch"() <{priority = 0 : i64}> ({
    stream.yield
  }) : () -> ()
  func.return
}

// -----

// Tests that the tag is a string literal.
func.func @case() {
// CHECK: invalid.mlir:[[# @LINE + 1]]:17: error: string literal expected for the stream tag
  stream.switch 1 {
  }
  func.return
}

// -----

// Tests that the priority is an integer.
func.func @case() {
// CHECK: invalid.mlir:[[# @LINE + 1]]:30: error: Expected integer literal
  stream.switch "1" priority high {
  }
  func.return
}

// -----

// Tests that the body is a region in braces.
func.func @case(%x: tensor<8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: Expected region!
  stream.switch "1" -> tensor<8xf16>
  func.return
}

// -----

// Tests that wait_tensor returns its first operand's type (generic form).
func.func @case(%a: tensor<8xf16>, %b: tensor<4xf32>) {
// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'stream.wait_tensor' op result 'result' at position 0 does not verify:
// CHECK-NEXT: attribute tensor<8xf16> expected from variable 'T', but got tensor<4xf32>
  %w = "stream.wait_tensor"(%a, %b) : (tensor<8xf16>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// Tests that wait_tensor orders tensors after tensors.
func.func @case(%a: tensor<8xf16>, %b: i32) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'stream.wait_tensor' op i32 should be of base attribute tensor
  %w = stream.wait_tensor %a after %b : tensor<8xf16>, i32
  func.return
}

// -----

// Tests that wait_tensor spells `after` between its operands.
func.func @case(%a: tensor<8xf16>, %b: tensor<8xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:29: error: Expected 'after'
  %w = stream.wait_tensor %a, %b : tensor<8xf16>, tensor<8xf16>
  func.return
}

// -----

// Tests that a stream declaration's priority is >= 0.
module {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'stream.decl' op priority must be >= 0, got -2
  stream.decl @s1 "1" priority -2
}

// -----

// Tests that a stream declaration spells out its priority.
module {
// CHECK: invalid.mlir:[[# @LINE + 2]]:1: error: Expected 'priority'
  stream.decl @s1 "1"
}

// -----

// Tests that a stream declaration is named by a symbol.
module {
// CHECK: invalid.mlir:[[# @LINE + 1]]:15: error: expect symbol name
  stream.decl s1 "1" priority 0
}

// -----

// Tests that an op's stream.on names a declared stream.
stream.decl @s0 "default" priority 0
func.func @case(%x: tensor<8xf16>) -> tensor<8xf16> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.relu' op names stream @s7, which no 'stream.decl' declares
  %a = npu.relu %x {stream.on = @s7} : (tensor<8xf16>) -> tensor<8xf16>
  func.return %a : tensor<8xf16>
}

// -----

// Tests that stream.on names a stream.decl, not another symbol.
func.func @case(%x: tensor<8xf16>) -> tensor<8xf16> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.relu' op names stream @case, which no 'stream.decl' declares
  %a = npu.relu %x {stream.on = @case} : (tensor<8xf16>) -> tensor<8xf16>
  func.return %a : tensor<8xf16>
}

// -----

// Tests that stream.on is a symbol reference, not a tag string.
stream.decl @s0 "default" priority 0
func.func @case(%x: tensor<8xf16>) -> tensor<8xf16> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'npu.relu' op 'stream.on' must name a stream as @symbol, got "default"
  %a = npu.relu %x {stream.on = "default"} : (tensor<8xf16>) -> tensor<8xf16>
  func.return %a : tensor<8xf16>
}

// -----

// Tests that stream.on is checked on ops of other dialects too.
stream.decl @s0 "default" priority 0
func.func @case(%x: tensor<8xf16>) -> tensor<8xf16> {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'func.return' op names stream @s1, which no 'stream.decl' declares
  func.return {stream.on = @s1} %x : tensor<8xf16>
}

// -----

// Tests that streams are declared at module level, where `stream.on` looks for them.
func.func @case() {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'stream.decl' op expects parent op 'builtin.module'
  stream.decl @s0 "default" priority 0
  func.return
}
