"""npuir: schedule tensor graphs onto NPU streams, events, core sets and gears.

The library API in one place:

- `make_context()`: an xDSL `Context` with every npuir dialect loaded;
- `load(path_or_stream)`: the one input loader -- MLIR, a GE / TorchAir dump or a
  `torch.export` archive, recognised by content -- as a verified module;
  `parse_file(ctx, path)` is `load(path, ctx)`; `parse_text(ctx, text, filename)` parses
  MLIR text; every op carries its source location, bad input is a located error;
- `verify(op)`: op-by-op verification with located errors;
- `build_pipeline(spec)` / `run_passes(ctx, module, passes)`: run passes by
  name, e.g. `"stream-partition,insert-events{max-events=8}"` or `"npu-default"`;
  `configured_pipeline(spec, options)` adds options (data, e.g. a TorchAir
  `CompilerConfig.pass_options()`) to the passes of a spec;
  `load_passes(module)` registers the passes a module (or `.py` file) defines, as the
  tools' `--load-pass` does;
- `print_ir(op)`: the custom (or generic) textual form;
- `Diagnostic`, `DiagnosticError`, `UsageError`: what the library raises.

Each name is imported on first use, so `import npuir.dialects.npu` (or any
other submodule) loads only what that submodule needs, not the passes.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"

_EXPORTS: dict[str, str] = {
    "Diagnostic": "npuir.diagnostics",
    "DiagnosticError": "npuir.diagnostics",
    "UsageError": "npuir.diagnostics",
    "NpuirContext": "npuir.context",
    "make_context": "npuir.context",
    "load": "npuir.frontends.load",
    "parse_file": "npuir.frontends.load",
    "parse_text": "npuir.api",
    "print_ir": "npuir.api",
    "verify": "npuir.verifier",
    "build_pipeline": "npuir.passmanager.pipeline",
    "configured_pipeline": "npuir.passmanager.pipeline",
    "run_passes": "npuir.passmanager.pipeline",
    "load_passes": "npuir.passmanager.registry",
}

__all__ = [
    "Diagnostic",
    "DiagnosticError",
    "NpuirContext",
    "UsageError",
    "__version__",
    "build_pipeline",
    "configured_pipeline",
    "load",
    "load_passes",
    "make_context",
    "parse_file",
    "parse_text",
    "print_ir",
    "run_passes",
    "verify",
]

if TYPE_CHECKING:
    from npuir.api import parse_text, print_ir
    from npuir.context import NpuirContext, make_context
    from npuir.diagnostics import Diagnostic, DiagnosticError, UsageError
    from npuir.frontends.load import load, parse_file
    from npuir.passmanager.pipeline import build_pipeline, configured_pipeline, run_passes
    from npuir.passmanager.registry import load_passes
    from npuir.verifier import verify


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'npuir' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
