// RUN: env -u ENABLE_DYNAMIC_SHAPE_MULTI_STREAM npuir-opt %s -p 'stream-partition{mode=nimble}' | filecheck %s --check-prefix=SINGLE
// RUN: env ENABLE_DYNAMIC_SHAPE_MULTI_STREAM=1 npuir-opt %s -p 'stream-partition{mode=nimble}' | filecheck %s --check-prefix=MULTI
// RUN: env ENABLE_DYNAMIC_SHAPE_MULTI_STREAM=1 npuir-opt %s -p 'stream-partition{mode=nimble dynamic-multi-stream=false}' | filecheck %s --check-prefix=SINGLE
// RUN: env ENABLE_DYNAMIC_SHAPE_MULTI_STREAM=1 npuir-run %s --shape 0=32x64 --timing-only --pipeline 'stream-partition{mode=nimble},insert-events' | filecheck %s --check-prefix=RAN-MULTI
// RUN: env -u ENABLE_DYNAMIC_SHAPE_MULTI_STREAM npuir-run %s --shape 0=32x64 --timing-only --pipeline 'stream-partition{mode=nimble},insert-events' | filecheck %s --check-prefix=RAN-SINGLE

// Tests that ENABLE_DYNAMIC_SHAPE_MULTI_STREAM=1 (CANN's variable) lets a function with
// dynamic-shape arguments use several streams in npuir-opt and npuir-run too, as in the
// torch routes: it is the default of stream-partition's dynamic-multi-stream option, which
// an explicit value overrides.

// SINGLE:     stream.decl @s0
// SINGLE-NOT: stream.decl
// MULTI:      stream.decl @s0
// MULTI:      stream.decl @s1
// RAN-MULTI:      streams          busy ns
// RAN-MULTI-NEXT:   rank 0 <main>
// RAN-MULTI-NEXT:   rank 0 chain1
// RAN-SINGLE:      streams          busy ns
// RAN-SINGLE-NEXT:   rank 0 <main>
// RAN-SINGLE-NOT:    rank 0 chain1

func.func @f(%x: tensor<?x64xf16>) -> tensor<?x64xf16> {
  %a = npu.relu %x : (tensor<?x64xf16>) -> tensor<?x64xf16>
  %b = npu.exp %x : (tensor<?x64xf16>) -> tensor<?x64xf16>
  %c = npu.add %a, %b : (tensor<?x64xf16>, tensor<?x64xf16>) -> tensor<?x64xf16>
  func.return %c : tensor<?x64xf16>
}
