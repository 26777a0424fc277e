"""Located diagnostics: the one place where npuir formats errors and warnings.

Every user-facing message — parse errors, verifier errors, pass errors and
warnings — is rendered here as

    FILE:LINE:COL: error: message
    <the offending source line>
        ^

so that all tools look the same and lit tests can match on them.

Every diagnostic is data first: a stable `kind` (a dotted code such as
`core.hold-and-wait`, declared once with `Kind(code, template)` next to the code that
emits it), its location, and its arguments; the message is rendered from the kind's
template and the arguments.  Code that reacts to a diagnostic -- `npuir-advise`, the tools'
`--json`, tests -- compares kinds (`diagnostic.kind == HOLD_AND_WAIT.code`), never text.
`kinds()` lists every kind declared so far.  Operations
get their location from the parser (see `npuir.parsing`), which stores a
`FileLineColLoc` on every op it reads; ops created by passes inherit the
location of the op they replace, or fall back to their nearest located parent.
"""

from __future__ import annotations

import bisect
import re
import string
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
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


_CODE = re.compile(r"[a-z][a-z0-9]*(\.[a-z0-9]+(-[a-z0-9]+)*)+")
_KINDS: dict[str, Kind] = {}


@dataclass(frozen=True)
class Kind:
    """A stable kind of diagnostic: a dotted code (`area.what-happened`, the key consumers
    match) and the template its message is rendered from (`str.format` fields named by the
    diagnostic's arguments).  Declaring the same code twice with another template is a bug
    (ValueError): a code means one thing."""

    code: str
    template: str = "{message}"

    def __post_init__(self) -> None:
        if not _CODE.fullmatch(self.code):
            raise ValueError(f"diagnostic kind '{self.code}' is not a dotted lower-case code")
        known = _KINDS.setdefault(self.code, self)
        if known.template != self.template:
            raise ValueError(f"diagnostic kind '{self.code}' declared twice, differently")

    @property
    def fields(self) -> frozenset[str]:
        """The argument names the template needs."""
        return frozenset(f for _, f, _, _ in string.Formatter().parse(self.template) if f)

    def render(self, args: Mapping[str, Any]) -> str:
        return self.template.format_map(args)


def kinds() -> dict[str, Kind]:
    """Every kind declared so far, by code (kinds are declared where they are emitted, so
    a module's kinds are known once it is imported)."""
    return dict(_KINDS)


UNCLASSIFIED = Kind("npuir.unclassified")
"""The kind of a diagnostic made from a bare message (an out-of-tree pass that names none)."""
PARSE_ERROR = Kind("parse.syntax")
"""The input does not parse (xDSL's parser or npuir's own)."""
VERIFY_ERROR = Kind("verify.op", "{message}")
"""An op's verifier refused it; `op` names the op."""
INPUT_ERROR = Kind("input.unreadable", "cannot {action} '{path}': {reason}")
"""An input file cannot be read or opened; arguments: `action` ("read", "load", "read
inputs"), `path`, `reason`."""


@dataclass(frozen=True)
class Diagnostic:
    """One message about one place in the input: its kind, severity, location and
    arguments, with the message rendered from them."""

    severity: Severity
    message: str
    location: SourceLocation | None = None
    kind: str = UNCLASSIFIED.code
    args: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @staticmethod
    def of(
        severity: Severity,
        kind: Kind,
        location: SourceLocation | None = None,
        **args: Any,
    ) -> Diagnostic:
        """The diagnostic of `kind` with `args`, its message rendered from the template."""
        return Diagnostic(
            severity, kind.render(args), location, kind.code, MappingProxyType(dict(args))
        )

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


def make_diagnostic(
    severity: Severity,
    location: SourceLocation | None,
    what: str | Kind,
    kind: Kind | str | None = None,
    args: Mapping[str, Any] | None = None,
) -> Diagnostic:
    """A diagnostic from a kind and its arguments (`what` a `Kind`), or from a message and
    an optional kind (`what` a string: the kind's template is then `{message}`-like and the
    message is its argument)."""
    if isinstance(what, Kind):
        return Diagnostic.of(severity, what, location, **(args or {}))
    if isinstance(kind, str):
        kind = _KINDS.get(kind) or Kind(kind)
    chosen = kind or UNCLASSIFIED
    return Diagnostic(
        severity, what, location, chosen.code, MappingProxyType({"message": what, **(args or {})})
    )


def error(
    op: Operation | None, what: str | Kind, kind: Kind | str | None = None, **args: Any
) -> DiagnosticError:
    """Build (not raise) a located error at `op`: `raise error(op, KIND, name=...)`, or
    `raise error(op, "message", KIND)` for a kind whose template is `{message}`."""
    return DiagnosticError(make_diagnostic("error", op_location(op), what, kind, args))


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

    def emit(
        self,
        severity: Severity,
        op: Operation | None,
        what: str | Kind,
        kind: Kind | str | None = None,
        **args: Any,
    ) -> None:
        self.add(make_diagnostic(severity, op_location(op), what, kind, args))

    def add(self, diagnostic: Diagnostic) -> None:
        """Record `diagnostic` (collecting) or print it to stderr."""
        if self.collecting:
            self.emitted.append(diagnostic)
        else:
            print(self.render(diagnostic), file=sys.stderr)

    def warning(
        self, op: Operation | None, what: str | Kind, kind: Kind | str | None = None, **args: Any
    ) -> None:
        self.emit("warning", op, what, kind, **args)

    def remark(
        self, op: Operation | None, what: str | Kind, kind: Kind | str | None = None, **args: Any
    ) -> None:
        self.emit("remark", op, what, kind, **args)

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
    """A diagnostic as the tools' `--json` reports it: kind, message, severity, arguments,
    location (or null)."""
    loc = diagnostic.location
    return {
        "kind": diagnostic.kind,
        "message": diagnostic.message,
        "severity": diagnostic.severity,
        "args": {k: _json_value(v) for k, v in diagnostic.args.items()},
        "location": None
        if loc is None
        else {"file": loc.filename, "line": loc.line, "column": loc.column},
    }


def _json_value(value: Any) -> Any:
    """`value` as JSON can hold it: numbers, strings, booleans, None, lists of them; anything
    else as its `str`."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    return str(value)
