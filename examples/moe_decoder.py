"""A 2-layer Llama-style decoder with DeepSeek-style MoE layers (a shared expert and top-k
routed experts), annotated for TorchAir: the shared expert runs on a stream of its own.

    python examples/moe_decoder.py model.pt2      # torch.export it (needs torch)
    npuir-advise model.pt2                        # where the scopes should go, as edits here

On an Ascend machine `import torchair` is TorchAir itself; elsewhere `npuir.torchair`
stands in for it (the same `air::` ops, the same signatures; the `examples/torchair`
folder beside this file is not a TorchAir), so every edit `npuir-advise` prints applies
to this file as it is.
"""

from __future__ import annotations

import sys
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

try:
    import torchair  # type: ignore[import-not-found]
    from torchair import scope as _  # noqa: F401  (TorchAir itself, not a folder here)
except ImportError:
    import npuir.torchair as torchair  # type: ignore[no-redef]

TOKENS, HIDDEN, INTER, EXPERTS, TOP_K, HEADS = 64, 512, 1024, 8, 2, 8


class Attention(nn.Module):
    """Self-attention over the tokens (one sequence)."""

    def __init__(self) -> None:
        super().__init__()
        self.heads, self.dim = HEADS, HIDDEN // HEADS
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN, bias=False)
        self.o = nn.Linear(HIDDEN, HIDDEN, bias=False)

    def forward(self, x: Any) -> Any:
        t = x.shape[0]
        q, k, v = self.qkv(x).view(t, 3 * self.heads, self.dim).transpose(0, 1).chunk(3, dim=0)
        scores = torch.matmul(q, k.transpose(1, 2)) * (self.dim**-0.5)
        out = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.o(out.transpose(0, 1).reshape(t, HIDDEN))


class SharedExpert(nn.Module):
    """A SwiGLU MLP every token goes through."""

    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(HIDDEN, 2 * INTER, bias=False)
        self.down = nn.Linear(INTER, HIDDEN, bias=False)

    def forward(self, x: Any) -> Any:
        a, b = self.up(x).chunk(2, dim=-1)
        return self.down(F.silu(a) * b)


class RoutedExperts(nn.Module):
    """Top-k routing: each token's k experts' SwiGLU MLPs, weights gathered per slot."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = nn.Linear(HIDDEN, EXPERTS, bias=False)
        self.w13 = nn.Parameter(torch.randn(EXPERTS, HIDDEN, 2 * INTER) * 0.02)
        self.w2 = nn.Parameter(torch.randn(EXPERTS, INTER, HIDDEN) * 0.02)
        self.register_buffer("slot_token", torch.arange(TOKENS).repeat_interleave(TOP_K))

    def forward(self, x: Any) -> Any:
        probs = torch.softmax(self.gate(x), dim=-1)
        weights, ids = torch.topk(probs, TOP_K, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        slots = torch.index_select(x, 0, self.slot_token).unsqueeze(1)
        expert = ids.reshape(-1)
        up = torch.bmm(slots, torch.index_select(self.w13, 0, expert))
        a, b = up.chunk(2, dim=-1)
        down = torch.bmm(F.silu(a) * b, torch.index_select(self.w2, 0, expert))
        return (down.reshape(TOKENS, TOP_K, HIDDEN) * weights.unsqueeze(-1)).sum(dim=1)


class Layer(nn.Module):
    """Attention, then the MoE block; the shared expert on its own stream."""

    def __init__(self) -> None:
        super().__init__()
        self.attn_norm = nn.RMSNorm(HIDDEN, eps=1e-6)
        self.attn = Attention()
        self.moe_norm = nn.RMSNorm(HIDDEN, eps=1e-6)
        self.shared = SharedExpert()
        self.routed = RoutedExperts()

    def forward(self, x: Any) -> Any:
        h = x + self.attn(self.attn_norm(x))
        y = self.moe_norm(h)
        with torchair.scope.npu_stream_switch("shared"):
            shared = self.shared(y)
        routed = self.routed(y)
        return h + routed + shared


class Decoder(nn.Module):
    """Two layers."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([Layer(), Layer()])

    def forward(self, x: Any) -> Any:
        for layer in self.layers:
            x = layer(x)
        return x


def export() -> torch.export.ExportedProgram:
    """The decoder, exported on one batch of TOKENS tokens."""
    torch.manual_seed(0)
    return torch.export.export(Decoder(), (torch.randn(TOKENS, HIDDEN),))


if __name__ == "__main__":
    torch.export.save(export(), sys.argv[1] if len(sys.argv) > 1 else "moe_decoder.pt2")
