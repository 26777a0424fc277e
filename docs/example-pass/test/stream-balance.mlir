// RUN: npuir-opt %s --split-input-file -p 'npu-default,example-stream-balance{max-share=0.6}' 2>&1 >/dev/null | filecheck %s
// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p 'stream-partition,example-stream-balance' | filecheck %s --check-prefix=UNORDERED
// RUN: not npuir-opt %s -p 'example-stream-balance{max-share=0}' 2>&1 | filecheck %s --check-prefix=OPTION

// OPTION: npuir-opt: error: bad option for pass 'example-stream-balance': max-share must be in (0, 1], got 0.0 (options: max-share, hw)

// Tests that two equal matmuls on two streams share the work about evenly
// (they contend for the cube cores, so not exactly): one remark per function
// with each busy stream's share, busiest first, and no warning.

!t = tensor<512x512xf16>
// CHECK-LABEL: remark: example-stream-balance on @balanced: 2 busy streams
// CHECK-SAME:  (@{{.*}} {{[0-9]+}}%, @{{.*}} {{[0-9]+}}%); makespan {{[0-9]+}} ns on 910b2
// CHECK-NOT:   warning
func.func @balanced(%x: !t, %w: !t) -> (!t, !t) {
  %a = npu.matmul %x, %w : (!t, !t) -> !t
  %b = stream.switch "1" -> !t {
    %b0 = npu.matmul %w, %x : (!t, !t) -> !t
    stream.yield %b0 : !t
  }
  func.return %a, %b : !t, !t
}

// -----

// Tests that a stream doing most of the work is warned about: the large
// matmul dwarfs the small relu on the other stream.

!t = tensor<2048x2048xf16>
!s = tensor<64x64xf16>
// CHECK-LABEL: remark: example-stream-balance on @lopsided: 2 busy streams
// CHECK:       warning: stream @{{.*}} ("<main>") does {{[0-9]+}}% of @lopsided's work (max-share 0.6); the other streams mostly wait
func.func @lopsided(%x: !t, %w: !t, %y: !s) -> (!t, !s) {
  %a = npu.matmul %x, %w : (!t, !t) -> !t
  %b = stream.switch "1" -> !s {
    %b0 = npu.relu %y : (!s) -> !s
    stream.yield %b0 : !s
  }
  func.return %a, %b : !t, !s
}

// -----

// Tests that a cross-stream use that no event orders yet is an error at the
// user: the pass runs on lowered programs (after insert-events).

!t = tensor<64x64xf16>
func.func @unordered(%x: !t) -> !t {
  %a = npu.relu %x : (!t) -> !t
  %b = stream.switch "1" -> !t {
    // UNORDERED: [[# @LINE + 1]]:{{[0-9]+}}: error: 'npu.exp' (%b0) uses 'npu.relu' (%a) from @{{.*}} ("<main>") with nothing ordering them; run insert-events first
    %b0 = npu.exp %a : (!t) -> !t
    stream.yield %b0 : !t
  }
  func.return %b : !t
}
