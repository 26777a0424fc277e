// RUN: npuir-run %s --hw %S/Inputs/tiny.toml --json --entry contended | filecheck %s
// RUN: npuir-run %s --hw %S/Inputs/tiny.toml --json --entry same_priority | filecheck %s --check-prefix=FIFO

// Tests that stream priority decides who gets contended cores: the add on
// "hi" (priority 1) is issued after the add on "lo" (priority 5) but gets the
// vector cores first.  With equal priorities (@same_priority) issue order
// decides, and the first-issued add runs first.
//
// By hand on the device of Inputs/tiny.toml: each add is 64x32 f16 = 2048 elements, flops 2048,
// bytes 3 * 4096 = 12288; vector_tiles(4096 bytes) = 4, so it wants all 4
// vector cores, HBM share 1: max(2048 / 4, 12288) = 12288, + launch 100 =
// 12388 ns.  At t = 0 both request 4 cores; free cores go by priority:
//   "hi": %h [0, 12388], record [12388, 12398]
//   "lo": %l [12388, 24776] (its cores come from %h), record [24776, 24786]
//   default: wait on lo's record [24786, 24806], wait on hi's [24806, 24826]
//   makespan 24826; the critical path runs %h, then %l (core contention).
// @same_priority: %l [0, 12388], record [12388, 12398]; %e [12388, 24776],
// record [24776, 24786]; default waits first on lo's record [12398, 12418] and
// then on eq's [24786, 24806]: makespan 24806, %l first on the critical path.

!t = tensor<64x32xf16>
module attributes {npu.target = "tiny"} {
  func.func @contended(%a: !t, %b: !t) -> (!t, !t) {
    %lo = stream.switch "lo" priority 5 -> !t {
      %l = npu.add %a, %a : (!t, !t) -> !t
      stream.yield %l : !t
    }
    %hi = stream.switch "hi" priority 1 -> !t {
      %h = npu.add %b, %b : (!t, !t) -> !t
      stream.yield %h : !t
    }
    func.return %lo, %hi : !t, !t
  }
  func.func @same_priority(%a: !t, %b: !t) -> (!t, !t) {
    %lo = stream.switch "lo" priority 5 -> !t {
      %l = npu.add %a, %a : (!t, !t) -> !t
      stream.yield %l : !t
    }
    %eq = stream.switch "eq" priority 5 -> !t {
      %e = npu.add %b, %b : (!t, !t) -> !t
      stream.yield %e : !t
    }
    func.return %lo, %eq : !t, !t
  }
}

// CHECK:      "makespan_ns": 24826,
// CHECK:      "critical_path": [
// CHECK-NEXT:   {
// CHECK-NEXT:     "rank": 0,
// CHECK-NEXT:     "op": "'npu.add' (%h)"
// CHECK-NEXT:   },
// CHECK-NEXT:   {
// CHECK-NEXT:     "rank": 0,
// CHECK-NEXT:     "op": "'npu.add' (%l)"

// FIFO:      "makespan_ns": 24806,
// FIFO:      "critical_path": [
// FIFO-NEXT:   {
// FIFO-NEXT:     "rank": 0,
// FIFO-NEXT:     "op": "'npu.add' (%l)"
// FIFO-NEXT:   },
// FIFO-NEXT:   {
// FIFO-NEXT:     "rank": 0,
// FIFO-NEXT:     "op": "'npu.add' (%e)"
