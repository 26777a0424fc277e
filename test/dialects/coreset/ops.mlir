// RUN: npuir-opt %s | filecheck %s
// RUN: npuir-opt %s --print-op-generic | npuir-opt | filecheck %s
// RUN: npuir-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Every `coreset` op and attribute in its custom syntax: printing the parsed
// IR reproduces it, and so does printing the generic form and parsing that back.

// Tests the module-wide limit, `coreset.global = #coreset.cores<...>`.
// CHECK:       builtin.module attributes {coreset.global = #coreset.cores<cube 20, vector 40>} {
// GENERIC:     "builtin.module"() ({
module attributes {coreset.global = #coreset.cores<cube 20, vector 40>} {

// Tests stream limits with both counts, cube only and vector only.
// CHECK-NEXT:    coreset.stream_limit "1" cube 3 vector 8
// CHECK-NEXT:    coreset.stream_limit "2" cube 4
// CHECK-NEXT:    coreset.stream_limit "3" vector 6 {note = "x"}
// GENERIC:       "coreset.stream_limit"() <{tag = "1", cube = 3 : i64, vector = 8 : i64}> : () -> ()
// GENERIC-NEXT:  "coreset.stream_limit"() <{tag = "2", cube = 4 : i64}> : () -> ()
// GENERIC-NEXT:  "coreset.stream_limit"() <{tag = "3", vector = 6 : i64}> {note = "x"} : () -> ()
  coreset.stream_limit "1" cube 3 vector 8
  coreset.stream_limit "2" cube 4
  coreset.stream_limit "3" vector 6 {note = "x"}

// Tests limit scopes with cube only, vector only and both counts, with and
// without results.
// CHECK-LABEL: func.func @limits
// CHECK-NEXT:    %c = coreset.limit cube 6 -> tensor<3x3xf32> {
// CHECK-NEXT:      %m = npu.matmul %x, %y : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
// CHECK-NEXT:      coreset.yield %m : tensor<3x3xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %v = coreset.limit vector 12 -> tensor<3x3xf32> {
// CHECK-NEXT:      %a = npu.add %c, %y : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
// CHECK-NEXT:      coreset.yield %a : tensor<3x3xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    coreset.limit cube 1 vector 2 {
// CHECK-NEXT:      %0 = npu.relu %v : (tensor<3x3xf32>) -> tensor<3x3xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %v : tensor<3x3xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "limits"
// GENERIC:       %c = "coreset.limit"() <{cube = 6 : i64}> ({
// GENERIC:         "coreset.yield"(%m) : (tensor<3x3xf32>) -> ()
// GENERIC-NEXT:  }) : () -> tensor<3x3xf32>
// GENERIC:       "coreset.limit"() <{cube = 1 : i64, vector = 2 : i64}> ({
// GENERIC:         "coreset.yield"() : () -> ()
  func.func @limits(%x: tensor<3x3xf32>, %y: tensor<3x3xf32>) -> tensor<3x3xf32> {
    %c = coreset.limit cube 6 -> tensor<3x3xf32> {
      %m = npu.matmul %x, %y : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
      coreset.yield %m : tensor<3x3xf32>
    }
    %v = coreset.limit vector 12 -> tensor<3x3xf32> {
      %a = npu.add %c, %y : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
      coreset.yield %a : tensor<3x3xf32>
    }
    coreset.limit cube 1 vector 2 {
      %0 = npu.relu %v : (tensor<3x3xf32>) -> tensor<3x3xf32>
    }
    func.return %v : tensor<3x3xf32>
  }

// Tests nested limits, a stream switch inside a limit (limits are lexical),
// several results and the `attributes` dictionary.
// CHECK-LABEL: func.func @nested
// CHECK-NEXT:    %r, %r_1 = coreset.limit cube 6 vector 12 -> tensor<3x3xf32>, tensor<3x3xf32> attributes {origin = "limit_core_num"} {
// CHECK-NEXT:      %inner = coreset.limit vector 4 -> tensor<3x3xf32> {
// CHECK-NEXT:        %s = stream.switch "1" -> tensor<3x3xf32> {
// CHECK-NEXT:          %e = npu.exp %x : (tensor<3x3xf32>) -> tensor<3x3xf32>
// CHECK-NEXT:          stream.yield %e : tensor<3x3xf32>
// CHECK-NEXT:        }
// CHECK-NEXT:        coreset.yield %s : tensor<3x3xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      coreset.yield %inner, %x : tensor<3x3xf32>, tensor<3x3xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r_1 : tensor<3x3xf32>
  func.func @nested(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
    %r:2 = coreset.limit cube 6 vector 12 -> (tensor<3x3xf32>, tensor<3x3xf32>) attributes {origin = "limit_core_num"} {
      %inner = coreset.limit vector 4 -> tensor<3x3xf32> {
        %s = stream.switch "1" -> tensor<3x3xf32> {
          %e = npu.exp %x : (tensor<3x3xf32>) -> tensor<3x3xf32>
          stream.yield %e : tensor<3x3xf32>
        }
        coreset.yield %s : tensor<3x3xf32>
      }
      coreset.yield %inner, %x : tensor<3x3xf32>, tensor<3x3xf32>
    }
    func.return %r#1 : tensor<3x3xf32>
  }

// Tests the effective limits `coreset-lower` leaves on ops, one count or both.
// CHECK-LABEL: func.func @lowered
// CHECK-NEXT:    %0 = npu.relu %x {coreset.cores = #coreset.cores<vector 12>} : (tensor<3x3xf32>) -> tensor<3x3xf32>
// CHECK-NEXT:    %1 = npu.matmul %x, %0 {coreset.cores = #coreset.cores<cube 6>} : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
// CHECK-NEXT:    %2 = npu.add %x, %1 {coreset.cores = #coreset.cores<cube 6, vector 12>} : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  func.func @lowered(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
    %0 = npu.relu %x {coreset.cores = #coreset.cores<vector 12>} : (tensor<3x3xf32>) -> tensor<3x3xf32>
    %1 = npu.matmul %x, %0 {coreset.cores = #coreset.cores<cube 6>} : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
    %2 = npu.add %x, %1 {coreset.cores = #coreset.cores<cube 6, vector 12>} : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
    func.return %2 : tensor<3x3xf32>
  }
}
// GENERIC: }) {coreset.global = #coreset.cores<cube 20, vector 40>} : () -> ()
