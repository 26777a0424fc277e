"""Shared machinery for npuir's scope ops, `stream.switch` and `coreset.limit`.

Both ops have the same shape, mirroring a TorchAir `with` block:

    %r = OP HEADER [-> type, ...] [attributes {...}] { ... OP.yield %v : type }

The header differs (a stream tag and priority; core counts); everything else —
the result types, the attribute dictionary, the single-block body with an
implicit terminator when nothing is yielded, and the check that no value
escapes the body except through the yield — lives here once.

`ScopeOp` is the interface both ops implement (as xDSL's interfaces are base
classes whose traits the ops inherit): code that only needs "a scope" — its
body, the value its yield passes out for a result — asks it, and
`issue_order` is the one walk that flattens nested scopes into issue order.
The terminator is checked by xDSL's `SingleBlockImplicitTerminator` on each
scope op, and the yield's parent by `HasParent`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from enum import Enum
from functools import lru_cache
from typing import TypeVar

from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, IntegerType, i64
from xdsl.ir import Attribute, Block, Operation, OpResult, Region, SSAValue
from xdsl.irdl import IRDLOperation, region_def, traits_def, var_operand_def, var_result_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import VerifyException

from npuir.dialects.attributes import VerifiesDialectAttributes


def parse_result_types(parser: Parser) -> list[Attribute]:
    """`-> t1, t2` (parentheses allowed), or nothing."""
    if parser.parse_optional_punctuation("->") is None:
        return []
    if parser.parse_optional_punctuation("(") is not None:
        if parser.parse_optional_punctuation(")") is not None:
            return []
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        parser.parse_punctuation(")")
        return list(types)
    return list(parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type))


def parse_body(parser: Parser, yield_type: type[Operation]) -> Region:
    """The scope's region; a missing terminator is added when nothing is yielded."""
    region = parser.parse_region()
    block = region.blocks.first
    if block is None:
        block = Block()
        region.add_block(block)
    last = block.last_op
    # Only a missing terminator is implied: a wrong one (another scope's yield)
    # stays, for the verifier to name.
    if last is None or not last.has_trait(IsTerminator):
        block.add_op(yield_type())
    return region


@lru_cache(maxsize=1024)
def i64_attr(value: int) -> IntegerAttr[IntegerType]:
    """`value : i64`, shared: a program repeats a few priorities and core counts."""
    return IntegerAttr(value, i64)


ScopeT = TypeVar("ScopeT", bound="ScopeOp")


def build_parsed(
    cls: type[ScopeT],
    properties: dict[str, Attribute],
    result_types: Sequence[Attribute],
    attributes: DictionaryAttr | None,
    body: Region,
) -> ScopeT:
    """A parsed scope, built as its constructor builds it but without the constructor's
    argument checks (which cost more than reading the header)."""
    return cls.create(
        properties=properties,
        result_types=result_types,
        attributes=attributes.data if attributes is not None else {},
        regions=[body],
    )


def print_tail(
    printer: Printer,
    op: Operation,
    result_types: Sequence[Attribute],
    body: Region,
) -> None:
    """Print `-> types`, `attributes {...}` and the body."""
    if result_types:
        printer.print_string(" -> ")
        printer.print_list(result_types, printer.print_attribute)
    printer.print_op_attributes(op.attributes, print_keyword=True)
    printer.print_string(" ")
    # The terminator is implied only when it says nothing: no values and no attributes
    # (a discardable attribute on it must survive the round trip).
    terminator = body.block.last_op if body.blocks else None
    implied = not result_types and (terminator is None or not terminator.attributes)
    printer.print_region(body, print_entry_block_args=False, print_block_terminators=not implied)


def verify_scope(op: ScopeOp) -> None:
    """The block (single, with the scope's yield at its end: the op's
    `SingleBlockImplicitTerminator` checks that) takes no arguments, and the yield's
    operand types are the results'."""
    block = op.body.block
    if block.args:
        raise VerifyException("body block takes no arguments")
    yielded = [v.type for v in op.yielded()]
    declared = [r.type for r in op.results]
    if yielded != declared:
        raise VerifyException(
            f"yields ({', '.join(map(str, yielded))}) but the scope declares results "
            f"({', '.join(map(str, declared))})"
        )
    # A value escaping a nested scope escapes that scope too, and the nested
    # scope reports it when it verifies; checking only down to nested scopes
    # keeps deep nests linear instead of checking every op once per enclosing scope.
    pending = list(block.ops)
    while pending:
        inner = pending.pop()
        for result in inner.results:
            for use in result.uses:
                if not op.is_ancestor(use.operation):
                    raise VerifyException(
                        f"value defined by '{inner.name}' inside the scope is used outside "
                        "it; values leave a scope only through its yield"
                    )
        if not isinstance(inner, ScopeOp):
            pending.extend(o for region in inner.regions for b in region.blocks for o in b.ops)


class ScopeOp(IRDLOperation):
    """A scope: one block whose ops run as if written where the scope stands, and
    whose results are the values its yield passes out (subclasses add the header)."""

    outputs = var_result_def()
    body = region_def("single_block")

    def yielded(self) -> Sequence[SSAValue]:
        """The values the body's yield passes out, one per result."""
        term = self.body.block.last_op
        assert term is not None
        return term.operands

    def source_of(self, result: OpResult) -> SSAValue:
        """The value inside the body that `result` (one of this scope's) stands for."""
        return self.yielded()[result.index]


class ScopeYieldOp(IRDLOperation):
    """The terminator of a scope: passes values out of it (subclasses name the scope
    with `HasParent`)."""

    values = var_operand_def()

    traits = traits_def(IsTerminator(), VerifiesDialectAttributes())

    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue) -> None:
        super().__init__(operands=[list(values)])


class Visit(Enum):
    """How `issue_order` gives an op."""

    OP = "op"
    """An op of a body (neither a scope nor a scope's yield)."""
    ENTER = "enter"
    """A scope, before its body."""
    EXIT = "exit"
    """The same scope, after its body."""


def walk_nested(op: Operation) -> Iterator[Operation]:
    """`op` and everything nested in it, in pre-order, without recursion (scopes may nest
    thousands deep, past Python's stack)."""
    yield op
    stack: list[Iterator[Operation]] = [
        iter(b.ops) for r in reversed(op.regions) for b in reversed(r.blocks)
    ]
    while stack:
        nxt = next(stack[-1], None)
        if nxt is None:
            stack.pop()
            continue
        yield nxt
        stack.extend(iter(b.ops) for r in reversed(nxt.regions) for b in reversed(r.blocks))


def issue_order(block: Block) -> Iterator[tuple[Visit, Operation]]:
    """The ops of `block` in issue order, each scope entered where it stands: a scope
    is given as `ENTER` before its body's ops and `EXIT` after them, its yield not at
    all.  The one walk over nested scopes; it keeps its own stack, so a deep nest does
    not recurse."""
    stack: list[tuple[Operation | None, Operation | None]] = [(None, block.first_op)]
    while stack:
        owner, op = stack[-1]
        if op is None:
            stack.pop()
            if owner is not None:
                yield Visit.EXIT, owner
            continue
        stack[-1] = (owner, op.next_op)
        if isinstance(op, ScopeOp):
            yield Visit.ENTER, op
            stack.append((op, op.body.block.first_op))
        elif not isinstance(op, ScopeYieldOp):
            yield Visit.OP, op


def inline_scope(op: ScopeOp) -> None:
    """Replace a scope by its body: the ops move in front of it, in order, and
    its results are replaced by the values its yield passes out."""
    parent = op.parent_block()
    assert parent is not None
    term = op.body.block.last_op
    for inner in list(op.body.block.ops):
        if inner is not term:
            inner.detach()
            parent.insert_op_before(inner, op)
    for result, value in zip(op.results, op.yielded()):
        result.replace_all_uses_with(value)
    parent.erase_op(op)
