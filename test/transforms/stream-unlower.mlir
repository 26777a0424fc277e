// RUN: npuir-opt %s --split-input-file -p stream-unlower | filecheck %s

// Tests that streams, events and declarations go, and the ops, their order, their
// wait_tensor orderings and their effective core limits stay.

!t = tensor<8x8xf16>
stream.decl @s0 "default" priority 0
stream.decl @s1 "1" priority 0
func.func @lowered(%x: !t, %y: !t) -> !t {
  %a = npu.relu %x {stream.on = @s0, coreset.cores = #coreset.cores<cube 24, vector 8>} : (!t) -> !t
  %e0 = sync.record on @s0 {event_id = 0 : i64}
  sync.wait %e0 on @s1
  %w = stream.wait_tensor %y after %a {stream.on = @s1} : !t, !t
  %b = npu.exp %w {stream.on = @s1} : (!t) -> !t
  %e1 = sync.record on @s1 {event_id = 0 : i64}
  sync.wait %e1 on @s0
  func.return %b : !t
}

// CHECK-NOT:     stream.decl
// CHECK-LABEL: func.func @lowered
// CHECK-NEXT:    %{{.*}} = npu.relu %{{.*}} {coreset.cores = #coreset.cores<cube 24, vector 8>}
// CHECK-NEXT:    %[[W:.*]] = stream.wait_tensor %{{.*}} after
// CHECK-NEXT:    %{{.*}} = npu.exp %[[W]] :
// CHECK-NEXT:    func.return
// CHECK-NOT:     sync.
// CHECK-NOT:     stream.on

// -----

// Tests that an unlowered function is left as it is, scopes and all.

!t = tensor<8x8xf16>
func.func @written(%x: !t) -> !t {
  %r = stream.switch "1" -> !t {
    %a = npu.relu %x : (!t) -> !t
    stream.yield %a : !t
  }
  func.return %r : !t
}

// CHECK-LABEL: func.func @written
// CHECK-NEXT:    stream.switch "1"
