// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p 'stream-partition{mode=minidag max-streams=3}' | filecheck %s --check-prefix=LB
// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p 'stream-partition{mode=minidag variant=mainstream max-streams=3}' | filecheck %s --check-prefix=MAIN
// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p 'stream-partition{mode=minidag variant=weighted max-streams=3}' | filecheck %s --check-prefix=W
// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p 'stream-partition{mode=opara}' | filecheck %s --check-prefix=OPARA
// RUN: not npuir-opt %s -p 'stream-partition{mode=minidag variant=sideways}' 2>&1 | filecheck %s --check-prefix=VARIANT

// VARIANT: error: bad option for pass 'stream-partition': option 'variant' expects one of: loadbalance, mainstream, weighted, got 'sideways'

// Tests that mode=minidag (GE's automatic multi-stream) covers the graph with
// logical streams (a path cover) and merges them onto at most max-streams
// physical streams, the pinned scope's stream counted: three branches meet
// two free streams.  loadbalance spreads the branches by load, mainstream
// keeps the long branch on the main (default) stream, weighted weighs the
// branches by their cost-model durations.  Every variant keeps the pinned op
// on its tag's stream.

!t = tensor<256x256xf16>
func.func @capped(%x: !t, %w: !t) -> !t {
  %a = npu.matmul %x, %w : (!t, !t) -> !t
  %b = npu.relu %x : (!t) -> !t
  %c = npu.exp %x : (!t) -> !t
  %p = stream.switch "minidag_label" -> !t {
    %q = npu.neg %x : (!t) -> !t
    stream.yield %q : !t
  }
  %d = npu.add %a, %b : (!t, !t) -> !t
  %e = npu.add %d, %c : (!t, !t) -> !t
  %f = npu.add %e, %p : (!t, !t) -> !t
  func.return %f : !t
}

// LB:          stream.decl @s1 "minidag_label" priority 0
// LB-NEXT:     stream.decl @s2 "dag1" priority 0
// LB-LABEL: func.func @capped
// LB-NEXT:       %a = npu.matmul %x, %w {stream.on = @s2}
// LB-NEXT:       %b = npu.relu %x {stream.on = @s2}
// LB-NEXT:       %c = npu.exp %x {stream.on = @s0}
// LB-NEXT:       %q = npu.neg %x {stream.on = @s1}
// LB-NEXT:       %d = npu.add %a, %b {stream.on = @s2}
// LB-NEXT:       %e = npu.add %d, %c {stream.on = @s0}
// LB-NEXT:       %f = npu.add %e, %q {stream.on = @s0}

// MAIN:          stream.decl @s1 "minidag_label" priority 0
// MAIN-NEXT:     stream.decl @s2 "dag1" priority 0
// MAIN-LABEL: func.func @capped
// MAIN-NEXT:       %a = npu.matmul %x, %w {stream.on = @s0}
// MAIN-NEXT:       %b = npu.relu %x {stream.on = @s2}
// MAIN-NEXT:       %c = npu.exp %x {stream.on = @s0}
// MAIN-NEXT:       %q = npu.neg %x {stream.on = @s1}
// MAIN-NEXT:       %d = npu.add %a, %b {stream.on = @s0}
// MAIN-NEXT:       %e = npu.add %d, %c {stream.on = @s0}
// MAIN-NEXT:       %f = npu.add %e, %q {stream.on = @s0}

// W:          stream.decl @s1 "minidag_label" priority 0
// W-NEXT:     stream.decl @s2 "dag1" priority 0
// W-LABEL: func.func @capped
// W-NEXT:       %a = npu.matmul %x, %w {stream.on = @s2}
// W-NEXT:       %b = npu.relu %x {stream.on = @s0}
// W-NEXT:       %c = npu.exp %x {stream.on = @s0}
// W-NEXT:       %q = npu.neg %x {stream.on = @s1}
// W-NEXT:       %d = npu.add %a, %b {stream.on = @s2}
// W-NEXT:       %e = npu.add %d, %c {stream.on = @s0}
// W-NEXT:       %f = npu.add %e, %q {stream.on = @s0}

// OPARA-LABEL: func.func @capped

// -----

// Tests that mode=opara keeps Nimble's streams (one per path of the cover)
// and reissues the ops so that compute-bound matmuls and memory-bound vector
// ops alternate: the relu is issued before the first matmul, the neg between
// the two matmuls.

!t = tensor<256x256xf16>
func.func @alternate(%x: !t, %w: !t) -> !t {
  %a = npu.matmul %x, %w : (!t, !t) -> !t
  %c = npu.matmul %a, %w : (!t, !t) -> !t
  %b = npu.relu %x : (!t) -> !t
  %d = npu.neg %b : (!t) -> !t
  %e = npu.add %c, %d : (!t, !t) -> !t
  func.return %e : !t
}

// LB-LABEL: func.func @alternate
// OPARA-LABEL: func.func @alternate
// OPARA-NEXT:    %b = npu.relu %x {stream.on = @[[CHAIN:s[0-9]+]]}
// OPARA-NEXT:    %a = npu.matmul %x, %w {stream.on = @s0}
// OPARA-NEXT:    %d = npu.neg %b {stream.on = @[[CHAIN]]}
// OPARA-NEXT:    %c = npu.matmul %a, %w {stream.on = @s0}
// OPARA-NEXT:    %e = npu.add %c, %d {stream.on = @s0}
// OPARA-NEXT:    func.return %e
