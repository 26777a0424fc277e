"""Parsing MLIR text and printing IR (`npuir.load` reads files of every format).

`npuir.parse_text` and `npuir.print_ir` are these functions.
"""

from __future__ import annotations

from io import StringIO

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from npuir.context import NpuirContext
from npuir.deep_stack import deep_stack
from npuir.parsing import parse_module
from npuir.printing import FastPrinter
from npuir.verifier import verify

__all__ = ["parse_text", "print_ir"]


def parse_text(ctx: NpuirContext, text: str, filename: str = "<input>") -> ModuleOp:
    """Parse and verify one module from `text`."""
    ctx.diagnostics.sources.add(filename, text)
    module = parse_module(ctx, text, filename, ctx.diagnostics.sources)
    verify(module)
    return module


@deep_stack
def print_ir(op: Operation, generic: bool = False, debuginfo: bool = False) -> str:
    """The textual IR of `op`, ending in a newline; with `debuginfo`, every op's location
    too (`loc("file":line:col)`, MLIR's `--mlir-print-debuginfo`), so that IR an importer
    made keeps pointing into the model or dump it came from."""
    out = StringIO()
    FastPrinter(stream=out, print_generic_format=generic, print_debuginfo=debuginfo).print_op(op)
    out.write("\n")
    return out.getvalue()
