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

Regions are parsed with scoped value names: xDSL 0.74 copies the whole table
of SSA names on entering every region, so a function with R `stream.switch`
scopes and V values parses in O(R x V); here a region records the names it
defines and forgets them when it closes, which keeps MLIR's visibility rules
(outer values are visible inside, a region's values are not visible after
it) at a cost of O(names the region defines).  Nesting of regions,
attributes and types is bounded (`npuir.deep_stack.MAX_NESTING`) so that deep
input ends in a located error rather than an exhausted stack.

Where xDSL and MLIR differ, it reads what MLIR reads: an empty input is an
empty module; an escaped string literal whose bytes are UTF-8 is a string
(xDSL prints "é" as `"\\C3\\A9"` and would read back bytes); a location alias
may be used before its definition, as `mlir-opt --mlir-print-debuginfo`
prints them.  Integer literals Python cannot convert are located errors.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    AnyDenseElement,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    Float16Type,
    Float32Type,
    Float64Type,
    IntAttr,
    IntegerType,
    LocationAttr,
    ModuleOp,
    NameLoc,
    RankedStructure,
    Signedness,
    StringAttr,
    TensorType,
    UnknownLoc,
)
from xdsl.ir import Attribute, AttributeInvT, Block, Operation, Region, SSAValue, TypeAttribute
from xdsl.irdl import IRDLOperation
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Span, Token
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRToken, MLIRTokenKind, StringLiteral

from npuir.deep_stack import MAX_NESTING, deep_stack
from npuir.diagnostics import (
    PARSE_ERROR,
    Diagnostic,
    DiagnosticError,
    Kind,
    SourceManager,
    printable_name,
)
from npuir.fastparse import OpLineReader, RegionOpHeader
from npuir.gc_pause import collector_paused

NOT_UTF8 = Kind("input.not-utf8", "input is not valid UTF-8 (byte {byte})")
"""Input that is not valid UTF-8; argument: `byte`, the first bad one (`0xNN`)."""

SPLIT_MARKER = "// -----"

_LOC_ALIAS = re.compile(r"\s*\(\s*(#[A-Za-z_][\w.$-]*)\s*\)")
"""The rest of `loc(#alias)` after `loc`."""
_DEFERRED = "npuir.deferred-location "
"""Marks a placeholder location naming an alias defined further down."""

MAX_DECIMAL_DIGITS = 4300
"""Python's default limit on int <-> decimal string conversion (sys.int_info)."""
I64_MAX = 2**63 - 1
"""The largest tensor dimension (MLIR's dims are int64)."""
MAX_HEX_DIGITS = 3570
"""Hexadecimal digits whose value stays below 10**4300."""


class _LinearLexer(MLIRLexer):
    """xDSL 0.74's lexer with a string-literal pattern that cannot backtrack.

    xDSL's pattern nests quantifiers (`(?:[^"...]+|...)*`), so an unclosed
    string on a long line takes exponential time to reject.  The same language
    with possessive quantifiers never backtracks, and takes runs of plain
    characters at once: matching one character per repetition took 0.45 us and
    a saved state per character (a 32 MB hex constant cost 3.8 GB).
    """

    _unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"')

    def _lex_string_literal(self, start_pos: int) -> MLIRToken:
        # xDSL makes any escaped literal with non-ASCII bytes a bytes literal,
        # so `"\C3\A9"` (how xDSL and MLIR print "é") would read back as
        # bytes; as in MLIR, a literal is a string when its bytes are UTF-8.
        token = super()._lex_string_literal(start_pos)
        if token.kind is MLIRTokenKind.BYTES_LIT:
            try:
                StringLiteral.from_span(token.span).bytes_contents.decode("utf-8")
            except UnicodeDecodeError:
                return token
            return Token(MLIRTokenKind.STRING_LIT, token.span)
        return token

    def lex(self) -> MLIRToken:
        token = super().lex()
        if token.kind is MLIRTokenKind.INTEGER_LIT:
            # Python refuses to convert decimal strings of more than 4,300
            # digits (and prints no int that long); a hexadecimal literal of
            # more than 3,570 digits exceeds 10**4300 too.
            text = token.text
            digits = len(text) - 2 if text[:2] in ("0x", "0X") else len(text)
            limit = MAX_HEX_DIGITS if digits != len(text) else MAX_DECIMAL_DIGITS
            if digits > limit:
                raise ParseError(
                    token.span,
                    f"integer literal of {digits} digits is too long (at most {limit})",
                )
        return token


class LocatingParser(Parser):
    """A `Parser` that stamps each parsed op with its file:line:col."""

    def __init__(
        self,
        ctx: Context,
        text: str,
        filename: str,
        sources: SourceManager,
        base_offset: int = 0,
        fast: bool = True,
    ) -> None:
        # Parser.__init__, with the linear lexer (Parser hard-codes its own).
        AttrParser.__init__(self, ParserState(_LinearLexer(Input(text, filename))), ctx)
        self.ssa_values = {}
        self.blocks = {}
        self.forward_block_references = defaultdict(list)
        self.forward_ssa_references = {}
        self._filename = filename
        # A name that is not UTF-8 is kept printable in the IR (its locations print, and
        # the diagnostics of later passes still show the source line).
        printable = printable_name(filename)
        if printable != filename:
            sources.add(printable, text)
        self._file_attr = StringAttr(printable)
        self._sources = sources
        self._base_offset = base_offset
        # Names of the ops being parsed, innermost last, to name one in an error.
        self._op_names: list[str] = []
        self._type_cache: dict[str, TypeAttribute] = {}
        # Where each value was first used, to locate a use of an undefined one.
        self._first_uses: dict[str, Span[str]] = {}
        # The value names each open region defined, innermost last.
        self._region_names: list[list[str]] = []
        # Open regions, attributes and types, against MAX_NESTING.
        self._nesting = 0
        # `loc(#alias)` used before the alias is defined: alias -> first use.
        self._deferred_locs: dict[str, Span[str]] = {}
        # The fast path for one-line ops (npuir.fastparse); None: xDSL reads every op.
        self._fast = OpLineReader(self._parse_fragment) if fast else None
        self.max_nesting = MAX_NESTING
        self._line_starts: Sequence[int] | None = None
        self._ints: dict[int, IntAttr] = {}

    # -- what the fast path (npuir.fastparse) reads and moves -------------------------

    @property
    def nesting(self) -> int:
        """Regions, attributes and types open at the current position."""
        return self._nesting

    @property
    def dialect_stack(self) -> list[str]:
        """The dialects of the custom-form ops being parsed, innermost last."""
        return self._parser_state.dialect_stack

    @property
    def current_token(self) -> MLIRToken:
        """The token at the parser's position."""
        return self._current_token

    @property
    def region_names(self) -> list[list[str]]:
        """The value names each open region defined, innermost last."""
        return self._region_names

    def resume_at(self, offset: int) -> None:
        """Go on parsing from `offset` in the text (the token there is lexed now)."""
        self._resume_from(offset)

    def location_of(self, offset: int) -> FileLineColLoc:
        """The location of `offset` in this parser's text, as its ops get."""
        return self._location_of(offset)

    def _parse_fragment(self, text: str, what: str) -> object:
        """`text` read whole as a type or an attribute dictionary by a fresh parser of
        this kind, or None when it is not exactly one."""
        try:
            sub = LocatingParser(self.ctx, text, self._filename, self._sources, fast=False)
            value: object = sub.parse_type() if what == "type" else sub.parse_optional_attr_dict()
            if sub.current_token.kind is not MLIRTokenKind.EOF:
                return None
            return value
        except Exception:
            return None  # the reference parser reads the op and reports whatever it is

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        if not allow_implicit_module:
            return super().parse_module(allow_implicit_module)
        try:
            return self._parse_top_level()
        except ParseError as exc:
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

    def _parse_top_level(self) -> ModuleOp:
        """MLIR's top level: alias definitions, file metadata and operations.

        A lone `builtin.module` is the module; any other list of operations,
        none included (an empty file, or one of comments only, as in MLIR),
        is wrapped in one, located where its first operation is (or at the
        start of the text).
        """
        ops: list[Operation] = []
        while (kind := self._current_token.kind) is not MLIRTokenKind.EOF:
            if kind in (MLIRTokenKind.HASH_IDENT, MLIRTokenKind.EXCLAMATION_IDENT):
                self._parse_alias_def()
            elif kind is MLIRTokenKind.FILE_METADATA_BEGIN:
                self._parse_file_metadata_dictionary()
            elif (op := self.parse_optional_operation()) is not None:
                ops.append(op)
            else:
                self.raise_error("expected an operation or an alias definition")
        for name in self.forward_ssa_references:
            # Point at the first use of an undefined value, as MLIR does.
            span = self._first_uses.get(name, self._current_token.span)
            raise ParseError(span, f"use of undefined value '%{name}'")
        if len(ops) == 1 and isinstance(ops[0], ModuleOp):
            module = ops[0]
        else:
            module = ModuleOp(ops)
            module.location = ops[0].location if ops else self._location_of(0)
        if self._deferred_locs:
            self._resolve_deferred_locations(module)
        return module

    def parse_optional_location(self) -> LocationAttr | None:
        # MLIR prints location aliases after the module that uses them
        # (`mlir-opt --mlir-print-debuginfo`) and reads them back: a location
        # alias may be used before its definition.  Such a use gets a
        # placeholder, replaced once the whole input is read.
        token = self._current_token
        if token.kind is MLIRTokenKind.BARE_IDENT and token.text == "loc":
            match = _LOC_ALIAS.match(self.lexer.input.content, token.span.end)
            if match is not None and match.group(1) not in self.attribute_aliases:
                alias = match.group(1)
                span = Span(match.start(1), match.end(1), self.lexer.input)
                self._deferred_locs.setdefault(alias, span)
                self._resume_from(match.end())
                return NameLoc(StringAttr(_DEFERRED + alias), UnknownLoc())
        return super().parse_optional_location()

    def _resolve_deferred_locations(self, module: ModuleOp) -> None:
        resolved: dict[str, LocationAttr] = {}
        for alias, span in self._deferred_locs.items():
            target = self.attribute_aliases.get(alias)
            if not isinstance(target, LocationAttr):
                raise ParseError(span, f"undefined location alias '{alias}'")
            resolved[_DEFERRED + alias] = target

        def real(loc: LocationAttr) -> LocationAttr:
            if isinstance(loc, NameLoc) and loc.desc.data.startswith(_DEFERRED):
                return resolved[loc.desc.data]
            return loc

        for op in module.walk():
            op.location = real(op.location)
            for region in op.regions:
                for block in region.blocks:
                    for arg in block.args:
                        arg.location = real(arg.location)

    def _location_of(self, offset: int) -> FileLineColLoc:
        # `SourceManager.location_of_offset`, building the attribute without re-verifying
        # parts that are verified already: a program has one location per op.
        if self._line_starts is None:
            self._line_starts = self._sources.line_starts(self._filename)
        starts = self._line_starts
        at = self._base_offset + offset
        line = bisect.bisect_right(starts, at)
        loc = FileLineColLoc.__new__(FileLineColLoc)
        object.__setattr__(loc, "filename", self._file_attr)
        object.__setattr__(loc, "line", self._int_attr(line))
        object.__setattr__(loc, "column", self._int_attr(at - starts[line - 1] + 1))
        return loc

    def _int_attr(self, value: int) -> IntAttr:
        attr = self._ints.get(value)
        if attr is None:
            attr = self._ints[value] = IntAttr(value)
        return attr

    def _enter_nesting(self) -> None:
        self._nesting += 1
        if self._nesting > MAX_NESTING:
            self.raise_error(f"nesting deeper than {MAX_NESTING} levels")

    def parse_optional_region(
        self, arguments: Iterable[Parser.Argument] | None = None
    ) -> Region | None:
        if self._current_token.kind is not MLIRTokenKind.L_BRACE:
            return None
        self._enter_nesting()
        self.parse_punctuation("{")
        names: list[str] = []
        self._region_names.append(names)
        # Blocks are never visible across a region boundary, in either direction.
        outer_blocks, outer_forward = self.blocks, self.forward_block_references
        self.blocks, self.forward_block_references = {}, defaultdict(list)
        try:
            return self._parse_region_body(None if arguments is None else list(arguments))
        finally:
            self._nesting -= 1
            self._region_names.pop()
            for name in names:
                self.ssa_values.pop(name, None)
            self.blocks, self.forward_block_references = outer_blocks, outer_forward

    def _parse_region_body(self, arguments: list[Parser.Argument] | None) -> Region:
        """`entry-block? block* '}'` after the region's '{'."""
        region = Region()
        if arguments is not None:
            # The entry block's arguments are given (a function's signature):
            # it takes no label, and holds every op up to the first label.
            if self._current_token.kind is MLIRTokenKind.CARET_IDENT:
                self.raise_error("invalid block name in region with named arguments")
            entry = Block(arg_types=[arg.type for arg in arguments])
            for value, arg in zip(entry.args, arguments):
                self._register_ssa_definition(arg.name.text[1:], (value,), arg.name)
                if arg.location is not None:
                    value.location = arg.location
            self._parse_block_body(entry)
            region.add_block(entry)
        elif self._current_token.kind not in (MLIRTokenKind.CARET_IDENT, MLIRTokenKind.R_BRACE):
            entry = Block()
            self._parse_block_body(entry)
            region.add_block(entry)
        while self.parse_optional_punctuation("}") is None:
            region.add_block(self._parse_block())
        for name, spans in self.forward_block_references.items():
            raise ParseError(spans[0], f"reference to an undefined block '^{name}'")
        return region

    def _register_ssa_definition(self, name: str, values: Sequence[SSAValue], span: Span) -> None:
        super()._register_ssa_definition(name, values, span)
        if self._region_names:
            self._region_names[-1].append(name)

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
        self._enter_nesting()
        try:
            return super().parse_optional_attribute()
        except (VerifyException, ValueError) as exc:
            # Attributes verify as they are built (xDSL's builtin ones raise
            # ValueError for a value out of range): point at the attribute.
            self.raise_error(str(exc), start, self.pos)
        except OverflowError as exc:
            # A dense element too large for its float type (xDSL packs it unchecked).
            self.raise_error(f"value out of range of its element type ({exc})", start, self.pos)
        finally:
            self._nesting -= 1

    def parse_dense_int_or_fp_elements_attr(
        self, type: RankedStructure[AnyDenseElement] | None
    ) -> DenseIntOrFPElementsAttr:
        # xDSL expands a splat into one Python value per element (`dense<1.0> :
        # tensor<100000x100000xf32>`, 275 bytes of text, is 10^10 of them) and reads a
        # literal list with a token object per element (1.7 GB for a 13.5 MB list).  A
        # splat is kept as one element here (xDSL's printer prints it back as a splat;
        # `get_values` gives that one value), and a list of plain numbers is read by
        # numpy.  Every other form, and every error, is xDSL's.
        if self._current_token.kind is not MLIRTokenKind.LESS:
            return super().parse_dense_int_or_fp_elements_attr(type)
        open_at = self._current_token.span.start
        content = self.lexer.input.content
        listed = _DENSE_LIST.match(content, open_at + 1)
        self.parse_punctuation("<", " in dense attribute")
        hex_digits: int | None = None
        if listed is not None:
            self._resume_from(listed.end())
        elif (text := self.parse_optional_str_literal()) is not None:
            hex_digits = len(text) - 2 if text[:2] == "0x" else None
        elif self._current_token.kind is MLIRTokenKind.GREATER:
            self._resume_from(open_at)
            return super().parse_dense_int_or_fp_elements_attr(type)
        else:
            self._parse_tensor_literal_element()  # a splat: one element, checked below
        self.parse_punctuation(">", " in dense attribute")
        if type is None:
            self.parse_punctuation(":", " in dense attribute")
            type = self._parse_dense_literal_type()
        after = self.pos
        try:
            size = getattr(type.element_type, "compile_time_size", None)
        except NotImplementedError:  # xDSL has no storage format for it (f80, f128)
            self.raise_error(
                f"a dense literal of element type {type.element_type} cannot be stored "
                "(npuir holds f16, bf16, f32, f64 and integers)",
                open_at,
                after,
            )
        count = math.prod(type.get_shape())
        attr: DenseIntOrFPElementsAttr | None = None
        if listed is not None:
            read = _dense_from_list(listed.group(1), type, count)
            if isinstance(read, str):
                self.raise_error(read, open_at, after)
            attr = read
        else:
            splat = hex_digits is None or hex_digits == 2 * (size or 0)
            if splat and count > 1:
                # The one element, converted and checked by xDSL as a rank-0 literal.
                self._resume_from(open_at)
                one = super().parse_dense_int_or_fp_elements_attr(TensorType(type.element_type, []))
                attr = DenseIntOrFPElementsAttr(type, one.data)
        if attr is None:
            self._resume_from(open_at)
            attr = super().parse_dense_int_or_fp_elements_attr(type)
        self._resume_from(after)
        return attr

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
        self._enter_nesting()
        try:
            parsed = super().parse_optional_type()
        except (VerifyException, ValueError) as exc:
            self.raise_error(str(exc), start, self.pos)
        finally:
            self._nesting -= 1
        if isinstance(parsed, TensorType):
            # xDSL keeps any Python int as a dim; MLIR's are int64, and the plan and
            # cost attributes derived from them are too.
            for dim in parsed.get_shape():
                if dim > I64_MAX:
                    self.raise_error(
                        f"dimension {dim} of {parsed} is out of range (at most {I64_MAX})",
                        start,
                        self.pos,
                    )
        if key is not None and parsed is not None:
            self._type_cache[key] = parsed
        return parsed

    def parse_optional_properties_dict(self) -> dict[str, Attribute]:
        token = self._current_token
        if self._fast is not None and token.kind is MLIRTokenKind.LESS:
            props = self._fast.properties(self, token.span.start)
            if props is not None:
                return props
        return super().parse_optional_properties_dict()

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        header = None
        if self._fast is not None:
            if (op := self._fast.read(self, start)) is not None:
                return op
            header = self._fast.region_op_header(self, start)
        depth = len(self._op_names)
        try:
            op = super().parse_operation() if header is None else self._region_op(header)
        except (VerifyException, ValueError) as exc:
            # The declarative format checks operand and result constraints while
            # parsing, without a location, and a custom parser building an
            # attribute from an out-of-range value raises ValueError: pin the
            # error on the op.
            name = self._op_names[depth] if len(self._op_names) > depth else None
            self.raise_error(f"'{name}' op {exc}" if name else str(exc), start)
        finally:
            del self._op_names[depth:]
        if isinstance(op.location, UnknownLoc):
            op.location = self._location_of(start)
        return op

    def _region_op(self, header: RegionOpHeader) -> Operation:
        """The rest of an op with regions whose header the fast path read
        (`OpLineReader.region_op_header`): what xDSL's `parse_operation` does after the
        op's name (and `_parse_generic_operation` after the properties), in the same
        order, with the generic form's trailer read by the fast path when it can."""
        op_type = header.cls
        self._op_names.append(op_type.name)  # as `_get_op_by_name` records it
        self._parser_state.dialect_stack.append(op_type.dialect_name())
        if header.properties is None:
            op = op_type.parse(self)
            self._parser_state.dialect_stack.pop()
            if (location := self.parse_optional_location()) is not None:
                op.location = location
        else:
            op = self._generic_region_op(op_type, header.properties)
        if header.results and len(op.results) != len(header.results):
            self.raise_error(
                f"Operation has {len(op.results)} results, "
                f"but was given {len(header.results)} to bind.",
                at_position=header.results[0],
            )
        for index, span in enumerate(header.results):
            self._register_ssa_definition(span.text[1:], op.results[index : index + 1], span)
        return op

    def _generic_region_op(
        self, op_type: type[Operation], properties: dict[str, Attribute]
    ) -> Operation:
        """xDSL's `_parse_generic_operation` from the region list on."""
        assert self._fast is not None
        regions = self.parse_region_list()
        trailer = self._fast.region_op_trailer(self)
        location: LocationAttr | None = None
        if trailer is not None:
            attributes, result_types = trailer
        else:
            attributes = self.parse_optional_attr_dict()
            self.parse_punctuation(":", "function type signature expected")
            func_type_pos = self._current_token.span.start
            func_type = self.parse_function_type()
            location = self.parse_optional_location()
            self.resolve_operands([], func_type.inputs.data, func_type_pos)
            result_types = func_type.outputs.data
        if issubclass(op_type, IRDLOperation):
            # xDSL's "properties retrocompatibility": attributes named like properties.
            for name in op_type.get_irdl_definition().properties:
                if name in attributes and name not in properties:
                    properties[name] = attributes.pop(name)
        op = op_type.create(
            result_types=result_types,
            properties=properties,
            attributes=attributes,
            location=location,
            regions=regions,
        )
        self._parser_state.dialect_stack.pop()
        return op


_DENSE_NUMBER = r"-?\d++(?:\.\d*+(?:[eE][+-]?\d++)?)?"
_DENSE_LIST = re.compile(
    rf"[ \t\n\r]*+(\[[\s\[]*+{_DENSE_NUMBER}(?:[\s\]]*+,[\s\[]*+{_DENSE_NUMBER})*+[\s\]]*+)"
    r"(?=[ \t\n\r]*+>)"
)
"""A dense literal list of plain decimal numbers (brackets, commas and numbers only:
whether the brackets nest as the type's shape says is checked after), up to the '>'."""
_NOT_STRUCTURE = re.compile(r"[^\[\],]++")
_BRACKETS_TO_SPACES = str.maketrans("[]", "  ")
_NUMPY_FLOATS: dict[type[Attribute], str] = {
    Float16Type: "<f2",
    Float32Type: "<f4",
    Float64Type: "<f8",
}


def _skeleton(shape: Sequence[int]) -> str:
    """A literal list of `shape` with the numbers left out: `[[,],[,]]` for 2x2."""
    inner = ""
    for dim in reversed(shape):
        inner = "[" + ",".join([inner] * dim) + "]"
    return inner


def _dense_from_list(
    body: str, type: RankedStructure[AnyDenseElement], count: int
) -> DenseIntOrFPElementsAttr | str | None:
    """The attribute a literal list of plain numbers (`_DENSE_LIST`) gives, read by numpy;
    a message when a value does not fit its element type; None for what only xDSL reads
    (other element types, a shape that differs from the type's, integers beyond int64)."""
    element = type.element_type
    shape = type.get_shape()
    if count < 1 or body.count(",") + 1 != count:
        return None
    if _NOT_STRUCTURE.sub("", body) != _skeleton(shape):
        return None
    flat = body.translate(_BRACKETS_TO_SPACES)
    floating = _NUMPY_FLOATS.get(element.__class__)
    if floating is not None:
        values = np.fromstring(flat, dtype=np.float64, sep=",")
        if values.size != count:
            return None
        with np.errstate(over="ignore"):
            packed = values.astype(floating)
        overflow = np.isinf(packed) & np.isfinite(values)
        if overflow.any():
            value = float(values[int(np.argmax(overflow))])
            largest = float(np.finfo(floating).max)
            return f"dense element {value!r} is out of range of {element} (at most {largest!r})"
        return DenseIntOrFPElementsAttr(type, BytesAttr(packed.tobytes()))
    if (
        isinstance(element, IntegerType)
        and element.width.data in (8, 16, 32, 64)
        and element.signedness.data is not Signedness.UNSIGNED
        and "." not in flat
        and not re.search(r"\d{19}", flat)
    ):
        values = np.fromstring(flat, dtype=np.int64, sep=",")
        bits = element.width.data
        if (
            values.size != count
            or values.min() < -(2 ** (bits - 1))
            or values.max() >= 2 ** (bits - 1)
        ):
            return None  # xDSL normalizes or refuses what lies outside the signed range
        return DenseIntOrFPElementsAttr(type, BytesAttr(values.astype(f"<i{bits // 8}").tobytes()))
    return None


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
        # Undecodable bytes shown as `\\xNN` (the line is only displayed).
        sources.add(filename, data.decode("utf-8", errors="backslashreplace"))
        loc = sources.location_of_offset(filename, len(good))
        raise DiagnosticError(
            Diagnostic.of("error", NOT_UTF8, loc, byte=f"0x{data[exc.start]:02x}")
        ) from None


@deep_stack
def parse_module(
    ctx: Context,
    text: str,
    filename: str,
    sources: SourceManager,
    base_offset: int = 0,
    parser_kind: str | None = None,
) -> ModuleOp:
    """Parse one module; a syntax error becomes a located `DiagnosticError`.

    `parser_kind` is "fast" (npuir.fastparse in front of xDSL's parser) or "xdsl" (xDSL's
    alone, the reference); by default the context's `parser` field says, else "fast".
    The cyclic garbage collector is paused meanwhile: everything built lives on.
    """
    which = parser_kind or getattr(ctx, "parser", "fast")
    try:
        # Building the parser lexes the first token, which can fail too.
        with collector_paused():
            parser = LocatingParser(ctx, text, filename, sources, base_offset, which != "xdsl")
            return parser.parse_module()
    except ParseError as exc:
        loc = sources.location_of_offset(filename, base_offset + exc.span.start)
        raise DiagnosticError(Diagnostic("error", exc.msg, loc, *_kind_of(exc))) from None
    except VerifyException as exc:
        # Attributes verify as they are built, so a bad attribute surfaces here.
        offset = parser.pos if parser.pos < len(text) else len(text)
        loc = sources.location_of_offset(filename, base_offset + offset)
        raise DiagnosticError(Diagnostic("error", str(exc), loc, *_kind_of(exc))) from None


def _kind_of(exc: Exception) -> tuple[str, Mapping[str, Any]]:
    """A parse failure's kind and arguments: the rule's own (`npuir.dialects.validation`)
    when one of the rules every route applies refused a value, else a syntax error."""
    cause: BaseException | None = exc
    while cause is not None:  # xDSL re-raises an attribute's VerifyException as a ParseError
        kind = getattr(cause, "kind", None)
        if isinstance(kind, Kind):
            return kind.code, MappingProxyType(dict(getattr(cause, "args_", {})))
        cause = cause.__cause__ or cause.__context__
    return PARSE_ERROR.code, MappingProxyType({})
