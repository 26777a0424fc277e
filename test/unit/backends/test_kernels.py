"""Tests for the numeric reference kernels (backends/npu/kernels.py).

Every kernel is checked against a numpy expression written independently here, in f32
and (for matmul and elementwise ops) in low precision, where the reference is the f32
(or f64) result cast to the low-precision dtype.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

from npuir.backends.npu.kernels import (
    KERNELS,
    RESULT_DTYPES,
    RESULT_SHAPES,
    KernelError,
    MissingKernelError,
    dtype_name,
    kernel_attrs,
    kernel_for,
    numpy_dtype,
    positive_domain_ops,
    positive_operands,
    random_input,
)

Array = npt.NDArray[Any]
BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)


def run(name: str, *inputs: Array, **attrs: Any) -> list[Array]:
    return kernel_for(name)(list(inputs), kernel_attrs(attrs))


def one(name: str, *inputs: Array, **attrs: Any) -> Array:
    (out,) = run(name, *inputs, **attrs)
    return out


def rand(shape: tuple[int, ...], dtype: Any = F32, seed: int = 0, positive: bool = False) -> Array:
    return random_input(shape, dtype, np.random.default_rng(seed), positive)


def assert_same(actual: Array, expected: Array) -> None:
    """Bit-exact equality (dtype, shape and values; NaNs compare equal)."""
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(actual.astype(np.float64), expected.astype(np.float64))


def eps_of(dt: np.dtype[Any]) -> float:
    """Machine epsilon of a float dtype, bf16 included."""
    return float(ml_dtypes.finfo(dt).eps)  # type: ignore[no-untyped-call]


def f64(x: Array) -> Array:
    return x.astype(np.float64)


# ------------------------------------------------------------------------------ dtypes


def test_numpy_dtype_names() -> None:
    assert numpy_dtype("f16") == np.float16
    assert numpy_dtype("bf16") == ml_dtypes.bfloat16
    assert numpy_dtype("f32") == np.float32
    assert numpy_dtype("i32") == np.int32
    assert numpy_dtype("i64") == np.int64
    assert numpy_dtype("i1") == np.bool_
    for name in ("f16", "bf16", "f32", "i32", "i64", "i1"):
        assert dtype_name(numpy_dtype(name)) == name
    with pytest.raises(ValueError, match="f8"):
        numpy_dtype("f8")


def test_every_design_op_has_a_kernel() -> None:
    ops = (
        "matmul batch_matmul add sub mul div maximum neg exp sqrt rsqrt relu gelu silu sigmoid"
        " cast swiglu softmax rms_norm reduce_sum reduce_max transpose reshape concat slice"
        " gather topk nonzero all_reduce reduce_scatter all_gather all_to_all"
        " conv2d pool2d layout_transform leaky_relu"
    ).split()
    # npu.opaque stands for an operator nobody could map: it has no kernel by design.  The
    # table-made ops (npuir.dialects.npu_math) each have theirs.
    from npuir.dialects.npu_math import MATH_OPS

    ops += [row.name for row in MATH_OPS]
    assert set(KERNELS) == {f"npu.{op}" for op in ops}


def test_missing_kernel_is_a_clear_key_error() -> None:
    with pytest.raises(MissingKernelError) as info:
        kernel_for("npu.frobnicate")
    assert isinstance(info.value, KeyError)
    assert "npu.frobnicate" in str(info.value)
    assert not str(info.value).startswith("'")  # readable, not KeyError's repr


def test_wrong_arity_names_the_op() -> None:
    with pytest.raises(KernelError, match=r"npu\.add"):
        kernel_for("npu.add")([rand((2,))], {})


def test_results_are_fresh_arrays() -> None:
    x = rand((3, 4))
    for out in (one("npu.transpose", x, perm=(1, 0)), one("npu.reshape", x, **shape_of((12,)))):
        assert not np.shares_memory(out, x)


def shape_of(*shapes: tuple[int | None, ...]) -> dict[str, Any]:
    return {RESULT_SHAPES: shapes}


# ------------------------------------------------------------------------------ matmul


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_f32_transpose_flags(ta: bool, tb: bool) -> None:
    a, b = rand((3, 5), seed=1), rand((5, 4), seed=2)
    a_in = a.T.copy() if ta else a
    b_in = b.T.copy() if tb else b
    attrs: dict[str, Any] = {}
    if ta:
        attrs["transpose_a"] = True
    if tb:
        attrs["transpose_b"] = None  # a unit attr may be decoded as None: still set
    out = one("npu.matmul", a_in, b_in, **attrs)
    assert out.dtype == F32 and out.shape == (3, 4)
    expected = np.einsum("mk,kn->mn", f64(a), f64(b))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_matmul_unit_attr_false_is_unset() -> None:
    a, b = rand((2, 3)), rand((3, 2), seed=1)
    np.testing.assert_allclose(one("npu.matmul", a, b, transpose_a=False), f64(a) @ f64(b), 1e-5)


@pytest.mark.parametrize("dt", [F16, BF16])
def test_matmul_low_precision_matches_f32_reference_cast(dt: np.dtype[Any]) -> None:
    a, b = rand((4, 64), dt, 1), rand((64, 8), dt, 2)
    out = one("npu.matmul", a, b)
    expected = np.einsum("mk,kn->mn", f64(a), f64(b)).astype(np.float32).astype(dt)
    assert out.dtype == dt
    # f32 accumulation is within an f32 ulp or two of f64; after the cast the two agree
    # exactly, except for rare double-rounding ties, which allow one low-precision ulp.
    np.testing.assert_allclose(f64(out), f64(expected), rtol=2 * eps_of(dt))


def test_low_precision_matmul_sums_in_four_partial_sums_then_in_order() -> None:
    # The products are 2**24, 1, 1, 1, 0, 1, 1, 1, exact in f32 (spacing 2 at 2**24).
    # Four partial sums take k mod 4 in turn: 2**24, 2, 2, 2, added in order to
    # 2**24 + 6. A sequential f32 sum stays at 2**24 (each + 1 rounds to even), a
    # pairwise tree gives 2**24 + 4.
    a = np.array([[4096, 1, 1, 1, 0, 1, 1, 1]], F16)
    b = np.array([[4096, 1, 1, 1, 1, 1, 1, 1]], F16).T.copy()
    out = one("npu.matmul", a, b, **{RESULT_DTYPES: ("f32",)})
    assert out[0, 0] == np.float32(2**24 + 6)


@pytest.mark.torch
def test_low_precision_matmul_is_eager_torch_on_cpu_bit_for_bit() -> None:
    torch = pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(0)
    for batch, m, k, n in (((), 64, 1003, 48), ((3,), 17, 70, 20), ((), 1, 9, 4)):
        a = torch.randn(*batch, m, k, generator=gen, dtype=torch.float16)
        b = torch.randn(*batch, k, n, generator=gen, dtype=torch.float16)
        name = "npu.batch_matmul" if batch else "npu.matmul"
        assert_same(one(name, a.numpy(), b.numpy()), (a @ b).numpy())


def test_bf16_matmul_accumulates_in_f32() -> None:
    # 256 + 1 rounds back to 256 in bf16 (8-bit mantissa): a bf16 accumulator would stay at
    # 256; an f32 accumulator reaches 256 + 256 = 512, which bf16 represents exactly.
    a = np.ones((1, 257), dtype=BF16)
    a[0, 0] = 256
    b = np.ones((257, 1), dtype=BF16)
    out = one("npu.matmul", a, b)
    expected = (a.astype(np.float32) @ b.astype(np.float32)).astype(BF16)
    assert_same(out, expected)
    assert float(out[0, 0]) == 512.0


def test_matmul_result_dtype_and_errors() -> None:
    a, b = rand((2, 3), F16), rand((3, 2), F16, 1)
    assert one("npu.matmul", a, b, **{RESULT_DTYPES: ("f32",)}).dtype == F32
    with pytest.raises(KernelError, match=r"npu\.matmul"):
        one("npu.matmul", a, a)
    with pytest.raises(KernelError, match="2-D"):
        one("npu.matmul", rand((2, 2, 2)), rand((2, 2)))


def test_matmul_int32() -> None:
    a = np.array([[1, 2], [3, 4]], dtype=np.int32)
    assert_same(one("npu.matmul", a, a), np.array([[7, 10], [15, 22]], dtype=np.int32))


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_batch_matmul_broadcasts_batch_dims(ta: bool, tb: bool) -> None:
    a, b = rand((2, 1, 3, 4), seed=3), rand((5, 4, 6), seed=4)
    a_in = np.swapaxes(a, -1, -2).copy() if ta else a
    b_in = np.swapaxes(b, -1, -2).copy() if tb else b
    out = one("npu.batch_matmul", a_in, b_in, transpose_a=ta, transpose_b=tb)
    expected = np.einsum("xymk,ykn->xymn", f64(a), f64(np.broadcast_to(b, (5, 4, 6))))
    assert out.shape == (2, 5, 3, 6)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_batch_matmul_f16_and_bad_batch() -> None:
    a, b = rand((3, 2, 16), F16, 1), rand((3, 16, 2), F16, 2)
    out = one("npu.batch_matmul", a, b)
    expected = np.stack([f64(a[i]) @ f64(b[i]) for i in range(3)]).astype(np.float32)
    assert out.dtype == F16
    np.testing.assert_allclose(f64(out), expected.astype(F16), rtol=1e-3)
    with pytest.raises(KernelError, match=r"npu\.batch_matmul"):
        one("npu.batch_matmul", rand((2, 2, 3)), rand((3, 3, 2)))


# ------------------------------------------------------------------------- elementwise

BINARY: dict[str, Callable[[Array, Array], Array]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "maximum": lambda a, b: np.where(a > b, a, b),
}


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize("dt", [F32, F16, BF16])
def test_binary_broadcast(op: str, dt: np.dtype[Any]) -> None:
    a = rand((2, 3, 4), dt, 1)
    b = rand((3, 1), dt, 2, positive=True)
    out = one(f"npu.{op}", a, b)
    expected = BINARY[op](a.astype(np.float32), b.astype(np.float32)).astype(dt)
    assert_same(out, expected)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "maximum"])
def test_binary_int32(op: str) -> None:
    a = np.array([[5, -3, 7]], dtype=np.int32)
    b = np.array([[2], [-4]], dtype=np.int32)
    expected = BINARY[op](a.astype(np.int64), b.astype(np.int64)).astype(np.int32)
    assert_same(one(f"npu.{op}", a, b), expected)


def test_int_div_truncates_toward_zero_and_by_zero_is_zero() -> None:
    a = np.array([7, -7, 7, -7, 5], dtype=np.int32)
    b = np.array([2, 2, -2, -2, 0], dtype=np.int32)
    assert_same(one("npu.div", a, b), np.array([3, -3, -3, 3, 0], dtype=np.int32))


def test_float_div_by_zero_is_inf_without_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = one("npu.div", np.array([1.0, -1.0, 0.0], F32), np.zeros(3, F32))
    assert out[0] == np.inf and out[1] == -np.inf and np.isnan(out[2])


def test_binary_shape_mismatch_is_kernel_error() -> None:
    with pytest.raises(KernelError, match=r"npu\.add"):
        one("npu.add", rand((2, 3)), rand((4,)))


def _gelu_exact(x: Array) -> Array:
    return np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.ravel()]).reshape(
        x.shape
    )


def _gelu_tanh(x: Array) -> Array:
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


UNARY: dict[str, tuple[Callable[[Array], Array], bool]] = {
    # name: (f64 reference, needs positive input)
    "neg": (lambda x: -x, False),
    "exp": (np.exp, False),
    "sqrt": (np.sqrt, True),
    "rsqrt": (lambda x: 1 / np.sqrt(x), True),
    "relu": (lambda x: np.where(x > 0, x, 0.0), False),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), False),
    "silu": (lambda x: x / (1 + np.exp(-x)), False),
    "gelu": (_gelu_exact, False),
}


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("dt", [F32, F16, BF16])
def test_unary(op: str, dt: np.dtype[Any]) -> None:
    ref, positive = UNARY[op]
    x = rand((4, 33), dt, 5, positive=positive)
    out = one(f"npu.{op}", x)
    assert out.dtype == dt and out.shape == x.shape
    expected = ref(f64(x))
    if dt == F32:
        np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-7)
    else:
        # Computed in f32 and rounded once: within one low-precision ulp of the truth.
        eps = eps_of(dt)
        np.testing.assert_allclose(f64(out), expected, rtol=eps, atol=eps * 1e-3)


def test_gelu_tanh_variant() -> None:
    x = rand((64,), seed=7) * np.float32(4)
    out = one("npu.gelu", x, approximate="tanh")
    np.testing.assert_allclose(out, _gelu_tanh(f64(x)), rtol=1e-6, atol=1e-7)
    # tanh and erf variants differ measurably somewhere in [-4, 4].
    assert np.max(np.abs(f64(out) - _gelu_exact(f64(x)))) > 1e-5
    with pytest.raises(KernelError, match="approximate"):
        one("npu.gelu", x, approximate="fast")


def test_sigmoid_and_silu_are_stable_at_extremes() -> None:
    x = np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0], F32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = one("npu.sigmoid", x)
        si = one("npu.silu", x)
    assert s[0] == 0.0 and s[2] == 0.5 and s[4] == 1.0
    assert si[0] == 0.0 and si[4] == 1000.0 and np.all(np.isfinite(si))


def test_neg_and_relu_int() -> None:
    x = np.array([-3, 0, 4], dtype=np.int64)
    assert_same(one("npu.neg", x), np.array([3, 0, -4], dtype=np.int64))
    assert_same(one("npu.relu", x), np.array([0, 0, 4], dtype=np.int64))


def test_cast() -> None:
    x = np.array([1.7, -1.7, 3e9, -3e9, np.nan, 0.0], F32)
    # Truncate toward zero, saturate out of range, NaN -> 0.
    expected = np.array([1, -1, 2**31 - 1, -(2**31), 0, 0], np.int32)
    assert_same(one("npu.cast", x, **{RESULT_DTYPES: ("i32",)}), expected)
    assert_same(
        one("npu.cast", x, **{RESULT_DTYPES: ("i1",)}),
        np.array([True, True, True, True, True, False]),
    )
    y = rand((10,), seed=3)
    assert_same(one("npu.cast", y, **{RESULT_DTYPES: (F16,)}), y.astype(np.float16))
    assert_same(one("npu.cast", y, **{RESULT_DTYPES: ("bf16",)}), y.astype(BF16))
    b = y.astype(BF16)
    assert_same(one("npu.cast", b, **{RESULT_DTYPES: ("f32",)}), b.astype(np.float32))
    i = np.array([1, -2, 300], np.int32)
    assert_same(one("npu.cast", i, **{RESULT_DTYPES: ("bf16",)}), i.astype(BF16))
    with pytest.raises(KernelError, match="result_dtypes"):
        one("npu.cast", y)


# ----------------------------------------------------------------------------- vector


@pytest.mark.parametrize("dt", [F32, F16])
def test_swiglu(dt: np.dtype[Any]) -> None:
    x = rand((3, 8), dt, 2)
    xf = f64(x)
    a, b = xf[:, :4], xf[:, 4:]
    expected = a / (1 + np.exp(-a)) * b
    out = one("npu.swiglu", x)
    assert out.shape == (3, 4) and out.dtype == dt
    np.testing.assert_allclose(f64(out), expected, rtol=1e-6 if dt == F32 else 1e-3, atol=1e-6)


def test_swiglu_axis_and_odd_error() -> None:
    x = rand((4, 3), seed=4)
    xf = f64(x)
    expected = xf[:2] / (1 + np.exp(-xf[:2])) * xf[2:]
    np.testing.assert_allclose(one("npu.swiglu", x, axis=0), expected, rtol=1e-6)
    with pytest.raises(KernelError, match="odd"):
        one("npu.swiglu", x)


@pytest.mark.parametrize("dt", [F32, F16, BF16])
def test_softmax(dt: np.dtype[Any]) -> None:
    x = rand((3, 7), dt, 8)
    e = np.exp(f64(x))
    out = one("npu.softmax", x)
    assert out.dtype == dt
    rtol = 1e-6 if dt == F32 else eps_of(dt)
    np.testing.assert_allclose(f64(out), e / e.sum(-1, keepdims=True), rtol=rtol)
    out0 = one("npu.softmax", x, axis=0)
    np.testing.assert_allclose(f64(out0), e / e.sum(0, keepdims=True), rtol=1e-2)


def test_softmax_is_numerically_stable() -> None:
    x = np.array([[1000.0, 1000.0], [-1000.0, 0.0]], F32)
    out = one("npu.softmax", x)
    np.testing.assert_allclose(out, [[0.5, 0.5], [0.0, 1.0]])


@pytest.mark.parametrize("dt", [F32, F16, BF16])
def test_rms_norm(dt: np.dtype[Any]) -> None:
    x, g = rand((2, 3, 16), dt, 1), rand((16,), dt, 2)
    eps = 1e-5
    xf = x.astype(np.float32)
    expected = xf / np.sqrt((xf * xf).mean(-1, keepdims=True) + np.float32(eps))
    expected = (expected * g.astype(np.float32)).astype(dt)
    out = one("npu.rms_norm", x, g, epsilon=eps)
    assert out.dtype == dt
    np.testing.assert_allclose(f64(out), f64(expected), rtol=eps_of(dt))


def test_rms_norm_default_epsilon() -> None:
    x = np.zeros((1, 4), F32)
    x[0, 0] = 1e-4
    g = np.ones(4, F32)
    # mean(x^2) = 2.5e-9 is tiny against eps = 1e-6: the default eps is visible.
    expected = 1e-4 / math.sqrt(2.5e-9 + 1e-6)
    np.testing.assert_allclose(one("npu.rms_norm", x, g)[0, 0], expected, rtol=1e-5)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axes", [(0, 2), (-1,), (1,), ()])
def test_reductions(axes: tuple[int, ...], keepdims: bool) -> None:
    x = rand((2, 3, 4), seed=9)
    attrs: dict[str, Any] = {"axes": axes}
    if keepdims:
        attrs["keepdims"] = True
    s = one("npu.reduce_sum", x, **attrs)
    m = one("npu.reduce_max", x, **attrs)
    np.testing.assert_allclose(s, f64(x).sum(axis=axes, keepdims=keepdims), rtol=1e-6, atol=1e-6)
    assert_same(m, np.asarray(np.amax(x, axis=axes, keepdims=keepdims)))


def test_reductions_default_all_axes_and_errors() -> None:
    x = rand((2, 3), seed=1)
    out = one("npu.reduce_sum", x)
    assert out.shape == () and isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, f64(x).sum(), rtol=1e-6)
    with pytest.raises(KernelError, match="repeated"):
        one("npu.reduce_sum", x, axes=(1, -1))
    with pytest.raises(KernelError, match="out of range"):
        one("npu.reduce_max", x, axes=(2,))
    with pytest.raises(KernelError, match="empty"):
        one("npu.reduce_max", np.zeros((0, 2), F32), axes=(0,))


@pytest.mark.parametrize("dt", [F16, BF16])
def test_reduce_sum_low_precision_accumulates_in_f32(dt: np.dtype[Any]) -> None:
    # 2048 + 1 rounds back to 2048 in f16; the f32 sum 2056 is representable in both types.
    x = np.array([2048] + [1] * 8, dtype=dt)
    assert_same(one("npu.reduce_sum", x, axes=(0,)), np.array(2056, dtype=dt))
    xi = np.array([2048] + [1] * 8, dtype=np.int32)
    assert_same(one("npu.reduce_sum", xi, axes=(0,)), np.array(2056, dtype=np.int32))


def test_reduce_max_bf16_and_int() -> None:
    x = rand((3, 5), BF16, 4)
    assert_same(one("npu.reduce_max", x, axes=(1,)), f64(x).max(1).astype(BF16))
    xi = np.array([[3, -9], [7, 2]], np.int32)
    assert_same(one("npu.reduce_max", xi, axes=(0,)), np.array([7, 2], np.int32))


# ---------------------------------------------------------------------- data movement


def test_transpose() -> None:
    x = rand((2, 3, 4), BF16, 1)
    out = one("npu.transpose", x, perm=(2, 0, 1))
    expected = np.empty((4, 2, 3), BF16)
    for i, j, k in np.ndindex(2, 3, 4):
        expected[k, i, j] = x[i, j, k]
    assert_same(out, expected)
    with pytest.raises(KernelError, match="permutation"):
        one("npu.transpose", x, perm=(0, 0, 1))
    with pytest.raises(KernelError, match="perm"):
        one("npu.transpose", x)


def test_reshape() -> None:
    x = rand((2, 6), seed=1)
    assert_same(one("npu.reshape", x, **shape_of((3, 4))), x.ravel().reshape(3, 4))
    assert_same(one("npu.reshape", x, **shape_of((None, 3))), x.ravel().reshape(4, 3))
    assert_same(one("npu.reshape", x, **shape_of((-1,))), x.ravel())
    with pytest.raises(KernelError, match="result_shapes"):
        one("npu.reshape", x)
    with pytest.raises(KernelError, match=r"npu\.reshape"):
        one("npu.reshape", x, **shape_of((5,)))


def test_concat() -> None:
    a, b, c = rand((2, 1), seed=1), rand((2, 3), seed=2), rand((2, 2), seed=3)
    out = one("npu.concat", a, b, c)
    assert out.shape == (2, 6)
    assert_same(out[:, :1], a)
    assert_same(out[:, 1:4], b)
    assert_same(out[:, 4:], c)
    out0 = one("npu.concat", b, b, axis=0)
    assert out0.shape == (4, 3)
    assert_same(out0[2:], b)
    with pytest.raises(KernelError, match="rank"):
        one("npu.concat", a, rand((2,)))
    with pytest.raises(KernelError, match=r"npu\.concat"):
        kernel_for("npu.concat")([], {})


def test_slice() -> None:
    x = np.arange(5 * 6, dtype=np.int32).reshape(5, 6)
    out = one("npu.slice", x, offsets=(1, 0), sizes=(2, 3), strides=(1, 2))
    assert_same(out, np.array([[6, 8, 10], [12, 14, 16]], np.int32))
    out = one("npu.slice", x, offsets=(4, 5), sizes=(1, 1))
    assert_same(out, np.array([[29]], np.int32))
    assert one("npu.slice", x, offsets=(5, 0), sizes=(0, 6)).shape == (0, 6)
    with pytest.raises(KernelError, match="exceed"):
        one("npu.slice", x, offsets=(0, 4), sizes=(1, 2), strides=(1, 2))
    with pytest.raises(KernelError, match="rank"):
        one("npu.slice", x, offsets=(0,), sizes=(1,))


def test_gather() -> None:
    data = rand((5, 3), seed=2)
    idx = np.array([4, 0, 4, -1], np.int64)
    out = one("npu.gather", data, idx)
    assert_same(out, np.stack([data[4], data[0], data[4], data[4]]))
    idx2 = np.array([[2, 0], [1, 1]], np.int32)
    out = one("npu.gather", data, idx2, axis=1)
    expected = np.empty((5, 2, 2), F32)
    for r, i, j in np.ndindex(5, 2, 2):
        expected[r, i, j] = data[r, idx2[i, j]]
    assert_same(out, expected)
    with pytest.raises(KernelError, match=r"npu\.gather"):
        one("npu.gather", data, np.array([5]))
    with pytest.raises(KernelError, match="integers"):
        one("npu.gather", data, np.array([1.0]))


def _topk_reference(row: Array, k: int) -> tuple[list[float], list[int]]:
    order = sorted(range(len(row)), key=lambda i: (-float(row[i]), i))[:k]
    return [float(row[i]) for i in order], order


def test_topk_ties_lower_index_first() -> None:
    x = np.array([1, 3, 3, 2, 3], F32)
    values, indices = run("npu.topk", x, k=3)
    assert_same(values, np.array([3, 3, 3], F32))
    assert_same(indices, np.array([1, 2, 4], np.int64))


@pytest.mark.parametrize("dt", [F32, F16, BF16, np.dtype(np.int32)])
def test_topk_matches_brute_force(dt: np.dtype[Any]) -> None:
    x = np.random.default_rng(3).integers(0, 4, (3, 9)).astype(dt)  # many ties
    values, indices = run("npu.topk", x, k=4)
    assert values.dtype == dt and indices.dtype == np.int64
    for r in range(3):
        vals, idx = _topk_reference(x[r], 4)
        assert f64(values[r]).tolist() == vals
        assert indices[r].tolist() == idx


def test_topk_axis0_nan_and_errors() -> None:
    x = np.array([[1.0, 5.0], [np.nan, 5.0], [2.0, 7.0]], F32)
    values, indices = run("npu.topk", x, k=2, axis=0)
    assert indices.tolist() == [[1, 2], [2, 0]]  # NaN ranks highest; 5 = 5 -> index 0
    assert np.isnan(values[0, 0]) and values[1, 0] == 2.0 and values[:, 1].tolist() == [7, 5]
    with pytest.raises(KernelError, match="k = 4"):
        run("npu.topk", x, k=4, axis=0)
    with pytest.raises(KernelError, match="'k'"):
        run("npu.topk", x)


@pytest.mark.parametrize("dt", [F32, BF16, np.dtype(np.int32), np.dtype(np.bool_)])
def test_nonzero(dt: np.dtype[Any]) -> None:
    x = (np.random.default_rng(1).integers(0, 3, (3, 4, 2)) % 2).astype(dt)
    out = one("npu.nonzero", x)
    expected = [list(i) for i in np.ndindex(x.shape) if float(x[i]) != 0]
    assert out.dtype == np.int64 and out.shape == (len(expected), 3)
    assert out.tolist() == expected


def test_nonzero_empty_and_nan() -> None:
    assert one("npu.nonzero", np.zeros((2, 5), F32)).shape == (0, 2)
    assert one("npu.nonzero", np.array([0.0, np.nan], F32)).tolist() == [[1]]


# ------------------------------------------------------------------------ collectives


def _per_rank(g: int, shape: tuple[int, ...], dt: np.dtype[Any] = F32) -> Array:
    # Small integers: every sum is exact in f32, so exact comparisons are valid.
    return np.random.default_rng(g).integers(-4, 5, (g, *shape)).astype(dt)


@pytest.mark.parametrize("g", [2, 4])
def test_all_reduce(g: int) -> None:
    x = _per_rank(g, (8, 3))
    out = one("npu.all_reduce", x, group_size=g, mode="aiv")
    total = f64(x).sum(axis=0)
    assert out.shape == x.shape
    for r in range(g):
        np.testing.assert_array_equal(out[r], total)


@pytest.mark.parametrize("g", [2, 4])
def test_reduce_scatter_and_all_gather(g: int) -> None:
    x = _per_rank(g, (8, 3))
    rs = one("npu.reduce_scatter", x, group_size=g, mode="sdma")
    total = f64(x).sum(axis=0)
    part = 8 // g
    assert rs.shape == (g, part, 3)
    for r in range(g):
        np.testing.assert_array_equal(rs[r], total[r * part : (r + 1) * part])
    ag = one("npu.all_gather", x, group_size=g)
    assert ag.shape == (g, 8 * g, 3)
    for r in range(g):
        np.testing.assert_array_equal(ag[r], np.concatenate([x[s] for s in range(g)]))
    # reduce_scatter followed by all_gather is all_reduce.
    assert_same(one("npu.all_gather", rs), one("npu.all_reduce", x))


@pytest.mark.parametrize("g", [2, 4])
def test_all_to_all(g: int) -> None:
    x = _per_rank(g, (4 * g, 2), np.dtype(np.int32))
    out = one("npu.all_to_all", x, group_size=g)
    c = 4
    for r in range(g):
        expected = np.concatenate([x[s, r * c : (r + 1) * c] for s in range(g)])
        assert_same(out[r], expected)
    assert_same(one("npu.all_to_all", out), x)  # the exchange is an involution


@pytest.mark.parametrize("dt", [F16, BF16])
def test_collective_sums_accumulate_in_f32(dt: np.dtype[Any]) -> None:
    # Rank 0 holds 256, ranks 1..3 hold 1: in f32, 259; a low-precision running sum
    # would round each +1 away. The reference is the f32 sum cast once.
    x = np.array([[256.0], [1.0], [1.0], [1.0]], dtype=dt)
    expected = np.array([259.0], np.float32).astype(dt)
    out = one("npu.all_reduce", x)
    for r in range(4):
        assert_same(out[r], expected)
    assert_same(one("npu.reduce_scatter", np.repeat(x, 4, axis=1))[:, 0], np.repeat(expected, 4))


def test_collective_errors() -> None:
    x = _per_rank(2, (3,))
    with pytest.raises(KernelError, match="group_size"):
        one("npu.all_reduce", x, group_size=4)
    with pytest.raises(KernelError, match="divisible"):
        one("npu.reduce_scatter", x)
    with pytest.raises(KernelError, match="divisible"):
        one("npu.all_to_all", x)
    with pytest.raises(KernelError, match="rank axis"):
        one("npu.all_gather", np.ones(3, F32))


# -------------------------------------------------------------------- input generation


@pytest.mark.parametrize("name", ["f16", "bf16", "f32", "i32", "i64", "i1"])
def test_random_input_ranges(name: str) -> None:
    dt = numpy_dtype(name)
    x = random_input((50, 40), name, np.random.default_rng(0))
    p = random_input((50, 40), dt, np.random.default_rng(0), positive=True)
    assert x.dtype == dt and p.dtype == dt and x.shape == (50, 40)
    if name == "i1":
        assert set(np.unique(x).tolist()) == {False, True}
    elif name.startswith("i"):
        assert x.min() >= 0 and x.max() < 8 and p.min() >= 1
    else:
        assert f64(x).min() >= -1 and f64(x).max() <= 1 and f64(x).min() < 0
        assert f64(p).min() >= 0.5 and f64(p).max() <= 1.5
    again = random_input((50, 40), name, np.random.default_rng(0))
    assert_same(again, x)


def test_random_input_high_and_scalar() -> None:
    idx = random_input((100,), "i64", np.random.default_rng(1), high=3)
    assert set(idx.tolist()) == {0, 1, 2}
    scalar = random_input((), "f32", np.random.default_rng(1))
    assert isinstance(scalar, np.ndarray) and scalar.shape == ()


def test_positive_domain_ops_are_finite_on_positive_inputs() -> None:
    assert positive_domain_ops == {"npu.sqrt", "npu.rsqrt", "npu.div"}
    assert positive_operands["npu.div"] == {1}
    rng = np.random.default_rng(2)
    for op in sorted(positive_domain_ops):
        n = 2 if op == "npu.div" else 1
        ins = [random_input((64,), "f16", rng, i in positive_operands[op]) for i in range(n)]
        assert np.all(np.isfinite(f64(one(op, *ins))))


# --------------------------------------------------------------------------- property


@settings(max_examples=60, deadline=None)
@given(
    op=st.sampled_from(sorted(BINARY)),
    shapes=mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=4),
    dtype=st.sampled_from(["f32", "f16", "bf16"]),
    seed=st.integers(0, 2**16),
)
def test_binary_ops_broadcast_like_numpy(op: str, shapes: Any, dtype: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a_shape, b_shape = shapes.input_shapes
    a = random_input(a_shape, dtype, rng)
    b = random_input(b_shape, dtype, rng, positive=op == "div")
    out = one(f"npu.{op}", a, b)
    assert out.shape == np.broadcast_shapes(a_shape, b_shape) == shapes.result_shape
    expected = BINARY[op](a.astype(np.float32), b.astype(np.float32)).astype(numpy_dtype(dtype))
    assert_same(out, expected)
