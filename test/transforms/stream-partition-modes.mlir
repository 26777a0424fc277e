// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p 'stream-partition{mode=ge}' | filecheck %s --check-prefix=GE
// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p 'stream-partition{mode=engine}' | filecheck %s --check-prefix=ENGINE
// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p 'stream-partition{mode=nimble}' | filecheck %s --check-prefix=NIMBLE
// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p 'stream-partition{mode=nimble max-streams=3}' | filecheck %s --check-prefix=CAP3
// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p 'stream-partition{max-streams=2}' | filecheck %s --check-prefix=CAP2
// RUN: not npuir-opt %s -p 'stream-partition{mode=fastest}' 2>&1 | filecheck %s --check-prefix=MODE

// MODE: error: bad option for pass 'stream-partition': option 'mode' expects one of: user, single, ge, engine, nimble, minidag, opara, auto, ios, got 'fastest'

// Each case carries a scope of its own tag, so its declarations are told
// apart from the other cases' and pinning shows in every mode: the scope's op
// stays on its tag's stream, declared right after the default stream.

// Tests that mode=ge follows GE, so AI Core work (cube and vector alike) stays
// on the stream of its producers — here the default stream, since GE opens a
// second AI Core stream only with ge.streamMaxParallelNum > 1 — and the
// collective goes to the communication stream.

!t = tensor<8x8xf16>
func.func @ge(%x: !t, %y: !t) -> (!t, !t) {
  %a = npu.matmul %x, %y : (!t, !t) -> !t
  %r = npu.all_reduce %a {group_size = 2 : i64} : (!t) -> !t
  %b = npu.relu %x : (!t) -> !t
  %c = npu.add %r, %b : (!t, !t) -> !t
  %p = stream.switch "ge_label" -> !t {
    %e = npu.exp %c : (!t) -> !t
    stream.yield %e : !t
  }
  func.return %c, %p : !t, !t
}

// GE:          stream.decl @s1 "ge_label" priority 0
// GE-NEXT:     stream.decl @s2 "comm" priority 0
// GE-LABEL: func.func @ge
// GE-NEXT:       %a = npu.matmul %x, %y {stream.on = @s0}
// GE-NEXT:       %r = npu.all_reduce %a {group_size = 2 : i64, stream.on = @s2}
// GE-NEXT:       %b = npu.relu %x {stream.on = @s0}
// GE-NEXT:       %c = npu.add %r, %b {stream.on = @s0}
// GE-NEXT:       %e = npu.exp %c {stream.on = @s1}
// GE-NEXT:       func.return %c, %e

// -----

// Tests that mode=engine gives each engine class a stream: vector work on the
// default stream, cube and communication on streams of their own, declared in
// order of first use; the pinned matmul stays on its tag's stream.

!t = tensor<8x8xf16>
func.func @engine(%x: !t, %y: !t) -> !t {
  %a = npu.matmul %x, %y : (!t, !t) -> !t
  %b = npu.relu %a : (!t) -> !t
  %r = npu.all_reduce %b {group_size = 2 : i64} : (!t) -> !t
  %q = stream.switch "engine_label" -> !t {
    %m = npu.matmul %y, %x : (!t, !t) -> !t
    stream.yield %m : !t
  }
  %c = npu.add %r, %q : (!t, !t) -> !t
  func.return %c : !t
}

// ENGINE:          stream.decl @s1 "engine_label" priority 0
// ENGINE-NEXT:     stream.decl @s2 "cube" priority 0
// ENGINE-NEXT:     stream.decl @s3 "comm" priority 0
// ENGINE-LABEL: func.func @engine
// ENGINE-NEXT:       %a = npu.matmul %x, %y {stream.on = @s2}
// ENGINE-NEXT:       %b = npu.relu %a {stream.on = @s0}
// ENGINE-NEXT:       %r = npu.all_reduce %b {group_size = 2 : i64, stream.on = @s3}
// ENGINE-NEXT:       %m = npu.matmul %y, %x {stream.on = @s1}
// ENGINE-NEXT:       %c = npu.add %r, %m {stream.on = @s0}
// ENGINE-NEXT:       func.return %c

// -----

// Tests that mode=nimble covers the diamond a -> (b, c) -> d with two paths
// (a b d, then c) and gives the independent e -> g a third: one stream per
// path of the minimum path cover, the path of the first op on the default
// stream.  Under max-streams=3 the scope's stream leaves two: the longest
// paths keep theirs and c joins the stream of its producer a.

!t = tensor<8x8xf16>
func.func @nimble(%x: !t) -> (!t, !t) {
  %a = npu.relu %x : (!t) -> !t
  %b = npu.exp %a : (!t) -> !t
  %c = npu.neg %a : (!t) -> !t
  %d = npu.add %b, %c : (!t, !t) -> !t
  %e = npu.sigmoid %x : (!t) -> !t
  %g = npu.neg %e : (!t) -> !t
  %p = stream.switch "nimble_label" -> !t {
    %f = npu.exp %g : (!t) -> !t
    stream.yield %f : !t
  }
  func.return %d, %p : !t, !t
}

// NIMBLE:          stream.decl @s1 "nimble_label" priority 0
// NIMBLE-NEXT:     stream.decl @s2 "chain1" priority 0
// NIMBLE-NEXT:     stream.decl @s3 "chain2" priority 0
// NIMBLE-LABEL: func.func @nimble
// NIMBLE-NEXT:       %a = npu.relu %x {stream.on = @s0}
// NIMBLE-NEXT:       %b = npu.exp %a {stream.on = @s0}
// NIMBLE-NEXT:       %c = npu.neg %a {stream.on = @s2}
// NIMBLE-NEXT:       %d = npu.add %b, %c {stream.on = @s0}
// NIMBLE-NEXT:       %e = npu.sigmoid %x {stream.on = @s3}
// NIMBLE-NEXT:       %g = npu.neg %e {stream.on = @s3}
// NIMBLE-NEXT:       %f = npu.exp %g {stream.on = @s1}
// NIMBLE-NEXT:       func.return %d, %f

// CAP3:          stream.decl @s1 "nimble_label" priority 0
// CAP3-NEXT:     stream.decl @s2 "chain1" priority 0
// CAP3-LABEL: func.func @nimble
// CAP3-NEXT:       %a = npu.relu %x {stream.on = @s0}
// CAP3-NEXT:       %b = npu.exp %a {stream.on = @s0}
// CAP3-NEXT:       %c = npu.neg %a {stream.on = @s0}
// CAP3-NEXT:       %d = npu.add %b, %c {stream.on = @s0}
// CAP3-NEXT:       %e = npu.sigmoid %x {stream.on = @s2}
// CAP3-NEXT:       %g = npu.neg %e {stream.on = @s2}
// CAP3-NEXT:       %f = npu.exp %g {stream.on = @s1}

// -----

// Tests that user tags needing more streams than max-streams are an error at
// the first scope over the cap (the default stream counts), in every mode.

!t = tensor<8x8xf16>
func.func @too_many(%x: !t) -> (!t, !t) {
  %a = stream.switch "one" -> !t {
    %b = npu.relu %x : (!t) -> !t
    stream.yield %b : !t
  }
  %c = stream.switch "two" -> !t {
    %d = npu.exp %x : (!t) -> !t
    stream.yield %d : !t
  }
  func.return %a, %c : !t, !t
}

// CAP2: stream-partition-modes.mlir:[[# @LINE - 7]]:3: error: the stream label "two" needs a stream beyond max-streams=2 (the default stream counts)
