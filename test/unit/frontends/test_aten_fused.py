"""Attention, grouped matmul and torch_npu's fused kernels imported as npu_fused ops.

Each model is exported, imported and run as `npuir-run --inputs --check` runs it, then
compared with eager PyTorch on the same inputs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from torch_run import run_exported

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from xdsl.dialects.builtin import ModuleOp  # noqa: E402

from npuir.diagnostics import DiagnosticEngine, DiagnosticError  # noqa: E402
from npuir.frontends.torch import import_exported_program  # noqa: E402

pytestmark = [pytest.mark.torch]  # torch's import and compiles: the slow tier

HERE = str(Path(__file__).resolve())
TOL = {torch.float32: 1e-4, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
NPU = torch.ops.npu


def ops_of(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("npu.")]


def run_against_eager(
    model: nn.Module, args: tuple[Any, ...], tmp_path: Path
) -> tuple[ModuleOp, list[float]]:
    """The imported module, and each output's largest error against eager relative to the
    tolerance of its dtype (<= 1 passes)."""
    module, got, want = run_exported(model, args, tmp_path, strict=True)
    errors = []
    for i, w in enumerate(want):
        tol = TOL[w.dtype]
        diff = np.abs(got[i].astype(np.float64) - w.double().numpy())
        errors.append(float(np.max(diff / (tol + tol * np.abs(w.double().numpy())))))
    return module, errors


class Attention(nn.Module):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        self.kwargs = kwargs

    def forward(self, q: Any, k: Any, v: Any, mask: Any = None) -> Any:
        return F.scaled_dot_product_attention(q, k, v, mask, **self.kwargs)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["f32", "f16"])
@pytest.mark.parametrize(
    ("kv_heads", "kwargs", "mask"),
    [
        (2, {"is_causal": True, "enable_gqa": True}, None),  # GQA: no repeat_kv anywhere
        (4, {"scale": 0.2}, "bool"),
        (4, {}, "float"),
    ],
)
def test_sdpa_is_one_fusion_attention(
    dtype: Any, kv_heads: int, kwargs: dict[str, Any], mask: str | None, tmp_path: Path
) -> None:
    g = torch.Generator().manual_seed(kv_heads)
    q = torch.randn(2, 4, 6, 16, generator=g).to(dtype)
    k = torch.randn(2, kv_heads, 6, 16, generator=g).to(dtype)
    v = torch.randn(2, kv_heads, 6, 16, generator=g).to(dtype)
    args: tuple[Any, ...] = (q, k, v)
    if mask == "bool":
        keep = torch.rand(6, 6, generator=g) > 0.4
        keep[:, 0] = True
        args += (keep,)
    elif mask == "float":
        args += (torch.randn(1, 1, 6, 6, generator=g).to(dtype),)
    module, errors = run_against_eager(Attention(**kwargs), args, tmp_path)
    assert ops_of(module) == ["npu.fusion_attention"]
    assert max(errors) <= 1


def test_attention_with_dropout_is_refused_at_the_users_line() -> None:
    class Dropout(nn.Module):
        def forward(self, q: Any) -> Any:
            return F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)  # line of the error

    q = torch.randn(1, 2, 4, 8)
    ep = torch.export.export(Dropout(), (q,))
    with pytest.raises(DiagnosticError) as info:
        import_exported_program(ep, strict=True)
    diagnostic = info.value.diagnostic
    assert "dropout" in diagnostic.message
    assert diagnostic.location is not None and diagnostic.location.filename == HERE
    assert diagnostic.location.line == Dropout.forward.__code__.co_firstlineno + 1


class GroupedMm(nn.Module):
    def __init__(self, via: str) -> None:
        super().__init__()
        self.via = via

    def forward(self, x: Any, w: Any, offs: Any) -> Any:
        if self.via == "aten":
            return torch._grouped_mm(x, w, offs=offs)
        return torch.ops.transformers.grouped_mm_fallback(x, w, offs=offs)


@pytest.mark.parametrize("via", ["aten", "transformers"])
def test_grouped_mm_is_one_grouped_matmul(via: str, tmp_path: Path) -> None:
    if via == "transformers":
        pytest.importorskip("transformers.integrations.moe")
    g = torch.Generator().manual_seed(1)
    # torch's _grouped_mm takes bf16 only; transformers' fallback any float type.
    dtype = torch.bfloat16 if via == "aten" else torch.float32
    # Its meta kernel also wants 16-byte strides: 8 bf16 columns.
    x, w = torch.randn(16, 16, generator=g).to(dtype), torch.randn(3, 16, 8, generator=g).to(dtype)
    offs = torch.tensor([4, 11, 16], dtype=torch.int32)
    module, errors = run_against_eager(GroupedMm(via), (x, w, offs), tmp_path)
    assert ops_of(module) == ["npu.grouped_matmul"]
    assert max(errors) <= 1


class TorchNpuBlock(nn.Module):
    """A block written against torch_npu's fused kernels, as an Ascend model is."""

    def forward(self, x: Any, gamma: Any, q: Any, k: Any, cos: Any, sin: Any, m: Any) -> Any:
        h = NPU.npu_rms_norm(x, gamma, 1e-6)[0]
        q = NPU.npu_rotary_mul(q, cos, sin)
        o = NPU.npu_fusion_attention(q, k, k, 4, "BSND", atten_mask=m, scale=0.25)[0]
        return h, o


def test_torch_npu_kernels_import_to_their_ops(tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(2)
    args = (
        torch.randn(6, 16, generator=g),
        torch.randn(16, generator=g),
        torch.randn(1, 6, 4, 16, generator=g),
        torch.randn(1, 6, 2, 16, generator=g),
        torch.randn(1, 6, 1, 16, generator=g),
        torch.randn(1, 6, 1, 16, generator=g),
        torch.ones(6, 6, dtype=torch.bool).triu(1),  # torch_npu's mask: true drops
    )
    module, errors = run_against_eager(TorchNpuBlock(), args, tmp_path)
    names = ops_of(module)
    assert "npu.opaque" not in names
    assert {"npu.rms_norm", "npu.rotary_embedding", "npu.fusion_attention"} <= set(names)
    assert max(errors) <= 1


class TorchNpuMoe(nn.Module):
    """An MoE layer on torch_npu's routing kernels and grouped matmul."""

    def __init__(self, experts: int, hidden: int, k: int) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(4)
        self.gate = nn.Parameter(torch.randn(hidden, experts, generator=g))
        self.w = nn.Parameter(torch.randn(experts, hidden, hidden, generator=g) / hidden)
        self.k = k

    def forward(self, x: Any, offsets: Any) -> Any:
        weights, experts, rows = NPU.npu_moe_gating_top_k_softmax(x @ self.gate, None, self.k)
        expanded, dst, _ = NPU.npu_moe_init_routing(x, rows, experts, x.shape[0])
        (y,) = NPU.npu_grouped_matmul(
            [expanded], [self.w], group_list=offsets, split_item=3, group_type=0
        )
        return NPU.npu_moe_finalize_routing(y, x, None, None, weights, dst, experts)


def test_torch_npu_moe_imports_without_an_opaque_op(tmp_path: Path) -> None:
    model = TorchNpuMoe(experts=4, hidden=8, k=2)
    x = torch.randn(5, 8, generator=torch.Generator().manual_seed(3))
    # The group ends of this input's routing, as a histc of the sorted experts gives them.
    _, experts, _ = NPU.npu_moe_gating_top_k_softmax(x @ model.gate.detach(), None, 2)
    offsets = torch.bincount(experts.flatten(), minlength=4).cumsum(0).int()
    module, errors = run_against_eager(model, (x, offsets), tmp_path)
    names = ops_of(module)
    assert "npu.opaque" not in names
    for op in ("gating_topk_softmax", "init_routing", "finalize_routing"):
        assert f"npu.moe_{op}" in names
    assert "npu.grouped_matmul" in names
    assert max(errors) <= 1


class Rstd(nn.Module):
    """Reads an output of `npu_rms_norm` that npuir does not compute."""

    def forward(self, x: Any, g: Any) -> Any:
        y, rstd = NPU.npu_rms_norm(x, g)
        return torch.relu(y) * rstd


def test_an_output_npuir_does_not_compute_is_an_unmapped_form() -> None:
    ep = torch.export.export(Rstd(), (torch.randn(2, 4), torch.randn(4)))
    with pytest.raises(DiagnosticError, match="first output"):
        import_exported_program(ep, strict=True)
    quiet = DiagnosticEngine()
    module = import_exported_program(ep, diagnostics=quiet)
    assert "npu.opaque" in ops_of(module)
    (warning,) = quiet.emitted
    assert warning.kind == "torch.unmapped-form" and "first output" in warning.message


def test_under_compile_it_runs_eagerly_and_the_rest_on_npuir() -> None:
    import npuir.torchair as tng

    x, g = torch.randn(4, 16), torch.randn(16)
    torch._dynamo.reset()
    compiled = torch.compile(Rstd(), backend=tng.get_npu_backend(), fullgraph=True)
    with pytest.warns(UserWarning, match="npu_rms_norm's first output"):
        got = compiled(x, g)
    torch.testing.assert_close(got, Rstd()(x, g))


def test_the_stand_ins_refuse_forms_npuir_does_not_take() -> None:
    q = torch.randn(1, 2, 4, 8)
    with pytest.raises(ValueError, match="keep_prob"):
        NPU.npu_fusion_attention(q, q, q, 2, "BNSD", keep_prob=0.9)
    with pytest.raises(ValueError, match="input_layout"):
        NPU.npu_fusion_attention(q, q, q, 2, "TND")
