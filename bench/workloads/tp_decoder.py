"""`tp_decoder_decode` / `tp_decoder_prefill`: one tensor-parallel Llama decoder layer on one rank.

Sizes come from Llama-2-70B's public `config.json` (huggingface.co/meta-llama/Llama-2-70b-hf):
`hidden_size = 8192`, `num_attention_heads = 64`, `num_key_value_heads = 8` (grouped-query
attention), head dim 8192 / 64 = 128, `intermediate_size = 28672`, `rms_norm_eps = 1e-05`,
`max_position_embeddings = 4096`, `torch_dtype = "float16"`.  Tensor parallelism over 8
ranks splits the heads and the MLP (Megatron-style): per rank 8 query heads, 1 KV head and
an intermediate of 3584, with an all_reduce after the o-projection and after the down
projection.  Decode is batch 16 x 1 token against a KV cache of `context - 1` past tokens;
prefill is 1 x 2048 tokens with a causal mask.  Batch, context and prompt length are
deployment choices.

What one rank does, in issue order: rms_norm; the q projection; on stream "kv" (the
annotation a TorchAir user writes with `npu_stream_switch("kv")`) the k and v projections,
rotary embedding of k and, in decode, appending k and v to the cache; rotary embedding of q;
attention (`batch_matmul` QK^T with the KV head broadcast over its query heads, softmax,
`batch_matmul` with V); the o-projection and its all_reduce; the residual add; rms_norm;
the MLP (gate and up fused, swiglu, down) and its all_reduce; the residual add.

Simplifications: the 1/sqrt(head_dim) scale is folded into `wq`; the cache append is a
`concat` (a copy the real in-place cache write avoids); the rotary tables `cos` / `sin`
are inputs.
"""

from __future__ import annotations

from dataclasses import dataclass

from .emit import Func, Ty, module


@dataclass(frozen=True)
class DecoderConfig:
    """One decoder layer on one rank of a tensor-parallel group."""

    hidden: int = 8192  # Llama-2-70B config.json hidden_size
    heads: int = 64  # Llama-2-70B config.json num_attention_heads
    kv_heads: int = 8  # Llama-2-70B config.json num_key_value_heads
    inter: int = 28672  # Llama-2-70B config.json intermediate_size
    tp: int = 8  # deployment choice: tensor-parallel group size
    batch: int = 16
    seq: int = 1
    """Tokens per sequence in this step: 1 for decode, the prompt length for prefill."""
    context: int = 4096  # Llama-2-70B config.json max_position_embeddings
    """Decode only: cached tokens plus the new one."""
    dtype: str = "f16"  # Llama-2-70B config.json torch_dtype
    eps: float = 1e-5  # Llama-2-70B config.json rms_norm_eps

    def __post_init__(self) -> None:
        if self.heads % self.tp or self.kv_heads % self.tp or self.inter % self.tp:
            raise ValueError("heads, kv_heads and inter must divide evenly over the TP group")

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def prefill(self) -> bool:
        return self.seq > 1


DECODE = DecoderConfig()
PREFILL = DecoderConfig(batch=1, seq=2048)


def _rope(f: Func, x: str, cos: str, sin: str, stem: str) -> str:
    """`x * cos + rotate_half(x) * sin` along the last axis (the Llama / GPT-NeoX form)."""
    ty = f.ty(x)
    *lead, dim = ty.shape
    half = ty.with_shape(*lead, dim // 2)
    zeros = ", ".join("0" for _ in lead)
    full = ", ".join(str(n) for n in lead)
    lo = f.op(
        "slice",
        [x],
        half,
        f"offsets = array<i64: {zeros}, 0>, sizes = array<i64: {full}, {dim // 2}>",
        stem=f"{stem}_lo",
    )
    hi = f.op(
        "slice",
        [x],
        half,
        f"offsets = array<i64: {zeros}, {dim // 2}>, sizes = array<i64: {full}, {dim // 2}>",
        stem=f"{stem}_hi",
    )
    neg_hi = f.op("neg", [hi], half, stem=f"{stem}_neg_hi")
    rot = f.op("concat", [neg_hi, lo], ty, "axis = -1 : i64", stem=f"{stem}_rot")
    xc = f.op("mul", [x, cos], ty, stem=f"{stem}_cos")
    rs = f.op("mul", [rot, sin], ty, stem=f"{stem}_sin")
    return f.op("add", [xc, rs], ty, stem=f"{stem}_rope")


def _heads(f: Func, x: str, b: int, s: int, h: int, d: int, stem: str) -> str:
    """`[b*s, h*d]` to `[b, h, s, d]` (a reshape when s or h is 1, else a transpose too)."""
    dt = f.ty(x).dtype
    if s == 1 or h == 1:
        return f.op("reshape", [x], Ty((b, h, s, d), dt), stem=stem)
    x4 = f.op("reshape", [x], Ty((b, s, h, d), dt), stem=f"{stem}_bshd")
    return f.op("transpose", [x4], Ty((b, h, s, d), dt), "perm = array<i64: 0, 2, 1, 3>", stem=stem)


def tp_decoder(cfg: DecoderConfig) -> str:
    """The decoder layer as `.mlir` text."""
    c = cfg
    H, D, B, S = c.hidden, c.head_dim, c.batch, c.seq
    hq, hkv, ff = c.heads // c.tp, c.kv_heads // c.tp, c.inter // c.tp
    group = hq // hkv
    M = B * S
    L = S if c.prefill else c.context
    dt = c.dtype
    act = Ty((M, H), dt)
    coll = f'group_size = {c.tp} : i64, group = "tp", mode = "sdma"'
    eps = f"epsilon = {c.eps:.1e} : f32"

    name = "decoder_prefill" if c.prefill else "decoder_decode"
    f = Func(name)
    x = f.arg("x", act)
    g1 = f.arg("gamma_attn", Ty((H,), dt))
    wq = f.arg("wq", Ty((H, hq * D), dt))
    wk = f.arg("wk", Ty((H, hkv * D), dt))
    wv = f.arg("wv", Ty((H, hkv * D), dt))
    cos = f.arg("cos", Ty((B, 1, S, D), dt))
    sin = f.arg("sin", Ty((B, 1, S, D), dt))
    if c.prefill:
        mask = f.arg("mask", Ty((S, L), dt))
        k_cache = v_cache = ""
    else:
        mask = ""
        k_cache = f.arg("k_cache", Ty((B, hkv, L - S, D), dt))
        v_cache = f.arg("v_cache", Ty((B, hkv, L - S, D), dt))
    wo = f.arg("wo", Ty((hq * D, H), dt))
    g2 = f.arg("gamma_mlp", Ty((H,), dt))
    w_gate_up = f.arg("w_gate_up", Ty((H, 2 * ff), dt))
    w_down = f.arg("w_down", Ty((ff, H), dt))

    n1 = f.op("rms_norm", [x, g1], act, eps, stem="attn_norm")
    q = f.op("matmul", [n1, wq], Ty((M, hq * D), dt), stem="q")
    with f.switch("kv") as scope:
        k = f.op("matmul", [n1, wk], Ty((M, hkv * D), dt), stem="k")
        v = f.op("matmul", [n1, wv], Ty((M, hkv * D), dt), stem="v")
        k4 = _heads(f, k, B, S, hkv, D, "k_heads")
        v4 = _heads(f, v, B, S, hkv, D, "v_heads")
        kr = _rope(f, k4, cos, sin, "k")
        if c.prefill:
            keys, values = kr, v4
        else:
            kv_ty = Ty((B, hkv, L, D), dt)
            keys = f.op("concat", [k_cache, kr], kv_ty, "axis = 2 : i64", stem="keys")
            values = f.op("concat", [v_cache, v4], kv_ty, "axis = 2 : i64", stem="values")
        keys_out, values_out = scope.yield_(keys, values)
    q4 = _heads(f, q, B, S, hq, D, "q_heads")
    qr = _rope(f, q4, cos, sin, "q")

    # Grouped-query attention: each KV head serves `group` query heads, by broadcasting.
    if hkv == 1:
        qg, kg, vg = qr, keys_out, values_out
        lead: tuple[int, ...] = (B, hq)
    else:
        qg = f.op("reshape", [qr], Ty((B, hkv, group, S, D), dt), stem="q_groups")
        kg = f.op("reshape", [keys_out], Ty((B, hkv, 1, L, D), dt), stem="k_groups")
        vg = f.op("reshape", [values_out], Ty((B, hkv, 1, L, D), dt), stem="v_groups")
        lead = (B, hkv, group)
    scores = f.op("batch_matmul", [qg, kg], Ty((*lead, S, L), dt), "transpose_b", stem="scores")
    if c.prefill:
        scores = f.op("add", [scores, mask], Ty((*lead, S, L), dt), stem="masked")
    probs = f.op("softmax", [scores], Ty((*lead, S, L), dt), "axis = -1 : i64", stem="probs")
    ctx = f.op("batch_matmul", [probs, vg], Ty((*lead, S, D), dt), stem="attn")
    if S == 1:
        flat = f.op("reshape", [ctx], Ty((M, hq * D), dt), stem="attn_flat")
    else:
        ctx4 = f.op("reshape", [ctx], Ty((B, hq, S, D), dt), stem="attn_heads") if hkv != 1 else ctx
        t = f.op(
            "transpose",
            [ctx4],
            Ty((B, S, hq, D), dt),
            "perm = array<i64: 0, 2, 1, 3>",
            stem="attn_bshd",
        )
        flat = f.op("reshape", [t], Ty((M, hq * D), dt), stem="attn_flat")
    o = f.op("matmul", [flat, wo], act, stem="o_proj")
    o_sum = f.op("all_reduce", [o], act, coll, stem="o_allreduce")
    h = f.op("add", [x, o_sum], act, stem="h")

    n2 = f.op("rms_norm", [h, g2], act, eps, stem="mlp_norm")
    gu = f.op("matmul", [n2, w_gate_up], Ty((M, 2 * ff), dt), stem="gate_up")
    a = f.op("swiglu", [gu], Ty((M, ff), dt), stem="mlp_act")
    dn = f.op("matmul", [a, w_down], act, stem="down")
    d_sum = f.op("all_reduce", [dn], act, coll, stem="down_allreduce")
    y = f.op("add", [h, d_sum], act, stem="y")
    if c.prefill:
        f.return_(y)
    else:
        f.return_(y, keys_out, values_out)

    phase = f"prefill 1 x {S} tokens" if c.prefill else f"decode {B} x 1 token, context {L}"
    header = (
        f"// {name}: a Llama-2-70B-style decoder layer on one of {c.tp} tensor-parallel ranks,\n"
        f"// {phase}.  hidden {H}, {c.heads} heads ({hq} here), {c.kv_heads} KV heads "
        f'({hkv} here),\n// intermediate {c.inter} ({ff} here), {dt}; k/v on stream "kv".\n'
        "// Generated by bench/workloads/tp_decoder.py (its docstring gives the sources)."
    )
    return module([f], header)


def tp_decoder_decode(cfg: DecoderConfig | None = None) -> str:
    return tp_decoder(cfg or DECODE)


def tp_decoder_prefill(cfg: DecoderConfig | None = None) -> str:
    return tp_decoder(cfg or PREFILL)
