"""Parsing MLIR text and printing IR (`npuir.load` reads files of every format).

`npuir.parse_text` and `npuir.print_ir` are these functions.
"""

from __future__ import annotations

from io import StringIO
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from npuir.context import NpuirContext
from npuir.deep_stack import deep_stack
from npuir.diagnostics import INPUT_ERROR, Diagnostic, DiagnosticError
from npuir.parsing import decode_source, parse_module
from npuir.printing import FastPrinter
from npuir.verifier import verify

__all__ = ["parse_text", "print_ir", "read_source"]


def parse_text(ctx: NpuirContext, text: str, filename: str = "<input>") -> ModuleOp:
    """Parse and verify one module from `text`."""
    ctx.diagnostics.sources.add(filename, text)
    module = parse_module(ctx, text, filename, ctx.diagnostics.sources)
    verify(module)
    return module


def read_source(ctx: NpuirContext, path: str | Path) -> str:
    """The text of the file at `path`; unreadable or non-UTF-8 files are located errors."""
    name = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise DiagnosticError(
            Diagnostic("error", f"cannot read '{name}': {exc.strerror}", kind=INPUT_ERROR.code)
        ) from None
    return decode_source(data, name, ctx.diagnostics.sources)


@deep_stack
def print_ir(op: Operation, generic: bool = False, debuginfo: bool = False) -> str:
    """The textual IR of `op`, ending in a newline; with `debuginfo`, every op's location
    too (`loc("file":line:col)`, MLIR's `--mlir-print-debuginfo`), so that IR an importer
    made keeps pointing into the model or dump it came from."""
    out = StringIO()
    FastPrinter(stream=out, print_generic_format=generic, print_debuginfo=debuginfo).print_op(op)
    out.write("\n")
    return out.getvalue()
