// RUN: npuir-opt %s --verify-diagnostics -p 'stream-partition{mode=ios}' | filecheck %s
// RUN: npuir-opt %s --verify-diagnostics -p 'stream-partition{mode=ios max-streams=2}' | filecheck %s --check-prefix=CAP
// RUN: npuir-opt %s -p 'stream-partition{mode=ios},coreset-lower,insert-events,sync-verify' | filecheck %s --check-prefix=LOWERED

// Tests that mode=ios (IOS's dynamic program over stages) issues the ops stage by stage,
// each stage's groups (its connected components: %c then %d, %a then %b) on streams of
// their own, group 0 on the default stream and the others on streams it makes ("ios<N>"),
// the pinned op on its tag's stream wherever its stage puts it.  With max-streams=2 the
// pinned stream leaves a stage one group: every unpinned op runs on the default stream,
// still in the stages' order.  The result lowers to events sync-verify accepts.

!t = tensor<1024x1024xf16>
func.func @branches(%x: !t, %w: !t) -> !t {
  %a = npu.matmul %x, %w : (!t, !t) -> !t
  %b = npu.relu %a : (!t) -> !t
  %c = npu.matmul %w, %x : (!t, !t) -> !t
  %d = npu.exp %c : (!t) -> !t
  %p = stream.switch "ios_label" -> !t {
    %q = npu.neg %x : (!t) -> !t
    stream.yield %q : !t
  }
  %e = npu.add %b, %d : (!t, !t) -> !t
  %f = npu.add %e, %p : (!t, !t) -> !t
  func.return %f : !t
}

// CHECK:          stream.decl @s0 "<main>" priority 0
// CHECK-NEXT:     stream.decl @s1 "ios_label" priority 0
// CHECK-NEXT:     stream.decl @s2 "ios2" priority 0
// CHECK-LABEL: func.func @branches
// CHECK-NEXT:       %c = npu.matmul %w, %x {stream.on = @s0}
// CHECK-NEXT:       %q = npu.neg %x {stream.on = @s1}
// CHECK-NEXT:       %a = npu.matmul %x, %w {stream.on = @s0}
// CHECK-NEXT:       %d = npu.exp %c {stream.on = @s2}
// CHECK-NEXT:       %b = npu.relu %a {stream.on = @s0}
// CHECK-NEXT:       %e = npu.add %b, %d {stream.on = @s0}
// CHECK-NEXT:       %f = npu.add %e, %q {stream.on = @s0}
// CHECK-NEXT:       func.return %f

// CAP:          stream.decl @s0 "<main>" priority 0
// CAP-NEXT:     stream.decl @s1 "ios_label" priority 0
// CAP-NOT:      stream.decl
// CAP-LABEL: func.func @branches
// CAP-NEXT:       %c = npu.matmul %w, %x {stream.on = @s0}
// CAP-NEXT:       %d = npu.exp %c {stream.on = @s0}
// CAP-NEXT:       %a = npu.matmul %x, %w {stream.on = @s0}
// CAP-NEXT:       %b = npu.relu %a {stream.on = @s0}
// CAP-NEXT:       %e = npu.add %b, %d {stream.on = @s0}
// CAP-NEXT:       %q = npu.neg %x {stream.on = @s1}
// CAP-NEXT:       %f = npu.add %e, %q {stream.on = @s0}

// LOWERED:      sync.record
// LOWERED:      sync.wait
// LOWERED:      func.return
