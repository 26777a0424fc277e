"""Closed sets of values are `StrEnum`s the dialects check and read back (issue 19, item 5).

A collective's `mode`, an opaque op's `engine` and a function's `gear.policy` are
spelled as strings, as they always were (custom and generic form alike), and read as
enum members; the constraint that checks them is made from the enum, so a value
outside it is a located error that lists the enum's spellings.
"""

from __future__ import annotations

import pytest

import npuir
from npuir.diagnostics import DiagnosticError
from npuir.dialects import gear, npu
from npuir.dialects.attributes import SpelledEnum

T = "tensor<64xf16>"


def _collective(mode: str | None) -> str:
    attrs = "group_size = 2 : i64" + ("" if mode is None else f', mode = "{mode}"')
    return f"""func.func @f(%x: {T}) -> {T} {{
  %r = npu.all_reduce %x {{{attrs}}} : ({T}) -> {T}
  func.return %r : {T}
}}
"""


@pytest.mark.parametrize("mode", [None, *npu.CommMode])
def test_mode_reads_as_the_enum_and_prints_as_written(mode: npu.CommMode | None) -> None:
    text = _collective(None if mode is None else mode.value)
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, text)
    (op,) = [o for o in module.walk() if isinstance(o, npu.AllReduceOp)]
    assert op.mode is (mode or npu.CommMode.SDMA)
    assert op.uses_vector_cores == (op.mode is npu.CommMode.AIV)
    for generic in (False, True):
        printed = npuir.print_ir(module, generic=generic)
        if mode is not None:
            assert f'mode = "{mode.value}"' in printed
        assert npuir.print_ir(npuir.parse_text(npuir.make_context(), printed)) == npuir.print_ir(
            module
        )


def test_a_mode_outside_the_enum_lists_the_enum() -> None:
    with pytest.raises(DiagnosticError) as info:
        npuir.parse_text(npuir.make_context(), _collective("rdma"))
    choices = " or ".join(f'"{m.value}"' for m in npu.CommMode)
    assert f'mode must be {choices}, got "rdma"' in str(info.value)


def test_opaque_engines_are_a_subset_of_the_engine_enum() -> None:
    spelled = npu.OpaqueOp.ENGINE_NAME
    assert isinstance(spelled, SpelledEnum)
    assert spelled.choices == npu.OpaqueOp.ENGINES
    assert npu.Engine.COMM not in spelled.choices
    text = f"""func.func @f(%x: {T}) -> {T} {{
  %r = npu.opaque %x {{ge_type = "X", engine = "aicpu"}} : ({T}) -> {T}
  func.return %r : {T}
}}
"""
    module = npuir.parse_text(npuir.make_context(), text)
    (op,) = [o for o in module.walk() if isinstance(o, npu.OpaqueOp)]
    assert op.engine is npu.Engine.AICPU
    with pytest.raises(DiagnosticError, match='engine must be one of "cube", "vector", "aicpu"'):
        npuir.parse_text(npuir.make_context(), text.replace('"aicpu"', '"comm"'))


def test_policy_reads_as_the_enum() -> None:
    assert gear.POLICIES == tuple(p.value for p in gear.Policy)
    text = """func.func @f(%x: tensor<?x2xf32> {gear.dims = #gear.dims<0: [2, 4]>}) -> tensor<?x2xf32>
    attributes {gear.policy = "product"} {
  func.return %x : tensor<?x2xf32>
}
"""
    module = npuir.parse_text(npuir.make_context(), text)
    func = next(iter(module.ops))
    assert gear.policy_of(dict(func.attributes)) is gear.Policy.PRODUCT
    assert 'gear.policy = "product"' in npuir.print_ir(module)
