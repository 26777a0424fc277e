"""Located diagnostics: the one place where npuir formats errors and warnings.

Every user-facing message — parse errors, verifier errors, pass errors and
warnings — is rendered here as

    FILE:LINE:COL: error: message
    <the offending source line>
        ^

so that all tools look the same and lit tests can match on them.  Operations
get their location from the parser (see `npuir.parsing`), which stores a
`FileLineColLoc` on every op it reads; ops created by passes inherit the
location of the op they replace, or fall back to their nearest located parent.
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Operation

Severity = Literal["error", "warning", "remark", "note"]


@dataclass(frozen=True)
class SourceLocation:
    """A 1-based line and column in a named file; column 0 names the whole line (a CSV
    row), rendered as `file:line`."""

    filename: str
    line: int
    column: int

    def __str__(self) -> str:
        name = printable_name(self.filename)
        if self.column < 1:
            return f"{name}:{self.line}"
        return f"{name}:{self.line}:{self.column}"


class SourceManager:
    """Remembers the text of every file parsed, to show the offending line."""

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}
        self._line_starts: dict[str, list[int]] = {}

    def add(self, filename: str, text: str) -> None:
        self._texts[filename] = text
        self._line_starts.pop(filename, None)

    def line_starts(self, filename: str) -> list[int]:
        """Offsets at which each line of `filename` starts (index 0 = line 1)."""
        starts = self._line_starts.get(filename)
        if starts is None:
            text = self._texts.get(filename, "")
            starts = [0]
            pos = text.find("\n")
            while pos != -1:
                starts.append(pos + 1)
                pos = text.find("\n", pos + 1)
            self._line_starts[filename] = starts
        return starts

    def location_of_offset(self, filename: str, offset: int) -> SourceLocation:
        starts = self.line_starts(filename)
        line = bisect.bisect_right(starts, offset)
        return SourceLocation(filename, line, offset - starts[line - 1] + 1)

    def line_text(self, loc: SourceLocation) -> str | None:
        text = self._texts.get(loc.filename)
        if text is None:
            return None
        starts = self.line_starts(loc.filename)
        if not 1 <= loc.line <= len(starts):
            return None
        begin = starts[loc.line - 1]
        end = text.find("\n", begin)
        return text[begin : end if end != -1 else len(text)]


@dataclass(frozen=True)
class Diagnostic:
    """One message about one place in the input."""

    severity: Severity
    message: str
    location: SourceLocation | None = None

    def render(self, sources: SourceManager | None = None) -> str:
        where = f"{self.location}: " if self.location is not None else ""
        out = f"{where}{self.severity}: {printable(self.message)}"
        if self.location is not None and self.location.column >= 1 and sources is not None:
            line = sources.line_text(self.location)
            if line is not None:
                # Control characters are shown escaped, so that a binary file's
                # line cannot garble the terminal; the caret follows the escapes.
                before = printable(line[: max(self.location.column - 1, 0)])
                caret = "".join("\t" if c == "\t" else " " for c in before) + "^"
                out += f"\n{printable(line)}\n{caret}"
        return out


def printable(text: str) -> str:
    """`text` with every non-printable character but tab and newline (messages
    may span lines) written as an escape."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in "\t\n" else _escape(c) for c in text)


def _escape(c: str) -> str:
    code = ord(c)
    return (
        f"\\x{code:02x}"
        if code < 0x100
        else f"\\u{code:04x}"
        if code < 0x10000
        else f"\\U{code:08x}"
    )


class DiagnosticError(Exception):
    """An error the user caused; tools print it and exit with status 1."""

    def __init__(self, diagnostic: Diagnostic, notes: tuple[Diagnostic, ...] = ()):
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic
        self.notes = notes


class UsageError(Exception):
    """A mistake in how a tool or pass was invoked (exit status 2)."""


def printable_name(filename: str) -> str:
    """`filename` as text that encodes: bytes that are not UTF-8 (which Python keeps as
    lone surrogates in a path) are written `\\xNN`, as `ls -b` shows them."""
    try:
        filename.encode("utf-8")
    except UnicodeEncodeError:
        raw = filename.encode("utf-8", "surrogateescape")
        return raw.decode("utf-8", "backslashreplace")
    return filename


def op_location(op: Operation | None) -> SourceLocation | None:
    """The source location of `op`, or of its nearest located ancestor."""
    while op is not None:
        loc = op.location
        if isinstance(loc, FileLineColLoc):
            return SourceLocation(loc.filename.data, loc.line.data, loc.column.data)
        op = op.parent_op()
    return None


def error(op: Operation | None, message: str) -> DiagnosticError:
    """Build (not raise) a located error at `op`: `raise error(op, "...")`."""
    return DiagnosticError(Diagnostic("error", message, op_location(op)))


@dataclass
class DiagnosticEngine:
    """Where the warnings and remarks that passes emit go.

    Errors are raised as `DiagnosticError`.  A warning or remark is printed to
    stderr as it is emitted (MLIR's rule for a diagnostic no handler takes), so
    a library caller never loses one silently -- unless the caller collects
    them: `with ctx.diagnostics.collect() as found: run_passes(...)` gathers
    them, in emission order, into `found` instead; a context made with
    `make_context(collect_diagnostics=True)` collects them all, to be
    `drain()`ed (the tools do that, to print them between their own output).
    """

    sources: SourceManager = field(default_factory=SourceManager)
    collecting: bool = False
    """Whether `emit` records into `emitted` (else it prints to stderr)."""
    emitted: list[Diagnostic] = field(default_factory=list[Diagnostic])

    def emit(self, severity: Severity, op: Operation | None, message: str) -> None:
        diagnostic = Diagnostic(severity, message, op_location(op))
        if self.collecting:
            self.emitted.append(diagnostic)
        else:
            print(self.render(diagnostic), file=sys.stderr)

    def warning(self, op: Operation | None, message: str) -> None:
        self.emit("warning", op, message)

    def remark(self, op: Operation | None, message: str) -> None:
        self.emit("remark", op, message)

    @contextmanager
    def collect(self) -> Iterator[list[Diagnostic]]:
        """Within the block, gather what is emitted into the list it yields."""
        saved = self.collecting, self.emitted
        found: list[Diagnostic] = []
        self.collecting, self.emitted = True, found
        try:
            yield found
        finally:
            self.collecting, self.emitted = saved

    def drain(self) -> Iterator[Diagnostic]:
        """Yield and forget everything collected so far."""
        emitted, self.emitted = self.emitted, []
        yield from emitted

    def render(self, diagnostic: Diagnostic) -> str:
        return diagnostic.render(self.sources)


def diagnostic_json(diagnostic: Diagnostic) -> dict[str, Any]:
    """A diagnostic as the tools' `--json` reports it: message, severity, location (or null)."""
    loc = diagnostic.location
    return {
        "message": diagnostic.message,
        "severity": diagnostic.severity,
        "location": None
        if loc is None
        else {"file": loc.filename, "line": loc.line, "column": loc.column},
    }
