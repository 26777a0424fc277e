// RUN: npuir-opt %s -p 'stream-partition,coreset-partition' 2>/dev/null | filecheck %s
// RUN: npuir-opt %s -p 'stream-partition,coreset-partition' 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK
// RUN: npuir-opt %s -p 'stream-partition,coreset-partition,coreset-lower,insert-events,coreset-check' 2>&1 >/dev/null | filecheck %s --check-prefix=CLEAN --allow-empty

// Tests that coreset-partition limits the flexible op — the nonzero, which
// would take all 48 vector cores — so that it fits beside both user-limited
// aiv collectives (16 + 24), keeps the user's limits, prefers the limit with
// the lowest simulated makespan, and writes a stream limit because the
// nonzero is alone on its stream.  Afterwards coreset-check finds nothing.

!x = tensor<4096x1024xf16>
!h = tensor<2048x1024xf16>
!m = tensor<64x512xf16>
func.func @rank0(%x: !x, %y: !x, %mask: !m) -> (!h, !x, tensor<?x2xi64>) {
  %rs = stream.switch "rs" -> !h {
    %r = coreset.limit vector 16 -> !h {
      %r0 = npu.reduce_scatter %x {group_size = 2 : i64, mode = "aiv", group = "rs"} : (!x) -> !h
      coreset.yield %r0 : !h
    }
    stream.yield %r : !h
  }
  %nz = stream.switch "nz" -> tensor<?x2xi64> {
    %n = npu.nonzero %mask : (!m) -> tensor<?x2xi64>
    stream.yield %n : tensor<?x2xi64>
  }
  %dc = stream.switch "dc" -> !x {
    %d = coreset.limit vector 24 -> !x {
      %d0 = npu.all_to_all %y {group_size = 2 : i64, mode = "aiv", group = "dc"} : (!x) -> !x
      coreset.yield %d0 : !x
    }
    stream.yield %d : !x
  }
  func.return %rs, %dc, %nz : !h, !x, tensor<?x2xi64>
}

// CHECK-LABEL: func.func @rank0
// CHECK-NEXT:    coreset.stream_limit "nz" vector 6
// CHECK-NEXT:    %r = coreset.limit vector 16
// CHECK:         %d = coreset.limit vector 24

// The candidates are the room next to the larger collective (48 - 24 = 24)
// and its halves; 24 and 12 fit each collective alone but not both at once
// (16 + 12 + 24 > 48), so the all_to_all would queue behind the nonzero; 6
// lets all three run together and is the largest that does.
// REMARK: coreset-partition.mlir:[[# @LINE - 22]]:5: remark: coreset-partition limits 'npu.nonzero' (%n) in @rank0 to 6 vector cores

// CLEAN-NOT: warning
