"""A printer that spells each type once.

A large program names a handful of tensor types over and over (every op line
repeats its operand and result types), and xDSL's printer spells each one token
by token every time: on a 100k-op module that is most of the printing time.
`TypeCachingPrinter` keeps the text of each builtin type it has printed, keyed
by the type object (kept alive beside its text, so the key cannot be reused),
and writes that text again.  A builtin type's spelling does not depend on the
printer's state (indentation, generic form, locations), so the output is
byte-identical to xDSL's (`test/unit/test_printing.py`).

`FastPrinter` also writes each one-line op from a template of its class, types and
attributes.  An importer names every op (`npu.op_name`) and locates it in its source: a
string attribute and a file location differ from op to op, so they are holes in the
template, filled in with their own text, and one template serves every op of a kind.
"""

from __future__ import annotations

import re
from io import StringIO

from xdsl.dialects.builtin import (
    BFloat16Type,
    FileLineColLoc,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntAttr,
    IntegerType,
    NoneAttr,
    StringAttr,
    TensorType,
    UnregisteredOp,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.printer import Printer

_SIMPLE_TYPES = (IntegerType, Float16Type, BFloat16Type, Float32Type, Float64Type, IndexType)
"""Builtin types made of nothing but builtin data."""


def _cacheable(attribute: Attribute) -> bool:
    kind = type(attribute)
    if isinstance(attribute, TensorType):
        # A tensor's encoding may be any attribute: only plain ones are cached.
        return (
            kind is TensorType
            and isinstance(attribute.encoding, NoneAttr)
            and type(attribute.element_type) in _SIMPLE_TYPES
        )
    return kind in _SIMPLE_TYPES


_PLAIN_TEXT = re.compile(r"[\x20\x21\x23-\x5b\x5d-\x7e]*")
"""Printable ASCII but for `"` and `\\`: a string literal spells these as they are."""


def string_literal(text: str) -> str:
    """`text` as xDSL's `Printer.print_string_literal` spells it: in double quotes, `\\`
    doubled, every other byte outside printable ASCII (and `"`) as `\\XX` of its UTF-8."""
    if _PLAIN_TEXT.fullmatch(text):
        return f'"{text}"'
    out = ['"']
    for byte in text.encode("utf-8"):
        if byte == 0x5C:
            out.append("\\\\")
        elif byte < 0x20 or byte > 0x7E or byte == 0x22:
            out.append(f"\\{byte:02X}")
        else:
            out.append(chr(byte))
    out.append('"')
    return "".join(out)


class TypeCachingPrinter(Printer):
    """xDSL's `Printer`, writing each builtin type's text from a cache, and a file
    location's text with its file name's literal from a cache."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._type_text: dict[int, tuple[Attribute, str]] = {}
        self._file_text: dict[str, str] = {}

    def location_text(self, loc: FileLineColLoc) -> str | None:
        """`loc("file":line:col)` as xDSL prints it; None when `loc` is not the plain kind
        (or a location is being printed already, which xDSL does not wrap again)."""
        line, column = loc.line, loc.column
        if (
            self.printing_location
            or type(line) is not IntAttr
            or type(column) is not IntAttr
            or type(loc.filename) is not StringAttr
        ):
            return None
        name = loc.filename.data
        literal = self._file_text.get(name)
        if literal is None:
            literal = self._file_text[name] = string_literal(name)
        return f"loc({literal}:{line.data:d}:{column.data:d})"

    def print_attribute(self, attribute: Attribute) -> None:
        cached = self._type_text.get(id(attribute))
        if cached is None:
            if type(attribute) is FileLineColLoc:
                text = self.location_text(attribute)
                if text is not None:
                    self.print_string(text)
                    return
            if not _cacheable(attribute):
                super().print_attribute(attribute)
                return
            out = StringIO()
            Printer(stream=out).print_attribute(attribute)
            cached = self._type_text[id(attribute)] = (attribute, out.getvalue())
        self.print_string(cached[1])


class _PlaceholderPrinter(Printer):
    """Prints the k-th value it is asked for as `%\\x00k\\x00` and remembers which, and
    each attribute of `holes` (by identity) as `\\x01k\\x01`, k its index there."""

    def __init__(self, holes: list[Attribute], **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.printed: list[SSAValue] = []
        self.holes = {id(a): k for k, a in enumerate(holes)}
        self.filled: list[int] = []

    def print_ssa_value(self, value: SSAValue) -> str:
        name = f"\x00{len(self.printed)}\x00"
        self.printed.append(value)
        self.print_string(f"%{name}")
        return name

    def print_attribute(self, attribute: Attribute) -> None:
        k = self.holes.get(id(attribute))
        if k is None:
            super().print_attribute(attribute)
            return
        self.filled.append(k)
        self.print_string(f"\x01{k}\x01")


_PLACEHOLDER = re.compile("([\x00\x01])([0-9]+)[\x00\x01]")


class _Template:
    """An op's text without its value names and string attributes: `segments[0] hole
    segments[1] ...`, the k-th hole being the name of operand `holes[k]` (an int) or the
    literal of the string attribute of that name (a str)."""

    __slots__ = ("holes", "keep", "segments")

    def __init__(self, segments: list[str], holes: list[int | str], keep: object) -> None:
        self.segments = segments
        self.holes = holes
        self.keep = keep  # the types and attributes the key names by identity


_VARIES = object()
"""In a template's key, the value of a string attribute: a hole in the template."""


class FastPrinter(TypeCachingPrinter):
    """`TypeCachingPrinter` that also writes each one-line op from a template.

    An op without regions or successors, printed generically or in a declarative
    custom format, prints the same text for the same class, operand and result types
    and attributes, apart from its value names and the text of the string attributes its
    class does not declare (printed in its attribute dictionary, as `npu.op_name`).  The
    first such op is printed by xDSL with placeholders for these, which gives the
    template; later ones fill in their own.  A kind whose string attributes do not print
    as one placeholder each (a custom format that reads them) keys its templates by
    those strings too.
    """

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self._templates: dict[tuple[object, ...], _Template | None] = {}
        self._literals: dict[str, str] = {}
        # Op classes whose string attributes cannot be holes (see the class's doc).
        self._exact: set[type[Operation]] = set()

    def _value_name(self, value: SSAValue) -> str:
        # The name `print_ssa_value` gives `value`, assigned the same way.
        name = self._ssa_values.get(value)
        if name is not None:
            return name
        hint = value.name_hint
        if hint:
            index = self.ssa_names.get(hint, 0)
            name = f"{hint}_{index}" if index else hint
            self.ssa_names[hint] = index + 1
        else:
            name = self._get_new_valid_name_id()
        self._ssa_values[value] = name
        return name

    def _template(
        self, op: Operation, key: tuple[object, ...], holes: list[str]
    ) -> _Template | None:
        """The template of `op`, with a hole for each attribute named in `holes`; None
        when `op` cannot have one, or (when `holes` is not empty) when those attributes
        do not print as one placeholder each."""
        generic = self.print_generic_format or Operation.print is type(op).print
        if isinstance(op, UnregisteredOp) or op.regions or op.successors:
            return None
        if not generic and not (
            isinstance(op, IRDLOperation) and op.get_irdl_definition().assembly_format
        ):
            return None
        out = StringIO()
        attrs = op.attributes
        sub = _PlaceholderPrinter(
            [attrs[h] for h in holes],
            stream=out,
            print_generic_format=self.print_generic_format,
            print_properties_as_attributes=self.print_properties_as_attributes,
        )
        if generic:
            sub.print_string(f'"{op.name}"')
            sub.print_op_with_default_format(op)
        else:
            sub.print_string(op.name)
            op.print(sub)
        text = out.getvalue()
        if sub._dialect_resources or "\n" in text:
            return None
        if sorted(sub.filled) != list(range(len(holes))):
            return None
        pieces = _PLACEHOLDER.split(text)
        operands = list(op.operands)
        used = [False] * len(operands)
        filled: list[int | str] = []
        values = iter(sub.printed)
        for kind, k in zip(pieces[1::3], pieces[2::3]):
            if kind == "\x01":
                filled.append(holes[int(k)])
                continue
            value = next(values)
            for j, operand in enumerate(operands):
                if operand is value and not used[j]:
                    used[j] = True
                    filled.append(j)
                    break
            else:
                return None  # printed a value that is not an operand
        return _Template(pieces[0::3], filled, key)

    def _holes(self, op: Operation) -> list[str]:
        """The attributes of `op` that are holes in its template: the string attributes
        its class does not declare."""
        if type(op) in self._exact:
            return []
        attrs = op.attributes
        names = [n for n, v in attrs.items() if type(v) is StringAttr]
        if names and isinstance(op, IRDLOperation):
            declared = op.get_irdl_definition()
            names = [
                n for n in names if n not in declared.attributes and n not in declared.properties
            ]
        return names

    def _literal(self, text: str) -> str:
        literal = self._literals.get(text)
        if literal is None:
            literal = string_literal(text)
            if len(self._literals) < 65536:  # names repeat little: keep the cache bounded
                self._literals[text] = literal
        return literal

    def print_op(self, op: Operation) -> None:
        if self.diagnostic.op_messages:
            super().print_op(op)
            return
        operands = op.operands
        attrs = op.attributes
        holes = self._holes(op)
        key = (
            type(op),
            len(operands),
            len(op.results),
            len(attrs),
            *[id(v.type) for v in operands],
            *[id(t) for t in op.result_types],
            *attrs,
            *[_VARIES if n in holes else id(v) for n, v in attrs.items()],
            *op.properties,
            *[id(v) for v in op.properties.values()],
        )
        if key in self._templates:
            template = self._templates[key]
        else:
            keep = (
                key,
                [v.type for v in operands],
                op.result_types,
                attrs.copy(),
                dict(op.properties),
            )
            template = self._template(op, keep, holes)
            if template is None and holes:
                # Its string attributes do not print as holes: key this class by them.
                self._exact.add(type(op))
                self.print_op(op)
                return
            self._templates[key] = template
        if template is None:
            super().print_op(op)
            return
        name = self._value_name
        parts: list[str] = []
        if op.results:
            parts.append(", ".join(["%" + name(r) for r in op.results]))
            parts.append(" = ")
        segments = template.segments
        parts.append(segments[0])
        for k, hole in enumerate(template.holes):
            if isinstance(hole, int):
                parts.append(name(operands[hole]))
            else:
                value = attrs[hole]
                assert isinstance(value, StringAttr)
                parts.append(self._literal(value.data))
            parts.append(segments[k + 1])
        self.print_string("".join(parts))
        if self.print_debuginfo:
            self.print_string(" ")
            self.print_attribute(op.location)
