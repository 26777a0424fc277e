// RUN: not npuir-opt %s -p 'coreset-lower{hw=910b2}' 2>&1 | filecheck %s

// Tests that two stream limits for one tag in one function are an error at
// the second (before, the later one silently won).

!t = tensor<1024x1024xf16>
func.func @twice(%x: !t) -> !t {
  coreset.stream_limit "1" vector 8
  coreset.stream_limit "1" cube 4
  %a = stream.switch "1" -> !t {
    %e = npu.exp %x : (!t) -> !t
    stream.yield %e : !t
  }
  func.return %a : !t
}

// CHECK: coreset-stream-limit-invalid.mlir:[[# @LINE - 8]]:3: error: stream "1" already has a coreset.stream_limit in @twice (the first is at {{.*}}coreset-stream-limit-invalid.mlir:[[# @LINE - 9]]:3); give each stream one limit, with both counts in it
