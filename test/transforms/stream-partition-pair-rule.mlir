// RUN: npuir-opt %s -p 'stream-partition{mode=nimble},coreset-lower,insert-events,coreset-check,sync-verify' 2>&1 | filecheck %s
// RUN: not npuir-opt %s -p 'stream-partition{mode=nimble keep-pair-rule=false},coreset-lower,insert-events,coreset-check' 2>&1 | filecheck %s --check-prefix=BROKEN
// RUN: npuir-opt %s -p 'stream-partition{mode=auto},coreset-lower,insert-events,coreset-check,sync-verify' 2>&1 | filecheck %s --check-prefix=AUTO

// Tests that a mode that places ops keeps seed 003's pair rule where the written program
// keeps it.  As written, the default stream runs %v2 and then %v1, and "lim" (24 of the
// 48 vector cores) starts from %v1: %v2 is done before "lim" starts, by the default
// stream's order alone, so coreset-check accepts it.  nimble's path cover moves %v1 to a
// stream of its own; %v2 and "lim" can then overlap at 48 + 24 cores, which coreset-check
// refuses (BROKEN, with keep-pair-rule=false).  stream-partition merges that stream back
// onto the default one, with a remark; auto's search keeps the rule itself.

!t = tensor<8x16xf32>
module attributes {npu.target = "910b2"} {
  func.func @spread(%a0: !t, %a1: !t) -> (!t, !t) {
    coreset.stream_limit "lim" vector 24
    %v2 = npu.exp %a1 : (!t) -> !t
    %v1 = npu.relu %a0 : (!t) -> !t
    %l = stream.switch "lim" -> !t {
      %l0 = npu.add %v1, %a0 : (!t, !t) -> !t
      stream.yield %l0 : !t
    }
    func.return %l, %v2 : !t, !t
  }
}

// CHECK: stream-partition-pair-rule.mlir:[[# @LINE - 7]]:7: remark: mode=nimble let streams "<main>" and "lim" of @spread run at the same time, their vector core limits (<main> 48, lim 24) together over the device's (seed 003's pair rule), which the written program keeps; the ops it moved to "chain1" run on the default stream again
// CHECK-LABEL: func.func @spread
// CHECK: npu.exp {{.*}}stream.on = @s0
// CHECK-NEXT: npu.relu {{.*}}stream.on = @s0

// BROKEN: error: streams @s0 ("<main>") and @s1 ("lim") can run at the same time

// AUTO-NOT: error
// AUTO-NOT: remark
// AUTO-LABEL: func.func @spread
