// RUN: npuir-opt %s | filecheck %s
// RUN: npuir-opt %s --print-op-generic | npuir-opt | filecheck %s
// RUN: npuir-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Every `stream` op in its custom syntax: printing the parsed IR reproduces it,
// and so does printing the generic form and parsing that back.

module {

// Tests that streams are declared at module level with a tag and a priority.
// CHECK:       stream.decl @s0 "<main>" priority 0
// CHECK-NEXT:  stream.decl @s1 "1" priority 3
// CHECK-NEXT:  stream.decl @s2 "with space" priority 0 {note = "x"}
// GENERIC:     "stream.decl"() <{sym_name = "s0", tag = "<main>", priority = 0 : i64}> : () -> ()
// GENERIC:     "stream.decl"() <{sym_name = "s2", tag = "with space", priority = 0 : i64}> {note = "x"} : () -> ()
  stream.decl @s0 "<main>" priority 0
  stream.decl @s1 "1" priority 3
  stream.decl @s2 "with space" priority 0 {note = "x"}

// Tests a switch without results: the empty yield is implicit, and a zero
// priority is the default, so it is not printed.
// CHECK-LABEL: func.func @no_results
// CHECK-NEXT:    stream.switch "1" {
// CHECK-NEXT:      %0 = npu.relu %x : (tensor<8xf16>) -> tensor<8xf16>
// CHECK-NEXT:    }
// CHECK-NEXT:    stream.switch "2" {
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// GENERIC-LABEL: "func.func"() <{sym_name = "no_results"
// GENERIC:       "stream.switch"() <{tag = "1", priority = 0 : i64}> ({
// GENERIC:         "stream.yield"() : () -> ()
  func.func @no_results(%x: tensor<8xf16>) {
    stream.switch "1" priority 0 {
      %0 = npu.relu %x : (tensor<8xf16>) -> tensor<8xf16>
    }
    stream.switch "2" {
      stream.yield
    }
    func.return
  }

// Tests a switch with a priority and one result, leaving through the yield.
// CHECK-LABEL: func.func @priority
// CHECK-NEXT:    %mm = stream.switch "1" priority 2 -> tensor<8x8xf16> {
// CHECK-NEXT:      %m = npu.matmul %a, %b : (tensor<8x8xf16>, tensor<8x8xf16>) -> tensor<8x8xf16>
// CHECK-NEXT:      stream.yield %m : tensor<8x8xf16>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %mm : tensor<8x8xf16>
// GENERIC-LABEL: "func.func"() <{sym_name = "priority"
// GENERIC:       %mm = "stream.switch"() <{tag = "1", priority = 2 : i64}> ({
// GENERIC:         "stream.yield"(%m) : (tensor<8x8xf16>) -> ()
// GENERIC-NEXT:  }) : () -> tensor<8x8xf16>
  func.func @priority(%a: tensor<8x8xf16>, %b: tensor<8x8xf16>) -> tensor<8x8xf16> {
    %mm = stream.switch "1" priority 2 -> tensor<8x8xf16> {
      %m = npu.matmul %a, %b : (tensor<8x8xf16>, tensor<8x8xf16>) -> tensor<8x8xf16>
      stream.yield %m : tensor<8x8xf16>
    }
    func.return %mm : tensor<8x8xf16>
  }

// Tests a switch with several results, written with and without parentheses.
// CHECK-LABEL: func.func @multi_result
// CHECK-NEXT:    %r, %r_1 = stream.switch "1" -> tensor<8xf16>, tensor<8xf32> {
// CHECK-NEXT:      %0 = npu.exp %x : (tensor<8xf16>) -> tensor<8xf16>
// CHECK-NEXT:      %1 = npu.cast %x : (tensor<8xf16>) -> tensor<8xf32>
// CHECK-NEXT:      stream.yield %0, %1 : tensor<8xf16>, tensor<8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %s, %s_1 = stream.switch "2" -> tensor<8xf16>, tensor<8xf16> {
// CHECK-NEXT:      stream.yield %x, %x : tensor<8xf16>, tensor<8xf16>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r, %r_1, %s_1 : tensor<8xf16>, tensor<8xf32>, tensor<8xf16>
  func.func @multi_result(%x: tensor<8xf16>) -> (tensor<8xf16>, tensor<8xf32>, tensor<8xf16>) {
    %r:2 = stream.switch "1" -> tensor<8xf16>, tensor<8xf32> {
      %0 = npu.exp %x : (tensor<8xf16>) -> tensor<8xf16>
      %1 = npu.cast %x : (tensor<8xf16>) -> tensor<8xf32>
      stream.yield %0, %1 : tensor<8xf16>, tensor<8xf32>
    }
    %s:2 = stream.switch "2" -> (tensor<8xf16>, tensor<8xf16>) {
      stream.yield %x, %x : tensor<8xf16>, tensor<8xf16>
    }
    func.return %r#0, %r#1, %s#1 : tensor<8xf16>, tensor<8xf32>, tensor<8xf16>
  }

// Tests nested switches: the inner scope's value leaves through both yields.
// CHECK-LABEL: func.func @nested
// CHECK-NEXT:    %outer = stream.switch "1" -> tensor<8xf16> {
// CHECK-NEXT:      %inner = stream.switch "2" priority 1 -> tensor<8xf16> {
// CHECK-NEXT:        %n = npu.neg %x : (tensor<8xf16>) -> tensor<8xf16>
// CHECK-NEXT:        stream.yield %n : tensor<8xf16>
// CHECK-NEXT:      }
// CHECK-NEXT:      %e = npu.exp %inner : (tensor<8xf16>) -> tensor<8xf16>
// CHECK-NEXT:      stream.yield %e : tensor<8xf16>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %outer : tensor<8xf16>
  func.func @nested(%x: tensor<8xf16>) -> tensor<8xf16> {
    %outer = stream.switch "1" -> tensor<8xf16> {
      %inner = stream.switch "2" priority 1 -> tensor<8xf16> {
        %n = npu.neg %x : (tensor<8xf16>) -> tensor<8xf16>
        stream.yield %n : tensor<8xf16>
      }
      %e = npu.exp %inner : (tensor<8xf16>) -> tensor<8xf16>
      stream.yield %e : tensor<8xf16>
    }
    func.return %outer : tensor<8xf16>
  }

// Tests that a switch keeps a discardable attribute dictionary after `attributes`.
// CHECK-LABEL: func.func @attributes
// CHECK-NEXT:    %0 = stream.switch "1" priority 1 -> tensor<8xf16> attributes {origin = "user", weight = 2 : i64} {
// CHECK-NEXT:      stream.yield %x : tensor<8xf16>
// CHECK-NEXT:    }
// CHECK-NEXT:    stream.switch "2" attributes {empty} {
// CHECK-NEXT:    }
// GENERIC-LABEL: "func.func"() <{sym_name = "attributes"
// GENERIC:       "stream.switch"() <{tag = "1", priority = 1 : i64}> ({
// GENERIC:       }) {origin = "user", weight = 2 : i64} : () -> tensor<8xf16>
  func.func @attributes(%x: tensor<8xf16>) -> tensor<8xf16> {
    %0 = stream.switch "1" priority 1 -> tensor<8xf16> attributes {origin = "user", weight = 2 : i64} {
      stream.yield %x : tensor<8xf16>
    }
    stream.switch "2" attributes {empty} {
    }
    func.return %0 : tensor<8xf16>
  }

// Tests wait_tensor inside and outside a switch, and its attribute dictionary.
// CHECK-LABEL: func.func @wait_tensor
// CHECK-NEXT:    %sum = npu.add %a, %a : (tensor<8x8xf16>, tensor<8x8xf16>) -> tensor<8x8xf16>
// CHECK-NEXT:    %w = stream.wait_tensor %b after %sum : tensor<8x8xf16>, tensor<8x8xf16>
// CHECK-NEXT:    %r = stream.switch "1" -> tensor<4xf32> {
// CHECK-NEXT:      %c_w = stream.wait_tensor %c after %sum {stream.on = @s1} : tensor<4xf32>, tensor<8x8xf16>
// CHECK-NEXT:      stream.yield %c_w : tensor<4xf32>
// CHECK-NEXT:    }
// GENERIC-LABEL: "func.func"() <{sym_name = "wait_tensor"
// GENERIC:       %w = "stream.wait_tensor"(%b, %sum) : (tensor<8x8xf16>, tensor<8x8xf16>) -> tensor<8x8xf16>
  func.func @wait_tensor(%a: tensor<8x8xf16>, %b: tensor<8x8xf16>, %c: tensor<4xf32>)
      -> (tensor<8x8xf16>, tensor<4xf32>) {
    %sum = npu.add %a, %a : (tensor<8x8xf16>, tensor<8x8xf16>) -> tensor<8x8xf16>
    %w = stream.wait_tensor %b after %sum : tensor<8x8xf16>, tensor<8x8xf16>
    %r = stream.switch "1" -> tensor<4xf32> {
      %c_w = stream.wait_tensor %c after %sum {stream.on = @s1} : tensor<4xf32>, tensor<8x8xf16>
      stream.yield %c_w : tensor<4xf32>
    }
    func.return %w, %r : tensor<8x8xf16>, tensor<4xf32>
  }

// Tests the lowered form: ops name their stream with `stream.on`.
// CHECK-LABEL: func.func @lowered
// CHECK-NEXT:    %0 = npu.relu %x {stream.on = @s1} : (tensor<8xf16>) -> tensor<8xf16>
// CHECK-NEXT:    func.return %0 : tensor<8xf16>
  func.func @lowered(%x: tensor<8xf16>) -> tensor<8xf16> {
    %0 = npu.relu %x {stream.on = @s1} : (tensor<8xf16>) -> tensor<8xf16>
    func.return %0 : tensor<8xf16>
  }

}
