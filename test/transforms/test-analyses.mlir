// RUN: npuir-opt %s %test-passes --split-input-file -p test-dependence-graph 2>&1 >/dev/null | filecheck %s --check-prefix=DEP
// RUN: npuir-opt %s %test-passes --split-input-file -p stream-partition,test-happens-before 2>&1 >/dev/null | filecheck %s --check-prefix=HB
// RUN: npuir-opt %s %test-passes --split-input-file -p stream-partition,insert-events,test-happens-before 2>&1 >/dev/null | filecheck %s --check-prefix=AFTER

// Tests that data edges are traced through scope results to the op that
// produced the value, that wait_tensor adds a control edge to every user of
// its result, and that happens-before sees the cross-stream edges unordered
// until insert-events has run (which materialises the wait_tensor orderings
// as events and erases them, so only data edges remain to check).

!t = tensor<8x8xf16>
func.func @seed(%in1: !t, %in2: !t, %in3: !t, %in4: !t) -> (!t, !t) {
  %add = npu.add %in1, %in2 : (!t, !t) -> !t
  %mm, %wv = stream.switch "1" -> !t, !t {
    %w = stream.wait_tensor %in4 after %add : !t, !t
    %m = npu.matmul %in3, %w : (!t, !t) -> !t
    stream.yield %m, %w : !t, !t
  }
  %s = npu.sub %mm, %wv : (!t, !t) -> !t
  func.return %s, %mm : !t, !t
}

// DEP: :13:3: remark: #0 'npu.add' (%add) <- []
// DEP: :16:5: remark: #1 'npu.matmul' (%m) <- [control 'npu.add' (%add)]
// DEP: :19:3: remark: #2 'npu.sub' (%s) <- [data 'npu.matmul' (%m), control 'npu.add' (%add)]
// DEP: :20:3: remark: #3 'func.return' <- [data 'npu.sub' (%s), data 'npu.matmul' (%m)]

// HB: remark: 'npu.add' (%add) on @s0 ("<main>") -> 'npu.matmul' (%m) on @s1 ("1"): UNORDERED
// HB: remark: 'npu.matmul' (%m) on @s1 ("1") -> 'npu.sub' (%s) on @s0 ("<main>"): UNORDERED
// HB: remark: 'npu.matmul' (%m) on @s1 ("1") -> 'func.return' on @s0 ("<main>"): UNORDERED
// HB: remark: stream @s1 ("1") is not joined

// AFTER: remark: 'npu.matmul' (%m) on @s1 ("1") -> 'npu.sub' (%s) on @s0 ("<main>"): ordered
// AFTER: remark: 'npu.matmul' (%m) on @s1 ("1") -> 'func.return' on @s0 ("<main>"): ordered
// AFTER-NOT: is not joined
