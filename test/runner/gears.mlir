// RUN: npuir-run %S/../../examples/gears.mlir --hw %S/Inputs/tiny.toml --shape 0=4x2 --shape 1=4x2 --check --json | filecheck %s --check-prefix=G1
// RUN: not npuir-run %S/../../examples/gears.mlir --hw %S/Inputs/tiny.toml --shape 0=3x2 --shape 1=3x2 2>&1 | filecheck %s --check-prefix=NOGEAR
// RUN: npuir-run %S/../../examples/gears.mlir --hw %S/Inputs/tiny.toml --shape 0=3x2 --shape 1=3x2 --check --json \
// RUN:   --pipeline 'gear-multiversion{fallback=dynamic},stream-partition,coreset-lower,insert-events,sync-verify' \
// RUN:   | filecheck %s --check-prefix=DYN

// Tests the runner on the gear seed's model (examples/gears.mlir: x1 + x2,
// dim 0 of both with gears [2, 4] under "zip"): a 4x2 input runs the static
// version @forward_g1 and matches the unscheduled program; a 3x2 input
// matches no gear, an error (exit 1) listing the gears there are; with
// `fallback=dynamic` the same input runs the generic @forward_dynamic.
//
// By hand on the device of Inputs/tiny.toml (vector f32: 1 op per 2 ns per core; HBM 1 byte/ns;
// launch 100 ns): the add of two 4x2 f32 tensors has flops 8, bytes
// 3 * 32 = 96, one vector tile, so 1 core with HBM share 1/4:
// max(8 * 2, 96 * 4) = 384, + 100 = 484 ns.  At 3x2 (the dynamic version,
// costed at the shape given): bytes 3 * 24 = 72, max(12, 288) + 100 = 388 ns.

// G1:      "gears": [
// G1-NEXT:   "@forward_g1 (gear 1)"
// G1-NEXT: ],
// G1-NEXT: "makespan_ns": 484,
// G1:      "check": {
// G1-NEXT:   "passed": true,
// G1-NEXT:   "mismatches": []
// G1-NEXT: },

// NOGEAR:      gears.mlir:5:3: error: @forward: no gear matches the inputs (arg0 has shape 3x2, arg1 has shape 3x2); the gears are: arg0 dim 0 = 2, arg1 dim 0 = 2; arg0 dim 0 = 4, arg1 dim 0 = 4
// NOGEAR-NEXT: func.func @forward
// NOGEAR-NOT:  Traceback

// DYN:      "gears": [
// DYN-NEXT:   "@forward_dynamic"
// DYN-NEXT: ],
// DYN-NEXT: "makespan_ns": 388,
// DYN:      "check": {
// DYN-NEXT:   "passed": true,
