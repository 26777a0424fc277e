// RUN: npuir-import %S/Inputs/seed_multistream.txt 2>%t.err | filecheck %s
// RUN: filecheck %s --check-prefix=SUMMARY < %t.err
// RUN: npuir-import %S/Inputs/seed_multistream.pbtxt 2>/dev/null | filecheck %s
// RUN: npuir-import %S/Inputs/seed_multistream.txt 2>/dev/null | npuir-opt -p npu-default | filecheck %s --check-prefix=LOWERED
// RUN: npuir-import %S/Inputs/seed_multistream.pbtxt 2>/dev/null | npuir-opt -p npu-default | filecheck %s --check-prefix=LOWERED

// Tests that the multi-stream seed model, dumped by TorchAir as GE text
// (graph_dump.type = "txt") and as pbtxt, imports to the same IR: Data ops
// are arguments, each Identity with a control input is a stream.wait_tensor
// whose result the MatMul / Add use, the ops carrying _user_stream_label sit
// in stream.switch scopes, and NetOutput is the return.

// CHECK-LABEL: func.func @seed_multistream
// CHECK-SAME:    %0: tensor<1000x1000xf16> {npu.op_name = "arg1"}
// CHECK-NEXT:    %4 = npu.add %0, %1 {npu.op_name = "Add"}
// CHECK-NEXT:    %5 = stream.switch "1" -> tensor<1000x1000xf16> {
// CHECK-NEXT:      %6 = stream.wait_tensor %3 after %4 {npu.op_name = "Identity"}
// CHECK-NEXT:      %7 = npu.matmul %2, %6 {npu.op_name = "MatMul"}
// CHECK-NEXT:      stream.yield %7
// CHECK-NEXT:    }
// CHECK-NEXT:    %8 = npu.matmul %2, %3 {npu.op_name = "MatMul_1"}
// CHECK-NEXT:    %9 = stream.switch "2" -> tensor<1000x1000xf16> {
// CHECK-NEXT:      %10 = stream.wait_tensor %3 after %5 {npu.op_name = "Identity_1"}
// CHECK-NEXT:      %11 = npu.add %2, %10 {npu.op_name = "Add_1"}
// CHECK-NEXT:      stream.yield %11
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %4, %5, %8, %9

// The summary accounts for every GE op.
// SUMMARY:      imported graph 'seed_multistream': 11 GE ops
// SUMMARY-NEXT:   Add           2  -> 2 npu.add
// SUMMARY-NEXT:   Data          4  -> 4 function argument
// SUMMARY-NEXT:   Identity      2  -> 2 stream.wait_tensor
// SUMMARY-NEXT:   MatMul        2  -> 2 npu.matmul
// SUMMARY-NEXT:   NetOutput     1  -> func.return

// Lowered with npu-default: three streams and exactly the seed's three waits.
// LOWERED:      stream.decl @s0 "<main>"
// LOWERED-NEXT: stream.decl @s1 "1"
// LOWERED-NEXT: stream.decl @s2 "2"
// LOWERED-NOT:  stream.decl
// LOWERED-COUNT-3: sync.wait
// LOWERED-NOT:  sync.wait
