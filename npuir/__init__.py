"""npuir: schedule tensor graphs onto NPU streams, events, core sets and gears.

The library API in one place:

- `make_context()`: an xDSL `Context` with every npuir dialect loaded;
- `parse_file(ctx, path)` / `parse_text(ctx, text, filename)`: IR with a
  source location on every op, located errors on bad input;
- `verify(op)`: op-by-op verification with located errors;
- `build_pipeline(spec)` / `run_passes(ctx, module, passes)`: run passes by
  name, e.g. `"stream-partition,insert-events{max-events=8}"` or `"npu-default"`;
- `print_ir(op)`: the custom (or generic) textual form.
"""

from __future__ import annotations

from io import StringIO
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.printer import Printer

from npuir.context import NpuirContext, make_context
from npuir.deep_stack import deep_stack
from npuir.diagnostics import Diagnostic, DiagnosticError, UsageError
from npuir.parsing import decode_source, parse_module
from npuir.pipeline import build_pipeline, run_passes
from npuir.verifier import verify

__all__ = [
    "Diagnostic",
    "DiagnosticError",
    "NpuirContext",
    "UsageError",
    "build_pipeline",
    "make_context",
    "parse_file",
    "parse_text",
    "print_ir",
    "run_passes",
    "verify",
]


def parse_text(ctx: NpuirContext, text: str, filename: str = "<input>") -> ModuleOp:
    """Parse and verify one module from `text`."""
    ctx.diagnostics.sources.add(filename, text)
    module = parse_module(ctx, text, filename, ctx.diagnostics.sources)
    verify(module)
    return module


def parse_file(ctx: NpuirContext, path: str | Path) -> ModuleOp:
    """Parse and verify the module in the file at `path`."""
    name = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise DiagnosticError(
            Diagnostic("error", f"cannot read '{name}': {exc.strerror}")
        ) from None
    return parse_text(ctx, decode_source(data, name, ctx.diagnostics.sources), name)


@deep_stack
def print_ir(op: Operation, generic: bool = False) -> str:
    """The textual IR of `op`, ending in a newline."""
    out = StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(op)
    out.write("\n")
    return out.getvalue()
