"""`moe_decoder`: two Llama-style decoder layers whose FFN is a shared + routed MoE, decode.

The model a new user brings: a small MoE language model run for one decode step of one
sequence on one device, its routed experts picked by gathering their weights (the naive
`w[topk_ids]` of an eager model, which GE runs as one big gather per weight).  Sizes come
from Qwen1.5-MoE-A2.7B's public `config.json` (huggingface.co/Qwen/Qwen1.5-MoE-A2.7B):
`hidden_size = 2048`, `num_attention_heads = 16`, `num_key_value_heads = 16` (head dim
128), `moe_intermediate_size = 1408`, `shared_expert_intermediate_size = 5632`,
`num_experts = 60`, `num_experts_per_tok = 4`, `rms_norm_eps = 1e-06`,
`torch_dtype = "bfloat16"`.  Two layers instead of its 24; the context (cached tokens plus
the new one) is a deployment choice.

Each layer, in issue order: rms_norm; q, k, v projections; k and v appended to the cache
(`concat`); attention (`batch_matmul` QK^T, softmax, `batch_matmul` with V); the
o-projection and the residual add; rms_norm; then the MoE:

- **shared expert** on stream "shared" (gate/up matmul, swiglu, down matmul, and its
  sigmoid gate, `shared_expert_gate` in the Qwen2-MoE code), issued first;
- **router**: logits matmul, softmax in f32, top-k (Qwen1.5-MoE does not renormalise the
  top-k weights: `norm_topk_prob = false`);
- **routed experts**: the chosen experts' gate/up and down weights gathered by id, the
  token's row gathered once per chosen expert, `batch_matmul` over the k experts, swiglu,
  `batch_matmul`, weighted by the router's probabilities and summed;
- the residual add of routed + shared.

Simplifications: no rotary embedding (the decoder workloads have it; here it would only add
vector ops beside the projections); the cache append is a copy.
"""

from __future__ import annotations

from dataclasses import dataclass

from .emit import Func, Ty, module


@dataclass(frozen=True)
class MoeDecoderConfig:
    """Two decoder layers with a shared + routed MoE FFN, one decode step."""

    hidden: int = 2048  # Qwen1.5-MoE-A2.7B config.json hidden_size
    heads: int = 16  # Qwen1.5-MoE-A2.7B config.json num_attention_heads
    kv_heads: int = 16  # Qwen1.5-MoE-A2.7B config.json num_key_value_heads
    expert_inter: int = 1408  # Qwen1.5-MoE-A2.7B config.json moe_intermediate_size
    shared_inter: int = 5632  # Qwen1.5-MoE-A2.7B config.json shared_expert_intermediate_size
    experts: int = 60  # Qwen1.5-MoE-A2.7B config.json num_experts
    top_k: int = 4  # Qwen1.5-MoE-A2.7B config.json num_experts_per_tok
    eps: float = 1e-6  # Qwen1.5-MoE-A2.7B config.json rms_norm_eps
    dtype: str = "bf16"  # Qwen1.5-MoE-A2.7B config.json torch_dtype
    layers: int = 2
    tokens: int = 1  # deployment choice: one sequence, one new token
    context: int = 1024  # deployment choice: cached tokens plus the new one

    def __post_init__(self) -> None:
        if self.heads % self.kv_heads or self.hidden % self.heads:
            raise ValueError("heads must divide hidden, and kv_heads must divide heads")

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


def _layer(f: Func, c: MoeDecoderConfig, x: str, slot_token: str, i: int) -> tuple[str, ...]:
    """One decoder layer on `x`; returns its output and its updated k and v caches."""
    H, D, T, C, K = c.hidden, c.head_dim, c.tokens, c.context, c.top_k
    E, F, SF = c.experts, c.expert_inter, c.shared_inter
    hq, hkv, dt = c.heads, c.kv_heads, c.dtype
    act = Ty((T, H), dt)
    eps = f"epsilon = {c.eps:.1e} : f32"
    p = f"l{i}_"

    g1 = f.arg(f"{p}gamma_attn", Ty((H,), dt))
    wq = f.arg(f"{p}wq", Ty((H, hq * D), dt))
    wk = f.arg(f"{p}wk", Ty((H, hkv * D), dt))
    wv = f.arg(f"{p}wv", Ty((H, hkv * D), dt))
    k_cache = f.arg(f"{p}k_cache", Ty((T, hkv, C - 1, D), dt))
    v_cache = f.arg(f"{p}v_cache", Ty((T, hkv, C - 1, D), dt))
    wo = f.arg(f"{p}wo", Ty((hq * D, H), dt))
    g2 = f.arg(f"{p}gamma_mlp", Ty((H,), dt))
    ws13 = f.arg(f"{p}ws13", Ty((H, 2 * SF), dt))
    ws2 = f.arg(f"{p}ws2", Ty((SF, H), dt))
    w_sg = f.arg(f"{p}w_shared_gate", Ty((H, 1), dt))
    w_router = f.arg(f"{p}w_router", Ty((H, E), dt))
    w13 = f.arg(f"{p}w13", Ty((E, H, 2 * F), dt))
    w2 = f.arg(f"{p}w2", Ty((E, F, H), dt))

    # Attention.
    n1 = f.op("rms_norm", [x, g1], act, eps, stem=f"{p}attn_norm")
    q = f.op("matmul", [n1, wq], Ty((T, hq * D), dt), stem=f"{p}q")
    k = f.op("matmul", [n1, wk], Ty((T, hkv * D), dt), stem=f"{p}k")
    v = f.op("matmul", [n1, wv], Ty((T, hkv * D), dt), stem=f"{p}v")
    q4 = f.op("reshape", [q], Ty((T, hkv, hq // hkv, D), dt), stem=f"{p}q_heads")
    k4 = f.op("reshape", [k], Ty((T, hkv, 1, D), dt), stem=f"{p}k_heads")
    v4 = f.op("reshape", [v], Ty((T, hkv, 1, D), dt), stem=f"{p}v_heads")
    kv_ty = Ty((T, hkv, C, D), dt)
    keys = f.op("concat", [k_cache, k4], kv_ty, "axis = 2 : i64", stem=f"{p}keys")
    values = f.op("concat", [v_cache, v4], kv_ty, "axis = 2 : i64", stem=f"{p}values")
    lead = (T, hkv)
    scores = f.op(
        "batch_matmul", [q4, keys], Ty((*lead, hq // hkv, C), dt), "transpose_b", stem=f"{p}scores"
    )
    probs = f.op(
        "softmax", [scores], Ty((*lead, hq // hkv, C), dt), "axis = -1 : i64", stem=f"{p}probs"
    )
    ctx = f.op("batch_matmul", [probs, values], Ty((*lead, hq // hkv, D), dt), stem=f"{p}attn")
    flat = f.op("reshape", [ctx], Ty((T, hq * D), dt), stem=f"{p}attn_flat")
    o = f.op("matmul", [flat, wo], act, stem=f"{p}o_proj")
    h = f.op("add", [x, o], act, stem=f"{p}h")
    n2 = f.op("rms_norm", [h, g2], act, eps, stem=f"{p}mlp_norm")

    # Shared expert, issued first on its own stream, scaled by its sigmoid gate.
    with f.switch("shared") as scope:
        sgu = f.op("matmul", [n2, ws13], Ty((T, 2 * SF), dt), stem=f"{p}shared_gate_up")
        sact = f.op("swiglu", [sgu], Ty((T, SF), dt), stem=f"{p}shared_act")
        sy = f.op("matmul", [sact, ws2], act, stem=f"{p}shared_down")
        sg = f.op("matmul", [n2, w_sg], Ty((T, 1), dt), stem=f"{p}shared_gate")
        sgs = f.op("sigmoid", [sg], Ty((T, 1), dt), stem=f"{p}shared_gate_p")
        sgy = f.op("mul", [sy, sgs], act, stem=f"{p}shared_out")
        (shared,) = scope.yield_(sgy)

    # Router.
    logits = f.op("matmul", [n2, w_router], Ty((T, E), dt), stem=f"{p}logits")
    logits32 = f.op("cast", [logits], Ty((T, E), "f32"), stem=f"{p}logits_f32")
    rprobs = f.op("softmax", [logits32], Ty((T, E), "f32"), "axis = -1 : i64", stem=f"{p}rprobs")
    topw, topi = f.op_n(
        "topk",
        [rprobs],
        [Ty((T, K), "f32"), Ty((T, K), "i64")],
        f"k = {K} : i64, axis = -1 : i64",
        stems=[f"{p}topk_w", f"{p}topk_ids"],
    )

    # Routed experts: gather the chosen experts' weights and the token's row per slot.
    ids = f.op("reshape", [topi], Ty((T * K,), "i64"), stem=f"{p}slot_expert")
    w13_sel = f.op("gather", [w13, ids], Ty((T * K, H, 2 * F), dt), stem=f"{p}w13_sel")
    w2_sel = f.op("gather", [w2, ids], Ty((T * K, F, H), dt), stem=f"{p}w2_sel")
    xs = f.op("gather", [n2, slot_token], Ty((T * K, H), dt), stem=f"{p}x_slots")
    x3 = f.op("reshape", [xs], Ty((T * K, 1, H), dt), stem=f"{p}x_slots3")
    gu = f.op("batch_matmul", [x3, w13_sel], Ty((T * K, 1, 2 * F), dt), stem=f"{p}expert_gate_up")
    a = f.op("swiglu", [gu], Ty((T * K, 1, F), dt), stem=f"{p}expert_act")
    ye = f.op("batch_matmul", [a, w2_sel], Ty((T * K, 1, H), dt), stem=f"{p}expert_out")
    y3 = f.op("reshape", [ye], Ty((T, K, H), dt), stem=f"{p}out3")
    wd = f.op("cast", [topw], Ty((T, K), dt), stem=f"{p}topk_wd")
    w3 = f.op("reshape", [wd], Ty((T, K, 1), dt), stem=f"{p}route_w")
    yw = f.op("mul", [y3, w3], Ty((T, K, H), dt), stem=f"{p}out_weighted")
    routed = f.op("reduce_sum", [yw], act, "axes = array<i64: 1>", stem=f"{p}routed")

    moe = f.op("add", [routed, shared], act, stem=f"{p}moe_out")
    y = f.op("add", [h, moe], act, stem=f"{p}y")
    return y, keys, values


def moe_decoder(cfg: MoeDecoderConfig | None = None) -> str:
    """The decoder layers as `.mlir` text; `cfg` defaults to Qwen1.5-MoE-A2.7B sizes."""
    c = cfg or MoeDecoderConfig()
    f = Func("moe_decoder")
    x = f.arg("x", Ty((c.tokens, c.hidden), c.dtype))
    # Slot s belongs to token s // top_k.
    slot_token = f.arg("slot_token", Ty((c.tokens * c.top_k,), "i64"))
    outs: list[str] = []
    for i in range(c.layers):
        x, keys, values = _layer(f, c, x, slot_token, i)
        outs += [keys, values]
    f.return_(x, *outs)
    header = (
        f"// moe_decoder: {c.layers} Llama-style decoder layers with a shared + routed MoE FFN,\n"
        f"// decode {c.tokens} x 1 token, context {c.context}.  hidden {c.hidden}, "
        f"{c.heads} heads, {c.experts} experts (top-{c.top_k}, intermediate "
        f"{c.expert_inter}),\n// shared expert intermediate {c.shared_inter} on stream "
        f'"shared", {c.dtype}.\n'
        "// Generated by bench/workloads/moe_decoder.py (its docstring gives the sources)."
    )
    return module([f], header)
