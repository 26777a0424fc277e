// RUN: npuir-opt %s -p 'stream-partition{mode=opara},coreset-lower,insert-events,sync-verify' | filecheck %s
// RUN: npuir-opt %s -p 'stream-partition{mode=auto},coreset-lower,insert-events,sync-verify' | filecheck %s
// RUN: npuir-run %s --hw tiny --check --pipeline 'stream-partition{mode=opara},coreset-lower,insert-events,sync-verify' | filecheck %s --check-prefix=RAN

// Tests that a coreset.limit scope holding only a stream.wait_tensor keeps the
// written issue order in the modes that reorder: opara reissued the compute
// ops around the scope, left it in front of %v1, and blamed the user's line
// with "uses %v1 before it is defined".

func.func @f(%x: tensor<8xf32>, %y: tensor<8xf32>) -> tensor<8xf32> {
  %v1 = npu.exp %y : (tensor<8xf32>) -> tensor<8xf32>
  %v2 = npu.relu %x : (tensor<8xf32>) -> tensor<8xf32>
  %w = coreset.limit vector 2 -> tensor<8xf32> {
    %w0 = stream.wait_tensor %v1 after %v2 : tensor<8xf32>, tensor<8xf32>
    coreset.yield %w0 : tensor<8xf32>
  }
  %r = npu.add %w, %v2 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}
// CHECK: %v1 = npu.exp
// CHECK: %v2 = npu.relu
// CHECK: stream.wait_tensor %v1 after %v2
// RAN: check{{ +}}passed
