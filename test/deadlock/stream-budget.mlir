// RUN: npuir-opt %s -p 'stream-partition,insert-events,core-deadlock-check{stream-budget=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=UNKNOWN
// RUN: npuir-opt %s -p 'stream-partition,insert-events,core-deadlock-check{stream-budget=true captures=2}' 2>&1 >/dev/null | filecheck %s --check-prefix=FITS --allow-empty
// RUN: not npuir-opt %s -p 'stream-partition,insert-events,core-deadlock-check{stream-budget=true captures=3}' 2>&1 >/dev/null | filecheck %s --check-prefix=OVER
// RUN: npuir-opt %s -p 'stream-partition,insert-events,core-deadlock-check{stream-budget=true captures=100 capture-limit=1}' 2>&1 >/dev/null | filecheck %s --check-prefix=FITS --allow-empty
// RUN: not npuir-opt %s -p 'stream-partition,insert-events,core-deadlock-check{stream-budget=true capture-limit=0}' 2>&1 >/dev/null | filecheck %s --check-prefix=LIMIT

// Tests the stream budget under capture: each captured graph (one per input
// shape, up to capture_limit, default 64) takes the function's streams, here
// 2 (the capture stream and "side"), against tiny's budget of 4 streams.
// Unknown captures count capture_limit of them and warn (128 > 4); 2 known
// captures fit (4); 3 do not (6 > 4: an error); captures past capture_limit
// run eagerly and take none; a capture_limit below 1 is refused.

module attributes {npu.target = "tiny"} {
  func.func @two(%x: tensor<8x8xf16>) -> (tensor<8x8xf16>, tensor<8x8xf16>) {
    %a = stream.switch "side" -> tensor<8x8xf16> {
      %e = npu.exp %x : (tensor<8x8xf16>) -> tensor<8x8xf16>
      stream.yield %e : tensor<8x8xf16>
    }
    %b = npu.relu %x : (tensor<8x8xf16>) -> tensor<8x8xf16>
    func.return %a, %b : tensor<8x8xf16>, tensor<8x8xf16>
  }
}

// UNKNOWN: stream-budget.mlir:[[# @LINE - 10]]:3: warning: @two uses 2 stream(s) in each captured graph; 64 capture(s) (up to capture_limit=64, one per input shape) take 128 streams, more than the 4 streams of tiny
// FITS-NOT: stream(s) in each captured graph
// OVER: stream-budget.mlir:[[# @LINE - 12]]:3: error: @two uses 2 stream(s) in each captured graph; 3 capture(s) (3 shape(s)) take 6 streams, more than the 4 streams of tiny
// LIMIT: stream-budget.mlir:[[# @LINE - 13]]:3: error: capture_limit must be an int >= 1 (npugraph_ex's minimum), got 0
