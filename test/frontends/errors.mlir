// RUN: not npuir-import %S/Inputs/missing_input.txt 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not npuir-import %S/Inputs/unknown_dtype.txt 2>&1 | filecheck %s --check-prefix=DTYPE
// RUN: not npuir-import %S/Inputs/bad_syntax.pbtxt 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: npuir-import %S/Inputs/unknown_type.txt 2>&1 >/dev/null | filecheck %s --check-prefix=WARN
// RUN: not npuir-import %S/Inputs/unknown_type.txt --strict 2>&1 | filecheck %s --check-prefix=STRICT
// RUN: not npuir-import %S/Inputs/seed_multistream.txt --graph nope 2>&1 | filecheck %s --check-prefix=GRAPH

// Tests that every error in a dump is located in the dump, with its line and
// a caret, and exits 1.

// An input naming no op points at the `input:` string.
// MISSING:      missing_input.txt:10:3: error: input 'nowhere' of 'r' names no op in the graph
// MISSING-NEXT: {{^}}  input: "nowhere:0"
// MISSING-NEXT: {{^}}  ^

// An element type npuir does not know points at the `dtype:` field.
// DTYPE: unknown_dtype.txt:6:5: error: unsupported element type DT_COMPLEX64 in output 0 of 'x' (npuir knows DT_BF16, DT_BOOL,

// A syntax error inside a pbtxt attribute string points at the string.
// SYNTAX: bad_syntax.pbtxt:7:7: error: attribute '[o]y': unexpected end of input: a message is not closed with '}' (line 4, column 1 of the string)

// A type the op table lacks is a warning naming its op count ...
// WARN: unknown_type.txt:7:1: warning: GE type 'AscendQuant' is not in the op table: 1 op(s) imported as npu.opaque (engine vector)
// WARN: AscendQuant {{ +}}1  -> npu.opaque

// ... and an error under --strict.
// STRICT: unknown_type.txt:7:1: error: GE type 'AscendQuant' is not in the op table; --strict refuses it

// GRAPH: seed_multistream.txt:1:1: error: no graph named 'nope' in the dump (it has 'seed_multistream')
