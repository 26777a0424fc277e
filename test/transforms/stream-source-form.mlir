// RUN: npuir-opt %s --split-input-file -p stream-source-form | filecheck %s

// Tests that runs of consecutive ops wanting the same stream go into one scope, values used
// after it leave through its yield, and an op wanting the stream around it stays unwrapped.

!t = tensor<8x8xf16>
func.func @runs(%x: !t) -> !t {
  %a = npu.relu %x {stream.want = "s1"} : (!t) -> !t
  %b = npu.exp %a {stream.want = "s1"} : (!t) -> !t
  %c = npu.neg %x {stream.want = "<main>"} : (!t) -> !t
  %d = npu.add %b, %c {stream.want = "s2"} : (!t, !t) -> !t
  func.return %d : !t
}

// CHECK-LABEL: func.func @runs
// CHECK-NEXT:    %[[B:.*]] = stream.switch "s1" -> tensor<8x8xf16> {
// CHECK-NEXT:      %[[A:.*]] = npu.relu
// CHECK-NEXT:      %[[E:.*]] = npu.exp %[[A]] :
// CHECK-NEXT:      stream.yield %[[E]]
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[C:.*]] = npu.neg %{{.*}} :
// CHECK-NEXT:    %[[D:.*]] = stream.switch "s2" -> tensor<8x8xf16> {
// CHECK-NEXT:      %[[S:.*]] = npu.add %[[B]], %[[C]] :
// CHECK-NEXT:      stream.yield %[[S]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[D]]
// CHECK-NOT:     stream.want

// -----

// Tests that a scope wanting "<main>" is removed (its body stays in its place), a scope
// wanting another tag is retagged, and a new scope of a tag a user scope has takes its
// priority.

!t = tensor<8x8xf16>
func.func @scopes(%x: !t) -> !t {
  %r = stream.switch "shared" -> !t attributes {stream.want = "<main>"} {
    %a = npu.relu %x : (!t) -> !t
    stream.yield %a : !t
  }
  %q = stream.switch "old" priority 2 -> !t attributes {stream.want = "new"} {
    %b = npu.exp %r : (!t) -> !t
    stream.yield %b : !t
  }
  %c = npu.neg %q {stream.want = "hi"} : (!t) -> !t
  %p = stream.switch "hi" priority 3 -> !t {
    %d = npu.exp %c : (!t) -> !t
    stream.yield %d : !t
  }
  func.return %p : !t
}

// CHECK-LABEL: func.func @scopes
// CHECK-NEXT:    %[[A:.*]] = npu.relu
// CHECK-NEXT:    %[[Q:.*]] = stream.switch "new" priority 2 -> tensor<8x8xf16> {
// CHECK-NEXT:      npu.exp %[[A]]
// CHECK:         stream.switch "hi" priority 3 -> tensor<8x8xf16> {
// CHECK-NEXT:      npu.neg %[[Q]]
// CHECK:         stream.switch "hi" priority 3
// CHECK-NOT:     stream.want

// -----

// Tests that a hoisted op moves before the other ops of its source line (and only those),
// as when its call is taken out of its statement.

!t = tensor<8x8xf16>
func.func @hoist(%x: !t, %w: !t) -> !t {
  %a = npu.relu %x : (!t) -> !t loc("m.py":1:0)
  %b = npu.exp %a : (!t) -> !t loc("m.py":2:0)
  %c = npu.neg %w {stream.hoist, stream.want = "s1"} : (!t) -> !t loc("m.py":2:0)
  %d = npu.add %b, %c : (!t, !t) -> !t loc("m.py":2:0)
  func.return %d : !t
}

// CHECK-LABEL: func.func @hoist
// CHECK-NEXT:    npu.relu
// CHECK-NEXT:    stream.switch "s1"
// CHECK-NEXT:      npu.neg
// CHECK-NEXT:      stream.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    npu.exp
// CHECK-NEXT:    npu.add
// CHECK-NOT:     stream.hoist

// -----

// Tests that a partitioned function gets its streams as scopes and its decls go.

!t = tensor<8x8xf16>
stream.decl @s0 "<main>" priority 0
stream.decl @s1 "auto1" priority 0
func.func @partitioned(%x: !t) -> !t {
  %a = npu.relu %x {stream.on = @s0} : (!t) -> !t
  %b = npu.exp %x {stream.on = @s1} : (!t) -> !t
  %c = npu.add %a, %b {stream.on = @s0} : (!t, !t) -> !t
  func.return %c : !t
}

// CHECK-NOT:     stream.decl
// CHECK-LABEL: func.func @partitioned
// CHECK-NEXT:    npu.relu
// CHECK-NEXT:    stream.switch "auto1"
// CHECK-NEXT:      npu.exp
// CHECK-NEXT:      stream.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    npu.add
// CHECK-NOT:     stream.on

// -----

// Tests that a core limit around a single op goes into the scope with its op.

!t = tensor<8x8xf16>
stream.decl @s0 "<main>" priority 0
stream.decl @s1 "auto1" priority 0
func.func @limited(%x: !t) -> !t {
  %a = npu.relu %x {stream.on = @s0} : (!t) -> !t
  %b = coreset.limit cube 2 vector 4 -> !t {
    %c = npu.exp %x {stream.on = @s1} : (!t) -> !t
    coreset.yield %c : !t
  }
  %d = npu.add %a, %b {stream.on = @s0} : (!t, !t) -> !t
  func.return %d : !t
}

// CHECK-LABEL: func.func @limited
// CHECK-NEXT:    npu.relu
// CHECK-NEXT:    stream.switch "auto1"
// CHECK-NEXT:      coreset.limit cube 2 vector 4
// CHECK-NEXT:        npu.exp
// CHECK-NEXT:        coreset.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      stream.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    npu.add
