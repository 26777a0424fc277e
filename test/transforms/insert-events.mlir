// RUN: npuir-opt %s --split-input-file -p 'stream-partition,insert-events,sync-verify' | filecheck %s

// Tests that the seed model needs exactly three waits: stream "1" after the
// add, stream "2" after the stream-"1" matmul, and the default stream after
// stream "2" before return (which also covers stream "1").

!t = tensor<8x8xf16>
func.func @seed(%in1: !t, %in2: !t, %in3: !t, %in4: !t) -> (!t, !t, !t, !t) {
  %add = npu.add %in1, %in2 : (!t, !t) -> !t
  %mm = stream.switch "1" -> !t {
    %w = stream.wait_tensor %in4 after %add : !t, !t
    %m = npu.matmul %in3, %w : (!t, !t) -> !t
    stream.yield %m : !t
  }
  %mm1 = npu.matmul %in3, %in4 : (!t, !t) -> !t
  %add2 = stream.switch "2" -> !t {
    %w2 = stream.wait_tensor %in4 after %mm : !t, !t
    %a = npu.add %in3, %w2 : (!t, !t) -> !t
    stream.yield %a : !t
  }
  func.return %add, %mm, %mm1, %add2 : !t, !t, !t, !t
}

// CHECK-LABEL: func.func @seed
// CHECK-NEXT:    %add = npu.add %in1, %in2 {stream.on = @s0}
// CHECK-NEXT:    %[[E0:.*]] = sync.record on @s0 {event_id = 0 : i64}
// CHECK-NEXT:    %w = stream.wait_tensor %in4 after %add {stream.on = @s1}
// CHECK-NEXT:    sync.wait %[[E0]] on @s1
// CHECK-NEXT:    %m = npu.matmul %in3, %w {stream.on = @s1}
// CHECK-NEXT:    %[[E1:.*]] = sync.record on @s1 {event_id = 0 : i64}
// CHECK-NEXT:    %mm1 = npu.matmul %in3, %w {stream.on = @s0}
// CHECK-NEXT:    %w2 = stream.wait_tensor %w after %m {stream.on = @s2}
// CHECK-NEXT:    sync.wait %[[E1]] on @s2
// CHECK-NEXT:    %a = npu.add %in3, %w2 {stream.on = @s2}
// CHECK-NEXT:    %[[E2:.*]] = sync.record on @s2 {event_id = 0 : i64}
// CHECK-NEXT:    sync.wait %[[E2]] on @s0
// CHECK-NEXT:    func.return %add, %m, %mm1, %a
// CHECK-NOT:     sync.

// -----

// Tests that a wait_tensor whose dependency is on the consumer's own stream
// needs no event: stream order already orders it.

!t = tensor<8x8xf16>
func.func @same_stream(%x: !t, %y: !t) -> !t {
  %r = stream.switch "1" -> !t {
    %a = npu.add %x, %y : (!t, !t) -> !t
    %w = stream.wait_tensor %y after %a : !t, !t
    %b = npu.mul %x, %w : (!t, !t) -> !t
    stream.yield %b : !t
  }
  func.return %r : !t
}

// CHECK-LABEL: func.func @same_stream
// CHECK-NEXT:    %a = npu.add %x, %y {stream.on = @s1}
// CHECK-NEXT:    %w = stream.wait_tensor %y after %a {stream.on = @s1}
// CHECK-NEXT:    %b = npu.mul %x, %w {stream.on = @s1}
// CHECK-NEXT:    %[[E:.*]] = sync.record on @s1 {event_id = 0 : i64}
// CHECK-NEXT:    sync.wait %[[E]] on @s0
// CHECK-NEXT:    func.return %b

// -----

// Tests that a diamond across three streams waits once per incoming edge at
// the join, and not for a producer the other wait already implies.

!t = tensor<8x8xf16>
func.func @diamond(%x: !t) -> !t {
  %a = npu.relu %x : (!t) -> !t
  %b = stream.switch "b" -> !t {
    %b0 = npu.exp %a : (!t) -> !t
    stream.yield %b0 : !t
  }
  %c = stream.switch "c" -> !t {
    %c0 = npu.neg %a : (!t) -> !t
    stream.yield %c0 : !t
  }
  %d = npu.add %b, %c : (!t, !t) -> !t
  func.return %d : !t
}

// CHECK-LABEL: func.func @diamond
// CHECK-NEXT:    %a = npu.relu %x {stream.on = @s0}
// CHECK-NEXT:    %[[EA:.*]] = sync.record on @s0 {event_id = 0 : i64}
// CHECK-NEXT:    sync.wait %[[EA]] on @[[B:s[0-9]+]]
// CHECK-NEXT:    %b0 = npu.exp %a {stream.on = @[[B]]}
// CHECK-NEXT:    %[[EB:.*]] = sync.record on @[[B]] {event_id = 1 : i64}
// CHECK-NEXT:    sync.wait %[[EA]] on @[[C:s[0-9]+]]
// CHECK-NEXT:    %c0 = npu.neg %a {stream.on = @[[C]]}
// CHECK-NEXT:    %[[EC:.*]] = sync.record on @[[C]] {event_id = 2 : i64}
// CHECK-NEXT:    sync.wait %[[EB]] on @s0
// CHECK-NEXT:    sync.wait %[[EC]] on @s0
// CHECK-NEXT:    %d = npu.add %b0, %c0 {stream.on = @s0}
// CHECK-NEXT:    func.return %d

// -----

// Tests that a chain ping-ponging between two streams waits at every hop, and
// that the final join needs no extra wait: the last hop already lands on the
// default stream.

!t = tensor<8x8xf16>
func.func @ping_pong(%x: !t) -> !t {
  %a = npu.relu %x : (!t) -> !t
  %b = stream.switch "1" -> !t {
    %b0 = npu.exp %a : (!t) -> !t
    stream.yield %b0 : !t
  }
  %c = npu.neg %b : (!t) -> !t
  %d = stream.switch "1" -> !t {
    %d0 = npu.exp %c : (!t) -> !t
    stream.yield %d0 : !t
  }
  %e = npu.neg %d : (!t) -> !t
  func.return %e : !t
}

// CHECK-LABEL: func.func @ping_pong
// CHECK-NEXT:    %a = npu.relu %x {stream.on = @s0}
// CHECK-NEXT:    %[[E0:.*]] = sync.record on @s0
// CHECK-NEXT:    sync.wait %[[E0]] on @s1
// CHECK-NEXT:    %b0 = npu.exp %a {stream.on = @s1}
// CHECK-NEXT:    %[[E1:.*]] = sync.record on @s1
// CHECK-NEXT:    sync.wait %[[E1]] on @s0
// CHECK-NEXT:    %c = npu.neg %b0 {stream.on = @s0}
// CHECK-NEXT:    %[[E2:.*]] = sync.record on @s0
// CHECK-NEXT:    sync.wait %[[E2]] on @s1
// CHECK-NEXT:    %d0 = npu.exp %c {stream.on = @s1}
// CHECK-NEXT:    %[[E3:.*]] = sync.record on @s1
// CHECK-NEXT:    sync.wait %[[E3]] on @s0
// CHECK-NEXT:    %e = npu.neg %d0 {stream.on = @s0}
// CHECK-NEXT:    func.return %e

// -----

// Tests that four streams are joined before return with one wait each, and
// that only the last op of each stream is waited on.

!t = tensor<8x8xf16>
func.func @join4(%x: !t) -> !t {
  %r1 = stream.switch "1" -> !t {
    %p = npu.exp %x : (!t) -> !t
    %q = npu.exp %p : (!t) -> !t
    stream.yield %q : !t
  }
  %r2 = stream.switch "2" -> !t {
    %p = npu.neg %x : (!t) -> !t
    stream.yield %p : !t
  }
  %r3 = stream.switch "3" -> !t {
    %p = npu.relu %x : (!t) -> !t
    stream.yield %p : !t
  }
  %r4 = stream.switch "4" -> !t {
    %p = npu.sigmoid %x : (!t) -> !t
    stream.yield %p : !t
  }
  %s = npu.add %r1, %r2 : (!t, !t) -> !t
  func.return %s : !t
}

// CHECK-LABEL: func.func @join4
// CHECK-NEXT:    %p = npu.exp %x {stream.on = @s1}
// CHECK-NEXT:    %q = npu.exp %p {stream.on = @s1}
// CHECK-NEXT:    %[[E1:.*]] = sync.record on @s1
// CHECK-NEXT:    %p_1 = npu.neg %x {stream.on = @s2}
// CHECK-NEXT:    %[[E2:.*]] = sync.record on @s2
// CHECK-NEXT:    %p_2 = npu.relu %x {stream.on = @s3}
// CHECK-NEXT:    %[[E3:.*]] = sync.record on @s3
// CHECK-NEXT:    %p_3 = npu.sigmoid %x {stream.on = @s4}
// CHECK-NEXT:    %[[E4:.*]] = sync.record on @s4
// CHECK-NEXT:    sync.wait %[[E1]] on @s0
// CHECK-NEXT:    sync.wait %[[E2]] on @s0
// CHECK-NEXT:    %s = npu.add %q, %p_1 {stream.on = @s0}
// CHECK-NEXT:    sync.wait %[[E3]] on @s0
// CHECK-NEXT:    sync.wait %[[E4]] on @s0
// CHECK-NEXT:    func.return %s

// -----

// Tests that the seed written literally -- npu_wait_tensor as a statement, the
// scope then using %in4 itself -- is ordered as seed 001 says: every later use
// of %in4 waits for the dependency (in the scope and after it), so the program lowers with the
// same three waits as the form that uses the wait's result.

!t = tensor<8x8xf16>
func.func @seed_literal(%in1: !t, %in2: !t, %in3: !t, %in4: !t) -> (!t, !t, !t, !t) {
  %add = npu.add %in1, %in2 : (!t, !t) -> !t
  %mm = stream.switch "1" -> !t {
    %w = stream.wait_tensor %in4 after %add : !t, !t
    %m = npu.matmul %in3, %in4 : (!t, !t) -> !t
    stream.yield %m : !t
  }
  %mm1 = npu.matmul %in3, %in4 : (!t, !t) -> !t
  %add2 = stream.switch "2" -> !t {
    %w2 = stream.wait_tensor %in4 after %mm : !t, !t
    %a = npu.add %in3, %in4 : (!t, !t) -> !t
    stream.yield %a : !t
  }
  func.return %add, %mm, %mm1, %add2 : !t, !t, !t, !t
}

// CHECK-LABEL: func.func @seed_literal
// CHECK-NEXT:    %add = npu.add %in1, %in2 {stream.on = @s0}
// CHECK-NEXT:    %[[E0:.*]] = sync.record on @s0 {event_id = 0 : i64}
// CHECK-NEXT:    %w = stream.wait_tensor %in4 after %add {stream.on = @s1}
// CHECK-NEXT:    sync.wait %[[E0]] on @s1
// CHECK-NEXT:    %m = npu.matmul %in3, %w {stream.on = @s1}
// CHECK-NEXT:    %[[E1:.*]] = sync.record on @s1 {event_id = 0 : i64}
// CHECK-NEXT:    %mm1 = npu.matmul %in3, %w {stream.on = @s0}
// CHECK-NEXT:    %w2 = stream.wait_tensor %w after %m {stream.on = @s2}
// CHECK-NEXT:    sync.wait %[[E1]] on @s2
// CHECK-NEXT:    %a = npu.add %in3, %w2 {stream.on = @s2}
// CHECK-NEXT:    %[[E2:.*]] = sync.record on @s2 {event_id = 0 : i64}
// CHECK-NEXT:    sync.wait %[[E2]] on @s0
// CHECK-NEXT:    func.return %add, %m, %mm1, %a
