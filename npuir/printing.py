"""A printer that spells each type once.

A large program names a handful of tensor types over and over (every op line
repeats its operand and result types), and xDSL's printer spells each one token
by token every time: on a 100k-op module that is most of the printing time.
`TypeCachingPrinter` keeps the text of each builtin type it has printed, keyed
by the type object (kept alive beside its text, so the key cannot be reused),
and writes that text again.  A builtin type's spelling does not depend on the
printer's state (indentation, generic form, locations), so the output is
byte-identical to xDSL's (`test/unit/test_printing.py`).
"""

from __future__ import annotations

import re
from io import StringIO

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    NoneAttr,
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


class TypeCachingPrinter(Printer):
    """xDSL's `Printer`, writing each builtin type's text from a cache."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._type_text: dict[int, tuple[Attribute, str]] = {}

    def print_attribute(self, attribute: Attribute) -> None:
        cached = self._type_text.get(id(attribute))
        if cached is None:
            if not _cacheable(attribute):
                super().print_attribute(attribute)
                return
            out = StringIO()
            Printer(stream=out).print_attribute(attribute)
            cached = self._type_text[id(attribute)] = (attribute, out.getvalue())
        self.print_string(cached[1])


class _PlaceholderPrinter(Printer):
    """Prints the k-th value it is asked for as `%\\x00k\\x00` and remembers which."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.printed: list[SSAValue] = []

    def print_ssa_value(self, value: SSAValue) -> str:
        name = f"\x00{len(self.printed)}\x00"
        self.printed.append(value)
        self.print_string(f"%{name}")
        return name


_PLACEHOLDER = re.compile("\x00([0-9]+)\x00")


class _Template:
    """An op's text without its value names: `segments[0] name segments[1] ...`, the
    k-th name being that of operand `positions[k]`."""

    __slots__ = ("keep", "positions", "segments")

    def __init__(self, segments: list[str], positions: list[int], keep: object) -> None:
        self.segments = segments
        self.positions = positions
        self.keep = keep  # the types and attributes the key names by identity


class FastPrinter(TypeCachingPrinter):
    """`TypeCachingPrinter` that also writes each one-line op from a template.

    An op without regions or successors, printed generically or in a declarative
    custom format, prints the same text for the same class, operand and result types
    and attributes, apart from its value names.  The first such op is printed by xDSL
    with placeholder names, which gives the template; later ones fill in their names.
    """

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self._templates: dict[tuple[object, ...], _Template | None] = {}

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

    def _template(self, op: Operation, key: tuple[object, ...]) -> _Template | None:
        generic = self.print_generic_format or Operation.print is type(op).print
        if isinstance(op, UnregisteredOp) or op.regions or op.successors:
            return None
        if not generic and not (
            isinstance(op, IRDLOperation) and op.get_irdl_definition().assembly_format
        ):
            return None
        out = StringIO()
        sub = _PlaceholderPrinter(
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
        pieces = _PLACEHOLDER.split(text)
        operands = list(op.operands)
        used = [False] * len(operands)
        positions: list[int] = []
        for value in sub.printed:
            for j, operand in enumerate(operands):
                if operand is value and not used[j]:
                    used[j] = True
                    positions.append(j)
                    break
            else:
                return None  # printed a value that is not an operand
        return _Template(pieces[0::2], positions, key)

    def print_op(self, op: Operation) -> None:
        if self.diagnostic.op_messages:
            super().print_op(op)
            return
        operands = op.operands
        attrs = op.attributes
        key = (
            type(op),
            len(operands),
            len(op.results),
            len(attrs),
            *[id(v.type) for v in operands],
            *[id(t) for t in op.result_types],
            *attrs,
            *[id(v) for v in attrs.values()],
            *op.properties,
            *[id(v) for v in op.properties.values()],
        )
        if key in self._templates:
            template = self._templates[key]
        else:
            template = self._templates[key] = self._template(
                op,
                (
                    key,
                    [v.type for v in operands],
                    op.result_types,
                    attrs.copy(),
                    dict(op.properties),
                ),
            )
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
        for k, j in enumerate(template.positions):
            parts.append(name(operands[j]))
            parts.append(segments[k + 1])
        self.print_string("".join(parts))
        if self.print_debuginfo:
            self.print_string(" ")
            self.print_attribute(op.location)
