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

Parsing and verifying the copies is most of what an MPMD run costs over its SPMD form, so
`text_copies` finds, before parsing, the entry functions whose text is the same but for
their names (a generator's or a printer's copies) and blanks the later ones out of the text
(spaces, so that every offset, line and column stays where it was): the module is parsed
with one of each.  `has_symbol_refs` then tells whether `share_identical` would have kept
the copies after all (the caller parses the whole text then).
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence

from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Operation, SSAValue

__all__ = ["has_symbol_refs", "share_identical", "structure", "text_copies"]


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


def has_symbol_refs(module: ModuleOp) -> bool:
    """Whether an op of a function of `module` names a symbol (`share_identical` then shares
    nothing)."""
    try:
        for f in module.ops:
            if isinstance(f, FuncOp):
                structure(f)
    except _RefersToSymbol:
        return True
    return False


# A function's first line: `func.func [private|public] @name(` at the start of a line.
_FUNC_HEAD = re.compile(
    r"^[ \t]*func\.func[ \t]+(?:(?:private|public|nested)[ \t]+)?@([A-Za-z_][\w$.-]*)[ \t]*\(",
    re.MULTILINE,
)


_BRACES = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|[{}\n]')
"""What `_function_end` looks at: a string literal, a comment, a brace, a newline."""


def _function_end(text: str, start: int) -> int:
    """The end (past its newline) of the function whose first line starts at `start`: the
    first line after which the braces opened since are all closed (a header may span
    lines); -1 when the text ends first or a brace closes one opened before.  Braces in
    string literals and `//` comments do not count.  (A declaration has no body: its span
    runs into the next op, which `text_copies` refuses.)"""
    depth = 0
    opened = False
    for m in _BRACES.finditer(text, start):
        c = m.group()
        if c == "{":
            depth += 1
            opened = True
        elif c == "}":
            depth -= 1
            if depth < 0:
                return -1
        elif c == "\n" and opened and depth == 0:
            return m.end()
    return -1


def _blank(span: str) -> str:
    """`span` with every character but newlines a space."""
    return "\n".join(" " * len(line) for line in span.split("\n"))


def text_copies(text: str, entries: Sequence[str]) -> tuple[str, dict[str, str]]:
    """`text` with each entry function whose text is another entry's but for its name blanked
    out (every character but newlines made a space), and each blanked function's name -> the
    name of the one kept (the first of the copies in `entries`' order, as `share_identical`
    keeps).  A function is a candidate when its first line starts with `func.func @name(`,
    it has a body, and its text holds no other `func.func`; nothing is blanked when no two
    entries are copies.  Each distinct function's text is scanned once: a later function is
    first compared with those (a copy is found at the speed of comparing strings)."""
    wanted = set(entries)
    if len(wanted) < 2:
        return text, {}
    # Each distinct function's text before and after its name.
    distinct: list[tuple[str, str]] = []
    spans: dict[str, tuple[int, int, int]] = {}  # name -> start, end, index in `distinct`
    for m in _FUNC_HEAD.finditer(text):
        name = m.group(1)
        if name not in wanted or name in spans:
            continue
        head = text[m.start() : m.start(1)]
        found = next(
            (
                i
                for i, (h, rest) in enumerate(distinct)
                if h == head and text.startswith(rest, m.end(1))
            ),
            -1,
        )
        if found >= 0:
            spans[name] = (m.start(), m.end(1) + len(distinct[found][1]), found)
            continue
        end = _function_end(text, m.start())
        if end < 0 or text.count("func.func", m.start(), end) != 1:
            continue
        distinct.append((head, text[m.end(1) : end]))
        spans[name] = (m.start(), end, len(distinct) - 1)
    kept: dict[int, str] = {}
    same: dict[str, str] = {}
    for name in dict.fromkeys(entries):
        span = spans.get(name)
        if span is None:
            continue
        first = kept.setdefault(span[2], name)
        if first != name:
            same[name] = first
    if not same:
        return text, {}
    parts: list[str] = []
    at = 0
    for start, end, _ in sorted(spans[name] for name in same):
        parts.append(text[at:start])
        parts.append(_blank(text[start:end]))
        at = end
    parts.append(text[at:])
    return "".join(parts), same
