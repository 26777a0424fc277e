"""Torch operators that Ascend runs as one fused kernel, imported to `npuir.dialects.npu_fused`.

`npuir.frontends.torch` merges `handlers` into its table, so an export (or a
`torch.compile` through npuir's backend) maps:

- `aten.scaled_dot_product_attention` (what `torch.export` keeps of
  `F.scaled_dot_product_attention` on CPU: it is not decomposed before import) to
  `npu.fusion_attention`, grouped-query heads (`enable_gqa`) included, so a model's
  `repeat_kv` is never needed;
- `aten._grouped_mm` and transformers' `transformers::grouped_mm_fallback` (what its MoE
  experts call on CPU, `transformers.integrations.moe`) to `npu.grouped_matmul`;
- `torch_npu`'s fused kernels (`torch.ops.npu.*`, or npuir's CPU stand-ins of them,
  `npuir.frontends.torchair.npu_standin`) to their `npu` ops.

A form an op's `npu` op does not take (dropout, a rank-3 attention, a `torch_npu` output
npuir does not compute) raises the importer's `UnsupportedOp` with the reason, which the
importer turns into an `npu.opaque` and a `torch.unmapped-form` warning, or a refusal
under `strict`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr, UnitAttr, f32, i64
from xdsl.ir import Attribute, Operation

from npuir.dialects.npu_fused import (
    FusionAttentionOp,
    GroupedMatmulOp,
    MatmulAllReduceOp,
    MoeFinalizeRoutingOp,
    MoeGatingTopkSoftmaxOp,
    MoeInitRoutingOp,
    RotaryEmbeddingOp,
)
from npuir.frontends.torchair import Tensor, ops
from npuir.frontends.torchair.npu_standin import attention_form

__all__ = ["OPERATORS", "handlers"]

OPERATORS = ("aten.", "npu.", "transformers.")
"""Namespaces of the operators an import maps: ATen's, torch_npu's (`npu`) and transformers'
custom ops.  A form of one that its mapping refuses is an `npu.opaque` (or, under
`torch.compile`, runs eagerly), as an operator without a mapping is; `air.` scope markers
are not operators."""


class Importing(Protocol):
    """What the handlers read of the importer: the FX node being imported."""

    node: Any


def _build(
    cls: type[Operation],
    inputs: Sequence[Tensor],
    attrs: dict[str, Attribute] | None = None,
    num_results: int = 1,
) -> list[Tensor]:
    graph = inputs[0].graph
    operands = [graph.value_of(t, cls.name) for t in inputs]
    op = graph.add_op(cls, operands, attrs or {}, num_results=num_results)
    return [Tensor(graph, r) for r in op.results]


def _used_outputs(node: Any) -> set[int] | None:
    """The indices of a multi-result node's outputs the graph reads (through `getitem`
    nodes with users), or None when the node does not say (a `.pt2` node)."""
    users = getattr(node, "users", None)
    if users is None:
        return None
    used: set[int] = set()
    for user in users:
        args: tuple[Any, ...] = tuple(getattr(user, "args", ()))
        if len(args) == 2 and isinstance(args[1], int) and len(getattr(user, "users", ())) > 0:
            used.add(args[1])
    return used


def handlers(
    importer: Importing, unsupported: Callable[[str], Exception]
) -> dict[str, Callable[..., Any]]:
    """The fused kernels' handlers by target name, for the importer's table."""

    def tensors(*values: Any) -> None:
        for v in values:
            if not isinstance(v, Tensor):
                raise unsupported(f"operand {v!r} is not a tensor")

    def only_first_output(what: str) -> None:
        used = _used_outputs(importer.node)
        if used is None or used - {0}:
            raise unsupported(f"npuir computes only {what}'s first output")

    def attention(
        q: Tensor,
        k: Tensor,
        v: Tensor,
        mask: Tensor | None,
        *,
        causal: bool,
        scale: float | None,
        mask_drops: bool = False,
    ) -> Tensor:
        tensors(q, k, v)
        if any(t.dim() != 4 for t in (q, k, v)):
            raise unsupported("attention on tensors of rank other than 4 ([B, N, S, D])")
        attrs: dict[str, Attribute] = {}
        if causal:
            attrs["causal"] = UnitAttr()
        if scale is not None:
            attrs["scale"] = FloatAttr(float(scale), f32)
        inputs = [q, k, v]
        if mask is not None:
            tensors(mask)
            if mask.dtype != "i1" and mask.dtype != q.dtype:
                mask = ops.to(mask, q.dtype)
            if mask_drops:
                attrs["mask_drops"] = UnitAttr()
            inputs.append(mask)
        return _build(FusionAttentionOp, inputs, attrs)[0]

    def sdpa(
        q: Tensor,
        k: Tensor,
        v: Tensor,
        attn_mask: Tensor | None = None,
        dropout_p: float = 0.0,
        is_causal: bool = False,
        *,
        scale: float | None = None,
        enable_gqa: bool = False,
    ) -> Tensor:
        if dropout_p:
            raise unsupported(f"attention with dropout (dropout_p = {dropout_p})")
        if is_causal and attn_mask is not None:
            raise unsupported("attention with both a mask and is_causal")
        return attention(q, k, v, attn_mask, causal=is_causal, scale=scale)

    def grouped_mm(
        x: Tensor,
        w: Tensor,
        offs: Tensor | None = None,
        bias: Tensor | None = None,
        out_dtype: Any = None,
    ) -> Tensor:
        if offs is None or bias is not None:
            raise unsupported("a grouped mm without offsets or with a bias")
        tensors(x, w, offs)
        if x.dim() != 2 or w.dim() != 3:
            raise unsupported("a grouped mm other than [T, K] rows by [E, K, N] experts")
        out = _build(GroupedMatmulOp, [x, w, offs])[0]
        return out if out_dtype is None else ops.to(out, out_dtype)

    def rms_norm(x: Tensor, gamma: Tensor, epsilon: float = 1e-6) -> list[Tensor | None]:
        only_first_output("npu_rms_norm")
        return [ops.rms_norm(x, gamma, epsilon), None]

    def rotary_mul(x: Tensor, r1: Tensor, r2: Tensor, rotary_mode: str = "half") -> Tensor:
        if rotary_mode != "half":
            raise unsupported(f"rotary_mode {rotary_mode!r} (npuir takes 'half')")
        tensors(x, r1, r2)
        return _build(RotaryEmbeddingOp, [x, r1, r2])[0]

    def fusion_attention(
        query: Tensor,
        key: Tensor,
        value: Tensor,
        head_num: int,
        input_layout: str,
        pse: Any = None,
        padding_mask: Any = None,
        atten_mask: Tensor | None = None,
        scale: float = 1.0,
        keep_prob: float = 1.0,
        pre_tockens: int = 2147483647,
        next_tockens: int = 2147483647,
        inner_precise: int = 0,
        prefix: Any = None,
        actual_seq_qlen: Any = None,
        actual_seq_kvlen: Any = None,
        sparse_mode: int = 0,
        gen_mask_parallel: bool = True,
        sync: bool = False,
    ) -> list[Tensor | None]:
        why = attention_form(
            input_layout, pse, padding_mask, keep_prob, pre_tockens, next_tockens,
            prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode,
        )  # fmt: skip
        if why is not None:
            raise unsupported(f"npu_fusion_attention with {why}")
        only_first_output("npu_fusion_attention")
        tensors(query, key, value)
        if atten_mask is not None and sparse_mode == 0:
            tensors(atten_mask)
            if atten_mask.dtype != "i1":
                raise unsupported(f"an atten_mask of {atten_mask.dtype} (npuir takes bool)")
        q, k, v = (to_bnsd(t, input_layout, head_num, query) for t in (query, key, value))
        out = attention(
            q,
            k,
            v,
            atten_mask if sparse_mode == 0 else None,
            causal=sparse_mode == 2,
            scale=scale,
            mask_drops=True,
        )
        return [from_bnsd(out, input_layout), None, None, None, 0, 0, 0]

    def to_bnsd(x: Tensor, layout: str, heads: int, query: Tensor) -> Tensor:
        tensors(x)
        if layout == "BNSD":
            return x
        if layout == "BSH":
            b, s, h = x.shape
            qh = query.shape[2]
            if h is None or qh is None:
                raise unsupported("a BSH attention with a dynamic hidden size")
            x = ops.reshape(x, [b, s, h // (qh // heads), qh // heads])
        return ops.transpose(x, 1, 2)

    def from_bnsd(x: Tensor, layout: str) -> Tensor:
        if layout == "BNSD":
            return x
        x = ops.transpose(x, 1, 2)
        if layout == "BSH":
            b, s, n, d = x.shape
            x = ops.reshape(x, [b, s, None if n is None or d is None else n * d])
        return x

    def grouped_matmul(
        x: Sequence[Tensor],
        weight: Sequence[Tensor],
        group_list: Tensor | None = None,
        split_item: int = 0,
        group_type: int | None = None,
        group_list_type: int = 0,
    ) -> list[Tensor]:
        if len(x) != 1 or len(weight) != 1 or group_type != 0 or split_item not in (2, 3):
            raise unsupported(
                "npu_grouped_matmul other than one input split by group_list (group_type 0) "
                "into one output (split_item 2 or 3)"
            )
        if group_list_type != 0:
            raise unsupported("npu_grouped_matmul with group sizes (group_list_type 1)")
        return [grouped_mm(x[0], weight[0], group_list)]

    def mm_all_reduce(
        x1: Tensor,
        x2: Tensor,
        hcom: str,
        reduce_op: str = "sum",
        bias: Tensor | None = None,
        comm_turn: int = 0,
    ) -> Tensor:
        """MC2's matmul + all-reduce as `npu.matmul_all_reduce` over the communicator
        `hcom`, of torch.distributed's world size (1 when no process group is up: one
        process is a group of one); a 3-d `x1` is its rows flattened and restored."""
        if reduce_op != "sum" or bias is not None or comm_turn:
            raise unsupported("npu_mm_all_reduce_base with a bias, comm_turn or a non-sum op")
        tensors(x1, x2)
        import torch.distributed as dist

        size = dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1
        lead = list(x1.shape[:-1])
        flat = x1 if len(lead) == 1 else ops.reshape(x1, [-1, x1.shape[-1]])
        attrs: dict[str, Attribute] = {
            "group_size": IntegerAttr(size, i64),
            "group": StringAttr(str(hcom)),
        }
        (out,) = _build(MatmulAllReduceOp, [flat, x2], attrs)
        return out if len(lead) == 1 else ops.reshape(out, [*lead, x2.shape[-1]])

    def gating(x: Tensor, finished: Any = None, k: int = 1) -> list[Tensor]:
        if finished is not None:
            raise unsupported("npu_moe_gating_top_k_softmax with `finished`")
        tensors(x)
        return _build(MoeGatingTopkSoftmaxOp, [x], {"k": IntegerAttr(k, i64)}, 3)

    def init_routing(
        x: Tensor, row_idx: Tensor, expert_idx: Tensor, active_num: int
    ) -> list[Tensor]:
        tensors(x, row_idx, expert_idx)
        tokens = x.shape[0]
        if tokens is None or active_num < tokens:
            raise unsupported(f"npu_moe_init_routing with active_num {active_num} below the tokens")
        return _build(MoeInitRoutingOp, [x, row_idx, expert_idx], num_results=3)

    def finalize_routing(
        expanded: Tensor,
        skip1: Tensor | None,
        skip2: Tensor | None,
        bias: Tensor | None,
        scales: Tensor | None,
        rows: Tensor,
        export_for_source_row: Tensor | None = None,
    ) -> Tensor:
        if skip2 is not None or bias is not None or scales is None:
            raise unsupported("npu_moe_finalize_routing with skip2 or bias, or without scales")
        inputs = [expanded, scales, rows] + ([skip1] if skip1 is not None else [])
        tensors(*inputs)
        return _build(MoeFinalizeRoutingOp, inputs)[0]

    table: dict[str, Callable[..., Any]] = {
        "aten.scaled_dot_product_attention.default": sdpa,
        "aten._grouped_mm.default": grouped_mm,
        "transformers.grouped_mm_fallback.default": grouped_mm,
        "npu.npu_fusion_attention.default": fusion_attention,
        "npu.npu_grouped_matmul.default": grouped_matmul,
        "npu.npu_rms_norm.default": rms_norm,
        "npu.npu_rotary_mul.default": rotary_mul,
        "npu.npu_moe_gating_top_k_softmax.default": gating,
        "npu.npu_mm_all_reduce_base.default": mm_all_reduce,
        "npu.npu_moe_init_routing.default": init_routing,
        "npu.npu_moe_finalize_routing.default": finalize_routing,
    }
    return table
