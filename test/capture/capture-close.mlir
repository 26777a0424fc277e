// RUN: npuir-opt %s --split-input-file -p capture-close 2>/dev/null | filecheck %s
// RUN: npuir-opt %s --split-input-file -p capture-close 2>&1 >/dev/null | filecheck %s --check-prefix=WARN

// Tests that a side stream whose work needs nothing from the capture stream is forked
// (a record on the capture stream first, a wait heading the side stream), that a stream
// insert-events joined is left as it is, and that a value read on another stream is
// marked for record_stream.

!t = tensor<8x8xf16>
stream.decl @s0 "<main>" priority 0
stream.decl @s1 "1" priority 0
func.func @fork(%x: !t) -> (!t, !t) {
  %a = npu.relu %x {stream.on = @s0} : (!t) -> !t
  %b = npu.exp %x {stream.on = @s1} : (!t) -> !t
  %e = sync.record on @s1 {event_id = 0 : i64}
  sync.wait %e on @s0
  func.return %a, %b : !t, !t
}

// CHECK-LABEL: func.func @fork
// CHECK-NEXT:    %[[FORK:.*]] = sync.record on @s0 {event_id = 1 : i64}
// CHECK-NEXT:    %a = npu.relu
// CHECK-NEXT:    sync.wait %[[FORK]] on @s1
// CHECK-NEXT:    %b = npu.exp %x {stream.on = @s1, stream.record_stream = [@s0]}
// CHECK-NEXT:    %e = sync.record on @s1
// CHECK-NEXT:    sync.wait %e on @s0
// CHECK-NEXT:    func.return

// -----

// Tests that a side stream whose last task is a kernel gets a join: a record after it and
// a wait on the capture stream before the return.

!t = tensor<8x8xf16>
stream.decl @s0 "<main>" priority 0
stream.decl @s1 "1" priority 0
func.func @join(%x: !t) -> !t {
  %fork = sync.record on @s0 {event_id = 0 : i64}
  sync.wait %fork on @s1
  %a = npu.relu %x {stream.on = @s0} : (!t) -> !t
  %b = npu.exp %x {stream.on = @s1} : (!t) -> !t
  func.return %a : !t
}

// CHECK-LABEL: func.func @join
// CHECK:         %b = npu.exp
// CHECK-NEXT:    %[[JOIN:.*]] = sync.record on @s1 {event_id = 1 : i64}
// CHECK-NEXT:    sync.wait %[[JOIN]] on @s0
// CHECK-NEXT:    func.return %a

// -----

// Tests that in capture mode a TBE kernel's vector limit is lifted to the device's (it
// takes none there), with a warning, while an Ascend C kernel keeps its limit.

!t = tensor<8x8xf16>
stream.decl @s0 "<main>" priority 0
func.func @tbe(%x: !t) -> (!t, !t) {
  %a = npu.relu %x {stream.on = @s0, npu.kernel = "tbe", coreset.cores = #coreset.cores<vector 8>} : (!t) -> !t
  %b = npu.exp %x {stream.on = @s0, coreset.cores = #coreset.cores<vector 8>} : (!t) -> !t
  func.return %a, %b : !t, !t
}

// WARN:  capture-close.mlir:[[# @LINE - 5]]:3: warning: the core limit (vector 8) has no effect on 'npu.relu' in capture mode: it is a TBE kernel, and npugraph_ex limits Ascend C kernels only (limit_cores.md)
// CHECK-LABEL: func.func @tbe
// CHECK:         %a = npu.relu {{.*}}coreset.cores = #coreset.cores<vector 48>
// CHECK:         %b = npu.exp {{.*}}coreset.cores = #coreset.cores<vector 8>
