"""The benchmark workloads: generators of `.mlir` text and the registry the harness runs.

`WORKLOADS` maps a name to a function of no arguments returning the module text at the
harness's sizes (real model shapes where the workload is a model layer); `QUICK_WORKLOADS`
has the same names at small sizes for smoke runs; `EXAMPLES` names the fixed-size ones kept
in `examples/`, at sizes where `npuir-run FILE --check` stays quick (see each entry for what
was scaled).  `python bench/run.py examples` rewrites those files from the generators.

| name | what | source of the sizes |
|---|---|---|
| `seed` | examples/seed_multistream.mlir, the multi-stream seed's model | the seed document |
| `moe_decode` | DeepSeek-V3 MoE layer, one decode step, EP 8, shared expert on its own stream | DeepSeek-V3 config.json |
| `moe_decode_aiv` | the same layer with its all_to_alls in HCCL's AIV mode (they hold vector cores: seed 003's dispatch/combine case, where core limits act) | as `moe_decode` |
| `moe_decoder` | 2 Llama-style decoder layers with a shared + routed MoE FFN (expert weights gathered by id), decode, one device | Qwen1.5-MoE-A2.7B config.json |
| `tp_decoder_decode` | Llama-2-70B layer, TP 8, batch 16 x 1 token, k/v on their own stream | Llama-2-70B config.json |
| `tp_decoder_prefill` | the same layer, 1 x 2048 tokens with a causal mask | Llama-2-70B config.json |
| `multi_branch` | four unequal branches joining at the end, unannotated | none (a scheduling test) |
| `random_dag_<seed>` | 200 random cube / vector / comm ops, unannotated | none |
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path

from .moe import MoeConfig, moe_decode
from .moe_decoder import MoeDecoderConfig, moe_decoder
from .multi_branch import BranchConfig, multi_branch
from .random_dag import DagConfig, random_dag
from .tp_decoder import DecoderConfig, tp_decoder, tp_decoder_decode, tp_decoder_prefill

__all__ = [
    "EXAMPLES",
    "EXAMPLES_DIR",
    "QUICK_WORKLOADS",
    "RANDOM_SEEDS",
    "WORKLOADS",
    "BranchConfig",
    "DagConfig",
    "DecoderConfig",
    "MoeConfig",
    "MoeDecoderConfig",
    "example_text",
    "is_annotated",
    "moe_decode",
    "moe_decoder",
    "multi_branch",
    "random_dag",
    "seed",
    "tp_decoder",
    "tp_decoder_decode",
    "tp_decoder_prefill",
]

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"

RANDOM_SEEDS = (0, 1, 2)


def seed() -> str:
    """The multi-stream seed's model, as kept in examples/."""
    return (EXAMPLES_DIR / "seed_multistream.mlir").read_text()


# Example sizes.  MoE: DeepSeek-V3's hidden 7168, expert intermediate 2048, top-8, 1 shared
# expert and EP 8 kept; 16 routed experts (2 per rank) instead of 256 and 16 tokens instead of
# 64, so the expert weights fit a quick numeric check.
MOE_EXAMPLE = MoeConfig(experts=16, tokens=16)
# Decoder: Llama-2-70B's head dim 128, 8 KV heads, TP 8 and f16 kept; hidden, heads and
# intermediate halved (4096, 32, 14336), decode context 1024 and prefill 512 tokens.
_HALF_LLAMA = DecoderConfig(hidden=4096, heads=32, inter=14336)
DECODE_EXAMPLE = replace(_HALF_LLAMA, context=1024)
PREFILL_EXAMPLE = replace(_HALF_LLAMA, batch=1, seq=512)
BRANCH_EXAMPLE = BranchConfig()

# Quick (smoke-test) sizes: every op tiny, same structure.
_MOE_QUICK = MoeConfig(hidden=256, expert_inter=64, experts=16, tokens=16)
_DECODER_QUICK = DecoderConfig(hidden=512, heads=8, kv_heads=8, inter=1024)
_MOE_DECODER_QUICK = MoeDecoderConfig(
    hidden=256, heads=4, kv_heads=4, expert_inter=64, shared_inter=256, experts=8, context=64
)
_DAG_QUICK = DagConfig(ops=40, rows=128, cols=256)

WORKLOADS: dict[str, Callable[[], str]] = {
    "seed": seed,
    "moe_decode": moe_decode,
    "moe_decode_aiv": partial(moe_decode, MoeConfig(comm_mode="aiv")),
    "moe_decoder": moe_decoder,
    "tp_decoder_decode": tp_decoder_decode,
    "tp_decoder_prefill": tp_decoder_prefill,
    "multi_branch": multi_branch,
    **{f"random_dag_{s}": partial(random_dag, s) for s in RANDOM_SEEDS},
}
"""Every workload at the harness's sizes."""

QUICK_WORKLOADS: dict[str, Callable[[], str]] = {
    "seed": seed,
    "moe_decode": partial(moe_decode, _MOE_QUICK),
    "moe_decode_aiv": partial(moe_decode, replace(_MOE_QUICK, comm_mode="aiv")),
    "moe_decoder": partial(moe_decoder, _MOE_DECODER_QUICK),
    "tp_decoder_decode": partial(tp_decoder, replace(_DECODER_QUICK, context=64)),
    "tp_decoder_prefill": partial(tp_decoder, replace(_DECODER_QUICK, batch=1, seq=64)),
    "multi_branch": partial(multi_branch, BranchConfig(tokens=32, hidden=256, rank=16)),
    **{f"random_dag_{s}": partial(random_dag, s, _DAG_QUICK) for s in RANDOM_SEEDS},
}
"""The same workloads at tiny sizes, for smoke runs (`--quick`)."""

EXAMPLES: dict[str, tuple[str, Callable[[], str]]] = {
    "moe_decode": ("moe_decode.mlir", partial(moe_decode, MOE_EXAMPLE)),
    "tp_decoder_decode": ("tp_decoder_decode.mlir", partial(tp_decoder, DECODE_EXAMPLE)),
    "tp_decoder_prefill": ("tp_decoder_prefill.mlir", partial(tp_decoder, PREFILL_EXAMPLE)),
    "multi_branch": ("multi_branch.mlir", partial(multi_branch, BRANCH_EXAMPLE)),
}
"""Workloads kept in examples/: file name and the generator at the example's sizes."""


def example_text(name: str) -> str:
    """What examples/<file> of workload `name` holds: a line on where it comes from, then
    the generator's text at the example's sizes."""
    filename, generate = EXAMPLES[name]
    return (
        f"// examples/{filename}: benchmark workload `{name}` at example sizes\n"
        "// (bench/workloads/__init__.py says what was scaled); regenerate with\n"
        "// `python bench/run.py examples`.\n" + generate()
    )


def is_annotated(text: str) -> bool:
    """Whether a workload carries user stream annotations (so `mode=user` applies)."""
    return "stream.switch" in text
