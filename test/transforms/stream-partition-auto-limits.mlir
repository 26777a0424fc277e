// RUN: npuir-opt %s -p 'stream-partition{mode=auto}' | filecheck %s
// RUN: npuir-opt %s -p 'stream-partition{mode=auto limits=false}' | filecheck %s --check-prefix=OFF
// RUN: npuir-opt %s -p 'stream-partition{mode=auto},coreset-lower,insert-events,coreset-check' 2>&1 >/dev/null | filecheck %s --check-prefix=CLEAN --allow-empty

// Tests that auto (limits=true by default) limits an aiv all_reduce that would hold every
// vector core while a vector chain waits, writes the limit as a coreset.limit scope around
// the collective and the other stream's ops, and that the limits keep seed 003's pair rule
// (coreset-check is silent).  With limits=false nothing is limited.

!a = tensor<2048x1024xf16>
module attributes {npu.target = "910b2"} {
  func.func @f(%x: !a, %y: !a) -> (!a, !a) {
    %r = npu.all_reduce %x {group_size = 8 : i64, group = "tp", mode = "aiv"} : (!a) -> !a
    %v1 = npu.gelu %y : (!a) -> !a
    %v2 = npu.silu %v1 : (!a) -> !a
    %v3 = npu.mul %v2, %v1 : (!a, !a) -> !a
    %v4 = npu.add %v3, %r : (!a, !a) -> !a
    func.return %v4, %v3 : !a, !a
  }
}

// CHECK:      %r = coreset.limit vector {{[0-9]+}} -> tensor<2048x1024xf16> {
// CHECK-NEXT:   npu.all_reduce
// CHECK:      %v1 = coreset.limit vector {{[0-9]+}}
// CHECK-NEXT:   npu.gelu

// OFF-NOT: coreset.limit

// CLEAN-NOT: {{warning|error}}
