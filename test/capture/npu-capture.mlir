// RUN: npuir-opt %s -p npu-capture | filecheck %s

// Tests the capture-mode lowering of a limit scope around a stream switch: the side stream
// inherits the limit (npugraph_ex's set_stream_limit copied onto the switched-to stream
// and restored after), is forked from the capture stream and joined back before the
// return, and the main stream's own op outside the scope keeps the whole device.

!t = tensor<64x64xf16>
func.func @forward(%x: !t, %y: !t) -> (!t, !t) {
  %r = coreset.limit cube 4 vector 8 -> !t {
    %m = stream.switch "1" -> !t {
      %mm = npu.matmul %x, %y : (!t, !t) -> !t
      stream.yield %mm : !t
    }
    coreset.yield %m : !t
  }
  %a = npu.add %x, %y : (!t, !t) -> !t
  func.return %r, %a : !t, !t
}

// CHECK:       stream.decl @s0 "<main>"
// CHECK:       stream.decl @s1 "1"
// CHECK-LABEL: func.func @forward
// CHECK-NEXT:    %[[FORK:.*]] = sync.record on @s0
// CHECK-NEXT:    sync.wait %[[FORK]] on @s1
// CHECK-NEXT:    %mm = npu.matmul {{.*}}stream.on = @s1, coreset.cores = #coreset.cores<cube 4>
// CHECK-NEXT:    %[[JOIN:.*]] = sync.record on @s1
// CHECK-NEXT:    %a = npu.add {{.*}}stream.on = @s0, coreset.cores = #coreset.cores<vector 48>
// CHECK-NEXT:    sync.wait %[[JOIN]] on @s0
// CHECK-NEXT:    func.return
