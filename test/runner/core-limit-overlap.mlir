// RUN: npuir-run %s --hw %S/Inputs/tiny.toml --json --entry unlimited | filecheck %s --check-prefix=SERIAL
// RUN: npuir-run %s --hw %S/Inputs/tiny.toml --json --entry limited | filecheck %s --check-prefix=OVERLAP

// Tests that core limits let two full_core_sync ops overlap: unlimited, each
// nonzero needs all 4 vector cores of `tiny` at once, so the two run one after
// the other; limited to 2 vector cores each, they fit side by side.
//
// By hand on the device of Inputs/tiny.toml (4 vector cores, f16 1 op/ns per core, HBM 1 byte/ns;
// launch 100, record 10, wait 20 ns): a nonzero of a 16x16 f16 mask has
// flops 256 and bytes 512 + 256 * 2 * 8 = 4608 (input plus the i64 index rows
// at their upper bound); its largest tensor (256x2xi64) is 4 tiles.
//   unlimited: 4 cores, share 1:   max(256 / 4, 4608)       = 4608 -> 4708 ns
//     "a": %n1 [0, 4708], record [4708, 4718]
//     "b": %n2 [4708, 9416] (the cores %n1 frees), record [9416, 9426]
//     default: wait [4718, 4738], wait [9426, 9446]          makespan 9446
//   vector 2:  2 cores, share 1/2: max(256 / 2, 4608 / 0.5) = 9216 -> 9316 ns
//     "a", "b": %n1, %n2 both [0, 9316], records [9316, 9326]
//     default: wait [9326, 9346], wait [9346, 9366]          makespan 9366
//   The limited pair ends before one limited nonzero could run twice in a row
//   (2 * 9316 = 18632, the single-stream time); with the static HBM split a
//   nonzero on half the cores takes twice as long, so the overlap saves one
//   launch (100 ns) over the serial unlimited pair.

!m = tensor<16x16xf16>
!n = tensor<?x2xi64>
module attributes {npu.target = "tiny"} {
  func.func @unlimited(%m1: !m, %m2: !m) -> (!n, !n) {
    %a = stream.switch "a" -> !n {
      %n1 = npu.nonzero %m1 : (!m) -> !n
      stream.yield %n1 : !n
    }
    %b = stream.switch "b" -> !n {
      %n2 = npu.nonzero %m2 : (!m) -> !n
      stream.yield %n2 : !n
    }
    func.return %a, %b : !n, !n
  }
  func.func @limited(%m1: !m, %m2: !m) -> (!n, !n) {
    %a = stream.switch "a" -> !n {
      %l1 = coreset.limit vector 2 -> !n {
        %n1 = npu.nonzero %m1 : (!m) -> !n
        coreset.yield %n1 : !n
      }
      stream.yield %l1 : !n
    }
    %b = stream.switch "b" -> !n {
      %l2 = coreset.limit vector 2 -> !n {
        %n2 = npu.nonzero %m2 : (!m) -> !n
        coreset.yield %n2 : !n
      }
      stream.yield %l2 : !n
    }
    func.return %a, %b : !n, !n
  }
}

// SERIAL:      "makespan_ns": 9446,
// SERIAL-NEXT: "single_stream_ns": 9416,
// SERIAL:      "critical_path": [
// SERIAL-NEXT:   {
// SERIAL-NEXT:     "rank": 0,
// SERIAL-NEXT:     "op": "'npu.nonzero' (%n1)"
// SERIAL-NEXT:   },
// SERIAL-NEXT:   {
// SERIAL-NEXT:     "rank": 0,
// SERIAL-NEXT:     "op": "'npu.nonzero' (%n2)"

// OVERLAP:      "makespan_ns": 9366,
// OVERLAP-NEXT: "single_stream_ns": 18632,
// OVERLAP:      "critical_path": [
// OVERLAP-NEXT:   {
// OVERLAP-NEXT:     "rank": 0,
// OVERLAP-NEXT:     "op": "'npu.nonzero' (%n{{[12]}})"
// OVERLAP-NEXT:   },
// OVERLAP-NEXT:   {
// OVERLAP-NEXT:     "rank": 0,
// OVERLAP-NEXT:     "op": "'sync.record'
