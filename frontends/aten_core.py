"""PyTorch's Core ATen opset in the torch importer: a lowering for every op npuir can take.

`handlers(importer)` gives the torch importer (`npuir.frontends.torch`) one handler per ATen
overload, by target name; the importer merges them into its table.  An op is lowered in one
of three ways, and `COVERAGE` (which `dev/gen_docs.py` turns into docs/aten-coverage.md)
says which for every overload tagged `torch.Tag.core`:

- **direct**: one or a few `npu` ops, most of them the table-made ones of
  `npuir.dialects.npu_math` (`aten.cos` is `npu.cos`, `aten.max.dim` is `npu.reduce_max`
  and `npu.argmax`);
- **decomposition**: PyTorch's own decomposition of the op (`torch._decomp`'s table, with
  `core_aten_decompositions()` for what it calls in turn) traced on meta tensors of the
  operands' shapes, each op of the trace imported in its place; so `aten.native_layer_norm`
  is the reductions, subtractions and rsqrt its decomposition computes.  This needs torch
  (a `.pt2` read without torch refuses such an op) and static shapes.  An f16 or bf16
  operand is widened to f32 for the decomposition and its results narrowed back, as
  torch's CPU kernels compute in f32 and round once (a decomposition run in f16 would
  round after every op);
- **at import**: a size (`aten.sym_numel`) read from the static shape, no op.

Dtypes follow PyTorch's promotion as the traced graph records it: an op's operands are cast
to the node's result dtype (or, for a comparison, to the operands' common dtype) before the
npu op, whose operands have one element type.  Random-number ops and `*_backward` ops are
outside the opset npuir covers; the ops left uncovered say why in `UNCOVERED`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    UnitAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute

from npuir.dialects import npu
from npuir.dialects.npu import dtype_name
from npuir.frontends.torchair import Tensor, ops
from npuir.frontends.torchair.graph import element_type, tensor_type

Handler = Callable[..., Any]

_FLOATS = ("f16", "bf16", "f32", "f64")
_RANK = {"i1": 0, "ui8": 1, "i8": 1, "i32": 2, "i64": 3}


@functools.cache
def _core_decompositions() -> dict[Any, Callable[..., Any]]:
    """PyTorch's core decomposition table, as a dict.  Built once: torch assembles it from
    its registrations on every call (0.2 CPU-s each, most of a decomposed op's import)."""
    from torch._decomp import core_aten_decompositions

    return dict(core_aten_decompositions())


_TRACES: dict[Any, Any] = {}
"""Decompositions traced (`_Core.decomposed`), by op and operand shapes, dtypes and other
arguments: the trace is a function of these alone, and tracing is most of a decomposed op's
import (a model's repeated layers, a dtype's f16 and bf16 widened to the same f32 trace)."""

_TRACES_KEPT = 256
"""How many traces `_TRACES` keeps (the oldest goes first)."""


def _signature(value: Any) -> Any:
    """`value` as a hashable key, a tensor by its shape and dtype; None if some part of it
    is not hashable (then nothing is cached)."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return ("tensor", tuple(value.shape), str(value.dtype))
    if isinstance(value, list | tuple):
        parts = [_signature(v) for v in value]
        return None if None in parts else (type(value).__name__, *parts)
    if isinstance(value, dict):
        items = [(k, _signature(v)) for k, v in value.items()]
        return None if any(v is None for _, v in items) else ("dict", *items)
    try:
        hash(value)
    except TypeError:
        return None
    # 1, 1.0 and True hash alike, and 0.0 and -0.0: a decomposition may trace them apart
    return (type(value).__name__, repr(value) if isinstance(value, float) else value)


def _op_class(name: str) -> type[npu.NpuOp]:
    return _OPS[name]


_OPS: dict[str, type[npu.NpuOp]] = {op.name: op for op in npu.NPU_OPS}


def promote(a: str, b: str) -> str:
    """The dtype two tensors of element types `a` and `b` compute in (torch's promotion
    over the element types npuir has; ui8 with i8 is i32, as npuir has no i16)."""
    if a == b:
        return a
    if a in _FLOATS or b in _FLOATS:
        floats = [t for t in (a, b) if t in _FLOATS]
        if len(floats) == 1:
            return floats[0]
        if set(floats) == {"f16", "bf16"}:
            return "f32"
        return max(floats, key=_FLOATS.index)
    if {a, b} == {"ui8", "i8"}:
        return "i32"
    return a if _RANK[a] >= _RANK[b] else b


_INT_BITS = {"ui8": 8, "i8": 8, "i32": 32, "i64": 64}


def wrap_int(value: Any, dtype: str) -> Any:
    """A Python int as a tensor of integer `dtype` holds it: torch wraps a scalar that is
    out of the dtype's range modulo 2**bits (`uint8 + -3` adds 253), so npuir's constants
    take the wrapped value rather than refusing it.  Other values are returned as they are."""
    bits = _INT_BITS.get(dtype)
    if bits is None or isinstance(value, bool) or not isinstance(value, int):
        return value
    wrapped = value % (1 << bits)
    if dtype != "ui8" and wrapped >= 1 << (bits - 1):
        wrapped -= 1 << bits
    return wrapped


def _scalar_kind(value: Any) -> str:
    return "i1" if isinstance(value, bool) else "i64" if isinstance(value, int) else "f32"


def _i64s(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def _float(value: float) -> FloatAttr:
    return FloatAttr(float(value), f64)


class _Core:
    """The handlers, bound to one importer (its graph, its current node)."""

    def __init__(self, importer: Any) -> None:
        # The torch importer (`npuir.frontends.torch`), whose walk calls these handlers:
        # its graph, current node, values and handler table.
        self.imp = importer
        self._table: dict[str, Handler] | None = None
        """The importer's handler table, built once for every decomposition it walks."""

    # -- helpers ----------------------------------------------------------

    @property
    def graph(self) -> Any:
        return self.imp.graph

    def unsupported(self, reason: str) -> Exception:
        from npuir.frontends.torch import UnsupportedOp

        return UnsupportedOp(reason)

    def result_vals(self) -> list[Any]:
        node = self.imp.node
        val = node.meta.get("val") if node is not None else None
        return list(val) if isinstance(val, list | tuple) else [val]

    def out_dtype(self, index: int = 0) -> str:
        """The npuir element type of the current node's result `index`."""
        val = self.result_vals()[index]
        if val is None or not hasattr(val, "dtype"):
            raise self.unsupported("its result is not a tensor")
        return dtype_name(element_type(val.dtype))

    def out_shape(self, index: int = 0) -> list[int]:
        """The current node's result shape; a dynamic dim is refused (a fill or an arange
        of a size known only at run time has no static result type to declare)."""
        val = self.result_vals()[index]
        shape = [d if isinstance(d, int) else None for d in val.shape]
        if any(d is None for d in shape):
            raise self.unsupported("a result with dynamic dims")
        return [int(d) for d in shape if d is not None]

    def cast(self, x: Tensor, dtype: str) -> Tensor:
        return x if x.dtype == dtype else ops.to(x, dtype)

    def operand(self, value: Any, dtype: str) -> Tensor:
        """A tensor operand (cast to `dtype`) or a scalar as an `npu.constant` of `dtype`."""
        if isinstance(value, Tensor):
            return self.cast(value, dtype)
        if isinstance(value, bool | int | float):
            if isinstance(value, float) and not math.isfinite(value):
                return self.fill_like([], dtype, value)
            return self.graph.constant(wrap_int(value, dtype), dtype)
        raise self.unsupported(f"operand {value!r} is neither a tensor nor a number")

    def build(
        self,
        name: str,
        inputs: Sequence[Tensor],
        attrs: Mapping[str, Attribute] | None = None,
        result_types: Sequence[Attribute] | None = None,
        num_results: int = 1,
    ) -> Tensor | list[Tensor]:
        values = [self.graph.value_of(t, name) for t in inputs]
        op = self.graph.add_op(
            _op_class(name), values, dict(attrs or {}), result_types, num_results
        )
        results = [Tensor(self.graph, r) for r in op.results]
        return results[0] if num_results == 1 else results

    def one(
        self,
        name: str,
        inputs: Sequence[Tensor],
        attrs: Mapping[str, Attribute] | None = None,
        result_types: Sequence[Attribute] | None = None,
    ) -> Tensor:
        out = self.build(name, inputs, attrs, result_types)
        assert isinstance(out, Tensor)
        return out

    def fill_like(self, shape: Sequence[int], dtype: str, value: Any) -> Tensor:
        if isinstance(value, Tensor):
            raise self.unsupported("a fill value that is a tensor")
        value = wrap_int(value, dtype)
        attrs = {"value": _float(float(value))} if value else {}
        return self.one("npu.fill", [], attrs, [tensor_type(list(shape), dtype)])

    def dim(self, x: Tensor, d: int) -> int:
        rank = len(x.shape)
        if not -max(rank, 1) <= d < max(rank, 1):
            raise self.unsupported(f"dim {d} out of range for rank {rank}")
        return d % max(rank, 1)

    # -- elementwise --------------------------------------------------------

    def unary(self, name: str, cast: bool = True) -> Handler:
        def build(x: Tensor, *_: Any, **__: Any) -> Tensor:
            return self.one(name, [self.cast(x, self.out_dtype()) if cast else x])

        return build

    def binary(self, name: str) -> Handler:
        bitwise = name.startswith("npu.bitwise_")

        def build(a: Any, b: Any, *_: Any, **__: Any) -> Tensor:
            dtype = self.out_dtype()
            if bitwise and dtype in _FLOATS:  # torch refuses these too
                raise self.unsupported(f"a bitwise op on {dtype} (it takes integers and bool)")
            return self.one(name, [self.operand(a, dtype), self.operand(b, dtype)])

        return build

    def common(self, a: Any, b: Any) -> str:
        """The dtype a comparison of `a` and `b` computes in (torch's promotion, where a
        Python scalar does not widen a tensor of its own kind)."""
        if isinstance(a, Tensor) and isinstance(b, Tensor):
            return promote(a.dtype, b.dtype)
        t, s = (a, b) if isinstance(a, Tensor) else (b, a)
        if not isinstance(t, Tensor):
            raise self.unsupported("a comparison of two scalars")
        kind = _scalar_kind(s)
        if kind == "f32" and t.dtype not in _FLOATS:
            return "f32"
        if kind == "i64" and t.dtype == "i1":
            return "i64"
        return str(t.dtype)

    def compare(self, name: str) -> Handler:
        def build(a: Any, b: Any) -> Tensor:
            dtype = self.common(a, b)
            return self.one(name, [self.operand(a, dtype), self.operand(b, dtype)])

        return build

    def logical(self, name: str) -> Handler:
        def build(a: Tensor, b: Tensor) -> Tensor:
            return self.one(name, [self.operand(a, "i1"), self.operand(b, "i1")])

        return build

    def div_mode(self, a: Any, b: Any, rounding_mode: str | None = None) -> Tensor:
        dtype = self.out_dtype()
        x, y = self.operand(a, dtype), self.operand(b, dtype)
        if rounding_mode is None:
            return ops.div(x, y)
        if rounding_mode == "floor":
            return self.one("npu.floor_divide", [x, y])
        if dtype in _FLOATS:
            return self.one("npu.trunc", [ops.div(x, y)])
        return ops.div(x, y)  # integer npu.div truncates toward zero

    def arith(self, build: Callable[[Tensor, Tensor], Tensor], reverse: bool = False) -> Handler:
        """add/sub/mul/div of the two operands cast to the result's dtype (torch promotes:
        an f32 tensor divided by an i64 one is f32), `alpha` scaling the second."""

        def handler(a: Any, b: Any, *rest: Any, alpha: Any = 1) -> Tensor:
            if rest:
                alpha = rest[0]
            if reverse:
                a, b = b, a
            dtype = self.out_dtype()
            x, y = self.operand(a, dtype), self.operand(b, dtype)
            if alpha != 1:
                y = ops.mul(y, self.operand(alpha, dtype))
            return build(x, y)

        return handler

    def pow(self, a: Any, b: Any) -> Tensor:
        dtype = self.out_dtype()
        if isinstance(a, Tensor) and b == 2:
            x = self.cast(a, dtype)
            return ops.mul(x, x)
        return self.one("npu.pow", [self.operand(a, dtype), self.operand(b, dtype)])

    def where(self, cond: Any, a: Any, b: Any) -> Tensor:
        dtype = self.out_dtype()
        return self.one(
            "npu.select",
            [self.operand(cond, "i1"), self.operand(a, dtype), self.operand(b, dtype)],
        )

    def masked_fill(self, x: Tensor, mask: Tensor, value: Any) -> Tensor:
        return self.where(mask, value, x)

    def clamp(self, x: Tensor, lo: Any = None, hi: Any = None) -> Tensor:
        dtype = self.out_dtype()
        y = self.cast(x, dtype)
        if lo is not None:
            y = ops.maximum(y, self.operand(lo, dtype))
        if hi is not None:
            y = self.one("npu.minimum", [y, self.operand(hi, dtype)])
        return y

    # -- scans, reductions, sorts ------------------------------------------

    def cumulative(self, name: str) -> Handler:
        def build(x: Tensor, dim: int, *_: Any, **__: Any) -> Tensor:
            y = self.cast(x, self.out_dtype())
            return self.one(name, [y], {"axis": IntegerAttr(self.dim(x, dim), i64)})

        return build

    def reduce(
        self, name: str, x: Tensor, dims: Sequence[int] | None, keepdim: bool, cast: str | None
    ) -> Tensor:
        y = self.cast(x, cast) if cast else x
        attrs: dict[str, Attribute] = {}
        if dims:
            attrs["axes"] = _i64s([self.dim(x, d) for d in dims])
        if keepdim:
            attrs["keepdims"] = UnitAttr()
        if not x.shape and dims:
            attrs.pop("axes")
        return self.one(name, [y], attrs)

    def amin(self, x: Tensor, dim: Sequence[int] = (), keepdim: bool = False) -> Tensor:
        return self.reduce("npu.reduce_min", x, list(dim), keepdim, None)

    def prod(self, x: Tensor, *args: Any, dtype: Any = None, **_: Any) -> Tensor:
        dim = args[0] if args and isinstance(args[0], int) else None
        keepdim = bool(args[1]) if len(args) > 1 else False
        dims = None if dim is None else [dim]
        return self.reduce("npu.reduce_prod", x, dims, keepdim, self.out_dtype())

    def any(self, x: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
        dims = None if dim is None else [dim] if isinstance(dim, int) else list(dim)
        if any(d is None or d == 0 for d in x.shape):
            raise self.unsupported("any of a tensor with an empty or dynamic dim")
        # torch's any of uint8 is uint8 (0 or 1), of any other dtype bool
        return self.cast(self.reduce("npu.reduce_max", x, dims, keepdim, "i1"), self.out_dtype())

    def sum(self, x: Tensor, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
        dims = None if dim is None else [dim] if isinstance(dim, int) else list(dim)
        return self.reduce("npu.reduce_sum", x, dims, keepdim, self.out_dtype())

    def mean(self, x: Tensor, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
        """mean.default(x, dtype) and mean.dim(x, dim, keepdim, dtype): the sum over the
        dims, divided by their element count (of an empty dim: NaN, as 0 / 0)."""
        if not isinstance(dim, list | tuple) and dim is not None:
            dim = None  # mean.default's second argument is its dtype
        out = self.out_dtype()
        dims = list(range(len(x.shape))) if not dim else [self.dim(x, d) for d in dim]
        sizes = [x.shape[d] for d in dims] if x.shape else []
        if any(n is None for n in sizes):
            raise self.unsupported("mean over a dynamic dim")
        count = math.prod(int(n or 0) for n in sizes)
        total = self.reduce("npu.reduce_sum", x, dims or None, keepdim, out)
        return ops.div(total, self.graph.constant(count, out))

    def addmm(self, bias: Tensor, a: Tensor, b: Tensor, beta: Any = 1, alpha: Any = 1) -> Tensor:
        dtype = self.out_dtype()
        product = ops.mm(self.cast(a, dtype), self.cast(b, dtype))
        if alpha != 1:
            product = ops.mul(product, self.operand(alpha, dtype))
        if beta == 0:  # torch ignores the bias then, NaN and all
            return product
        added = self.cast(bias, dtype)
        if beta != 1:
            added = ops.mul(added, self.operand(beta, dtype))
        return ops.add(product, added)

    def variance(
        self, x: Tensor, dim: Any = None, *args: Any, correction: Any = None, keepdim: Any = None
    ) -> list[Tensor]:
        """(variance, mean) over `dim`, in f32 for f16 and bf16 (torch's CPU kernel rounds
        once, at the end; the mean, the differences and their squares rounded in f16
        would lose bits at each step)."""
        results = self.variance_in(self.wide(x), dim, *args, correction=correction, keepdim=keepdim)
        return [
            self.cast(r, self.out_dtype(i) if i < len(self.result_vals()) else r.dtype)
            for i, r in enumerate(results)
        ]

    def variance_in(
        self, x: Tensor, dim: Any = None, *args: Any, correction: Any = None, keepdim: Any = None
    ) -> list[Tensor]:
        """(variance, mean) over `dim`: var.correction(x, dim, *, correction, keepdim) and
        var.dim(x, dim, unbiased, keepdim) alike."""
        if args:  # var.dim's unbiased, keepdim
            correction = 1 if args[0] else 0
            keepdim = bool(args[1]) if len(args) > 1 else keepdim
        correction = 1 if correction is None else correction
        dtype = self.out_dtype()
        dtype = "f32" if dtype in ("f16", "bf16") else dtype
        y = self.cast(x, dtype)
        rank = len(x.shape)
        dims = list(range(rank)) if dim is None or dim == [] else [self.dim(x, d) for d in dim]
        sizes = [x.shape[d] for d in dims]
        if any(n is None for n in sizes):
            raise self.unsupported("a variance over a dynamic dim")
        count = math.prod(int(n or 0) for n in sizes)
        mean = ops.div(
            self.reduce("npu.reduce_sum", y, dims, True, None), self.operand(count, dtype)
        )
        centred = ops.sub(y, mean)
        total = self.reduce("npu.reduce_sum", ops.mul(centred, centred), dims, bool(keepdim), None)
        var = ops.div(total, self.operand(max(count - correction, 0), dtype))
        if not keepdim:
            mean = ops.reshape(mean, list(var.shape))
        return [var, mean]

    def arg(self, name: str) -> Handler:
        def build(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
            attrs: dict[str, Attribute] = {}
            if dim is not None and x.shape:
                attrs["axis"] = IntegerAttr(self.dim(x, dim), i64)
            if keepdim:
                attrs["keepdims"] = UnitAttr()
            return self.one(name, [x], attrs)

        return build

    def extreme_dim(self, reduce: str, arg: str) -> Handler:
        def build(x: Tensor, dim: int, keepdim: bool = False) -> list[Tensor]:
            values = self.reduce(reduce, x, [dim], keepdim, None)
            index = self.arg(arg)(x, dim, keepdim)
            return [values, index]

        return build

    def sort(
        self, x: Tensor, *args: Any, dim: int = -1, descending: bool = False, **_: Any
    ) -> list[Tensor]:
        # sort.default(self, dim=-1, descending=False); sort.stable(self, *, stable, dim,
        # descending): the npu sort is always stable.
        if args and not isinstance(args[0], bool | None):
            dim = args[0]
            descending = bool(args[1]) if len(args) > 1 else descending
        attrs: dict[str, Attribute] = {"axis": IntegerAttr(self.dim(x, dim), i64)}
        if descending:
            attrs["descending"] = UnitAttr()
        out = self.build("npu.sort", [x], attrs, num_results=2)
        assert isinstance(out, list)
        return out

    def topk(
        self, x: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True
    ) -> list[Tensor]:
        """`npu.topk` for the largest; the smallest as an ascending sort's first `k`."""
        if not x.shape:  # a 0-d tensor is its own top 1 (npu.topk wants an axis)
            return self.sort(x, dim, False)
        if largest:
            return list(ops.topk(x, k, dim))
        values, index = self.sort(x, dim, False)
        axis = self.dim(x, dim)
        if x.shape and x.shape[axis] == k:
            return [values, index]
        return [ops.slice(values, axis, 0, k), ops.slice(index, axis, 0, k)]

    # -- tensors from nothing ----------------------------------------------

    def full(self, value: Any) -> Handler:
        def build(*_: Any, **__: Any) -> Tensor:
            return self.fill_like(self.out_shape(), self.out_dtype(), value)

        return build

    def full_value(self, *args: Any, **kwargs: Any) -> Tensor:
        # full(size, fill_value), full_like(self, fill_value), new_full(self, size, value),
        # fill.Scalar(self, value), scalar_tensor(s): the value is the last positional.
        value = kwargs.get("fill_value", args[-1] if args else 0)
        return self.fill_like(self.out_shape(), self.out_dtype(), value)

    def arange(self, *args: Any, **kwargs: Any) -> Tensor:
        numbers = [a for a in args if isinstance(a, int | float) and not isinstance(a, bool)]
        start = kwargs.get("start", numbers[0] if len(numbers) >= 2 else 0)
        step = kwargs.get("step", numbers[2] if len(numbers) >= 3 else 1)
        attrs: dict[str, Attribute] = {}
        if start:
            attrs["start"] = _float(start)
        if step != 1:
            attrs["step"] = _float(step)
        return self.one("npu.arange", [], attrs, [tensor_type(self.out_shape(), self.out_dtype())])

    # -- indexing -------------------------------------------------------------

    def index_tensor(self, index: Tensor) -> Tensor:
        """An integer index as the npu ops take it: i32 or i64."""
        return index if index.dtype in ("i32", "i64") else self.cast(index, "i64")

    def gather(self, x: Tensor, dim: int, index: Tensor, *_: Any, **__: Any) -> Tensor:
        index = self.index_tensor(index)
        if any(d == 0 for d in index.shape):  # torch takes an empty index of any rank
            return self.fill_like(index.shape, x.dtype, 0)
        if not x.shape or not index.shape:  # torch gathers a 0-d operand as a 1-d one
            flat = self.one(
                "npu.gather_elements",
                [ops.reshape(x, [1]) if not x.shape else x, ops.reshape(index, [-1])],
                {"axis": self.axis(x, dim)},
            )
            return ops.reshape(flat, list(index.shape))
        return self.one("npu.gather_elements", [x, index], {"axis": self.axis(x, dim)})

    def index_select(self, x: Tensor, dim: int, index: Tensor) -> Tensor:
        if not x.shape:  # a scalar: its one element (the index can only be 0)
            picked = ops.index_select(ops.reshape(x, [1]), 0, self.index_tensor(index))
            return ops.reshape(picked, [])
        return ops.index_select(x, self.dim(x, dim), self.index_tensor(index))

    def axis(self, x: Tensor, dim: int) -> IntegerAttr:
        return IntegerAttr(self.dim(x, dim), i64)

    def scatter(
        self,
        x: Tensor,
        dim: int,
        index: Tensor,
        src: Any,
        reduce: str = "none",
        include_self: bool = True,
    ) -> Tensor:
        if not isinstance(src, Tensor):
            shape = [d for d in index.shape]
            if any(d is None for d in shape):
                raise self.unsupported("a scatter of a value by an index with a dynamic dim")
            src = self.fill_like([int(d) for d in shape if d is not None], x.dtype, src)
        attrs: dict[str, Attribute] = {"axis": self.axis(x, dim)}
        if reduce != "none":
            attrs["reduce"] = StringAttr(reduce)
        if not include_self:
            attrs["exclude_self"] = UnitAttr()
        index = self.index_tensor(index)
        return self.one("npu.scatter", [x, index, self.cast(src, x.dtype)], attrs)

    def index_dims(self, indices: Sequence[Any]) -> tuple[list[int], list[Tensor]]:
        dims, tensors = [], []
        for d, idx in enumerate(indices):
            if idx is None:
                continue
            if not isinstance(idx, Tensor):
                raise self.unsupported(f"index {idx!r} is not a tensor")
            if idx.dtype == "i1" or idx.dtype == "ui8":
                raise self.unsupported("indexing by a boolean mask (its result size is data's)")
            dims.append(d)
            tensors.append(idx)
        if not tensors:
            raise self.unsupported("an index with no index tensor")
        return dims, tensors

    def index(self, x: Tensor, indices: Sequence[Any]) -> Tensor:
        dims, tensors = self.index_dims(indices)
        return self.one("npu.index", [x, *tensors], {"dims": _i64s(dims)})

    def index_put(
        self, x: Tensor, indices: Sequence[Any], values: Any, accumulate: bool = False
    ) -> Tensor:
        dims, tensors = self.index_dims(indices)
        attrs: dict[str, Attribute] = {"dims": _i64s(dims)}
        if accumulate:
            attrs["accumulate"] = UnitAttr()
        return self.one("npu.index_put", [x, self.operand(values, x.dtype), *tensors], attrs)

    # -- data movement --------------------------------------------------------

    def flip(self, x: Tensor, dims: Sequence[int]) -> Tensor:
        return self.one("npu.flip", [x], {"axes": _i64s([self.dim(x, d) for d in dims])})

    def pad(self, x: Tensor, pad: Sequence[int], mode: str, value: Any = 0) -> Tensor:
        """`pad` as torch spells it: (before, after) pairs from the last dim backwards."""
        rank = len(x.shape)
        if len(pad) % 2 or len(pad) // 2 > rank:
            raise self.unsupported(f"padding {list(pad)} for a tensor of rank {rank}")
        pads = [0] * (2 * rank)
        for i in range(len(pad) // 2):
            d = rank - 1 - i
            pads[2 * d], pads[2 * d + 1] = int(pad[2 * i]), int(pad[2 * i + 1])
        attrs: dict[str, Attribute] = {"pads": _i64s(pads)}
        if mode != "constant":
            attrs["mode"] = StringAttr(mode)
        elif value:
            attrs["value"] = _float(float(value))
        return self.one("npu.pad", [x], attrs)

    def strides(self, x: Tensor) -> list[int]:
        if any(d is None for d in x.shape):
            raise self.unsupported("a strided view of a tensor with dynamic dims")
        out, step = [], 1
        for d in reversed(x.shape):
            out.append(step)
            step *= int(d or 1) if d else 1
        return out[::-1]

    def contiguous_operand(self) -> None:
        """Refuse a strided view of an operand torch holds with other strides than a
        contiguous tensor's: npuir's tensors are values without strides."""
        node = self.imp.node
        source = node.args[0] if node is not None and node.args else None
        val = getattr(source, "meta", {}).get("val")
        if val is None or not hasattr(val, "is_contiguous"):
            return
        whole = val.untyped_storage().nbytes() == val.numel() * val.element_size()
        if not val.is_contiguous() or val.storage_offset() != 0 or not whole:
            raise self.unsupported("a strided view of a tensor torch holds as a view")

    def as_strided(
        self, x: Tensor, size: Sequence[int], stride: Sequence[int], offset: int | None = None
    ) -> Tensor:
        self.contiguous_operand()
        attrs: dict[str, Attribute] = {"sizes": _i64s(size), "strides": _i64s(stride)}
        if offset:
            attrs["offset"] = IntegerAttr(int(offset), i64)
        return self.one("npu.as_strided", [x], attrs)

    def diagonal(self, x: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        d1, d2 = self.dim(x, dim1), self.dim(x, dim2)
        strides = self.strides(x)
        shape = [int(d) for d in x.shape if d is not None]
        n1, n2 = shape[d1], shape[d2]
        length = max(0, min(n1 - max(0, -offset), n2 - max(0, offset)))
        start = offset * strides[d2] if offset >= 0 else -offset * strides[d1]
        keep = [d for d in range(len(shape)) if d not in (d1, d2)]
        sizes = [shape[d] for d in keep] + [length]
        steps = [strides[d] for d in keep] + [strides[d1] + strides[d2]]
        return self.as_strided(x, sizes, steps, start if length else 0)

    def split_with_sizes(self, x: Tensor, sizes: Sequence[int], dim: int = 0) -> list[Tensor]:
        axis = self.dim(x, dim)
        if any(d is None for d in x.shape):
            raise self.unsupported("split of a tensor with dynamic dims")
        out, start = [], 0
        for n in sizes:
            out.append(ops.slice(x, axis, start, start + int(n)))
            start += int(n)
        return out

    def squeeze_dims(self, x: Tensor, dims: Sequence[int] | None = None) -> Tensor:
        rank = len(x.shape)
        if not rank:  # a 0-d tensor squeezed at dim 0 or -1 is itself, as in torch
            for d in dims or ():
                self.dim(x, d)
            return x
        chosen = range(rank) if dims is None else [self.dim(x, d) for d in dims]
        gone = {d for d in chosen if x.shape[d] == 1}
        if not gone:
            return x
        return ops.reshape(x, [s for d, s in enumerate(x.shape) if d not in gone])

    def copy(self, x: Tensor, src: Any, *_: Any) -> Tensor:
        y = self.operand(src, x.dtype)
        if list(y.shape) == list(x.shape):
            return y
        return self.imp.expand(y, list(x.shape))

    def to_dtype(self, x: Tensor, *_: Any, **__: Any) -> Tensor:
        return self.cast(x, self.out_dtype())

    def convolution(
        self,
        x: Tensor,
        w: Tensor,
        bias: Tensor | None,
        stride: Sequence[int],
        padding: Sequence[int],
        dilation: Sequence[int],
        transposed: bool,
        output_padding: Sequence[int],
        groups: int,
    ) -> Tensor:
        if transposed:
            raise self.unsupported("a transposed convolution")
        spatial = len(x.shape) - 2
        if spatial not in (1, 2) or len(w.shape) != spatial + 2:
            raise self.unsupported(f"a {spatial}-d convolution (npu.conv2d takes 1-d and 2-d)")
        # A form traced from an int (`stride=2`, `padding="valid"`) holds one value for all
        # spatial dims; the convolution broadcasts it.
        stride, padding, dilation = (
            [int(v) for v in arg] * (spatial if len(arg) == 1 else 1)
            for arg in (stride, padding, dilation)
        )
        if spatial == 1:  # as a 2-d convolution of height 1
            x = ops.reshape(x, [x.shape[0], x.shape[1], 1, x.shape[2]])
            w = ops.reshape(w, [w.shape[0], w.shape[1], 1, w.shape[2]])
            stride, padding, dilation = [1, *stride], [0, *padding], [1, *dilation]
        pads = [padding[0], padding[0], padding[1], padding[1]]
        attrs: dict[str, Attribute] = {
            "strides": _i64s(stride),
            "pads": _i64s(pads),
            "dilations": _i64s(dilation),
            "groups": IntegerAttr(int(groups), i64),
        }
        operands = [x, w] if bias is None else [x, w, self.cast(bias, x.dtype)]
        y = self.one("npu.conv2d", operands, attrs)
        if spatial == 1:
            y = ops.reshape(y, [y.shape[0], y.shape[1], y.shape[3]])
        return y

    def avg_pool2d(
        self,
        x: Tensor,
        kernel: Sequence[int],
        stride: Sequence[int] = (),
        padding: Sequence[int] = (0,),
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> Tensor:
        kernel = list(kernel) * (2 // len(kernel))
        stride = list(stride or kernel) * (2 // len(stride or kernel))
        padding = list(padding) * (2 // len(padding))
        if ceil_mode or divisor_override or (not count_include_pad and any(padding)):
            raise self.unsupported("avg_pool2d with ceil_mode, a divisor or uncounted padding")
        if len(x.shape) != 4:
            raise self.unsupported("avg_pool2d of an unbatched tensor")
        attrs: dict[str, Attribute] = {
            "kind": StringAttr("avg"),
            "window": _i64s(kernel),
            "strides": _i64s(stride),
            "pads": _i64s([padding[0], padding[0], padding[1], padding[1]]),
        }
        return self.one("npu.pool2d", [x], attrs)

    def diff(
        self,
        x: Tensor,
        n: int = 1,
        dim: int = -1,
        prepend: Tensor | None = None,
        append: Tensor | None = None,
    ) -> Tensor:
        """`torch.diff`: `prepend` and `append` joined on along `dim`, then the differences
        of neighbours, `n` times (for i1, `!=`: torch's difference of booleans is xor)."""
        axis = self.dim(x, dim)
        parts = [p for p in (prepend, x, append) if p is not None]
        if any(not isinstance(p, Tensor) for p in parts):
            raise self.unsupported("diff with a scalar prepend or append")
        y = ops.cat([self.cast(p, x.dtype) for p in parts], axis) if len(parts) > 1 else x
        for _ in range(n):
            size = y.shape[axis]
            if size is None or any(d is None for d in y.shape):
                raise self.unsupported("diff of a tensor with dynamic dims")
            if size < 2:
                raise self.unsupported("diff of a dim with fewer than 2 elements")
            later, earlier = ops.slice(y, axis, 1, size), ops.slice(y, axis, 0, size - 1)
            if y.dtype == "i1":
                y = self.one("npu.bitwise_xor", [later, earlier])
            else:
                y = ops.sub(later, earlier)
        return y

    def softmax(self, x: Tensor, dim: int, half_to_float: bool = False) -> Tensor:
        """`npu.softmax`; a 0-d tensor's softmax is over its one element (as a 1-element
        vector), and an empty tensor's is itself."""
        if not x.shape:
            return ops.reshape(ops.softmax(ops.reshape(x, [1]), 0), [])
        if 0 in x.shape:
            return x
        return ops.softmax(x, dim)

    # -- 3-d pooling, distances, bags ------------------------------------------

    def wide(self, x: Tensor) -> Tensor:
        """`x` in f32 if it is f16 or bf16: a lowering of several steps rounds once at the
        end, as torch's CPU kernels do, not after each step."""
        return self.cast(x, "f32") if x.dtype in ("f16", "bf16") else x

    def averaged(self, x: Tensor, mean: Callable[[Tensor], Tensor], window: int = 0) -> Tensor:
        """`mean` of `x` in f32 for f16 and bf16 (one rounding) and in f64 for integers,
        whose average torch truncates toward zero once, after the whole sum: the mean
        times the `window` size, rounded, is that exact sum (the mean may be a hair below
        an integer it equals), divided once and truncated."""
        if x.dtype in _FLOATS:
            return self.cast(mean(self.wide(x)), x.dtype)
        if not window:
            raise self.unsupported(f"an adaptive average of {x.dtype} (torch takes floats)")
        k = self.graph.constant(window, "f64")
        total = self.one("npu.round", [ops.mul(mean(self.cast(x, "f64")), k)])
        return self.cast(self.one("npu.trunc", [ops.div(total, k)]), x.dtype)

    def static(self, x: Tensor, what: str) -> list[int]:
        if any(d is None for d in x.shape):
            raise self.unsupported(f"{what} of a tensor with dynamic dims")
        return [int(d) for d in x.shape if d is not None]

    def pool(
        self, x: Tensor, window: Sequence[int], stride: Sequence[int], pads: Sequence[int]
    ) -> Tensor:
        attrs: dict[str, Attribute] = {
            "kind": StringAttr("avg"),
            "window": _i64s(window),
            "strides": _i64s(stride),
            "pads": _i64s(pads),
        }
        return self.one("npu.pool2d", [x], attrs)

    def avg_pool3d(
        self,
        x: Tensor,
        kernel: Sequence[int],
        stride: Sequence[int] = (),
        padding: Sequence[int] = (0,),
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> Tensor:
        """An average over a box is the average over depth of the averages over the planes:
        `npu.pool2d` over (H, W) with the depth folded into the channels, then over D with
        H and W folded into one dim (padding counted, so both steps divide by the whole
        window, zeros included)."""
        k, s, pad = _three(kernel), _three(stride or kernel), _three(padding)
        if ceil_mode or divisor_override or (not count_include_pad and any(pad)):
            raise self.unsupported("avg_pool3d with ceil_mode, a divisor or uncounted padding")
        shape = self.static(x, "avg_pool3d")
        if len(shape) not in (4, 5):
            raise self.unsupported(f"avg_pool3d of a rank-{len(shape)} tensor")
        n, c, d, h, w = shape if len(shape) == 5 else [1, *shape]

        def mean(y: Tensor) -> Tensor:
            planes = ops.reshape(y, [n, c * d, h, w])
            flat = self.pool(planes, k[1:], s[1:], [pad[1], pad[1], pad[2], pad[2]])
            h2, w2 = int(flat.shape[2] or 0), int(flat.shape[3] or 0)
            deep = ops.reshape(flat, [n, c, d, h2 * w2])
            deep = self.pool(deep, [k[0], 1], [s[0], 1], [pad[0], pad[0], 0, 0])
            d2 = int(deep.shape[2] or 0)
            return ops.reshape(deep, [n, c, d2, h2, w2] if len(shape) == 5 else [c, d2, h2, w2])

        return self.averaged(x, mean, math.prod(k))

    def adaptive_avg_pool3d(self, x: Tensor, output_size: Sequence[int]) -> Tensor:
        """Torch's adaptive windows (output i of a dim of n averages `[floor(i n / m),
        ceil((i + 1) n / m))`) are boxes, so the average is one dim at a time: a dim that
        divides evenly is a reshape and a sum, any other one slice and sum per output."""
        shape = self.static(x, "adaptive_avg_pool3d")
        if len(shape) not in (4, 5) or len(output_size) != 3:
            raise self.unsupported(f"adaptive_avg_pool3d of a rank-{len(shape)} tensor")

        def mean(y: Tensor) -> Tensor:
            for axis, m in zip(range(len(shape) - 3, len(shape)), output_size, strict=True):
                y = self.adaptive_mean(y, axis, int(m))
            return y

        return self.averaged(x, mean)

    def adaptive_mean(self, y: Tensor, axis: int, m: int) -> Tensor:
        shape = [int(d or 0) for d in y.shape]
        n = shape[axis]
        if n == m:
            return y
        if m and n % m == 0:
            split = [*shape[:axis], m, n // m, *shape[axis + 1 :]]
            total = self.reduce("npu.reduce_sum", ops.reshape(y, split), [axis + 1], False, None)
            return ops.div(total, self.graph.constant(n // m, y.dtype))
        parts = []
        for i in range(m):
            lo, hi = (i * n) // m, -((-(i + 1) * n) // m)
            part = self.reduce("npu.reduce_sum", ops.slice(y, axis, lo, hi), [axis], True, None)
            parts.append(ops.div(part, self.graph.constant(hi - lo, y.dtype)))
        return ops.cat(parts, axis)

    def p_norm(self, diff: Tensor, p: float, axis: int) -> Tensor:
        """The p-norm of `diff` along `axis` (torch's cases: 0 counts the non-zeros, inf is
        the largest magnitude)."""
        dtype = diff.dtype
        if p == 0:
            nonzero = self.one("npu.ne", [diff, self.graph.constant(0, dtype)])
            return self.reduce("npu.reduce_sum", nonzero, [axis], False, dtype)
        size = self.static(diff, "a p-norm")[axis]
        magnitude = self.one("npu.abs", [diff])
        if math.isinf(p):
            if size == 0:  # torch's max over nothing here is 0
                shape = [d for i, d in enumerate(self.static(diff, "")) if i != axis]
                return self.fill_like(shape, dtype, 0)
            return self.reduce("npu.reduce_max", magnitude, [axis], False, None)
        if p == 1:
            return self.reduce("npu.reduce_sum", magnitude, [axis], False, None)
        if p == 2:
            return ops.sqrt(self.reduce("npu.reduce_sum", ops.mul(diff, diff), [axis], False, None))
        powered = self.one("npu.pow", [magnitude, self.graph.constant(float(p), dtype)])
        total = self.reduce("npu.reduce_sum", powered, [axis], False, None)
        return self.one("npu.pow", [total, self.graph.constant(1.0 / p, dtype)])

    def cdist(self, a: Tensor, b: Tensor, p: float = 2.0, compute_mode: Any = None) -> Tensor:
        """The p-norm distances of each row of `a` to each of `b`: their differences by
        broadcasting ([..., P, 1, M] - [..., 1, R, M]) and the norm over M.  Direct, not
        torch's matrix-product form for large inputs (`compute_mode`), which rounds more."""
        sa, sb = self.static(a, "cdist"), self.static(b, "cdist")
        dtype = self.out_dtype()
        x = ops.reshape(self.cast(a, dtype), [*sa[:-1], 1, sa[-1]])
        y = ops.reshape(self.cast(b, dtype), [*sb[:-2], 1, sb[-2], sb[-1]])
        return self.p_norm(ops.sub(x, y), float(p), -1 % (max(len(sa), len(sb)) + 1))

    def pdist(self, x: Tensor, p: float = 2.0) -> Tensor:
        """The distances of each pair of rows `i < j`, row-major: the upper triangle of the
        row-to-row distance matrix, its rows' tails joined."""
        n, _ = self.static(x, "pdist")
        if n < 2:
            return self.fill_like([0], self.out_dtype(), 0)
        full = self.cdist(x, x, p)
        tails = [
            ops.reshape(ops.slice(ops.slice(full, 0, i, i + 1), 1, i + 1, n), [n - i - 1])
            for i in range(n - 1)
        ]
        return ops.cat(tails, 0) if len(tails) > 1 else tails[0]

    def embedding_bag(
        self,
        weight: Tensor,
        indices: Tensor,
        offsets: Tensor,
        scale_grad_by_freq: bool = False,
        mode: int = 0,
        sparse: bool = False,
        per_sample_weights: Tensor | None = None,
        include_last_offset: bool = False,
        padding_idx: int = -1,
    ) -> list[Tensor]:
        """Bags of rows of `weight`, summed (mode 0), averaged (1) or their maximum (2).
        A bag's bounds come from `offsets` (data), so each index's bag is computed as data
        too: the number of offsets at or before its position, less one.  The rows are
        then scattered into their bags; an index equal to `padding_idx` goes to an extra
        bag that is dropped.  An empty bag is zeros, as in torch.  The results are torch's
        four: the bags, each index's bag, each bag's size and (mode 2) the index of each
        maximum."""
        (length,) = self.static(indices, "embedding_bag")
        (count,) = self.static(offsets, "embedding_bag")
        _, width = self.static(weight, "embedding_bag")
        bags = count - 1 if include_last_offset else count
        dtype = self.out_dtype()
        ids = self.index_tensor(indices)
        starts = self.cast(ops.slice(offsets, 0, 0, bags), "i64")
        position = self.one("npu.arange", [], {}, [tensor_type([length], "i64")])
        after = self.one(
            "npu.ge", [ops.reshape(position, [length, 1]), ops.reshape(starts, [1, bags])]
        )
        bag = ops.sub(
            self.reduce("npu.reduce_sum", after, [1], False, "i64"), self.graph.constant(1, "i64")
        )
        keep = (
            self.one("npu.ne", [ids, self.graph.constant(int(padding_idx), ids.dtype)])
            if padding_idx >= 0
            else self.fill_like([length], "i1", 1)
        )
        target = self.one("npu.select", [keep, bag, self.graph.constant(bags, "i64")])
        rows = self.wide(ops.index_select(self.cast(weight, dtype), 0, ids))
        if per_sample_weights is not None:
            rows = ops.mul(
                rows, ops.reshape(self.cast(per_sample_weights, rows.dtype), [length, 1])
            )
        spread = ops.add(
            ops.reshape(target, [length, 1]), self.fill_like([length, width], "i64", 0)
        )
        attrs: dict[str, Attribute] = {"axis": IntegerAttr(0, i64)}
        attrs["reduce"] = StringAttr("amax" if mode == 2 else "sum")
        if mode == 2:
            attrs["exclude_self"] = UnitAttr()
        zeros = self.fill_like([bags + 1, width], rows.dtype, 0)
        summed = self.one("npu.scatter", [zeros, spread, rows], attrs)
        sizes = self.one(
            "npu.scatter",
            [self.fill_like([bags + 1], "i64", 0), target, self.cast(keep, "i64")],
            {"axis": IntegerAttr(0, i64), "reduce": StringAttr("sum")},
        )
        sizes = ops.slice(sizes, 0, 0, bags)
        out = ops.slice(summed, 0, 0, bags)
        if mode == 1:
            out = ops.div(
                out,
                ops.reshape(
                    self.cast(ops.maximum(sizes, self.graph.constant(1, "i64")), out.dtype),
                    [bags, 1],
                ),
            )
        # torch's CPU kernel leaves a sum's bag sizes zero (they serve its backward only)
        # and gives the sizes again as a mean's maximum indices.
        counted = sizes if mode else self.fill_like([bags], "i64", 0)
        results = [self.cast(out, dtype), bag, counted]
        if mode == 2:
            # The first index of each bag whose row holds the maximum (0 for an empty bag).
            best = ops.index_select(summed, 0, target)
            hit = self.one(
                "npu.logical_and",
                [self.one("npu.eq", [rows, best]), ops.reshape(keep, [length, 1])],
            )
            word = ops.add(
                ops.reshape(self.cast(ids, "i64"), [length, 1]),
                self.fill_like([length, width], "i64", 0),
            )
            big = self.fill_like([length, width], "i64", 2**62)
            first = self.one(
                "npu.scatter",
                [
                    self.fill_like([bags + 1, width], "i64", 0),
                    spread,
                    self.one("npu.select", [hit, word, big]),
                ],
                {
                    "axis": IntegerAttr(0, i64),
                    "reduce": StringAttr("amin"),
                    "exclude_self": UnitAttr(),
                },
            )
            results.append(ops.slice(first, 0, 0, bags))
        else:
            results.append(counted)
        # torch gives some of the last three empty in some modes: the shapes it records.
        return [
            r
            if i == 0 or self.static(r, "") == self.out_shape(i)
            else self.fill_like(self.out_shape(i), self.out_dtype(i), 0)
            for i, r in enumerate(results)
        ]

    # -- Fourier transforms -------------------------------------------------

    def fft(self, kind: str) -> Handler:
        """`_fft_r2c(x, dim, normalization, onesided)`, `_fft_c2r(x, dim, normalization,
        last_dim_size)` and `_fft_c2c(x, dim, normalization, forward)` as `npu.fft`."""

        def build(x: Tensor, dim: Sequence[int], normalization: int, flag: Any) -> Tensor:
            if kind == "r2c" and x.dtype not in ("f32", "f64"):
                raise self.unsupported(f"an r2c transform of {x.dtype} (it takes f32 or f64)")
            attrs: dict[str, Attribute] = {
                "kind": StringAttr(kind),
                "axes": _i64s([self.dim(x, d) for d in dim]),
            }
            if normalization:
                attrs["normalization"] = IntegerAttr(int(normalization), i64)
            if kind == "r2c" and flag:
                attrs["onesided"] = UnitAttr()
            if kind == "c2r":
                attrs["last_dim_size"] = IntegerAttr(int(flag), i64)
            if kind == "c2c" and not flag:
                attrs["inverse"] = UnitAttr()
            return self.one("npu.fft", [x], attrs)

        return build

    # -- data-dependent values ----------------------------------------------

    def masked_scatter(self, x: Tensor, mask: Tensor, source: Tensor) -> Tensor:
        """Where the mask holds, the source's elements in order: the k-th true place takes
        source element k, which is the running count of trues less one, so the offsets are
        data but the shapes are not."""
        shape = self.static(x, "masked_scatter")
        numel = math.prod(shape)
        src = self.static(source, "masked_scatter")
        full = self.cast(mask, "i1")
        if list(full.shape) != shape:
            full = self.imp.expand(full, shape)
        if not numel or not math.prod(src):
            return x
        flat = ops.reshape(self.cast(full, "i64"), [numel])
        offset = ops.sub(
            self.one("npu.cumsum", [flat], {"axis": IntegerAttr(0, i64)}),
            self.graph.constant(1, "i64"),
        )
        offset = self.one(
            "npu.minimum",
            [
                ops.maximum(offset, self.graph.constant(0, "i64")),
                self.graph.constant(math.prod(src) - 1, "i64"),
            ],
        )
        picked = ops.index_select(
            ops.reshape(self.cast(source, x.dtype), [math.prod(src)]), 0, offset
        )
        return self.one("npu.select", [full, ops.reshape(picked, shape), x])

    def local_scalar(self, x: Tensor) -> Tensor:
        """`.item()`: the one element, kept on the device as a 0-d tensor.  What reads it
        as a number (an add, a where) takes a 0-d tensor alike; what needs it as a size at
        import time is refused there, as any data-dependent size is."""
        shape = self.static(x, "item")
        if math.prod(shape) != 1:
            raise self.unsupported(f"item of a tensor of {math.prod(shape)} elements")
        return ops.reshape(x, [])

    def resize(self, x: Tensor, size: Sequence[int], *_: Any, **__: Any) -> Tensor:
        """`resize_` as a value: the first elements of the flattened tensor in the new
        shape; a larger size's new elements (uninitialised in torch) are zeros."""
        have = math.prod(self.static(x, "resize_"))
        want = math.prod(int(d) for d in size)
        flat = ops.reshape(x, [have])
        if want <= have:
            flat = ops.slice(flat, 0, 0, want)
        else:
            flat = ops.cat([flat, self.fill_like([want - have], x.dtype, 0)], 0)
        return ops.reshape(flat, [int(d) for d in size])

    # -- sizes ----------------------------------------------------------------

    def numel(self, x: Tensor) -> int:
        if None in x.shape:
            raise self.unsupported("the element count of a tensor with dynamic dims")
        return math.prod(int(d or 0) for d in x.shape)

    def stride(self, x: Tensor, dim: int) -> int:
        return self.strides(x)[self.dim(x, dim)]

    # -- PyTorch's decompositions ---------------------------------------------

    def decomposed(self, *args: Any, **kwargs: Any) -> Any:
        """The current node through torch's decomposition of its op (or, for an op without
        one, through the op itself traced with the core decompositions: a composite op
        such as `aten.layer_norm` falls apart into core ops as it traces)."""
        try:
            import torch
            from torch._decomp import decomposition_table
            from torch.fx.experimental.proxy_tensor import make_fx
        except ImportError:
            raise self.unsupported("its decomposition needs torch installed") from None
        node = self.imp.node
        assert node is not None
        target = node.target
        if isinstance(target, str):  # a `.pt2` node: the op by its name
            _, packet, overload = target.split(".")
            target = getattr(getattr(torch.ops.aten, packet), overload)
        fn = decomposition_table.get(target, target)
        operands: list[Tensor] = []

        def to_meta(value: Any) -> Any:
            if isinstance(value, Tensor):
                if any(d is None for d in value.shape):
                    raise self.unsupported("a decomposition needs operands of static shape")
                operands.append(value)
                dtype = _TORCH_DTYPES[value.dtype]
                return torch.empty([int(d or 0) for d in value.shape], dtype=getattr(torch, dtype))
            if isinstance(value, list | tuple):
                return type(value)(to_meta(v) for v in value)
            return value

        # torch's CPU kernels compute f16 and bf16 in f32 and round once; a decomposition
        # run in f16 would round after every op.  So low-precision operands are widened to
        # f32 here and the results narrowed back to the node's dtypes.
        low = {"f16", "bf16"}
        args = tuple(self.cast(a, "f32") if _low(a, low) else a for a in args)
        kwargs = {k: self.cast(v, "f32") if _low(v, low) else v for k, v in kwargs.items()}
        args = tuple(
            [self.cast(v, "f32") if _low(v, low) else v for v in a] if isinstance(a, list) else a
            for a in args
        )
        margs, mkwargs = to_meta(list(args)), to_meta(dict(kwargs))
        leaves = [t for t in torch.utils._pytree.tree_leaves((margs, mkwargs)) if _is_torch(t)]

        def call(*tensors: Any) -> Any:
            it = iter(tensors)
            put = torch.utils._pytree.tree_map(
                lambda v: next(it) if _is_torch(v) else v, (margs, mkwargs)
            )
            return fn(*put[0], **put[1])

        key = _signature((target, margs, mkwargs))
        traced = _TRACES.get(key) if key is not None else None
        if traced is None:
            try:
                traced = make_fx(call, decomposition_table=_core_decompositions())(*leaves)
            except Exception as exc:  # torch's decomposition refused these arguments
                raise self.unsupported(f"its decomposition failed: {type(exc).__name__}") from None
            if key is not None:
                if len(_TRACES) >= _TRACES_KEPT:
                    del _TRACES[next(iter(_TRACES))]
                _TRACES[key] = traced
        if any(sub.target is target for sub in traced.graph.nodes):
            raise self.unsupported("its decomposition calls the op itself")
        if self._table is None:
            self._table = self.imp.handlers()
        handlers = self._table
        inputs = iter(operands)
        result: Any = None
        try:
            for sub in traced.graph.nodes:
                if sub.op == "placeholder":
                    self.imp.env[sub] = next(inputs)
                elif sub.op == "output":
                    result = self.imp.arg(sub.args[0])
                elif isinstance(sub.target, type):  # a reference's named tuple of results
                    self.imp.env[sub] = list(self.imp.arg(list(sub.args)))
                else:
                    self.imp.node = sub
                    self.imp.visit(sub, handlers)
        finally:
            self.imp.node = node
        if isinstance(result, list | tuple) and len(result) == 1:
            val = node.meta.get("val")
            if not isinstance(val, list | tuple):
                result = result[0]
        return self.narrowed(result)

    def narrowed(self, result: Any) -> Any:
        """`result` cast to the current node's result dtypes, where they differ."""
        vals = self.result_vals()
        if isinstance(result, Tensor):
            return self.cast(result, self.out_dtype()) if vals and _has_dtype(vals[0]) else result
        if isinstance(result, list | tuple):
            return type(result)(
                self.cast(r, self.out_dtype(i))
                if isinstance(r, Tensor) and i < len(vals) and _has_dtype(vals[i])
                else r
                for i, r in enumerate(result)
            )
        return result


_TORCH_DTYPES = {
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "i1": "bool",
    "i8": "int8",
    "ui8": "uint8",
    "i32": "int32",
    "i64": "int64",
    "c64": "complex64",
    "c128": "complex128",
}


def _three(values: Sequence[int]) -> list[int]:
    """A 3-d pooling argument, one value or three, as three."""
    return [int(v) for v in values] * (3 // len(values)) if values else []


def _low(value: Any, low: set[str]) -> bool:
    return isinstance(value, Tensor) and value.dtype in low


def _has_dtype(val: Any) -> bool:
    return val is not None and hasattr(val, "dtype") and hasattr(val, "shape")


def _is_torch(value: Any) -> bool:
    return type(value).__name__ in ("Tensor", "FakeTensor", "Parameter")


# ---------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------

UNARY: dict[str, str] = {
    name: f"npu.{name}"
    for name in (
        "abs acos acosh asin asinh atan atanh ceil cos cosh erf expm1 floor log log10 log1p "
        "log2 reciprocal round sign sin sinh tan tanh trunc"
    ).split()
}
"""`aten.<name>.default` to its unary npu op (the operand cast to the result's dtype)."""

BINARY: dict[str, str] = {
    "atan2.default": "npu.atan2",
    "atan2.out": "npu.atan2",
    "minimum.default": "npu.minimum",
    "maximum.default": "npu.maximum",
    "remainder.Tensor": "npu.remainder",
    "remainder.Scalar": "npu.remainder",
    "fmod.Tensor": "npu.fmod",
    "fmod.Scalar": "npu.fmod",
    "floor_divide.default": "npu.floor_divide",
    "bitwise_and.Tensor": "npu.bitwise_and",
    "bitwise_and.Scalar": "npu.bitwise_and",
    "bitwise_or.Tensor": "npu.bitwise_or",
    "bitwise_or.Scalar": "npu.bitwise_or",
    "bitwise_xor.Tensor": "npu.bitwise_xor",
    "bitwise_xor.Scalar": "npu.bitwise_xor",
    "__and__.Tensor": "npu.bitwise_and",
    "__or__.Tensor": "npu.bitwise_or",
    "__xor__.Tensor": "npu.bitwise_xor",
}
"""Binary ATen overloads (operands cast to the result's dtype) to their npu op."""

COMPARE: dict[str, str] = {
    f"{name}.{overload}": f"npu.{name}"
    for name in ("eq", "ne", "lt", "le", "gt", "ge")
    for overload in ("Tensor", "Scalar")
}
"""Comparisons (operands cast to their common dtype) to their npu op."""

LOGICAL: dict[str, str] = {
    f"logical_{name}.default": f"npu.logical_{name}" for name in ("and", "or", "xor")
}

DECOMPOSED: tuple[str, ...] = (
    "_adaptive_avg_pool2d.default",
    "_log_softmax.default",
    "_native_batch_norm_legit.default",
    "_native_batch_norm_legit.no_stats",
    "_native_batch_norm_legit_no_training.default",
    "col2im.default",
    "elu.default",
    "grid_sampler_2d.default",
    "hardtanh.default",
    "leaky_relu.default",
    "max_pool2d_with_indices.default",
    "max_pool3d_with_indices.default",
    "adaptive_avg_pool1d.default",
    "avg_pool1d.default",
    "native_group_norm.default",
    "native_layer_norm.default",
    "reflection_pad1d.default",
    "reflection_pad2d.default",
    "reflection_pad3d.default",
    "repeat.default",
    "replication_pad2d.default",
    "replication_pad3d.default",
    "select_scatter.default",
    "slice_scatter.default",
    "upsample_bilinear2d.vec",
    "upsample_nearest2d.vec",
    # composite ops an export keeps (not core; what transformers models emit)
    "layer_norm.default",
    "log_softmax.int",
    "tril.default",
    "triu.default",
    "group_norm.default",
    "batch_norm.default",
    "logsumexp.default",
    "roll.default",
    "stack.default",
    "unbind.int",
    "baddbmm.default",
    "addcmul.default",
    "std.correction",
    "linalg_vector_norm.default",
    "hardswish.default",
    "softplus.default",
    "outer.default",
    "einsum.default",
    "max_pool2d.default",
)
"""Overloads imported through PyTorch's decomposition (`_Core.decomposed`)."""


def handlers(importer: Any) -> dict[str, Handler]:
    """The Core ATen handlers for one importer, by target name (`aten.cos.default`)."""
    c = _Core(importer)
    table: dict[str, Handler] = {}
    for name, op in UNARY.items():
        table[f"{name}.default"] = c.unary(op)
    # The npu ops of these are torch.py's; torch computes them on an integer tensor in
    # its default float dtype, so the operand is cast to the result's.
    for name in ("exp", "sqrt", "rsqrt", "sigmoid", "silu"):
        table[f"{name}.default"] = c.unary(f"npu.{name}")
    table["bitwise_not.default"] = c.unary("npu.bitwise_not")
    table["logical_not.default"] = c.unary("npu.logical_not", cast=False)
    table["isnan.default"] = c.unary("npu.isnan", cast=False)
    table["isinf.default"] = c.unary("npu.isinf", cast=False)
    table.update({k: c.binary(v) for k, v in BINARY.items()})
    table.update({k: c.compare(v) for k, v in COMPARE.items()})
    table.update({k: c.logical(v) for k, v in LOGICAL.items()})
    table.update({name: c.decomposed for name in DECOMPOSED})
    table.update(
        {
            "add.Tensor": c.arith(ops.add),
            "add.Scalar": c.arith(ops.add),
            "sub.Tensor": c.arith(ops.sub),
            "sub.Scalar": c.arith(ops.sub),
            "rsub.Scalar": c.arith(ops.sub, reverse=True),
            "rsub.Tensor": c.arith(ops.sub, reverse=True),
            "mul.Tensor": c.arith(ops.mul),
            "mul.Scalar": c.arith(ops.mul),
            "div.Tensor": c.arith(ops.div),
            "div.Scalar": c.arith(ops.div),
            "pow.Tensor_Tensor": c.pow,
            "pow.Tensor_Scalar": c.pow,
            "pow.Scalar": c.pow,
            "div.Tensor_mode": c.div_mode,
            "div.Scalar_mode": c.div_mode,
            "where.self": c.where,
            "where.ScalarSelf": c.where,
            "where.ScalarOther": c.where,
            "where.Scalar": c.where,
            "masked_fill.Scalar": c.masked_fill,
            "masked_fill.Tensor": c.masked_fill,
            "clamp.default": c.clamp,
            "clamp.Tensor": c.clamp,
            "clamp_min.default": lambda x, lo: c.clamp(x, lo, None),
            "clamp_max.default": lambda x, hi: c.clamp(x, None, hi),
            "cumsum.default": c.cumulative("npu.cumsum"),
            "cumprod.default": c.cumulative("npu.cumprod"),
            "var.correction": lambda *a, **k: c.variance(*a, **k)[0],
            "var.dim": lambda *a, **k: c.variance(*a, **k)[0],
            "var_mean.correction": c.variance,
            "amin.default": c.amin,
            "prod.default": c.prod,
            "prod.dim_int": c.prod,
            "any.default": c.any,
            "any.dim": c.any,
            "any.dims": c.any,
            "sum.dim_IntList": c.sum,
            "sum.default": c.sum,
            "mean.default": c.mean,
            "mean.dim": c.mean,
            "addmm.default": c.addmm,
            "amax.default": lambda x, dim=(), keepdim=False: c.reduce(
                "npu.reduce_max", x, list(dim), keepdim, None
            ),
            "index_select.default": c.index_select,
            "argmax.default": c.arg("npu.argmax"),
            "argmin.default": c.arg("npu.argmin"),
            "max.dim": c.extreme_dim("npu.reduce_max", "npu.argmax"),
            "min.dim": c.extreme_dim("npu.reduce_min", "npu.argmin"),
            "max.default": lambda x: c.reduce("npu.reduce_max", x, None, False, None),
            "min.default": lambda x: c.reduce("npu.reduce_min", x, None, False, None),
            "sort.default": c.sort,
            "sort.stable": c.sort,
            "topk.default": c.topk,
            "full.default": c.full_value,
            "full_like.default": c.full_value,
            "new_full.default": c.full_value,
            "fill.Scalar": c.full_value,
            "scalar_tensor.default": c.full_value,
            "zeros.default": c.full(0),
            "zeros_like.default": c.full(0),
            "new_zeros.default": c.full(0),
            "ones.default": c.full(1),
            "ones_like.default": c.full(1),
            "new_ones.default": c.full(1),
            # An empty tensor's values are unspecified; npuir gives zeros, deterministically.
            "empty.memory_format": c.full(0),
            "empty_strided.default": c.full(0),
            "empty_like.default": c.full(0),
            "new_empty.default": c.full(0),
            "arange.default": c.arange,
            "arange.start": c.arange,
            "arange.start_step": c.arange,
            "gather.default": c.gather,
            "scatter.src": c.scatter,
            "scatter.value": c.scatter,
            "scatter_add.default": lambda x, d, i, s: c.scatter(x, d, i, s, "sum"),
            "scatter_reduce.two": c.scatter,
            "index.Tensor": c.index,
            "index_put.default": c.index_put,
            "index_put_.default": c.index_put,
            "flip.default": c.flip,
            "constant_pad_nd.default": lambda x, pad, value=0: c.pad(x, pad, "constant", value),
            "as_strided.default": c.as_strided,
            "diagonal.default": c.diagonal,
            "split_with_sizes.default": c.split_with_sizes,
            "squeeze.dims": c.squeeze_dims,
            "squeeze.dim": lambda x, dim: c.squeeze_dims(x, [dim]),
            "squeeze.default": c.squeeze_dims,
            "copy.default": c.copy,
            # A decomposition's update of a buffer (batch norm's running stats): the value
            # written, as a functional graph reads it.
            "copy_.default": c.copy,
            "to.dtype_layout": c.to_dtype,
            "to.device": c.to_dtype,
            "lift_fresh_copy.default": lambda x: x,
            "convolution.default": c.convolution,
            "avg_pool2d.default": c.avg_pool2d,
            "avg_pool3d.default": c.avg_pool3d,
            "_softmax.default": c.softmax,
            "_adaptive_avg_pool3d.default": c.adaptive_avg_pool3d,
            "_cdist_forward.default": c.cdist,
            "_pdist_forward.default": c.pdist,
            "_embedding_bag.default": c.embedding_bag,
            # what F.embedding_bag calls when no gradient is wanted: the same op
            "_embedding_bag_forward_only.default": c.embedding_bag,
            "masked_scatter.default": c.masked_scatter,
            "_fft_r2c.default": c.fft("r2c"),
            "_fft_c2r.default": c.fft("c2r"),
            "_fft_c2c.default": c.fft("c2c"),
            "_local_scalar_dense.default": c.local_scalar,
            "resize_.default": c.resize,
            "diff.default": c.diff,
            "sym_numel.default": c.numel,
            "sym_stride.int": c.stride,
            "sym_storage_offset.default": lambda x: 0,
            "sym_is_contiguous.default": lambda x, *_: True,
        }
    )
    return {f"aten.{name}": handler for name, handler in table.items()}


COMPLEX_OK: frozenset[str] = frozenset(
    f"aten.{name}"
    for name in """
    _fft_r2c.default _fft_c2r.default _fft_c2c.default _to_copy.default to.dtype
    to.dtype_layout view.default reshape.default _unsafe_view.default clone.default
    contiguous.default alias.default detach.default permute.default transpose.int t.default
    slice.Tensor select.int cat.default unsqueeze.default squeeze.dim squeeze.dims
    squeeze.default expand.default lift_fresh_copy.default
    """.split()
)
"""The ops that take or give a complex tensor: the FFTs, casts and data movement.  npuir's
other kernels compute in real arithmetic (an `abs` of a complex tensor would drop its
imaginary part), so they refuse a complex operand or result (`complex_guarded`)."""


def complex_guarded(importer: Any, table: dict[str, Handler]) -> dict[str, Handler]:
    """`table` with every ATen handler outside `COMPLEX_OK` refusing a complex operand or
    result (an unmapped form, located at the model's line like any other)."""

    def guard(name: str, handler: Handler) -> Handler:
        def guarded(*args: Any, **kwargs: Any) -> Any:
            leaves = [*args, *kwargs.values()]
            leaves += [v for a in leaves if isinstance(a, list | tuple) for v in a]
            node = importer.node
            val = node.meta.get("val") if node is not None else None
            vals = list(val) if isinstance(val, list | tuple) else [val]
            dtypes = {str(v.dtype) for v in leaves if isinstance(v, Tensor)}
            dtypes |= {
                str(v.dtype).removeprefix("torch.") for v in vals if v is not None and _has_dtype(v)
            }
            found = sorted(d for d in dtypes if d in ("c64", "c128", "complex64", "complex128"))
            if found:
                from npuir.frontends.torch import UnsupportedOp

                raise UnsupportedOp(
                    f"a {_TORCH_DTYPES.get(found[0], found[0])} tensor: npuir takes complex "
                    "tensors in FFTs, casts and data movement only"
                )
            return handler(*args, **kwargs)

        return guarded

    return {
        name: handler
        if name in COMPLEX_OK or not name.startswith("aten.")
        else guard(name, handler)
        for name, handler in table.items()
    }


CORE_ATEN: tuple[str, ...] = tuple(
    """
    _adaptive_avg_pool2d.default _adaptive_avg_pool3d.default _cdist_forward.default
    _embedding_bag.default _fft_c2r.default _fft_r2c.default _local_scalar_dense.default
    _log_softmax.default _native_batch_norm_legit.default
    _native_batch_norm_legit.no_stats _native_batch_norm_legit_no_training.default
    _pdist_forward.default _softmax.default _to_copy.default abs.default acos.default
    acosh.default adaptive_avg_pool1d.default add.Scalar add.Tensor addmm.default
    alias.default amax.default amin.default any.default any.dim any.dims arange.start_step
    argmax.default argmin.default as_strided.default asin.default asinh.default
    atan.default atan2.default atan2.out atanh.default avg_pool1d.default
    avg_pool2d.default avg_pool3d.default bitwise_and.Scalar bitwise_and.Tensor
    bitwise_not.default bitwise_or.Scalar bitwise_or.Tensor bitwise_xor.Scalar
    bitwise_xor.Tensor bmm.default cat.default ceil.default clamp.Tensor clamp.default
    clone.default col2im.default constant_pad_nd.default convolution.default copy.default
    cos.default cosh.default cumsum.default diagonal.default div.Scalar div.Scalar_mode
    div.Tensor div.Tensor_mode elu.default embedding.default empty.memory_format
    empty_strided.default eq.Scalar eq.Tensor erf.default exp.default expand.default
    expm1.default fill.Scalar flip.default floor.default fmod.Scalar fmod.Tensor
    full.default full_like.default gather.default ge.Scalar ge.Tensor gelu.default
    grid_sampler_2d.default gt.Scalar gt.Tensor hardtanh.default index.Tensor
    index_put.default index_select.default isinf.default isnan.default le.Scalar le.Tensor
    leaky_relu.default log.default log10.default log1p.default log2.default
    logical_and.default logical_not.default logical_or.default logical_xor.default
    lt.Scalar lt.Tensor masked_scatter.default max.dim max_pool2d_with_indices.default
    max_pool3d_with_indices.default maximum.default mean.default mean.dim min.dim
    minimum.default mm.default mul.Scalar mul.Tensor native_group_norm.default
    native_layer_norm.default ne.Scalar ne.Tensor neg.default nonzero.default
    permute.default pow.Scalar pow.Tensor_Scalar pow.Tensor_Tensor prod.default
    prod.dim_int reciprocal.default reflection_pad1d.default reflection_pad2d.default
    reflection_pad3d.default relu.default remainder.Scalar remainder.Tensor repeat.default
    replication_pad2d.default replication_pad3d.default resize_.default round.default
    rsqrt.default scalar_tensor.default scatter.src scatter.value scatter_add.default
    scatter_reduce.two select.int select_scatter.default sigmoid.default sign.default
    sin.default sinh.default slice.Tensor slice_scatter.default sort.default
    split_with_sizes.default sqrt.default squeeze.dim squeeze.dims sub.Scalar sub.Tensor
    sum.dim_IntList sym_is_contiguous.default sym_numel.default sym_size.int
    sym_storage_offset.default sym_stride.int tan.default tanh.default topk.default
    trunc.default unsqueeze.default upsample_bilinear2d.vec upsample_nearest2d.vec
    var.correction var.dim view.default where.self
    """.split()
)
"""PyTorch 2.13's Core ATen opset: the overloads of every ATen schema tagged `torch.Tag.core`,
less the random-number ones (`torch.Tag.nondeterministic_seeded`) and `*_backward`
(test_aten_coverage checks it against the installed torch)."""

UNCOVERED: dict[str, str] = {}
"""The core overloads without a lowering, and why."""

_EXISTING: dict[str, str] = {
    "add.Tensor": "npu.add",
    "add.Scalar": "npu.add",
    "sub.Tensor": "npu.sub",
    "sub.Scalar": "npu.sub",
    "mul.Tensor": "npu.mul",
    "mul.Scalar": "npu.mul",
    "div.Tensor": "npu.div",
    "div.Scalar": "npu.div",
    "neg.default": "npu.neg",
    "exp.default": "npu.exp",
    "sqrt.default": "npu.sqrt",
    "rsqrt.default": "npu.rsqrt",
    "relu.default": "npu.relu",
    "gelu.default": "npu.gelu",
    "sigmoid.default": "npu.sigmoid",
    "mm.default": "npu.matmul",
    "bmm.default": "npu.batch_matmul",
    "addmm.default": "npu.matmul, npu.add",
    "_softmax.default": "npu.softmax",
    "amax.default": "npu.reduce_max",
    "mean.dim": "npu.reduce_sum, npu.div",
    "permute.default": "npu.transpose",
    "view.default": "npu.reshape",
    "unsqueeze.default": "npu.reshape",
    "squeeze.dim": "npu.reshape",
    "cat.default": "npu.concat",
    "slice.Tensor": "npu.slice",
    "select.int": "npu.slice, npu.reshape",
    "index_select.default": "npu.gather",
    "embedding.default": "npu.gather",
    "nonzero.default": "npu.nonzero",
    "_to_copy.default": "npu.cast",
    "clone.default": "(none: the value itself)",
    "alias.default": "(none: the value itself)",
    "expand.default": "npu.reshape, npu.concat",
    "sym_size.int": "(at import: the static size)",
}
"""Core overloads `npuir.frontends.torch` maps itself, and the npu ops it builds."""

_SPECIAL: dict[str, str] = {
    "pow.Tensor_Tensor": "npu.pow (`x ** 2`: npu.mul)",
    "pow.Tensor_Scalar": "npu.pow (`x ** 2`: npu.mul)",
    "pow.Scalar": "npu.pow",
    "div.Tensor_mode": "npu.div, npu.trunc or npu.floor_divide",
    "div.Scalar_mode": "npu.div, npu.trunc or npu.floor_divide",
    "where.self": "npu.select",
    "clamp.default": "npu.maximum, npu.minimum",
    "clamp.Tensor": "npu.maximum, npu.minimum",
    "cumsum.default": "npu.cumsum",
    "var.correction": "npu.reduce_sum, npu.sub, npu.mul, npu.div",
    "var.dim": "npu.reduce_sum, npu.sub, npu.mul, npu.div",
    "amin.default": "npu.reduce_min",
    "prod.default": "npu.reduce_prod",
    "prod.dim_int": "npu.reduce_prod",
    "any.default": "npu.cast to i1, npu.reduce_max",
    "any.dim": "npu.cast to i1, npu.reduce_max",
    "any.dims": "npu.cast to i1, npu.reduce_max",
    "sum.dim_IntList": "npu.reduce_sum",
    "mean.default": "npu.reduce_sum, npu.div",
    "argmax.default": "npu.argmax",
    "argmin.default": "npu.argmin",
    "max.dim": "npu.reduce_max, npu.argmax",
    "min.dim": "npu.reduce_min, npu.argmin",
    "sort.default": "npu.sort",
    "topk.default": "npu.topk (largest), npu.sort and npu.slice (smallest)",
    "full.default": "npu.fill",
    "full_like.default": "npu.fill",
    "fill.Scalar": "npu.fill",
    "scalar_tensor.default": "npu.fill",
    "empty.memory_format": "npu.fill (zeros)",
    "empty_strided.default": "npu.fill (zeros)",
    "arange.start_step": "npu.arange",
    "gather.default": "npu.gather_elements",
    "scatter.src": "npu.scatter",
    "scatter.value": "npu.fill, npu.scatter",
    "scatter_add.default": "npu.scatter (sum)",
    "scatter_reduce.two": "npu.scatter (its reduction)",
    "index.Tensor": "npu.index",
    "index_put.default": "npu.index_put",
    "flip.default": "npu.flip",
    "constant_pad_nd.default": "npu.pad",
    "as_strided.default": "npu.as_strided",
    "diagonal.default": "npu.as_strided",
    "split_with_sizes.default": "npu.slice",
    "squeeze.dims": "npu.reshape",
    "copy.default": "npu.cast, npu.reshape, npu.concat",
    "convolution.default": "npu.conv2d (1-d as 2-d; not transposed, not 3-d)",
    "avg_pool2d.default": "npu.pool2d (avg; counted padding, no ceil_mode)",
    "avg_pool3d.default": "npu.pool2d over (H, W), then over D (counted padding, no ceil_mode)",
    "_adaptive_avg_pool3d.default": "npu.reduce_sum and npu.div per dim (npu.slice and "
    "npu.concat where a dim does not divide evenly)",
    "_cdist_forward.default": "npu.sub (broadcast), then the p-norm: npu.abs, npu.pow, "
    "npu.reduce_sum or npu.reduce_max, npu.sqrt",
    "_pdist_forward.default": "as _cdist_forward of the rows with themselves, the upper "
    "triangle by npu.slice and npu.concat",
    "_embedding_bag.default": "npu.gather of the rows, each index's bag from npu.arange, "
    "npu.ge and npu.reduce_sum over the offsets, npu.scatter (sum or amax) into the bags",
    "masked_scatter.default": "npu.cumsum of the mask gives each place's source offset, "
    "npu.gather, npu.select",
    "_local_scalar_dense.default": "npu.reshape to a 0-d tensor (the value stays on the device)",
    "_fft_r2c.default": "npu.fft (r2c; complex<f32> or complex<f64> out)",
    "_fft_c2r.default": "npu.fft (c2r)",
    "resize_.default": "npu.slice or npu.concat with zeros, npu.reshape (a value, not storage)",
    "sym_numel.default": "(at import: the static size)",
    "sym_stride.int": "(at import: the contiguous stride)",
    "sym_storage_offset.default": "(at import: 0)",
    "sym_is_contiguous.default": "(at import: true; npuir's tensors are contiguous values)",
    "bitwise_not.default": "npu.bitwise_not",
    "logical_not.default": "npu.logical_not",
    "isnan.default": "npu.isnan",
    "isinf.default": "npu.isinf",
}

_CUBE = frozenset({"mm.default", "bmm.default", "addmm.default", "convolution.default"})


def coverage() -> list[tuple[str, str, str, str]]:
    """One row per `CORE_ATEN` overload: (op, lowering, engine, kernel); an uncovered op's
    lowering says why and its engine and kernel are "-"."""
    table = {**handlers(None), **{f"aten.{name}": None for name in _EXISTING}}
    rows = []
    for name in CORE_ATEN:
        if name in UNCOVERED:
            rows.append((f"aten.{name}", f"not covered: {UNCOVERED[name]}", "-", "-"))
            continue
        if f"aten.{name}" not in table:
            rows.append((f"aten.{name}", "not covered: no handler", "-", "-"))
            continue
        if name in DECOMPOSED:
            lowering = "torch._decomp decomposition, imported op by op"
        else:
            plain = {**UNARY, **{f"{k}": v for k, v in BINARY.items()}, **COMPARE, **LOGICAL}
            lowering = (
                _EXISTING.get(name)
                or _SPECIAL.get(name)
                or plain.get(name.removesuffix(".default"))
                or plain.get(name, "")
            )
        engine = "cube" if name in _CUBE else "vector"
        if name.startswith("_fft_"):
            engine = "vector (an assumption: docs/aten-coverage.md)"
        rows.append((f"aten.{name}", lowering, engine, "numpy (backends/npu/kernels.py)"))
    return rows
