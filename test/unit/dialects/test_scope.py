"""Scope ops (`stream.switch`, `coreset.limit`) reject values that escape them.

The textual form cannot express such IR (the parser scopes names to regions,
and a use before the definition is caught first), but a pass can build it, and
xDSL does not check dominance, so the scope's own verifier must.
"""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, i64
from xdsl.dialects.func import FuncOp
from xdsl.utils.exceptions import VerifyException

import npuir
from npuir.dialects.coreset import CoresAttr
from npuir.dialects.gear import DimsAttr

T = "tensor<8xf16>"


def _escaping_module(scope_header: str) -> tuple[npuir.NpuirContext, str]:
    return (
        npuir.make_context(),
        f"""func.func @f(%x: {T}) -> {T} {{
  {scope_header} {{
    %inner = npu.relu %x : ({T}) -> {T}
  }}
  %out = npu.exp %x : ({T}) -> {T}
  func.return %out : {T}
}}
""",
    )


@pytest.mark.parametrize("header", ['stream.switch "1"', "coreset.limit cube 2"])
def test_scope_rejects_a_value_used_outside_it_without_its_yield(header: str) -> None:
    ctx, text = _escaping_module(header)
    module = npuir.parse_text(ctx, text, "escape.mlir")  # valid as written
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    scope, out = list(func.body.block.ops)[:2]
    inner = next(iter(scope.regions[0].block.ops))
    out.operands[0] = inner.results[0]  # what a careless rewrite would do

    with pytest.raises(npuir.DiagnosticError) as info:
        npuir.verify(module)
    diag = info.value.diagnostic
    assert diag.message == (
        f"'{scope.name}' op value defined by 'npu.relu' inside the scope is used "
        "outside it; values leave a scope only through its yield"
    )
    assert diag.location is not None
    assert (diag.location.filename, diag.location.line, diag.location.column) == (
        "escape.mlir",
        2,
        3,
    )


def test_cores_attr_built_in_python_needs_a_valid_count() -> None:
    assert CoresAttr(3, None).count("cube") == 3
    with pytest.raises(VerifyException, match="needs at least one of 'cube' and 'vector'"):
        CoresAttr(None, None)
    with pytest.raises(VerifyException, match="vector count must be a whole number >= 1, got -4"):
        CoresAttr(2, -4)


def test_dims_attr_built_in_python_needs_one_list_per_dim() -> None:
    assert DimsAttr({0: [2, 4]}).items() == [(0, (2, 4))]
    with pytest.raises(VerifyException, match="needs one value list per dim"):
        DimsAttr.new(
            [
                DenseArrayBase.from_list(i64, [0, 1]),
                ArrayAttr([DenseArrayBase.from_list(i64, [2])]),
            ]
        )
