"""Ascend's fused kernels as `npu` ops: attention, grouped matmul, rotary, MoE routing.

Ascend runs several multi-op patterns of a transformer as one kernel (the `torch_npu`
fused ops), and a scheduler that costs them as their parts is wrong about overlap: a
fused attention keeps its scores on chip and never launches a softmax.  Each op here
mirrors one such kernel, with its `torch_npu` name beside it:

- `npu.fusion_attention` -- `npu_fusion_attention` (FlashAttentionScore): scaled
  dot-product attention with an optional mask, causal masking and grouped-query heads;
- `npu.grouped_matmul` -- `npu_grouped_matmul` (GroupedMatmul): one GEMM per MoE expert
  over its contiguous group of rows;
- `npu.rotary_embedding` -- `npu_rotary_mul` (RotaryMul): rotary position embedding;
- `npu.moe_gating_topk_softmax`, `npu.moe_init_routing`, `npu.moe_finalize_routing` --
  `npu_moe_gating_top_k_softmax`, `npu_moe_init_routing`, `npu_moe_finalize_routing`:
  the MoE router's gating, its dispatch (sort by expert, gather) and its combine
  (weighted scatter-add back to the tokens);
- `npu.matmul_all_reduce` -- `npu_mm_all_reduce_base` (MatmulAllReduce, an MC2 kernel):
  a matmul fused with the all-reduce of its result, a collective like `npu.all_reduce`.

They belong to the `npu` dialect (`npuir.dialects.npu.NPU_OPS` lists them) and follow its
conventions: one engine each, result types inferred from operands, `flops()` and
`bytes_moved()` as the dialect counts them.  Fused attention is the one op with work on
two engines: `flops()` is its cube work (the two matmuls) and `vector_flops()` its vector
work (the softmax and masking), which the backend's cost model overlaps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
    UnitAttr,
    i32,
)
from xdsl.ir import Attribute
from xdsl.irdl import (
    attr_def,
    irdl_op_definition,
    operand_def,
    opt_attr_def,
    opt_operand_def,
    result_def,
    traits_def,
)
from xdsl.utils.exceptions import VerifyException

from npuir.dialects.effects import PureUntilScheduled
from npuir.dialects.npu import (
    DYN,
    CollectiveOp,
    Engine,
    NpuOp,
    Shape,
    broadcast_shapes,
    fmt_shape,
    num_elements,
    shape_of,
)

__all__ = [
    "FUSED_OPS",
    "FusionAttentionOp",
    "GroupedMatmulOp",
    "MatmulAllReduceOp",
    "MoeFinalizeRoutingOp",
    "MoeGatingTopkSoftmaxOp",
    "MoeInitRoutingOp",
    "RotaryEmbeddingOp",
    "attention_pairs",
]


def _agree(a: int, b: int) -> bool:
    return a == DYN or b == DYN or a == b


def _static(d: int) -> int:
    """A dim as the dialect costs it: a dynamic dim counts as 1."""
    return 1 if d == DYN else d


def _tensor_of(ty: Attribute, what: str) -> TensorType[Attribute]:
    if not isinstance(ty, TensorType):
        raise VerifyException(f"{what} must be a tensor, got {ty}")
    return ty  # pyright: ignore[reportUnknownVariableType]


def _rank(ty: TensorType[Attribute], what: str, rank: int) -> Shape:
    shape = shape_of(ty)
    if len(shape) != rank:
        raise VerifyException(f"{what} must have rank {rank}, got {fmt_shape(shape)}")
    return shape


def _index_type(ty: TensorType[Attribute], what: str) -> None:
    elem = ty.element_type
    if not isinstance(elem, IntegerType) or elem.width.data not in (32, 64):
        raise VerifyException(f"{what} must be i32 or i64 indices, got {elem}")


def _same_element(a: TensorType[Attribute], b: TensorType[Attribute], what: str) -> None:
    if a.element_type != b.element_type:
        raise VerifyException(f"{what} element types differ: {a.element_type} and {b.element_type}")


def attention_pairs(sq: int, skv: int, causal: bool) -> int:
    """(query, key) pairs one attention head scores: all of them, or with causal masking
    those with key index <= query index (the top-left triangle, as torch's `is_causal`)."""
    if not causal:
        return sq * skv
    # Row i keeps min(i + 1, skv) keys: a triangle, then full rows once i reaches skv.
    tri = min(sq, skv)
    return tri * (tri + 1) // 2 + max(0, sq - skv) * skv


# --------------------------------------------------------------------------
# Attention
# --------------------------------------------------------------------------


@irdl_op_definition
class FusionAttentionOp(NpuOp):
    """Scaled dot-product attention in one kernel (`torch_npu.npu_fusion_attention`).

    `query` is `[B, Nq, Sq, D]`, `key` `[B, Nkv, Skv, D]`, `value` `[B, Nkv, Skv, Dv]`
    (the BNSD layout); `Nq` must be a multiple of `Nkv`, query head `h` reading key/value
    head `h // (Nq / Nkv)` (grouped-query attention, so no `repeat_kv` copy is needed).
    The result is `softmax(scale * Q K^T + mask) V`, `[B, Nq, Sq, Dv]`.  `scale`
    defaults to `1 / sqrt(D)`.  An optional `mask` broadcasts to `[B, Nq, Sq, Skv]`: an
    i1 mask keeps the pairs where it is true (torch's `attn_mask` convention), or with
    `mask_drops` drops them (`npu_fusion_attention`'s `atten_mask` convention); a float
    mask of the query's type is added to the scores.  `causal` keeps key `j` for query `i`
    only when `j <= i`.  A row that keeps no key gives zeros.

    The kernel runs on the AI Core in mixed mode: the cube computes `Q K^T` and `P V`
    (`flops()`), the paired vector cores the softmax and masking (`vector_flops()`).

    ```mlir
    %o = npu.fusion_attention %q, %k, %v {causal} : (tensor<1x8x16x64xf16>, tensor<1x2x16x64xf16>, tensor<1x2x16x64xf16>) -> tensor<1x8x16x64xf16>
    ```
    """

    name = "npu.fusion_attention"
    ENGINE: ClassVar[Engine] = Engine.CUBE
    query = operand_def(TensorType)
    key = operand_def(TensorType)
    value = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    result = result_def(TensorType)
    scale = opt_attr_def(FloatAttr[Float32Type])
    causal = opt_attr_def(UnitAttr)
    mask_drops = opt_attr_def(UnitAttr)
    traits = traits_def(PureUntilScheduled())

    SOFTMAX_FLOPS: ClassVar[int] = 5
    """Vector operations per score of FlashAttention's online softmax: scale, running max,
    subtract-and-exp, running sum, and the rescale of the partial output it amortises."""

    def verify_(self) -> None:
        if self.scale is not None and not self.scale.value.data > 0:
            raise VerifyException(f"scale must be > 0, got {self.scale.value.data}")
        mask_type = self.mask.type if self.mask is not None else None
        if self.mask_drops is not None and not (
            isinstance(mask_type, TensorType) and mask_type.element_type == IntegerType(1)
        ):
            raise VerifyException("mask_drops needs an i1 mask")
        super().verify_()

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        q = _tensor_of(operand_types[0], "query")
        k = _tensor_of(operand_types[1], "key")
        v = _tensor_of(operand_types[2], "value")
        sq_, sk_, sv_ = (_rank(t, w, 4) for t, w in ((q, "query"), (k, "key"), (v, "value")))
        _same_element(q, k, "query and key")
        _same_element(q, v, "query and value")
        b, nq, sq, d = sq_
        bk, nkv, skv, dk = sk_
        bv, nv, sv, dv = sv_
        if not (_agree(b, bk) and _agree(b, bv)):
            raise VerifyException(
                f"batch dims differ: query {fmt_shape(sq_)}, key {fmt_shape(sk_)}, "
                f"value {fmt_shape(sv_)}"
            )
        if not _agree(nkv, nv) or not _agree(skv, sv):
            raise VerifyException(
                f"key {fmt_shape(sk_)} and value {fmt_shape(sv_)} differ in heads or length"
            )
        if not _agree(d, dk):
            raise VerifyException(f"query head dim {d} differs from key head dim {dk}")
        if nq != DYN and nkv != DYN and (nkv < 1 or nq % nkv):
            raise VerifyException(
                f"query heads ({nq}) must be a multiple of key/value heads ({nkv})"
            )
        if len(operand_types) > 3:
            m = _tensor_of(operand_types[3], "mask")
            if m.element_type != q.element_type and m.element_type != IntegerType(1):
                raise VerifyException(
                    f"mask must be i1 or the query's {q.element_type}, got {m.element_type}"
                )
            full = (b, nq, sq, skv)
            ms = shape_of(m)
            if len(ms) > 4 or broadcast_shapes(ms, full) != broadcast_shapes(full, full):
                raise VerifyException(
                    f"mask {fmt_shape(ms)} does not broadcast to the scores {fmt_shape(full)}"
                )
        return [TensorType(q.element_type, [b, nq, sq, dv])]

    def dims(self) -> tuple[int, int, int, int, int, int, int]:
        """(B, Nq, Nkv, Sq, Skv, D, Dv), a dynamic dim counted as 1."""
        b, nq, sq, d = (_static(x) for x in shape_of(self.query.type))
        _, nkv, skv, _ = (_static(x) for x in shape_of(self.key.type))
        dv = _static(shape_of(self.value.type)[3])
        return b, nq, nkv, sq, skv, d, dv

    def pairs(self) -> int:
        """Scores the kernel computes over all heads: fully masked tiles are skipped, so a
        causal attention does about half the work of a full one."""
        b, nq, _, sq, skv, _, _ = self.dims()
        return b * nq * attention_pairs(sq, skv, self.causal is not None)

    def flops(self) -> int:
        _, _, _, _, _, d, dv = self.dims()
        return 2 * self.pairs() * (d + dv)

    def vector_flops(self) -> int:
        """The softmax and masking the vector cores do, per score computed."""
        per_score = self.SOFTMAX_FLOPS + (1 if self.mask is not None else 0)
        return per_score * self.pairs()


# --------------------------------------------------------------------------
# MoE experts
# --------------------------------------------------------------------------


@irdl_op_definition
class GroupedMatmulOp(NpuOp):
    """One GEMM per expert over its group of rows (`torch_npu.npu_grouped_matmul`).

    `input` is `[T, K]`, its rows sorted by expert; `weight` is `[E, K, N]`; `offsets`
    (`[E]`, i32 or i64) holds each group's end row, cumulative as `aten._grouped_mm`'s
    `offs` and `npu_grouped_matmul`'s `group_list` (type 0): rows
    `offsets[e-1] .. offsets[e]` are multiplied by `weight[e]`.  Rows past the last
    offset give zeros.  The result is `[T, N]`, on the cube unit.

    ```mlir
    %y = npu.grouped_matmul %x, %w, %offs : (tensor<16x32xf16>, tensor<4x32x64xf16>, tensor<4xi32>) -> tensor<16x64xf16>
    ```
    """

    name = "npu.grouped_matmul"
    ENGINE: ClassVar[Engine] = Engine.CUBE
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    offsets = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        x = _tensor_of(operand_types[0], "input")
        w = _tensor_of(operand_types[1], "weight")
        offs = _tensor_of(operand_types[2], "offsets")
        t, kx = _rank(x, "input", 2)
        e, kw, n = _rank(w, "weight", 3)
        (eo,) = _rank(offs, "offsets", 1)
        _same_element(x, w, "input and weight")
        _index_type(offs, "offsets")
        if not _agree(kx, kw):
            raise VerifyException(
                f"input {fmt_shape((t, kx))} and weight {fmt_shape((e, kw, n))} "
                f"differ in K ({kx} vs {kw})"
            )
        if not _agree(e, eo):
            raise VerifyException(f"offsets has {eo} entries for {e} experts")
        return [TensorType(x.element_type, [t, n])]

    def flops(self) -> int:
        t, k = (_static(d) for d in shape_of(self.input.type))
        n = _static(shape_of(self.weight.type)[2])
        # Every row meets exactly one expert's weight.
        return 2 * t * k * n


# --------------------------------------------------------------------------
# Rotary embedding
# --------------------------------------------------------------------------


@irdl_op_definition
class RotaryEmbeddingOp(NpuOp):
    """Rotary position embedding (`torch_npu.npu_rotary_mul`, its default "half" mode).

    `x * cos + rotate_half(x) * sin`, where `rotate_half` of the last dim's halves
    `(a, b)` is `(-b, a)`; `cos` and `sin` broadcast to `x`, whose last dim is even.

    ```mlir
    %y = npu.rotary_embedding %x, %cos, %sin : (tensor<1x4x16x64xf16>, tensor<1x1x16x64xf16>, tensor<1x1x16x64xf16>) -> tensor<1x4x16x64xf16>
    ```
    """

    name = "npu.rotary_embedding"
    ENGINE: ClassVar[Engine] = Engine.VECTOR
    input = operand_def(TensorType)
    cos = operand_def(TensorType)
    sin = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        x = _tensor_of(operand_types[0], "input")
        c = _tensor_of(operand_types[1], "cos")
        s = _tensor_of(operand_types[2], "sin")
        _same_element(x, c, "input and cos")
        _same_element(x, s, "input and sin")
        sx = shape_of(x)
        if not sx or (sx[-1] != DYN and sx[-1] % 2):
            raise VerifyException(f"input's last dim must be even, got {fmt_shape(sx)}")
        for table, what in ((c, "cos"), (s, "sin")):
            st = shape_of(table)
            if len(st) > len(sx) or broadcast_shapes(st, sx) != sx:
                raise VerifyException(
                    f"{what} {fmt_shape(st)} does not broadcast to the input {fmt_shape(sx)}"
                )
        return [x]

    def flops(self) -> int:
        # Two products, a sum and the negated half, per element.
        return 4 * num_elements(shape_of(self.result.type))


# --------------------------------------------------------------------------
# MoE routing
# --------------------------------------------------------------------------


@irdl_op_definition
class MoeGatingTopkSoftmaxOp(NpuOp):
    """The MoE router's gate: softmax over experts, then the `k` best
    (`torch_npu.npu_moe_gating_top_k_softmax`).

    `logits` is `[T, E]`.  Results: the `k` largest softmax weights `[T, k]` (the
    logits' type), their experts `[T, k]` i32, and the rows `[T, k]` i32 with
    `row[t, j] = j * T + t` -- the slot-major numbering `npu.moe_init_routing` takes.

    ```mlir
    %w, %e, %r = npu.moe_gating_topk_softmax %logits {k = 2 : i64} : (tensor<16x8xf32>) -> (tensor<16x2xf32>, tensor<16x2xi32>, tensor<16x2xi32>)
    ```
    """

    name = "npu.moe_gating_topk_softmax"
    ENGINE: ClassVar[Engine] = Engine.VECTOR
    logits = operand_def(TensorType)
    weights = result_def(TensorType)
    experts = result_def(TensorType)
    rows = result_def(TensorType)
    k = attr_def(IntegerAttr[I64])
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        x = _tensor_of(operand_types[0], "logits")
        t, e = _rank(x, "logits", 2)
        k = self.k.value.data
        if k < 1 or (e != DYN and k > e):
            raise VerifyException(f"k = {k} must be in [1, {fmt_shape((e,))}] (the experts)")
        return [
            TensorType(x.element_type, [t, k]),
            TensorType(i32, [t, k]),
            TensorType(i32, [t, k]),
        ]

    def flops(self) -> int:
        n = num_elements(shape_of(self.logits.type))
        k = self.k.value.data
        # The softmax's five operations per logit, then a k-way selection over them.
        return 5 * n + n * max(1, math.ceil(math.log2(max(2, k))))


@irdl_op_definition
class MoeInitRoutingOp(NpuOp):
    """The MoE dispatch: token copies sorted by expert (`torch_npu.npu_moe_init_routing`).

    `input` is `[T, H]`; `rows` and `experts` are `[T, k]` i32 as
    `npu.moe_gating_topk_softmax` gives them.  The `T * k` (token, slot) pairs are sorted
    by expert, stably in the row-major order of `experts`.  Results: `expanded`
    `[T * k, H]`, the tokens' rows in that order; `expanded_rows` `[T * k]` i32, for each
    slot-major row `r = j * T + t` the row of `expanded` holding it (what
    `npu.moe_finalize_routing` reads back); `expanded_experts` `[T * k]` i32, the sorted
    experts (`aten.histc` of them gives the group sizes `npu.grouped_matmul` needs).

    ```mlir
    %x2, %r2, %e2 = npu.moe_init_routing %x, %r, %e : (tensor<16x32xf16>, tensor<16x2xi32>, tensor<16x2xi32>) -> (tensor<32x32xf16>, tensor<32xi32>, tensor<32xi32>)
    ```
    """

    name = "npu.moe_init_routing"
    ENGINE: ClassVar[Engine] = Engine.VECTOR
    input = operand_def(TensorType)
    rows = operand_def(TensorType)
    experts = operand_def(TensorType)
    expanded = result_def(TensorType)
    expanded_rows = result_def(TensorType)
    expanded_experts = result_def(TensorType)
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        x = _tensor_of(operand_types[0], "input")
        r = _tensor_of(operand_types[1], "rows")
        e = _tensor_of(operand_types[2], "experts")
        t, h = _rank(x, "input", 2)
        tr, k = _rank(r, "rows", 2)
        if shape_of(e) != shape_of(r):
            raise VerifyException(
                f"rows {fmt_shape(shape_of(r))} and experts {fmt_shape(shape_of(e))} differ"
            )
        for ty, what in ((r, "rows"), (e, "experts")):
            if ty.element_type != i32:
                raise VerifyException(f"{what} must be i32, got {ty.element_type}")
        if not _agree(t, tr):
            raise VerifyException(f"input has {t} tokens, rows {tr}")
        tk = DYN if DYN in (t, k) else t * k
        return [TensorType(x.element_type, [tk, h]), TensorType(i32, [tk]), TensorType(i32, [tk])]

    def flops(self) -> int:
        tk = num_elements(shape_of(self.rows.type))
        # A comparison sort of the T*k experts; the gather only moves bytes.
        return tk * max(1, math.ceil(math.log2(max(2, tk))))


@irdl_op_definition
class MoeFinalizeRoutingOp(NpuOp):
    """The MoE combine: expert outputs weighted back onto their tokens
    (`torch_npu.npu_moe_finalize_routing`).

    `expanded` is `[T * k, H]` (the experts' outputs in `npu.moe_init_routing`'s order),
    `scales` `[T, k]` the gate weights, `expanded_rows` `[T * k]` i32 from
    `npu.moe_init_routing`, and an optional `skip` `[T, H]` (the residual) is added:
    `out[t] = skip[t] + sum_j scales[t, j] * expanded[expanded_rows[j * T + t]]`.

    ```mlir
    %y = npu.moe_finalize_routing %x2, %w, %r2, %x : (tensor<32x32xf16>, tensor<16x2xf16>, tensor<32xi32>, tensor<16x32xf16>) -> tensor<16x32xf16>
    ```
    """

    name = "npu.moe_finalize_routing"
    ENGINE: ClassVar[Engine] = Engine.VECTOR
    expanded = operand_def(TensorType)
    scales = operand_def(TensorType)
    expanded_rows = operand_def(TensorType)
    skip = opt_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        x = _tensor_of(operand_types[0], "expanded")
        s = _tensor_of(operand_types[1], "scales")
        r = _tensor_of(operand_types[2], "expanded_rows")
        tk, h = _rank(x, "expanded", 2)
        t, k = _rank(s, "scales", 2)
        (tr,) = _rank(r, "expanded_rows", 1)
        _same_element(x, s, "expanded and scales")
        if r.element_type != i32:
            raise VerifyException(f"expanded_rows must be i32, got {r.element_type}")
        want = DYN if DYN in (t, k) else t * k
        if not (_agree(tk, want) and _agree(tr, want)):
            raise VerifyException(
                f"expanded ({fmt_shape((tk, h))}) and expanded_rows ({fmt_shape((tr,))}) "
                f"must have T * k = {fmt_shape((want,))} rows for scales {fmt_shape((t, k))}"
            )
        if len(operand_types) > 3:
            skip = _tensor_of(operand_types[3], "skip")
            _same_element(x, skip, "expanded and skip")
            ss = shape_of(skip)
            if len(ss) != 2 or not (_agree(ss[0], t) and _agree(ss[1], h)):
                raise VerifyException(
                    f"skip {fmt_shape(ss)} must be the tokens' shape {fmt_shape((t, h))}"
                )
        return [TensorType(x.element_type, [t, h])]

    def flops(self) -> int:
        # A multiply-add per expanded element, and the residual's add.
        out = num_elements(shape_of(self.result.type))
        tk_h = num_elements(shape_of(self.expanded.type))
        return 2 * tk_h + (out if self.skip is not None else 0)


# --------------------------------------------------------------------------
# MC2: a matmul fused with its collective
# --------------------------------------------------------------------------


@irdl_op_definition
class MatmulAllReduceOp(CollectiveOp):
    """A matmul whose result is summed over the group, in one MC2 kernel
    (`torch_npu.npu_mm_all_reduce_base`).

    Each rank multiplies its `input` `[M, K]` by its `weight` `[K, N]` (the row-parallel
    layer of tensor parallelism: each holds a slice of K); every rank gets the sum of the
    products, `[M, N]`.  Ascend's MC2 kernel ("matmul compute + communication") runs the
    matmul on the cube tile by tile and reduces each finished tile while the next one
    computes, so the collective hides behind the matmul or the other way round; in mode
    "aiv" the communication is driven from vector cores, whose core limits then act on it
    (seed 003's table, `npuir.analysis.core_limits`).

    ```mlir
    %y = npu.matmul_all_reduce %x, %w {group_size = 2 : i64} : (tensor<64x32xf16>, tensor<32x16xf16>) -> tensor<64x16xf16>
    ```
    """

    name = "npu.matmul_all_reduce"
    # Both operands declared here, in order: IRDL lists a subclass's own fields first.
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    COLLECTIVE: ClassVar[str] = "all_reduce"
    """The collective the kernel fuses."""

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        x = _tensor_of(operand_types[0], "input")
        w = _tensor_of(operand_types[1], "weight")
        m, k = _rank(x, "input", 2)
        kw, n = _rank(w, "weight", 2)
        _same_element(x, w, "input and weight")
        if not _agree(k, kw):
            raise VerifyException(f"inner dimensions differ: input gives K = {k}, weight {kw}")
        return [TensorType(x.element_type, [m, n])]

    def mnk(self) -> tuple[int, int, int]:
        m, k = (_static(d) for d in shape_of(self.input.type))
        n = _static(shape_of(self.weight.type)[1])
        return m, n, k

    def flops(self) -> int:
        m, n, k = self.mnk()
        return 2 * m * n * k


FUSED_OPS: tuple[type[NpuOp], ...] = (
    FusionAttentionOp,
    GroupedMatmulOp,
    RotaryEmbeddingOp,
    MoeGatingTopkSoftmaxOp,
    MoeInitRoutingOp,
    MoeFinalizeRoutingOp,
    MatmulAllReduceOp,
)
"""Every fused-kernel op, in the order `npuir.dialects.npu.NPU_OPS` lists them."""
