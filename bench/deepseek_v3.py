"""A DeepSeek-V3-shaped expert-parallel decode program: 61 layers on every rank of an EP group.

`python bench/deepseek_v3.py [-o FILE] [--layers 61] [--ep 256] [--functions K] [--measure]`

Sizes come from DeepSeek-V3's public `config.json` (huggingface.co/deepseek-ai/DeepSeek-V3):
`num_hidden_layers = 61`, `first_k_dense_replace = 3` (the first three layers have a dense
FFN of `intermediate_size = 18432`, the other 58 a MoE), `hidden_size = 7168`,
`num_attention_heads = 128`, `q_lora_rank = 1536`, `kv_lora_rank = 512`,
`qk_nope_head_dim = 128`, `qk_rope_head_dim = 64`, `v_head_dim = 128`,
`rms_norm_eps = 1e-06`; the MoE layer's sizes are `bench/workloads/moe.py`'s (which cites
the same file).  Deployment choices, not model facts: 64 decode tokens per rank, a context
of 2048, and 256 expert-parallel ranks (one routed expert per rank; the V3 technical report,
section 3.4.2, deploys decode on EP320) with data-parallel attention (every rank runs all 128
heads on its own tokens).

Each layer, in issue order: rms_norm; Multi-head Latent Attention in its decode form with the
up-projections absorbed (the V2 paper, section 2.1.3): the query's low-rank down-projection,
its norm and its two up-projections (the no-position part and the rotary part, as two
matmuls); the latent kv's down-projection, norm and rotary key; both appended to their caches
(`concat`); the no-position query absorbed into the latent space (`batch_matmul` with
`w_uk`), scores against the latent cache plus the rotary scores, softmax, the context in the
latent space, its up-projection (`w_uv`) and the o-projection, the residual add; rms_norm;
then the FFN: dense (gate/up matmul, swiglu, down) for the first layers, else the MoE layer
of `bench/workloads/moe.py` (shared expert on its own stream, gating, routing, all_to_all
dispatch and combine over the EP group, routed experts), and the residual add.

Simplifications: the rotary embedding itself is left out (a few vector ops beside the
projections); the MoE's routing is balanced (see `moe.py`).

`--functions K` writes K copies of the rank function (`@rank0` ... `@rank{K-1}`), the
same structure under different names: an MPMD program (`--entries`) whose functions a
search should recognise as one.  `--measure` runs `npuir-advise` on it (and `npuir-run
--timing-only` with every rank simulated) in a child process and prints CPU seconds and
peak RSS.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from workloads.emit import Func, Ty, module
from workloads.moe import MoeConfig, moe_layer


@dataclass(frozen=True)
class DeepSeekV3Config:
    """The decode program of one rank of an expert-parallel DeepSeek-V3 deployment."""

    layers: int = 61  # DeepSeek-V3 config.json num_hidden_layers
    dense_layers: int = 3  # DeepSeek-V3 config.json first_k_dense_replace
    hidden: int = 7168  # DeepSeek-V3 config.json hidden_size
    heads: int = 128  # DeepSeek-V3 config.json num_attention_heads
    q_lora_rank: int = 1536  # DeepSeek-V3 config.json q_lora_rank
    kv_lora_rank: int = 512  # DeepSeek-V3 config.json kv_lora_rank
    qk_nope: int = 128  # DeepSeek-V3 config.json qk_nope_head_dim
    qk_rope: int = 64  # DeepSeek-V3 config.json qk_rope_head_dim
    v_head: int = 128  # DeepSeek-V3 config.json v_head_dim
    dense_inter: int = 18432  # DeepSeek-V3 config.json intermediate_size
    eps: float = 1e-6  # DeepSeek-V3 config.json rms_norm_eps
    context: int = 2048  # deployment choice: cached tokens plus the new one
    moe: MoeConfig = field(default_factory=lambda: MoeConfig(tokens=64, ep=256))
    """Tokens per rank (64) and the EP group (256 ranks) are deployment choices."""

    @property
    def ranks(self) -> int:
        return self.moe.ep


def _attention(f: Func, c: DeepSeekV3Config, x: str, p: str) -> tuple[str, str, str]:
    """MLA on `x`, absorbed decode form; returns the residual sum and the two caches."""
    T, H, N, C = c.moe.tokens, c.hidden, c.heads, c.context
    QL, KL, DN, DR, DV = c.q_lora_rank, c.kv_lora_rank, c.qk_nope, c.qk_rope, c.v_head
    dt = c.moe.dtype
    eps = f"epsilon = {c.eps:.1e} : f32"
    swap = "perm = array<i64: 1, 0, 2>"

    g_attn = f.arg(f"{p}gamma_attn", Ty((H,), dt))
    wq_a = f.arg(f"{p}wq_a", Ty((H, QL), dt))
    g_q = f.arg(f"{p}gamma_q", Ty((QL,), dt))
    wq_nope = f.arg(f"{p}wq_nope", Ty((QL, N * DN), dt))
    wq_rope = f.arg(f"{p}wq_rope", Ty((QL, N * DR), dt))
    wkv_a = f.arg(f"{p}wkv_a", Ty((H, KL), dt))
    g_kv = f.arg(f"{p}gamma_kv", Ty((KL,), dt))
    wk_rope = f.arg(f"{p}wk_rope", Ty((H, DR), dt))
    latent_cache = f.arg(f"{p}latent_cache", Ty((T, C - 1, KL), dt))
    rope_cache = f.arg(f"{p}rope_cache", Ty((T, C - 1, DR), dt))
    w_uk = f.arg(f"{p}w_uk", Ty((N, DN, KL), dt))
    w_uv = f.arg(f"{p}w_uv", Ty((N, KL, DV), dt))
    wo = f.arg(f"{p}wo", Ty((N * DV, H), dt))

    n1 = f.op("rms_norm", [x, g_attn], Ty((T, H), dt), eps, stem=f"{p}attn_norm")
    qa = f.op("matmul", [n1, wq_a], Ty((T, QL), dt), stem=f"{p}q_a")
    qan = f.op("rms_norm", [qa, g_q], Ty((T, QL), dt), eps, stem=f"{p}q_a_norm")
    q_nope = f.op("matmul", [qan, wq_nope], Ty((T, N * DN), dt), stem=f"{p}q_nope")
    q_rope = f.op("matmul", [qan, wq_rope], Ty((T, N * DR), dt), stem=f"{p}q_rope")
    kv = f.op("matmul", [n1, wkv_a], Ty((T, KL), dt), stem=f"{p}kv_a")
    kvn = f.op("rms_norm", [kv, g_kv], Ty((T, KL), dt), eps, stem=f"{p}kv_norm")
    k_rope = f.op("matmul", [n1, wk_rope], Ty((T, DR), dt), stem=f"{p}k_rope")
    kv3 = f.op("reshape", [kvn], Ty((T, 1, KL), dt), stem=f"{p}kv_new")
    kr3 = f.op("reshape", [k_rope], Ty((T, 1, DR), dt), stem=f"{p}k_rope_new")
    latent = f.op(
        "concat", [latent_cache, kv3], Ty((T, C, KL), dt), "axis = 1 : i64", stem=f"{p}latent"
    )
    rope_keys = f.op(
        "concat", [rope_cache, kr3], Ty((T, C, DR), dt), "axis = 1 : i64", stem=f"{p}rope_keys"
    )
    qn3 = f.op("reshape", [q_nope], Ty((T, N, DN), dt), stem=f"{p}q_nope_heads")
    qn_h = f.op("transpose", [qn3], Ty((N, T, DN), dt), swap, stem=f"{p}q_nope_t")
    q_abs = f.op("batch_matmul", [qn_h, w_uk], Ty((N, T, KL), dt), stem=f"{p}q_absorbed")
    q_abs_t = f.op("transpose", [q_abs], Ty((T, N, KL), dt), swap, stem=f"{p}q_latent")
    s_lat = f.op(
        "batch_matmul",
        [q_abs_t, latent],
        Ty((T, N, C), dt),
        "transpose_b",
        stem=f"{p}scores_latent",
    )
    qr3 = f.op("reshape", [q_rope], Ty((T, N, DR), dt), stem=f"{p}q_rope_heads")
    s_rope = f.op(
        "batch_matmul", [qr3, rope_keys], Ty((T, N, C), dt), "transpose_b", stem=f"{p}scores_rope"
    )
    scores = f.op("add", [s_lat, s_rope], Ty((T, N, C), dt), stem=f"{p}scores")
    probs = f.op("softmax", [scores], Ty((T, N, C), dt), "axis = -1 : i64", stem=f"{p}probs")
    ctx = f.op("batch_matmul", [probs, latent], Ty((T, N, KL), dt), stem=f"{p}ctx_latent")
    ctx_t = f.op("transpose", [ctx], Ty((N, T, KL), dt), swap, stem=f"{p}ctx_t")
    o_h = f.op("batch_matmul", [ctx_t, w_uv], Ty((N, T, DV), dt), stem=f"{p}ctx_heads")
    o_t = f.op("transpose", [o_h], Ty((T, N, DV), dt), swap, stem=f"{p}ctx_tokens")
    flat = f.op("reshape", [o_t], Ty((T, N * DV), dt), stem=f"{p}ctx_flat")
    o = f.op("matmul", [flat, wo], Ty((T, H), dt), stem=f"{p}o_proj")
    h = f.op("add", [x, o], Ty((T, H), dt), stem=f"{p}h")
    return h, latent, rope_keys


def _dense_ffn(f: Func, c: DeepSeekV3Config, x: str, p: str) -> str:
    T, H, inter, dt = c.moe.tokens, c.hidden, c.dense_inter, c.moe.dtype
    w13 = f.arg(f"{p}w13", Ty((H, 2 * inter), dt))
    w2 = f.arg(f"{p}w2", Ty((inter, H), dt))
    gu = f.op("matmul", [x, w13], Ty((T, 2 * inter), dt), stem=f"{p}gate_up")
    a = f.op("swiglu", [gu], Ty((T, inter), dt), stem=f"{p}act")
    return f.op("matmul", [a, w2], Ty((T, H), dt), stem=f"{p}down")


def _rank_function(c: DeepSeekV3Config, name: str) -> Func:
    T, H, dt = c.moe.tokens, c.hidden, c.moe.dtype
    f = Func(name)
    x = f.arg("x", Ty((T, H), dt))
    slot_token = f.arg("slot_token", Ty((c.moe.slots,), "i64"))
    caches: list[str] = []
    for i in range(c.layers):
        p = f"l{i}_"
        h, latent, rope_keys = _attention(f, c, x, p)
        caches += [latent, rope_keys]
        g_mlp = f.arg(f"{p}gamma_mlp", Ty((H,), dt))
        eps = f"epsilon = {c.eps:.1e} : f32"
        n2 = f.op("rms_norm", [h, g_mlp], Ty((T, H), dt), eps, stem=f"{p}mlp_norm")
        if i < c.dense_layers:
            y = _dense_ffn(f, c, n2, p)
        else:
            y = moe_layer(f, c.moe, n2, p, slot_token)
        x = f.op("add", [h, y], Ty((T, H), dt), stem=f"{p}y")
    f.return_(x, *caches)
    return f


def deepseek_v3(cfg: DeepSeekV3Config | None = None, functions: int = 1) -> str:
    """The program as `.mlir` text: one rank function (`@deepseek_v3`, run SPMD on
    `cfg.ranks` ranks) or, with `functions` > 1, that many copies `@rank0`, `@rank1`, ..."""
    c = cfg or DeepSeekV3Config()
    names = ["deepseek_v3"] if functions == 1 else [f"rank{i}" for i in range(functions)]
    header = (
        f"// deepseek_v3: {c.layers} layers ({c.dense_layers} dense, the rest MoE) of a "
        f"DeepSeek-V3-shaped decode step,\n// {c.moe.tokens} tokens per rank, context "
        f"{c.context}, {c.ranks} expert-parallel ranks.\n"
        "// Generated by bench/deepseek_v3.py (its docstring gives the sources)."
    )
    return module([_rank_function(c, name) for name in names], header)


def entries(cfg: DeepSeekV3Config, functions: int) -> list[str]:
    """The `--entries` list of an MPMD copy: rank r runs `@rank{r % functions}`."""
    return [f"rank{r % functions}" for r in range(cfg.ranks)]


def _cpu_and_rss(command: list[str]) -> tuple[float, float, int]:
    """CPU seconds, peak RSS (MiB) and exit status of `command`, run to its end."""
    # wait4 gives this child's own usage (RUSAGE_CHILDREN's peak is over every child).
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = code = os.waitstatus_to_exitcode(status)
        if code not in (0, 3):
            err.seek(0)
            sys.stderr.write(err.read()[-2000:].decode(errors="replace"))
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, code


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", help="write the program here (default: stdout)")
    ap.add_argument("--layers", type=int, default=61)
    ap.add_argument("--ep", type=int, default=256, help="expert-parallel ranks")
    ap.add_argument("--functions", type=int, default=1, help="distinct rank functions (MPMD)")
    ap.add_argument("--measure", action="store_true", help="time npuir-advise and npuir-run")
    ap.add_argument("--jobs", type=int, default=1, help="npuir-advise --jobs, with --measure")
    args = ap.parse_args()
    cfg = DeepSeekV3Config(layers=args.layers, moe=MoeConfig(tokens=64, ep=args.ep))
    text = deepseek_v3(cfg, args.functions)
    if not args.measure:
        if args.output:
            Path(args.output).write_text(text)
        else:
            sys.stdout.write(text)
        return
    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory(prefix="npuir-dsv3-") as tmp:
        path = Path(args.output or Path(tmp) / "deepseek_v3.mlir")
        path.write_text(text)
        ranks = (
            ["--entries", ",".join(entries(cfg, args.functions))]
            if args.functions > 1
            else ["--ranks", str(cfg.ranks)]
        )
        runs = {
            "npuir-run --timing-only": [str(bin_dir / "npuir-run"), str(path), "--timing-only"],
            "npuir-advise": [str(bin_dir / "npuir-advise"), str(path), "--jobs", str(args.jobs)],
        }
        for what, command in runs.items():
            cpu, rss, status = _cpu_and_rss([*command, *ranks])
            print(
                f"{what:<24} {args.layers} layers, {cfg.ranks} ranks, {args.functions} "
                f"function(s): {cpu:.1f} CPU-s, peak RSS {rss:.0f} MiB, exit {status}",
                flush=True,
            )


if __name__ == "__main__":
    main()
