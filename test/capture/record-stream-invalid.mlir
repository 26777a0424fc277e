// RUN: npuir-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Tests that stream.record_stream must name a declared stream.

!t = tensor<8x8xf16>
stream.decl @s0 "<main>" priority 0
func.func @undeclared(%x: !t) -> !t {
  %a = npu.relu %x {stream.on = @s0, stream.record_stream = [@s9]} : (!t) -> !t
  func.return %a : !t
}

// CHECK: record-stream-invalid.mlir:[[# @LINE - 4]]:3: error: 'npu.relu' op 'stream.record_stream' names stream @s9, which no 'stream.decl' declares

// -----

// Tests that stream.record_stream does not name the op's own stream.

!t = tensor<8x8xf16>
stream.decl @s0 "<main>" priority 0
func.func @own(%x: !t) -> !t {
  %a = npu.relu %x {stream.on = @s0, stream.record_stream = [@s0]} : (!t) -> !t
  func.return %a : !t
}

// CHECK: record-stream-invalid.mlir:[[# @LINE - 4]]:3: error: 'npu.relu' op 'stream.record_stream' lists the op's own stream @s0

// -----

// Tests that stream.record_stream is a list of stream symbols.

!t = tensor<8x8xf16>
stream.decl @s0 "<main>" priority 0
func.func @form(%x: !t) -> !t {
  %a = npu.relu %x {stream.on = @s0, stream.record_stream = 3} : (!t) -> !t
  func.return %a : !t
}

// CHECK: record-stream-invalid.mlir:[[# @LINE - 4]]:3: error: 'npu.relu' op 'stream.record_stream' must list streams as [@symbol, ...], got 3 : i64
