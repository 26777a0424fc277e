"""The model zoo: tiny `transformers` models with random weights, in each phase a user runs.

`python bench/zoo.py [--models llama,gpt2] [--phases prefill,decode] [--repeats N]
[--missing] [--dtype float16|bfloat16] [--mode reduce-overhead]` prints (with `--dtype`:
each case's compiled output against eager's, the model and its float inputs in that dtype,
at twice the dtype's epsilon as the kernel tests compare, relative to the output's largest
magnitude; with `--mode reduce-overhead`: whether each case compiled in capture mode matches
eager and joins every side stream; with `--missing`: the ATen ops each case still runs
eagerly), otherwise, per model and phase, the simulated makespan as written / on one
stream / with GE's
auto multi-stream (`mode=minidag`) / with npuir's `auto` / the lower bound, the time
`npuir-advise` takes on the exported program, and the backend's compile overhead against
`torch.compile(backend="eager")`.  test/unit/frontends/test_zoo.py imports `ZOO`, `build`
and `inputs` from here (bench/ is on the tests' path).

Each model is built from its config at the smallest size with every part (2 layers, hidden
64, 4 query heads over 2 key/value heads where the model has grouped-query attention, a
vocabulary of 128; MoE models 4 experts, 2 per token), `torch.manual_seed` before the
weights, nothing downloaded.  Phases:

- `prefill`: a causal LM on 8 tokens with an empty KV cache: the logits and the cache it
  fills (each layer's keys and values, returned as outputs);
- `decode`: one token after a prefill of 8, the cache passed in as tensors and rebuilt into
  transformers' `DynamicCache` inside `forward` (so dynamo and `torch.export` see plain
  tensor inputs, as a serving loop's cache buffers are): the logits and the grown cache;
- `encode`: an encoder (BERT on 8 tokens, ViT on one 32x32 image) in one pass.

`scoped(name, model)` is the same model with a user's `npu_stream_switch("zoo")` around the
first layer's feed-forward block, added by subclassing that block's `forward` as a TorchAir
user does; `SCOPE_TAG` is its tag.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SEQ = 8
"""Prompt length of a prefill, and the cache length a decode step starts from."""
VOCAB = 128
SCOPE_TAG = "zoo"
"""The stream tag of the user's scope `scoped` adds."""


@dataclass(frozen=True)
class Spec:
    """One zoo model: its config class, the config's sizes, its model class, the kind of
    inputs it takes and the class name of the block `scoped` puts on a stream of its own."""

    config: str
    sizes: dict[str, Any]
    model: str
    kind: str  # "causal" (prefill + decode), "encoder" (token ids), "vision" (pixels)
    scoped_block: str

    @property
    def phases(self) -> tuple[str, ...]:
        return ("prefill", "decode") if self.kind == "causal" else ("encode",)


_LM = {
    "vocab_size": VOCAB,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,  # grouped-query attention: repeat_kv's broadcasting expand
    "max_position_embeddings": 64,
}
_TOKENS = {"bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 2}
"""Special tokens inside the tiny vocabulary (GPT-2's and Phi-3's defaults are not)."""
_MOE = {"num_experts_per_tok": 2, "moe_intermediate_size": 32}

ZOO: dict[str, Spec] = {
    "llama": Spec("LlamaConfig", _LM, "LlamaForCausalLM", "causal", "LlamaMLP"),
    "qwen2": Spec("Qwen2Config", _LM, "Qwen2ForCausalLM", "causal", "Qwen2MLP"),
    "qwen2-moe": Spec(
        "Qwen2MoeConfig",
        {**_LM, **_MOE, "num_experts": 4, "shared_expert_intermediate_size": 64},
        "Qwen2MoeForCausalLM",
        "causal",
        "Qwen2MoeSparseMoeBlock",
    ),
    "mixtral": Spec(
        "MixtralConfig",
        {**_LM, "num_local_experts": 4, "num_experts_per_tok": 2},
        "MixtralForCausalLM",
        "causal",
        "MixtralSparseMoeBlock",
    ),
    "deepseek-v3": Spec(
        "DeepseekV3Config",
        {
            **_LM,
            **_MOE,
            "num_key_value_heads": 4,
            # multi-head latent attention: low-rank q and kv, a rotary part of each head
            "q_lora_rank": 32,
            "kv_lora_rank": 16,
            "qk_nope_head_dim": 16,
            "qk_rope_head_dim": 8,
            "v_head_dim": 16,
            "head_dim": 8,
            "n_routed_experts": 4,
            "n_shared_experts": 1,
            "n_group": 2,
            "topk_group": 1,
            "first_k_dense_replace": 1,  # layer 0 dense, layer 1 MoE
        },
        "DeepseekV3ForCausalLM",
        "causal",
        "DeepseekV3MoE",
    ),
    "gpt2": Spec(
        "GPT2Config",
        {
            "vocab_size": VOCAB,
            "n_embd": 64,
            "n_layer": 2,
            "n_head": 4,
            "n_positions": 64,
            **_TOKENS,
        },
        "GPT2LMHeadModel",
        "causal",
        "GPT2MLP",
    ),
    "bert": Spec(
        "BertConfig",
        {
            "vocab_size": VOCAB,
            "hidden_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "intermediate_size": 128,
            "max_position_embeddings": 64,
        },
        "BertModel",
        "encoder",
        "BertIntermediate",
    ),
    "vit": Spec(
        "ViTConfig",
        {
            "hidden_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "intermediate_size": 128,
            "image_size": 32,
            "patch_size": 8,
        },
        "ViTModel",
        "vision",
        "ViTMLP",
    ),
    # cheap extras: the same parts in other arrangements
    "qwen3": Spec("Qwen3Config", {**_LM, "head_dim": 16}, "Qwen3ForCausalLM", "causal", "Qwen3MLP"),
    "qwen3-moe": Spec(
        "Qwen3MoeConfig",
        {**_LM, **_MOE, "head_dim": 16, "num_experts": 4},
        "Qwen3MoeForCausalLM",
        "causal",
        "Qwen3MoeSparseMoeBlock",
    ),
    "mistral": Spec("MistralConfig", _LM, "MistralForCausalLM", "causal", "MistralMLP"),
    "gemma": Spec("GemmaConfig", {**_LM, "head_dim": 16}, "GemmaForCausalLM", "causal", "GemmaMLP"),
    "phi3": Spec("Phi3Config", {**_LM, **_TOKENS}, "Phi3ForCausalLM", "causal", "Phi3MLP"),
}

CASES: list[tuple[str, str]] = [
    (name, phase) for name, spec in ZOO.items() for phase in spec.phases
]
"""Every (model, phase) of the zoo."""

CORE = ("llama", "qwen2", "qwen2-moe", "mixtral", "deepseek-v3", "gpt2", "bert", "vit")
"""The models issue 35 names; the others are the cheap extras."""


def build(name: str, seed: int = 0) -> Any:
    """The zoo model `name` in eval mode, its weights drawn after `torch.manual_seed(seed)`."""
    import torch
    import transformers

    spec = ZOO[name]
    config = getattr(transformers, spec.config)(**spec.sizes)
    torch.manual_seed(seed)
    return getattr(transformers, spec.model)(config).eval()


class Step:
    """A causal LM as a module of tensors: `forward(input_ids, *cache)` runs the model on the
    tokens after a cache given as each layer's keys and values (none: an empty cache) and
    returns the logits and the cache it grew to, flattened the same way."""

    def __new__(cls, model: Any) -> Any:
        import torch
        from transformers import DynamicCache

        class _Step(torch.nn.Module):
            def __init__(self, model: Any) -> None:
                super().__init__()
                self.model = model

            def forward(self, input_ids: Any, *cache: Any) -> Any:
                pairs = [(cache[i], cache[i + 1]) for i in range(0, len(cache), 2)]
                past = DynamicCache(pairs or None, config=self.model.config)
                out = self.model(input_ids=input_ids, past_key_values=past, use_cache=True)
                grown = out.past_key_values
                flat = [t for layer in grown.layers for t in (layer.keys, layer.values)]
                return (out.logits, *flat)

        return _Step(model)


class Encode:
    """An encoder as a module of tensors: its last hidden state."""

    def __new__(cls, model: Any) -> Any:
        import torch

        class _Encode(torch.nn.Module):
            def __init__(self, model: Any) -> None:
                super().__init__()
                self.model = model

            def forward(self, x: Any) -> Any:
                return self.model(x).last_hidden_state

        return _Encode(model)


def wrapped(name: str, model: Any) -> Any:
    """`model` as the module the zoo compiles: `Step` for a causal LM, `Encode` otherwise."""
    return Step(model) if ZOO[name].kind == "causal" else Encode(model)


def inputs(name: str, phase: str, model: Any, seed: int = 1) -> tuple[Any, ...]:
    """The inputs of `wrapped(name, model)` in `phase`; a decode step's cache is what an eager
    prefill of `SEQ` tokens filled."""
    import torch

    spec = ZOO[name]
    torch.manual_seed(seed)
    if spec.kind == "vision":
        size = spec.sizes["image_size"]
        return (torch.randn(1, 3, size, size),)
    prompt = torch.randint(0, VOCAB, (1, SEQ))
    if phase != "decode":
        return (prompt,)
    with torch.no_grad():
        _, *cache = Step(model)(prompt)
    return (torch.randint(0, VOCAB, (1, 1)), *cache)


def scoped(name: str, model: Any) -> Any:
    """`model` with a user's `npu_stream_switch(SCOPE_TAG)` around its first layer's
    `ZOO[name].scoped_block`: that block's class subclassed with a `forward` that opens the
    scope and calls the original (the model itself is changed and returned)."""
    from npuir.torchair import scope

    block_name = ZOO[name].scoped_block
    block = next(m for m in model.modules() if type(m).__name__ == block_name)
    base = type(block)

    class Scoped(base):  # type: ignore[misc, valid-type]
        def forward(self, *args: Any, **kwargs: Any) -> Any:
            with scope.npu_stream_switch(SCOPE_TAG):
                return base.forward(self, *args, **kwargs)

    Scoped.__name__ = Scoped.__qualname__ = f"Scoped{base.__name__}"
    block.__class__ = Scoped
    return model


# ---------------------------------------------------------------------------------------------
# The figures
# ---------------------------------------------------------------------------------------------


@dataclass
class Row:
    model: str
    phase: str
    makespans_us: dict[str, float | None]
    advise_s: float
    eager_s: float
    npuir_s: float
    eager_parts: int


ADVISE_ROWS = {
    "as written": "as written",
    "one stream": "single stream",
    "GE auto": "GE auto multi-stream",
    "auto": "auto (per op)",
}


def measure(name: str, phase: str, repeats: int, folder: Path) -> Row:
    """One zoo case, the model with the user's scope (`scoped`): `torch.export`, saved, and
    `npuir-advise` on the archive (in process); then `repeats` first calls each of
    `torch.compile(backend="eager")` and of npuir's backend (medians).  Times are this
    process's CPU seconds (`time.process_time`), steadier than wall time on a shared machine."""
    import torch

    import npuir.torchair as tng
    from npuir.driver.advise import AdviseConfig, advise

    model = scoped(name, build(name))
    module = wrapped(name, model)
    xs = inputs(name, phase, model)
    with torch.no_grad():
        ep = torch.export.export(module, xs)
    path = folder / f"{name}-{phase}.pt2"
    torch.export.save(ep, path)
    start = time.process_time()
    advice = advise(AdviseConfig(str(path)))
    advise_s = time.process_time() - start
    spans = advice.to_json()
    by_name = {v["name"]: v["makespan_ns"] for v in spans["variants"]}
    makespans: dict[str, float | None] = {
        row: (None if by_name.get(key) is None else by_name[key] / 1000)
        for row, key in ADVISE_ROWS.items()
    }
    bound = spans.get("lower_bound_ns")
    makespans["bound"] = None if bound is None else bound / 1000
    eager, npuir = [], []
    parts = 0
    with torch.no_grad():
        for _ in range(repeats):
            torch._dynamo.reset()
            begin = time.process_time()
            torch.compile(module, backend="eager", fullgraph=True, dynamic=False)(*xs)
            eager.append(time.process_time() - begin)
            torch._dynamo.reset()
            backend = tng.get_npu_backend()
            begin = time.process_time()
            torch.compile(module, backend=backend, fullgraph=True, dynamic=False)(*xs)
            npuir.append(time.process_time() - begin)
            parts = sum(len([p for p in split if p[0] == "eager"]) for split in backend.splits)
    return Row(
        name,
        phase,
        makespans,
        advise_s,
        statistics.median(eager),
        statistics.median(npuir),
        parts,
    )


def eager_ops(name: str, phase: str) -> list[str]:
    """The ATen ops npuir's backend still runs eagerly for the case (the split's)."""
    import torch

    import npuir.torchair as tng

    model = build(name)
    module = wrapped(name, model)
    backend = tng.get_npu_backend()
    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(module, backend=backend, fullgraph=True, dynamic=False)(
            *inputs(name, phase, model)
        )
    return sorted({op for r in backend.reports for op in r.fallback_ops})


@dataclass
class Numerics:
    model: str
    phase: str
    dtype: str
    max_abs: float
    """The largest difference of any output element from eager's."""
    scale: float
    """The largest magnitude of eager's outputs."""
    tolerance: float
    eager_parts: int

    @property
    def passed(self) -> bool:
        return self.max_abs <= self.tolerance * max(self.scale, 1.0)


def numerics(name: str, phase: str, dtype: str) -> Numerics:
    """One zoo case in `dtype` (weights, and float inputs such as a decode step's cache,
    cast): `torch.compile` with npuir's backend against eager on the same model."""
    import torch

    import npuir.torchair as tng

    kind = getattr(torch, dtype)
    model = build(name).to(kind)
    module = wrapped(name, model)
    xs = tuple(x.to(kind) if x.is_floating_point() else x for x in inputs(name, phase, model))
    with torch.no_grad():
        want = module(*xs)
        torch._dynamo.reset()
        backend = tng.get_npu_backend()
        got = torch.compile(module, backend=backend, fullgraph=True, dynamic=False)(*xs)
    pairs = zip(
        torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(want), strict=True
    )
    diffs, scale = [], 0.0
    for a, b in pairs:
        diffs.append(float((a.double() - b.double()).abs().max()) if a.numel() else 0.0)
        scale = max(scale, float(b.double().abs().max()) if b.numel() else 0.0)
    parts = sum(len([p for p in split if p[0] == "eager"]) for split in backend.splits)
    eps = torch.finfo(kind).eps
    return Numerics(name, phase, dtype, max(diffs, default=0.0), scale, 2 * eps, parts)


def _us(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def render(rows: list[Row]) -> str:
    head = [
        "model",
        "phase",
        *(f"{k} µs" for k in [*ADVISE_ROWS, "bound"]),
        "advise s",
        "1st call: eager s",
        "npuir s",
        "overhead",
        "eager parts",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [
            r.model,
            r.phase,
            *(_us(r.makespans_us[k]) for k in [*ADVISE_ROWS, "bound"]),
            f"{r.advise_s:.2f}",
            f"{r.eager_s:.2f}",
            f"{r.npuir_s:.2f}",
            f"{r.npuir_s / r.eager_s:.1f}x",
            str(r.eager_parts),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def capture_check(name: str, phase: str) -> str:
    """One zoo case, the model with the user's scope, compiled in capture mode
    (`reduce-overhead`: the `npu-capture` lowering): whether npuir's outputs match eager's
    (`--check`'s tolerance), how many streams each program uses, and whether every side
    stream is forked from and joined back to the capture stream (docs/capture-mode.md)."""
    import numpy as np
    import torch
    from torch.utils._pytree import tree_flatten

    import npuir.torchair as tng
    from npuir.analysis.happens_before import HappensBefore
    from npuir.analysis.program import build_program, module_streams, scheduled_functions
    from npuir.schedule.capture_rules import unforked, unjoined

    model = scoped(name, build(name))
    module = wrapped(name, model)
    xs = inputs(name, phase, model)
    config = tng.CompilerConfig()
    config.mode = "reduce-overhead"
    backend = tng.get_npu_backend(compiler_config=config)
    torch._dynamo.reset()
    with torch.no_grad():
        want, _ = tree_flatten(module(*xs))
        got, _ = tree_flatten(
            torch.compile(module, backend=backend, fullgraph=True, dynamic=False)(*xs)
        )
    close = len(got) == len(want) and all(
        np.allclose(g.float().numpy(), w.float().numpy(), rtol=1e-2, atol=1e-2)
        for g, w in zip(got, want, strict=True)
    )
    streams, open_ends = [], 0
    for lowered in backend.modules:
        declared = module_streams(lowered)
        streams.append(len(declared))
        for func in scheduled_functions(lowered):
            prog = build_program(func, declared)
            open_ends += len(unforked(prog)) + len(unjoined(prog, HappensBefore(prog).run()))
    check = "passed" if close else "FAILED"
    return (
        f"{name} {phase}: check {check}, streams per program {streams}, "
        f"unforked or unjoined side streams {open_ends}"
    )


def main(argv: list[str] | None = None, out: Callable[[str], None] = print) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(ZOO), help="comma-separated zoo names")
    parser.add_argument("--phases", default="prefill,decode,encode")
    parser.add_argument("--repeats", type=int, default=1, help="compiles per case and backend")
    parser.add_argument(
        "--missing",
        action="store_true",
        help="instead of the figures, the ATen ops each case still runs eagerly",
    )
    parser.add_argument(
        "--dtype",
        choices=("float32", "float16", "bfloat16"),
        default=None,
        help="instead of the figures, compiled against eager with the model in this dtype",
    )
    parser.add_argument(
        "--mode",
        choices=["max-autotune", "reduce-overhead"],
        default="max-autotune",
        help="reduce-overhead: instead of the figures, compile each case in capture mode and "
        "say whether its outputs match eager's and every side stream is joined",
    )
    args = parser.parse_args(argv)
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in ZOO]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; the zoo has {', '.join(ZOO)}")
    phases = set(args.phases.split(","))
    chosen = [(n, p) for n, p in CASES if n in names and p in phases]
    if args.missing:
        import warnings

        warnings.simplefilter("ignore")  # the split's warnings say what the list says
        for name, phase in chosen:
            out(f"{name} {phase}: {', '.join(eager_ops(name, phase)) or '(none)'}")
        return 0
    if args.dtype:
        out("| model | phase | dtype | max abs error | largest output | tolerance | eager parts |")
        out("|---|---|---|---|---|---|---|")
        failed = 0
        for name, phase in chosen:
            r = numerics(name, phase, args.dtype)
            failed += not r.passed
            verdict = "pass" if r.passed else "FAIL"
            out(
                f"| {r.model} | {r.phase} | {r.dtype} | {r.max_abs:.3g} ({verdict}) | "
                f"{r.scale:.3g} | {r.tolerance:.3g} x max(largest, 1) | {r.eager_parts} |"
            )
        return 1 if failed else 0
    if args.mode == "reduce-overhead":
        import warnings

        warnings.simplefilter("ignore")  # the split's and the mode's warnings
        lines = [capture_check(name, phase) for name, phase in chosen]
        for line in lines:
            out(line)
        return 0 if all("check passed" in x and x.endswith(" 0") for x in lines) else 1
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, phase in chosen:
            rows.append(measure(name, phase, args.repeats, Path(tmp)))
            print(f"{name} {phase} done", file=sys.stderr)
    out(render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
