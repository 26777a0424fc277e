// RUN: npuir-opt %s --split-input-file -p mem-plan | filecheck %s
// RUN: npuir-opt %s --split-input-file -p 'mem-plan{algo=greedy-by-order}',mem-verify | filecheck %s --check-prefix=ORDER
// RUN: npuir-opt %s --split-input-file -p 'mem-plan{stats=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=IMAS
// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p 'mem-plan{budget=2KiB}' | filecheck %s --check-prefix=BUDGET

// Tests that on one stream a buffer's space is reused once its last reader has
// run: %c takes %a's place, %d is the function's result (its caller's memory).

!t = tensor<4x128xf16>
stream.decl @s0 "default" priority 0
func.func @chain(%x: !t) -> !t {
  %a = npu.relu %x {stream.on = @s0} : (!t) -> !t
  %b = npu.exp %a {stream.on = @s0} : (!t) -> !t
  %c = npu.neg %b {stream.on = @s0} : (!t) -> !t
  %d = npu.relu %c {stream.on = @s0} : (!t) -> !t
  func.return %d : !t
}

// CHECK-LABEL: func.func @chain
// CHECK-SAME:    attributes {mem.pool = 2048 : i64}
// CHECK-NEXT:    %a = npu.relu %x {stream.on = @s0, mem.offset = 0 : i64, mem.size = 1024 : i64}
// CHECK-NEXT:    %b = npu.exp %a {stream.on = @s0, mem.offset = 1024 : i64, mem.size = 1024 : i64}
// CHECK-NEXT:    %c = npu.neg %b {stream.on = @s0, mem.offset = 0 : i64, mem.size = 1024 : i64}
// CHECK-NEXT:    %d = npu.relu %c {stream.on = @s0} :
// ORDER-LABEL: func.func @chain
// ORDER-SAME:    attributes {mem.pool = 2048 : i64}
// IMAS: remark: [IMAS]AfterAssignMemory : @chain memoffset[2048], memtype[HBM], theory_min[2048], zero_copy[0], total_size[2048], no_reuse[3072], streams[1]
// BUDGET-LABEL: func.func @chain

// -----

// Tests that a buffer read on another stream is not reused by a write that no
// event orders after that read: %c is issued after %b but may run first, so it
// cannot take %a's place, though on one stream it could.

!t = tensor<4x128xf16>
stream.decl @s0 "default" priority 0
stream.decl @s1 "1" priority 0
func.func @cross(%x: !t) -> !t {
  %a = npu.relu %x {stream.on = @s0} : (!t) -> !t
  %e0 = sync.record on @s0 {event_id = 0 : i64}
  sync.wait %e0 on @s1
  %b = npu.exp %a {stream.on = @s1} : (!t) -> !t
  %c = npu.neg %x {stream.on = @s0} : (!t) -> !t
  %e1 = sync.record on @s1 {event_id = 1 : i64}
  sync.wait %e1 on @s0
  %d = npu.add %b, %c {stream.on = @s0} : (!t, !t) -> !t
  func.return %d : !t
}

// CHECK-LABEL: func.func @cross
// CHECK-SAME:    attributes {mem.pool = 3072 : i64}
// CHECK:         %a = npu.relu %x {stream.on = @s0, mem.offset = 0 : i64, mem.size = 1024 : i64}
// CHECK:         %b = npu.exp %a {stream.on = @s1, mem.offset = 1024 : i64, mem.size = 1024 : i64}
// CHECK-NEXT:    %c = npu.neg %x {stream.on = @s0, mem.offset = 2048 : i64, mem.size = 1024 : i64}
// IMAS: remark: [IMAS]AfterAssignMemory : @cross memoffset[3072], memtype[HBM], theory_min[3072], zero_copy[0], total_size[3072], no_reuse[3072], streams[2]
// BUDGET: mem-plan.mlir:[[# @LINE - 18]]:1: error: @cross needs 3072 bytes of device memory, over the budget of 2048 bytes; at its peak 3072 bytes are live at once (no plan can fit: these buffers are live together; largest: 'npu.relu' (%a) 1024 bytes, 'npu.exp' (%b) 1024 bytes, 'npu.neg' (%c) 1024 bytes)

// -----

// Tests that a view shares its source's buffer, and a two-result op is placed
// by arrays; a view of an argument has no place.

!t = tensor<4x128xf16>
stream.decl @s0 "default" priority 0
func.func @views(%x: !t) -> tensor<4x2xi64> {
  %v = npu.reshape %x {stream.on = @s0} : (!t) -> tensor<512xf16>
  %a = npu.relu %x {stream.on = @s0} : (!t) -> !t
  %r = npu.reshape %a {stream.on = @s0} : (!t) -> tensor<512xf16>
  %s = npu.reshape %r {stream.on = @s0} : (tensor<512xf16>) -> !t
  %k, %i = npu.topk %s {k = 2 : i64, stream.on = @s0} : (!t) -> (tensor<4x2xf16>, tensor<4x2xi64>)
  func.return %i : tensor<4x2xi64>
}

// CHECK-LABEL: func.func @views
// CHECK-NEXT:    %v = npu.reshape %x {stream.on = @s0} :
// CHECK-NEXT:    %a = npu.relu %x {stream.on = @s0, mem.offset = 0 : i64, mem.size = 1024 : i64}
// CHECK-NEXT:    %r = npu.reshape %a {stream.on = @s0, mem.offset = 0 : i64, mem.size = 1024 : i64}
// CHECK-NEXT:    %s = npu.reshape %r {stream.on = @s0, mem.offset = 0 : i64, mem.size = 1024 : i64}
// CHECK-NEXT:    npu.topk %s {k = 2 : i64, stream.on = @s0, mem.offset = array<i64: 1024, -1>, mem.size = array<i64: 512, 0>}
