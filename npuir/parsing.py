"""Reading `.mlir` text into IR with a source location on every operation.

xDSL's parser knows where each token is, but it keeps no location on the ops
it builds unless the text spells out `loc(...)`.  `LocatingParser` records the
position of each operation's first token as a `FileLineColLoc`, so verifier
and pass errors can point at the op (`npuir.diagnostics.op_location`).
Locations survive cloning, which gear versions and rewrites rely on.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException

from npuir.diagnostics import Diagnostic, DiagnosticError, SourceManager

SPLIT_MARKER = "// -----"


class LocatingParser(Parser):
    """A `Parser` that stamps each parsed op with its file:line:col."""

    def __init__(
        self,
        ctx: Context,
        text: str,
        filename: str,
        sources: SourceManager,
        base_offset: int = 0,
    ) -> None:
        super().__init__(ctx, text, filename)
        self._filename = filename
        self._file_attr = StringAttr(filename)
        self._sources = sources
        self._base_offset = base_offset

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        op = super().parse_operation()
        if isinstance(op.location, UnknownLoc):
            loc = self._sources.location_of_offset(self._filename, self._base_offset + start)
            op.location = FileLineColLoc(self._file_attr, IntAttr(loc.line), IntAttr(loc.column))
        return op


@dataclass(frozen=True)
class Chunk:
    """A piece of an input file, and where it starts in that file."""

    text: str
    offset: int


def split_input(text: str, split: bool) -> Iterator[Chunk]:
    """Split `text` at lines that are exactly `// -----` (MLIR's convention)."""
    if not split:
        yield Chunk(text, 0)
        return
    start = 0
    pos = 0
    while pos <= len(text):
        end = text.find("\n", pos)
        line_end = len(text) if end == -1 else end
        if text[pos:line_end].strip() == SPLIT_MARKER:
            yield Chunk(text[start:pos], start)
            start = line_end + 1
        if end == -1:
            break
        pos = end + 1
    yield Chunk(text[start:], start)


def decode_source(data: bytes, filename: str) -> str:
    """Decode a file as UTF-8, turning bad bytes into a located error."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        sources = SourceManager()
        good = data[: exc.start].decode("utf-8")
        sources.add(filename, good)
        loc = sources.location_of_offset(filename, len(good))
        raise DiagnosticError(
            Diagnostic("error", f"input is not valid UTF-8 (byte 0x{data[exc.start]:02x})", loc)
        ) from None


def parse_module(
    ctx: Context,
    text: str,
    filename: str,
    sources: SourceManager,
    base_offset: int = 0,
) -> ModuleOp:
    """Parse one module; a syntax error becomes a located `DiagnosticError`."""
    parser = LocatingParser(ctx, text, filename, sources, base_offset)
    try:
        return parser.parse_module()
    except ParseError as exc:
        loc = sources.location_of_offset(filename, base_offset + exc.span.start)
        raise DiagnosticError(Diagnostic("error", exc.msg, loc)) from None
    except VerifyException as exc:
        # Attributes verify as they are built, so a bad attribute surfaces here.
        offset = parser.pos if parser.pos < len(text) else len(text)
        loc = sources.location_of_offset(filename, base_offset + offset)
        raise DiagnosticError(Diagnostic("error", str(exc), loc)) from None
