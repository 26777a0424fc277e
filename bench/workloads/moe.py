"""`moe_decode`: one DeepSeek-V3-style MoE layer for one decode step on one EP rank.

Sizes come from DeepSeek-V3's public `config.json` (huggingface.co/deepseek-ai/DeepSeek-V3):
`hidden_size = 7168`, `moe_intermediate_size = 2048`, `n_routed_experts = 256`,
`num_experts_per_tok = 8`, `n_shared_experts = 1`, `torch_dtype = "bfloat16"`.  The decode
batch (64 tokens per rank) and the expert-parallel group (8 ranks, so 32 routed experts per
rank) are deployment choices, not model facts; DeepSeek's own decode deployment spreads the
experts much wider (EP320 in the V3 technical report, section 3.4.2).

What one rank does, in issue order:

- **shared expert** (gate/up matmul, swiglu, down matmul) on its own stream "shared", issued
  first: the TorchAir idiom (`with npu_stream_switch("shared")`) the multi-stream seed
  document cites — the routed experts' gating and dispatch hide the shared expert's cube work;
- **gating**: logits matmul, softmax in f32, top-k, renormalised weights (`norm_topk_prob`);
  DeepSeek-V3 scores with a sigmoid and a bias instead of softmax (V2 used softmax); both are
  one vector op of the same size;
- **routing** (what `npu_moe_init_routing` does): order the token-expert slots by expert id
  with a full top-k over the negated ids (a stable sort), gather the rows in that order, and
  keep the inverse permutation for the combine;
- **dispatch**: `all_to_all` over the EP group; then regroup the received rows by local expert
  (transpose);
- **routed experts**: `batch_matmul` over the local experts (gate and up fused), swiglu, down;
- **combine**: regroup, `all_to_all` back, un-permute, weight and sum over the top-k.

Static shapes model the balanced case: every rank sends `tokens * top_k / ep` rows to each
peer and every expert gets `tokens * top_k / experts` rows from each rank (the real op is an
all_to_all_v with data-dependent counts).  `slot_token` is the constant table "slot s belongs
to token s // top_k".  DeepSeek-V3's `routed_scaling_factor` (2.5) is left out: one more
elementwise multiply.
"""

from __future__ import annotations

from dataclasses import dataclass

from .emit import Func, Ty, module


@dataclass(frozen=True)
class MoeConfig:
    """One MoE layer on one rank of an expert-parallel group."""

    hidden: int = 7168  # DeepSeek-V3 config.json hidden_size
    expert_inter: int = 2048  # DeepSeek-V3 config.json moe_intermediate_size
    experts: int = 256  # DeepSeek-V3 config.json n_routed_experts
    top_k: int = 8  # DeepSeek-V3 config.json num_experts_per_tok
    shared_experts: int = 1  # DeepSeek-V3 config.json n_shared_experts
    tokens: int = 64  # deployment choice: decode batch per rank
    ep: int = 8  # deployment choice: expert-parallel group size
    dtype: str = "bf16"  # DeepSeek-V3 config.json torch_dtype
    comm_mode: str = "sdma"
    """The all_to_alls' HCCL mode: "sdma" (DMA engines, no cores) or "aiv" (driven from the
    vector cores it holds: seed 003's dispatch/combine case, `moe_decode_aiv`)."""

    def __post_init__(self) -> None:
        if self.experts % self.ep:
            raise ValueError("experts must divide evenly over the EP group")
        if (self.tokens * self.top_k) % self.experts:
            raise ValueError("tokens * top_k must be a multiple of experts (balanced routing)")

    @property
    def slots(self) -> int:
        return self.tokens * self.top_k

    @property
    def local_experts(self) -> int:
        return self.experts // self.ep

    @property
    def per_expert_per_rank(self) -> int:
        return self.slots // self.experts


def moe_layer(f: Func, c: MoeConfig, x: str, p: str = "", slot_token: str | None = None) -> str:
    """One MoE layer on `x` (tokens x hidden) appended to `f`: its weights become arguments
    named with prefix `p`, as do its values; `slot_token` (declared here when None) is the
    slot-to-token table, which layers may share.  Returns the layer's output."""
    H, F, E, K, T = c.hidden, c.expert_inter, c.experts, c.top_k, c.tokens
    L, P, S, G = c.local_experts, c.per_expert_per_rank, c.slots, c.ep
    shared_inter = F * c.shared_experts
    d = c.dtype
    act = Ty((T, H), d)
    coll = f'group_size = {G} : i64, group = "ep", mode = "{c.comm_mode}"'

    w_gate = f.arg(f"{p}w_gate", Ty((H, E), d))
    if slot_token is None:
        slot_token = f.arg("slot_token", Ty((S,), "i64"))
    w13 = f.arg(f"{p}w13", Ty((L, H, 2 * F), d))
    w2 = f.arg(f"{p}w2", Ty((L, F, H), d))
    ws13 = f.arg(f"{p}ws13", Ty((H, 2 * shared_inter), d))
    ws2 = f.arg(f"{p}ws2", Ty((shared_inter, H), d))

    # Shared expert on its own stream, issued first so the routed path hides it.
    with f.switch("shared") as scope:
        sgu = f.op("matmul", [x, ws13], Ty((T, 2 * shared_inter), d), stem=f"{p}shared_gate_up")
        sact = f.op("swiglu", [sgu], Ty((T, shared_inter), d), stem=f"{p}shared_act")
        sy = f.op("matmul", [sact, ws2], act, stem=f"{p}shared_down")
        (shared,) = scope.yield_(sy)

    # Gating.
    logits = f.op("matmul", [x, w_gate], Ty((T, E), d), stem=f"{p}logits")
    logits32 = f.op("cast", [logits], Ty((T, E), "f32"), stem=f"{p}logits_f32")
    probs = f.op("softmax", [logits32], Ty((T, E), "f32"), "axis = -1 : i64", stem=f"{p}probs")
    topw, topi = f.op_n(
        "topk",
        [probs],
        [Ty((T, K), "f32"), Ty((T, K), "i64")],
        f"k = {K} : i64, axis = -1 : i64",
        stems=[f"{p}topk_w", f"{p}topk_ids"],
    )
    wsum = f.op(
        "reduce_sum", [topw], Ty((T, 1), "f32"), "axes = array<i64: 1>, keepdims", stem=f"{p}wsum"
    )
    wn = f.op("div", [topw, wsum], Ty((T, K), "f32"), stem=f"{p}topk_wn")
    wd = f.op("cast", [wn], Ty((T, K), d), stem=f"{p}topk_wd")
    w3 = f.op("reshape", [wd], Ty((T, K, 1), d), stem=f"{p}route_w")

    # Routing: slots sorted by expert id, and the inverse permutation.
    ids = f.op("reshape", [topi], Ty((S,), "i64"), stem=f"{p}slot_expert")
    neg_ids = f.op("neg", [ids], Ty((S,), "i64"), stem=f"{p}neg_expert")
    _, perm = f.op_n(
        "topk",
        [neg_ids],
        [Ty((S,), "i64"), Ty((S,), "i64")],
        f"k = {S} : i64",
        stems=[f"{p}sorted_neg_expert", f"{p}perm"],
    )
    tok = f.op("gather", [slot_token, perm], Ty((S,), "i64"), stem=f"{p}sorted_token")
    xs = f.op("gather", [x, tok], Ty((S, H), d), stem=f"{p}x_sorted")
    neg_perm = f.op("neg", [perm], Ty((S,), "i64"), stem=f"{p}neg_perm")
    _, inv = f.op_n(
        "topk",
        [neg_perm],
        [Ty((S,), "i64"), Ty((S,), "i64")],
        f"k = {S} : i64",
        stems=[f"{p}sorted_neg_perm", f"{p}inv_perm"],
    )

    # Dispatch, then rows grouped by local expert.
    recv = f.op("all_to_all", [xs], Ty((S, H), d), coll, stem=f"{p}dispatch")
    r4 = f.op("reshape", [recv], Ty((G, L, P, H), d), stem=f"{p}recv4")
    rt = f.op(
        "transpose", [r4], Ty((L, G, P, H), d), "perm = array<i64: 1, 0, 2, 3>", stem=f"{p}recv_t"
    )
    xe = f.op("reshape", [rt], Ty((L, G * P, H), d), stem=f"{p}expert_in")

    # Routed experts, batched over the local experts.
    gu = f.op("batch_matmul", [xe, w13], Ty((L, G * P, 2 * F), d), stem=f"{p}expert_gate_up")
    a = f.op("swiglu", [gu], Ty((L, G * P, F), d), stem=f"{p}expert_act")
    ye = f.op("batch_matmul", [a, w2], Ty((L, G * P, H), d), stem=f"{p}expert_out")

    # Combine.
    y4 = f.op("reshape", [ye], Ty((L, G, P, H), d), stem=f"{p}out4")
    yt = f.op(
        "transpose", [y4], Ty((G, L, P, H), d), "perm = array<i64: 1, 0, 2, 3>", stem=f"{p}out_t"
    )
    ys = f.op("reshape", [yt], Ty((S, H), d), stem=f"{p}out_sorted")
    back = f.op("all_to_all", [ys], Ty((S, H), d), coll, stem=f"{p}combine")
    yslot = f.op("gather", [back, inv], Ty((S, H), d), stem=f"{p}out_slots")
    y3 = f.op("reshape", [yslot], Ty((T, K, H), d), stem=f"{p}out3")
    yw = f.op("mul", [y3, w3], Ty((T, K, H), d), stem=f"{p}out_weighted")
    routed = f.op("reduce_sum", [yw], act, "axes = array<i64: 1>", stem=f"{p}routed")

    return f.op("add", [routed, shared], act, stem=f"{p}moe_out")


def moe_decode(cfg: MoeConfig | None = None) -> str:
    """The MoE layer as `.mlir` text; `cfg` defaults to DeepSeek-V3 sizes."""
    c = cfg or MoeConfig()
    H, F, E, K, T = c.hidden, c.expert_inter, c.experts, c.top_k, c.tokens
    L, G = c.local_experts, c.ep
    f = Func("moe_decode")
    x = f.arg("x", Ty((T, H), c.dtype))
    out = moe_layer(f, c, x)
    f.return_(out)

    header = (
        f"// moe_decode: a DeepSeek-V3-style MoE layer, one decode step on one of {G} EP ranks.\n"
        f"// hidden {H}, expert intermediate {F}, {E} routed experts ({L} on this rank), "
        f'top-{K},\n// {c.shared_experts} shared expert on stream "shared", {T} tokens, '
        f"{c.dtype}.\n"
        "// Generated by bench/workloads/moe.py (its docstring gives the sources)."
    )
    return module([f], header)
