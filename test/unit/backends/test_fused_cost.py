"""The fused kernels' costs: properties of the rules, not the numbers they happen to give."""

from __future__ import annotations

import dataclasses

import pytest
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    TensorType,
    UnitAttr,
    f16,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation
from xdsl.utils.test_value import create_ssa_value

from npuir.backends.npu.cost import ATTENTION_Q_ROWS, OpWork, op_work
from npuir.backends.npu.hardware import PRESETS
from npuir.backends.npu.timing import duration_ns, paired_vector_cores, solo_duration_ns
from npuir.dialects import npu
from npuir.dialects.npu_fused import (
    FusionAttentionOp,
    GroupedMatmulOp,
    MatmulAllReduceOp,
    MoeFinalizeRoutingOp,
    MoeGatingTopkSoftmaxOp,
    MoeInitRoutingOp,
    RotaryEmbeddingOp,
)

B2 = PRESETS["910b2"]


def build(cls: type[Operation], *types: Attribute, **attrs: Attribute) -> Operation:
    """An op on fresh values of `types`, its results inferred as the importers do."""
    operands = [create_ssa_value(t) for t in types]
    op = cls.create(operands=operands, result_types=[types[0]], attributes=dict(attrs))
    assert isinstance(op, npu.NpuOp)
    inferred = op.infer_result_types(list(types))
    op = cls.create(operands=operands, result_types=inferred, attributes=dict(attrs))
    op.verify()
    return op


def t(*shape: int, elem: Attribute = f16) -> TensorType[Attribute]:
    return TensorType(elem, list(shape))


def attention(
    sq: int, skv: int, heads: int = 8, kv_heads: int = 8, d: int = 128, **attrs: Attribute
) -> FusionAttentionOp:
    op = build(
        FusionAttentionOp,
        t(1, heads, sq, d),
        t(1, kv_heads, skv, d),
        t(1, kv_heads, skv, d),
        **attrs,
    )
    assert isinstance(op, FusionAttentionOp)
    return op


def ns(op: Operation) -> int:
    assert isinstance(op, npu.NpuOp)
    return solo_duration_ns(B2, op_work(op, B2))


def test_each_fused_op_runs_on_its_kernels_engine() -> None:
    assert op_work(attention(16, 16), B2).engine == "cube"
    gmm = build(GroupedMatmulOp, t(64, 32), t(4, 32, 16), t(4, elem=i32))
    assert op_work(gmm, B2).engine == "cube"
    rope = build(RotaryEmbeddingOp, t(1, 4, 8, 16), t(1, 1, 8, 16), t(1, 1, 8, 16))
    gate = build(MoeGatingTopkSoftmaxOp, t(16, 8), k=IntegerAttr(2, i64))
    init = build(MoeInitRoutingOp, t(16, 32), t(16, 2, elem=i32), t(16, 2, elem=i32))
    fin = build(MoeFinalizeRoutingOp, t(32, 32), t(16, 2), t(32, elem=i32))
    for op in (rope, gate, init, fin):
        assert op_work(op, B2).engine == "vector", op.name


def test_attention_does_its_matmuls_on_the_cube_and_its_softmax_on_the_vectors() -> None:
    op = attention(256, 256)
    work = op_work(op, B2)
    b, nq, _, sq, skv, d, dv = op.dims()
    assert work.flops == 2 * b * nq * sq * skv * (d + dv)  # Q K^T and P V
    assert work.vector_flops > 0
    # The vector work overlaps the cube's: it costs nothing until it is the longer part.
    cube_only = dataclasses.replace(work, vector_flops=0)
    assert duration_ns(B2, work, 1) == duration_ns(B2, cube_only, 1)
    heavy = dataclasses.replace(work, vector_flops=work.flops * 100)
    assert duration_ns(B2, heavy, 1) > duration_ns(B2, work, 1)
    assert paired_vector_cores(B2) == B2.vector_cores // B2.cube_cores


@pytest.mark.parametrize("grow", ["sq", "skv"])
def test_attention_cost_grows_with_sequence_length(grow: str) -> None:
    times = []
    for s in (128, 512, 2048, 8192):
        sq, skv = (s, 1024) if grow == "sq" else (1024, s)
        times.append(ns(attention(sq, skv)))
    assert times == sorted(times) and times[0] < times[-1]


def test_causal_attention_scores_about_half_the_pairs() -> None:
    full, causal = attention(1024, 1024), attention(1024, 1024, causal=UnitAttr())
    assert causal.flops() < full.flops() <= 2 * causal.flops() + 2 * 8 * 1024 * 256
    assert ns(causal) < ns(full)


def test_grouped_query_attention_reads_fewer_bytes_than_repeated_kv() -> None:
    # Decode (one query row) and prefill: the query heads sharing a kv head read it once per
    # block of query rows, where a repeat_kv copy has every head read its own copy.
    for sq in (1, 32, 4 * ATTENTION_Q_ROWS + 1):
        gqa = op_work(attention(sq, 4096, heads=32, kv_heads=4), B2)
        repeated = op_work(attention(sq, 4096, heads=32, kv_heads=32), B2)
        assert gqa.flops == repeated.flops
        assert gqa.bytes < repeated.bytes, sq


def test_fused_attention_is_cheaper_than_its_parts() -> None:
    # The unfused path writes the scores to HBM and reads them back around a softmax.
    sq = skv = 2048
    fused = ns(attention(sq, skv))
    scores = t(1, 8, sq, skv)
    qk = build(npu.BatchMatmulOp, t(1, 8, sq, 128), t(1, 8, skv, 128), transpose_b=UnitAttr())
    soft = build(npu.SoftmaxOp, scores)
    pv = build(npu.BatchMatmulOp, scores, t(1, 8, skv, 128))
    assert fused < ns(qk) + ns(soft) + ns(pv)


def test_grouped_matmul_costs_one_gemm_over_all_rows() -> None:
    gmm = build(GroupedMatmulOp, t(512, 256), t(8, 256, 512), t(8, elem=i32))
    assert isinstance(gmm, GroupedMatmulOp)
    assert gmm.flops() == 2 * 512 * 256 * 512
    dense = build(npu.MatmulOp, t(512, 256), t(256, 512))
    # Same arithmetic as one dense GEMM, but every expert's weight is read.
    assert op_work(gmm, B2).bytes > op_work(dense, B2).bytes
    assert op_work(gmm, B2).flops == op_work(dense, B2).flops


def test_vector_work_only_on_a_cube_op() -> None:
    with pytest.raises(ValueError, match="cube op"):
        OpWork(engine="vector", flops=1, vector_flops=1)


@pytest.mark.parametrize(
    ("types", "attrs", "message"),
    [
        ((t(1, 3, 4, 8), t(1, 2, 4, 8), t(1, 2, 4, 8)), {}, "multiple of key/value heads"),
        ((t(1, 2, 4, 8), t(1, 2, 4, 16), t(1, 2, 4, 8)), {}, "head dim"),
        ((t(1, 2, 4, 8), t(1, 2, 4, 8), t(1, 2, 4, 8), t(3, 4, elem=i1)), {}, "broadcast"),
        (
            (t(1, 2, 4, 8), t(1, 2, 4, 8), t(1, 2, 4, 8)),
            {"scale": FloatAttr(-1.0, 32)},
            "scale must be > 0",
        ),
    ],
)
def test_attention_verifier_says_what_is_wrong(
    types: tuple[Attribute, ...], attrs: dict[str, Attribute], message: str
) -> None:
    from xdsl.utils.exceptions import VerifyException

    with pytest.raises(VerifyException, match=message):
        build(FusionAttentionOp, *types, **attrs)


def test_rms_norm_is_costed_as_the_fused_kernel() -> None:
    # One pass: x and gamma read once, y written once; its decomposition (square, mean,
    # add eps, rsqrt, two products) moves x through HBM again at every step.
    x, gamma = t(64, 4096), t(4096)
    fused = build(npu.RmsNormOp, x, gamma)
    assert op_work(fused, B2).bytes == 2 * (64 * 4096 * 2 + 4096)
    square = build(npu.MulOp, x, x)
    mean = build(npu.ReduceSumOp, x, axes=DenseArrayBase.from_list(i64, [1]))
    rows = t(64)
    steps = [square, mean, build(npu.AddOp, rows, rows), build(npu.RsqrtOp, rows)]
    steps += [build(npu.MulOp, x, t(64, 1)), build(npu.MulOp, x, gamma)]
    assert ns(fused) < sum(ns(op) for op in steps)


def test_mc2_overlaps_its_matmul_with_its_all_reduce() -> None:
    x, w = t(256, 2048), t(2048, 1024)
    mc2 = build(MatmulAllReduceOp, x, w, group_size=IntegerAttr(2, i64))
    matmul = build(npu.MatmulOp, x, w)
    reduce = build(npu.AllReduceOp, t(256, 1024), group_size=IntegerAttr(2, i64))
    work = op_work(mc2, B2)
    assert work.engine == "comm" and work.collective == "all_reduce"
    assert work.cube_flops == op_work(matmul, B2).flops
    parts = [solo_duration_ns(B2, op_work(op, B2)) for op in (matmul, reduce)]
    assert max(parts) <= solo_duration_ns(B2, work) < sum(parts)


def test_core_limits_act_on_mc2_in_aiv_mode_only() -> None:
    from xdsl.dialects.builtin import StringAttr

    from npuir.analysis.core_limits import engines_used, limit_has_no_effect

    x, w = t(64, 32), t(32, 16)
    aiv = build(MatmulAllReduceOp, x, w, group_size=IntegerAttr(2, i64), mode=StringAttr("aiv"))
    sdma = build(MatmulAllReduceOp, x, w, group_size=IntegerAttr(2, i64))
    assert isinstance(aiv, npu.NpuOp) and isinstance(sdma, npu.NpuOp)
    assert engines_used(aiv) == ("vector",) and limit_has_no_effect(aiv, "vector") is None
    assert limit_has_no_effect(sdma, "vector") is not None
