// RUN: npuir-opt %s --split-input-file -p 'stream-partition,coreset-lower,insert-events,coreset-check{hw=910b2 pair-rule=warning}' 2>&1 >/dev/null | filecheck %s
// RUN: not npuir-opt %s --split-input-file -p 'stream-partition,coreset-lower,insert-events,coreset-check{hw=910b2}' 2>&1 >/dev/null | filecheck %s --check-prefix=DEFAULT
// RUN: npuir-opt %s --split-input-file --verify-diagnostics -p 'stream-partition,coreset-lower,insert-events,coreset-check{hw=910b2 strict=true}' | filecheck %s --check-prefix=STRICT

// Tests the pair rule (seed 003: the cores of any two streams together must
// not exceed the device's): two limited streams that can overlap, limited to
// 30 + 20 vector cores, more than 910b2's 48.  The diagnostic names both
// streams, their limits, the engine and the device total, and points at the
// limit ops.

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

// CHECK: coreset-check.mlir:[[# @LINE - 6]]:5: warning: streams @s1 ("a") and @s2 ("b") can run at the same time, and their vector core limits, @s1 ("a") 30 and @s2 ("b") 20, add up to 50, more than the 48 vector cores of 910b2; the cores of any two streams together must fit the device (limits: @s1 ("a") set at {{.*}}coreset-check.mlir:[[# @LINE - 10]]:5; @s2 ("b") set at {{.*}}coreset-check.mlir:[[# @LINE - 6]]:5)
// STRICT: coreset-check.mlir:[[# @LINE - 7]]:5: error: streams @s1 ("a") and @s2 ("b") can run at the same time
// DEFAULT: coreset-check.mlir:[[# @LINE - 8]]:5: error: streams @s1 ("a") and @s2 ("b") can run at the same time, and their vector core limits, @s1 ("a") 30 and @s2 ("b") 20, add up to 50, more than the 48 vector cores of 910b2

// -----

// Tests that the rule is on the configured limits, not on what the ops can
// use: 30 + 30 vector cores on ops too small to use more than one core each
// still break it.

!t = tensor<64xf16>
func.func @small_ops(%x: !t) -> (!t, !t) {
  %a = stream.switch "a" -> !t {
    %a0 = coreset.limit vector 30 -> !t {
      %a1 = npu.exp %x : (!t) -> !t
      coreset.yield %a1 : !t
    }
    stream.yield %a0 : !t
  }
  %b = stream.switch "b" -> !t {
    %b0 = coreset.limit vector 30 -> !t {
      %b1 = npu.exp %x : (!t) -> !t
      coreset.yield %b1 : !t
    }
    stream.yield %b0 : !t
  }
  func.return %a, %b : !t, !t
}

// CHECK: coreset-check.mlir:[[# @LINE - 8]]:7: warning: streams @s1 ("a") and @s2 ("b") can run at the same time, and their vector core limits, @s1 ("a") 30 and @s2 ("b") 30, add up to 60, more than the 48 vector cores of 910b2

// -----

// Tests that an unlimited stream counts as the whole device beside a limited
// one (40 + 48 > 48), and that a stream limit equal to the device's count is
// a limit like any other (48 + 40).

!t = tensor<1024x1024xf16>
func.func @beside_unlimited(%x: !t) -> (!t, !t) {
  coreset.stream_limit "a" vector 40
  %a = stream.switch "a" -> !t {
    %a0 = npu.exp %x : (!t) -> !t
    stream.yield %a0 : !t
  }
  %b = stream.switch "b" -> !t {
    %b0 = npu.exp %x : (!t) -> !t
    stream.yield %b0 : !t
  }
  func.return %a, %b : !t, !t
}

// CHECK: coreset-check.mlir:[[# @LINE - 10]]:5: warning: streams @s1 ("a") and @s2 ("b") can run at the same time, and their vector core limits, @s1 ("a") 40 and @s2 ("b") 48 (the whole device), add up to 88, more than the 48 vector cores of 910b2

// -----

!t = tensor<1024x1024xf16>
func.func @at_the_device(%x: !t) -> (!t, !t) {
  coreset.stream_limit "a" vector 48
  coreset.stream_limit "b" vector 40
  %a = stream.switch "a" -> !t {
    %a0 = npu.exp %x : (!t) -> !t
    stream.yield %a0 : !t
  }
  %b = stream.switch "b" -> !t {
    %b0 = npu.exp %x : (!t) -> !t
    stream.yield %b0 : !t
  }
  func.return %a, %b : !t, !t
}

// CHECK: coreset-check.mlir:[[# @LINE - 6]]:5: warning: streams @s1 ("a") and @s2 ("b") can run at the same time, and their vector core limits, @s1 ("a") 48 (the whole device) and @s2 ("b") 40, add up to 88

// -----

// Tests that limits that fit (24 + 24) and streams ordered one after the
// other (an event joins them) pass, and that two unlimited streams are not
// checked by the pair rule (the hazard check below covers them).

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
  func.return %d : !t
}

// CHECK-NOT: warning: streams @s{{.}} ("{{[abcd]}}")
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

// The aiv all_to_all's stream is limited to 24 and the default stream is not:
// 24 + 48 also breaks the pair rule.
// CHECK: coreset-check.mlir:[[# @LINE - 11]]:7: warning: streams @s0 ("<main>") and @s1 ("comm") can run at the same time, and their vector core limits, @s0 ("<main>") 48 (the whole device) and @s1 ("comm") 24, add up to 72
// CHECK: coreset-check.mlir:[[# @LINE - 7]]:3: warning: hold-and-wait hazard: 'npu.nonzero' (%n) on @s0 ("<main>") holds up to 48 vector cores while it waits for the rest, and 'npu.all_to_all' (%a1) on @s1 ("comm"), which can run at the same time, holds up to 24: 72 > 48 on 910b2; 'coreset.limit vector 24' around it (or a stream limit) removes it

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
