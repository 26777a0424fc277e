// The core-limiting seed's two-card deadlock, on 910b2 (48 vector cores).
//
// Each rank runs a reduce_scatter (aiv, limited to 16 vector cores, group
// "rs") and an all_to_all (aiv, limited to 24, group "dc") on streams of their
// own, and a nonzero on a third stream.  The ranks issue the collectives in
// opposite order, with the nonzero issued between them.  On each card the
// nonzero (full_core_sync: it needs all 48 vector cores at once) grabs what
// the first collective leaves free and waits for the rest; that collective is
// waiting for its peer on the other card, whose cores are held the same way.
//
//   npuir-run examples/core_limit_deadlock.mlir --entries rank0,rank1   -> deadlock, exit 3
//   npuir-opt examples/core_limit_deadlock.mlir -p npu-default          -> hazard warnings
//
// examples/core_limit_fixed.mlir limits the nonzero to 8 vector cores and runs;
// `npuir-run ... --pipeline "stream-partition,coreset-partition,npu-default"`
// chooses such limits itself.
!x = tensor<4096x1024xf16>
!h = tensor<2048x1024xf16>
!m = tensor<64x512xf16>
module attributes {npu.target = "910b2"} {
  func.func @rank0(%x: !x, %y: !x, %mask: !m) -> (!h, !x, tensor<?x2xi64>) {
    %rs = stream.switch "rs" -> !h {
      %r = coreset.limit vector 16 -> !h {
        %r0 = npu.reduce_scatter %x {group_size = 2 : i64, mode = "aiv", group = "rs"} : (!x) -> !h
        coreset.yield %r0 : !h
      }
      stream.yield %r : !h
    }
    %nz = stream.switch "nz" -> tensor<?x2xi64> {
      %n = npu.nonzero %mask : (!m) -> tensor<?x2xi64>
      stream.yield %n : tensor<?x2xi64>
    }
    %dc = stream.switch "dc" -> !x {
      %d = coreset.limit vector 24 -> !x {
        %d0 = npu.all_to_all %y {group_size = 2 : i64, mode = "aiv", group = "dc"} : (!x) -> !x
        coreset.yield %d0 : !x
      }
      stream.yield %d : !x
    }
    func.return %rs, %dc, %nz : !h, !x, tensor<?x2xi64>
  }
  func.func @rank1(%x: !x, %y: !x, %mask: !m) -> (!h, !x, tensor<?x2xi64>) {
    %dc = stream.switch "dc" -> !x {
      %d = coreset.limit vector 24 -> !x {
        %d0 = npu.all_to_all %y {group_size = 2 : i64, mode = "aiv", group = "dc"} : (!x) -> !x
        coreset.yield %d0 : !x
      }
      stream.yield %d : !x
    }
    %nz = stream.switch "nz" -> tensor<?x2xi64> {
      %n = npu.nonzero %mask : (!m) -> tensor<?x2xi64>
      stream.yield %n : tensor<?x2xi64>
    }
    %rs = stream.switch "rs" -> !h {
      %r = coreset.limit vector 16 -> !h {
        %r0 = npu.reduce_scatter %x {group_size = 2 : i64, mode = "aiv", group = "rs"} : (!x) -> !h
        coreset.yield %r0 : !h
      }
      stream.yield %r : !h
    }
    func.return %rs, %dc, %nz : !h, !x, tensor<?x2xi64>
  }
}
