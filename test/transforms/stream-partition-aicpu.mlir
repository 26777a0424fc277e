// RUN: npuir-opt %s -p 'stream-partition{mode=auto},coreset-lower,insert-events,coreset-check,sync-verify' | filecheck %s
// RUN: npuir-opt %s -p 'stream-partition{mode=minidag variant=weighted},coreset-lower,insert-events,sync-verify' | filecheck %s
// RUN: npuir-opt %s -p 'stream-partition{mode=opara},coreset-lower,insert-events,sync-verify' | filecheck %s

// Tests that the cost-aware modes schedule an op on the AI CPU: no core limit
// counts aicpu cores, so its limit is "unlimited" (the device's pool), not a
// missing entry, even under a limit scope.

!t = tensor<64x64xf16>
// CHECK-LABEL: func.func @f
// CHECK:         npu.opaque {{.*}}engine = "aicpu"
// CHECK:         npu.relu
func.func @f(%x: !t) -> !t {
  %r = coreset.limit cube 2 vector 4 -> !t {
    %a = npu.opaque %x {ge_type = "Where", engine = "aicpu"} : (!t) -> !t
    coreset.yield %a : !t
  }
  %b = npu.relu %r : (!t) -> !t
  func.return %b : !t
}
