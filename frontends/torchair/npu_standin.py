"""A CPU stand-in for `torch_npu`'s `Tensor.npu()` and `Module.npu()`.

TorchAir scripts move their inputs and models to the NPU with `.npu()`, a method
`torch_npu` adds to torch.  npuir runs the compiled program on the host, so here
`.npu()` does nothing: it returns the tensor or the module itself, as `.cuda()` does
for a tensor already on its device.  With it a seed script needs only its import lines
changed (`import torch_npu` dropped, `torchair` read as `npuir.torchair`).

TorchAir models also call `torch_npu`'s fused kernels, which `torch_npu` registers as
torch operators in the `npu` namespace.  Without it, `install()` registers CPU stand-ins
of the same names and signatures (`torch.ops.npu.npu_fusion_attention`,
`npu_grouped_matmul`, `npu_rms_norm`, `npu_rotary_mul`, `npu_moe_gating_top_k_softmax`,
`npu_moe_init_routing`, `npu_moe_finalize_routing`): eager, each computes what the
kernel computes (`FUSED_OPS` lists them; the forms a stand-in does not take raise
`ValueError`), and an export or a `torch.compile` keeps each as one node, which the
importer maps to its `npu` op (`npuir.frontends.aten_fused`).  `fused_op(name)` gives
one of them without going through `torch.ops`.

`install()` is called when `npuir.torchair` is imported (once torch is imported too).
It never shadows the real thing: when `torch_npu` can be imported, or torch already has
`.npu()`, it does nothing.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch import Tensor

METHOD = "npu"
"""The method torch_npu adds to tensors and modules."""
NPU_ATTR = "_npuir_npu_standin"
"""Set on each stand-in method, so that tests and users can tell it from torch_npu's."""


def _tensor_npu(self: Any, device: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    """`Tensor.npu()` on the CPU stand-in: the tensor itself (npuir runs on the host)."""
    return self


def _module_npu(self: Any, device: Any = None) -> Any:
    """`Module.npu()` on the CPU stand-in: the module itself (npuir runs on the host)."""
    return self


def torch_npu_available() -> bool:
    """Whether the real `torch_npu` can be imported here."""
    try:
        return importlib.util.find_spec("torch_npu") is not None
    except (ImportError, ValueError):  # a broken or half-initialised torch_npu still counts
        return True


def install() -> bool:
    """Give `torch.Tensor` and `torch.nn.Module` a no-op `.npu()` and register the fused
    kernels' stand-ins, unless `torch_npu` is importable; True when the `.npu()` stand-in
    is (now) in place."""
    import torch

    if torch_npu_available():
        return False
    _define_fused_ops()
    installed = False
    for cls, method in ((torch.Tensor, _tensor_npu), (torch.nn.Module, _module_npu)):
        current = getattr(cls, METHOD, None)
        if current is None:
            setattr(method, NPU_ATTR, True)
            setattr(cls, METHOD, method)  # torch has no `.npu` of its own to type
            installed = True
        elif getattr(current, NPU_ATTR, False):
            installed = True
    return installed


# ---------------------------------------------------------------------------------------------
# torch_npu's fused kernels
# ---------------------------------------------------------------------------------------------

NAMESPACE = "npu"
"""The torch operator namespace `torch_npu` registers its kernels in."""

FUSED_OPS: tuple[str, ...] = (
    "npu_fusion_attention",
    "npu_grouped_matmul",
    "npu_rms_norm",
    "npu_rotary_mul",
    "npu_moe_gating_top_k_softmax",
    "npu_moe_init_routing",
    "npu_moe_finalize_routing",
)
"""The `torch_npu` fused kernels that have a stand-in here."""

_MAX_TOKENS = 2147483647
"""`npu_fusion_attention`'s default `pre_tockens` / `next_tockens`: no band."""


_SCHEMAS: dict[str, str] = {
    "npu_rms_norm": ("(Tensor self, Tensor gamma, float epsilon=1e-06) -> (Tensor, Tensor)"),
    "npu_rotary_mul": ("(Tensor self, Tensor r1, Tensor r2, str rotary_mode='half') -> Tensor"),
    "npu_fusion_attention": (
        "(Tensor query, Tensor key, Tensor value, int head_num, str input_layout, Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, float scale=1., float keep_prob=1., int pre_tockens=2147483647, int next_tockens=2147483647, int inner_precise=0, int[]? prefix=None, int[]? actual_seq_qlen=None, int[]? actual_seq_kvlen=None, int sparse_mode=0, bool gen_mask_parallel=True, bool sync=False) -> (Tensor, Tensor, Tensor, Tensor, int, int, int)"
    ),
    "npu_grouped_matmul": (
        "(Tensor[] x, Tensor[] weight, Tensor? group_list=None, int split_item=0, int? group_type=None, int group_list_type=0) -> Tensor[]"
    ),
    "npu_moe_gating_top_k_softmax": (
        "(Tensor x, Tensor? finished=None, int k=1) -> (Tensor, Tensor, Tensor)"
    ),
    "npu_moe_init_routing": (
        "(Tensor x, Tensor row_idx, Tensor expert_idx, int active_num) -> (Tensor, Tensor, Tensor)"
    ),
    "npu_mm_all_reduce_base": (
        "(Tensor x1, Tensor x2, str hcom, str reduce_op='sum', Tensor? bias=None, int comm_turn=0) -> Tensor"
    ),
    "npu_moe_finalize_routing": (
        "(Tensor expanded_permuted_rows, Tensor? skip1, Tensor? skip2, Tensor? bias, Tensor? scales, Tensor expanded_src_to_dst_row, Tensor? export_for_source_row) -> Tensor"
    ),
}
"""Each stand-in's torch schema: `torch_npu`'s own, less the arguments of forms npuir does not
take (quantisation, `npu_grouped_matmul`'s bias and scales)."""


def fused_op(name: str) -> Callable[..., Any]:
    """The stand-in (or torch_npu's own) operator `torch.ops.npu.<name>`."""
    import torch

    op: Callable[..., Any] = getattr(getattr(torch.ops, NAMESPACE), name)
    return op


def attention_form(
    input_layout: str,
    pse: Any,
    padding_mask: Any,
    keep_prob: float,
    pre_tockens: int,
    next_tockens: int,
    prefix: Any,
    actual_seq_qlen: Any,
    actual_seq_kvlen: Any,
    sparse_mode: int,
) -> str | None:
    """Why npuir does not take this `npu_fusion_attention` form, or None when it does:
    layouts BNSD, BSND and BSH, no positional bias, dropout or packed sequences, and
    sparse mode 0 (the mask as given) or 2 (top-left causal)."""
    if input_layout not in ("BNSD", "BSND", "BSH"):
        return f"input_layout {input_layout!r} (npuir takes BNSD, BSND and BSH)"
    if pse is not None or padding_mask is not None or prefix is not None:
        return "a pse, padding_mask or prefix operand"
    if keep_prob != 1.0:
        return f"dropout (keep_prob = {keep_prob})"
    if actual_seq_qlen is not None or actual_seq_kvlen is not None:
        return "packed sequences (actual_seq_qlen / actual_seq_kvlen)"
    if sparse_mode not in (0, 2):
        return f"sparse_mode {sparse_mode} (npuir takes 0 and 2)"
    if sparse_mode == 0 and (pre_tockens, next_tockens) != (_MAX_TOKENS, _MAX_TOKENS):
        return "a band of pre_tockens / next_tockens"
    return None


def _to_bnsd(x: Any, layout: str, heads: int) -> Any:
    if layout == "BNSD":
        return x
    if layout == "BSH":
        b, s, h = x.shape
        x = x.reshape(b, s, heads, h // heads)
    return x.transpose(1, 2)


def _from_bnsd(x: Any, layout: str) -> Any:
    if layout == "BNSD":
        return x
    x = x.transpose(1, 2)
    return x.flatten(2) if layout == "BSH" else x


def _kv_heads(x: Any, layout: str, heads: int, q: Any) -> int:
    """Key/value heads: BSH spells them through its hidden size against the query's."""
    if layout == "BNSD":
        return int(x.shape[1])
    if layout == "BSND":
        return int(x.shape[2])
    return int(x.shape[2] // (q.shape[2] // heads))


def _define_fused_ops() -> None:
    import torch

    if hasattr(getattr(torch.ops, NAMESPACE), "npu_rms_norm"):  # the first one defined below
        return  # already registered (by an earlier install)
    lib = f"{NAMESPACE}::"

    @torch.library.custom_op(
        lib + "npu_rms_norm",
        mutates_args=(),
        schema=_SCHEMAS["npu_rms_norm"],
    )
    def npu_rms_norm(self: Tensor, gamma: Tensor, epsilon: float = 1e-6) -> tuple[Tensor, Tensor]:
        x = self.float()
        rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + epsilon)
        return (x * rstd * gamma.float()).to(self.dtype), rstd

    @npu_rms_norm.register_fake
    def _(self: Tensor, gamma: Tensor, epsilon: float = 1e-6) -> tuple[Tensor, Tensor]:
        rstd = self.new_empty((*self.shape[:-1], 1), dtype=torch.float32)
        return torch.empty_like(self), rstd

    @torch.library.custom_op(
        lib + "npu_rotary_mul",
        mutates_args=(),
        schema=_SCHEMAS["npu_rotary_mul"],
    )
    def npu_rotary_mul(self: Tensor, r1: Tensor, r2: Tensor, rotary_mode: str = "half") -> Tensor:
        if rotary_mode != "half":
            raise ValueError(f"npu_rotary_mul: rotary_mode {rotary_mode!r} (npuir takes 'half')")
        x = self.float()
        a, b = x.chunk(2, dim=-1)
        out = x * r1.float() + torch.cat([-b, a], dim=-1) * r2.float()
        return out.to(self.dtype)

    @npu_rotary_mul.register_fake
    def _(self: Tensor, r1: Tensor, r2: Tensor, rotary_mode: str = "half") -> Tensor:
        return torch.empty_like(self)

    @torch.library.custom_op(
        lib + "npu_fusion_attention",
        mutates_args=(),
        schema=_SCHEMAS["npu_fusion_attention"],
    )
    def npu_fusion_attention(
        query: Tensor,
        key: Tensor,
        value: Tensor,
        head_num: int,
        input_layout: str,
        pse: Tensor | None = None,
        padding_mask: Tensor | None = None,
        atten_mask: Tensor | None = None,
        scale: float = 1.0,
        keep_prob: float = 1.0,
        pre_tockens: int = _MAX_TOKENS,
        next_tockens: int = _MAX_TOKENS,
        inner_precise: int = 0,
        prefix: list[int] | None = None,
        actual_seq_qlen: list[int] | None = None,
        actual_seq_kvlen: list[int] | None = None,
        sparse_mode: int = 0,
        gen_mask_parallel: bool = True,
        sync: bool = False,
    ) -> tuple[Tensor, Tensor, Tensor, Tensor, int, int, int]:
        why = attention_form(
            input_layout, pse, padding_mask, keep_prob, pre_tockens, next_tockens,
            prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode,
        )  # fmt: skip
        if why is not None:
            raise ValueError(f"npu_fusion_attention: npuir does not take {why}")
        q = _to_bnsd(query, input_layout, head_num).float()
        kv_heads = _kv_heads(key, input_layout, head_num, query)
        k = _to_bnsd(key, input_layout, kv_heads).float()
        v = _to_bnsd(value, input_layout, kv_heads).float()
        group = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scores = q @ k.transpose(-1, -2) * scale
        drop = torch.zeros(scores.shape[-2:], dtype=torch.bool)
        if sparse_mode == 2:
            drop = torch.ones_like(drop).triu(1)
        elif atten_mask is not None:
            drop = atten_mask.bool()
        scores = scores.masked_fill(drop, float("-inf"))
        top = scores.amax(-1, keepdim=True)
        e = torch.where(drop, 0.0, torch.exp(scores - top.nan_to_num(neginf=0.0)))
        total = e.sum(-1, keepdim=True)
        p = torch.where(total > 0, e / total.clamp_min(1e-30), 0.0)
        out = _from_bnsd((p @ v).to(query.dtype), input_layout).contiguous()
        stats = (
            top.expand(*top.shape[:-1], 8).contiguous(),
            total.expand_as(top).expand(*top.shape[:-1], 8).contiguous(),
        )
        return out, stats[0], stats[1], query.new_empty(0), 0, 0, 0

    @npu_fusion_attention.register_fake
    def _(
        query: Tensor,
        key: Tensor,
        value: Tensor,
        head_num: int,
        input_layout: str,
        pse: Tensor | None = None,
        padding_mask: Tensor | None = None,
        atten_mask: Tensor | None = None,
        scale: float = 1.0,
        keep_prob: float = 1.0,
        pre_tockens: int = _MAX_TOKENS,
        next_tockens: int = _MAX_TOKENS,
        inner_precise: int = 0,
        prefix: list[int] | None = None,
        actual_seq_qlen: list[int] | None = None,
        actual_seq_kvlen: list[int] | None = None,
        sparse_mode: int = 0,
        gen_mask_parallel: bool = True,
        sync: bool = False,
    ) -> tuple[Tensor, Tensor, Tensor, Tensor, int, int, int]:
        q = _to_bnsd(query, input_layout, head_num)
        v = _to_bnsd(value, input_layout, _kv_heads(value, input_layout, head_num, query))
        out = _from_bnsd(q.new_empty((*q.shape[:-1], v.shape[-1])), input_layout).contiguous()
        stat = q.new_empty((*q.shape[:-1], 8), dtype=torch.float32)
        return out, stat, torch.empty_like(stat), query.new_empty(0), 0, 0, 0

    @torch.library.custom_op(
        lib + "npu_grouped_matmul",
        mutates_args=(),
        schema=_SCHEMAS["npu_grouped_matmul"],
    )
    def npu_grouped_matmul(
        x: list[Tensor],
        weight: list[Tensor],
        group_list: Tensor | None = None,
        split_item: int = 0,
        group_type: int | None = None,
        group_list_type: int = 0,
    ) -> list[Tensor]:
        offs = grouped_matmul_offsets(
            x, weight, group_list, split_item, group_type, group_list_type
        )
        inp, w = x[0].float(), weight[0].float()
        out = inp.new_zeros((inp.shape[0], w.shape[2]))
        start = 0
        for e, end in enumerate(offs.tolist()):
            out[start:end] = inp[start:end] @ w[e]
            start = end
        return [out.to(x[0].dtype)]

    @npu_grouped_matmul.register_fake
    def _(
        x: list[Tensor],
        weight: list[Tensor],
        group_list: Tensor | None = None,
        split_item: int = 0,
        group_type: int | None = None,
        group_list_type: int = 0,
    ) -> list[Tensor]:
        return [x[0].new_empty((x[0].shape[0], weight[0].shape[2]))]

    @torch.library.custom_op(
        lib + "npu_mm_all_reduce_base",
        mutates_args=(),
        schema=_SCHEMAS["npu_mm_all_reduce_base"],
    )
    def npu_mm_all_reduce_base(
        x1: Tensor,
        x2: Tensor,
        hcom: str,
        reduce_op: str = "sum",
        bias: Tensor | None = None,
        comm_turn: int = 0,
    ) -> Tensor:
        # One process on the CPU is a group of one: the sum over the group of this rank's
        # product is the product (torch_npu's MC2 kernel sums it over `hcom`'s ranks).
        if reduce_op != "sum":
            raise ValueError(f"npu_mm_all_reduce_base: reduce_op {reduce_op!r} (it takes 'sum')")
        out = (x1.float() @ x2.float()).to(x1.dtype)
        return out if bias is None else out + bias

    @npu_mm_all_reduce_base.register_fake
    def _(
        x1: Tensor,
        x2: Tensor,
        hcom: str,
        reduce_op: str = "sum",
        bias: Tensor | None = None,
        comm_turn: int = 0,
    ) -> Tensor:
        return x1.new_empty((*x1.shape[:-1], x2.shape[-1]))

    @torch.library.custom_op(
        lib + "npu_moe_gating_top_k_softmax",
        mutates_args=(),
        schema=_SCHEMAS["npu_moe_gating_top_k_softmax"],
    )
    def npu_moe_gating_top_k_softmax(
        x: Tensor, finished: Tensor | None = None, k: int = 1
    ) -> tuple[Tensor, Tensor, Tensor]:
        if finished is not None:
            raise ValueError("npu_moe_gating_top_k_softmax: npuir does not take `finished`")
        probs = torch.softmax(x.float(), dim=-1)
        weights, experts = torch.topk(probs, k, dim=-1)
        t = x.shape[0]
        rows = torch.arange(k, dtype=torch.int32)[None, :] * t + torch.arange(t)[:, None]
        return weights.to(x.dtype), experts.int(), rows.int()

    @npu_moe_gating_top_k_softmax.register_fake
    def _(x: Tensor, finished: Tensor | None = None, k: int = 1) -> tuple[Tensor, Tensor, Tensor]:
        shape = (x.shape[0], k)
        idx = x.new_empty(shape, dtype=torch.int32)
        return x.new_empty(shape), idx, torch.empty_like(idx)

    @torch.library.custom_op(
        lib + "npu_moe_init_routing",
        mutates_args=(),
        schema=_SCHEMAS["npu_moe_init_routing"],
    )
    def npu_moe_init_routing(
        x: Tensor, row_idx: Tensor, expert_idx: Tensor, active_num: int
    ) -> tuple[Tensor, Tensor, Tensor]:
        if active_num < x.shape[0]:
            raise ValueError(
                f"npu_moe_init_routing: npuir takes active_num >= the {x.shape[0]} "
                f"tokens, got {active_num}"
            )
        order = torch.sort(expert_idx.reshape(-1).long(), stable=True)
        source = row_idx.reshape(-1).long()[order.indices]
        expanded_rows = torch.empty_like(source)
        expanded_rows[source] = torch.arange(source.numel())
        return x[source % x.shape[0]], expanded_rows.int(), order.values.int()

    @npu_moe_init_routing.register_fake
    def _(
        x: Tensor, row_idx: Tensor, expert_idx: Tensor, active_num: int
    ) -> tuple[Tensor, Tensor, Tensor]:
        n = row_idx.numel()
        idx = x.new_empty((n,), dtype=torch.int32)
        return x.new_empty((n, x.shape[1])), idx, torch.empty_like(idx)

    @torch.library.custom_op(
        lib + "npu_moe_finalize_routing",
        mutates_args=(),
        schema=_SCHEMAS["npu_moe_finalize_routing"],
    )
    def npu_moe_finalize_routing(
        expanded_permuted_rows: Tensor,
        skip1: Tensor | None,
        skip2: Tensor | None,
        bias: Tensor | None,
        scales: Tensor | None,
        expanded_src_to_dst_row: Tensor,
        export_for_source_row: Tensor | None,
    ) -> Tensor:
        if skip2 is not None or bias is not None or scales is None:
            raise ValueError(
                "npu_moe_finalize_routing: npuir takes scales, an optional skip1, "
                "no skip2 and no bias"
            )
        t, k = scales.shape
        rows = expanded_src_to_dst_row.long().reshape(k, t)
        picked = expanded_permuted_rows.float()[rows]
        out = (scales.float().t()[:, :, None] * picked).sum(0)
        if skip1 is not None:
            out = skip1.float() + out
        return out.to(expanded_permuted_rows.dtype)

    @npu_moe_finalize_routing.register_fake
    def _(
        expanded_permuted_rows: Tensor,
        skip1: Tensor | None,
        skip2: Tensor | None,
        bias: Tensor | None,
        scales: Tensor | None,
        expanded_src_to_dst_row: Tensor,
        export_for_source_row: Tensor | None,
    ) -> Tensor:
        assert scales is not None
        return expanded_permuted_rows.new_empty((scales.shape[0], expanded_permuted_rows.shape[1]))


def grouped_matmul_offsets(
    x: list[Any],
    weight: list[Any],
    group_list: Any,
    split_item: int,
    group_type: int | None,
    group_list_type: int,
) -> Any:
    """`npu_grouped_matmul`'s cumulative group ends, in the one form npuir takes: one input
    `[T, K]` split along its rows (`group_type` 0) by `group_list`, one weight `[E, K, N]`,
    one output (`split_item` 2 or 3); `group_list_type` 1 (group sizes) is made cumulative.
    Raises `ValueError` naming what differs."""
    if len(x) != 1 or len(weight) != 1 or x[0].dim() != 2 or weight[0].dim() != 3:
        raise ValueError(
            "npu_grouped_matmul: npuir takes one [T, K] input and one [E, K, N] weight"
        )
    if group_list is None or group_type != 0 or split_item not in (2, 3):
        raise ValueError(
            "npu_grouped_matmul: npuir takes a group_list splitting the rows "
            "(group_type 0) into one output (split_item 2 or 3)"
        )
    if group_list_type not in (0, 1):
        raise ValueError(f"npu_grouped_matmul: group_list_type {group_list_type}")
    return group_list.cumsum(0) if group_list_type == 1 else group_list
