// RUN: not npuir-run %s --hw %S/Inputs/tiny.toml 2>&1 >/dev/null | filecheck %s
// RUN: not npuir-run %s --hw %S/Inputs/tiny.toml 2>/dev/null | filecheck %s --check-prefix=STDOUT --allow-empty
// RUN: not npuir-run %s --hw %S/Inputs/tiny.toml --json 2>/dev/null | filecheck %s --check-prefix=JSON

// Tests that a hand-lowered program missing a wait is refused before it is
// run (exit 1): the runner applies sync-verify to lowered input and reports
// the race at the consumer, naming both ops and both streams; nothing goes to
// stdout.  With --json the same error is the one object on stdout, located.

!t = tensor<8x8xf16>
module attributes {npu.target = "tiny"} {
  stream.decl @s0 "<main>" priority 0
  stream.decl @s1 "1" priority 0
  func.func @missing_wait(%x: !t) -> !t {
    %a = npu.relu %x {stream.on = @s0} : (!t) -> !t
    %b = npu.exp %a {stream.on = @s1} : (!t) -> !t
    %e1 = sync.record on @s1
    sync.wait %e1 on @s0
    func.return %b : !t
  }
}

// CHECK:      race.mlir:[[# @LINE - 7]]:5: error: race: 'npu.exp' (%b) on stream @s1 ("1") uses the result of 'npu.relu' (%a) on stream @s0 ("<main>"), but no event orders it after its producer
// CHECK-NEXT: %b = npu.exp %a {stream.on = @s1} : (!t) -> !t
// CHECK-NEXT: ^
// CHECK-NOT:  Traceback

// STDOUT-NOT: {{.}}

// JSON:      "error": {
// JSON-NEXT:   "kind": "sync.race",
// JSON-NEXT:   "message": "race: 'npu.exp' (%b) on stream @s1 (\"1\") uses the result of 'npu.relu' (%a)
// JSON-NEXT:   "severity": "error",
// JSON-NEXT:   "args": {
// JSON:        },
// JSON-NEXT:   "location": {
// JSON-NEXT:     "file": "{{.*}}race.mlir",
// JSON-NEXT:     "line": 16,
// JSON-NEXT:     "column": 5
// JSON-NEXT:   },
// JSON-NEXT:   "notes": []
// JSON-NEXT: },
// JSON-NEXT: "warnings": []
