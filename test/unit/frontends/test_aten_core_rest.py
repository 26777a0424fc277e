"""The last Core ATen ops (3-d pooling, cdist/pdist, embedding_bag, masked_scatter, `.item()`,
resize_, the FFTs on complex64 and complex128) against eager PyTorch, a form they refuse
and a complex operand an op without complex arithmetic refuses, as located diagnostics."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]

import torch  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402
from xdsl.dialects.func import FuncOp  # noqa: E402

from npuir.backends.npu.numerics import run_ranks  # noqa: E402
from npuir.diagnostics import DiagnosticEngine  # noqa: E402
from npuir.dialects.npu import OpaqueOp  # noqa: E402
from npuir.frontends.torch import (  # noqa: E402
    TORCH_UNMAPPED_FORM,
    _numpy,
    import_exported_program,
    import_fx_graph,
)

F = torch.nn.functional


def _matches_eager(fn: Callable[..., Any], *xs: Any, mode: str = "real") -> None:
    graph = make_fx(fn, tracing_mode=mode)(*xs).graph
    module = import_fx_graph(graph, strict=True)
    assert not [op for op in module.walk() if isinstance(op, OpaqueOp)]
    func = next(op for op in module.walk() if isinstance(op, FuncOp))
    (outputs,) = run_ranks(module, [func], [[_numpy(x) for x in xs]])
    wanted = fn(*xs)
    wanted = list(wanted) if isinstance(wanted, tuple | list) else [wanted]
    assert len(outputs) == len(wanted)
    for got, want in zip(outputs, wanted, strict=True):
        torch.testing.assert_close(torch.from_numpy(np.asarray(got)), want, equal_nan=True)


_X5 = torch.randn(2, 3, 5, 6, 7, generator=torch.Generator().manual_seed(0))
_A, _B = torch.randn(2, 4, 3), torch.randn(2, 5, 3)
_W = torch.randn(10, 4)
_IDS = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
_OFFSETS = torch.tensor([0, 4, 4, 6])  # the second bag is empty

CASES: dict[str, tuple[Callable[..., Any], tuple[Any, ...]]] = {
    "avg_pool3d": (lambda x: F.avg_pool3d(x, (2, 3, 2), (1, 2, 2), (1, 1, 0)), (_X5,)),
    "avg_pool3d_f64_unbatched": (lambda x: F.avg_pool3d(x, 3, 2, 1), (_X5[0].double(),)),
    "adaptive_avg_pool3d_uneven": (lambda x: F.adaptive_avg_pool3d(x, (2, 4, 3)), (_X5,)),
    "adaptive_avg_pool3d_even": (lambda x: F.adaptive_avg_pool3d(x, (5, 3, 1)), (_X5[0],)),
    "cdist_p2": (lambda a, b: torch.cdist(a, b), (_A, _B)),
    "cdist_p0": (lambda a, b: torch.cdist(a, b, 0.0), (_A, _B.round())),
    "cdist_p3_5": (lambda a, b: torch.cdist(a, b, 3.5), (_A, _B)),
    "cdist_inf": (lambda a, b: torch.cdist(a, b, float("inf")), (_A, _B)),
    "pdist_p1": (lambda a: F.pdist(a, 1.0), (_B[0],)),
    "embedding_bag_mean_padding": (
        lambda w, i, o: F.embedding_bag(i, w, o, mode="mean", padding_idx=4),
        (_W, _IDS, _OFFSETS),
    ),
    "embedding_bag_max_all_results": (
        lambda w, i, o: torch.ops.aten._embedding_bag(w, i, o, False, 2),
        (_W, _IDS, _OFFSETS),
    ),
    "embedding_bag_weighted_sum": (
        lambda w, i, o, s: F.embedding_bag(i, w, o, per_sample_weights=s, mode="sum"),
        (_W, _IDS, _OFFSETS, torch.rand(8)),
    ),
    "masked_scatter_broadcast_mask": (
        lambda x, m, s: x.masked_scatter(m, s),
        (torch.randn(3, 4), torch.tensor([True, False, True, True]), torch.randn(4, 5)),
    ),
    "resize_smaller": (lambda x: torch.ops.aten.resize_(x.clone(), [2, 5]), (torch.randn(3, 4),)),
    "avg_pool3d_int64_truncates": (
        lambda x: F.avg_pool3d(x, (2, 3, 2), (1, 2, 2), (1, 1, 0)),
        (torch.randint(-50, 50, (2, 3, 5, 6, 7), generator=torch.Generator().manual_seed(1)),),
    ),
    "rfft2_ortho": (lambda x: torch.fft.rfft2(x, norm="ortho"), (_X5[0, 0],)),
    "irfft_of_rfft_forward": (
        lambda x: torch.fft.irfft(torch.fft.rfft(x), n=7, norm="forward"),
        (_X5[0, 0],),
    ),
    "ifft_of_complex64": (lambda x: torch.fft.ifft(x.to(torch.complex64)), (_A,)),
    "rfft_f64": (lambda x: torch.fft.rfft(x), (_A.double(),)),
    # what the OpInfo sweep found in ops covered before
    "softmax_of_0d": (lambda x: torch.softmax(x, 0), (torch.tensor(0.5),)),
    "squeeze_of_0d": (lambda x: torch.squeeze(x, 0), (torch.tensor(0.5),)),
    "conv2d_int_stride_valid": (
        lambda x, w: F.conv2d(x, w, stride=2, padding="valid"),
        (torch.randn(1, 4, 5, 5), torch.randn(2, 4, 2, 3)),
    ),
    # torch wraps an out-of-range integer scalar modulo 2**bits (uint8: -3 is 253)
    "full_like_uint8_of_a_negative_fill": (
        lambda x: torch.full_like(x, -3),
        (torch.arange(5, dtype=torch.uint8),),
    ),
    "add_uint8_and_a_negative_scalar": (
        lambda x: x + -3,
        (torch.arange(5, dtype=torch.uint8),),
    ),
    "mul_int8_and_a_scalar_past_its_range": (
        lambda x: x * 300,
        (torch.arange(-3, 4, dtype=torch.int8),),
    ),
    "expand_of_a_size_1_dim_to_0": (
        lambda x: x.expand(4, 0, 3) + 1,
        (torch.randn(4, 1, 3),),
    ),
    "topk_of_0d": (lambda x: torch.topk(x, 1), (torch.tensor(0.5),)),
    "gather_of_0d": (
        lambda x, i: torch.gather(x, 0, i),
        (torch.tensor(0.5), torch.tensor([0])),
    ),
    "gather_of_an_empty_index_of_another_rank": (
        lambda x, i: torch.gather(x, 0, i),
        (torch.randn(5), torch.zeros(2, 0, dtype=torch.int64)),
    ),
    "arange_int64_of_fractional_bounds": (
        lambda x: x + torch.arange(-7.9, -4.0, 1.5, dtype=torch.int64),
        (torch.zeros(3, dtype=torch.int64),),
    ),
    "arange_uint8_of_a_fractional_start": (
        lambda x: x + torch.arange(0.5, 3.7, 1.5, dtype=torch.uint8),
        (torch.zeros(3, dtype=torch.uint8),),
    ),
    "var_f16_rounds_once": (
        lambda x: torch.var(x, 1),
        ((torch.randn(5, 25, generator=torch.Generator().manual_seed(5)) * 30).half(),),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_op_matches_eager(case: str) -> None:
    fn, xs = CASES[case]
    _matches_eager(fn, *xs)


def test_item_is_a_zero_d_tensor_on_the_device() -> None:
    # `.item()` cannot be traced on real tensors (make_fx refuses a data-dependent value).
    def add_item(s: Any, y: Any) -> Any:
        return y + torch.ops.aten._local_scalar_dense(s)

    _matches_eager(add_item, torch.tensor([2.5]), torch.randn(3, 4), mode="symbolic")


class _CeilPool(torch.nn.Module):
    def forward(self, x: Any) -> Any:
        return F.avg_pool3d(x, 2, ceil_mode=True)  # a form npuir refuses


def test_a_refused_form_is_a_located_warning() -> None:
    ep = torch.export.export(_CeilPool(), (torch.randn(1, 2, 5, 5, 5),))
    engine = DiagnosticEngine()
    import_exported_program(ep, diagnostics=engine)
    (warning,) = engine.emitted
    assert warning.kind == TORCH_UNMAPPED_FORM.code
    assert warning.args["aten_op"] == "aten.avg_pool3d.default"
    assert warning.location is not None and warning.location.filename == __file__
    assert warning.location.line == _CeilPool.forward.__code__.co_firstlineno + 1


class _AbsOfSpectrum(torch.nn.Module):
    def forward(self, x: Any) -> Any:
        return torch.fft.rfft(x).abs()  # abs of complex64: npuir's abs is real arithmetic


def test_a_complex_operand_of_a_real_kernel_is_a_located_warning() -> None:
    ep = torch.export.export(_AbsOfSpectrum(), (torch.randn(4, 8),)).run_decompositions()
    engine = DiagnosticEngine()
    module = import_exported_program(ep, diagnostics=engine)
    (warning,) = engine.emitted
    assert warning.kind == TORCH_UNMAPPED_FORM.code
    assert warning.args["aten_op"] == "aten.abs.default"
    assert warning.location is not None and warning.location.filename == __file__
    assert warning.location.line == _AbsOfSpectrum.forward.__code__.co_firstlineno + 1
    # The FFT before it is npu.fft on complex<f32>, which prints and parses back.
    (fft,) = [op for op in module.walk() if op.name == "npu.fft"]
    assert "complex<f32>" in str(fft.result.type)


class _RowParallel(torch.nn.Module):
    """A row-parallel layer on torch_npu's MC2 kernel (npuir's CPU stand-in of it)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(16, 8, generator=torch.Generator().manual_seed(3)))

    def forward(self, x: Any) -> Any:
        return torch.ops.npu.npu_mm_all_reduce_base(x, self.w, "hccl_world") * 2


def test_mc2_from_torch_is_one_matmul_all_reduce(tmp_path: Any) -> None:
    from torch_run import run_exported

    from npuir.frontends.torchair import npu_standin

    npu_standin.install()
    x = torch.randn(2, 3, 16)
    module, got, want = run_exported(_RowParallel(), (x,), tmp_path, strict=True)
    (mc2,) = [op for op in module.walk() if op.name == "npu.matmul_all_reduce"]
    # one process is a group of one; the communicator's name is kept
    assert mc2.group_size == 1 and mc2.group == "hccl_world"
    np.testing.assert_allclose(got[0], want[0].detach().numpy(), rtol=1e-5, atol=1e-5)
