"""The transformers forms of `frontends/aten_models.py`, each on a small module written the
way transformers writes it: imported from `torch.export`, run by npuir's numpy interpreter
and compared with eager; the forms it refuses are named with the reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from torch_run import run_exported

torch = pytest.importorskip("torch")

import npuir  # noqa: E402
from npuir.diagnostics import DiagnosticEngine  # noqa: E402
from npuir.frontends.torch import import_exported_program  # noqa: E402

pytestmark = [pytest.mark.torch]


def _run(model: Any, args: tuple[Any, ...], tmp_path: Path) -> list[Any]:
    """`model` exported, imported strictly (no `npu.opaque`) and run; its outputs."""
    return run_exported(model, args, tmp_path, strict=True)[1]


def _same(model: Any, args: tuple[Any, ...], tmp_path: Path) -> None:
    want = model(*args)
    want = list(want) if isinstance(want, tuple | list) else [want]
    got = _run(model, args, tmp_path)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.detach().numpy(), rtol=1e-5, atol=1e-5)


class _Cache(torch.nn.Module):
    """DynamicLayer's first update: a legacy empty tensor concatenated with the keys (given
    as an input here; DynamicLayer's own is a lifted constant, which the zoo's compile
    tests take)."""

    def forward(self, empty: Any, k: Any) -> Any:
        return torch.cat([empty, k], dim=-2) * 2


def test_a_cat_skips_a_legacy_empty_tensor(tmp_path: Path) -> None:
    _same(_Cache(), (torch.tensor([]), torch.randn(1, 2, 3, 4)), tmp_path)


class _Norms(torch.nn.Module):
    """GPT-2 / BERT / ViT: layer norm, eval dropout, `gelu_new`'s cube, casts by `.to`."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(8, eps=1e-5)
        self.drop = torch.nn.Dropout(0.1)
        torch.nn.init.normal_(self.norm.weight)
        torch.nn.init.normal_(self.norm.bias)

    def forward(self, x: Any) -> Any:
        y = self.drop(self.norm(x))
        cube = torch.pow(y, 3.0) + y.pow(5)
        half = y.to(torch.float16).to(device=x.device, dtype=torch.float32)
        return cube, half.to(x.device), torch.flatten(y, 1)


def test_layer_norm_dropout_pow_and_casts(tmp_path: Path) -> None:
    _same(_Norms().eval(), (torch.randn(2, 3, 8),), tmp_path)


class _Patches(torch.nn.Module):
    """ViT's patch embedding: a convolution whose kernel is its stride."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 6, kernel_size=4, stride=4)

    def forward(self, x: Any) -> Any:
        return self.conv(x).flatten(2).transpose(1, 2)


def test_a_patch_embedding_is_a_convolution(tmp_path: Path) -> None:
    _same(_Patches(), (torch.randn(2, 3, 8, 12),), tmp_path)


class _Conv(torch.nn.Module):
    def forward(self, x: Any, w: Any, b: Any) -> Any:
        return torch.nn.functional.conv2d(x, w, b, stride=(1, 2), padding=1, dilation=2)


def test_a_padded_dilated_convolution(tmp_path: Path) -> None:
    _same(_Conv(), (torch.randn(1, 2, 7, 9), torch.randn(3, 2, 3, 3), torch.randn(3)), tmp_path)


class _Filled(torch.nn.Module):
    """Tensors made by size, as routing and caches make them."""

    def forward(self, x: Any, ids: Any) -> Any:
        counts = torch.zeros_like(x) + torch.ones_like(x) * 2
        made = x.new_ones(3, 4) + x.new_zeros((3, 4)) + torch.ones(3, 4) + torch.zeros(1)
        index = torch.empty_like(ids)  # undefined contents: overwritten before any use
        index = index * 0 + ids
        return counts, made, index


class _Diff(torch.nn.Module):
    """transformers' packed-sequence check: where the positions restart."""

    def forward(self, positions: Any, x: Any) -> Any:
        first = positions[:, :1] - 1
        return torch.diff(positions, prepend=first, dim=-1), torch.diff(x, n=2, dim=0)


def test_diff_with_prepend_and_n(tmp_path: Path) -> None:
    _same(_Diff(), (torch.tensor([[0, 1, 2, 0, 1, 2, 3, 0]]), torch.randn(5, 3)), tmp_path)


def test_tensors_made_by_size(tmp_path: Path) -> None:
    _same(_Filled(), (torch.randn(3, 4), torch.arange(5)), tmp_path)


class _ExpandKV(torch.nn.Module):
    """DeepSeek-V3's `expand_kv`: the slices of a `new_empty` key written in place, a split
    by sizes, an in-place division and a copy into a slice of a slice."""

    def forward(self, nope: Any, rot: Any, w: Any) -> Any:
        a, b = torch.split(nope, [3, 2], dim=-1)
        k = nope.new_empty(1, 2, 4, 7)
        k[..., :5] = torch.cat([a, b], -1)
        k[..., 5:] = rot.expand(1, 2, 4, 2)
        w = w.clone()
        w /= w.sum(-1, keepdim=True)
        inner = k[:, 1:]
        inner[..., :1].copy_(w[..., :1].reshape(1, 1, 4, 1))
        return k * 1, w


def test_writes_into_slices_reach_the_tensor(tmp_path: Path) -> None:
    args = (torch.randn(1, 2, 4, 5), torch.randn(1, 1, 4, 2), torch.rand(1, 4, 3) + 0.5)
    _same(_ExpandKV(), args, tmp_path)


class _Stale(torch.nn.Module):
    def forward(self, x: Any) -> Any:
        y = x * 1
        left, right = y[:, :2], y[:, 2:]
        left.copy_(right)
        return right + left  # `right` was sliced before the write and read after it


class _Unbatched(torch.nn.Module):
    def forward(self, x: Any, w: Any) -> Any:
        return torch.nn.functional.conv2d(x, w)  # one CHW image, no batch dim


@pytest.mark.parametrize(
    ("model", "args", "reason"),
    [
        (_Stale(), (torch.randn(2, 4),), "other slice is read after it"),
        (_Unbatched(), (torch.randn(2, 4, 4), torch.randn(3, 2, 3, 3)), "not NCHW"),
    ],
)
def test_what_the_forms_refuse_is_named(model: Any, args: Any, reason: str) -> None:
    ep = torch.export.export(model, args)
    engine = DiagnosticEngine()
    import_exported_program(ep, diagnostics=engine)
    (warning,) = [d for d in engine.emitted if d.kind == "torch.unmapped-form"]
    assert reason in warning.message
    assert warning.location is not None and warning.location.filename == __file__


class _Interleaved(torch.nn.Module):
    """DeepSeek-V3's interleaved rotary halves: strided slices (the slice kernel reads the span
    the dialect infers the result from)."""

    def forward(self, q: Any) -> Any:
        return torch.cat([q[..., 0::2] * 2, q[..., 1::2]], dim=-1), q[1::3, 1:6:2]


def test_strided_slices_compute_what_eager_does(tmp_path: Path) -> None:
    _same(_Interleaved(), (torch.randn(5, 4, 8),), tmp_path)


class _Histc(torch.nn.Module):
    """MoE routing's tokens per expert; values outside the range; the data's range; a
    range that is a point."""

    def forward(self, experts: Any, x: Any) -> Any:
        return (
            torch.histc(experts.float(), bins=4, min=0, max=3),
            torch.histc(x, bins=7, min=-1, max=1),
            torch.histc(x, bins=5),
            torch.histc(x * 0 + 2, bins=3),
        )


def test_histc_is_built_from_core_ops(tmp_path: Path) -> None:
    _same(_Histc(), (torch.tensor([[0, 3], [1, 3], [2, 0]]), torch.randn(50)), tmp_path)


def test_histc_without_its_core_ops_is_opaque_on_both_routes(tmp_path: Path) -> None:
    """Without every op it is built from, histc is an op no npu op maps: one warning, and
    the archive read as data imports to the same IR as the program in memory."""
    from npuir.dialects.npu import NPU_OPS
    from npuir.frontends import aten_models
    from npuir.frontends.torch import import_pt2

    ep = torch.export.export(_Histc(), (torch.tensor([[0, 3]]), torch.randn(8)))
    path = tmp_path / "h.pt2"
    torch.export.save(ep, path)
    engine = DiagnosticEngine()
    text = npuir.print_ir(import_exported_program(ep, diagnostics=engine))
    assert npuir.print_ir(import_pt2(path, diagnostics=DiagnosticEngine())) == text
    if all(name in {op.name for op in NPU_OPS} for name in aten_models.Forms.HISTC_OPS):
        assert "aten.histc" not in text
    else:
        assert 'ge_type = "aten.histc.default"' in text
        assert "aten.histc.default" in {d.args.get("aten_op") for d in engine.emitted}


class _EmptyCache(torch.nn.Module):
    """DynamicLayer's empty cache made inside `forward`: a constant torch lifts to an input."""

    def forward(self, k: Any) -> Any:
        return torch.cat([torch.tensor([], dtype=k.dtype), k], dim=-2) * 2


def test_a_lifted_constant_compiles_as_one_program() -> None:
    """The constant is the function's first argument, before the user's: the report
    simulates the call's shapes on the user's arguments all the same."""
    import npuir.torchair as tng

    backend = tng.get_npu_backend()
    torch._dynamo.reset()
    k = torch.randn(1, 2, 3, 4)
    got = torch.compile(_EmptyCache(), backend=backend, fullgraph=True, dynamic=False)(k)
    torch.testing.assert_close(got, k * 2)
    assert not backend.splits and len(backend.modules) == 1
    (report,) = backend.reports
    assert all(ns is not None for ns in report.makespans_ns.values()), report.makespans_ns
