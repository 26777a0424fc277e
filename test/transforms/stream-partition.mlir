// RUN: npuir-opt %s --split-input-file -p stream-partition | filecheck %s
// RUN: npuir-opt %s --split-input-file -p 'stream-partition{ignore-tags=true}' | filecheck %s --check-prefix=IGNORE

// Tests that scopes are flattened in issue order, every op gets the stream of
// its scope, and streams are declared default first, then by first use; and
// that a use of the waited tensor after the scope closes reads the wait's
// result (docs/ir.md: every later use of %in4 is ordered after %add).

!t = tensor<8x8xf16>
func.func @seed(%in1: !t, %in2: !t, %in3: !t, %in4: !t) -> (!t, !t) {
  %add = npu.add %in1, %in2 : (!t, !t) -> !t
  %mm = stream.switch "1" -> !t {
    %w = stream.wait_tensor %in4 after %add : !t, !t
    %m = npu.matmul %in3, %w : (!t, !t) -> !t
    stream.yield %m : !t
  }
  %mm1 = npu.matmul %in3, %in4 : (!t, !t) -> !t
  func.return %mm, %mm1 : !t, !t
}

// CHECK:         stream.decl @s0 "<main>" priority 0
// CHECK-NEXT:    stream.decl @s1 "1" priority 0
// CHECK-LABEL: func.func @seed
// CHECK-NEXT:    %add = npu.add %in1, %in2 {stream.on = @s0}
// CHECK-NEXT:    %w = stream.wait_tensor %in4 after %add {stream.on = @s1}
// CHECK-NEXT:    %m = npu.matmul %in3, %w {stream.on = @s1}
// CHECK-NEXT:    %mm1 = npu.matmul %in3, %w {stream.on = @s0}
// CHECK-NEXT:    func.return %m, %mm1

// IGNORE:        stream.decl @s0 "<main>" priority 0
// IGNORE-NOT:    stream.decl
// IGNORE-LABEL: func.func @seed
// IGNORE-NOT:    @s1

// -----

// Tests that nested scopes give the innermost tag, and that ops after an
// inner scope return to the outer scope's stream.

!t = tensor<8x8xf16>
func.func @nested(%x: !t) -> !t {
  %r = stream.switch "outer" priority 1 -> !t {
    %a = npu.relu %x : (!t) -> !t
    %b = stream.switch "inner" priority 2 -> !t {
      %c = npu.exp %a : (!t) -> !t
      stream.yield %c : !t
    }
    %d = npu.neg %b : (!t) -> !t
    stream.yield %d : !t
  }
  func.return %r : !t
}

// CHECK:         stream.decl @s0 "<main>" priority 0
// CHECK-NEXT:    stream.decl @s1 "outer" priority 1
// CHECK-NEXT:    stream.decl @s2 "inner" priority 2
// CHECK-LABEL: func.func @nested
// CHECK-NEXT:    %a = npu.relu %x {stream.on = @s1}
// CHECK-NEXT:    %c = npu.exp %a {stream.on = @s2}
// CHECK-NEXT:    %d = npu.neg %c {stream.on = @s1}
// CHECK-NEXT:    func.return %d

// -----

// Tests that the same tag in two scopes is the same stream, and that a scope
// with several results forwards each of them.

!t = tensor<8x8xf16>
func.func @same_tag(%x: !t) -> (!t, !t, !t) {
  %a, %b = stream.switch "1" -> !t, !t {
    %p = npu.relu %x : (!t) -> !t
    %q = npu.exp %x : (!t) -> !t
    stream.yield %p, %q : !t, !t
  }
  %c = npu.add %a, %b : (!t, !t) -> !t
  %d = stream.switch "1" -> !t {
    %s = npu.neg %c : (!t) -> !t
    stream.yield %s : !t
  }
  func.return %a, %b, %d : !t, !t, !t
}

// CHECK:         stream.decl @s0 "<main>" priority 0
// CHECK-NEXT:    stream.decl @s1 "1" priority 0
// CHECK-NOT:     stream.decl
// CHECK-LABEL: func.func @same_tag
// CHECK-NEXT:    %p = npu.relu %x {stream.on = @s1}
// CHECK-NEXT:    %q = npu.exp %x {stream.on = @s1}
// CHECK-NEXT:    %c = npu.add %p, %q {stream.on = @s0}
// CHECK-NEXT:    %s = npu.neg %c {stream.on = @s1}
// CHECK-NEXT:    func.return %p, %q, %s

// -----

// Tests that streams are module resources: two functions share one
// declaration per tag.

!t = tensor<8x8xf16>
func.func @f(%x: !t) -> !t {
  %r = stream.switch "comm" -> !t {
    %a = npu.all_reduce %x {group_size = 2 : i64} : (!t) -> !t
    stream.yield %a : !t
  }
  func.return %r : !t
}
func.func @g(%x: !t) -> !t {
  %r = stream.switch "comm" -> !t {
    %a = npu.all_reduce %x {group_size = 2 : i64} : (!t) -> !t
    stream.yield %a : !t
  }
  func.return %r : !t
}

// CHECK:         stream.decl @s0 "<main>" priority 0
// CHECK-NEXT:    stream.decl @s1 "comm" priority 0
// CHECK-NOT:     stream.decl
// CHECK-LABEL: func.func @f
// CHECK:         npu.all_reduce %x {group_size = 2 : i64, stream.on = @s1}
// CHECK-LABEL: func.func @g
// CHECK:         npu.all_reduce %x {group_size = 2 : i64, stream.on = @s1}

// -----

// Tests that a scope inside a coreset.limit keeps the limit scope in place:
// only stream scopes are flattened here (coreset-lower drops the others).

!t = tensor<8x8xf16>
func.func @inside_limit(%x: !t) -> !t {
  %r = coreset.limit vector 4 -> !t {
    %s = stream.switch "1" -> !t {
      %a = npu.relu %x : (!t) -> !t
      stream.yield %a : !t
    }
    coreset.yield %s : !t
  }
  func.return %r : !t
}

// CHECK-LABEL: func.func @inside_limit
// CHECK-NEXT:    %r = coreset.limit vector 4 -> tensor<8x8xf16> {
// CHECK-NEXT:      %a = npu.relu %x {stream.on = @s1}
// CHECK-NEXT:      coreset.yield %a
// CHECK-NEXT:    }
