// RUN: npuir-run %s --hw %S/Inputs/tiny.toml --json | filecheck %s

// Tests that a wait delays its stream: the add on stream "1" waits for the add
// on the default stream, so the two no longer overlap (without the
// wait_tensor both would run [0, 12388] and the program end at
// 12388 + 10 + 20 = 12418 ns).
//
// By hand on the device of Inputs/tiny.toml: each 32x32 f16 add takes 2 of the 4 vector cores and
// 12288 + launch 100 = 12388 ns (see overlap.mlir).  insert-events turns the
// wait_tensor into record-on-@s0 / wait-on-@s1 and joins @s1 before return:
//   @s0: %x [0, 12388], record [12388, 12398]
//   @s1: wait [12398, 12418], %y0 [12418, 24806], record [24806, 24816]
//   @s0: wait [24816, 24836], return
//   makespan = 2 * 12388 + 2 * (10 + 20) = 24836.
//   Busy: @s0 12388 + 10 + 20 = 12418, @s1 20 + 12388 + 10 = 12418.
//   Single stream: 2 * 12388 = 24776 ns, 60 ns of events faster.

!t = tensor<32x32xf16>
module attributes {npu.target = "tiny"} {
  func.func @delayed(%a: !t, %b: !t) -> (!t, !t) {
    %x = npu.add %a, %a : (!t, !t) -> !t
    %y = stream.switch "1" -> !t {
      %w = stream.wait_tensor %b after %x : !t, !t
      %y0 = npu.add %w, %w : (!t, !t) -> !t
      stream.yield %y0 : !t
    }
    func.return %x, %y : !t, !t
  }
}

// CHECK:      "makespan_ns": 24836,
// CHECK-NEXT: "single_stream_ns": 24776,
// CHECK:      "stream": "<main>",
// CHECK-NEXT: "symbol": "s0",
// CHECK-NEXT: "busy_ns": 12418
// CHECK:      "stream": "1",
// CHECK-NEXT: "symbol": "s1",
// CHECK-NEXT: "busy_ns": 12418
// CHECK:      "critical_path": [
// CHECK:      "op": "'npu.add' (%x)"
// CHECK:      "op": "'sync.record'
// CHECK:      "op": "'sync.wait'"
// CHECK:      "op": "'npu.add' (%y0)"
// CHECK:      "waits_executed": 2,
// CHECK-NEXT: "records_executed": 2,
