// RUN: npuir-opt %s | filecheck %s
// RUN: npuir-opt %s --print-op-generic | npuir-opt | filecheck %s
// RUN: npuir-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Every `sync` op in its custom syntax: printing the parsed IR reproduces it,
// and so does printing the generic form and parsing that back.

module {
  stream.decl @s0 "<main>" priority 0
  stream.decl @s1 "1" priority 0

// Tests a record without a physical id and its wait on another stream.
// CHECK-LABEL: func.func @record_wait
// CHECK-NEXT:    %a = npu.relu %x {stream.on = @s0} : (tensor<8xf16>) -> tensor<8xf16>
// CHECK-NEXT:    %e0 = sync.record on @s0
// CHECK-NEXT:    sync.wait %e0 on @s1
// CHECK-NEXT:    %b = npu.exp %a {stream.on = @s1} : (tensor<8xf16>) -> tensor<8xf16>
// CHECK-NEXT:    %e1 = sync.record on @s1
// CHECK-NEXT:    sync.wait %e1 on @s0
// CHECK-NEXT:    func.return %b : tensor<8xf16>
// GENERIC-LABEL: "func.func"() <{sym_name = "record_wait"
// GENERIC:       %e0 = "sync.record"() <{stream = @s0}> : () -> !sync.event
// GENERIC-NEXT:  "sync.wait"(%e0) <{stream = @s1}> : (!sync.event) -> ()
  func.func @record_wait(%x: tensor<8xf16>) -> tensor<8xf16> {
    %a = npu.relu %x {stream.on = @s0} : (tensor<8xf16>) -> tensor<8xf16>
    %e0 = sync.record on @s0
    sync.wait %e0 on @s1
    %b = npu.exp %a {stream.on = @s1} : (tensor<8xf16>) -> tensor<8xf16>
    %e1 = sync.record on @s1
    sync.wait %e1 on @s0
    func.return %b : tensor<8xf16>
  }

// Tests records that carry physical event ids (one id reused), and a wait
// with an attribute dictionary; several waits may share one record.
// CHECK-LABEL: func.func @event_ids
// CHECK-NEXT:    %e0 = sync.record on @s0 {event_id = 0 : i64}
// CHECK-NEXT:    sync.wait %e0 on @s1
// CHECK-NEXT:    sync.wait %e0 on @s1 {note = "again"}
// CHECK-NEXT:    %e1 = sync.record on @s1 {event_id = 7 : i64}
// CHECK-NEXT:    sync.wait %e1 on @s0
// CHECK-NEXT:    %e2 = sync.record on @s0 {event_id = 0 : i64}
// CHECK-NEXT:    func.return
// GENERIC-LABEL: "func.func"() <{sym_name = "event_ids"
// GENERIC:       %e1 = "sync.record"() <{stream = @s1}> {event_id = 7 : i64} : () -> !sync.event
  func.func @event_ids() {
    %e0 = sync.record on @s0 {event_id = 0 : i64}
    sync.wait %e0 on @s1
    sync.wait %e0 on @s1 {note = "again"}
    %e1 = sync.record on @s1 {event_id = 7 : i64}
    sync.wait %e1 on @s0
    %e2 = sync.record on @s0 {event_id = 0 : i64}
    func.return
  }
}
