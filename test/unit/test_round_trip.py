"""Property: every module npuir prints, custom or generic, parses back equal.

The generated modules start from the dialect test files (`test/dialects/*/
ops.mlir`, which hold every op and attribute of the five dialects), rename
their stream tags to generated strings (unicode and characters that need
escapes included), add a function of nested `stream.switch` scopes, and
attach generated discardable attributes (strings, bytes, integers, floats,
nested arrays and dictionaries) to every op.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import (
    ArrayAttr,
    BytesAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    UnitAttr,
    f32,
    i1,
    i64,
)
from xdsl.ir import Attribute

from npuir import DiagnosticError, make_context, parse_text, print_ir
from npuir.deep_stack import on_deep_stack
from npuir.dialects.validation import MAIN_STREAM

ROOT = Path(__file__).resolve().parents[2]
SPLIT = re.compile(r"^// -----\s*$", re.MULTILINE)
TAG = re.compile(r'(stream\.(?:switch|decl @\w+)) "([^"]*)"')
T = "tensor<8xf16>"


def _seeds() -> list[str]:
    seeds = []
    for path in sorted((ROOT / "test" / "dialects").glob("*/ops.mlir")):
        for chunk in SPLIT.split(path.read_text()):
            try:
                parse_text(make_context(), chunk)
            except DiagnosticError:
                continue
            seeds.append(chunk)
    return seeds


SEEDS = _seeds()


def _is_bytes(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=6)
tags = texts.filter(lambda t: bool(t) and t != MAIN_STREAM)
"""Stream tags a user may write: not empty, not the main stream's reserved label."""

attributes: st.SearchStrategy[Attribute] = st.recursive(
    st.one_of(
        texts.map(StringAttr),
        st.binary(min_size=1, max_size=4).filter(lambda b: _is_bytes(b)).map(BytesAttr),
        st.integers(-(2**63), 2**63 - 1).map(lambda v: IntegerAttr(v, i64)),
        st.booleans().map(lambda b: IntegerAttr(int(b), i1)),
        st.floats(allow_nan=False, width=32).map(lambda v: FloatAttr(v, f32)),
        st.just(UnitAttr()),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(ArrayAttr),
        st.dictionaries(
            st.from_regex(r"[a-z][a-z0-9_.]{0,5}", fullmatch=True), inner, max_size=3
        ).map(DictionaryAttr),
    ),
    max_leaves=8,
)


def nested_scopes(tags: list[str]) -> str:
    """A function of `len(tags)` nested `stream.switch` scopes with those tags."""
    lines = [f"func.func @nest(%a: {T}) -> {T} {{"]
    for i, tag in enumerate(tags):
        lines.append(f"%s{i} = stream.switch {_literal(tag)} -> {T} {{")
    lines.append(f"%x = npu.neg %a : ({T}) -> {T}")
    lines.append(f"stream.yield %x : {T}")
    for i in reversed(range(len(tags))):
        lines.append("}")
        lines.append(f"stream.yield %s{i} : {T}" if i else f"func.return %s0 : {T}")
    lines.append("}")
    return "\n".join(lines) + "\n" if tags else ""


def _literal(s: str) -> str:
    """`s` as an MLIR string literal (every byte outside printable ASCII escaped)."""
    out = []
    for byte in s.encode():
        c = chr(byte)
        out.append(c if 0x20 <= byte < 0x7F and c not in '"\\' else f"\\{byte:02X}")
    return '"' + "".join(out) + '"'


@st.composite
def modules(draw: st.DrawFn) -> ModuleOp:
    seed = draw(st.sampled_from(SEEDS))
    # One new tag per old tag keeps "one stream, one priority" true.
    renamed: dict[str, str] = {}

    def rename(m: re.Match[str]) -> str:
        old = m.group(2)
        if old not in renamed:
            renamed[old] = draw(tags.filter(lambda t: t not in renamed.values()))
        return f"{m.group(1)} {_literal(renamed[old])}"

    text = TAG.sub(rename, seed)
    nest = draw(st.lists(tags, max_size=12))
    module = parse_text(make_context(), text + nested_scopes(nest), "generated.mlir")
    ops = [op for op in module.walk() if op is not module]
    for index in draw(st.lists(st.integers(0, len(ops) - 1), max_size=4, unique=True)):
        ops[index].attributes["test.note"] = draw(attributes)
    return module


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules(), st.booleans())
def test_printed_modules_parse_back_equal(module: ModuleOp, generic: bool) -> None:
    printed = print_ir(module, generic=generic)
    again = parse_text(make_context(), printed, "printed.mlir")
    assert on_deep_stack(module.is_structurally_equivalent, again), printed


def test_every_dialect_contributes_seeds() -> None:
    ops = {
        op.name.split(".")[0] for text in SEEDS for op in parse_text(make_context(), text).walk()
    }
    assert {"stream", "sync", "coreset", "gear", "npu"} <= ops
