// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p 'stream-partition,insert-events{max-events=1}' | filecheck %s
// RUN: npuir-opt %s --split-input-file -p 'stream-partition,insert-events{max-events=2 stats=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=STATS
// RUN: not npuir-opt %s -p 'insert-events{max-events=0}' 2>&1 | filecheck %s --check-prefix=OPT
// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p 'insert-events' | filecheck %s --check-prefix=UNPARTITIONED

// OPT: error: bad option for pass 'insert-events': max-events must be >= 1, got 0

// Tests that a program needing more physical event ids at once than
// max-events allows is an error: here two records are live together (both
// waits come after both records), so one id cannot serve.

!t = tensor<8x8xf16>
func.func @two_live_events(%x: !t) -> !t {
  %a = stream.switch "1" -> !t {
    %a0 = npu.exp %x : (!t) -> !t
    stream.yield %a0 : !t
  }
  %b = stream.switch "2" -> !t {
    %b0 = npu.neg %x : (!t) -> !t
    stream.yield %b0 : !t
  }
  %c = npu.add %a, %b : (!t, !t) -> !t
  func.return %c : !t
}

// CHECK: insert-events-invalid.mlir:[[# @LINE - 7]]:5: error: the program needs 2 event ids at once but the limit is 1 (max-events, or the device's event limit)
// STATS: insert-events-invalid.mlir:[[# @LINE - 14]]:1: remark: insert-events on @two_live_events: 4 cross-stream orderings (data, wait_tensor and joins), 2 waits, 2 records, 2 event ids
// UNPARTITIONED: insert-events-invalid.mlir:[[# @LINE - 15]]:1: error: insert-events needs stream-partition first: the input is not partitioned (@two_live_events's ops carry no stream.on)
