// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p 'stream-partition,coreset-partition' | filecheck %s --check-prefix=PART
// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p 'coreset-check' | filecheck %s --check-prefix=UNPART
// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p 'sync-verify' | filecheck %s --check-prefix=UNPART-SYNC
// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p 'coreset-partition' | filecheck %s --check-prefix=UNPART-PART

// Tests that coreset-partition will not override the user's own limits: a
// nonzero limited to 40 vector cores beside an aiv all_to_all limited to 24
// (64 > 48) has no flexible op to limit, which is an error at the nonzero.
// The same input before stream-partition is rejected by the passes that need
// streams.

!t = tensor<1024x1024xf16>
func.func @user_limits(%x: !t, %m: tensor<64x64xi1>) -> (!t, tensor<?x2xi64>) {
  %a = stream.switch "comm" -> !t {
    %a0 = coreset.limit vector 24 -> !t {
      %a1 = npu.all_to_all %x {group_size = 2 : i64, mode = "aiv"} : (!t) -> !t
      coreset.yield %a1 : !t
    }
    stream.yield %a0 : !t
  }
  %n = coreset.limit vector 40 -> tensor<?x2xi64> {
    %n0 = npu.nonzero %m : (tensor<64x64xi1>) -> tensor<?x2xi64>
    coreset.yield %n0 : tensor<?x2xi64>
  }
  func.return %a, %n : !t, tensor<?x2xi64>
}

// PART: coreset-invalid.mlir:[[# @LINE - 6]]:5: error: coreset-partition cannot remove this hazard: every op involved has a limit the user set; lower one of them
// UNPART: coreset-invalid.mlir:[[# @LINE - 16]]:1: error: coreset-check needs stream-partition first: the input is not partitioned (@user_limits's ops carry no stream.on)
// UNPART-SYNC: coreset-invalid.mlir:[[# @LINE - 17]]:1: error: sync-verify needs stream-partition first: the input is not partitioned (@user_limits's ops carry no stream.on)
// UNPART-PART: coreset-invalid.mlir:[[# @LINE - 18]]:1: error: coreset-partition needs stream-partition first: the input is not partitioned (@user_limits's ops carry no stream.on)
