"""Seed 003's table of which kernels core limits act on, as `coreset-lower` applies it,
and the GE importer's kernel library for known op types."""

from __future__ import annotations

import pytest

import npuir
from npuir.analysis.core_limits import limit_has_no_effect
from npuir.dialects import coreset
from npuir.dialects.npu import KERNEL, CollectiveOp, Engine, NpuOp
from npuir.frontends.load import load_source, source_of_text
from npuir.transforms.coreset_lower import LIMIT_NO_EFFECT

T = "tensor<64x64xf16>"


def _ops(body: str) -> list[NpuOp]:
    text = f"func.func @f(%x: {T}) {{\n{body}\n  func.return\n}}\n"
    module = npuir.parse_text(npuir.make_context(), text)
    return [op for op in module.walk() if isinstance(op, NpuOp)]


@pytest.mark.parametrize(
    ("op", "acts_on"),
    [
        (f"%a = npu.matmul %x, %x : ({T}, {T}) -> {T}", {"cube", "vector"}),  # AscendC
        (f'%a = npu.exp %x {{npu.kernel = "ascendc"}} : ({T}) -> {T}', {"cube", "vector"}),
        (f'%a = npu.exp %x {{npu.kernel = "aicpu"}} : ({T}) -> {T}', set()),
        (f'%a = npu.exp %x {{npu.kernel = "tbe"}} : ({T}) -> {T}', {"vector"}),
        (f'%a = npu.matmul %x, %x {{npu.kernel = "atb"}} : ({T}, {T}) -> {T}', set()),
        (
            f'%a = npu.all_reduce %x {{group_size = 2 : i64, mode = "aiv"}} : ({T}) -> {T}',
            {"cube", "vector"},
        ),
        (f"%a = npu.all_reduce %x {{group_size = 2 : i64}} : ({T}) -> {T}", set()),  # sdma
    ],
)
def test_limits_act_on_the_kernels_seed_003_lists(op: str, acts_on: set[str]) -> None:
    (made,) = _ops("  " + op)
    assert {e for e in coreset.ENGINES if limit_has_no_effect(made, e) is None} == acts_on


def test_an_aicpu_kernel_runs_on_the_ai_cpu() -> None:
    (made,) = _ops(f'  %a = npu.exp %x {{npu.kernel = "aicpu"}} : ({T}) -> {T}')
    assert made.engine is Engine.AICPU


def test_an_unknown_kernel_kind_is_refused() -> None:
    with pytest.raises(npuir.DiagnosticError, match=r"npu\.kernel"):
        _ops(f'  %a = npu.exp %x {{npu.kernel = "cuda"}} : ({T}) -> {T}')


def _warnings(text: str, parse: bool = True) -> tuple[list[npuir.Diagnostic], object]:
    ctx = npuir.make_context()
    module = (
        npuir.parse_text(ctx, text) if parse else load_source(source_of_text("dump.txt", text), ctx)
    )
    with ctx.diagnostics.collect() as found:
        npuir.run_passes(ctx, module, npuir.build_pipeline("npu-default"))
    return found, module


def test_a_limit_on_a_kernel_it_does_not_act_on_warns_and_is_not_applied() -> None:
    text = (
        f"func.func @f(%x: {T}) -> {T} {{\n"
        f"  %r = coreset.limit vector 8 -> {T} {{\n"
        f'    %a = npu.exp %x {{npu.kernel = "atb"}} : ({T}) -> {T}\n'
        f"    coreset.yield %a : {T}\n"
        "  }\n"
        f"  func.return %r : {T}\n"
        "}\n"
    )
    found, module = _warnings(text)
    assert [d.kind for d in found] == [LIMIT_NO_EFFECT.code]
    assert found[0].location is not None and found[0].location.line == 3
    exp = next(op for op in module.walk() if op.name == "npu.exp")  # type: ignore[attr-defined]
    assert exp.attributes[coreset.CORES] == coreset.CoresAttr(None, 48)


def test_the_ge_importer_takes_the_kernel_library_for_a_known_type() -> None:
    desc = 'output_desc { dtype: DT_FLOAT16 shape { dim: 4 dim: 4 } layout: "ND" }'
    lib = 'attr { key: "_ge_attr_op_kernel_lib_name" value { s: "aicpu_ascend_kernel" } }'
    limit = 'attr { key: "_op_vectorcore_num" value { s: "8" } }'
    dump = "\n".join(
        [
            'name: "g"',
            f'op {{ name: "x" type: "Data" {desc} }}',
            f'op {{ name: "r" type: "Relu" input: "x:0" {lib} {limit} {desc} }}',
            'op { name: "o" type: "NetOutput" input: "r:0" }',
        ]
    )
    found, module = _warnings(dump, parse=False)
    relu = next(op for op in module.walk() if op.name == "npu.relu")  # type: ignore[attr-defined]
    assert isinstance(relu, NpuOp) and not isinstance(relu, CollectiveOp)
    assert relu.attributes[KERNEL].data == "aicpu"  # type: ignore[attr-defined]
    assert relu.engine is Engine.AICPU
    assert [d.kind for d in found] == [LIMIT_NO_EFFECT.code]
