// RUN: npuir-run %s --hw %S/Inputs/tiny.toml --json | filecheck %s

// Tests that a full_core_sync op (npu.nonzero) holds the cores it has while
// it waits for the rest, so an ordinary op issued after it cannot use them:
// %z could run at t = 0 on the 2 cores %x leaves free, but the nonzero takes
// those 2 first, holds them until %x ends, and %z runs last.
//
// By hand on the device of Inputs/tiny.toml (4 vector cores; launch 100, record 10, wait 20 ns):
//   adds (32x32 f16): 2 tiles, 2 cores, 12288 + 100 = 12388 ns (overlap.mlir).
//   nonzero of a 16x16 f16 mask: flops 256; bytes = 512 in + 256 * 2 * 8
//   (upper bound of the i64 index rows) = 4608; its largest tensor (256x2xi64,
//   4096 bytes) is 4 tiles; it holds all 4 cores, share 1:
//   max(256 / 4, 4608) = 4608, + 100 = 4708 ns.
//   t = 0:     %x takes 2 cores [0, 12388]; %n takes the other 2 and holds them
//   t = 12388: %x frees 2, %n has 4 and runs [12388, 17096], record [17096, 17106]
//   t = 17096: %z gets 2 cores [17096, 29484], record [29484, 29494]
//   default:   wait [17106, 17126], wait [29494, 29514]
//   makespan 29514 (were %n not holding, %z would end at 12388 and the
//   program at 17096 + 10 + 20 = 17126).

!v = tensor<32x32xf16>
!m = tensor<16x16xf16>
module attributes {npu.target = "tiny"} {
  func.func @holds(%a: !v, %mask: !m, %c: !v) -> (!v, tensor<?x2xi64>, !v) {
    %x = npu.add %a, %a : (!v, !v) -> !v
    %nz = stream.switch "nz" -> tensor<?x2xi64> {
      %n = npu.nonzero %mask : (!m) -> tensor<?x2xi64>
      stream.yield %n : tensor<?x2xi64>
    }
    %zz = stream.switch "c" -> !v {
      %z = npu.add %c, %c : (!v, !v) -> !v
      stream.yield %z : !v
    }
    func.return %x, %nz, %zz : !v, tensor<?x2xi64>, !v
  }
}

// CHECK:      "makespan_ns": 29514,
// CHECK:      "stream": "nz",
// CHECK-NEXT: "symbol": "s1",
// CHECK-NEXT: "busy_ns": 4718
// CHECK:      "stream": "c",
// CHECK-NEXT: "symbol": "s2",
// CHECK-NEXT: "busy_ns": 12398
// CHECK:      "critical_path": [
// CHECK:      "op": "'npu.add' (%x)"
// CHECK:      "op": "'npu.nonzero' (%n)"
// CHECK:      "op": "'npu.add' (%z)"
