// RUN: npuir-opt %s --split-input-file -p 'stream-partition,coreset-lower,insert-events,coreset-check{pair-rule=warning}' 2>&1 >/dev/null | filecheck %s
// RUN: npuir-opt %s --split-input-file -p 'stream-partition{mode=ge},coreset-lower,insert-events,coreset-check{pair-rule=warning}' 2>&1 | filecheck %s --check-prefix=MODE

// Tests coreset-check's warning about an aiv collective beside vector work on
// another stream (tiny: 4 vector cores): the all_reduce takes all 4 while it
// waits for its peers, the exp on the default stream needs one and can run at
// the same time.  The warning is at the collective and names the limit that
// removes the hazard.  A mode that places ops (ge) keeps the function as
// written -- its streams, its order -- and says why in a remark.

!t = tensor<8x16xf32>
module attributes {npu.target = "tiny"} {
  func.func @starves(%x: !t, %y: !t) -> (!t, !t) {
    %a = stream.switch "comm" -> !t {
      %c = npu.all_reduce %x {group_size = 2 : i64, mode = "aiv", group = "g0"} : (!t) -> !t
      stream.yield %c : !t
    }
    %e = npu.exp %y : (!t) -> !t
    func.return %a, %e : !t, !t
  }
}

// CHECK: collective-hold-and-wait.mlir:[[# @LINE - 8]]:7: warning: hold-and-wait hazard: 'npu.all_reduce' (%c) on @s1 ("comm") holds up to 4 vector cores while it waits for its peers, and 'npu.exp' (%e) on @s0 ("<main>"), which can run at the same time, needs up to 1: 5 > 4 on tiny; if a peer's progress needs that op, the ranks can deadlock on another timing; 'coreset.limit vector 3' around the collective, or ordering them (a stream.wait_tensor, or one stream) removes it

// MODE: collective-hold-and-wait.mlir:[[# @LINE - 10]]:7: remark: mode=ge lets 'npu.all_reduce' (%c) in @starves hold cores while it waits, beside 'npu.exp' (%e) on another stream that needs some of them: a schedule that can deadlock across ranks; the module keeps its written streams and order
// MODE-LABEL: func.func @starves
// MODE: npu.all_reduce {{.*}}stream.on = @s1
// MODE: npu.exp {{.*}}stream.on = @s0

// -----

// Tests that the limit the warning names removes the hazard: the collective
// leaves a core for the exp.  Then a mode reschedules the function freely.

!t = tensor<8x16xf32>
module attributes {npu.target = "tiny"} {
  func.func @spares(%x: !t, %y: !t) -> (!t, !t) {
    %a = stream.switch "comm" -> !t {
      %a0 = coreset.limit vector 3 -> !t {
        %c = npu.all_reduce %x {group_size = 2 : i64, mode = "aiv", group = "g0"} : (!t) -> !t
        coreset.yield %c : !t
      }
      stream.yield %a0 : !t
    }
    %e = npu.exp %y : (!t) -> !t
    func.return %a, %e : !t, !t
  }
}

// CHECK-NOT: hazard
// MODE-NOT: keeps its written streams
// MODE-LABEL: func.func @spares

// -----

// Tests that an event ordering the exp after the collective removes the hazard.

!t = tensor<8x16xf32>
module attributes {npu.target = "tiny"} {
  func.func @ordered(%x: !t, %y: !t) -> (!t, !t) {
    %a = stream.switch "comm" -> !t {
      %c = npu.all_reduce %x {group_size = 2 : i64, mode = "aiv", group = "g0"} : (!t) -> !t
      stream.yield %c : !t
    }
    %w = stream.wait_tensor %y after %a : !t, !t
    %e = npu.exp %w : (!t) -> !t
    func.return %a, %e : !t, !t
  }
}

// CHECK-NOT: hazard
// MODE-NOT: keeps its written streams
// MODE-LABEL: func.func @ordered
