"""`npu-fuse-kernels` on what an export of transformers-style code gives: the fused program
computes what eager PyTorch does, with one op per norm and per rotary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

import npuir  # noqa: E402
from npuir.driver.run import RunConfig, output_arrays, run_program  # noqa: E402
from npuir.frontends.torch import example_inputs, import_exported_program  # noqa: E402

pytestmark = [pytest.mark.torch]  # torch's import and compiles: the slow tier


def rotate_half(x: Any) -> Any:
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class Block(nn.Module):
    """Llama's RMSNorm and rotary embedding as transformers writes them."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(hidden))

    def forward(self, x: Any, q: Any, cos: Any, sin: Any) -> Any:
        dtype = x.dtype
        h = x.to(torch.float32)
        variance = h.pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(variance + 1e-6)
        normed = self.weight * h.to(dtype)
        return normed, q * cos + rotate_half(q) * sin


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float32, 1e-5), (torch.float16, 2e-3)])
def test_fused_program_matches_eager(dtype: Any, tol: float, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = Block(16).to(dtype)
    args = (
        torch.randn(3, 16).to(dtype),
        torch.randn(1, 2, 5, 8).to(dtype),
        torch.randn(1, 1, 5, 8).to(dtype),
        torch.randn(1, 1, 5, 8).to(dtype),
    )
    ep = torch.export.export(model, args)
    module = import_exported_program(ep, strict=True)
    ctx = npuir.make_context()
    npuir.run_passes(ctx, module, npuir.build_pipeline("npu-fuse-kernels"))
    names = [op.name for op in module.walk() if op.name.startswith("npu.")]
    assert names.count("npu.rms_norm") == 1 and names.count("npu.rotary_embedding") == 1
    assert not {"npu.rsqrt", "npu.neg", "npu.concat", "npu.reduce_sum"} & set(names)
    path, inputs = tmp_path / "fused.mlir", tmp_path / "inputs.npz"
    path.write_text(npuir.print_ir(module))
    np.savez(inputs, **example_inputs(ep, *args))
    outcome = run_program(RunConfig(str(path), inputs=str(inputs), check=True))
    assert outcome.status == 0
    got = output_arrays(outcome)
    with torch.no_grad():
        want = model(*args)
    for i, w in enumerate(want):
        np.testing.assert_allclose(
            got[f"out{i}"].astype(np.float32), w.float().numpy(), rtol=tol, atol=tol
        )
