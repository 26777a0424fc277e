// Tests that `npuir-opt --list-passes` prints each pass with its summary, the IR
// states it needs (with the pass that establishes each), establishes and may undo,
// and, under it, each option with its type, its default (none shown when unset)
// and its meaning; then the named pipelines.  The input is not read.
// RUN: npuir-opt --list-passes | filecheck %s
// The test-* passes are test code (test/lib), loaded only by the lit tests that use them.
// RUN: npuir-opt --list-passes | filecheck %s --check-prefix=PRODUCT
// PRODUCT-NOT: {{^}}test-

// CHECK-LABEL: coreset-check Check the stream pair rule
// CHECK-NEXT:    needs: partitioned (stream-partition first)
// CHECK-NEXT:    hw: string
// CHECK-NEXT:      the device preset or TOML file
// CHECK-NEXT:    strict: bool = false
// CHECK-NEXT:      make every finding an error instead of a warning

// CHECK-LABEL: coreset-lower Resolve each op's effective core limits
// CHECK-NEXT:    establishes: limits-lowered

// CHECK-LABEL: insert-events Order every cross-stream dependency
// CHECK-NEXT:    needs: partitioned (stream-partition first), limits-lowered (coreset-lower first)
// CHECK-NEXT:    max-events: int
// CHECK-NEXT:      the most physical event ids the program may use (default: the device's limit)
// CHECK-NEXT:    hw: string
// CHECK:         stats: bool = false

// CHECK-LABEL: mem-verify Check that no two buffers
// CHECK-NEXT:    needs: partitioned (stream-partition first), limits-lowered (coreset-lower first), memory-planned (mem-plan first)

// CHECK-LABEL: stream-partition Assign every op a stream
// CHECK-NEXT:    establishes: partitioned
// CHECK-NEXT:    may undo: limits-lowered (with limits=true, its default, mode=auto writes coreset.limit scopes)
// CHECK-NEXT:    mode: user|single|ge|engine|nimble|minidag|opara|auto|ios = user
// CHECK:         ignore-tags: bool = false
// CHECK:         max-streams: int = 8

// CHECK-LABEL: stream-unlower Remove streams and events
// CHECK-NEXT:    may undo: partitioned

// CHECK-LABEL: sync-verify Check that every cross-stream use is ordered
// CHECK-NEXT:    needs: partitioned (stream-partition first)

// CHECK-LABEL: npu-default The standard lowering
