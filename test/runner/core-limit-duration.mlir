// RUN: npuir-run %s --hw %S/Inputs/tiny.toml --json --entry unlimited | filecheck %s --check-prefix=FULL
// RUN: npuir-run %s --hw %S/Inputs/tiny.toml --json --entry two | filecheck %s --check-prefix=TWO
// RUN: npuir-run %s --hw %S/Inputs/tiny.toml --json --entry one | filecheck %s --check-prefix=ONE

// Tests that coreset.limit around a vector op changes its duration: fewer
// cores do its arithmetic and, with the static HBM split, get a smaller share
// of the bandwidth.
//
// By hand on the device of Inputs/tiny.toml (4 vector cores, 1 op/ns per core for f16, HBM 1 byte/ns,
// launch 100 ns): the add is 64x32 f16 = 2048 elements, flops 2048, bytes
// 3 * 4096 = 12288, vector_tiles(4096) = 4, so it can use all 4 cores.
//   unlimited, 4 cores, share 4/4: max(2048 / 4, 12288 / 1)   = 12288 -> 12388 ns
//   vector 2,  2 cores, share 2/4: max(2048 / 2, 12288 / 0.5) = 24576 -> 24676 ns
//   vector 1,  1 core,  share 1/4: max(2048 / 1, 12288 / 0.25) = 49152 -> 49252 ns
// One op on the default stream: the makespan is its duration.

!t = tensor<64x32xf16>
module attributes {npu.target = "tiny"} {
  func.func @unlimited(%a: !t) -> !t {
    %x = npu.add %a, %a : (!t, !t) -> !t
    func.return %x : !t
  }
  func.func @two(%a: !t) -> !t {
    %r = coreset.limit vector 2 -> !t {
      %x = npu.add %a, %a : (!t, !t) -> !t
      coreset.yield %x : !t
    }
    func.return %r : !t
  }
  func.func @one(%a: !t) -> !t {
    %r = coreset.limit vector 1 -> !t {
      %x = npu.add %a, %a : (!t, !t) -> !t
      coreset.yield %x : !t
    }
    func.return %r : !t
  }
}

// FULL: "makespan_ns": 12388,
// FULL: "vector": 1.0

// TWO: "makespan_ns": 24676,
// TWO: "vector": 0.5

// ONE: "makespan_ns": 49252,
// ONE: "vector": 0.25
