"""A fast path through the parser for the one-line operations that make up a program.

Nearly every line of a large npuir program is one of a few shapes: an `npu` op in its
custom form (`%r = npu.add %a, %b {attrs} : (types) -> type`), the same op in the
generic form (`%r = "npu.add"(%a, %b) {attrs} : (types) -> type`), or a terminator
listing values and their types (`stream.yield %k, %v : t1, t2`, `func.return %y : t`).
xDSL reads each of them token by token, building a token object per lexeme and
dispatching on it, and spends about 200 us per op doing so.

`OpLineReader.read` recognises such a line with one regular expression at the parser's
position, looks its operands up, takes its types and attribute dictionary from caches
keyed by their text (a program repeats a handful of signatures thousands of times), and
builds the op the way xDSL would: `Operation.create` with the same operands, result
types, attributes and location, the results registered under their names.  A trailing
file location (`loc("model.py":12:5)`, what every import route and `--mlir-print-debuginfo`
write on every op) is read by the reference parser's location rule.  What a
cache does not hold yet is parsed once by xDSL's own parser on that fragment of text.

Anything else is handed back (`read` returns None, having consumed nothing) and xDSL's
parser reads the op from the same position: other dialects' ops and op shapes, regions,
properties, other locations (aliases, names, ranges, fused), aliases (`#`, `!`), a value
used before its definition, counts that do not fit the op's definition, a name defined
twice, or a fragment xDSL refuses.
So the fast path never reports an error itself: every diagnostic comes from the
reference parser, at the same place, with the same text (`--parser=xdsl` selects the
reference path alone, and `test/unit/bench/test_parse_diff.py` compares the two).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, LocationAttr, StringAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.irdl.constraints import VerificationContext
from xdsl.irdl.operations import OpDef, OptionalDef, VariadicDef
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Span
from xdsl.utils.mlir_lexer import MLIRTokenKind

if TYPE_CHECKING:
    from npuir.parsing import LocatingParser

_WS = r"[ \t]*+"
_ID = r"%(?:[0-9]++|[A-Za-z$._-][A-Za-z0-9$._-]*+)"
"""A value name as xDSL's lexer reads `%suffix-id`; no `#index`.  Every quantifier is
possessive, so a line that does not match fails in time linear in its length."""
_IDS = rf"{_ID}(?:{_WS},{_WS}{_ID})*"
_TYPE = r"(?:tensor<(?:[0-9?]{1,18}x)*[a-z][a-z0-9]{0,7}>|[a-z][a-z0-9]{0,7}(?![A-Za-z0-9_$.<]))"
"""A ranked tensor of a builtin element type, or a bare builtin type (f16, i64, index)."""
_TYPES = rf"{_TYPE}(?:{_WS},{_WS}{_TYPE})*"
_ATTRS = r"\{[^{}\n#!]*+\}"
"""An attribute dictionary without nesting, aliases or dialect attributes."""
_RESULTS = rf"(?:(?P<results>{_IDS}){_WS}={_WS})?"
_SIGNATURE = (
    rf"{_WS}(?P<attrs>{_ATTRS})?{_WS}:{_WS}\((?P<ins>{_TYPES})?\){_WS}->{_WS}"
    rf"(?:\((?P<outs>{_TYPES})?\)|(?P<out>{_TYPE}))"
)

_CUSTOM = re.compile(
    rf"{_RESULTS}(?P<name>[A-Za-z_][A-Za-z0-9_$.]*)[ \t]++(?P<operands>{_IDS})?{_SIGNATURE}"
)
"""`operands attr-dict : functional-type(operands, results)` (every npu op)."""
_GENERIC = re.compile(
    rf'{_RESULTS}"(?P<name>[A-Za-z_][A-Za-z0-9_$.]*)"\({_WS}(?P<operands>{_IDS})?{_WS}\){_SIGNATURE}'
)
"""The generic form of an op without regions, successors or properties."""
_VALUES = re.compile(
    rf"(?P<name>[A-Za-z_][A-Za-z0-9_$.]*)[ \t]++(?P<operands>{_IDS}){_WS}:{_WS}(?P<ins>{_TYPES})"
)
"""`values : types` (a terminator such as stream.yield or func.return)."""

_PROPERTIES = re.compile(rf"<{_WS}(?P<attrs>{_ATTRS}){_WS}>")
"""A generic op's properties (`<{tag = "1", priority = 0 : i64}>`), flat as above."""

_REGION_HEADER = re.compile(
    rf'{_RESULTS}"(?P<name>[A-Za-z_][A-Za-z0-9_$.]*)"\({_WS}\){_WS}'
    rf"(?:<{_WS}(?P<props>{_ATTRS}){_WS}>{_WS})?(?=\({_WS}\{{)"
)
"""The generic form of an op with regions up to its region list, which starts on this
line (`%a, %b = "stream.switch"() <{tag = "1", priority = 0 : i64}> (`): no operands,
successors or `%name:N` results."""
_CUSTOM_REGION_HEADER = re.compile(rf"{_RESULTS}(?P<name>[A-Za-z_][A-Za-z0-9_$.]*)(?=[ \t])")
"""The results and name of an op in custom form (`%k, %v = stream.switch `)."""
_REGION_TRAILER = re.compile(
    rf"(?P<attrs>{_ATTRS})?{_WS}:{_WS}\({_WS}\){_WS}->{_WS}"
    rf"(?:\((?P<outs>{_TYPES})?\)|(?P<out>{_TYPE}))"
)
"""What follows the region list of such an op: `{attrs}? : () -> types`."""

_SPLIT_IDS = re.compile(_ID)
_SPLIT_TYPES = re.compile(_TYPE)
_VALUE_NAME = re.compile(r"[A-Za-z_$.-][\w$.-]*")
"""xDSL's pattern for a value's name hint (`SSAValue.is_valid_name`)."""

FUNCTIONAL_FORMAT = "operands attr-dict `:` functional-type(operands, results)"
VALUES_FORMATS = (
    "($values^ `:` type($values))? attr-dict",
    "attr-dict ($arguments^ `:` type($arguments))?",
)
"""The declarative formats whose ops the fast path reads in custom form."""

_CONTINUES = (MLIRTokenKind.L_BRACE, MLIRTokenKind.COMMA)
"""Tokens that would make the reference parser read on past where the line matched: an
attribute dictionary after a values list, another type of a values list."""

NESTING_MARGIN = 8
"""Nesting levels a one-line op may add; near the bound, the reference parser reads it
so that the error for going past the bound is its own."""

Fragment = Callable[[str, str], object]
"""Parses a fragment of text as a "type" or an "attrs" dictionary with the reference
parser; returns None when the fragment is not exactly one well-formed such thing."""


def _arity(defs: Sequence[tuple[str, object]]) -> tuple[int, int] | None:
    """(fixed count, extra allowed: 0, 1 or -1 for any) of operand or result defs, or
    None when more than one def is variadic (the split then needs segment sizes)."""
    fixed = 0
    extra = 0
    variadic = 0
    for _, d in defs:
        if isinstance(d, OptionalDef):
            variadic += 1
            extra = 1
        elif isinstance(d, VariadicDef):
            variadic += 1
            extra = -1
        else:
            fixed += 1
    if variadic > 1:
        return None
    return fixed, extra


def _fits(count: int, arity: tuple[int, int]) -> bool:
    fixed, extra = arity
    if extra == 0:
        return count == fixed
    if extra == 1:
        return fixed <= count <= fixed + 1
    return count >= fixed


class _OpShape:
    """What the fast path needs to know about one op class read in custom form."""

    __slots__ = ("cls", "op_def", "operands", "results", "values_form")

    def __init__(
        self,
        cls: type[Operation],
        operands: tuple[int, int],
        results: tuple[int, int],
        values_form: bool,
    ) -> None:
        self.cls = cls
        self.op_def = cls.get_irdl_definition() if issubclass(cls, IRDLOperation) else None
        self.operands = operands
        self.results = results
        self.values_form = values_form


def _groups(
    types: Sequence[Attribute], defs: Sequence[tuple[str, object]]
) -> list[tuple[Attribute, ...]]:
    """`types` split among `defs` (at most one variadic, which takes the rest)."""
    extra = len(types) - sum(1 for _, d in defs if not isinstance(d, VariadicDef))
    out: list[tuple[Attribute, ...]] = []
    i = 0
    for _, d in defs:
        n = extra if isinstance(d, VariadicDef) else 1
        out.append(tuple(types[i : i + n]))
        i += n
    return out


def _format_constraints_hold(
    shape: _OpShape,
    in_types: Sequence[Attribute],
    out_types: Sequence[Attribute],
    attributes: dict[str, Attribute],
) -> bool:
    """Whether the checks xDSL's declarative format makes while parsing pass (its
    `resolve_constraint_variables`: operand, result and attribute constraints)."""
    op_def = shape.op_def
    assert op_def is not None
    ctx = VerificationContext()
    try:
        for group, (_, d) in zip(_groups(in_types, op_def.operands), op_def.operands):
            d.constr.verify_length(len(group), ctx)
            d.constr.verify(group, ctx)
        for group, (_, r) in zip(_groups(out_types, op_def.results), op_def.results):
            r.constr.verify(group, ctx)
        for name, a in op_def.attributes.items():
            if isinstance(a, OptionalDef) and a.default_value is None:
                continue
            attr = attributes.get(name, a.default_value)
            if attr is not None:
                a.constr.verify(attr, ctx)
    except Exception:
        return False
    return True


def _custom_shape(cls: type[Operation]) -> _OpShape | None:
    """How `cls` is read in custom form, or None when the fast path leaves it to xDSL."""
    if not issubclass(cls, IRDLOperation):
        return None
    op_def: OpDef = cls.get_irdl_definition()
    fmt = op_def.assembly_format
    if fmt not in (FUNCTIONAL_FORMAT, *VALUES_FORMATS):
        return None
    if op_def.options or op_def.properties or op_def.regions or op_def.successors:
        return None
    operands, results = _arity(op_def.operands), _arity(op_def.results)
    if operands is None or results is None:
        return None
    values_form = fmt in VALUES_FORMATS
    if values_form and results != (0, 0):
        return None
    return _OpShape(cls, operands, results, values_form)


class RegionOpHeader(NamedTuple):
    """The start of an op with regions: in generic form up to its region list, in
    custom form up to what its own `parse` reads."""

    cls: type[Operation]
    results: list[Span[str]]
    """Where each result's name (`%name`) is written."""
    properties: dict[str, Attribute] | None
    """The generic form's properties; None in custom form."""


class OpLineReader:
    """Reads the common one-line ops of one input (see the module docstring); its caches
    live as long as the parse."""

    def __init__(self, fragment: Fragment) -> None:
        self._fragment = fragment
        self._types: dict[str, Attribute | None] = {}
        self._type_lists: dict[str, tuple[Attribute, ...] | None] = {}
        self._attrs: dict[str, dict[str, Attribute] | None] = {}
        self._shapes: dict[str, _OpShape | None] = {}
        self._generic: dict[str, type[Operation] | None] = {}
        self._valid_names: dict[str, bool] = {}
        self._checked: dict[tuple[object, ...], bool] = {}
        self._files: dict[str, StringAttr] = {}
        self._ints: dict[int, IntAttr] = {}
        self._values: dict[str, Attribute | None] = {}

    # -- caches ------------------------------------------------------------------------

    def _type_list(self, text: str | None) -> tuple[Attribute, ...] | None:
        if text is None:
            return ()
        found = self._type_lists.get(text, False)
        if found is not False:
            return found  # type: ignore[return-value]
        types: list[Attribute] = []
        result: tuple[Attribute, ...] | None = None
        for piece in _SPLIT_TYPES.findall(text):
            ty = self._types.get(piece, False)
            if ty is False:
                parsed = self._fragment(piece, "type")
                ty = parsed if isinstance(parsed, Attribute) else None
                self._types[piece] = ty
            if ty is None:
                break
            types.append(ty)  # type: ignore[arg-type]
        else:
            result = tuple(types)
        self._type_lists[text] = result
        return result

    def _attr_dict(self, text: str | None) -> dict[str, Attribute] | None:
        if text is None:
            return {}
        found = self._attrs.get(text, False)
        if found is False and '"' in text:
            # A dictionary naming the op (`npu.op_name = "n3"`, on every op an import
            # writes) differs on every line: read entry by entry, not kept whole.
            entries = self._entries(text)
            if entries is not None:
                return entries
        if found is False:
            if "dense_resource" in text:
                found = None  # resources come from the file's metadata: xDSL's business
            else:
                parsed = self._fragment(text, "attrs")
                found = parsed if isinstance(parsed, dict) else None
            self._attrs[text] = found
        return None if found is None else dict(found)  # type: ignore[arg-type]

    def _entries(self, text: str) -> dict[str, Attribute] | None:
        """The dictionary `text` read entry by entry: a string without escapes is its
        own text (as the reference parser reads it), every other value is read once per
        distinct text by the reference parser; None for what this does not take (a key
        without a value or given twice, a value with brackets, commas or quotes)."""
        out: dict[str, Attribute] = {}
        pos, end = 1, len(text)
        while True:
            m = _ATTR_ENTRY.match(text, pos)
            if m is None or m.group("key") in out:
                return None
            string = m.group("s")
            if string is not None:
                out[m.group("key")] = StringAttr(string)
            else:
                value = m.group("v")
                attr = self._values.get(value, False)
                if attr is False:
                    parsed = self._fragment(f"{{v = {value}}}", "attrs")
                    attr = parsed.get("v") if isinstance(parsed, dict) else None
                    self._values[value] = attr
                if attr is None:
                    return None
                out[m.group("key")] = attr  # type: ignore[assignment]
            pos = m.end()
            if m.group("close"):
                return out if pos == end else None

    def _shape(self, parser: LocatingParser, name: str) -> _OpShape | None:
        if name in self._shapes:
            return self._shapes[name]
        # Only a registered name: xDSL resolves others against the dialect stack, and
        # may register an unknown one as an unregistered op.
        cls = parser.ctx._get_known_op(name)  # pyright: ignore[reportPrivateUsage]
        shape = None if cls is None else _custom_shape(cls)
        self._shapes[name] = shape
        return shape

    def _generic_class(self, parser: LocatingParser, name: str) -> type[Operation] | None:
        if name in self._generic:
            return self._generic[name]
        cls = parser.ctx._get_known_op(name)  # pyright: ignore[reportPrivateUsage]
        if cls is not None and (
            not issubclass(cls, IRDLOperation) or cls.get_irdl_definition().properties
        ):
            cls = None  # attributes named like properties move: xDSL's business
        self._generic[name] = cls
        return cls

    # -- reading -----------------------------------------------------------------------

    def properties(self, parser: LocatingParser, start: int) -> dict[str, Attribute] | None:
        """The properties dictionary whose `<` is the parser's current token (at
        `start`), read from the cache and the parser moved past it; or None, with
        nothing consumed (a generic op with regions, such as `stream.switch`, is read by
        xDSL, but its properties need not be)."""
        if parser.nesting + NESTING_MARGIN > parser.max_nesting:
            return None
        match = _PROPERTIES.match(parser.lexer.input.content, start)
        if match is None:
            return None
        attributes = self._attr_dict(match.group("attrs"))
        if attributes is None:
            return None
        if not _resume(parser, match.end(), start):
            return None
        return attributes

    def read(self, parser: LocatingParser, start: int) -> Operation | None:
        """The op whose text starts at `start` (the parser's current token), read and
        registered, with the parser past it; or None, with nothing consumed."""
        if parser.nesting + NESTING_MARGIN > parser.max_nesting:
            return None
        text = parser.lexer.input.content
        generic = False
        match = _CUSTOM.match(text, start)
        if match is None:
            match = _GENERIC.match(text, start)
            generic = match is not None
            if match is None:
                match = _VALUES.match(text, start)
                if match is None:
                    return None
        groups = match.groupdict()
        shape: _OpShape | None = None
        if generic:
            cls = self._generic_class(parser, groups["name"])
            if cls is None:
                return None
        else:
            shape = self._shape(parser, groups["name"])
            if shape is None:
                return None
            cls = shape.cls
            if shape.values_form != ("out" not in groups):
                return None  # a functional type on a values-form op, or the reverse
        outs_text = groups.get("outs") if groups.get("out") is None else groups["out"]
        in_types = self._type_list(groups["ins"])
        out_types = self._type_list(outs_text) if "out" in groups else ()
        if in_types is None or out_types is None:
            return None
        attributes = self._attr_dict(groups.get("attrs"))
        if attributes is None:
            return None
        operand_names = groups["operands"]
        names = _SPLIT_IDS.findall(operand_names) if operand_names else []
        if len(names) != len(in_types):
            return None
        if shape is not None and not (
            _fits(len(names), shape.operands) and _fits(len(out_types), shape.results)
        ):
            return None
        if shape is not None:
            key = (cls, in_types, out_types, groups.get("attrs"))
            ok = self._checked.get(key)
            if ok is None:
                ok = self._checked[key] = _format_constraints_hold(
                    shape, in_types, out_types, attributes
                )
            if not ok:
                return None
        ssa = parser.ssa_values
        operands: list[SSAValue] = []
        for name, ty in zip(names, in_types):
            values = ssa.get(name[1:])
            if values is None:
                return None  # a forward reference: the reference parser tracks those
            value = values[0]
            if value.type is not ty and value.type != ty:
                return None
            operands.append(value)
        result_text = groups.get("results")
        results = _SPLIT_IDS.findall(result_text) if result_text else []
        if results:
            if len(results) != len(out_types) or len(set(results)) != len(results):
                return None
            forward = parser.forward_ssa_references
            for name in results:
                if name[1:] in ssa or name[1:] in forward:
                    return None
        end = match.end()
        # The token after the op must not continue it (a location, an attribute
        # dictionary after a values list); lexing it may fail, which the reference
        # parser then reports.
        try:
            parser.resume_at(end)
        except ParseError:
            parser.resume_at(start)
            return None
        token = parser.current_token
        location: LocationAttr | None = None
        if token.kind is MLIRTokenKind.BARE_IDENT and token.text == "loc":
            location = _file_location(parser, token.span.start, self._files, self._ints)
            if location is None:
                parser.resume_at(start)
                return None
            token = parser.current_token
        if token.kind in _CONTINUES:
            parser.resume_at(start)
            return None
        op = cls.create(
            operands=operands,
            result_types=out_types,
            attributes=attributes,
            location=location if location is not None else parser.location_of(start),
        )
        if results:
            valid = self._valid_names
            scope = parser.region_names
            for name, value in zip(results, op.results):
                key = name[1:]
                ssa[key] = (value,)
                ok = valid.get(key)
                if ok is None:
                    ok = valid[key] = _VALUE_NAME.fullmatch(key) is not None
                if ok:
                    value.name_hint = key
                if scope:
                    scope[-1].append(key)
        return op

    def region_op_header(self, parser: LocatingParser, start: int) -> RegionOpHeader | None:
        """The start of an op with regions whose text starts at `start` (the parser's
        current token), the parser moved past it; or None, with nothing consumed.

        In generic form, a registered op's results, name and properties, the parser at
        its region list: the parser reads the region list with xDSL's own region
        parsing, then `region_op_trailer`, and builds the op as xDSL's generic parser
        does.  In custom form, the results and name of a registered op with regions,
        the parser at what the op's own `parse` reads next, which it then calls, as
        xDSL's parser does (`LocatingParser.parse_operation`)."""
        if parser.nesting + NESTING_MARGIN > parser.max_nesting:
            return None
        text = parser.lexer.input.content
        match = _REGION_HEADER.match(text, start)
        generic = match is not None
        if match is None:
            match = _CUSTOM_REGION_HEADER.match(text, start)
            if match is None:
                return None
        cls = parser.ctx._get_known_op(match.group("name"))  # pyright: ignore[reportPrivateUsage]
        if cls is None or not issubclass(cls, IRDLOperation):
            return None
        properties = None
        if generic:
            properties = self._attr_dict(match.group("props"))
            if properties is None:
                return None
        elif not cls.get_irdl_definition().regions:
            return None  # the one-line ops it leaves are xDSL's (read refused them)
        results: list[Span[str]] = []
        if (names := match.group("results")) is not None:
            at = match.start("results")
            for found in _SPLIT_IDS.finditer(names):
                results.append(Span(at + found.start(), at + found.end(), parser.lexer.input))
        # Generic: at a '(' (the lookahead saw it); custom: the op's text goes on.
        if not _resume(parser, match.end(), start):
            return None
        return RegionOpHeader(cls, results, properties)

    def region_op_trailer(
        self, parser: LocatingParser
    ) -> tuple[dict[str, Attribute], tuple[Attribute, ...]] | None:
        """`{attrs}? : () -> types` at the parser's current token, after the region list
        of an op `region_op_header` read: its attributes and result types, the parser
        past them; or None, with nothing consumed."""
        if parser.nesting + NESTING_MARGIN > parser.max_nesting:
            return None
        start = parser.current_token.span.start
        match = _REGION_TRAILER.match(parser.lexer.input.content, start)
        if match is None:
            return None
        out = match.group("out")
        out_types = self._type_list(out if out is not None else match.group("outs"))
        if out_types is None:
            return None
        attributes = self._attr_dict(match.group("attrs"))
        if attributes is None:
            return None
        if not _resume(parser, match.end(), start):
            return None
        token = parser.current_token
        if token.kind is MLIRTokenKind.BARE_IDENT and token.text == "loc":
            parser.resume_at(start)
            return None
        return attributes, out_types


_ATTR_ENTRY = re.compile(
    rf"{_WS}(?P<key>[A-Za-z_][A-Za-z0-9_$.]*+){_WS}={_WS}"
    r'(?:"(?P<s>[^"\\\n\v\f]*+)"|(?P<v>[^,"{}\[\]<>()\n\s][^,"{}\[\]<>()\n]*?))'
    rf"{_WS}(?:,|(?P<close>\}}))"
)
"""One `key = value` of an attribute dictionary and the `,` or `}` after it: a string
without escapes (`s`), or a value without brackets, commas or quotes (`v`)."""
_FILE_LOC = re.compile(
    r'loc\((?P<file>"[^"\\\n\v\f]*+"):(?P<line>[0-9]{1,9}):(?P<column>[0-9]{1,9})\)'
)
"""A file location as the printer writes it (`loc("model.py":12:5)`): no escapes in the
name, no aliases, no nesting -- every other location is the reference parser's."""


def _file_location(
    parser: LocatingParser, at: int, files: dict[str, StringAttr], ints: dict[int, IntAttr]
) -> LocationAttr | None:
    """The file location written at `at` (the `loc` token), the parser past it; None, with
    the parser where it was on failure, when the text there is another kind of location.

    The form `_FILE_LOC` accepts is what the reference parser's location rule reads as
    `FileLineColLoc(StringAttr(name), IntAttr(line), IntAttr(column))` (a name without
    escapes is its own text): built here from cached parts without re-verifying them, as
    `LocatingParser` builds its own locations.  Reading it with the reference rule lexed
    six tokens per op, a third of re-reading an imported program."""
    match = _FILE_LOC.match(parser.lexer.input.content, at)
    if match is None:
        return None
    if not _resume(parser, match.end(), at):
        return None
    name = match.group("file")
    file = files.get(name)
    if file is None:
        file = files[name] = StringAttr(name[1:-1])
    loc = FileLineColLoc.__new__(FileLineColLoc)
    object.__setattr__(loc, "filename", file)
    for field, text in (("line", match.group("line")), ("column", match.group("column"))):
        value = int(text)
        attr = ints.get(value)
        if attr is None:
            attr = ints[value] = IntAttr(value)
        object.__setattr__(loc, field, attr)
    return loc


def _resume(parser: LocatingParser, end: int, start: int) -> bool:
    """Move `parser` on to `end`, past what the fast path read; if the lexer cannot resume
    there, back to `start` (nothing consumed) and False."""
    try:
        parser.resume_at(end)
    except ParseError:
        parser.resume_at(start)
        return False
    return True
