"""Errors of `npuir.torchair`, located at the user's own line.

The location is the innermost Python frame outside this package: the line of
the user's model code that called into the API, as a torch user expects a
traceback to point at.
"""

from __future__ import annotations

import itertools
import sys
import warnings
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

from npuir.diagnostics import UNCLASSIFIED, Diagnostic, DiagnosticError, Kind, SourceLocation
from npuir.dialects.validation import ValidationError

_PACKAGE_DIR = str(Path(__file__).resolve().parent)


class TorchairError(DiagnosticError):
    """A mistake in code written against `npuir.torchair`, located at the user's line.

    Its message reads like every npuir diagnostic, `file:line:col: error: ...`.
    """

    def __str__(self) -> str:
        return self.diagnostic.render()


def _user_frame() -> FrameType | None:
    """The innermost frame outside this package: the line the user wrote."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    return frame


_COLUMNS: dict[tuple[CodeType, int], int] = {}
"""The column of each call site seen, found once: finding it walks the code's positions."""


FORCED: list[SourceLocation] = []
"""Locations an importer gives the ops it builds (innermost last), instead of its own frames."""


def user_location() -> SourceLocation | None:
    """File, line and (1-based) column of the user's call into the API."""
    if FORCED:
        return FORCED[-1]
    frame = _user_frame()
    if frame is None:
        return None
    code, line = frame.f_code, frame.f_lineno
    site = (code, frame.f_lasti)
    column = _COLUMNS.get(site)
    if column is None:
        column = 1
        # co_positions has one entry per 2-byte instruction; f_lasti is a byte offset.
        pos = next(itertools.islice(code.co_positions(), frame.f_lasti // 2, None), None)
        if pos is not None and pos[0] == line and pos[2] is not None:
            column = pos[2] + 1
        _COLUMNS[site] = column
    return SourceLocation(code.co_filename, line, column)


class TorchairWarning(UserWarning):
    """A warning about code written against `npuir.torchair`, with its diagnostic (a stable
    kind, the user's line); its text is the diagnostic's, `file:line:col: warning: ...`."""

    def __init__(self, diagnostic: Diagnostic | str) -> None:
        # A plain text is how pytest-xdist (or pickle) rebuilds a warning in another
        # process: the text survives, the diagnostic's data does not.
        if isinstance(diagnostic, str):
            super().__init__(diagnostic)
            self.diagnostic: Diagnostic | None = None
            return
        super().__init__(diagnostic.render())
        self.diagnostic = diagnostic


def warn(kind: Kind, where: SourceLocation | None = None, **args: Any) -> None:
    """Issue a `TorchairWarning` of `kind` with `args`, attributed to `where` (or the user's
    current line), so Python's filters see the user's line rather than npuir's."""
    where = where or user_location()
    diagnostic = Diagnostic.of("warning", kind, where, **args)
    if where is None:
        warnings.warn(TorchairWarning(diagnostic), stacklevel=2)
        return
    warnings.warn_explicit(TorchairWarning(diagnostic), TorchairWarning, where.filename, where.line)


def fail(
    what: str | Kind,
    /,
    where: SourceLocation | None = None,
    kind: Kind | None = None,
    **args: Any,
) -> TorchairError:
    """Build (not raise) an error at `where`, or at the user's current line: of kind
    `what` with `args` (its message rendered from them), or a bare message `what` (of
    `kind`, a kind whose template is `{message}`)."""
    if isinstance(what, Kind):
        return TorchairError(Diagnostic.of("error", what, where or user_location(), **args))
    code = kind.code if kind is not None else UNCLASSIFIED.code
    return TorchairError(Diagnostic("error", what, where or user_location(), code))


def refused(exc: ValidationError, where: SourceLocation | None = None) -> TorchairError:
    """The error for a value one of the shared rules refused (`npuir.dialects.validation`),
    with that rule's kind, at `where` or at the user's current line."""
    return TorchairError(
        Diagnostic("error", str(exc), where or user_location(), exc.kind.code, exc.args_)
    )
