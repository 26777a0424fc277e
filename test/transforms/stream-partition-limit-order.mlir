// RUN: npuir-opt %s -p 'stream-partition{mode=opara}' | filecheck %s
// RUN: npuir-opt %s -p 'stream-partition{mode=auto}' | filecheck %s
// RUN: npuir-opt %s -p 'stream-partition{mode=auto},coreset-lower,insert-events,sync-verify' | filecheck %s --check-prefix=LOWERED

// Tests that the modes that choose their own issue order (opara's alternating
// order, auto's list-scheduling order) keep the written order of a function
// with a `coreset.limit` scope: the scope is lexical, so its ops stay one
// region under its limit.  Without a scope, opara would issue the matmul %z
// (compute-bound) between the memory-bound %x and %y.

!t = tensor<1024x1024xf16>
// CHECK-LABEL: func.func @limited
// CHECK:         %x = npu.add
// CHECK-NEXT:    %r = coreset.limit cube 4 vector 8
// CHECK-NEXT:      %y = npu.relu
// CHECK-NEXT:      %m = npu.matmul
// CHECK-NEXT:      %m2 = npu.matmul
// CHECK-NEXT:      coreset.yield %m2
// CHECK-NEXT:    }
// CHECK-NEXT:    %z = npu.matmul
// CHECK-NEXT:    func.return %r, %z
// LOWERED-LABEL: func.func @limited
// LOWERED:         %m = npu.matmul {{.*}}coreset.cores = #coreset.cores<cube 4>
func.func @limited(%a: !t, %w: !t) -> (!t, !t) {
  %x = npu.add %a, %a : (!t, !t) -> !t
  %r = coreset.limit cube 4 vector 8 -> !t {
    %y = npu.relu %a : (!t) -> !t
    %m = npu.matmul %a, %w : (!t, !t) -> !t
    %m2 = npu.matmul %m, %w : (!t, !t) -> !t
    coreset.yield %m2 : !t
  }
  %z = npu.matmul %x, %w : (!t, !t) -> !t
  func.return %r, %z : !t, !t
}
