// RUN: printf 'Op Name,OP Type,Task Type\nAdd_1,add,AI_VECTOR_CORE\n' > %t.bad.csv
// RUN: not npuir-opt %s -p 'stream-partition{mode=auto profile="%t.bad.csv"}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: not npuir-opt %s -p 'stream-partition,coreset-partition{profile="%t.bad.csv"}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: printf 'Op Name,OP Type,Task Type,Task Duration(us),Block Dim,Mix Block Dim\nAdd_1,add,AI_VECTOR_CORE,1.5,48,0\n' > %t.csv
// RUN: npuir-opt %s -p 'stream-partition{mode=auto profile="%t.csv"},coreset-partition{profile="%t.csv"}' | filecheck %s

// Tests that stream-partition (mode=auto) and coreset-partition take a
// profile= option: an msprof-style op summary whose durations replace the cost
// model's for the ops it names; a profile without the columns an op summary
// needs is an error located at its header line.

!t = tensor<1024x1024xf16>
func.func @f(%a: !t, %b: !t) -> !t {
  %x = npu.add %a, %b {npu.op_name = "Add_1"} : (!t, !t) -> !t
  %y = npu.exp %x : (!t) -> !t
  func.return %y : !t
}

// BAD: bad.csv:1: error: the header has no column 'Task Duration(us)' or 'Duration(us)', 'Block Dim' or 'Block Num'

// CHECK-LABEL: func.func @f
// CHECK:       npu.add {{.*}}npu.op_name = "Add_1"
