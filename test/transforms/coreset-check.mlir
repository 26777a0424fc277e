// RUN: npuir-opt %s --split-input-file -p 'stream-partition,coreset-lower,insert-events,coreset-check{hw=910b2}' 2>&1 >/dev/null | filecheck %s
// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p 'stream-partition,coreset-lower,insert-events,coreset-check{hw=910b2 strict=true}' | filecheck %s --check-prefix=STRICT

// Tests the pair rule: two limited streams that can overlap may hold 30 + 20
// vector cores, more than 910b2's 48.

!t = tensor<1024x1024xf16>
func.func @pair(%x: !t, %y: !t) -> (!t, !t) {
  coreset.stream_limit "a" vector 30
  coreset.stream_limit "b" vector 20
  %a = stream.switch "a" -> !t {
    %a0 = npu.exp %x : (!t) -> !t
    stream.yield %a0 : !t
  }
  %b = stream.switch "b" -> !t {
    %b0 = npu.exp %y : (!t) -> !t
    stream.yield %b0 : !t
  }
  func.return %a, %b : !t, !t
}

// CHECK: coreset-check.mlir:[[# @LINE - 6]]:5: warning: streams @s1 ("a") and @s2 ("b") can run at the same time and may hold 30 + 20 = 50 vector cores, but 910b2 has 48; the limits of any two streams must fit the device
// STRICT: coreset-check.mlir:[[# @LINE - 7]]:5: error: streams @s1 ("a") and @s2 ("b") can run at the same time

// -----

// Tests that limits that fit (24 + 24) and streams ordered one after the
// other (an event joins them) pass, and unlimited streams are not checked by
// the pair rule.

!t = tensor<1024x1024xf16>
func.func @fits(%x: !t) -> !t {
  coreset.stream_limit "a" vector 24
  coreset.stream_limit "b" vector 24
  coreset.stream_limit "c" vector 40
  %a = stream.switch "a" -> !t {
    %a0 = npu.exp %x : (!t) -> !t
    stream.yield %a0 : !t
  }
  %b = stream.switch "b" -> !t {
    %b0 = npu.exp %x : (!t) -> !t
    stream.yield %b0 : !t
  }
  %c = stream.switch "c" -> !t {
    %c0 = npu.add %a, %b : (!t, !t) -> !t
    stream.yield %c0 : !t
  }
  %d = stream.switch "d" -> !t {
    %d0 = npu.exp %c : (!t) -> !t
    stream.yield %d0 : !t
  }
  %e = npu.exp %x : (!t) -> !t
  func.return %d : !t
}

// CHECK-NOT: warning: streams @s{{.}} ("a") and @s{{.}} ("b")
// CHECK-NOT: ("c")
// STRICT-LABEL: func.func @fits

// -----

// Tests the hold-and-wait hazard: a nonzero (full_core_sync, all 48 vector
// cores) that can overlap an aiv all_to_all holding 24; the warning says
// which limit removes it.

!t = tensor<1024x1024xf16>
func.func @hazard(%x: !t, %m: tensor<64x64xi1>) -> (!t, tensor<?x2xi64>) {
  %a = stream.switch "comm" -> !t {
    %a0 = coreset.limit vector 24 -> !t {
      %a1 = npu.all_to_all %x {group_size = 2 : i64, mode = "aiv"} : (!t) -> !t
      coreset.yield %a1 : !t
    }
    stream.yield %a0 : !t
  }
  %n = npu.nonzero %m : (tensor<64x64xi1>) -> tensor<?x2xi64>
  func.return %a, %n : !t, tensor<?x2xi64>
}

// CHECK: coreset-check.mlir:[[# @LINE - 4]]:3: warning: hold-and-wait hazard: 'npu.nonzero' (%n) on @s0 ("default") holds up to 48 vector cores while it waits for the rest, and 'npu.all_to_all' (%a1) on @s1 ("comm"), which can run at the same time, holds up to 24: 72 > 48 on 910b2; 'coreset.limit vector 24' around it (or a stream limit) removes it

// -----

// Tests that an event ordering the nonzero after the collective removes the
// hazard: they can no longer hold cores at the same time.

!t = tensor<1024x1024xf16>
func.func @ordered(%x: !t, %m: tensor<64x64xi1>) -> (!t, tensor<?x2xi64>) {
  %a = stream.switch "comm" -> !t {
    %a1 = npu.all_to_all %x {group_size = 2 : i64, mode = "aiv"} : (!t) -> !t
    stream.yield %a1 : !t
  }
  %w = stream.wait_tensor %m after %a : tensor<64x64xi1>, !t
  %n = npu.nonzero %w : (tensor<64x64xi1>) -> tensor<?x2xi64>
  func.return %a, %n : !t, tensor<?x2xi64>
}

// CHECK-NOT: hazard
// STRICT-LABEL: func.func @ordered
