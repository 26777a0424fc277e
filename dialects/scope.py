"""Shared machinery for npuir's scope ops, `stream.switch` and `coreset.limit`.

Both ops have the same shape, mirroring a TorchAir `with` block:

    %r = OP HEADER [-> type, ...] [attributes {...}] { ... OP.yield %v : type }

The header differs (a stream tag and priority; core counts); everything else —
the result types, the attribute dictionary, the single-block body with an
implicit terminator when nothing is yielded, and the check that no value
escapes the body except through the yield — lives here once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import IRDLOperation, traits_def, var_operand_def
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


def verify_scope(op: Operation, body: Region, yield_type: type[Operation]) -> None:
    """The block (single, as the region definition requires) ends in the yield,
    whose operand types are the results'."""
    block = body.block
    if block.args:
        raise VerifyException("body block takes no arguments")
    term = block.last_op
    if not isinstance(term, yield_type):
        raise VerifyException(f"body must end with '{yield_type.name}'")
    yielded = [v.type for v in term.operands]
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
        if not _is_scope(inner):
            pending.extend(o for region in inner.regions for b in region.blocks for o in b.ops)


def _is_scope(op: Operation) -> bool:
    """Whether `op` is a scope op (whose own verifier checks its body)."""
    first = op.regions[0].blocks.first if op.regions else None
    term = first.last_op if first is not None else None
    return isinstance(term, ScopeYieldOp) and term.PARENT == op.name


class ScopeYieldOp(IRDLOperation):
    """The terminator of a scope: passes values out of it (subclasses name the scope)."""

    PARENT: ClassVar[str]

    values = var_operand_def()

    traits = traits_def(IsTerminator(), VerifiesDialectAttributes())

    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue) -> None:
        super().__init__(operands=[list(values)])

    def verify_(self) -> None:
        parent = self.parent_op()
        if parent is None or parent.name != self.PARENT:
            raise VerifyException(f"expects parent op '{self.PARENT}'")


def inline_scope(op: Operation) -> None:
    """Replace a scope by its body: the ops move in front of it, in order, and
    its results are replaced by the values its yield passes out."""
    parent = op.parent_block()
    assert parent is not None
    body = op.regions[0].block
    term = body.last_op
    assert term is not None
    for inner in list(body.ops):
        if inner is not term:
            inner.detach()
            parent.insert_op_before(inner, op)
    for result, value in zip(op.results, term.operands):
        result.replace_all_uses_with(value)
    parent.erase_op(op)
