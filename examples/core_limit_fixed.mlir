// The core-limiting seed's two-card scenario, made safe by hand: the nonzero
// is limited to 8 vector cores (TorchAir: limit_core_num), so on each card it
// fits next to both collectives (16 + 8 + 24 = 48) and never holds cores a
// collective needs.
//
//   npuir-run examples/core_limit_fixed.mlir --entries rank0,rank1   -> completes
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
      %n = coreset.limit vector 8 -> tensor<?x2xi64> {
        %n0 = npu.nonzero %mask : (!m) -> tensor<?x2xi64>
        coreset.yield %n0 : tensor<?x2xi64>
      }
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
      %n = coreset.limit vector 8 -> tensor<?x2xi64> {
        %n0 = npu.nonzero %mask : (!m) -> tensor<?x2xi64>
        coreset.yield %n0 : tensor<?x2xi64>
      }
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
