// RUN: npuir-run %s --hw %S/Inputs/tiny.toml --json --entry spmd --ranks 2 | filecheck %s --check-prefix=SPMD
// RUN: npuir-run %s --hw %S/Inputs/tiny.toml --json --entries late,early | filecheck %s --check-prefix=MPMD

// Tests that a two-rank collective starts on both ranks at once, when the
// last member arrives: SPMD (the same function on 2 ranks) and MPMD (rank 1
// reaches the all_reduce at once, rank 0 only after a relu, and rank 1 waits).
//
// By hand on the device of Inputs/tiny.toml (vector f16 1 op/ns per core, 4 cores, HBM and link
// 1 byte/ns, 100 ns per link step, launch 100 ns):
//   relu of 512 f16: flops 512, bytes 2 * 1024 = 2048, vector_tiles(1024) = 1,
//   so 1 core with HBM share 1/4: max(512, 2048 * 4) = 8192, + 100 = 8292 ns.
//   all_reduce of B = 1024 bytes over G = 2 (sdma, no cores): 2(G-1)/G * B
//   + 2(G-1) * 100 = 1024 + 200 = 1224 (timing.py), + 100 = 1324 ns.
// --ranks 2: on each rank relu [0, 8292], all_reduce [8292, 9616]; makespan
//   9616, each rank's default stream busy 9616.
// --entries late,early: rank 0 relu [0, 8292]; rank 1 arrives at 0 and waits;
//   the all_reduce runs [8292, 9616] on both.  Makespan 9616 (not 1324 on
//   rank 1); rank 1's stream is busy only 1324 ns of it; the critical path
//   runs through rank 0's relu.

!t = tensor<512xf16>
module attributes {npu.target = "tiny"} {
  func.func @spmd(%x: !t) -> !t {
    %y = npu.relu %x : (!t) -> !t
    %r = npu.all_reduce %y {group_size = 2 : i64} : (!t) -> !t
    func.return %r : !t
  }
  func.func @late(%x: !t) -> !t {
    %y = npu.relu %x : (!t) -> !t
    %r = npu.all_reduce %y {group_size = 2 : i64} : (!t) -> !t
    func.return %r : !t
  }
  func.func @early(%x: !t) -> !t {
    %r = npu.all_reduce %x {group_size = 2 : i64} : (!t) -> !t
    func.return %r : !t
  }
}

// SPMD:      "ranks": 2,
// SPMD-NEXT: "entries": [
// SPMD-NEXT:   "spmd",
// SPMD-NEXT:   "spmd"
// SPMD:      "makespan_ns": 9616,
// SPMD:      "rank": 0,
// SPMD-NEXT: "stream": "<main>",
// SPMD-NEXT: "symbol": "s0",
// SPMD-NEXT: "busy_ns": 9616
// SPMD:      "rank": 1,
// SPMD-NEXT: "stream": "<main>",
// SPMD-NEXT: "symbol": "s0",
// SPMD-NEXT: "busy_ns": 9616
// SPMD:      "deadlock": null

// MPMD:      "ranks": 2,
// MPMD-NEXT: "entries": [
// MPMD-NEXT:   "late",
// MPMD-NEXT:   "early"
// MPMD:      "makespan_ns": 9616,
// MPMD:      "rank": 0,
// MPMD-NEXT: "stream": "<main>",
// MPMD-NEXT: "symbol": "s0",
// MPMD-NEXT: "busy_ns": 9616
// MPMD:      "rank": 1,
// MPMD-NEXT: "stream": "<main>",
// MPMD-NEXT: "symbol": "s0",
// MPMD-NEXT: "busy_ns": 1324
// MPMD:      "critical_path": [
// MPMD-NEXT:   {
// MPMD-NEXT:     "rank": 0,
// MPMD-NEXT:     "op": "'npu.relu' (%y)"
// MPMD-NEXT:   },
// MPMD-NEXT:   {
// MPMD-NEXT:     "rank": {{[01]}},
// MPMD-NEXT:     "op": "'npu.all_reduce' (%r)"
// MPMD:      "deadlock": null
