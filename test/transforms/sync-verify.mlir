// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p sync-verify | filecheck %s

// Tests that a correctly synchronised function passes unchanged.

!t = tensor<8x8xf16>
stream.decl @s0 "<main>" priority 0
stream.decl @s1 "1" priority 0
func.func @ok(%x: !t) -> !t {
  %a = npu.relu %x {stream.on = @s0} : (!t) -> !t
  %e0 = sync.record on @s0 {event_id = 0 : i64}
  sync.wait %e0 on @s1
  %b = npu.exp %a {stream.on = @s1} : (!t) -> !t
  %e1 = sync.record on @s1 {event_id = 0 : i64}
  sync.wait %e1 on @s0
  func.return %b : !t
}

// CHECK-LABEL: func.func @ok
// CHECK:         sync.wait

// -----

// Tests that a cross-stream use without an event is a race, reported at the
// consumer with the producer and both streams.

!t = tensor<8x8xf16>
stream.decl @s0 "<main>" priority 0
stream.decl @s1 "1" priority 0
func.func @missing_wait(%x: !t) -> !t {
  %a = npu.relu %x {stream.on = @s0} : (!t) -> !t
  %b = npu.exp %a {stream.on = @s1} : (!t) -> !t
  %e1 = sync.record on @s1
  sync.wait %e1 on @s0
  func.return %b : !t
}

// CHECK: sync-verify.mlir:[[# @LINE - 6]]:3: error: race: 'npu.exp' (%b) on stream @s1 ("1") uses the result of 'npu.relu' (%a) on stream @s0 ("<main>"), but no event orders it after its producer

// -----

// Tests that a stream whose work is not joined before return is a race.

!t = tensor<8x8xf16>
stream.decl @s0 "<main>" priority 0
stream.decl @s1 "1" priority 0
func.func @not_joined(%x: !t) -> !t {
  %a = npu.relu %x {stream.on = @s0} : (!t) -> !t
  %b = npu.exp %x {stream.on = @s1} : (!t) -> !t
  func.return %a : !t
}

// CHECK: sync-verify.mlir:[[# @LINE - 3]]:3: error: race: stream @s1 ("1") is not joined into @s0 ("<main>") before the function returns

// -----

// Tests that an event id reused while a wait on its previous event may still
// be pending is caught: the hardware releases the later wait by the newer
// record, which comes before the producer it should wait for.

!t = tensor<8x8xf16>
stream.decl @s0 "<main>" priority 0
stream.decl @s1 "1" priority 0
stream.decl @s2 "2" priority 0
func.func @unsafe_reuse(%x: !t) -> !t {
  %a = npu.relu %x {stream.on = @s1} : (!t) -> !t
  %e0 = sync.record on @s1 {event_id = 0 : i64}
  %e1 = sync.record on @s2 {event_id = 0 : i64}
  sync.wait %e0 on @s0
  %b = npu.exp %a {stream.on = @s0} : (!t) -> !t
  sync.wait %e1 on @s0
  func.return %b : !t
}

// CHECK: sync-verify.mlir:[[# @LINE - 5]]:3: error: race: 'npu.exp' (%b) on stream @s0 ("<main>") uses the result of 'npu.relu' (%a) on stream @s1 ("1")

// -----

// Tests that a wait issued before its record is rejected (xDSL does not
// check dominance).

!t = tensor<8x8xf16>
stream.decl @s0 "<main>" priority 0
stream.decl @s1 "1" priority 0
func.func @wait_first(%x: !t) -> !t {
  sync.wait %e on @s0
  %a = npu.relu %x {stream.on = @s1} : (!t) -> !t
  %e = sync.record on @s1
  func.return %a : !t
}

// CHECK: sync-verify.mlir:[[# @LINE - 6]]:3: error: 'sync.wait' op uses %e before it is defined

// -----

// Tests that a lowered function with an op left without a stream is rejected
// at that op.

!t = tensor<8x8xf16>
stream.decl @s0 "<main>" priority 0
func.func @no_stream(%x: !t) -> !t {
  %a = npu.relu %x {stream.on = @s0} : (!t) -> !t
  %b = npu.exp %a : (!t) -> !t
  func.return %b : !t
}

// CHECK: sync-verify.mlir:[[# @LINE - 4]]:3: error: 'npu.exp' has no 'stream.on'; run stream-partition first

// -----

// Tests that an op naming a stream no stream.decl declares is rejected.

!t = tensor<8x8xf16>
stream.decl @s0 "<main>" priority 0
func.func @unknown_stream(%x: !t) -> !t {
  %a = npu.relu %x {stream.on = @s7} : (!t) -> !t
  func.return %a : !t
}

// CHECK: sync-verify.mlir:[[# @LINE - 4]]:3: error: 'npu.relu' op names stream @s7, which no 'stream.decl' declares

// -----

// Tests that an op the schedule does not know (here from arith) is rejected
// at the op rather than silently ignored.

!t = tensor<8x8xf16>
stream.decl @s0 "<main>" priority 0
func.func @foreign_op(%x: !t) -> i32 {
  %c = arith.constant 1 : i32
  func.return %c : i32
}

// CHECK: sync-verify.mlir:[[# @LINE - 4]]:3: error: 'arith.constant' is not an op the npu schedule knows

// -----

// Tests that an ordering the user asked for with wait_tensor stays checked after
// lowering: the seed's first npu_wait_tensor without the sync.wait that
// implements it is a race, though no data flows from %add to the matmul.

!t = tensor<8x8xf16>
stream.decl @s0 "<main>" priority 0
stream.decl @s1 "1" priority 0
func.func @dropped_wait(%in1: !t, %in2: !t, %in3: !t, %in4: !t) -> (!t, !t) {
  %add = npu.add %in1, %in2 {stream.on = @s0} : (!t, !t) -> !t
  %e0 = sync.record on @s0 {event_id = 0 : i64}
  %w = stream.wait_tensor %in4 after %add {stream.on = @s1} : !t, !t
  %m = npu.matmul %in3, %w {stream.on = @s1} : (!t, !t) -> !t
  %e1 = sync.record on @s1 {event_id = 1 : i64}
  sync.wait %e1 on @s0
  func.return %add, %m : !t, !t
}

// CHECK: sync-verify.mlir:[[# @LINE - 6]]:3: error: race: 'npu.matmul' (%m) on stream @s1 ("1") must wait for 'npu.add' (%add) on stream @s0 ("<main>"), but no event orders it after its producer

// -----

// Tests that a use of the waited tensor after the wait's scope, on a third stream,
// reads the wait's result once lowered (docs/ir.md), so dropping its event is a race.

!t = tensor<8x8xf16>
stream.decl @s0 "<main>" priority 0
stream.decl @s1 "1" priority 0
stream.decl @s2 "2" priority 0
func.func @late_use(%in1: !t, %in4: !t) -> (!t, !t, !t) {
  %add = npu.add %in1, %in1 {stream.on = @s0} : (!t, !t) -> !t
  %e0 = sync.record on @s0 {event_id = 0 : i64}
  %w = stream.wait_tensor %in4 after %add {stream.on = @s1} : !t, !t
  sync.wait %e0 on @s1
  %m = npu.exp %w {stream.on = @s1} : (!t) -> !t
  %r = npu.relu %w {stream.on = @s2} : (!t) -> !t
  %e1 = sync.record on @s1 {event_id = 1 : i64}
  %e2 = sync.record on @s2 {event_id = 2 : i64}
  sync.wait %e1 on @s0
  sync.wait %e2 on @s0
  func.return %add, %m, %r : !t, !t, !t
}

// CHECK: sync-verify.mlir:[[# @LINE - 8]]:3: error: race: 'npu.relu' (%r) on stream @s2 ("2") must wait for 'npu.add' (%add) on stream @s0 ("<main>"), but no event orders it after its producer
