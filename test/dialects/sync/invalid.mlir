// RUN: npuir-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// Every error the `sync` dialect reports, one case per `// -----` chunk; each
// points at the op (or token) at fault, with the absolute line in this file.

// Tests that a wait names an event a sync.record produced, not an argument.
func.func @case(%e: !sync.event) {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'sync.wait' op waits on a value that is not the result of 'sync.record'
  sync.wait %e on @s1
  func.return
}

// -----

// Tests that physical event ids are >= 0.
func.func @case() {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'sync.record' op event_id must be >= 0, got -1
  %e = sync.record on @s0 {event_id = -1 : i64}
  func.return
}

// -----

// Tests that event ids are i64.
func.func @case() {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'sync.record' op Expected attribute i64 but got i32
  %e = sync.record on @s0 {event_id = 3 : i32}
  func.return
}

// -----

// Tests that a wait takes an event, not a tensor.
func.func @case(%t: tensor<4xf16>) {
// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'sync.wait' op operand 'event' at position 0 does not verify:
// CHECK-NEXT: tensor<4xf16> should be of base attribute sync.event
  "sync.wait"(%t) <{stream = @s1}> : (tensor<4xf16>) -> ()
  func.return
}

// -----

// Tests that a record produces an event.
func.func @case() {
// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'sync.record' op result 'event' at position 0 does not verify:
// CHECK-NEXT: i32 should be of base attribute sync.event
  %e = "sync.record"() <{stream = @s0}> : () -> i32
  func.return
}

// -----

// Tests that a record names its stream with `on @symbol`.
func.func @case() {
// CHECK: invalid.mlir:[[# @LINE + 1]]:20: error: Expected 'on'
  %e = sync.record @s0
  func.return
}

// -----

// Tests that the stream is a symbol reference.
func.func @case() {
// CHECK: invalid.mlir:[[# @LINE + 1]]:23: error: attribute expected
  %e = sync.record on s0
  func.return
}

// -----

// Tests that a wait names its stream.
func.func @case() {
  %e = sync.record on @s0
// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: Expected 'on'
  sync.wait %e
  func.return
}

// -----

// Tests that the generic form needs the stream property.
func.func @case() {
// CHECK: invalid.mlir:[[# @LINE + 1]]:3: error: 'sync.record' op property 'stream' expected in operation 'sync.record'
  %e = "sync.record"() : () -> !sync.event
  func.return
}
