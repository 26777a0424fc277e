// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p mem-verify | filecheck %s

// Tests that a safe plan passes unchanged: %c reuses %a's space on one stream.

!t = tensor<4x128xf16>
stream.decl @s0 "default" priority 0
func.func @ok(%x: !t) -> !t attributes {mem.pool = 2048 : i64} {
  %a = npu.relu %x {stream.on = @s0, mem.offset = 0 : i64, mem.size = 1024 : i64} : (!t) -> !t
  %b = npu.exp %a {stream.on = @s0, mem.offset = 1024 : i64, mem.size = 1024 : i64} : (!t) -> !t
  %c = npu.neg %b {stream.on = @s0, mem.offset = 0 : i64, mem.size = 1024 : i64} : (!t) -> !t
  %d = npu.relu %c {stream.on = @s0} : (!t) -> !t
  func.return %d : !t
}

// CHECK-LABEL: func.func @ok

// -----

// Tests that a write into a buffer still read on another stream, with no event
// between the read and the write, is refused at the write, naming both ops.

!t = tensor<4x128xf16>
stream.decl @s0 "default" priority 0
stream.decl @s1 "1" priority 0
func.func @unordered(%x: !t) -> !t attributes {mem.pool = 2048 : i64} {
  %a = npu.relu %x {stream.on = @s0, mem.offset = 0 : i64, mem.size = 1024 : i64} : (!t) -> !t
  %e0 = sync.record on @s0 {event_id = 0 : i64}
  sync.wait %e0 on @s1
  %b = npu.exp %a {stream.on = @s1, mem.offset = 1024 : i64, mem.size = 1024 : i64} : (!t) -> !t
  %c = npu.neg %x {stream.on = @s0, mem.offset = 0 : i64, mem.size = 1024 : i64} : (!t) -> !t
  %e1 = sync.record on @s1 {event_id = 1 : i64}
  sync.wait %e1 on @s0
  %d = npu.add %b, %c {stream.on = @s0} : (!t, !t) -> !t
  func.return %d : !t
}

// CHECK: mem-verify.mlir:[[# @LINE - 7]]:3: error: mem-verify: 'npu.neg' (%c) on stream @s0 ("default") writes [0, 1024), which overlaps the buffer of 'npu.relu' (%a) at [0, 1024), but 'npu.exp' (%b) on stream @s1 ("1") reads that buffer and is not ordered before the write (no stream order or event puts it first)
// CHECK: mem-verify.mlir:[[# @LINE - 12]]:3: note: the buffer of 'npu.relu' (%a) is written here

// -----

// Tests that a buffer too small for its tensor is refused.

!t = tensor<4x128xf16>
stream.decl @s0 "default" priority 0
func.func @small(%x: !t) -> !t attributes {mem.pool = 512 : i64} {
// CHECK: mem-verify.mlir:[[# @LINE + 1]]:3: error: mem-verify: result 0 takes 1024 bytes but mem.size gives it 512
  %a = npu.relu %x {stream.on = @s0, mem.offset = 0 : i64, mem.size = 512 : i64} : (!t) -> !t
  %b = npu.exp %a {stream.on = @s0} : (!t) -> !t
  func.return %b : !t
}

// -----

// Tests that a place beyond the pool is refused.

!t = tensor<4x128xf16>
stream.decl @s0 "default" priority 0
func.func @beyond(%x: !t) -> !t attributes {mem.pool = 1024 : i64} {
// CHECK: mem-verify.mlir:[[# @LINE + 1]]:3: error: mem-verify: result 0 at [512, 1536) lies beyond the pool of 1024 bytes
  %a = npu.relu %x {stream.on = @s0, mem.offset = 512 : i64, mem.size = 1024 : i64} : (!t) -> !t
  %b = npu.exp %a {stream.on = @s0} : (!t) -> !t
  func.return %b : !t
}

// -----

// Tests that a returned tensor (its caller's memory) may not take pool space.

!t = tensor<4x128xf16>
stream.decl @s0 "default" priority 0
func.func @returned(%x: !t) -> !t attributes {mem.pool = 1024 : i64} {
// CHECK: mem-verify.mlir:[[# @LINE + 1]]:3: error: mem-verify: result 0 is returned, so it lives in the caller's memory, yet it has a place in the pool
  %a = npu.relu %x {stream.on = @s0, mem.offset = 0 : i64, mem.size = 1024 : i64} : (!t) -> !t
  func.return %a : !t
}

// -----

// Tests that a view must repeat its source's place.

!t = tensor<4x128xf16>
stream.decl @s0 "default" priority 0
func.func @view(%x: !t) -> !t attributes {mem.pool = 2048 : i64} {
  %a = npu.relu %x {stream.on = @s0, mem.offset = 0 : i64, mem.size = 1024 : i64} : (!t) -> !t
// CHECK: mem-verify.mlir:[[# @LINE + 1]]:3: error: mem-verify: a view shares its source's buffer, at (0, 1024), but its place is (1024, 1024)
  %r = npu.reshape %a {stream.on = @s0, mem.offset = 1024 : i64, mem.size = 1024 : i64} : (!t) -> !t
  %b = npu.exp %r {stream.on = @s0} : (!t) -> !t
  func.return %b : !t
}

// -----

// Tests that a function without a plan is refused: mem-plan runs first.

!t = tensor<4x128xf16>
stream.decl @s0 "default" priority 0
// CHECK: mem-verify.mlir:[[# @LINE + 1]]:1: error: mem-verify needs mem-plan first: the input is not memory-planned (@unplanned has no mem.pool)
func.func @unplanned(%x: !t) -> !t {
  %a = npu.relu %x {stream.on = @s0} : (!t) -> !t
  %b = npu.exp %a {stream.on = @s0} : (!t) -> !t
  func.return %b : !t
}
