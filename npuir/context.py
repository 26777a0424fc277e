"""The npuir `Context`: xDSL's context with every dialect loaded, plus diagnostics."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.ir import Operation

from npuir.analysis.manager import AnalysisManager
from npuir.diagnostics import (
    DiagnosticEngine,
    Kind,
    Severity,
    make_diagnostic,
    op_location,
)
from npuir.dialects import DIALECTS


@dataclass
class NpuirContext(Context):
    """A `Context` that also carries the diagnostic engine passes report to and the
    analysis cache they share (`npuir.analysis.manager`)."""

    diagnostics: DiagnosticEngine = field(default_factory=DiagnosticEngine)
    analyses: AnalysisManager = field(default_factory=AnalysisManager)
    parser: str = "fast"
    """Which parser reads text: "fast" (npuir.fastparse before xDSL's) or "xdsl"."""


def make_context(
    allow_unregistered: bool = False, collect_diagnostics: bool = False
) -> NpuirContext:
    """A context with builtin, func, arith and every npuir dialect loaded.

    Warnings and remarks go to stderr as passes emit them, unless
    `collect_diagnostics`: then they wait in `ctx.diagnostics` to be drained
    (see `DiagnosticEngine`).
    """
    ctx = NpuirContext(allow_unregistered=allow_unregistered)
    ctx.diagnostics.collecting = collect_diagnostics
    for dialect in (Builtin, Func, Arith):
        ctx.load_dialect(dialect)
    for factory in DIALECTS.values():
        ctx.load_dialect(factory())
    return ctx


def warn(
    ctx: Context,
    op: Operation | None,
    what: str | Kind,
    kind: Kind | str | None = None,
    **args: Any,
) -> None:
    """Emit a warning through npuir's engine, or to stderr under a plain xDSL context:
    `warn(ctx, op, KIND, name=...)`, or `warn(ctx, op, "message", KIND)`."""
    _emit(ctx, "warning", op, what, kind, args)


def remark(
    ctx: Context,
    op: Operation | None,
    what: str | Kind,
    kind: Kind | str | None = None,
    **args: Any,
) -> None:
    """Emit a remark (information a user may want, not a problem)."""
    _emit(ctx, "remark", op, what, kind, args)


def _emit(
    ctx: Context,
    severity: Severity,
    op: Operation | None,
    what: str | Kind,
    kind: Kind | str | None,
    args: dict[str, Any],
) -> None:
    diagnostic = make_diagnostic(severity, op_location(op), what, kind, args)
    if isinstance(ctx, NpuirContext):
        ctx.diagnostics.add(diagnostic)
    else:
        print(diagnostic.render(), file=sys.stderr)
