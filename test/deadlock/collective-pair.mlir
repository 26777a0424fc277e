// RUN: not npuir-opt %s --split-input-file -p 'stream-partition,coreset-lower,insert-events,core-deadlock-check' 2>&1 >/dev/null | filecheck %s
// RUN: npuir-opt %s --split-input-file -p 'stream-partition,coreset-lower,insert-events,core-deadlock-check{severity=warning}' 2>&1 >/dev/null | filecheck %s --check-prefix=WARN

// Tests npugraph_ex's deadlock_check example, found before capture: an AIV
// all_gather limited to 32 vector cores on one stream and an AIV all_to_all
// standing for MoeDistributeDispatchV2 (an MC2 dispatch, 24 cores) on
// another, nothing ordering them, on a 910b2 (48 vector cores): 32 + 24 = 56
// > 48.  The error is at the op issued later, the note at the other.

!t = tensor<64x1024xbf16>
module attributes {npu.target = "910b2"} {
  func.func @pair(%x: !t, %y: !t) -> (tensor<128x1024xbf16>, !t) {
    %g = stream.switch "ag" -> tensor<128x1024xbf16> {
      %g0 = coreset.limit vector 32 -> tensor<128x1024xbf16> {
        %ag = npu.all_gather %x {group_size = 2 : i64, mode = "aiv", group = "tp"} : (!t) -> tensor<128x1024xbf16>
        coreset.yield %ag : tensor<128x1024xbf16>
      }
      stream.yield %g0 : tensor<128x1024xbf16>
    }
    %d = stream.switch "moe" -> !t {
      %d0 = coreset.limit vector 24 -> !t {
        %dispatch = npu.all_to_all %y {group_size = 2 : i64, mode = "aiv", group = "ep", npu.op_name = "MoeDistributeDispatchV2"} : (!t) -> !t
        coreset.yield %dispatch : !t
      }
      stream.yield %d0 : !t
    }
    func.return %g, %d : tensor<128x1024xbf16>, !t
  }
}

// CHECK: collective-pair.mlir:[[# @LINE - 9]]:9: error: core deadlock risk in @pair: 'npu.all_to_all' (%dispatch) named MoeDistributeDispatchV2 on @s2 ("moe") (24 vector, AIV collective waiting for its peers) <-> 'npu.all_gather' (%ag) on @s1 ("ag") (32 vector, AIV collective waiting for its peers) sum=56 > 48 vector cores of 910b2: nothing orders the two, and each holds the cores it has while it waits for the rest; order them (a stream.wait_tensor, or one stream), or limit this op to 16 vector cores
// CHECK: collective-pair.mlir:[[# @LINE - 17]]:9: note: 'npu.all_gather' (%ag) on @s1 ("ag") holds up to 32 vector cores while it waits: it is the other op of the core deadlock risk at {{.*}}collective-pair.mlir:[[# @LINE - 10]]:9
// CHECK: collective-pair.mlir:[[# @LINE - 11]]:9: error: core deadlock risk detected: 1 conflicting pair(s) of ops (each reported above); on the device the program can hang
// WARN: collective-pair.mlir:[[# @LINE - 12]]:9: warning: core deadlock risk in @pair: 'npu.all_to_all' (%dispatch) named MoeDistributeDispatchV2 on @s2 ("moe")
// WARN: note: 'npu.all_gather' (%ag)
// WARN-NOT: conflicting pair

// -----

// Tests that an order between them (the dispatch waits for the all_gather)
// removes the risk: they can no longer hold cores at the same time.

!t = tensor<64x1024xbf16>
module attributes {npu.target = "910b2"} {
  func.func @ordered(%x: !t, %y: !t) -> (tensor<128x1024xbf16>, !t) {
    %g = stream.switch "ag" -> tensor<128x1024xbf16> {
      %g0 = coreset.limit vector 32 -> tensor<128x1024xbf16> {
        %ag = npu.all_gather %x {group_size = 2 : i64, mode = "aiv", group = "tp"} : (!t) -> tensor<128x1024xbf16>
        coreset.yield %ag : tensor<128x1024xbf16>
      }
      stream.yield %g0 : tensor<128x1024xbf16>
    }
    %d = stream.switch "moe" -> !t {
      %w = stream.wait_tensor %y after %g : !t, tensor<128x1024xbf16>
      %d0 = coreset.limit vector 24 -> !t {
        %dispatch = npu.all_to_all %w {group_size = 2 : i64, mode = "aiv", group = "ep"} : (!t) -> !t
        coreset.yield %dispatch : !t
      }
      stream.yield %d0 : !t
    }
    func.return %g, %d : tensor<128x1024xbf16>, !t
  }
}

// CHECK-NOT: deadlock risk in @ordered
// WARN-NOT: deadlock risk in @ordered

// -----

// Tests that demands that fit (24 + 24 = 48) pass, and that a collective in
// SDMA mode, which takes no AI Core cores, is no holder.

!t = tensor<64x1024xbf16>
module attributes {npu.target = "910b2"} {
  func.func @fits(%x: !t, %y: !t) -> (!t, !t, !t) {
    %a = stream.switch "a" -> !t {
      %a0 = coreset.limit vector 24 -> !t {
        %r = npu.all_reduce %x {group_size = 2 : i64, mode = "aiv", group = "a"} : (!t) -> !t
        coreset.yield %r : !t
      }
      stream.yield %a0 : !t
    }
    %b = stream.switch "b" -> !t {
      %b0 = coreset.limit vector 24 -> !t {
        %r = npu.all_reduce %y {group_size = 2 : i64, mode = "aiv", group = "b"} : (!t) -> !t
        coreset.yield %r : !t
      }
      stream.yield %b0 : !t
    }
    %c = stream.switch "c" -> !t {
      %r = npu.all_reduce %y {group_size = 2 : i64, group = "c"} : (!t) -> !t
      stream.yield %r : !t
    }
    func.return %a, %b, %c : !t, !t, !t
  }
}

// CHECK-NOT: deadlock risk in @fits
// WARN-NOT: deadlock risk in @fits
