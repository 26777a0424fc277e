// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p 'insert-events' | filecheck %s

// Tests that insert-events leaves a function with neither work nor streams as it
// is: there is nothing to order, and no error.

// CHECK-LABEL: func.func @no_work(%x: tensor<4xf16>) -> tensor<4xf16> {
// CHECK-NEXT:    func.return %x : tensor<4xf16>
// CHECK-NEXT:  }
func.func @no_work(%x: tensor<4xf16>) -> tensor<4xf16> {
  func.return %x : tensor<4xf16>
}

// -----

// Tests that a function with work but no stream annotations is an error at the
// function, not a crash: insert-events orders streams stream-partition wrote, so the
// pass manager refuses the input before the pass runs and names the missing pass.

// CHECK: insert-events-unpartitioned.mlir:[[# @LINE + 1]]:1: error: insert-events needs stream-partition first: the input is not partitioned (@work's ops carry no stream.on)
func.func @work(%x: tensor<4xf16>) -> tensor<4xf16> {
  %y = npu.relu %x : (tensor<4xf16>) -> tensor<4xf16>
  func.return %y : tensor<4xf16>
}
