// Tests that a pipeline is checked against what its passes declare they need
// (`--list-passes`: needs / establishes / may undo) before any pass runs.
//
// Refused when built (usage error, kind pass.order): auto with its default
// limits=true writes coreset.limit scopes, and insert-events needs none left;
// stream-unlower undoes the partition sync-verify needs.
// RUN: not npuir-opt %s -p 'stream-partition{mode=auto},insert-events' 2>&1 | filecheck %s --check-prefix=AUTO
// RUN: not npuir-run %s --json --pipeline 'stream-partition{mode=auto},insert-events' | filecheck %s --check-prefix=JSON
// RUN: not npuir-opt %s -p 'stream-partition,stream-unlower,sync-verify' 2>&1 | filecheck %s --check-prefix=UNLOWER
//
// Accepted: the pass named in between, auto without limits, a pass that
// re-establishes what another undid.
// RUN: npuir-opt %s -p 'stream-partition{mode=auto},coreset-lower,insert-events,sync-verify' | filecheck %s --check-prefix=LOWERED
// RUN: npuir-opt %s -p 'stream-partition{mode=auto limits=false},insert-events,sync-verify' | filecheck %s --check-prefix=NOLIMITS
// RUN: npuir-opt %s -p 'stream-partition,stream-unlower,stream-partition,sync-verify' | filecheck %s --check-prefix=AGAIN
//
// The input's own state counts: an input already partitioned and lowered needs
// neither stream-partition nor coreset-lower; an input that still holds auto's
// scopes is refused at the first scope, and an input without a memory plan
// before mem-verify runs is refused before insert-events (which would remark) runs.
// RUN: npuir-opt %s -p 'stream-partition{mode=auto},coreset-lower' | npuir-opt -p 'insert-events,sync-verify,mem-plan,mem-verify' | filecheck %s --check-prefix=INPUT-LOWERED
// RUN: npuir-opt %s -p 'stream-partition{mode=auto}' | npuir-opt --verify-diagnostics -p 'insert-events' | filecheck %s --check-prefix=INPUT-SCOPES
// RUN: npuir-opt %s -p 'stream-partition{mode=auto},coreset-lower' | not npuir-opt -p 'insert-events{stats},mem-verify' 2>&1 | filecheck %s --check-prefix=INPUT-UNPLANNED

!a = tensor<2048x1024xf16>
module attributes {npu.target = "910b2"} {
  func.func @f(%x: !a, %y: !a) -> (!a, !a) {
    %r = npu.all_reduce %x {group_size = 8 : i64, group = "tp", mode = "aiv"} : (!a) -> !a
    %v1 = npu.gelu %y : (!a) -> !a
    %v2 = npu.silu %v1 : (!a) -> !a
    %v3 = npu.mul %v2, %v1 : (!a, !a) -> !a
    %v4 = npu.add %v3, %r : (!a, !a) -> !a
    func.return %v4, %v3 : !a, !a
  }
}

// AUTO: npuir-opt: error: insert-events needs coreset-lower first: stream-partition{mode=auto} before it undoes limits-lowered (with limits=true, its default, mode=auto writes coreset.limit scopes); run coreset-lower between them
// AUTO-NOT: coreset.limit

// JSON:      "kind": "pass.order"
// JSON:      "message": "insert-events needs coreset-lower first:
// JSON:      "provider": "coreset-lower"

// UNLOWER: npuir-opt: error: sync-verify needs stream-partition first: stream-unlower before it undoes partitioned

// LOWERED-NOT: coreset.limit
// LOWERED:     npu.all_reduce {{.*}}coreset.cores = #coreset.cores<vector
// LOWERED:     sync.record
// LOWERED:     sync.wait

// NOLIMITS-NOT: coreset.limit
// NOLIMITS:     npu.all_reduce {{.*}}stream.on

// AGAIN: stream.decl
// AGAIN: npu.all_reduce {{.*}}stream.on

// INPUT-LOWERED: mem.pool
// INPUT-LOWERED: sync.record

// INPUT-SCOPES: <stdin>:{{[0-9]+}}:5: error: insert-events needs coreset-lower first: the input is not limits-lowered (a coreset.limit scope is left)
// INPUT-SCOPES-NEXT: %r = coreset.limit vector

// INPUT-UNPLANNED-NOT: remark
// INPUT-UNPLANNED:     <stdin>:{{[0-9]+}}:3: error: mem-verify needs mem-plan first: the input is not memory-planned (@f has no mem.pool)
