"""Reading `.mlir` text into IR with a source location on every operation.

xDSL's parser knows where each token is, but it keeps no location on the ops
it builds unless the text spells out `loc(...)`.  `LocatingParser` records the
position of each operation's first token as a `FileLineColLoc`, so verifier
and pass errors can point at the op (`npuir.diagnostics.op_location`).
Locations survive cloning, which gear versions and rewrites rely on.

It also places the parse errors xDSL leaves unlocated or misplaced where MLIR
would: a constraint the declarative format checks while parsing at its op, an
attribute that fails to verify at the attribute, an unknown op at its name,
an undefined value at its first use.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Attribute, AttributeInvT, Operation, SSAValue, TypeAttribute
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

from npuir.diagnostics import Diagnostic, DiagnosticError, SourceManager

SPLIT_MARKER = "// -----"


class _LinearLexer(MLIRLexer):
    """xDSL 0.74's lexer with a string-literal pattern that cannot backtrack.

    xDSL's pattern nests quantifiers (`(?:[^"...]+|...)*`), so an unclosed
    string on a long line takes exponential time to reject; matching the same
    language one character at a time takes linear time.
    """

    _unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')


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
        # Parser.__init__, with the linear lexer (Parser hard-codes its own).
        AttrParser.__init__(self, ParserState(_LinearLexer(Input(text, filename))), ctx)
        self.ssa_values = {}
        self.blocks = {}
        self.forward_block_references = defaultdict(list)
        self.forward_ssa_references = {}
        self._filename = filename
        self._file_attr = StringAttr(filename)
        self._sources = sources
        self._base_offset = base_offset
        # Names of the ops being parsed, innermost last, to name one in an error.
        self._op_names: list[str] = []
        self._type_cache: dict[str, TypeAttribute] = {}
        # Where each value was first used, to locate a use of an undefined one.
        self._first_uses: dict[str, Span[str]] = {}

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        try:
            return super().parse_module(allow_implicit_module)
        except ParseError as exc:
            # xDSL reports undefined values at the end of the input; point at
            # the first use instead, as MLIR does.
            if exc.msg.startswith("values used but not defined"):
                for name in self.forward_ssa_references:
                    if (span := self._first_uses.get(name)) is not None:
                        raise ParseError(span, f"use of undefined value '%{name}'") from None
            # xDSL's message when a region goes on with neither an op nor '}'
            # is only its context, " in block definition".
            if exc.msg == " in block definition":
                at_end = exc.span.start >= len(self.lexer.input.content)
                msg = (
                    "unexpected end of input: a region is not closed with '}'"
                    if at_end
                    else "expected an operation or '}' closing the region"
                )
                raise ParseError(exc.span, msg) from None
            raise

    def resolve_operand(
        self, operand: UnresolvedOperand, type: AttributeInvT
    ) -> SSAValue[AttributeInvT]:
        if operand.operand_name not in self.ssa_values:
            self._first_uses.setdefault(operand.operand_name, operand.span)
        return super().resolve_operand(operand, type)

    def _get_op_by_name(self, name: str) -> type[Operation]:
        try:
            op_type = super()._get_op_by_name(name)
        except ParseError as exc:
            # xDSL points after the name (at the next token); point at the name.
            start = self.lexer.input.content.rfind(name, 0, self.pos)
            if start < 0:
                raise
            raise ParseError(Span(start, start + len(name), self.lexer.input), exc.msg) from None
        self._op_names.append(op_type.name)
        return op_type

    def parse_optional_attribute(self) -> Attribute | None:
        start = self.pos
        try:
            return super().parse_optional_attribute()
        except VerifyException as exc:
            # Attributes verify as they are built: point at the attribute.
            self.raise_error(str(exc), start, self.pos)

    def parse_optional_type(self) -> TypeAttribute | None:
        start = self.pos
        token = self._current_token
        key = None
        if token.kind is MLIRTokenKind.BARE_IDENT and token.text == "tensor":
            # Large programs repeat a few tensor types thousands of times and
            # xDSL's type parser dominates parse time; a `tensor<...>` with no
            # nested '<' is fully determined by its text.
            content = self.lexer.input.content
            end = content.find(">", token.span.start)
            if end != -1 and "<" not in content[token.span.start + 7 : end]:
                key = content[token.span.start : end + 1]
                cached = self._type_cache.get(key)
                if cached is not None:
                    self._resume_from(end + 1)
                    return cached
        try:
            parsed = super().parse_optional_type()
        except VerifyException as exc:
            self.raise_error(str(exc), start, self.pos)
        if key is not None and parsed is not None:
            self._type_cache[key] = parsed
        return parsed

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        depth = len(self._op_names)
        try:
            op = super().parse_operation()
        except VerifyException as exc:
            # The declarative format checks operand and result constraints while
            # parsing, without a location: pin the error on the op.
            name = self._op_names[depth] if len(self._op_names) > depth else None
            self.raise_error(f"'{name}' op {exc}" if name else str(exc), start)
        finally:
            del self._op_names[depth:]
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


def decode_source(data: bytes, filename: str, sources: SourceManager | None = None) -> str:
    """Decode a file as UTF-8, turning bad bytes into a located error.

    On bad bytes, `sources` (if given) learns the text with them replaced, so
    the error can show the offending line.
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        sources = sources if sources is not None else SourceManager()
        good = data[: exc.start].decode("utf-8")
        sources.add(filename, data.decode("utf-8", errors="replace"))
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
    try:
        # Building the parser lexes the first token, which can fail too.
        parser = LocatingParser(ctx, text, filename, sources, base_offset)
        return parser.parse_module()
    except ParseError as exc:
        loc = sources.location_of_offset(filename, base_offset + exc.span.start)
        raise DiagnosticError(Diagnostic("error", exc.msg, loc)) from None
    except VerifyException as exc:
        # Attributes verify as they are built, so a bad attribute surfaces here.
        offset = parser.pos if parser.pos < len(text) else len(text)
        loc = sources.location_of_offset(filename, base_offset + offset)
        raise DiagnosticError(Diagnostic("error", str(exc), loc)) from None
