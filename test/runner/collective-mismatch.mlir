// RUN: not npuir-run %s --entries reduce,exchange --check 2>&1 | filecheck %s --check-prefix=OP
// RUN: not npuir-run %s --entries reduce,exchange --timing-only 2>&1 | filecheck %s --check-prefix=OP
// RUN: not npuir-run %s --entries reduce,small 2>&1 | filecheck %s --check-prefix=SHAPE
// RUN: not npuir-run %s --entries reduce,half 2>&1 | filecheck %s --check-prefix=DTYPE
// RUN: not npuir-run %s --entries two,reduce 2>&1 | filecheck %s --check-prefix=ORDER
// RUN: npuir-run %s --entries reduce,reduce --check | filecheck %s --check-prefix=SAME

// Tests that collectives pairing up across ranks (the k-th of a group on each
// rank) must be the same collective: an all_reduce on one rank never pairs
// with an all_to_all on the other, nor with inputs of another shape or element
// type.  The error is at the later rank's op and names its peer's place, under
// --check and --timing-only alike (the simulator and the interpreter refuse it).

!t = tensor<8x16xf32>
!s = tensor<4x16xf32>
!h = tensor<8x16xf16>
module attributes {npu.target = "tiny"} {
  func.func @reduce(%x: !t) -> !t {
    %a = npu.all_reduce %x {group_size = 2 : i64} : (!t) -> !t
    func.return %a : !t
  }
  func.func @exchange(%x: !t) -> !t {
    %a = npu.all_to_all %x {group_size = 2 : i64} : (!t) -> !t
    func.return %a : !t
  }
// OP: collective-mismatch.mlir:[[# @LINE - 3]]:5: error: 'npu.all_to_all' (%a) on rank 1 is collective #0 of group "world", so it pairs with 'npu.all_reduce' (%a) on rank 0 at {{.*}}collective-mismatch.mlir:19:5, but one is 'npu.all_to_all' and the other 'npu.all_reduce'
  func.func @small(%x: !s) -> !s {
    %a = npu.all_reduce %x {group_size = 2 : i64} : (!s) -> !s
    func.return %a : !s
  }
// SHAPE: collective-mismatch.mlir:[[# @LINE - 3]]:5: error: {{.*}}their inputs differ in shape or element type (tensor<4x16xf32> and tensor<8x16xf32>)
  func.func @half(%x: !h) -> !h {
    %a = npu.all_reduce %x {group_size = 2 : i64} : (!h) -> !h
    func.return %a : !h
  }
// DTYPE: collective-mismatch.mlir:[[# @LINE - 3]]:5: error: {{.*}}(tensor<8x16xf16> and tensor<8x16xf32>)
  func.func @two(%x: !t) -> (!t, !t) {
    %e = npu.all_to_all %x {group_size = 2 : i64} : (!t) -> !t
    %a = npu.all_reduce %x {group_size = 2 : i64} : (!t) -> !t
    func.return %e, %a : !t, !t
  }
// ORDER: collective-mismatch.mlir:19:5: error: 'npu.all_reduce' (%a) on rank 1 is collective #0 of group "world", so it pairs with 'npu.all_to_all' (%e) on rank 0 at {{.*}}collective-mismatch.mlir:[[# @LINE - 4]]:5
}
// SAME: check            passed
