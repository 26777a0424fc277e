// RUN: npuir-opt %s --split-input-file -p 'coreset-lower{hw=910b2}' | filecheck %s
// RUN: npuir-opt %s --split-input-file -p 'stream-partition,coreset-lower{hw=910b2}' | filecheck %s --check-prefix=AFTER

// Tests the precedence of each count on its own: op scope > stream limit >
// module global > device, with an op scope that gives only one count
// leaving the other to the next level.

!t = tensor<256x256xf16>
module attributes {coreset.global = #coreset.cores<cube 20, vector 40>} {
  func.func @precedence(%x: !t) -> (!t, !t, !t, !t) {
    coreset.stream_limit "1" cube 3 vector 8
    %a = npu.matmul %x, %x : (!t, !t) -> !t
    %b = npu.exp %x : (!t) -> !t
    %c, %d = stream.switch "1" -> !t, !t {
      %c0 = npu.matmul %x, %x : (!t, !t) -> !t
      %d0 = coreset.limit vector 2 -> !t {
        %e = npu.exp %x : (!t) -> !t
        coreset.yield %e : !t
      }
      stream.yield %c0, %d0 : !t, !t
    }
    func.return %a, %b, %c, %d : !t, !t, !t, !t
  }
}

// CHECK-LABEL: func.func @precedence
// CHECK-NEXT:    %a = npu.matmul %x, %x {coreset.cores = #coreset.cores<cube 20>}
// CHECK-NEXT:    %b = npu.exp %x {coreset.cores = #coreset.cores<vector 40>}
// CHECK-NEXT:    %c, %d = stream.switch "1"
// CHECK-NEXT:      %c0 = npu.matmul %x, %x {coreset.cores = #coreset.cores<cube 3>}
// CHECK-NEXT:      %e = npu.exp %x {coreset.cores = #coreset.cores<vector 2>}
// CHECK-NEXT:      stream.yield %c0, %e
// CHECK-NOT:     coreset.stream_limit
// CHECK-NOT:     coreset.limit

// AFTER-LABEL: func.func @precedence
// AFTER-NEXT:    %a = npu.matmul %x, %x {stream.on = @s0, coreset.cores = #coreset.cores<cube 20>}
// AFTER-NEXT:    %b = npu.exp %x {stream.on = @s0, coreset.cores = #coreset.cores<vector 40>}
// AFTER-NEXT:    %c0 = npu.matmul %x, %x {stream.on = @s1, coreset.cores = #coreset.cores<cube 3>}
// AFTER-NEXT:    %e = npu.exp %x {stream.on = @s1, coreset.cores = #coreset.cores<vector 2>}

// -----

// Tests that limits are lexical: a stream.switch nested in a limit scope keeps
// the limit, the innermost scope wins per count, and an op without limits gets
// the device's counts; sdma collectives use no cores, aiv ones vector cores.

!t = tensor<256x256xf16>
func.func @nesting(%x: !t) -> (!t, !t, !t, !t) {
  %r:2 = coreset.limit cube 6 vector 12 -> !t, !t {
    %s = stream.switch "2" -> !t {
      %m = npu.matmul %x, %x : (!t, !t) -> !t
      stream.yield %m : !t
    }
    %v = coreset.limit vector 4 -> !t {
      %w = npu.matmul %s, %x : (!t, !t) -> !t
      coreset.yield %w : !t
    }
    coreset.yield %s, %v : !t, !t
  }
  %sd = npu.all_reduce %x {group_size = 2 : i64} : (!t) -> !t
  %av = npu.all_reduce %x {group_size = 2 : i64, mode = "aiv"} : (!t) -> !t
  func.return %r#0, %r#1, %sd, %av : !t, !t, !t, !t
}

// CHECK-LABEL: func.func @nesting
// CHECK-NEXT:    %s = stream.switch "2"
// CHECK-NEXT:      %m = npu.matmul %x, %x {coreset.cores = #coreset.cores<cube 6>}
// CHECK:         %w = npu.matmul %s, %x {coreset.cores = #coreset.cores<cube 6>}
// CHECK-NEXT:    %sd = npu.all_reduce %x {group_size = 2 : i64} :
// CHECK-NEXT:    %av = npu.all_reduce %x {group_size = 2 : i64, mode = "aiv", coreset.cores = #coreset.cores<vector 48>}
