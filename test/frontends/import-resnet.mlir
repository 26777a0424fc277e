// RUN: npuir-import %S/Inputs/ge_proto_00046_afterUBMatch.txt --json -o %t.fused.mlir | filecheck %s --check-prefix=FUSED
// RUN: npuir-opt -p npu-default %t.fused.mlir | filecheck %s --check-prefix=FUSED-IR
// RUN: npuir-run %t.fused.mlir --timing-only | filecheck %s --check-prefix=SIM
// RUN: npuir-import %S/Inputs/ge_proto_00015_OptimizeQuantGraph_FeGraphFusionAfter.txt -o %t.quant.mlir 2>%t.quant.err
// RUN: filecheck %s --check-prefix=QUANT < %t.quant.err
// RUN: npuir-run %t.quant.mlir --timing-only | filecheck %s --check-prefix=SIM

// Tests that the two real GE dumps of a ResNet-50 (DUMP_GE_GRAPH ModelDefs:
// a fused graph after UB matching, and a quantised graph with int8 tensors)
// import with every op accounted for, lower with npu-default and simulate.

// The fused graph: fractal layouts (NC1HWC0, FRACTAL_Z) read as their origin
// NCHW shapes, Conv2D / FullyConnection on the cube, PlaceHolder and End.
// FUSED:      "graph": "partition0_rank3_new_sub_graph57",
// FUSED-NEXT: "ops": 234,
// FUSED:      "Conv2D": {
// FUSED-NEXT:   "count": 53,
// FUSED-NEXT:   "became": {
// FUSED-NEXT:     "npu.conv2d": 53
// FUSED:      "PlaceHolder": {
// FUSED-NEXT:   "count": 109,
// FUSED:      "TransData": {
// FUSED-NEXT:   "count": 1,
// FUSED-NEXT:   "became": {
// FUSED-NEXT:     "npu.layout_transform": 1

// FUSED-IR:     stream.decl @s0 "<main>"
// FUSED-IR:     npu.conv2d %0, %1, %2 {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>, {{.*}}npu.op_name = "conv1", stream.on = @s0{{.*}} : (tensor<1x3x224x224xf16>, tensor<64x3x7x7xf16>, tensor<64xf16>) -> tensor<1x64x112x112xf16>
// FUSED-IR:     npu.pool2d {{.*}}kind = "max", window = array<i64: 3, 3>, strides = array<i64: 2, 2>{{.*}}ceil_mode{{.*}}-> tensor<1x64x56x56xf16>

// SIM:        makespan
// SIM:        utilisation {{.*}}cube

// The quantised graph: unknown quantisation types become npu.opaque, one
// warning each with its count; the host-CPU requant op runs on the AI CPU.
// QUANT: warning: GE type 'RequantHostCpuOp' is not in the op table: 53 op(s) imported as npu.opaque (engine aicpu)
// QUANT: warning: GE type 'AscendQuant' is not in the op table: 49 op(s) imported as npu.opaque (engine vector)
// QUANT: imported graph 'ResNet-50': 465 GE ops
// QUANT: Const                   162  -> 162 function argument (ge.const)
// QUANT: Conv2D                   53  -> 52 npu.conv2d, npu.conv2d + npu.cast
// QUANT: FullyConnection           1  -> npu.reshape + npu.conv2d
