"""Rank functions that are copies of each other, run once: the MPMD dedup of `npuir-run`.

An MPMD program (`--entries`) often names functions that differ only in their names (a
generator writes one per rank).  Lowering, planning memory for and preparing the
simulation of each copy repeats the same work; `share_identical` keeps the first of each
set of identical entry functions and gives its name to every rank that ran a copy.  Every
rank is still simulated: only the per-function work is shared.

Two functions are identical when their bodies are, op for op: the same op names,
attributes and properties, result types, operands (numbered by where they are defined),
block arguments and nesting.  Names and source locations do not count.  A module in which
an op refers to a symbol (a call) is left alone: a copy could be the target.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Operation, SSAValue

__all__ = ["share_identical", "structure"]


class _RefersToSymbol(Exception):
    """The function names a symbol: it is not a candidate for sharing."""


def _attrs(op: Operation) -> tuple[tuple[str, Attribute], ...]:
    items = [*op.attributes.items(), *op.properties.items()]
    for _, value in items:
        if isinstance(value, SymbolRefAttr):
            raise _RefersToSymbol
    return tuple(sorted(items, key=lambda kv: kv[0]))


def structure(func: FuncOp) -> Hashable:
    """What two functions must share to be identical (see the module docstring); raises
    `_RefersToSymbol` for a function that names a symbol."""
    number: dict[SSAValue, int] = {}
    parts: list[Hashable] = [func.function_type]

    def define(value: SSAValue) -> None:
        number[value] = len(number)

    def visit(op: Operation) -> None:
        parts.append(
            (
                op.name,
                tuple(number.get(v, -1) for v in op.operands),
                tuple(r.type for r in op.results),
                _attrs(op),
                tuple(len(r.blocks) for r in op.regions),
            )
        )
        for result in op.results:
            define(result)
        for region in op.regions:
            for block in region.blocks:
                parts.append(tuple(a.type for a in block.args))
                for arg in block.args:
                    define(arg)
                for inner in block.ops:
                    visit(inner)

    for block in func.body.blocks:
        parts.append(tuple(a.type for a in block.args))
        for arg in block.args:
            define(arg)
        for op in block.ops:
            visit(op)
    return tuple(parts)


def share_identical(module: ModuleOp, names: Sequence[str]) -> list[str]:
    """`names` (one entry function per rank) with each function that is a copy of an
    earlier one replaced by that one's name, and the copies taken out of `module` (nothing
    changes when the module names a symbol anywhere, or no two entries are copies)."""
    funcs = {f.sym_name.data: f for f in module.ops if isinstance(f, FuncOp)}
    distinct = list(dict.fromkeys(names))
    if len(distinct) < 2:
        return list(names)
    first_of: dict[Hashable, str] = {}
    same: dict[str, str] = {}
    try:
        for name in distinct:
            same[name] = first_of.setdefault(structure(funcs[name]), name)
        for f in funcs.values():
            if f.sym_name.data not in same:
                structure(f)  # refuses a module whose other functions call anything
    except _RefersToSymbol:
        return list(names)
    for name, kept in same.items():
        if kept != name:
            funcs[name].detach()
            funcs[name].erase()
    return [same[n] for n in names]
