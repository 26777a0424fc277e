// RUN: not npuir-run %s --hw %S/Inputs/tiny.toml --ranks 3 2>&1 | filecheck %s --check-prefix=THREE
// RUN: not npuir-run %s --hw %S/Inputs/tiny.toml 2>&1 | filecheck %s --check-prefix=ONE
// RUN: npuir-run %s --hw %S/Inputs/tiny.toml --ranks 3 --mirror-peers | filecheck %s --check-prefix=TEXT
// RUN: npuir-run %s --hw %S/Inputs/tiny.toml --ranks 3 --mirror-peers --json | filecheck %s --check-prefix=JSON
// RUN: npuir-run %s --hw %S/Inputs/tiny.toml --ranks 4 --json | filecheck %s --check-prefix=WHOLE
// RUN: not npuir-run %s --hw %S/Inputs/tiny.toml --entries spmd,spmd --ranks 4 2>&1 | filecheck %s --check-prefix=USAGE

// Tests that a collective whose group reaches past the ranks that run is a
// located error naming the op, its group_size and the ranks present -- never
// a quiet copy of the ranks that do run -- unless --mirror-peers asks for the
// copies, and then the text and JSON reports say which ranks were mirrored.
// Groups are formed by consecutive ranks: with group_size 2 and 3 ranks,
// ranks 0-1 form a whole group and rank 2 is alone in ranks 2-3.  Four ranks
// make two whole groups.  --entries and --ranks that disagree are a usage
// error (exit 2).

!t = tensor<512xf16>
module attributes {npu.target = "tiny"} {
  func.func @spmd(%x: !t) -> !t {
    %y = npu.relu %x : (!t) -> !t
    %r = npu.all_reduce %y {group_size = 2 : i64} : (!t) -> !t
    func.return %r : !t
  }
}

// THREE:      partial-group.mlir:[[# @LINE - 5]]:5: error: 'npu.all_reduce' (%r) has group_size = 2 (ranks 2-3), but only rank(s) 2 of its group run: run all 4 ranks (--ranks 4, or one --entries function per rank), or pass --mirror-peers to take the missing ranks as copies of those present
// THREE-NEXT: %r = npu.all_reduce

// ONE:        error: 'npu.all_reduce' (%r) has group_size = 2 (ranks 0-1), but only rank(s) 0 of its group run: run all 2 ranks

// TEXT:       device           tiny, 3 rank(s)
// TEXT:       mirrored peers   'npu.all_reduce' (%r) group_size 2: rank(s) 3 are copies of rank(s) 2, not simulated
// TEXT-NEXT:  makespan

// JSON:       "ranks": 3,
// JSON:       "mirror_peers": true,
// JSON-NEXT:  "mirrored_peers": [
// JSON-NEXT:    {
// JSON-NEXT:      "op": "'npu.all_reduce' (%r)",
// JSON-NEXT:      "group": "world",
// JSON-NEXT:      "group_size": 2,
// JSON-NEXT:      "ranks_present": [
// JSON-NEXT:        2
// JSON-NEXT:      ],
// JSON-NEXT:      "mirrored_ranks": [
// JSON-NEXT:        3
// JSON-NEXT:      ]
// JSON-NEXT:    }
// JSON-NEXT:  ],

// WHOLE:      "ranks": 4,
// WHOLE:      "mirror_peers": false,
// WHOLE-NEXT: "mirrored_peers": null,

// USAGE:      npuir-run: error: --entries names 2 function(s), one per rank, but --ranks is 4
