// RUN: cp %S/Inputs/seed_multistream.pbtxt %t.looks-like.mlir
// RUN: npuir-opt -p npu-default %t.looks-like.mlir | filecheck %s
// RUN: npuir-opt -p npu-default %S/Inputs/seed_multistream.txt | filecheck %s
// RUN: npuir-run %S/Inputs/seed_multistream.txt --check | filecheck %s --check-prefix=SEED
// RUN: not npuir-run %S/Inputs/ge_proto_00015_OptimizeQuantGraph_FeGraphFusionAfter.txt --check 2>&1 | filecheck %s --check-prefix=OPAQUE
// RUN: not npuir-opt %S/Inputs/missing_input.txt 2>&1 | filecheck %s --check-prefix=ERROR

// Tests that npuir-opt and npuir-run take a GE / TorchAir dump directly,
// recognised by its content (here a pbtxt dump named .mlir), and that
// diagnostics from later stages point into the dump.

// CHECK:       stream.decl @s0 "<main>"
// CHECK-NEXT:  stream.decl @s1 "1"
// CHECK-NEXT:  stream.decl @s2 "2"
// CHECK-LABEL: func.func @
// CHECK-COUNT-3: sync.wait
// CHECK-NOT:   sync.wait

// The seed model's makespan is the hand-written seed's.
// SEED: makespan         30304 ns
// SEED: check            passed

// An op the importer could not map has no numeric kernel: --check says which
// and where it is in the dump.
// OPAQUE: ge_proto_00015_OptimizeQuantGraph_FeGraphFusionAfter.txt:109:3: error: rank 0: no numeric kernel for op 'npu.opaque' (GE type 'Aipp' has no npu op to compute it; --timing-only simulates it)

// ERROR: missing_input.txt:10:3: error: input 'nowhere' of 'r' names no op in the graph
