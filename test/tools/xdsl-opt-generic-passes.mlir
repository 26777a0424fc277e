// Tests that stock xDSL's generic passes keep a lowered program as it was: an
// npu op on a stream (`stream.on`) reports an effect on that stream, so `cse`
// does not merge the two identical relus, `dce` does not drop the exp nobody
// reads, and the events stay where they order the streams.  The unlowered graph
// stays pure: there `cse` merges the relus (the scope, an op xDSL knows nothing
// about the effects of, stays).
// RUN: npuir-opt %s -p npu-default | xdsl-opt -p canonicalize,cse,dce | npuir-opt -p sync-verify | filecheck %s
// RUN: xdsl-opt %s -p cse,dce | filecheck %s --check-prefix=GRAPH

!t = tensor<8x8xf16>

// CHECK-LABEL: func.func @twice
// CHECK-NEXT:    %a = npu.relu %x {stream.on = @s0
// CHECK-NEXT:    %0 = sync.record on @s0
// CHECK-NEXT:    %b = npu.relu %x {stream.on = @s0
// CHECK-NEXT:    sync.wait %0 on @s1
// CHECK-NEXT:    %e = npu.exp %a {stream.on = @s1
// CHECK-NEXT:    %1 = sync.record on @s1
// CHECK-NEXT:    sync.wait %1 on @s0
// CHECK-NEXT:    func.return %a, %b
// GRAPH-LABEL: func.func @twice
// GRAPH-NEXT:    %a = npu.relu %x
// GRAPH-NEXT:    %dead = stream.switch "1"
// GRAPH:         func.return %a, %a
func.func @twice(%x: !t) -> (!t, !t) {
  %a = npu.relu %x : (!t) -> !t
  %b = npu.relu %x : (!t) -> !t
  %dead = stream.switch "1" -> !t {
    %e = npu.exp %a : (!t) -> !t
    stream.yield %e : !t
  }
  func.return %a, %b : !t, !t
}
