// Tests that a bad pass option is a usage error (exit 2) that names the
// option as pipelines spell it (`ignore-tags`, never the Python field
// `ignore_tags`) and lists the pass's options.
// RUN: not npuir-opt %s -p 'stream-partition{ignore-tags=yes}' 2>&1 | filecheck %s --check-prefix=TYPE
// RUN: not npuir-opt %s -p 'stream-partition{ignore_tags=3}' 2>&1 | filecheck %s --check-prefix=TYPE
// RUN: not npuir-opt %s -p 'insert-events{max-events=many}' 2>&1 | filecheck %s --check-prefix=INT
// RUN: not npuir-opt %s -p 'insert-events{max-event=2}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: npuir-opt %s -p 'stream-partition,coreset-check{hw}' 2>&1 | filecheck %s --check-prefix=VALUE
// RUN: npuir-opt %s -p 'stream-partition,insert-events{stats}' 2>&1 | filecheck %s --check-prefix=FLAG

// TYPE: npuir-opt: error: bad option for pass 'stream-partition': option 'ignore-tags' expects true or false, got '{{yes|3}}' (options: mode, variant, ignore-tags, dynamic-multi-stream, max-streams, hw, profile, mem-budget, limits, keep-pair-rule, favor)
// INT: npuir-opt: error: bad option for pass 'insert-events': option 'max-events' expects an integer, got 'many' (options: max-events, hw, stats)
// UNKNOWN: npuir-opt: error: bad option for pass 'insert-events': unknown option 'max-event' (options: max-events, hw, stats)
// A bare boolean option is true, as in MLIR's pipelines; a bare optional one is left unset.
// VALUE-NOT: error
// VALUE: func.func @one_stream
// FLAG: remark: insert-events on @one_stream: 0 cross-stream orderings

!t = tensor<8x8xf16>
func.func @one_stream(%x: !t) -> !t {
  %0 = npu.relu %x : (!t) -> !t
  func.return %0 : !t
}
