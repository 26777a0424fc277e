"""A Llama-style decoder layer with a KV cache, in PyTorch, annotated for TorchAir.

Used by the route-agreement test (torch.compile with `get_npu_backend`,
`torch.export` + the importer, and the same layer written with the builder must
give the same lowered program) and by `bench/torch_compile.py` (the backend's
compile overhead).  The k/v projections run on stream "1" while the query
projection runs on the default stream; the attention reads the cache extended
by this step's k/v (decode: one new token per sequence).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

import npuir.torchair as tng
from npuir.torchair import ops

DIM, HEADS, FFN, CACHE, TOKENS = 256, 4, 512, 64, 8
"""Hidden size, heads, FFN width, cached positions, new tokens (batch)."""


class DecoderLayer(nn.Module):
    """RMSNorm, attention over the KV cache, residual, RMSNorm, SwiGLU MLP, residual."""

    def __init__(self) -> None:
        super().__init__()
        self.norm1 = nn.Parameter(torch.ones(DIM, dtype=torch.float16))
        self.norm2 = nn.Parameter(torch.ones(DIM, dtype=torch.float16))
        self.wq, self.wk, self.wv, self.wo = (
            nn.Parameter(torch.randn(DIM, DIM, dtype=torch.float16) * 0.05) for _ in range(4)
        )
        self.w_gate = nn.Parameter(torch.randn(FFN, DIM, dtype=torch.float16) * 0.05)
        self.w_up = nn.Parameter(torch.randn(FFN, DIM, dtype=torch.float16) * 0.05)
        self.w_down = nn.Parameter(torch.randn(DIM, FFN, dtype=torch.float16) * 0.05)

    def forward(self, x: Any, k_cache: Any, v_cache: Any) -> Any:
        h = F.rms_norm(x, (DIM,), self.norm1, 1e-6)
        q = F.linear(h, self.wq)
        with tng.scope.npu_stream_switch("1"):
            k = F.linear(h, self.wk)
            v = F.linear(h, self.wv)
        keys = torch.cat([k_cache, k], dim=0)
        values = torch.cat([v_cache, v], dim=0)
        scores = torch.softmax(torch.matmul(q, keys.t()) * 0.0625, dim=-1)
        attn = torch.matmul(scores, values)
        x = x + F.linear(attn, self.wo)
        h2 = F.rms_norm(x, (DIM,), self.norm2, 1e-6)
        mlp = F.linear(F.silu(F.linear(h2, self.w_gate)) * F.linear(h2, self.w_up), self.w_down)
        return x + mlp, keys, values


def inputs(seed: int = 0) -> tuple[Any, Any, Any]:
    """One decode step's x and the cache."""
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(TOKENS, DIM, generator=g, dtype=torch.float16),
        torch.randn(CACHE, DIM, generator=g, dtype=torch.float16),
        torch.randn(CACHE, DIM, generator=g, dtype=torch.float16),
    )


def build(graph: tng.Graph) -> None:
    """The same layer with the builder, op for op as the importer maps the ATen graph
    (parameters first, as torch.export lifts them; then x and the cache)."""
    n1, n2 = graph.input((DIM,), "f16"), graph.input((DIM,), "f16")
    wq, wk, wv, wo = (graph.input((DIM, DIM), "f16") for _ in range(4))
    w_gate, w_up = graph.input((FFN, DIM), "f16"), graph.input((FFN, DIM), "f16")
    w_down = graph.input((DIM, FFN), "f16")
    x = graph.input((TOKENS, DIM), "f16")
    k_cache, v_cache = graph.input((CACHE, DIM), "f16"), graph.input((CACHE, DIM), "f16")
    scale = graph.input((), "f16")
    h = ops.rms_norm(x, n1, 1e-6)
    q = ops.linear(h, wq)
    with tng.scope.npu_stream_switch("1"):
        k = ops.linear(h, wk)
        v = ops.linear(h, wv)
    keys = ops.cat([k_cache, k], 0)
    values = ops.cat([v_cache, v], 0)
    scores = ops.softmax(ops.mul(ops.matmul(q, ops.transpose(keys, 0, 1)), scale), -1)
    attn = ops.matmul(scores, values)
    x2 = ops.add(x, ops.linear(attn, wo))
    h2 = ops.rms_norm(x2, n2, 1e-6)
    gate = ops.silu(ops.linear(h2, w_gate))
    mlp = ops.linear(ops.mul(gate, ops.linear(h2, w_up)), w_down)
    graph.output(ops.add(x2, mlp), keys, values)
