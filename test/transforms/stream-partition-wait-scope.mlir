// RUN: npuir-opt %s -p 'stream-partition{mode=auto},coreset-lower,insert-events,sync-verify' | filecheck %s
// RUN: npuir-opt %s -p 'stream-partition{mode=opara},insert-events,sync-verify' | filecheck %s
// RUN: npuir-run %s --check --pipeline 'stream-partition{mode=auto},coreset-lower,insert-events,sync-verify' | filecheck %s --check-prefix=RAN

// Tests that a scope holding only a stream.wait_tensor (no compute op pins its
// tag) partitions in every mode: auto makes no stream for the tag, and the wait
// goes where an unscoped one goes (it crashed with KeyError: 'a').

func.func @f(%x: tensor<8xf32>, %y: tensor<8xf32>) -> tensor<8xf32> {
  %e = npu.exp %y : (tensor<8xf32>) -> tensor<8xf32>
  %w = stream.switch "a" -> tensor<8xf32> {
    %w0 = stream.wait_tensor %x after %e : tensor<8xf32>, tensor<8xf32>
    stream.yield %w0 : tensor<8xf32>
  }
  %r = npu.add %w, %x : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}
// CHECK: stream.wait_tensor %x after %e
// CHECK: npu.add
// RAN: check{{ +}}passed
