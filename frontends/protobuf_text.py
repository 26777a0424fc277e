"""Stage one of the GE importer: protobuf text format into located messages.

`parse(text, filename)` reads text written in the protobuf text format (the
grammar is `protobuf_text.lark`) and returns the top-level `Message`.  Valid text
is read by `_read_fast`, a loop over the lexer's token pattern that builds the
messages directly; text it refuses is read again by lark's LALR parser on the
grammar (messages built as it reduces, no parse tree), whose error says where
and why.  A dump repeats its blocks (a tensor descriptor, an attribute) thousands of
times: the fast reader reads each repeated block's text once and places the others on
it, their fields (with their own positions) made only when asked for.  The garbage collector is paused meanwhile.  A message keeps its fields in file order, repeated
fields as lists, and the line and column of every field, so that the second
stage (`npuir.frontends.ge_graph`) can point a diagnostic at the `op {` block or the
`input:` string it is about.  Nothing here knows GE's schema.

Scalars become `str` (strings, unescaped), `int` / `float` (numbers) and
`Ident` (bare identifiers: enum values such as `DT_FLOAT16`, `true`, `false`).
A syntax error is a `DiagnosticError` at the offending token; so is a number a
Python number cannot hold (more than 4,300 digits, or a finite-looking float
beyond a double: `inf` is spelled `inf`).

Tokens come from `_Lexer`, one regular expression applied once per token, which
also skips whitespace and comments: lark's contextual lexer tried each state's
terminals in turn and was half of the parse time.  Every pattern runs in time and
memory linear in its match (a string is `"[^"\\\n]*(\\.[^"\\\n]*)*"`, with
no alternation repeated per character), so a 5 MB string costs megabytes.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError
from lark.lexer import Lexer, LexerState

from npuir.diagnostics import PARSE_ERROR, Diagnostic, DiagnosticError, Kind, SourceLocation
from npuir.gc_pause import collector_paused

TOO_DEEP = Kind("parse.too-deep", "messages are nested too deeply")
"""Input nested deeper than the parser's bound."""


class Ident(str):
    """A bare identifier value (an enum name such as `DT_FLOAT16`, or true/false)."""

    __slots__ = ()


Scalar = str | int | float
Value = Any  # Message | Scalar: recursive, kept loose for mypy


@dataclass(slots=True)
class Entry:
    """One occurrence of a field: its value and where its name stands."""

    value: Value
    line: int
    column: int


@dataclass(slots=True)
class Message:
    """A protobuf text message: named fields, each a list of entries in file order."""

    line: int
    column: int
    fields: dict[str, list[Entry]] = field(default_factory=dict[str, list[Entry]])

    def all(self, name: str) -> list[Value]:
        """Every value of the (repeated) field `name`, in file order."""
        return [e.value for e in self.fields.get(name, ())]

    def entries(self, name: str) -> list[Entry]:
        return self.fields.get(name, [])

    def get(self, name: str, default: Value = None) -> Value:
        """The last value of `name` (protobuf's rule for a repeated singular field)."""
        entries = self.fields.get(name)
        return entries[-1].value if entries else default

    def messages(self, name: str) -> Iterator[Message]:
        """The message values of `name`; scalar values of that name are skipped."""
        for entry in self.fields.get(name, ()):
            if isinstance(entry.value, Message):
                yield entry.value

    def text_key(self) -> object | None:
        """An object shared by the messages read from identical text (a repeated block,
        see `_read_fast`), so that what is worked out from one holds for the others;
        None when this message was read on its own."""
        return None


_FIELDS = Message.__dict__["fields"]
"""The slot holding a message's fields (`_Placed` reads it under its own property)."""


class _Placed(Message):
    """A message whose text, braces included, is that of one read before (`template`,
    read from its body alone: its positions count from the body's first character).
    Its fields are the template's, moved to where this one's body starts (`origin`,
    the line and column of the character after its `{`), made when first asked for:
    a dump repeats its tensor descriptors and attributes thousands of times."""

    __slots__ = ("origin", "template")

    def __init__(self, line: int, column: int, template: Message, origin: tuple[int, int]):
        self.line = line
        self.column = column
        self.template = template
        self.origin = origin

    @property
    def fields(self) -> dict[str, list[Entry]]:  # type: ignore[override]
        try:
            return _FIELDS.__get__(self)
        except AttributeError:
            pass
        line0, column0 = self.origin
        out: dict[str, list[Entry]] = {}
        for name, entries in self.template.fields.items():
            moved: list[Entry] = []
            for e in entries:
                value = e.value
                if isinstance(value, Message):
                    line, column = _moved(value.line, value.column, line0, column0)
                    value = _Placed(line, column, value, self.origin)
                line, column = _moved(e.line, e.column, line0, column0)
                moved.append(Entry(value, line, column))
            out[name] = moved
        _FIELDS.__set__(self, out)
        return out

    def text_key(self) -> object | None:
        return self.template

    def __eq__(self, other: object) -> bool:
        # Equal to a message read on its own with the same fields and positions (the
        # dataclass's own equality wants one class).
        if not isinstance(other, Message):
            return NotImplemented
        return (self.line, self.column, self.fields) == (other.line, other.column, other.fields)

    __hash__ = None  # type: ignore[assignment]


def shared(msg: Message) -> Message:
    """A message equal to `msg`, built from it when its fields are asked for, whose
    `text_key` is `msg`: what a caller reading one text many times hands out for each."""
    return _Placed(msg.line, msg.column, msg, (1, 1))


def _moved(line: int, column: int, line0: int, column0: int) -> tuple[int, int]:
    """A position in a template (from its body's start) at the body starting at
    `line0`:`column0`."""
    return line0 + line - 1, column0 + column - 1 if line == 1 else column


_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


def unescape(body: str) -> str:
    """Undo C-style escapes (`\\n`, `\\'`, `\\x41`, octal `\\101`) in a string body.

    Byte escapes give the character of that code point (latin-1), as Python's
    `bytes` repr, which TorchAir's pbtxt writer uses, means them.
    """
    if "\\" not in body:
        return body
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        ch = body[i]
        if ch != "\\" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt in "xX":
            j = i + 2
            while j < n and j < i + 4 and body[j] in "0123456789abcdefABCDEF":
                j += 1
            out.append(chr(int(body[i + 2 : j], 16)) if j > i + 2 else nxt)
            i = j if j > i + 2 else i + 2
        elif nxt in "01234567":
            j = i + 1
            while j < n and j < i + 4 and body[j] in "01234567":
                j += 1
            out.append(chr(int(body[i + 1 : j], 8) & 0xFF))
            i = j
        else:
            out.append(nxt)
            i += 2
    return "".join(out)


MAX_DIGITS = 4300
"""Python's limit on converting a decimal string to an int (`sys.int_info`); a hex
literal is held to the same number of digits."""
TOO_LONG = Kind("parse.number-too-long", "integer of {digits} digits is too long (at most {limit})")
"""An integer literal beyond Python's conversion limit; arguments: `digits`, `limit`."""
OUT_OF_RANGE = Kind(
    "parse.number-out-of-range", "number {value} is out of range of a double (at most {limit})"
)
"""A finite float literal that a double cannot hold (`1e999999`: it is not read as
infinity, which is spelled `inf`); arguments: `value` (shortened), `limit`."""


class _BadNumber(Exception):
    """A number the text spells but a Python number cannot hold, at `offset`."""

    def __init__(self, offset: int, kind: Kind, **args: object) -> None:
        super().__init__(kind.code)
        self.offset = offset
        self.kind = kind
        self.args_ = args


def _number(text: str, offset: int = 0) -> int | float:
    lowered = text.lower()
    if "0x" in lowered:
        if len(text) - 2 - text.startswith("-") > MAX_DIGITS:
            raise _BadNumber(offset, TOO_LONG, digits=len(text) - 2, limit=MAX_DIGITS)
        return int(text, 16)
    body = text[:-1] if lowered.endswith("f") else text
    if any(c in body for c in ".eE"):
        value = float(body)
        if math.isinf(value):
            shown = body if len(body) <= 40 else body[:37] + "..."
            raise _BadNumber(offset, OUT_OF_RANGE, value=shown, limit=sys.float_info.max)
        return value
    if len(body) - body.startswith("-") > MAX_DIGITS:
        raise _BadNumber(offset, TOO_LONG, digits=len(body), limit=MAX_DIGITS)
    return int(body, 10)


_Field = tuple[str, Entry]


@v_args(inline=True)
class _Build(Transformer[Token, Message]):
    """Builds messages bottom-up while LALR parses (no parse tree is kept)."""

    def start(self, *items: _Field) -> Message:
        return _message(1, 1, items)

    def message(self, name: Token, *items: _Field) -> _Field:
        line, column = name.line or 0, name.column or 0
        return str(name), Entry(_message(line, column, items), line, column)

    def scalar(self, name: Token, value: Value) -> _Field:
        return str(name), Entry(value, name.line or 0, name.column or 0)

    def repeated(self, name: Token, *values: Value) -> _Field:
        # `name: [a, b]` is two entries of `name`; the marker keeps them together.
        kept = [v for v in values if v is not None]
        return str(name), Entry(_Repeated(kept), name.line or 0, name.column or 0)

    def value(self, v: Value) -> Value:
        return v

    def number(self, tok: Token) -> Value:
        return _number(str(tok), tok.start_pos or 0)

    def ident(self, tok: Token) -> Value:
        text = str(tok)
        lowered = text.lower().lstrip("-")
        if lowered in ("inf", "infinity", "nan"):
            return float(text)
        return Ident(text)

    def string(self, joined: Token) -> str:
        return joined.value  # the lexer joined and unescaped adjacent strings


class _Repeated(list[Value]):
    """The values of one `name: [a, b]` field, spread into entries by `_message`."""


def _message(line: int, column: int, items: tuple[_Field, ...]) -> Message:
    msg = Message(line, column)
    for name, entry in items:
        bucket = msg.fields.setdefault(name, [])
        if isinstance(entry.value, _Repeated):
            bucket.extend(Entry(v, entry.line, entry.column) for v in entry.value)
        else:
            bucket.append(entry)
    return msg


_SKIP = r"[ \t\f\r\n]*+(?:\#[^\n]*+[ \t\f\r\n]*+)*+"
"""Whitespace and comments (the grammar's ignored text), without backtracking."""
_STR = r""""[^"\\\n]*(?:\\.[^"\\\n]*)*"|'[^'\\\n]*(?:\\.[^'\\\n]*)*'"""
_NAME = r"[A-Za-z_][A-Za-z0-9_]*|\[[A-Za-z_][A-Za-z0-9_./]*\]"
_TOKEN = re.compile(
    _SKIP
    + "(?:"
    + rf"(?P<name>{_NAME})(?P<colon>{_SKIP}:)?(?P<open>{_SKIP}[{{<])?"
    + r"|(?P<number>-?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fF]?))"
    + r"|(?P<signed>-[A-Za-z_][A-Za-z0-9_]*)"
    + rf"|(?P<string>{_STR})"
    + r"|(?P<punct>[{}<>\[\]:,;])"
    + ")"
)
"""Skipped text, then one token; the group that matched says which kind."""
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NEXT_STRING = re.compile(rf"{_SKIP}({_STR})")
_SKIPPED = re.compile(_SKIP)
_PUNCT = {
    "{": "LBRACE",
    "}": "RBRACE",
    "<": "LESSTHAN",
    ">": "MORETHAN",
    "[": "LSQB",
    "]": "RSQB",
    ":": "COLON",
    ",": "COMMA",
    ";": "SEMICOLON",
}
_FIELD_ENDS = frozenset(("STRING", "NUMBER", "SIGNED_IDENT", "RBRACE", "MORETHAN", "RSQB"))
"""Tokens after which a "," or ";" ends a field."""


class _Lexer(Lexer):
    """The tokens of protobuf text (see the grammar), one regular expression match each.

    Where a token stands decides what it is: an identifier is a value (SIGNED_IDENT)
    after a field's `:` and inside `[...]`, else a field name: OPEN or OPEN_ANGLE with
    the `{` or `<` that follows it (and the `:` between, if any), KEY with its `:`, NAME
    alone; `[x.y]` is an extension's field name only where a field name stands.
    Adjacent strings are one STRING whose value is their joined, unescaped text.  A
    "," or ";" that ends a field is dropped.
    """

    __future_interface__ = 2

    def __init__(self, lexer_conf: object) -> None:
        pass

    def lex(self, lexer_state: LexerState, parser_state: object) -> Iterator[Token]:
        text = lexer_state.text.text
        assert isinstance(text, str)
        new = Token._future_new
        match = _TOKEN.match
        pos, end = 0, len(text)
        line, line_start = 1, 0
        value_next = False  # after KEY, or after '[' or ',' in a short repeated list
        in_list = False
        field_end = False
        while pos < end:
            m = match(text, pos)
            if m is None:
                at = _SKIPPED.match(text, pos).end()  # type: ignore[union-attr]
                if at == end:
                    return
                line += text.count("\n", pos, at)
                raise UnexpectedCharacters(text, at, line, at - text.rfind("\n", 0, at))
            kind = m.lastgroup or ""
            if kind in ("colon", "open"):
                kind = "name"
            start = m.start(kind)
            newlines = text.count("\n", pos, start)
            if newlines:
                line += newlines
                line_start = text.rfind("\n", pos, start) + 1
            column = start - line_start + 1
            pos = m.end()
            if kind == "name":
                word = m.group("name")
                if value_next:
                    pos = m.end("name")
                    if word[0] == "[":
                        # `[` opens a short repeated list here, not an extension's name.
                        token = new("LSQB", "[", start, line, column)
                        pos = start + 1
                        in_list = True
                    else:
                        token = new("SIGNED_IDENT", word, start, line, column)
                        value_next = False
                elif m.group("open") is not None:
                    opener = m.group("open")[-1]
                    token = new(
                        "OPEN" if opener == "{" else "OPEN_ANGLE", word, start, line, column
                    )
                elif m.group("colon") is not None:
                    token = new("KEY", word, start, line, column)
                    value_next = True
                else:
                    token = new("NAME", word, start, line, column)
            elif kind == "punct":
                ch = m.group("punct")
                if ch in ",;" and field_end:
                    field_end = False  # the separator that ends a field
                    continue
                token = new(_PUNCT[ch], ch, start, line, column)
                if ch == "[" and value_next:
                    in_list = True
                elif ch == "]":
                    in_list = False
                value_next = in_list and ch in "[,"
            elif kind == "string":
                parts = [m.group("string")]
                while (more := _NEXT_STRING.match(text, pos)) is not None:
                    parts.append(more.group(1))
                    pos = more.end()
                value = "".join([unescape(part[1:-1]) for part in parts])
                token = new("STRING", value, start, line, column)
                value_next = in_list
            else:
                token = new(
                    "SIGNED_IDENT" if kind == "signed" else "NUMBER",
                    m.group(kind),
                    start,
                    line,
                    column,
                )
                value_next = in_list
            # Text the token took after its start (a KEY's `:`, joined strings) may hold
            # newlines.
            tail = text.count("\n", start, pos)
            if tail:
                line += tail
                line_start = text.rfind("\n", start, pos) + 1
            field_end = not in_list and token.type in _FIELD_ENDS
            yield token


@cache
def _parser() -> Lark:
    grammar = (Path(__file__).parent / "protobuf_text.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", lexer=_Lexer, transformer=_Build(), maybe_placeholders=True)


def _describe(exc: UnexpectedInput) -> str:
    if isinstance(exc, UnexpectedCharacters):
        ch = exc.char
        if ch in "\"'":
            return "a string is not closed on its line"
        return (
            f"unexpected character {ch!r}"
            if ch.isprintable()
            else f"unexpected byte {ord(ch):#04x}"
        )
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        accepted = exc.accepts or exc.expected
        if tok.type == "$END" and "RBRACE" in accepted:
            return "unexpected end of input: a message is not closed with '}'"
        expected = sorted({_readable(t) for t in accepted})
        shown = ", ".join(expected[:6]) + (", ..." if len(expected) > 6 else "")
        what = _readable(tok.type)
        # A STRING token holds its unescaped text; show it quoted, as written.
        shown_tok = f'"{tok}"' if tok.type == "STRING" else str(tok)
        found = what if what.startswith("'") or tok.type == "$END" else f"{what} '{shown_tok}'"
        return f"unexpected {found}" + (f"; expected {shown}" if shown else "")
    return "syntax error"


_TOKEN_NAMES = {
    "NAME": "field name",
    "KEY": "field name",
    "OPEN": "field name",
    "OPEN_ANGLE": "field name",
    "SIGNED_IDENT": "identifier",
    "NUMBER": "number",
    "STRING": "string",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "LSQB": "'['",
    "RSQB": "']'",
    "COLON": "':'",
    "LESSTHAN": "'<'",
    "MORETHAN": "'>'",
    "COMMA": "','",
    "_SEP": "',' or ';'",
    "SEMICOLON": "';'",
    "$END": "end of input",
}


def _readable(token_type: str) -> str:
    return _TOKEN_NAMES.get(token_type, token_type.lower())


def _ident(text: str) -> Value:
    lowered = text.lower().lstrip("-")
    if lowered in ("inf", "infinity", "nan"):
        return float(text)
    return Ident(text)


class _NotFast(Exception):
    """The fast reader met something it does not accept: lark reads the text instead."""


def _nested_block(depth: int) -> str:
    """A `{...}` block nested at most `depth` deep, its strings whole (a brace in one is
    text) and without comments, matched without backtracking."""
    inner = rf"""[^{{}}"'#]++|{_STR}"""
    if depth > 1:
        inner += "|" + _nested_block(depth - 1)
    return rf"\{{(?:{inner})*+\}}"


_BLOCK = re.compile(_nested_block(5))
_BLOCK_MAX = 4096
"""Blocks longer than this are not looked up (a key costs its length to hash)."""
_SHARED_MAX = 1 << 16
"""At most this many distinct repeated blocks are kept as templates."""


class _Shared:
    """The repeated blocks of one text: a block's text is remembered (by its hash) the
    first time, read into a template the second, and placed from that every later time."""

    def __init__(self) -> None:
        self.seen: set[int] = set()
        self.templates: dict[str, tuple[Message, int, int]] = {}

    def template(self, span: str, start: int) -> tuple[Message, int, int] | None:
        """The template of the block `span` (its body's message, the newlines in the
        block, the offset after its last newline), None the first time it is met; the
        block starts at offset `start` of the text (for a number's error)."""
        hit = self.templates.get(span)
        if hit is not None:
            return hit
        key = hash(span)
        if key not in self.seen:
            if len(self.seen) < 1 << 22:
                self.seen.add(key)
            return None
        if len(self.templates) >= _SHARED_MAX:
            return None
        try:
            body = _read_fast(span[1:-1])
        except _BadNumber as exc:
            exc.offset += start + 1
            raise
        newlines = span.count("\n")
        hit = self.templates[span] = (body, newlines, span.rfind("\n") + 1)
        return hit


Convert = Callable[[tuple[str, ...], Message], Any]
"""What `parse` calls as each message one or two levels deep is complete, with the field
names leading to it; what it returns stands in the message's place."""


def _read_fast(text: str, share: bool = False, convert: Convert | None = None) -> Message:
    """The grammar's language, read with the lexer's token pattern by a loop that builds
    the messages directly, in time linear in the text.

    lark's LALR driver costs about 1 us per token -- 5x what a 10^6-op dump costs as
    `.mlir` -- so valid text takes this path; text it refuses (`_NotFast`) is read again
    by lark, which says where and why, so every error message stays lark's.

    `convert`: see `parse`.  With `share`, a block nested in a top-level message (a tensor descriptor, an
    attribute) whose text repeats one met twice before is not read again: it becomes a
    `_Placed` message on the template read from that text.
    """
    shared = _Shared() if share else None
    match = _TOKEN.match
    next_string = _NEXT_STRING.match
    root = Message(1, 1)
    # The open messages, innermost last, each with the punctuation that closes it.
    # ... with its name and its entry in its parent (where `convert` puts what it gives).
    stack: list[tuple[Message, str, str, Entry | None]] = [(root, "", "", None)]
    msg = root
    pos, end = 0, len(text)
    line, line_start = 1, 0

    def value_at(at: int) -> tuple[Value, int]:
        """The scalar starting at `at` (after skipped text) and where it ends; newlines
        inside (between joined strings) are counted by the caller."""
        v = match(text, at)
        if v is None:
            raise _NotFast
        kind = v.lastgroup
        if kind in ("name", "colon", "open"):
            word = v.group("name")
            if word[0] == "[":
                raise _NotFast  # `[x]` as a value: the lexer's list opener, rare
            return _ident(word), v.end("name")
        if kind == "number":
            return _number(v.group("number"), v.start("number")), v.end()
        if kind == "signed":
            return _ident(v.group("signed")), v.end()
        if kind == "string":
            parts = [v.group("string")]
            after = v.end()
            while (more := next_string(text, after)) is not None:
                parts.append(more.group(1))
                after = more.end()
            return "".join([unescape(part[1:-1]) for part in parts]), after
        raise _NotFast

    simple = _SIMPLE_FIELD.match
    while True:
        f = simple(text, pos)
        if f is not None:
            # The common field, on one line: one match, no separator, no tail.
            start = f.start("key")
            newlines = text.count("\n", pos, start)
            if newlines:
                line += newlines
                line_start = text.rfind("\n", pos, start) + 1
            name = f.group("key")
            bucket = msg.fields.get(name)
            if bucket is None:
                bucket = msg.fields[name] = []
            value = f.group("s")
            if value is None:
                value = f.group("q")
                if value is None:
                    digits = f.group("int")
                    value = _ident(f.group("word")) if digits is None else int(digits)
            bucket.append(Entry(value, line, start - line_start + 1))
            pos = f.end()
            continue
        m = match(text, pos)
        if m is None:
            at = _SKIPPED.match(text, pos).end()  # type: ignore[union-attr]
            if at == end and len(stack) == 1:
                return root
            raise _NotFast
        kind = m.lastgroup or ""
        start = m.start(kind if kind not in ("colon", "open") else "name")
        newlines = text.count("\n", pos, start)
        if newlines:
            line += newlines
            line_start = text.rfind("\n", pos, start) + 1
        column = start - line_start + 1
        if kind == "punct":
            closer = m.group("punct")
            if closer != stack[-1][1]:
                raise _NotFast
            done, _, done_name, done_entry = stack.pop()
            msg = stack[-1][0]
            if convert is not None and len(stack) <= 2 and done_entry is not None:
                path = (done_name,) if len(stack) == 1 else (stack[-1][2], done_name)
                done_entry.value = convert(path, done)
            pos = m.end()
        elif kind in ("name", "colon", "open"):
            name = m.group("name")
            bucket = msg.fields.get(name)
            if bucket is None:
                bucket = msg.fields[name] = []
            if m.group("open") is not None:
                opener = m.group("open")[-1]
                brace = m.end() - 1
                if (
                    shared is not None
                    and len(stack) > 1
                    and opener == "{"
                    and (block := _BLOCK.match(text, brace)) is not None
                    and block.end() - brace <= _BLOCK_MAX
                    and (hit := shared.template(text[brace : block.end()], brace)) is not None
                ):
                    body, newlines, last = hit
                    origin_line = line + text.count("\n", start, brace)
                    origin_start = text.rfind("\n", 0, brace + 1) + 1
                    origin = (origin_line, brace + 2 - origin_start)
                    bucket.append(Entry(_Placed(line, column, body, origin), line, column))
                    pos = block.end()
                    if newlines:
                        line = origin_line + newlines
                        line_start = brace + last
                        start = pos  # the newlines are counted
                else:
                    child = Message(line, column)
                    entry = Entry(child, line, column)
                    bucket.append(entry)
                    stack.append((child, "}" if opener == "{" else ">", name, entry))
                    msg = child
                    pos = m.end()
                    continue  # a message's opener ends no field
            elif m.group("colon") is not None:
                pos = m.end()
                after = _SKIPPED.match(text, pos).end()  # type: ignore[union-attr]
                if text.startswith("[", after):
                    # `name: [a, b]`: one entry per value, each at the name.
                    pos = after + 1
                    first = True
                    while True:
                        at = _SKIPPED.match(text, pos).end()  # type: ignore[union-attr]
                        if text.startswith("]", at):
                            if not first:
                                raise _NotFast  # `[a,]`
                            pos = at + 1
                            break
                        value, pos = value_at(pos)
                        bucket.append(Entry(value, line, column))
                        at = _SKIPPED.match(text, pos).end()  # type: ignore[union-attr]
                        if text.startswith("]", at):
                            pos = at + 1
                            break
                        if not text.startswith(",", at):
                            raise _NotFast
                        pos = at + 1
                        first = False
                else:
                    value, pos = value_at(pos)
                    bucket.append(Entry(value, line, column))
            else:
                raise _NotFast  # a name with neither ':' nor a message
        else:
            raise _NotFast  # a value where a field name stands
        # Newlines the field took after its start (a list, joined strings), then the one
        # "," or ";" that may end it.
        tail = text.count("\n", start, pos)
        if tail:
            line += tail
            line_start = text.rfind("\n", start, pos) + 1
        sep = _SEPARATOR.match(text, pos)
        if sep is not None:
            newlines = text.count("\n", pos, sep.end())
            if newlines:
                line += newlines
                line_start = text.rfind("\n", pos, sep.end()) + 1
            pos = sep.end()


_SIMPLE_FIELD = re.compile(
    _SKIP
    + r"""(?P<key>[A-Za-z_][A-Za-z0-9_]*)[ \t]*+:[ \t]*+"""
    + r"""(?:"(?P<s>[^"\\\n]*)"|'(?P<q>[^'\\\n]*)'|(?P<int>-?\d{1,18})|(?P<word>[A-Za-z_][A-Za-z0-9_]*))"""
    + r"(?=[ \t\r\n]*+\}|[ \t\r\n]++[A-Za-z_]|[ \t\r\n]*+\Z)"
)
"""`name: value` with a string without escapes, a small integer or an identifier as its
value, and a field name, a `}` or the end next (no separator, no string joined to it):
read by `_read_fast` in one match."""
_SEPARATOR = re.compile(_SKIP + "[,;]")
"""The separator that may end a field, after skipped text."""


def parse(
    text: str, filename: str, line_offset: int = 0, convert: Convert | None = None
) -> Message:
    """Parse protobuf text into its top-level `Message`; errors are located in `filename`.

    `line_offset` shifts reported lines, for text that starts inside another file.
    `convert(path, message)`, when given, may be called as each message one or two levels
    deep is complete (`path`: the field names leading to it, `("op",)` or `("graph",
    "op")`), and what it returns stands in the message's place: a reader that turns
    each record of a large file into its own object as it goes holds one record's
    messages at a time, not the whole file's.  It must not raise; on text the fast reader
    leaves to lark it is not called (the caller converts what is still a message).
    """
    try:
        with collector_paused():
            try:
                return _read_fast(text, share=True, convert=convert)
            except _NotFast:
                pass
            return _parser().parse(text)  # type: ignore[return-value]
    except (_BadNumber, VisitError) as exc:
        bad = exc.orig_exc if isinstance(exc, VisitError) else exc
        if not isinstance(bad, _BadNumber):
            raise
        at = bad.offset
        line = text.count("\n", 0, at) + 1 + line_offset
        column = at - text.rfind("\n", 0, at)
        raise DiagnosticError(
            Diagnostic.of("error", bad.kind, SourceLocation(filename, line, column), **bad.args_)
        ) from None
    except UnexpectedInput as exc:
        line = max(getattr(exc, "line", 1) or 1, 1) + line_offset
        column = max(getattr(exc, "column", 1) or 1, 1)
        if isinstance(exc, UnexpectedToken) and exc.token.type == "$END":
            line, column = _end_of(text, line_offset)
        raise DiagnosticError(
            Diagnostic(
                "error",
                _describe(exc),
                SourceLocation(filename, line, column),
                kind=PARSE_ERROR.code,
            )
        ) from None
    except RecursionError:
        raise DiagnosticError(
            Diagnostic.of(
                "error",
                TOO_DEEP,
                SourceLocation(filename, 1, 1),
            )
        ) from None


def _end_of(text: str, line_offset: int) -> tuple[int, int]:
    lines = text.split("\n")
    return len(lines) + line_offset, len(lines[-1]) + 1
