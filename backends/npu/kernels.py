"""Numeric reference kernels for the ``npu`` dialect: one numpy function per op.

The interpreter (``backends/npu/interpreters/npu.py``) looks a kernel up by op name
in :data:`KERNELS` (or with :func:`kernel_for`, which raises
:class:`MissingKernelError`) and calls it as ``kernel(inputs, attrs)``; it returns the
op's results as a list of fresh numpy arrays (never views of the inputs, so the
interpreter may mutate or alias results freely).

This module depends only on numpy, ml_dtypes and the standard library, so it can be
tested and reused without xDSL.

Attribute convention (:data:`KernelAttrs`)
    ``attrs`` is a plain ``Mapping[str, object]`` holding the op's attributes, already
    decoded to Python values and keyed by their IR spelling (docs/ir.md):

    - integer attrs (``axis``, ``k``, ``group_size``) -> ``int``;
    - ``array<i64: ...>`` attrs (``axes``, ``perm``, ``offsets``, ``sizes``,
      ``strides``) -> a sequence of ``int``;
    - float attrs (``epsilon``) -> ``float``; string attrs (``approximate``,
      ``mode``, ``group``) -> ``str``;
    - unit attrs (``transpose_a``, ``transpose_b``, ``keepdims``) are *set* when the key
      is present with any value other than ``False`` (so ``True``, ``None`` or the raw
      attribute object all work) and unset when absent or ``False``.

    Two reserved keys carry the op's result types, which some kernels need
    (``reshape`` and ``cast`` take everything from the result type):

    - :data:`RESULT_SHAPES` (``"result_shapes"``): one shape tuple per result; a
      dynamic dim may be ``None`` or negative (only ``reshape`` reads shapes, and it
      lets one dim be inferred);
    - :data:`RESULT_DTYPES` (``"result_dtypes"``): one dtype per result, as an
      ``np.dtype`` or an element-type name (``"f16"``, ``"bf16"``, ...).

    Both are optional except where noted; without them a kernel returns its natural
    dtype (the first input's dtype; i64 for indices). :func:`kernel_attrs` builds such
    a dict.

Numeric rules (these make results deterministic and independent of numpy's
low-precision code paths)
    - f16 / bf16 are computed in f32 and cast back to the result dtype once at the end;
      this includes matmul accumulation (like the cube unit) and every sum (reductions,
      softmax, rms_norm, collectives). f32 is computed in f32; f64 stays f64. An f16/bf16
      matmul adds its f32 products in one fixed order, PyTorch's on CPU
      (:func:`_partial_sum_matmul`), so torch programs match eager bit for bit.
    - Integer and i1 values are computed in i64 and cast back (wrapping for i32; for i1
      "non-zero is true", so ``add``/``maximum`` act as *or*, ``mul`` as *and*, ``sub``
      as *xor*). Integer ``div`` truncates toward zero (like ``arith.divsi``); x/0 is 0.
    - Transcendental ops (exp, sqrt, gelu, ...) on integer inputs are computed in f64.
    - Conversions to an integer type truncate toward zero and saturate; NaN becomes 0.
    - Exact ``gelu`` uses ``math.erf`` elementwise in f64 (no scipy).
    - Floating-point warnings (overflow, division by zero) are silenced: inf/NaN are
      values, not errors.

Collective convention
    A collective kernel receives the tensors of *all ranks of one group* at once: its
    single input has a leading rank axis of length G (the group), and its output also
    has a leading rank axis of length G (rank r's result at index r). ``group_size``, if
    given, must equal G; ``mode`` and ``group`` do not change the numbers. Splitting and
    joining happen on dim 0 of each rank's tensor (array axis 1):

    - ``all_reduce``: ``[G, *s] -> [G, *s]``, the sum over ranks, given to every rank;
    - ``reduce_scatter``: ``[G, d0, *s] -> [G, d0/G, *s]``, the sum over ranks split into
      G parts along dim 0, rank r keeps part r;
    - ``all_gather``: ``[G, d0, *s] -> [G, G*d0, *s]``, the ranks' tensors concatenated
      along dim 0 in rank order, given to every rank;
    - ``all_to_all``: ``[G, d0, *s] -> [G, d0, *s]``, each rank splits dim 0 into G
      chunks; rank r receives chunk r of every rank, concatenated in rank order.

    Non-collective kernels see one rank's tensors (no rank axis): when values carry a
    leading rank axis, the interpreter applies them rank by rank, and groups ranks for
    collectives.

Input generation
    :data:`positive_domain_ops` lists ops that are undefined (NaN/inf) for some inputs
    in the default range [-1, 1]; :data:`positive_operands` says which operands. An
    input generator should draw those operands with ``random_input(...,
    positive=True)`` (floats in [0.5, 1.5], ints in [1, 8)); if it cannot trace which
    function arguments reach them, it should make every floating input of a function
    that contains such an op positive. Index operands (``gather``) need ``high=`` set
    to the indexed dimension.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt

__all__ = [
    "KERNELS",
    "RESULT_DTYPES",
    "RESULT_SHAPES",
    "Kernel",
    "KernelAttrs",
    "KernelError",
    "MissingKernelError",
    "dtype_name",
    "kernel_attrs",
    "kernel_for",
    "numpy_dtype",
    "positive_domain_ops",
    "positive_operands",
    "random_input",
]

Array = npt.NDArray[Any]
KernelAttrs = Mapping[str, object]
Kernel = Callable[[Sequence[Array], KernelAttrs], list[Array]]

RESULT_SHAPES = "result_shapes"
RESULT_DTYPES = "result_dtypes"


class KernelError(ValueError):
    """An op's operands or attributes are invalid for its kernel (message names the op)."""


class MissingKernelError(KeyError):
    """No numeric kernel is registered for the op."""

    def __init__(self, op_name: str, reason: str = "") -> None:
        super().__init__(op_name)
        self.op_name = op_name
        self.reason = reason

    def __str__(self) -> str:
        # KeyError's default str() is the repr of its argument; give a readable message.
        why = self.reason or "backends/npu/kernels.py"
        return f"no numeric kernel for op '{self.op_name}' ({why})"


# ----------------------------------------------------------------------------- dtypes

_F16 = np.dtype(np.float16)
_BF16 = np.dtype(ml_dtypes.bfloat16)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)

_DTYPES: dict[str, np.dtype[Any]] = {
    "f16": _F16,
    "bf16": _BF16,
    "f32": _F32,
    "f64": _F64,
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": _I64,
    "ui8": np.dtype(np.uint8),
    "ui16": np.dtype(np.uint16),
    "ui32": np.dtype(np.uint32),
    "ui64": np.dtype(np.uint64),
    "i1": _BOOL,
    "c64": np.dtype(np.complex64),
    "c128": np.dtype(np.complex128),
}
_NAMES: dict[np.dtype[Any], str] = {dt: name for name, dt in _DTYPES.items()}


def numpy_dtype(name: str) -> np.dtype[Any]:
    """The numpy dtype of an IR element type: "f16", "bf16", "f32", "i8", "ui8", "i64", "i1", ..."""
    try:
        return _DTYPES[name]
    except KeyError:
        raise ValueError(
            f"unknown element type '{name}' (expected one of {', '.join(_DTYPES)})"
        ) from None


def dtype_name(dtype: npt.DTypeLike) -> str:
    """The IR element-type name of a numpy dtype (inverse of :func:`numpy_dtype`)."""
    dt = np.dtype(dtype)
    try:
        return _NAMES[dt]
    except KeyError:
        raise ValueError(f"numpy dtype {dt} has no npu element type") from None


def _as_dtype(value: object) -> np.dtype[Any]:
    if isinstance(value, str) and value in _DTYPES:
        return _DTYPES[value]
    dt: np.dtype[Any] = np.dtype(value)  # type: ignore[call-overload]
    return dt


def _is_float(dt: np.dtype[Any]) -> bool:
    # bfloat16 has kind 'V' in numpy, so check it explicitly.
    return dt == _BF16 or dt.kind == "f"


def _is_int(dt: np.dtype[Any]) -> bool:
    return dt.kind in "iu"


def _float_compute(dt: np.dtype[Any]) -> np.dtype[Any]:
    """Dtype to evaluate float math in: f32 for <=32-bit floats, f64 otherwise."""
    if dt == _F64 or not _is_float(dt):
        # Integers go to f64 so that i32/i64 values keep (nearly) all their digits.
        return _F64
    return _F32


def _acc_dtype(dt: np.dtype[Any]) -> np.dtype[Any]:
    """Dtype for exact-as-possible arithmetic/accumulation: float -> f32/f64, int -> i64."""
    return _float_compute(dt) if _is_float(dt) else _I64


def _pair_compute(a: np.dtype[Any], b: np.dtype[Any]) -> np.dtype[Any]:
    """Compute dtype for a two-operand op: f64 if either is f64, f32 if either is a
    float, i64 for integers/i1."""
    if _F64 in (a, b):
        return _F64
    return _F32 if _is_float(a) or _is_float(b) else _I64


def _convert(x: object, dt: np.dtype[Any]) -> Array:
    """Cast to ``dt`` deterministically, always returning a fresh array."""
    arr = np.asarray(x)
    if arr.dtype == dt:
        return arr.copy()
    if arr.dtype == _BF16 or arr.dtype == _F16:
        # Widen first: ml_dtypes/numpy casts out of low precision are not all direct.
        arr = arr.astype(_F32)
    if dt == _BOOL:
        return np.asarray(arr != 0)  # NaN != 0, so NaN is true like in C
    if _is_int(dt) and _is_float(arr.dtype):
        # numpy's float->int cast is undefined out of range; saturate like the hardware.
        info = np.iinfo(dt)
        lo, hi = -(2.0 ** (info.bits - 1)), 2.0 ** (info.bits - 1)
        if info.min == 0:
            lo, hi = 0.0, 2.0**info.bits
        f = np.trunc(arr.astype(_F64))
        big, small, nan = f >= hi, f < lo, np.isnan(f)
        out = np.where(big | small | nan, 0.0, f).astype(dt)
        out[big] = info.max
        out[small] = info.min
        return out
    return arr.astype(dt)


# ------------------------------------------------------------------------ attributes


def kernel_attrs(
    attrs: Mapping[str, object] | None = None,
    *,
    result_shapes: Iterable[Sequence[int | None]] | None = None,
    result_dtypes: Iterable[npt.DTypeLike] | None = None,
    **more: object,
) -> dict[str, object]:
    """Build a :data:`KernelAttrs` dict (decoded attrs plus optional result types)."""
    out: dict[str, object] = dict(attrs or {})
    out.update(more)
    if result_shapes is not None:
        out[RESULT_SHAPES] = tuple(tuple(s) for s in result_shapes)
    if result_dtypes is not None:
        out[RESULT_DTYPES] = tuple(_as_dtype(d) for d in result_dtypes)
    return out


def _flag(attrs: KernelAttrs, name: str) -> bool:
    return name in attrs and attrs[name] is not False


def _int(attrs: KernelAttrs, name: str, default: int | None = None) -> int:
    value = attrs.get(name, default)
    if value is None:
        raise ValueError(f"missing required attribute '{name}'")
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"attribute '{name}' must be an integer, got {value!r}")
    return int(value)


def _ints(attrs: KernelAttrs, name: str) -> tuple[int, ...] | None:
    value = attrs.get(name)
    if value is None:
        return None
    if not isinstance(value, Iterable):
        raise ValueError(f"attribute '{name}' must be a sequence of integers, got {value!r}")
    items = tuple(value)
    if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in items):
        raise ValueError(f"attribute '{name}' must be a sequence of integers, got {value!r}")
    return tuple(int(v) for v in items)


def _float(attrs: KernelAttrs, name: str, default: float) -> float:
    value = attrs.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise ValueError(f"attribute '{name}' must be a number, got {value!r}")
    return float(value)


def _result_dtype(attrs: KernelAttrs, index: int, default: np.dtype[Any]) -> np.dtype[Any]:
    dtypes = attrs.get(RESULT_DTYPES)
    if dtypes is None:
        return default
    if not isinstance(dtypes, Sequence) or index >= len(dtypes):
        raise ValueError(f"'{RESULT_DTYPES}' has no entry for result #{index}")
    return _as_dtype(dtypes[index])


def _axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} out of range for rank {ndim}")
    return axis % ndim


# -------------------------------------------------------------------------- registry

KERNELS: dict[str, Kernel] = {}


def kernel_for(name: str) -> Kernel:
    """The kernel of op ``name`` (e.g. "npu.add"); :class:`MissingKernelError` if none."""
    try:
        return KERNELS[name]
    except KeyError:
        raise MissingKernelError(name) from None


_Impl = Callable[[list[Array], KernelAttrs], list[Array]]


def _register(name: str, arity: int | None) -> Callable[[_Impl], _Impl]:
    """Register ``fn`` as the kernel of ``name``; ``arity=None`` means variadic (>= 1)."""

    def decorate(fn: _Impl) -> _Impl:
        @functools.wraps(fn)
        def kernel(inputs: Sequence[Array], attrs: KernelAttrs) -> list[Array]:
            if arity is not None and len(inputs) != arity:
                raise KernelError(f"{name}: expects {arity} operand(s), got {len(inputs)}")
            if arity is None and not inputs:
                raise KernelError(f"{name}: expects at least one operand")
            arrays = [np.asarray(x) for x in inputs]
            try:
                # inf/NaN are legitimate results (e.g. x/0); warnings would only be noise.
                with np.errstate(all="ignore"):
                    return fn(arrays, attrs)
            except (ValueError, IndexError) as e:
                # One error type for the interpreter to report, always naming the op.
                raise KernelError(f"{name}: {e}") from e

        KERNELS[name] = kernel
        return fn

    return decorate


# ------------------------------------------------------------------------------ cube


def _matmul_core(a: Array, b: Array, attrs: KernelAttrs) -> Array:
    if _flag(attrs, "transpose_a"):
        a = np.swapaxes(a, -1, -2)
    if _flag(attrs, "transpose_b"):
        b = np.swapaxes(b, -1, -2)
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"contraction dims differ: {a.shape} x {b.shape} (after transpose flags)")
    out_dt = _result_dtype(attrs, 0, a.dtype)
    if a.dtype in _LOW_PRECISION and b.dtype in _LOW_PRECISION:
        return _convert(_partial_sum_matmul(a, b), out_dt)
    # f32 and f64 use numpy's matmul; ints accumulate in i64.
    acc = _pair_compute(a.dtype, b.dtype)
    return _convert(np.matmul(a.astype(acc), b.astype(acc)), out_dt)


_LOW_PRECISION = (_F16, _BF16)
_PARTIAL_SUMS = 4


def _partial_sum_matmul(a: Array, b: Array) -> Array:
    """The f32 product of two f16/bf16 operands, in one fixed summation order.

    Every product of two f16 (or bf16) values is exact in f32, so the result depends
    only on the order of the f32 additions.  numpy's matmul leaves that order to the
    BLAS build (it differs between CPUs); this fixes it to the order of PyTorch's CPU
    reference GEMM for reduced-precision types (ATen's ``BlasKernel.cpp``, which
    ``torch.mm`` uses for contiguous f16 operands): four f32 partial sums take the
    terms ``k = 0, 1, 2, 3 (mod 4)`` in turn, the terms after the last whole group of
    four go to the first, and the four are added in order at the end.  So an f16
    matmul from torch gives exactly eager PyTorch's bits on CPU (measured: 0 of 10^6
    elements differ on a 1000x1000x1000 product, where numpy's f32 matmul differs
    in 2,690, 198 of them by more than one f16 ulp, all in sums that cancel), and
    every program gives the same bits on every machine.  For bf16, PyTorch may
    route large products to oneDNN, whose order differs; transposed operands take
    other ATen loops.  The cube unit also accumulates in f32; its order is not
    public, so it is not modelled.
    """
    k = a.shape[-1]
    rows = np.moveaxis(a.astype(_F32), -1, 0)[..., :, None]  # [k, *batch, m, 1]
    cols = np.moveaxis(b.astype(_F32), -2, 0)[..., None, :]  # [k, *batch, 1, n]
    shape = np.broadcast_shapes(rows.shape[1:], cols.shape[1:])
    partial = np.zeros((_PARTIAL_SUMS, *shape), _F32)
    term = np.empty_like(partial)
    whole = k - k % _PARTIAL_SUMS
    for i in range(0, whole, _PARTIAL_SUMS):
        np.multiply(rows[i : i + _PARTIAL_SUMS], cols[i : i + _PARTIAL_SUMS], out=term)
        np.add(partial, term, out=partial)
    for i in range(whole, k):
        partial[0] += rows[i] * cols[i]
    total = partial[0]
    for lane in partial[1:]:
        total += lane
    return total


@_register("npu.matmul", 2)
def _matmul(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    a, b = inputs
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"operands must be 2-D, got {a.shape} and {b.shape}")
    return [_matmul_core(a, b, attrs)]


@_register("npu.batch_matmul", 2)
def _batch_matmul(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    a, b = inputs
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(f"operands must be at least 2-D, got {a.shape} and {b.shape}")
    # np.matmul broadcasts the leading batch dims and raises if they are incompatible.
    return [_matmul_core(a, b, attrs)]


# ------------------------------------------------------------------ elementwise ops

_BinFn = Callable[[Array, Array], Array]


def _int_div(a: Array, b: Array) -> Array:
    # a - fmod(a, b) is an exact multiple of b, so floor division of it truncates.
    safe = np.where(b == 0, 1, b)
    return np.where(b == 0, 0, (a - np.fmod(a, safe)) // safe)


def _make_binary(name: str, float_fn: _BinFn, int_fn: _BinFn) -> None:
    @_register(name, 2)
    def kernel(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
        a, b = inputs
        np.broadcast_shapes(a.shape, b.shape)  # clear error before any computation
        out_dt = _result_dtype(attrs, 0, a.dtype)
        cd = _pair_compute(a.dtype, b.dtype)
        fn = float_fn if _is_float(cd) else int_fn
        return [_convert(fn(a.astype(cd), b.astype(cd)), out_dt)]


_make_binary("npu.add", np.add, np.add)
_make_binary("npu.sub", np.subtract, np.subtract)
_make_binary("npu.mul", np.multiply, np.multiply)
_make_binary("npu.div", np.divide, _int_div)
_make_binary("npu.maximum", np.maximum, np.maximum)


_UnFn = Callable[[Array], Array]


def _sigmoid(x: Array) -> Array:
    # Stable for both signs: exp only ever sees -|x|, so it never overflows.
    z = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + z), z / (1 + z))


def _silu(x: Array) -> Array:
    return x * _sigmoid(x)


_erf_f64 = np.frompyfunc(math.erf, 1, 1)


def _erf(x: Array) -> Array:
    """erf evaluated with ``math.erf`` in f64 (exact to double precision, no scipy)."""
    return np.asarray(_erf_f64(x.astype(_F64)), dtype=_F64)


def _make_unary(name: str, fn: _UnFn, *, int_fn: _UnFn | None = None) -> None:
    """Register a unary op: ``fn`` on floats; ``int_fn`` on i64 (else ``fn`` in f64)."""

    @_register(name, 1)
    def kernel(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
        (x,) = inputs
        out_dt = _result_dtype(attrs, 0, x.dtype)
        if int_fn is not None and not _is_float(x.dtype):
            return [_convert(int_fn(x.astype(_I64)), out_dt)]
        return [_convert(fn(x.astype(_float_compute(x.dtype))), out_dt)]


_make_unary("npu.neg", np.negative, int_fn=np.negative)
_make_unary("npu.exp", np.exp)
_make_unary("npu.sqrt", np.sqrt)
_make_unary("npu.rsqrt", lambda x: 1 / np.sqrt(x))
_make_unary("npu.relu", lambda x: np.maximum(x, 0), int_fn=lambda x: np.maximum(x, 0))
_make_unary("npu.silu", _silu)
_make_unary("npu.sigmoid", _sigmoid)


@_register("npu.leaky_relu", 1)
def _leaky_relu(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (x,) = inputs
    slope = _float(attrs, "negative_slope", 0.0)
    xf = x.astype(_float_compute(x.dtype))
    return [_convert(np.where(xf > 0, xf, slope * xf), _result_dtype(attrs, 0, x.dtype))]


@_register("npu.gelu", 1)
def _gelu(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (x,) = inputs
    out_dt = _result_dtype(attrs, 0, x.dtype)
    approximate = attrs.get("approximate")
    if approximate in (None, "none"):
        # Whole formula in f64 so the exact variant is exact up to the final rounding.
        xf = x.astype(_F64)
        return [_convert(0.5 * xf * (1 + _erf(xf / math.sqrt(2.0))), out_dt)]
    if approximate == "tanh":
        xf = x.astype(_float_compute(x.dtype))
        c = math.sqrt(2.0 / math.pi)
        return [_convert(0.5 * xf * (1 + np.tanh(c * (xf + 0.044715 * xf**3))), out_dt)]
    raise ValueError(f"approximate must be absent, 'none' or 'tanh', got {approximate!r}")


@_register("npu.cast", 1)
def _cast(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (x,) = inputs
    if RESULT_DTYPES not in attrs:
        raise ValueError(f"needs '{RESULT_DTYPES}' (cast takes its dtype from the result)")
    return [_convert(x, _result_dtype(attrs, 0, x.dtype))]


# ------------------------------------------------------------------- vector compound


@_register("npu.swiglu", 1)
def _swiglu(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (x,) = inputs
    axis = _axis(_int(attrs, "axis", -1), x.ndim)
    if x.shape[axis] % 2:
        raise ValueError(f"axis {axis} of shape {x.shape} has odd length")
    a, b = np.split(x.astype(_float_compute(x.dtype)), 2, axis=axis)
    return [_convert(_silu(a) * b, _result_dtype(attrs, 0, x.dtype))]


@_register("npu.softmax", 1)
def _softmax(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (x,) = inputs
    axis = _axis(_int(attrs, "axis", -1), x.ndim)
    xf = x.astype(_float_compute(x.dtype))
    # Subtracting the max keeps exp <= 1: no overflow for large logits.
    e = np.exp(xf - np.max(xf, axis=axis, keepdims=True))
    return [_convert(e / np.sum(e, axis=axis, keepdims=True), _result_dtype(attrs, 0, x.dtype))]


@_register("npu.rms_norm", 2)
def _rms_norm(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    x, gamma = inputs
    if x.ndim < 1:
        raise ValueError("input must have at least one axis")
    eps = _float(attrs, "epsilon", 1e-6)
    cd = _float_compute(x.dtype)
    xf, gf = x.astype(cd), gamma.astype(cd)
    np.broadcast_shapes(xf.shape, gf.shape)
    ms = np.mean(xf * xf, axis=-1, keepdims=True)
    out = xf / np.sqrt(ms + np.asarray(eps, dtype=cd)) * gf
    return [_convert(out, _result_dtype(attrs, 0, x.dtype))]


def _reduce_axes(attrs: KernelAttrs, ndim: int) -> tuple[int, ...]:
    axes = _ints(attrs, "axes")
    if axes is None:  # no axes attribute: reduce everything
        return tuple(range(ndim))
    norm = tuple(_axis(a, ndim) for a in axes)
    if len(set(norm)) != len(norm):
        raise ValueError(f"repeated axis in {axes}")
    return norm


@_register("npu.reduce_sum", 1)
def _reduce_sum(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (x,) = inputs
    axes = _reduce_axes(attrs, x.ndim)
    s = np.sum(x.astype(_acc_dtype(x.dtype)), axis=axes, keepdims=_flag(attrs, "keepdims"))
    return [_convert(s, _result_dtype(attrs, 0, x.dtype))]


@_register("npu.reduce_max", 1)
def _reduce_max(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (x,) = inputs
    axes = _reduce_axes(attrs, x.ndim)
    if any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"reduce_max over an empty axis of shape {x.shape}")
    m = np.max(x.astype(_acc_dtype(x.dtype)), axis=axes, keepdims=_flag(attrs, "keepdims"))
    return [_convert(m, _result_dtype(attrs, 0, x.dtype))]


# -------------------------------------------------------------------- data movement


@_register("npu.transpose", 1)
def _transpose(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (x,) = inputs
    perm = _ints(attrs, "perm")
    if perm is None:
        raise ValueError("missing required attribute 'perm'")
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"perm {perm} is not a permutation of rank {x.ndim}")
    return [_convert(np.transpose(x, perm), _result_dtype(attrs, 0, x.dtype))]


@_register("npu.reshape", 1)
def _reshape(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (x,) = inputs
    shapes = attrs.get(RESULT_SHAPES)
    if not isinstance(shapes, Sequence) or not shapes:
        raise ValueError(f"needs '{RESULT_SHAPES}' (reshape takes its shape from the result)")
    # A dynamic dim (None or negative) is inferred from the element count.
    shape = tuple(-1 if d is None or d < 0 else int(d) for d in shapes[0])
    if shape.count(-1) > 1:
        raise ValueError(f"result shape {shapes[0]} has more than one dynamic dim")
    return [_convert(np.reshape(x, shape), _result_dtype(attrs, 0, x.dtype))]


@_register("npu.concat", None)
def _concat(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    ndim = inputs[0].ndim
    if any(x.ndim != ndim for x in inputs):
        raise ValueError(f"operands differ in rank: {[x.shape for x in inputs]}")
    axis = _axis(_int(attrs, "axis", -1), ndim)
    out_dt = _result_dtype(attrs, 0, inputs[0].dtype)
    return [np.concatenate([_convert(x, out_dt) for x in inputs], axis=axis)]


@_register("npu.slice", 1)
def _slice(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (x,) = inputs
    offsets, sizes = _ints(attrs, "offsets"), _ints(attrs, "sizes")
    if offsets is None or sizes is None:
        raise ValueError("needs attributes 'offsets' and 'sizes'")
    strides = _ints(attrs, "strides") or (1,) * x.ndim
    if not len(offsets) == len(sizes) == len(strides) == x.ndim:
        raise ValueError(
            f"offsets/sizes/strides {offsets}/{sizes}/{strides} do not match rank {x.ndim}"
        )
    index = []
    for d, (o, n, s, dim) in enumerate(zip(offsets, sizes, strides, x.shape, strict=True)):
        if o < 0 or n < 0 or s < 1:
            raise ValueError(f"dim {d}: need offset >= 0, size >= 0, stride >= 1")
        # `sizes` is the span read, as the dialect infers the result (ceil(n / s) elements)
        if o + n > dim:
            raise ValueError(f"dim {d}: offset {o}, size {n}, stride {s} exceed extent {dim}")
        index.append(slice(o, o + n, s))
    return [_convert(x[tuple(index)], _result_dtype(attrs, 0, x.dtype))]


@_register("npu.gather", 2)
def _gather(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    data, indices = inputs
    if not _is_int(indices.dtype):
        raise ValueError(f"indices must be integers, got {indices.dtype}")
    axis = _axis(_int(attrs, "axis", 0), data.ndim)
    # np.take semantics: out.shape = data.shape[:axis] + indices.shape + data.shape[axis+1:];
    # negative indices count from the end; out-of-range ones are an error.
    return [_convert(np.take(data, indices, axis=axis), _result_dtype(attrs, 0, data.dtype))]


@_register("npu.topk", 1)
def _topk(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (x,) = inputs
    if x.ndim < 1:
        raise ValueError("input must have at least one axis")
    axis = _axis(_int(attrs, "axis", -1), x.ndim)
    k = _int(attrs, "k")
    xa = np.moveaxis(x, axis, -1)
    n = xa.shape[-1]
    if not 0 <= k <= n:
        raise ValueError(f"k = {k} out of range for axis length {n}")
    key = xa.astype(_acc_dtype(x.dtype))
    # Descending with ties -> lower index first, without negating (which breaks on
    # unsigned/INT_MIN): stable-sort the reversed axis ascending, then reverse the order.
    # NaN sorts last ascending, so it ranks as the largest value (like torch.topk).
    order = np.argsort(key[..., ::-1], axis=-1, kind="stable")[..., ::-1]
    idx = (n - 1 - order)[..., :k]
    values = np.take_along_axis(xa, idx, axis=-1)
    return [
        _convert(np.moveaxis(values, -1, axis), _result_dtype(attrs, 0, x.dtype)),
        _convert(np.moveaxis(idx, -1, axis), _result_dtype(attrs, 1, _I64)),
    ]


@_register("npu.nonzero", 1)
def _nonzero(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (x,) = inputs
    mask = _convert(x, _BOOL)
    # [N, rank] coordinates in row-major order, like torch.nonzero.
    return [_convert(np.argwhere(mask), _result_dtype(attrs, 0, _I64))]


# ----------------------------------------------------------------------- collectives


def _group(x: Array, attrs: KernelAttrs, *, split: bool) -> int:
    """Validate the leading rank axis; ``split`` ops also need a per-rank dim 0."""
    if x.ndim < (2 if split else 1):
        raise ValueError(
            f"input {x.shape} needs a leading rank axis"
            + (" and a per-rank dim 0" if split else "")
        )
    g = int(x.shape[0])
    if "group_size" in attrs and _int(attrs, "group_size") != g:
        raise ValueError(f"group_size {attrs['group_size']} != rank axis length {g}")
    return g


def _rank_sum(x: Array) -> Array:
    # f16/bf16 partial sums accumulate in f32 (and ints in i64) before the final cast.
    return np.asarray(np.sum(x.astype(_acc_dtype(x.dtype)), axis=0))


@_register("npu.all_reduce", 1)
def _all_reduce(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (x,) = inputs
    _group(x, attrs, split=False)
    out = np.broadcast_to(_rank_sum(x), x.shape)
    return [_convert(out, _result_dtype(attrs, 0, x.dtype))]


@_register("npu.reduce_scatter", 1)
def _reduce_scatter(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (x,) = inputs
    g = _group(x, attrs, split=True)
    d0, rest = x.shape[1], x.shape[2:]
    if d0 % g:
        raise ValueError(f"dim 0 ({d0}) is not divisible by the group size {g}")
    out = _rank_sum(x).reshape(g, d0 // g, *rest)  # part r of dim 0 -> rank r
    return [_convert(out, _result_dtype(attrs, 0, x.dtype))]


@_register("npu.all_gather", 1)
def _all_gather(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (x,) = inputs
    g = _group(x, attrs, split=True)
    whole = x.reshape(g * x.shape[1], *x.shape[2:])  # rank-ordered concat along dim 0
    out = np.broadcast_to(whole, (g, *whole.shape))
    return [_convert(out, _result_dtype(attrs, 0, x.dtype))]


@_register("npu.all_to_all", 1)
def _all_to_all(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (x,) = inputs
    g = _group(x, attrs, split=True)
    d0, rest = x.shape[1], x.shape[2:]
    if d0 % g:
        raise ValueError(f"dim 0 ({d0}) is not divisible by the group size {g}")
    # [src, chunk, ...] -> [dst=chunk, src, ...]: rank r gets chunk r of every source.
    chunks = x.reshape(g, g, d0 // g, *rest)
    out = np.swapaxes(chunks, 0, 1).reshape(g, d0, *rest)
    return [_convert(out, _result_dtype(attrs, 0, x.dtype))]


# --------------------------------------------------------- convolution and pooling


def _window_ints(attrs: KernelAttrs, name: str, default: int, count: int) -> tuple[int, ...]:
    values = _ints(attrs, name)
    if values is None:
        return (default,) * count
    if len(values) != count:
        raise ValueError(f"'{name}' needs {count} values, got {len(values)}")
    return tuple(values)


def _windows(
    x: Array,
    kernel: tuple[int, int],
    strides: tuple[int, ...],
    dil: tuple[int, int],
    out: tuple[int, int],
) -> Array:
    """`[N, C, Ho, Wo, KH, KW]`: the input under every window position (x already padded)."""
    n, c = x.shape[:2]
    kh, kw = kernel
    ho, wo = out
    cols = np.empty((n, c, ho, wo, kh, kw), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            top, left = i * dil[0], j * dil[1]
            cols[:, :, :, :, i, j] = x[
                :,
                :,
                top : top + strides[0] * (ho - 1) + 1 : strides[0],
                left : left + strides[1] * (wo - 1) + 1 : strides[1],
            ]
    return cols


def _out_extent(size: int, k: int, s: int, pad: int, d: int, ceil: bool) -> int:
    span = size + pad - d * (k - 1) - 1
    if span < 0:
        raise ValueError(f"window {k} does not fit extent {size} with padding {pad}")
    return (-(-span // s) if ceil else span // s) + 1


@_register("npu.conv2d", None)
def _conv2d(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    if len(inputs) not in (2, 3):
        raise ValueError(f"expects input, filter and an optional bias, got {len(inputs)} operands")
    x, w = inputs[0], inputs[1]
    if x.ndim != 4 or w.ndim != 4:
        raise ValueError(f"input and filter must be 4-D, got {x.shape} and {w.shape}")
    strides = _window_ints(attrs, "strides", 1, 2)
    pads = _window_ints(attrs, "pads", 0, 4)
    dil = _window_ints(attrs, "dilations", 1, 2)
    groups = _int(attrs, "groups", 1)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    if c != cg * groups or o % groups:
        raise ValueError(
            f"channels do not match: input {x.shape}, filter {w.shape}, groups {groups}"
        )
    out_dt = _result_dtype(attrs, 0, x.dtype)
    acc = _pair_compute(x.dtype, w.dtype)
    xp = np.pad(x.astype(acc), ((0, 0), (0, 0), (pads[0], pads[1]), (pads[2], pads[3])))
    ho = _out_extent(h, kh, strides[0], pads[0] + pads[1], dil[0], False)
    wo = _out_extent(wd, kw, strides[1], pads[2] + pads[3], dil[1], False)
    cols = _windows(xp, (kh, kw), strides, (dil[0], dil[1]), (ho, wo))
    # One GEMM per group: [N, g, Cg, Ho, Wo, KH, KW] x [g, O/g, Cg, KH, KW].
    cols = cols.reshape(n, groups, cg, ho, wo, kh, kw)
    wg = w.astype(acc).reshape(groups, o // groups, cg, kh, kw)
    y = np.einsum("ngchwij,gocij->ngohw", cols, wg).reshape(n, o, ho, wo)
    if len(inputs) == 3:
        y = y + inputs[2].astype(acc).reshape(1, o, 1, 1)
    return [_convert(y, out_dt)]


@_register("npu.pool2d", 1)
def _pool2d(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (x,) = inputs
    if x.ndim != 4:
        raise ValueError(f"input must be 4-D (NCHW), got {x.shape}")
    kind = attrs.get("kind")
    if kind not in ("max", "avg"):
        raise ValueError(f"kind must be 'max' or 'avg', got {kind!r}")
    kh, kw = _window_ints(attrs, "window", 1, 2)
    strides = _window_ints(attrs, "strides", 1, 2)
    pads = _window_ints(attrs, "pads", 0, 4)
    ceil = _flag(attrs, "ceil_mode")
    ho = _out_extent(x.shape[2], kh, strides[0], pads[0] + pads[1], 1, ceil)
    wo = _out_extent(x.shape[3], kw, strides[1], pads[2] + pads[3], 1, ceil)
    # Windows that ceil mode lets run past the padded edge see -inf (max) or 0 (avg).
    extra_h = max(0, (ho - 1) * strides[0] + kh - (x.shape[2] + pads[0] + pads[1]))
    extra_w = max(0, (wo - 1) * strides[1] + kw - (x.shape[3] + pads[2] + pads[3]))
    acc = _acc_dtype(x.dtype) if _is_float(x.dtype) else _F64
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(
        x.astype(acc),
        ((0, 0), (0, 0), (pads[0], pads[1] + extra_h), (pads[2], pads[3] + extra_w)),
        constant_values=fill,
    )
    cols = _windows(xp, (kh, kw), strides, (1, 1), (ho, wo))
    y = cols.max(axis=(4, 5)) if kind == "max" else cols.sum(axis=(4, 5)) / (kh * kw)
    return [_convert(y, _result_dtype(attrs, 0, x.dtype))]


@_register("npu.layout_transform", 1)
def _layout_transform(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    # IR tensors are logical: a layout change moves bytes but keeps every value.
    (x,) = inputs
    return [_convert(x, _result_dtype(attrs, 0, x.dtype))]


# ------------------------------------------------- the table-made ops (npuir.dialects.npu_math)
# One numpy function per op of `npuir.dialects.npu_math.MATH_OPS`, under the same numeric rules
# as the ops above: f16/bf16 in f32, integers in i64, the result cast once at the end.


_UNARY_MATH: dict[str, tuple[_UnFn, _UnFn | None]] = {
    # name: (on floats, on integers; None: the float function in f64)
    "abs": (np.abs, np.abs),
    "sign": (np.sign, np.sign),
    "reciprocal": (lambda x: 1 / x, None),
    "floor": (np.floor, lambda x: x),
    "ceil": (np.ceil, lambda x: x),
    "round": (np.round, lambda x: x),  # ties to even, as torch.round
    "trunc": (np.trunc, lambda x: x),
    "log": (np.log, None),
    "log2": (np.log2, None),
    "log10": (np.log10, None),
    "log1p": (np.log1p, None),
    "expm1": (np.expm1, None),
    "sin": (np.sin, None),
    "cos": (np.cos, None),
    "tan": (np.tan, None),
    "asin": (np.arcsin, None),
    "acos": (np.arccos, None),
    "atan": (np.arctan, None),
    "sinh": (np.sinh, None),
    "cosh": (np.cosh, None),
    "tanh": (np.tanh, None),
    "asinh": (np.arcsinh, None),
    "acosh": (np.arccosh, None),
    "atanh": (np.arctanh, None),
    "erf": (lambda x: _erf(x).astype(x.dtype), None),
}
"""The unary table-made ops' functions."""


for _name, (_float_fn, _int_fn) in _UNARY_MATH.items():
    _make_unary(f"npu.{_name}", _float_fn, int_fn=_int_fn)


@_register("npu.bitwise_not", 1)
def _bitwise_not_kernel(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (x,) = inputs
    if _is_float(x.dtype):
        raise ValueError("bitwise_not takes integers or i1, not floats")
    flipped = np.logical_not(x) if x.dtype == _BOOL else np.invert(x)
    return [_convert(flipped, _result_dtype(attrs, 0, x.dtype))]


def _make_predicate(name: str, fn: _UnFn) -> None:
    @_register(name, 1)
    def kernel(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
        (x,) = inputs
        wide = x.astype(_float_compute(x.dtype)) if _is_float(x.dtype) else x.astype(_I64)
        return [_convert(fn(wide), _result_dtype(attrs, 0, _BOOL))]


_make_predicate("npu.isnan", np.isnan)
_make_predicate("npu.isinf", np.isinf)
_make_predicate("npu.logical_not", lambda x: x == 0)


def _int_floor_div(a: Array, b: Array) -> Array:
    safe = np.where(b == 0, 1, b)
    return np.where(b == 0, 0, np.floor_divide(a, safe))


def _int_mod(fn: _BinFn) -> _BinFn:
    def mod(a: Array, b: Array) -> Array:
        safe = np.where(b == 0, 1, b)
        return np.where(b == 0, 0, fn(a, safe))

    return mod


def _int_pow(a: Array, b: Array) -> Array:
    # A negative integer exponent has no integer result but for a base of 1 or -1.
    neg = b < 0
    out = np.power(a, np.where(neg, 0, b))
    return np.where(neg, np.where(a == 1, 1, np.where(a == -1, 1 - 2 * (np.abs(b) % 2), 0)), out)


def _float_remainder(a: Array, b: Array) -> Array:
    # torch: a - floor(a / b) * b, so the result has the divisor's sign.
    return a - np.floor(a / b) * b


def _float_floor_divide(a: Array, b: Array) -> Array:
    # torch's floor_divide of floats: floor of the true quotient, corrected as Python's //.
    return np.floor_divide(a, b)


def _no_floats(name: str) -> _BinFn:
    def refuse(a: Array, b: Array) -> Array:
        raise ValueError(f"{name} takes integers or i1, not floats")

    return refuse


_make_binary("npu.minimum", np.minimum, np.minimum)
_make_binary("npu.pow", np.power, _int_pow)
_make_binary("npu.remainder", _float_remainder, _int_mod(np.remainder))
_make_binary("npu.fmod", np.fmod, _int_mod(np.fmod))
_make_binary("npu.floor_divide", _float_floor_divide, _int_floor_div)
_make_binary("npu.atan2", np.arctan2, lambda a, b: np.arctan2(a, b))
_make_binary("npu.bitwise_and", _no_floats("bitwise_and"), np.bitwise_and)
_make_binary("npu.bitwise_or", _no_floats("bitwise_or"), np.bitwise_or)
_make_binary("npu.bitwise_xor", _no_floats("bitwise_xor"), np.bitwise_xor)


def _make_compare(name: str, fn: _BinFn) -> None:
    @_register(name, 2)
    def kernel(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
        a, b = inputs
        np.broadcast_shapes(a.shape, b.shape)
        cd = _pair_compute(a.dtype, b.dtype)
        return [_convert(fn(a.astype(cd), b.astype(cd)), _result_dtype(attrs, 0, _BOOL))]


_make_compare("npu.eq", np.equal)
_make_compare("npu.ne", np.not_equal)
_make_compare("npu.lt", np.less)
_make_compare("npu.le", np.less_equal)
_make_compare("npu.gt", np.greater)
_make_compare("npu.ge", np.greater_equal)
_make_compare("npu.logical_and", lambda a, b: (a != 0) & (b != 0))
_make_compare("npu.logical_or", lambda a, b: (a != 0) | (b != 0))
_make_compare("npu.logical_xor", lambda a, b: (a != 0) ^ (b != 0))


@_register("npu.select", 3)
def _select(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    cond, a, b = inputs
    out_dt = _result_dtype(attrs, 0, a.dtype)
    return [_convert(np.where(_convert(cond, _BOOL), a, b), out_dt)]


def _make_scan(name: str, fn: Callable[..., Array]) -> None:
    @_register(name, 1)
    def kernel(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
        (x,) = inputs
        out_dt = _result_dtype(attrs, 0, x.dtype)
        if x.ndim == 0:
            return [_convert(x, out_dt)]
        axis = _axis(_int(attrs, "axis", 0), x.ndim)
        return [_convert(fn(x.astype(_acc_dtype(x.dtype)), axis=axis), out_dt)]


_make_scan("npu.cumsum", np.cumsum)
_make_scan("npu.cumprod", np.cumprod)


def _make_reduce(name: str, fn: Callable[..., Array], empty: str) -> None:
    @_register(name, 1)
    def kernel(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
        (x,) = inputs
        axes = _reduce_axes(attrs, x.ndim)
        if empty and any(x.shape[a] == 0 for a in axes):
            raise ValueError(f"{empty} over an empty axis of shape {x.shape}")
        r = fn(x.astype(_acc_dtype(x.dtype)), axis=axes, keepdims=_flag(attrs, "keepdims"))
        return [_convert(r, _result_dtype(attrs, 0, x.dtype))]


_make_reduce("npu.reduce_min", np.min, "reduce_min")
_make_reduce("npu.reduce_prod", np.prod, "")


def _make_arg_reduce(name: str, fn: Callable[..., Array]) -> None:
    @_register(name, 1)
    def kernel(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
        (x,) = inputs
        keep = _flag(attrs, "keepdims")
        wide = x.astype(_acc_dtype(x.dtype))
        out_dt = _result_dtype(attrs, 0, _I64)
        if "axis" not in attrs or x.ndim == 0:
            if wide.size == 0:
                raise ValueError(f"{name} of an empty tensor")
            flat = np.asarray(fn(wide.reshape(-1)))
            return [_convert(flat.reshape((1,) * x.ndim if keep else ()), out_dt)]
        axis = _axis(_int(attrs, "axis"), x.ndim)
        if x.shape[axis] == 0:
            raise ValueError(f"{name} over an empty axis of shape {x.shape}")
        return [_convert(fn(wide, axis=axis, keepdims=keep), out_dt)]


# numpy's argmax and argmin pick the first NaN of a row, as torch's do.
_make_arg_reduce("npu.argmax", np.argmax)
_make_arg_reduce("npu.argmin", np.argmin)


@_register("npu.sort", 1)
def _sort(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (x,) = inputs
    if x.ndim == 0:
        return [_convert(x, _result_dtype(attrs, 0, x.dtype)), np.zeros((), _I64)]
    axis = _axis(_int(attrs, "axis", -1), x.ndim)
    xa = np.moveaxis(x, axis, -1)
    key = xa.astype(_acc_dtype(x.dtype))
    n = xa.shape[-1]
    if _flag(attrs, "descending"):
        # Stable descending without negating (unsigned, INT_MIN): a stable ascending sort of
        # the reversed row, reversed, puts equal values in their original order.
        idx = n - 1 - np.argsort(key[..., ::-1], axis=-1, kind="stable")[..., ::-1]
    else:
        idx = np.argsort(key, axis=-1, kind="stable")
    values = np.take_along_axis(xa, idx, axis=-1)
    return [
        _convert(np.moveaxis(values, -1, axis), _result_dtype(attrs, 0, x.dtype)),
        _convert(np.moveaxis(idx, -1, axis), _result_dtype(attrs, 1, _I64)),
    ]


def _declared_shape(attrs: KernelAttrs) -> tuple[int, ...]:
    shapes = attrs.get(RESULT_SHAPES)
    if not isinstance(shapes, Sequence) or not shapes:
        raise ValueError(f"needs '{RESULT_SHAPES}' (the op takes its shape from the result)")
    shape = tuple(shapes[0])
    if any(d is None or d < 0 for d in shape):
        raise ValueError(f"result shape {shape} has a dynamic dim")
    return tuple(int(d) for d in shape)


@_register("npu.fill", 0)
def _fill(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    out_dt = _result_dtype(attrs, 0, _F32)
    value = _float(attrs, "value", 0.0)
    return [_convert(np.full(_declared_shape(attrs), value, _F64), out_dt)]


@_register("npu.arange", 0)
def _arange(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (n,) = _declared_shape(attrs)
    start, step = _float(attrs, "start", 0.0), _float(attrs, "step", 1.0)
    out_dt = _result_dtype(attrs, 0, _I64)
    if _is_int(out_dt) and math.isfinite(start) and math.isfinite(step):
        # torch steps an integer arange in int64, from the truncated start and step
        start, step = float(int(start)), float(int(step))
    last = abs(start) + abs(step) * max(n - 1, 0)
    if _is_int(out_dt) and start.is_integer() and step.is_integer() and last < 2**63:
        return [_convert(int(start) + int(step) * np.arange(n, dtype=_I64), out_dt)]
    return [_convert(start + step * np.arange(n, dtype=_F64), out_dt)]


def _crop_to(x: Array, shape: Sequence[int], skip: int) -> Array:
    """`x`'s leading block of `shape` in every dim but `skip`."""
    index = tuple(slice(None) if d == skip else slice(0, n) for d, n in enumerate(shape))
    return x[index]


def _check_index(index: Array, extent: int, what: str) -> Array:
    if not _is_int(index.dtype):
        raise ValueError(f"{what} must be integers, got {index.dtype}")
    wide = index.astype(_I64)
    if wide.size and (wide.min() < -extent or wide.max() >= extent):
        raise ValueError(f"{what} out of range for a dim of {extent}")
    return np.where(wide < 0, wide + extent, wide)


@_register("npu.gather_elements", 2)
def _gather_elements(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    data, index = inputs
    if data.ndim == 0:
        return [_convert(data, _result_dtype(attrs, 0, data.dtype))]
    axis = _axis(_int(attrs, "axis", 0), data.ndim)
    idx = _check_index(index, data.shape[axis], "indices")
    picked = np.take_along_axis(_crop_to(data, index.shape, axis), idx, axis=axis)
    return [_convert(picked, _result_dtype(attrs, 0, data.dtype))]


_SCATTER_UFUNCS: dict[str, Any] = {
    "sum": np.add,
    "mean": np.add,
    "prod": np.multiply,
    "amax": np.maximum,  # NaN wins, as in torch
    "amin": np.minimum,
}


@_register("npu.scatter", 3)
def _scatter(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    data, index, src = inputs
    out_dt = _result_dtype(attrs, 0, data.dtype)
    if data.ndim == 0:
        data, index, src = data.reshape(1), index.reshape(1), src.reshape(1)
    axis = _axis(_int(attrs, "axis", 0), data.ndim)
    idx = _check_index(index, data.shape[axis], "indices")
    where: list[Array] = list(np.indices(index.shape, sparse=True))
    where[axis] = idx
    target = tuple(np.broadcast_arrays(*where))
    values = _crop_to(src, index.shape, -1)  # torch reads src only where index has elements
    reduce = str(attrs.get("reduce", "none"))
    acc = _acc_dtype(data.dtype)
    out = data.astype(acc)
    if reduce == "none":
        out[target] = values.astype(acc)
        return [_convert(out.reshape(inputs[0].shape), out_dt)]
    ufunc = _SCATTER_UFUNCS.get(reduce)
    if ufunc is None:
        raise ValueError(f"reduce must be none, sum, prod, amax, amin or mean, got {reduce!r}")
    count = np.ones(out.shape, _I64)
    if _flag(attrs, "exclude_self"):
        identity = {"sum": 0, "mean": 0, "prod": 1, "amax": -np.inf, "amin": np.inf}[reduce]
        if data.dtype == _BOOL and reduce in ("amax", "amin"):
            identity = 0 if reduce == "amax" else 1
        elif _is_int(acc) and not np.isfinite(identity):
            info = np.iinfo(data.dtype)
            identity = info.min if reduce == "amax" else info.max
        out[target] = identity
        count[target] = 0
    ufunc.at(out, target, values.astype(acc))
    if reduce == "mean":
        np.add.at(count, target, 1)
        safe = np.maximum(count, 1)
        out = out / safe if _is_float(acc) else np.floor_divide(out, safe)
    return [_convert(out.reshape(inputs[0].shape), out_dt)]


def _index_tuple(data: Array, dims: Sequence[int], indices: Sequence[Array]) -> tuple[Any, ...]:
    if len(dims) != len(indices):
        raise ValueError(f"'dims' names {len(dims)} dims for {len(indices)} index tensors")
    index: list[Any] = [slice(None)] * data.ndim
    for d, idx in zip(dims, indices, strict=True):
        axis = _axis(d, data.ndim)
        index[axis] = _check_index(idx, data.shape[axis], "indices")
    return tuple(index)


@_register("npu.index", None)
def _index(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    data, *indices = inputs
    dims = _ints(attrs, "dims") or ()
    picked = data[_index_tuple(data, dims, indices)]
    return [_convert(picked, _result_dtype(attrs, 0, data.dtype))]


@_register("npu.index_put", None)
def _index_put(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    if len(inputs) < 3:
        raise ValueError("expects data, values and at least one index tensor")
    data, values, *indices = inputs
    dims = _ints(attrs, "dims") or ()
    where = _index_tuple(data, dims, indices)
    acc = _acc_dtype(data.dtype)
    out = data.astype(acc)
    if _flag(attrs, "accumulate"):
        np.add.at(out, where, np.broadcast_to(values.astype(acc), out[where].shape))
    else:
        out[where] = values.astype(acc)
    return [_convert(out, _result_dtype(attrs, 0, data.dtype))]


@_register("npu.fft", 1)
def _fft(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    """torch's `_fft_r2c`, `_fft_c2r` and `_fft_c2c`: numpy's unnormalized transforms (an
    inverse one undoes numpy's 1 / n) in complex128 or f64, scaled by `normalization`, then
    rounded to the result's dtype once."""
    (x,) = inputs
    kind = str(attrs.get("kind", ""))
    axes = [_axis(a, max(x.ndim, 1)) for a in _ints(attrs, "axes") or ()]
    if not axes:
        raise ValueError("'axes' names no dim")
    wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    out: Array
    if kind == "r2c":
        full = np.fft.fftn(wide, axes=axes)
        last = axes[-1]
        out = (
            full[
                tuple(
                    slice(0, x.shape[last] // 2 + 1) if d == last else slice(None)
                    for d in range(x.ndim)
                )
            ]
            if _flag(attrs, "onesided")
            else full
        )
        n = math.prod(x.shape[a] for a in axes)
    elif kind == "c2r":
        size = _int(attrs, "last_dim_size", 0)
        sizes = [x.shape[a] for a in axes[:-1]] + [size]
        out = np.fft.irfftn(wide, s=sizes, axes=axes, norm="forward")
        n = math.prod(sizes)
    elif kind == "c2c":
        inverse = _flag(attrs, "inverse")
        out = (
            np.fft.ifftn(wide, axes=axes, norm="forward")
            if inverse
            else np.fft.fftn(wide, axes=axes)
        )
        n = math.prod(x.shape[a] for a in axes)
    else:
        raise ValueError(f"kind must be r2c, c2r or c2c, got {kind!r}")
    norm = _int(attrs, "normalization", 0)
    if norm:
        out = out / (math.sqrt(n) if norm == 1 else n) if n else out
    default = np.dtype(np.complex64 if x.dtype in (np.float32, np.complex64) else np.complex128)
    if kind == "c2r":
        default = np.dtype(np.float32 if x.dtype == np.complex64 else np.float64)
    return [np.asarray(out).astype(_result_dtype(attrs, 0, default))]


@_register("npu.flip", 1)
def _flip(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (x,) = inputs
    axes = tuple(_axis(a, max(x.ndim, 1)) for a in _ints(attrs, "axes") or ())
    flipped = np.flip(x, axis=axes) if x.ndim and axes else x
    return [_convert(flipped, _result_dtype(attrs, 0, x.dtype))]


@_register("npu.pad", 1)
def _pad(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (x,) = inputs
    pads = _ints(attrs, "pads") or (0,) * (2 * x.ndim)
    if len(pads) != 2 * x.ndim:
        raise ValueError(f"'pads' needs {2 * x.ndim} values, got {len(pads)}")
    mode = str(attrs.get("mode", "constant"))
    if mode not in ("constant", "reflect", "edge"):
        raise ValueError(f"mode must be constant, reflect or edge, got {mode!r}")
    lows, highs = pads[::2], pads[1::2]
    # A negative pad crops: take it off first, then pad by the positive ones.
    crop = tuple(slice(max(0, -lo), n - max(0, -hi)) for lo, hi, n in zip(lows, highs, x.shape))
    cropped = x[crop]
    widths = tuple((max(0, lo), max(0, hi)) for lo, hi in zip(lows, highs))
    wide = cropped.astype(_acc_dtype(x.dtype)) if x.dtype in _LOW_PRECISION else cropped
    if mode == "constant":
        value = _float(attrs, "value", 0.0)
        padded = np.pad(wide, widths, constant_values=value)
    else:
        padded = np.pad(wide, widths, mode=mode)  # type: ignore[call-overload]
    return [_convert(padded, _result_dtype(attrs, 0, x.dtype))]


@_register("npu.as_strided", 1)
def _as_strided(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (x,) = inputs
    sizes, strides = _ints(attrs, "sizes") or (), _ints(attrs, "strides") or ()
    if len(sizes) != len(strides):
        raise ValueError(f"'sizes' {sizes} and 'strides' {strides} differ in length")
    offset = _int(attrs, "offset", 0)
    flat = np.ascontiguousarray(x).reshape(-1)
    if all(sizes):
        last = offset + sum((n - 1) * s for n, s in zip(sizes, strides))
        if offset < 0 or last >= flat.size:
            raise ValueError(f"elements up to {last} exceed the {flat.size} of {x.shape}")
    grid = np.indices(sizes, dtype=_I64) if sizes else np.zeros((0,), _I64)
    where = offset + sum((grid[d] * s for d, s in enumerate(strides)), np.zeros(sizes, _I64))
    return [_convert(flat[where], _result_dtype(attrs, 0, x.dtype))]


# ----------------------------------------------------------- fused kernels (npu_fused)


def _heads_repeated(x: Array, heads: int) -> Array:
    """Key/value heads `[B, Nkv, S, D]` widened to `heads` query heads: query head h
    reads key/value head h // (heads / Nkv), as grouped-query attention does."""
    if heads % x.shape[1]:
        raise ValueError(f"{heads} query heads are not a multiple of {x.shape[1]} key/value heads")
    return np.repeat(x, heads // x.shape[1], axis=1)


@_register("npu.fusion_attention", None)
def _fusion_attention(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    if len(inputs) not in (3, 4):
        raise ValueError(f"expects query, key, value and an optional mask, got {len(inputs)}")
    q, k, v = inputs[:3]
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError(f"query, key and value must be 4-D, got {q.shape}, {k.shape}, {v.shape}")
    cd = _float_compute(q.dtype)
    heads = q.shape[1]
    qf = q.astype(cd)
    kf = _heads_repeated(k, heads).astype(cd)
    vf = _heads_repeated(v, heads).astype(cd)
    scale = _float(attrs, "scale", 1.0 / math.sqrt(q.shape[-1]))
    scores = np.matmul(qf, np.swapaxes(kf, -1, -2)) * np.asarray(scale, dtype=cd)
    keep = np.ones(scores.shape, dtype=_BOOL)
    if len(inputs) == 4:
        mask = inputs[3]
        if mask.dtype == _BOOL:
            drops = _flag(attrs, "mask_drops")
            keep &= np.broadcast_to(~mask if drops else mask, scores.shape)
        else:
            scores = scores + mask.astype(cd)
    if _flag(attrs, "causal"):
        sq, skv = scores.shape[-2:]
        keep &= np.tril(np.ones((sq, skv), dtype=_BOOL))
    scores = np.where(keep, scores, -np.inf)
    top = np.max(scores, axis=-1, keepdims=True)
    # A row that keeps no key has max -inf; it gives zeros (torch's safe softmax), not NaN.
    e = np.where(keep, np.exp(scores - np.where(np.isfinite(top), top, 0)), 0)
    total = np.sum(e, axis=-1, keepdims=True)
    p = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    return [_convert(np.matmul(p, vf), _result_dtype(attrs, 0, q.dtype))]


@_register("npu.grouped_matmul", 3)
def _grouped_matmul(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    x, w, offsets = inputs
    if x.ndim != 2 or w.ndim != 3 or offsets.ndim != 1:
        raise ValueError(
            f"expects [T,K], [E,K,N] and [E] operands, got {x.shape}, {w.shape}, {offsets.shape}"
        )
    if not _is_int(offsets.dtype):
        raise ValueError(f"offsets must be integers, got {offsets.dtype}")
    ends = [int(e) for e in offsets]
    if any(b < a for a, b in zip([0, *ends], ends)) or (ends and not 0 <= ends[-1] <= x.shape[0]):
        raise ValueError(f"offsets {ends} must rise from 0 to at most the {x.shape[0]} rows")
    cd = _float_compute(x.dtype)
    out = np.zeros((x.shape[0], w.shape[2]), dtype=cd)
    start = 0
    for expert, end in enumerate(ends):
        if end > start:
            out[start:end] = np.matmul(x[start:end].astype(cd), w[expert].astype(cd))
        start = end
    return [_convert(out, _result_dtype(attrs, 0, x.dtype))]


@_register("npu.rotary_embedding", 3)
def _rotary_embedding(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    x, cos, sin = inputs
    if x.ndim < 1 or x.shape[-1] % 2:
        raise ValueError(f"input's last dim must be even, got {x.shape}")
    cd = _float_compute(x.dtype)
    xf = x.astype(cd)
    a, b = np.split(xf, 2, axis=-1)
    rotated = np.concatenate([-b, a], axis=-1)
    out = xf * cos.astype(cd) + rotated * sin.astype(cd)
    return [_convert(out, _result_dtype(attrs, 0, x.dtype))]


@_register("npu.moe_gating_topk_softmax", 1)
def _moe_gating_topk_softmax(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    (x,) = inputs
    if x.ndim != 2:
        raise ValueError(f"logits must be [T, E], got {x.shape}")
    t, e = x.shape
    k = _int(attrs, "k")
    if not 1 <= k <= e:
        raise ValueError(f"k = {k} out of range for {e} experts")
    xf = x.astype(_float_compute(x.dtype))
    ex = np.exp(xf - np.max(xf, axis=-1, keepdims=True))
    probs = ex / np.sum(ex, axis=-1, keepdims=True)
    # Descending, ties to the lower expert (as `npu.topk`).
    order = np.argsort(probs[:, ::-1], axis=-1, kind="stable")[:, ::-1]
    experts = (e - 1 - order)[:, :k]
    weights = np.take_along_axis(probs, experts, axis=-1)
    rows = np.arange(k, dtype=np.int64)[None, :] * t + np.arange(t, dtype=np.int64)[:, None]
    i32 = np.dtype(np.int32)
    return [
        _convert(weights, _result_dtype(attrs, 0, x.dtype)),
        _convert(experts, _result_dtype(attrs, 1, i32)),
        _convert(rows, _result_dtype(attrs, 2, i32)),
    ]


@_register("npu.moe_init_routing", 3)
def _moe_init_routing(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    x, rows, experts = inputs
    if x.ndim != 2 or rows.ndim != 2 or rows.shape != experts.shape:
        raise ValueError(
            f"expects [T,H], [T,k], [T,k] operands, got {x.shape}, {rows.shape}, {experts.shape}"
        )
    t = x.shape[0]
    tk = rows.size
    flat_rows = rows.reshape(-1).astype(_I64)
    if sorted(flat_rows.tolist()) != list(range(tk)):
        raise ValueError(f"rows must number the {tk} (token, slot) pairs 0..{tk - 1} once each")
    perm = np.argsort(experts.reshape(-1), kind="stable")
    source = flat_rows[perm]
    expanded_rows = np.empty(tk, dtype=_I64)
    expanded_rows[source] = np.arange(tk)
    i32 = np.dtype(np.int32)
    return [
        _convert(x[source % t], _result_dtype(attrs, 0, x.dtype)),
        _convert(expanded_rows, _result_dtype(attrs, 1, i32)),
        _convert(experts.reshape(-1)[perm], _result_dtype(attrs, 2, i32)),
    ]


@_register("npu.moe_finalize_routing", None)
def _moe_finalize_routing(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    if len(inputs) not in (3, 4):
        raise ValueError(
            f"expects expanded, scales, expanded_rows and an optional skip, got {len(inputs)}"
        )
    expanded, scales, expanded_rows = inputs[:3]
    if scales.ndim != 2 or expanded.ndim != 2 or expanded_rows.shape != (scales.size,):
        raise ValueError(
            f"expects [T*k,H], [T,k], [T*k] operands, got {expanded.shape}, "
            f"{scales.shape}, {expanded_rows.shape}"
        )
    t, k = scales.shape
    cd = _float_compute(expanded.dtype)
    picked = expanded.astype(cd)[expanded_rows.astype(_I64).reshape(k, t)]  # [k, T, H]
    out = np.sum(scales.astype(cd).T[:, :, None] * picked, axis=0)
    if len(inputs) == 4:
        out = inputs[3].astype(cd) + out
    return [_convert(out, _result_dtype(attrs, 0, expanded.dtype))]


@_register("npu.matmul_all_reduce", 2)
def _matmul_all_reduce(inputs: list[Array], attrs: KernelAttrs) -> list[Array]:
    # A collective: both operands carry the group's leading rank axis.
    x, w = inputs
    if x.ndim != 3 or w.ndim != 3 or x.shape[0] != w.shape[0]:
        raise ValueError(f"expects [G, M, K] and [G, K, N] rank stacks, got {x.shape}, {w.shape}")
    _group(x, attrs, split=False)
    products = np.matmul(x.astype(_acc_dtype(x.dtype)), w.astype(_acc_dtype(w.dtype)))
    total = np.sum(products, axis=0)
    out = np.broadcast_to(total, products.shape)
    return [_convert(out, _result_dtype(attrs, 0, x.dtype))]


# ------------------------------------------------------------------- input generation

# Operand positions that must be drawn positive for the op to be defined on them.
positive_operands: Mapping[str, frozenset[int]] = {
    "npu.sqrt": frozenset({0}),
    "npu.rsqrt": frozenset({0}),
    "npu.div": frozenset({1}),  # the divisor: positive keeps it away from 0
}
positive_domain_ops: frozenset[str] = frozenset(positive_operands)


def random_input(
    shape: Sequence[int],
    dtype: npt.DTypeLike,
    rng: np.random.Generator,
    positive: bool = False,
    *,
    high: int | None = None,
) -> Array:
    """A random array in a range where every kernel is well defined.

    Floats: uniform in [-1, 1], or [0.5, 1.5] if ``positive`` (drawn in f64, rounded to
    ``dtype``). Integers: uniform in [0, high) (``high`` defaults to 8), or [1, high) if
    ``positive`` so they are safe divisors. i1: uniform booleans. ``dtype`` may be a
    numpy dtype or an element-type name ("f16", "bf16", ...).
    """
    dt = _as_dtype(dtype)
    size = tuple(int(d) for d in shape)
    if dt == _BOOL:
        return np.asarray(rng.integers(0, 2, size=size)).astype(_BOOL)
    if _is_int(dt):
        top = 8 if high is None else high
        low = 1 if positive else 0
        if top <= low:
            raise ValueError(f"empty integer range [{low}, {top})")
        return np.asarray(rng.integers(low, top, size=size, dtype=np.int64)).astype(dt)
    if not _is_float(dt):
        raise ValueError(f"unsupported dtype {dt}")
    values = rng.uniform(0.5, 1.5, size) if positive else rng.uniform(-1.0, 1.0, size)
    return np.asarray(values, dtype=_F64).astype(dt)
