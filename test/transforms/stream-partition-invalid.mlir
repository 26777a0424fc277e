// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p stream-partition | filecheck %s
// RUN: not npuir-opt %s -p 'stream-partition{mode=sideways}' 2>&1 | filecheck %s --check-prefix=MODE

// MODE: error: bad option for pass 'stream-partition': option 'mode' expects one of: user, single, {{.*}}, got 'sideways'

// Tests that one tag given two priorities is an error at the second scope.

!t = tensor<8x8xf16>
func.func @two_priorities(%x: !t) -> !t {
  %a = stream.switch "1" priority 1 -> !t {
    %b = npu.exp %x : (!t) -> !t
    stream.yield %b : !t
  }
  %c = stream.switch "1" priority 3 -> !t {
    %d = npu.exp %a : (!t) -> !t
    stream.yield %d : !t
  }
  func.return %c : !t
}

// CHECK: stream-partition-invalid.mlir:[[# @LINE - 7]]:3: error: stream "1" is given priority 3 here but 1 elsewhere

// -----

// Tests that a wait_tensor creating a cycle (its dependency is computed from
// its own result) is reported where the cycle closes.

!t = tensor<8x8xf16>
func.func @cycle(%x: !t) -> !t {
  %w = stream.wait_tensor %x after %b : !t, !t
  %b = npu.exp %w : (!t) -> !t
  func.return %b : !t
}

// CHECK: stream-partition-invalid.mlir:[[# @LINE - 5]]:3: error: 'stream.wait_tensor' op uses %b before it is defined

// -----

// Tests that giving the default stream a priority names what it conflicts
// with: the default stream's fixed priority 0, not a scope "elsewhere".

!t = tensor<8x8xf16>
func.func @default_priority(%x: !t) -> !t {
  %a = stream.switch "default" priority 5 -> !t {
    %b = npu.exp %x : (!t) -> !t
    stream.yield %b : !t
  }
  func.return %a : !t
}

// CHECK: stream-partition-invalid.mlir:[[# @LINE - 7]]:3: error: stream "default" is given priority 5 here, but the default stream's priority is fixed at 0; drop the priority or use another tag
