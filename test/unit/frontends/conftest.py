"""Shared fixtures of the frontend tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

TINY = {
    "vocab_size": 64,
    "hidden_size": 16,
    "intermediate_size": 32,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,  # grouped-query attention: repeat_kv's expand
    "max_position_embeddings": 32,
}


def _models() -> dict[str, Any]:
    """transformers' Llama and Qwen2-MoE at the smallest size with every part: attention
    with grouped-query heads, rotary embeddings, RMSNorm, (MoE) routed and shared experts;
    random weights, nothing downloaded."""
    pytest.importorskip("transformers")
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2MoeConfig, Qwen2MoeForCausalLM

    moe = {
        "moe_intermediate_size": 8,
        "shared_expert_intermediate_size": 16,
        "num_experts": 4,
        "num_experts_per_tok": 2,
    }
    return {
        "llama": LlamaForCausalLM(LlamaConfig(**TINY)),
        "qwen2-moe": Qwen2MoeForCausalLM(Qwen2MoeConfig(**TINY, **moe)),
    }


@pytest.fixture(scope="session")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Any]]:
    """Each tiny model exported (`use_cache=False`, a constant input) and saved, once per
    session: the archive and the `ExportedProgram`."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("models")
    out: dict[str, tuple[Path, Any]] = {}
    ids = torch.randint(0, TINY["vocab_size"], (1, 8))
    for name, model in _models().items():
        ep = torch.export.export(model.eval(), (ids,), {"use_cache": False})
        path = folder / f"{name}.pt2"
        torch.export.save(ep, path)
        out[name] = (path, ep)
    return out


@pytest.fixture(scope="session")
def dynamic_llama(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """The tiny Llama exported with a dynamic sequence length (`Dim` in [2, 32]) and saved:
    torch writes its sizes in sympy's `srepr` (`Mul(Integer(16), Symbol('s70', ...))`) and
    reads them with `aten.sym_size.int` nodes."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = _models()["llama"].eval()
    ids = torch.randint(0, TINY["vocab_size"], (1, 8))
    seq = torch.export.Dim("seq", min=2, max=32)
    ep = torch.export.export(model, (ids,), {"use_cache": False}, dynamic_shapes=({1: seq}, None))
    path = tmp_path_factory.mktemp("dynamic") / "llama-dynamic.pt2"
    torch.export.save(ep, path)
    return path, ep


@pytest.fixture(scope="session")
def tiny_config() -> dict[str, int]:
    """The tiny transformers config (`TINY`) for tests that build their own model."""
    return dict(TINY)
