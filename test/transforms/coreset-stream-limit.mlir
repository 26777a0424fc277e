// RUN: npuir-opt %s --split-input-file -p 'coreset-lower{hw=910b2}' 2>/dev/null | filecheck %s
// RUN: npuir-opt %s --split-input-file -p 'coreset-lower{hw=910b2}' 2>&1 >/dev/null | filecheck %s --check-prefix=DIAG

// Tests that a coreset.stream_limit count of -1 (set_stream_limit's default)
// means no limit: the stream's matmul keeps the device's 24 cube cores while
// its vector count, 8, still holds.

!t = tensor<1024x1024xf16>
func.func @no_limit(%x: !t) -> (!t, !t) {
  coreset.stream_limit "1" cube -1 vector 8
  %a, %b = stream.switch "1" -> !t, !t {
    %m = npu.matmul %x, %x : (!t, !t) -> !t
    %e = npu.exp %x : (!t) -> !t
    stream.yield %m, %e : !t, !t
  }
  func.return %a, %b : !t, !t
}

// CHECK-LABEL: func.func @no_limit
// CHECK:       npu.matmul {{.*}}coreset.cores = #coreset.cores<cube 24>
// CHECK:       npu.exp {{.*}}coreset.cores = #coreset.cores<vector 8>

// -----

// Tests that a stream limit naming a tag no scope of the function uses is a
// warning: it limits nothing (most likely a typo).

!t = tensor<1024x1024xf16>
func.func @unused(%x: !t) -> !t {
  coreset.stream_limit "l" vector 8
  %a = stream.switch "1" -> !t {
    %e = npu.exp %x : (!t) -> !t
    stream.yield %e : !t
  }
  func.return %a : !t
}

// DIAG: coreset-stream-limit.mlir:[[# @LINE - 8]]:3: warning: coreset.stream_limit names stream "l", which no scope in @unused uses; it limits nothing
// CHECK-LABEL: func.func @unused

