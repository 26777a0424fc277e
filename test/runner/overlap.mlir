// RUN: npuir-run %s --hw %S/Inputs/tiny.toml --json | filecheck %s

// Tests that two independent ops on two streams run at the same time: the
// makespan is the longer op plus the join's event overheads, not the sum.
//
// By hand on the device of Inputs/tiny.toml (4 vector cores, 1 op/ns per core for f16, HBM 1 byte/ns,
// 1 KiB vector tiles; launch 100, record 10, wait 20 ns):
//   %x, add of 32x32 f16: flops 1024, bytes 3 * 2048 = 6144;
//     vector_tiles(2048 bytes) = 2, so 2 of the 4 cores, HBM share 2/4:
//     max(1024 / 2, 6144 / 0.5) = 12288 ns, + launch 100 = 12388 ns
//     (timing.py: "on 2 cores with static_hbm_share 0.5 ... 12288 ns").
//   %y0, relu of 32x32 f16: flops 1024, bytes 2 * 2048 = 4096; 2 cores, share
//     2/4: max(512, 4096 / 0.5) = 8192, + 100 = 8292 ns.
//   Both get their 2 cores at t = 0:
//     @s1: %y0 [0, 8292], record [8292, 8302]
//     @s0: %x [0, 12388], wait [12388, 12408] (the record has fired), return
//   makespan = 12388 + 20 = 12408 (the sum of the two ops is 20680).
//   Busy: @s0 12388 + 20 = 12408, @s1 8292 + 10 = 8302.
//   Single stream (scopes ignored, no events): 12388 + 8292 = 20680 ns.

!t = tensor<32x32xf16>
module attributes {npu.target = "tiny"} {
  func.func @overlap(%a: !t, %b: !t) -> (!t, !t) {
    %x = npu.add %a, %a : (!t, !t) -> !t
    %y = stream.switch "1" -> !t {
      %y0 = npu.relu %b : (!t) -> !t
      stream.yield %y0 : !t
    }
    func.return %x, %y : !t, !t
  }
}

// CHECK:      "device": "tiny",
// CHECK:      "makespan_ns": 12408,
// CHECK-NEXT: "single_stream_ns": 20680,
// CHECK:      "stream": "<main>",
// CHECK-NEXT: "symbol": "s0",
// CHECK-NEXT: "busy_ns": 12408
// CHECK:      "stream": "1",
// CHECK-NEXT: "symbol": "s1",
// CHECK-NEXT: "busy_ns": 8302
// CHECK:      "critical_path": [
// CHECK-NEXT:   {
// CHECK-NEXT:     "rank": 0,
// CHECK-NEXT:     "op": "'npu.add' (%x)"
// CHECK-NEXT:   },
// CHECK-NEXT:   {
// CHECK-NEXT:     "rank": 0,
// CHECK-NEXT:     "op": "'sync.wait'"
// CHECK:      "races": [],
// CHECK:      "deadlock": null
