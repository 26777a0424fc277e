"""What a pass author imports: documented options, diagnostics, option introspection.

An npuir pass is an xDSL pass: a `@dataclass(frozen=True)` subclass of
`ModulePass` with a `name` and an `apply(ctx, module)`.  This module adds the
two things npuir asks of it:

- options are documented fields: declare each with `option(default, "meaning")`
  so that `npuir-opt --list-passes` prints its type, default and meaning, and
  pipeline specs (`my-pass{my-option=3}`) are checked against it;
- problems are reported through npuir's diagnostics: `raise error(op, "...")`
  for an error (a located `file:line:col: error:` and exit status 1),
  `warn(ctx, op, "...")` and `remark(ctx, op, "...")` for the rest (printed
  on stderr, or gathered by `ctx.diagnostics.collect()`);
- a pass that changes no IR says so, `PRESERVES: ClassVar[Preserved] = ALL`,
  so the analyses cached in the context (`analyses(ctx)`) outlive it.

`options_of(pass_cls)` describes a pass's options (the tools use it to list
and parse them).  docs/writing-a-pass.md walks through a whole pass.
"""

from __future__ import annotations

from xdsl.passes import ModulePass

from npuir.analysis.manager import ALL, Preserved, analyses
from npuir.context import remark, warn
from npuir.diagnostics import DiagnosticError, error
from npuir.passmanager.options import PassOption, option, options_of

__all__ = [
    "ALL",
    "DiagnosticError",
    "ModulePass",
    "PassOption",
    "Preserved",
    "analyses",
    "error",
    "option",
    "options_of",
    "remark",
    "warn",
]
