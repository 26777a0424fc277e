// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p capture-verify | filecheck %s

// Tests that a side stream forked from and joined back to the capture stream passes.

!t = tensor<8x8xf16>
stream.decl @s0 "<main>" priority 0
stream.decl @s1 "1" priority 0
func.func @closed(%x: !t) -> !t {
  %fork = sync.record on @s0 {event_id = 0 : i64}
  sync.wait %fork on @s1
  %b = npu.exp %x {stream.on = @s1} : (!t) -> !t
  %join = sync.record on @s1 {event_id = 1 : i64}
  sync.wait %join on @s0
  func.return %b : !t
}

// CHECK-LABEL: func.func @closed
// CHECK:         sync.wait %join on @s0

// -----

// Tests that a side stream left unjoined (its last task is a kernel, not a record the
// capture stream waits on) is the runtime's error 107025, at that task.

!t = tensor<8x8xf16>
stream.decl @s0 "<main>" priority 0
stream.decl @s1 "1" priority 0
func.func @unjoined(%x: !t) -> !t {
  %fork = sync.record on @s0 {event_id = 0 : i64}
  sync.wait %fork on @s1
  %a = npu.relu %x {stream.on = @s0} : (!t) -> !t
  %b = npu.exp %x {stream.on = @s1} : (!t) -> !t
  func.return %a : !t
}

// CHECK: capture-verify.mlir:[[# @LINE - 4]]:3: error: capture model contains a stream that was not joined to the original stream (runtime error 107025): stream @s1 ("1")'s last task, 'npu.exp' (%b), is not an event record; record an event after it and wait on it on @s0 ("<main>") before the return

// -----

// Tests that a record nobody waits on does not join its stream.

!t = tensor<8x8xf16>
stream.decl @s0 "<main>" priority 0
stream.decl @s1 "1" priority 0
func.func @free_record(%x: !t) -> !t {
  %fork = sync.record on @s0 {event_id = 0 : i64}
  sync.wait %fork on @s1
  %b = npu.exp %x {stream.on = @s1} : (!t) -> !t
  %join = sync.record on @s1 {event_id = 1 : i64}
  func.return %x : !t
}

// CHECK: capture-verify.mlir:[[# @LINE - 4]]:3: error: capture model contains a stream that was not joined to the original stream (runtime error 107025): stream @s1 ("1")'s last task, 'sync.record' (%join), is an event record that no stream waits on

// -----

// Tests that a side stream whose first task is not a wait on a capturing stream's event
// is not forked: the capture would not contain its work.

!t = tensor<8x8xf16>
stream.decl @s0 "<main>" priority 0
stream.decl @s1 "1" priority 0
func.func @unforked(%x: !t) -> !t {
  %b = npu.exp %x {stream.on = @s1} : (!t) -> !t
  %join = sync.record on @s1 {event_id = 0 : i64}
  sync.wait %join on @s0
  func.return %b : !t
}

// CHECK: capture-verify.mlir:[[# @LINE - 6]]:3: error: stream @s1 ("1") is not forked from the capture: its first task, 'npu.exp' (%b), does not wait on an event of a capturing stream
