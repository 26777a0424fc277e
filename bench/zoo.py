"""The model zoo: tiny `transformers` models with random weights, in each phase a user runs.

`python bench/zoo.py [--models llama,gpt2] [--phases prefill,decode] [--repeats N]
[--missing] [--dtype float16,bfloat16 [--routes compile,export]] [--mode reduce-overhead]`
prints, per model and phase, the simulated makespan as written / on one stream / with GE's
auto multi-stream (`mode=minidag`) / with npuir's `auto` / the lower bound, the time
`npuir-advise` takes on the exported program, and the backend's compile overhead against
`torch.compile(backend="eager")`.  Instead of those figures:

- `--dtype`: each case with the model and its float inputs (a decode step's cache) in that
  dtype, through each route (`compile`: `torch.compile` with npuir's backend, nothing left
  to torch; `export`: `torch.export`, the `.pt2` through `npuir-advise`, exit 0 with its
  table, then `npuir-run` on it), npuir's outputs against eager's at the kernel tests'
  tolerance (`tolerance`: twice the dtype's epsilon, relative to each output's largest
  magnitude).  An output over it passes only if eager is no more accurate: both against
  the model run in f64 (`f64_outputs`), PyTorch's own rule for f16/bf16 (a top-k routing
  near a tie goes either way in bf16; the table shows both errors);
- `--mode reduce-overhead`: whether each case compiled in capture mode matches eager and
  joins every side stream;
- `--missing`: the ATen ops each case still runs eagerly.

test/unit/frontends/test_zoo.py imports `ZOO`, `build` and `inputs` from here (bench/ is on
the tests' path); test_zoo_dtype.py `numerics`, `export_numerics` and `compare`.

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
import math
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
class Output:
    """One output of a case (the logits, or one layer's keys or values) against eager's."""

    rel_err: float
    """max |npuir - eager| / max |eager|: the largest difference relative to the output's
    largest magnitude (0 for an empty output; inf for a NaN in one only or another shape)."""
    f64: tuple[float, float] | None = None
    """When `rel_err` is over the tolerance: npuir's and eager's largest difference from the
    model run in f64 (on the same rounded weights and inputs)."""

    def passed(self, tolerance: float) -> bool:
        if self.rel_err <= tolerance:
            return True
        # PyTorch's own reference rule for f16/bf16 (bench/aten_opinfo.py's): where eager
        # itself is that far from the exact result, npuir must be no less accurate than it.
        return self.f64 is not None and self.f64[0] <= self.f64[1]


@dataclass
class Numerics:
    """One zoo case in a low-precision dtype through one route, against eager."""

    model: str
    phase: str
    dtype: str
    route: str
    """`compile` (torch.compile with npuir's backend) or `export` (torch.export, the `.pt2`
    through npuir-advise, then npuir-run on it)."""
    outputs: list[Output]
    tolerance: float
    eager_parts: int
    """compile: the ops left to torch (split parts and whole graphs run eagerly)."""
    error: str = ""
    """Why the case did not run to a comparison (an exception, advise's non-zero exit)."""

    @property
    def rel_err(self) -> float:
        return max((o.rel_err for o in self.outputs), default=0.0)

    @property
    def passed(self) -> bool:
        return (
            not self.error
            and self.eager_parts == 0
            and bool(self.outputs)
            and all(o.passed(self.tolerance) for o in self.outputs)
        )


def tolerance(dtype: str) -> float:
    """The kernel tests' tolerance for `dtype` (test/unit/backends/test_kernels.py compares
    f16/bf16 results at `rtol=2 * eps`); here relative to each output's largest magnitude,
    as test_zoo.py's f32 check is, since a whole model's small elements are sums that
    cancel."""
    import torch

    return 2 * torch.finfo(getattr(torch, dtype)).eps


def relative_error(got: Any, want: Any) -> float:
    """max |got - want| / max |want| in f64; NaN in both places agrees."""
    import torch

    if tuple(got.shape) != tuple(want.shape):
        return math.inf
    if not want.numel():
        return 0.0
    a, b = got.double(), want.double()
    nan_a, nan_b = torch.isnan(a), torch.isnan(b)
    if bool((nan_a != nan_b).any()):
        return math.inf
    diff = torch.where(nan_a | (a == b), torch.zeros_like(a), (a - b).abs())
    scale = float(torch.where(nan_b, torch.zeros_like(b), b.abs()).max())
    worst = float(diff.max())
    if worst == 0.0:
        return 0.0
    return worst / scale if scale > 0 else math.inf


def compare(
    got: list[Any], want: list[Any], dtype: str, truth: Callable[[], list[Any]]
) -> list[Output]:
    """Each output of npuir (`got`) against eager's (`want`); `truth()` (the f64 run) is
    called only if some output is over `tolerance(dtype)`."""
    import torch

    if len(got) != len(want):
        return [Output(math.inf)]
    outputs = [Output(relative_error(g, w)) for g, w in zip(got, want, strict=True)]
    tol = tolerance(dtype)
    if all(o.rel_err <= tol for o in outputs):
        return outputs
    exact = truth()
    for o, g, w, t in zip(outputs, got, want, exact, strict=True):
        shapes = {tuple(g.shape), tuple(w.shape), tuple(t.shape)}
        if o.rel_err <= tol or len(shapes) > 1 or not torch.isfinite(t).any():
            continue  # another shape than eager's is wrong whatever f64 says
        finite = torch.isfinite(t)
        ours = (g.double() - t)[finite].abs().max()
        theirs = (w.double() - t)[finite].abs().max()
        o.f64 = (float(ours), float(theirs))
    return outputs


def _cast_inputs(xs: tuple[Any, ...], kind: Any) -> tuple[Any, ...]:
    return tuple(x.to(kind) if x.is_floating_point() else x for x in xs)


def f64_outputs(name: str, phase: str, dtype: str) -> list[Any]:
    """The case run in f64 on the `dtype` model's weights and inputs (rounded to `dtype`,
    then widened): the exact result the low-precision runs approximate.  MoE experts take
    transformers' `eager` implementation (its per-expert loop): `grouped_mm` has no f64
    kernel; the same sums in another order, which f64 makes immaterial."""
    import torch

    kind = getattr(torch, dtype)
    model = build(name).to(kind).double()
    for part in model.modules():  # sub-models may hold configs of their own
        config = getattr(part, "config", None)
        if config is not None:
            config._experts_implementation = "eager"
    module = wrapped(name, model)
    # The inputs `numerics` gives the model: a decode step's cache from the `dtype` model.
    xs = _cast_inputs(inputs(name, phase, build(name).to(kind)), kind)
    wide = tuple(x.double() if x.is_floating_point() else x for x in xs)
    with torch.no_grad():
        return list(torch.utils._pytree.tree_leaves(module(*wide)))


def numerics(name: str, phase: str, dtype: str) -> Numerics:
    """One zoo case in `dtype` (weights, and float inputs such as a decode step's cache,
    cast): `torch.compile` with npuir's backend against eager on the same model."""
    import torch

    import npuir.torchair as tng

    kind = getattr(torch, dtype)
    model = build(name).to(kind)
    module = wrapped(name, model)
    xs = _cast_inputs(inputs(name, phase, model), kind)
    with torch.no_grad():
        want = torch.utils._pytree.tree_leaves(module(*xs))
        torch._dynamo.reset()
        backend = tng.get_npu_backend()
        got = torch.utils._pytree.tree_leaves(
            torch.compile(module, backend=backend, fullgraph=True, dynamic=False)(*xs)
        )
    # Nothing eager: no split part, and no graph left to torch as a whole.
    parts = sum(len([p for p in split if p[0] == "eager"]) for split in backend.splits)
    parts += sum(len(r.fallback_ops) for r in backend.reports)
    if not backend.modules:
        return Numerics(name, phase, dtype, "compile", [], tolerance(dtype), parts, "no program")
    outputs = compare(got, want, dtype, lambda: f64_outputs(name, phase, dtype))
    return Numerics(name, phase, dtype, "compile", outputs, tolerance(dtype), parts)


def export_numerics(name: str, phase: str, dtype: str, folder: Path) -> Numerics:
    """One zoo case in `dtype` through the other route: `torch.export`, saved as a `.pt2`,
    `npuir-advise` on it (exit 0 and its table), then `npuir-run` on the archive (its own
    weights) with the case's inputs; the run's outputs against eager's."""
    import contextlib
    import io

    import torch

    from npuir.driver.run import RunConfig, output_arrays, run_program, save_arrays
    from npuir.frontends.torch import example_inputs
    from npuir.tools.advise import run as advise_run

    kind = getattr(torch, dtype)
    model = build(name).to(kind)
    module = wrapped(name, model)
    xs = _cast_inputs(inputs(name, phase, model), kind)
    with torch.no_grad():
        want = torch.utils._pytree.tree_leaves(module(*xs))
        ep = torch.export.export(module, xs)
    path = folder / f"{name}-{phase}-{dtype}.pt2"
    torch.export.save(ep, path)
    tol = tolerance(dtype)
    table = io.StringIO()
    with contextlib.redirect_stdout(table), contextlib.redirect_stderr(io.StringIO()) as err:
        status = advise_run([str(path)])
    rows = [line.split()[:2] for line in table.getvalue().splitlines()]
    if status != 0 or ["lower", "bound"] not in rows:
        why = err.getvalue().strip().splitlines()[:1] or [f"exit {status}"]
        return Numerics(name, phase, dtype, "export", [], tol, 0, "npuir-advise: " + why[0])
    given = folder / f"{name}-{phase}-{dtype}.npz"
    with given.open("wb") as out:
        save_arrays(out, example_inputs(ep, *xs))
    outcome = run_program(RunConfig(str(path), inputs=str(given)))
    if outcome.status != 0:
        return Numerics(name, phase, dtype, "export", [], tol, 0, f"npuir-run: {outcome.report}")
    arrays = output_arrays(outcome)
    got = [_torch(arrays[f"out{i}"]) for i in range(len(arrays))]
    outputs = compare(got, want, dtype, lambda: f64_outputs(name, phase, dtype))
    return Numerics(name, phase, dtype, "export", outputs, tol, 0)


def _torch(array: Any) -> Any:
    """A numpy output as a torch tensor (bfloat16 from ml_dtypes' through its bits)."""
    import torch

    if array.dtype.name == "bfloat16":
        return torch.from_numpy(array.view("int16").copy()).view(torch.bfloat16)
    return torch.from_numpy(array.copy())


NUMERICS_HEAD = (
    "| model | phase | dtype | route | max rel err | tolerance | vs f64: npuir / eager "
    "| eager parts | verdict |\n|---|---|---|---|---|---|---|---|---|"
)
"""The header of `--dtype`'s table; `numerics_row` gives its rows."""


def numerics_row(r: Numerics) -> str:
    """`r` as a row: the largest relative error of any output against eager's, and for the
    outputs over the tolerance npuir's and eager's largest error against f64 (the worst)."""
    f64 = [o.f64 for o in r.outputs if o.f64 is not None]
    worst = max(f64, key=lambda p: p[0] / max(p[1], 1e-30)) if f64 else None
    cells = [
        r.model,
        r.phase,
        r.dtype,
        r.route,
        f"{r.rel_err:.3g}" if r.outputs else "-",
        f"{r.tolerance:.3g}",
        "-" if worst is None else f"{worst[0]:.3g} / {worst[1]:.3g}",
        str(r.eager_parts),
        "pass" if r.passed else f"FAIL {r.error}".strip(),
    ]
    return "| " + " | ".join(cells) + " |"


def checked(name: str, phase: str, dtype: str, route: str, folder: Path) -> Numerics:
    """`numerics` or `export_numerics`; an exception is the case's failure, not the run's."""
    try:
        if route == "compile":
            return numerics(name, phase, dtype)
        return export_numerics(name, phase, dtype, folder)
    except Exception as exc:  # a bench row: say what failed, go on to the next case
        why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return Numerics(name, phase, dtype, route, [], tolerance(dtype), 0, why)


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
        default=None,
        help="instead of the figures, npuir against eager with the model in these dtypes "
        "(comma-separated: float16, bfloat16, float32)",
    )
    parser.add_argument(
        "--routes",
        default="compile,export",
        help="with --dtype: compile (torch.compile with npuir's backend), export "
        "(torch.export, npuir-advise, npuir-run on the .pt2), or both",
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
    dtypes = [d for d in (args.dtype or "").split(",") if d]
    bad = [d for d in dtypes if d not in ("float32", "float16", "bfloat16")]
    if bad:
        parser.error(f"--dtype: unknown {', '.join(bad)}; one of float32, float16, bfloat16")
    routes = [r for r in args.routes.split(",") if r]
    if any(r not in ("compile", "export") for r in routes) or not routes:
        parser.error(f"--routes: {args.routes!r}; compile, export or both")
    phases = set(args.phases.split(","))
    chosen = [(n, p) for n, p in CASES if n in names and p in phases]
    if args.missing:
        import warnings

        warnings.simplefilter("ignore")  # the split's warnings say what the list says
        for name, phase in chosen:
            out(f"{name} {phase}: {', '.join(eager_ops(name, phase)) or '(none)'}")
        return 0
    if dtypes:
        import warnings

        warnings.simplefilter("ignore")  # transformers' deprecations, the export's notes
        out(NUMERICS_HEAD)
        failed = 0
        with tempfile.TemporaryDirectory() as tmp:
            for name, phase in chosen:
                for dtype in dtypes:
                    for route in routes:
                        r = checked(name, phase, dtype, route, Path(tmp))
                        failed += not r.passed
                        out(numerics_row(r))
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
