"""The npuir `Context`: xDSL's context with every dialect loaded, plus diagnostics."""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.ir import Operation

from npuir.analysis.manager import AnalysisManager
from npuir.diagnostics import DiagnosticEngine
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


def warn(ctx: Context, op: Operation | None, message: str) -> None:
    """Emit a warning through npuir's engine, or to stderr under a plain xDSL context."""
    _emit(ctx, "warning", op, message)


def remark(ctx: Context, op: Operation | None, message: str) -> None:
    """Emit a remark (information a user may want, not a problem)."""
    _emit(ctx, "remark", op, message)


def _emit(ctx: Context, severity: str, op: Operation | None, message: str) -> None:
    if isinstance(ctx, NpuirContext):
        ctx.diagnostics.emit(severity, op, message)  # type: ignore[arg-type]
        return
    import sys

    from npuir.diagnostics import Diagnostic, op_location

    print(Diagnostic(severity, message, op_location(op)).render(), file=sys.stderr)  # type: ignore[arg-type]
