// RUN: not npuir-run %s --hw %S/Inputs/tiny.toml --json --entries ab,ba | filecheck %s
// RUN: not npuir-run %s --hw %S/Inputs/tiny.toml --entries ab,ba | filecheck %s --check-prefix=TEXT

// Tests that two ranks issuing two collectives in opposite order on one
// stream deadlock (exit 3), and that the report names every blocked op, what
// it waits for, and the wait-for cycle across the ranks -- never a hang.
//
// By hand: each rank's only stream is the default one.  At t = 0 rank 0's
// head is the all_reduce of group "a", rank 1's the one of group "b"; each
// waits for its peer, whose copy is queued behind the other collective.
// Nothing ever runs: "deadlock at 0 ns", makespan 0, the two heads blocked
// (reason "peers", holding no cores: sdma collectives take none) and forming
// the cycle rank 0 %a -> rank 1 %b -> rank 0 %a.

!t = tensor<512xf16>
module attributes {npu.target = "tiny"} {
  func.func @ab(%x: !t) -> (!t, !t) {
    %a = npu.all_reduce %x {group_size = 2 : i64, group = "a"} : (!t) -> !t
    %b = npu.all_reduce %x {group_size = 2 : i64, group = "b"} : (!t) -> !t
    func.return %a, %b : !t, !t
  }
  func.func @ba(%x: !t) -> (!t, !t) {
    %b = npu.all_reduce %x {group_size = 2 : i64, group = "b"} : (!t) -> !t
    %a = npu.all_reduce %x {group_size = 2 : i64, group = "a"} : (!t) -> !t
    func.return %a, %b : !t, !t
  }
}

// CHECK:      "makespan_ns": null,
// CHECK:      "deadlock": {
// CHECK-NEXT:   "time_ns": 0,
// CHECK-NEXT:   "description": "deadlock at 0 ns: 2 op(s) can never start
// CHECK:        "blocked": [
// CHECK-NEXT:     {
// CHECK-NEXT:       "rank": 0,
// CHECK-NEXT:       "stream": "<main>",
// CHECK-NEXT:       "symbol": "s0",
// CHECK-NEXT:       "op": "'npu.all_reduce' (%a)",
// CHECK-NEXT:       "reason": "peers",
// CHECK-NEXT:       "pool": null,
// CHECK-NEXT:       "holds": 0,
// CHECK-NEXT:       "wants": 0,
// CHECK-NEXT:       "waits_for": "waits for collective #0 of group 'a' on rank(s) 1 (rank 1's copy is queued behind 'npu.all_reduce' (%b) on rank 1 stream @s0 (\"<main>\"))"
// CHECK-NEXT:     },
// CHECK-NEXT:     {
// CHECK-NEXT:       "rank": 1,
// CHECK-NEXT:       "stream": "<main>",
// CHECK-NEXT:       "symbol": "s0",
// CHECK-NEXT:       "op": "'npu.all_reduce' (%b)",
// CHECK-NEXT:       "reason": "peers",
// CHECK:            "waits_for": "waits for collective #0 of group 'b' on rank(s) 0 (rank 0's copy is queued behind 'npu.all_reduce' (%a) on rank 0 stream @s0 (\"<main>\"))"
// CHECK-NEXT:     }
// CHECK-NEXT:   ],
// CHECK-NEXT:   "cycle": [
// CHECK-NEXT:     {
// CHECK-NEXT:       "rank": 0,
// CHECK-NEXT:       "stream": "<main>",
// CHECK-NEXT:       "symbol": "s0",
// CHECK-NEXT:       "op": "'npu.all_reduce' (%a)"
// CHECK-NEXT:     },
// CHECK-NEXT:     {
// CHECK-NEXT:       "rank": 1,
// CHECK-NEXT:       "stream": "<main>",
// CHECK-NEXT:       "symbol": "s0",
// CHECK-NEXT:       "op": "'npu.all_reduce' (%b)"
// CHECK-NEXT:     }
// CHECK-NEXT:   ]
// CHECK-NEXT: }

// TEXT:      deadlock at 0 ns: 2 op(s) can never start
// TEXT-NEXT:   rank 0, stream @s0 ("<main>"): 'npu.all_reduce' (%a) waits for collective #0 of group 'a' on rank(s) 1
// TEXT-NEXT:   rank 1, stream @s0 ("<main>"): 'npu.all_reduce' (%b) waits for collective #0 of group 'b' on rank(s) 0
// TEXT-NEXT:   wait-for cycle: rank 0 'npu.all_reduce' (%a) -> rank 1 'npu.all_reduce' (%b) -> rank 0 'npu.all_reduce' (%a)
