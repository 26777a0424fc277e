// RUN: not npuir-opt %S/../../examples/core_limit_deadlock.mlir -p 'stream-partition,coreset-lower,insert-events,core-deadlock-check' 2>&1 >/dev/null | filecheck %s
// RUN: npuir-opt %S/../../examples/core_limit_fixed.mlir -p 'stream-partition,coreset-lower,insert-events,core-deadlock-check' 2>&1 >/dev/null | filecheck %s --check-prefix=FIXED --allow-empty

// Tests the core-limiting seed's two-card deadlock (seed 003,
// examples/core_limit_deadlock.mlir), found per rank before anything runs:
// on each card the nonzero (SyncAll, all 48 vector cores of 910b2) can run
// beside the reduce_scatter (AIV, 16) and the all_to_all (AIV, 24) of the
// other streams: 64 and 72 > 48.  The two collectives together (40) fit.
// With the nonzero limited to 8 cores (examples/core_limit_fixed.mlir) every
// pair fits and the check is silent.

// CHECK: core_limit_deadlock.mlir:30:7: error: core deadlock risk in @rank0: 'npu.nonzero' (%n) on @s2 ("nz") (48 vector, SyncAll: needs them all at once, every core) <-> 'npu.reduce_scatter' (%r0) on @s1 ("rs") (16 vector, AIV collective waiting for its peers) sum=64 > 48 vector cores of 910b2
// CHECK-SAME: or limit this op to 32 vector cores
// CHECK: core_limit_deadlock.mlir:24:9: note: 'npu.reduce_scatter' (%r0) on @s1 ("rs") holds up to 16 vector cores while it waits
// CHECK: core_limit_deadlock.mlir:35:9: error: core deadlock risk in @rank0: 'npu.all_to_all' (%d0) on @s3 ("dc") (24 vector, AIV collective waiting for its peers) <-> 'npu.nonzero' (%n) on @s2 ("nz") (48 vector, SyncAll: needs them all at once, every core) sum=72 > 48
// CHECK: error: core deadlock risk in @rank1: 'npu.nonzero' (%n) on @s2 ("nz") {{.*}} <-> 'npu.all_to_all' (%d0) on @s3 ("dc") {{.*}} sum=72 > 48
// CHECK: error: core deadlock risk in @rank1: 'npu.reduce_scatter' (%r0) on @s1 ("rs") {{.*}} <-> 'npu.nonzero' (%n) on @s2 ("nz") {{.*}} sum=64 > 48
// CHECK-NOT: 'npu.reduce_scatter' (%r0) on @s1 ("rs") {{.*}} <-> 'npu.all_to_all'
// CHECK: error: core deadlock risk detected: 4 conflicting pair(s) of ops

// FIXED-NOT: deadlock risk
