"""The fused kernels' numpy kernels against PyTorch eager, in f32 and f16."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from npuir.backends.npu.kernels import KernelError, kernel_attrs, kernel_for

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.torch]  # torch's import and compiles: the slow tier
F = torch.nn.functional

Array = np.ndarray[Any, Any]

# f32: the kernels compute in f32 as eager does, in another order.  f16: both compute in
# f32 and round once, so they differ by an ulp of the result or so.
TOLERANCE = {"f32": dict(rtol=1e-4, atol=1e-5), "f16": dict(rtol=2e-3, atol=2e-3)}
DTYPES = {"f32": torch.float32, "f16": torch.float16}


def run(name: str, *inputs: Any, **attrs: Any) -> list[Array]:
    arrays = [np.asarray(x.numpy() if isinstance(x, torch.Tensor) else x) for x in inputs]
    return kernel_for(name)(arrays, kernel_attrs(attrs))


def close(actual: Array, expected: Any, dtype: str) -> None:
    want = expected.detach().float().numpy()
    assert actual.dtype == expected.numpy().dtype
    np.testing.assert_allclose(actual.astype(np.float32), want, **TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize(
    ("heads", "kv_heads", "sq", "skv", "causal", "mask", "scale"),
    [
        (4, 4, 8, 8, False, None, None),
        (4, 4, 8, 8, True, None, None),
        (8, 2, 5, 7, False, "bool", 0.3),  # grouped-query heads, a bool mask
        (4, 1, 1, 9, False, "float", None),  # decode: one query row, one shared kv head
        (2, 2, 6, 4, True, None, None),  # more queries than keys under causal
    ],
)
def test_fusion_attention_matches_sdpa(
    dtype: str,
    heads: int,
    kv_heads: int,
    sq: int,
    skv: int,
    causal: bool,
    mask: str | None,
    scale: float | None,
) -> None:
    g = torch.Generator().manual_seed(heads * 100 + sq)
    td = DTYPES[dtype]
    q = torch.randn(2, heads, sq, 16, generator=g).to(td)
    k = torch.randn(2, kv_heads, skv, 16, generator=g).to(td)
    v = torch.randn(2, kv_heads, skv, 12, generator=g).to(td)
    inputs = [q, k, v]
    attn_mask = None
    if mask == "bool":
        attn_mask = torch.rand(sq, skv, generator=g) > 0.3
        attn_mask[:, 0] = True  # every row keeps a key: sdpa's math path gives NaN otherwise
        inputs.append(attn_mask)
    elif mask == "float":
        attn_mask = torch.randn(2, 1, sq, skv, generator=g).to(td)
        inputs.append(attn_mask)
    expected = F.scaled_dot_product_attention(
        q, k, v, attn_mask=attn_mask, is_causal=causal, scale=scale, enable_gqa=True
    )
    attrs: dict[str, Any] = {"causal": True} if causal else {}
    if scale is not None:
        attrs["scale"] = scale
    (out,) = run("npu.fusion_attention", *inputs, **attrs)
    close(out, expected, dtype)


def test_fusion_attention_row_without_keys_is_zero() -> None:
    q, k, v = (np.ones((1, 1, 2, 4), np.float32) for _ in range(3))
    mask = np.array([[True, True], [False, False]])
    (out,) = run("npu.fusion_attention", q, k, v, mask)
    assert np.all(out[0, 0, 1] == 0) and np.all(np.isfinite(out))


def test_fusion_attention_refuses_heads_that_do_not_group() -> None:
    q = np.zeros((1, 3, 2, 4), np.float32)
    k = np.zeros((1, 2, 2, 4), np.float32)
    with pytest.raises(KernelError, match="multiple"):
        run("npu.fusion_attention", q, k, k)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_grouped_matmul_matches_transformers_fallback(dtype: str) -> None:
    g = torch.Generator().manual_seed(7)
    td = DTYPES[dtype]
    x = torch.randn(13, 16, generator=g).to(td)
    w = torch.randn(4, 16, 8, generator=g).to(td)
    offs = torch.tensor([3, 3, 9, 12], dtype=torch.int32)  # an empty group; row 12 in none
    # transformers' `_grouped_mm_fallback`: one mm per group, zeros elsewhere.
    expected = torch.zeros(13, 8, dtype=td)
    start = 0
    for i, end in enumerate(offs.tolist()):
        expected[start:end] = x[start:end].float().mm(w[i].float()).to(td)
        start = end
    (out,) = run("npu.grouped_matmul", x, w, offs)
    close(out, expected, dtype)
    assert np.all(out[12] == 0)


def test_grouped_matmul_refuses_falling_offsets() -> None:
    x = np.zeros((4, 2), np.float32)
    w = np.zeros((2, 2, 2), np.float32)
    with pytest.raises(KernelError, match="offsets"):
        run("npu.grouped_matmul", x, w, np.array([3, 1], np.int32))


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_rotary_embedding_matches_rotate_half(dtype: str) -> None:
    g = torch.Generator().manual_seed(3)
    td = DTYPES[dtype]
    x = torch.randn(1, 4, 6, 8, generator=g).to(td)
    angle = torch.randn(1, 1, 6, 8, generator=g)
    cos, sin = angle.cos().to(td), angle.sin().to(td)
    a, b = x.float().chunk(2, dim=-1)
    expected = (x.float() * cos.float() + torch.cat([-b, a], dim=-1) * sin.float()).to(td)
    (out,) = run("npu.rotary_embedding", x, cos, sin)
    close(out, expected, dtype)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_moe_gating_topk_softmax_matches_softmax_then_topk(dtype: str) -> None:
    g = torch.Generator().manual_seed(5)
    td = DTYPES[dtype]
    logits = torch.randn(6, 8, generator=g).to(td)
    probs = torch.softmax(logits.float(), dim=-1)
    values, experts = torch.topk(probs, 2, dim=-1)
    weights, chosen, rows = run("npu.moe_gating_topk_softmax", logits, k=2)
    close(weights, values.to(td), dtype)
    np.testing.assert_array_equal(chosen, experts.numpy())
    assert chosen.dtype == np.int32 and rows.dtype == np.int32
    np.testing.assert_array_equal(rows, np.arange(2)[None, :] * 6 + np.arange(6)[:, None])


def moe_reference(x: Any, scores: Any, k: int, experts: list[Any]) -> Any:
    """A MoE layer as transformers writes it in eager: softmax, top-k, then each expert
    on its tokens and `index_add_` of the weighted outputs."""
    weights, chosen = torch.topk(torch.softmax(scores.float(), dim=-1), k, dim=-1)
    out = x.float().clone()  # the residual the combine adds
    for e, fn in enumerate(experts):
        token, slot = torch.where(chosen == e)
        out.index_add_(0, token, fn(x[token].float()) * weights[token, slot, None])
    return out


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_moe_routing_matches_eager_moe(dtype: str) -> None:
    g = torch.Generator().manual_seed(11)
    td = DTYPES[dtype]
    t, h, e, k = 7, 4, 3, 2
    x = torch.randn(t, h, generator=g).to(td)
    scores = torch.randn(t, e, generator=g).to(td)
    mats = torch.randn(e, h, h, generator=g).to(td)
    expected = moe_reference(x, scores, k, [lambda y, m=m: y @ m.float() for m in mats])

    weights, chosen, rows = run("npu.moe_gating_topk_softmax", scores, k=k)
    expanded, expanded_rows, expanded_experts = run("npu.moe_init_routing", x, rows, chosen)
    assert list(expanded_experts) == sorted(expanded_experts)
    offsets = np.cumsum(np.bincount(expanded_experts, minlength=e)).astype(np.int32)
    (outs,) = run("npu.grouped_matmul", expanded, mats, offsets)
    (out,) = run("npu.moe_finalize_routing", outs, weights, expanded_rows, x)
    close(out, expected.to(td), dtype)


def test_moe_init_routing_refuses_rows_that_are_no_numbering() -> None:
    x = np.zeros((2, 3), np.float32)
    rows = np.array([[0, 0], [1, 1]], np.int32)
    with pytest.raises(KernelError, match="once each"):
        run("npu.moe_init_routing", x, rows, rows)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_matmul_all_reduce_sums_the_ranks_products(dtype: str) -> None:
    # A collective kernel sees the whole group: each operand has a leading rank axis.
    g = torch.Generator().manual_seed(13)
    td = DTYPES[dtype]
    x = torch.randn(4, 6, 8, generator=g).to(td)  # 4 ranks, each its [6, 8] slice of K
    w = torch.randn(4, 8, 5, generator=g).to(td)
    expected = torch.einsum("rmk,rkn->mn", x.float(), w.float()).to(td)
    (out,) = run("npu.matmul_all_reduce", x, w, group_size=4)
    assert out.shape == (4, 6, 5)
    for rank in range(4):
        close(out[rank], expected, dtype)
