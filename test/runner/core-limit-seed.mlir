// RUN: not npuir-run %S/../../examples/core_limit_deadlock.mlir --entries rank0,rank1 --json --timing-only 2>/dev/null | filecheck %s --check-prefix=DEADLOCK
// RUN: npuir-opt %S/../../examples/core_limit_deadlock.mlir -p npu-default 2>&1 >/dev/null | filecheck %s --check-prefix=HAZARD
// RUN: npuir-run %S/../../examples/core_limit_fixed.mlir --entries rank0,rank1 --json | filecheck %s --check-prefix=FIXED
// RUN: npuir-run %S/../../examples/core_limit_deadlock.mlir --entries rank0,rank1 --json --timing-only \
// RUN:   --pipeline stream-partition,coreset-partition,npu-default | filecheck %s --check-prefix=AUTO

// Tests the core-limiting seed's two-card scenario end to end, on the device
// the examples name (910b2, 48 vector cores; their limits of 16 and 24 do not
// fit `tiny`):
// - examples/core_limit_deadlock.mlir deadlocks (exit 3) and the report names
//   a wait-for cycle across both ranks and the cores each blocked op holds;
// - npuir-opt warns about the nonzero's hold-and-wait hazard;
// - examples/core_limit_fixed.mlir (nonzero limited to 8 cores) completes;
// - coreset-partition picks a limit itself, and the run completes.
// (The deadlock and coreset-partition runs are timing-only: they are about the
// schedule; test/unit/tools/test_run.py checks both examples' numerics.)
//
// By hand: every stream has priority 0, so free cores go in issue order.
// Rank 0 at t = 0: the reduce_scatter (aiv, limit 16) takes 16 cores and
// waits for its peer; the nonzero (full_core_sync, all 48) takes the other 32
// and holds them; the all_to_all (limit 24) gets none.  Rank 1, issuing in the
// other order: the all_to_all takes 24 and waits for its peer, the nonzero
// holds the other 24, the reduce_scatter gets none.  Each collective waits
// for a peer that waits for cores: deadlock at 0 ns.

// DEADLOCK:      "deadlock": {
// DEADLOCK-NEXT:   "time_ns": 0,
// DEADLOCK:        "blocked": [
// DEADLOCK:            "rank": 0,
// DEADLOCK-NEXT:       "stream": "rs",
// DEADLOCK-NEXT:       "symbol": "s1",
// DEADLOCK-NEXT:       "op": "'npu.reduce_scatter' (%r0)",
// DEADLOCK-NEXT:       "reason": "peers",
// DEADLOCK-NEXT:       "pool": "vector",
// DEADLOCK-NEXT:       "holds": 16,
// DEADLOCK:            "rank": 0,
// DEADLOCK-NEXT:       "stream": "nz",
// DEADLOCK-NEXT:       "symbol": "s2",
// DEADLOCK-NEXT:       "op": "'npu.nonzero' (%n)",
// DEADLOCK-NEXT:       "reason": "cores",
// DEADLOCK-NEXT:       "pool": "vector",
// DEADLOCK-NEXT:       "holds": 32,
// DEADLOCK-NEXT:       "wants": 48,
// DEADLOCK:            "rank": 0,
// DEADLOCK-NEXT:       "stream": "dc",
// DEADLOCK-NEXT:       "symbol": "s3",
// DEADLOCK-NEXT:       "op": "'npu.all_to_all' (%d0)",
// DEADLOCK-NEXT:       "reason": "cores",
// DEADLOCK-NEXT:       "pool": "vector",
// DEADLOCK-NEXT:       "holds": 0,
// DEADLOCK-NEXT:       "wants": 24,
// DEADLOCK:            "rank": 1,
// DEADLOCK-NEXT:       "stream": "dc",
// DEADLOCK-NEXT:       "symbol": "s3",
// DEADLOCK-NEXT:       "op": "'npu.all_to_all' (%d0)",
// DEADLOCK-NEXT:       "reason": "peers",
// DEADLOCK-NEXT:       "pool": "vector",
// DEADLOCK-NEXT:       "holds": 24,
// DEADLOCK:            "rank": 1,
// DEADLOCK-NEXT:       "stream": "nz",
// DEADLOCK-NEXT:       "symbol": "s2",
// DEADLOCK-NEXT:       "op": "'npu.nonzero' (%n)",
// DEADLOCK-NEXT:       "reason": "cores",
// DEADLOCK-NEXT:       "pool": "vector",
// DEADLOCK-NEXT:       "holds": 24,
// DEADLOCK-NEXT:       "wants": 48,
// DEADLOCK:        "cycle": [
// DEADLOCK-NEXT:     {
// DEADLOCK-NEXT:       "rank": 0,
// DEADLOCK-NEXT:       "stream": "rs",
// DEADLOCK-NEXT:       "symbol": "s1",
// DEADLOCK-NEXT:       "op": "'npu.reduce_scatter' (%r0)"
// DEADLOCK-NEXT:     },
// DEADLOCK-NEXT:     {
// DEADLOCK-NEXT:       "rank": 1,
// DEADLOCK-NEXT:       "stream": "rs",
// DEADLOCK-NEXT:       "symbol": "s1",
// DEADLOCK-NEXT:       "op": "'npu.reduce_scatter' (%r0)"
// DEADLOCK-NEXT:     },
// DEADLOCK-NEXT:     {
// DEADLOCK-NEXT:       "rank": 1,
// DEADLOCK-NEXT:       "stream": "dc",
// DEADLOCK-NEXT:       "symbol": "s3",
// DEADLOCK-NEXT:       "op": "'npu.all_to_all' (%d0)"
// DEADLOCK-NEXT:     },
// DEADLOCK-NEXT:     {
// DEADLOCK-NEXT:       "rank": 0,
// DEADLOCK-NEXT:       "stream": "dc",
// DEADLOCK-NEXT:       "symbol": "s3",
// DEADLOCK-NEXT:       "op": "'npu.all_to_all' (%d0)"
// DEADLOCK-NEXT:     }
// DEADLOCK-NEXT:   ]

// HAZARD: core_limit_deadlock.mlir:30:7: warning: hold-and-wait hazard: 'npu.nonzero' (%n) on @s2 ("nz") holds up to 48 vector cores while it waits for the rest, and 'npu.reduce_scatter' (%r0) on @s1 ("rs"), which can run at the same time, holds up to 16: 64 > 48 on 910b2
// HAZARD-NEXT: %n = npu.nonzero %mask : (!m) -> tensor<?x2xi64>
// HAZARD: core_limit_deadlock.mlir:30:7: warning: hold-and-wait hazard: 'npu.nonzero' (%n) on @s2 ("nz") holds up to 48 vector cores while it waits for the rest, and 'npu.all_to_all' (%d0) on @s3 ("dc"), which can run at the same time, holds up to 24: 72 > 48 on 910b2
// HAZARD: core_limit_deadlock.mlir:51:7: warning: hold-and-wait hazard: 'npu.nonzero' (%n)
// HAZARD-NOT: error

// FIXED:     "ranks": 2,
// FIXED:     "deadlock": null

// AUTO:      "ranks": 2,
// AUTO:      "warnings": [
// AUTO-NEXT:   {
// AUTO-NEXT:     "kind": "core.limits-chosen",
// AUTO-NEXT:     "message": "coreset-partition limits 'npu.nonzero' (%n) in @rank0 to {{[0-9]+}} vector cores
// AUTO-NEXT:     "severity": "remark",
// AUTO:          "kind": "core.limits-chosen",
// AUTO-NEXT:     "message": "coreset-partition limits 'npu.nonzero' (%n) in @rank1 to {{[0-9]+}} vector cores
// AUTO-NEXT:     "severity": "remark",
// AUTO:      "deadlock": null
