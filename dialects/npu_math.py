"""The `npu` dialect's table-made ops: the elementwise math, comparisons, scans, sorts,
fills and indexing that PyTorch's Core ATen opset needs.

About a hundred ATen ops differ only in the function they apply: `cos` and `sin` take one
tensor and give one of the same type, `eq` and `lt` take two and give `i1`, and so on.
Writing a class for each would be a hundred copies of the same forty lines, and their
parse, print, verify and docs would drift apart.  So each op is one row of `MATH_OPS`
(its name, its family, the unit it runs on, what it costs per element and a one-line
summary), and `_make` turns each row into an IRDL op class of its family's base class.
The classes are ordinary `npu` ops: `npuir.dialects.npu` registers them with the dialect
(`NPU_OPS`), so they parse, print and verify like the hand-written ones, the interpreter
runs them through their numpy kernels (`npuir.backends.npu.kernels`, keyed by name) and
the cost model reads their `flops()` and `bytes_moved()` as it reads every op's.

Families (a family is one base class: its operands, results, attributes and inference):

- `unary`: one tensor in, the same type out (`npu.cos`);
- `predicate`: one tensor in, `i1` of its shape out (`npu.isnan`);
- `binary`: two tensors of one element type, broadcast, the same type out (`npu.pow`);
- `compare`: two tensors of one element type, broadcast, `i1` out (`npu.lt`);
- `select`, `scan`, `reduce`, `arg_reduce`, `sort`, `fill`, `arange`, `gather_elements`,
  `scatter`, `index`, `index_put`, `flip`, `pad`, `as_strided`, `fft`: one op each, with the
  attributes their docstrings give.

Costs: an elementwise op's `flops()` is its row's per-element figure times the result's
elements (a transcendental function is several vector instructions; a comparison one);
a sort costs ``n * ceil(log2 n)`` comparisons per sorted row; data movement (flip, pad,
gather, scatter, index) costs no arithmetic, only its bytes.  `aicpu` rows run on the AI
CPU (data-dependent work Ascend leaves to it), the rest on the AI Core's vector unit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from xdsl.dialects.builtin import (
    ComplexType,
    DenseArrayBase,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
    i1,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_attr_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException

from npuir.dialects.effects import PureUntilScheduled
from npuir.dialects.npu import (
    DYN,
    BinaryOp,
    Engine,
    NpuOp,
    ReduceOp,
    Shape,
    UnaryOp,
    broadcast_shapes,
    fmt_shape,
    normalize_axis,
    num_elements,
    shape_of,
)

__all__ = ["MATH_OPS", "MATH_OP_CLASSES", "MathOp", "family_of"]


def _tensor(elem: Attribute, shape: Sequence[int]) -> TensorType[Attribute]:
    return TensorType(elem, list(shape))


@dataclass(frozen=True)
class MathOp:
    """One row of the table: an op `npu.<name>` of a family."""

    name: str
    family: str
    flops: int
    """Arithmetic per result element (per compared element for a sort)."""
    summary: str
    engine: Engine = Engine.VECTOR


def _ints(attr: DenseArrayBase[Any] | None) -> tuple[int, ...]:
    return () if attr is None else tuple(int(v) for v in attr.get_values())


# --------------------------------------------------------------------------
# Family base classes
# --------------------------------------------------------------------------


def _integers_only(op: NpuOp, ty: Attribute) -> None:
    """A bitwise op's operands are integers or i1 (torch refuses floats too)."""
    if getattr(op, "INTEGERS_ONLY", False):
        assert isinstance(ty, TensorType)
        if not isinstance(ty.element_type, IntegerType):
            raise VerifyException(f"operands must be integers or i1, got {ty.element_type}")


class _Unary(UnaryOp):
    """An elementwise function: one tensor in, the same type out."""

    EXAMPLE: ClassVar[str] = "%y = {name} %x : (tensor<4x8xf32>) -> tensor<4x8xf32>"
    INTEGERS_ONLY: ClassVar[bool] = False

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        _integers_only(self, operand_types[0])
        return [operand_types[0]]


class _Predicate(UnaryOp):
    """An elementwise test: one tensor in, `i1` of its shape out."""

    EXAMPLE: ClassVar[str] = "%m = {name} %x : (tensor<4x8xf32>) -> tensor<4x8xi1>"

    def __init__(self, input: SSAValue) -> None:
        NpuOp.__init__(self, operands=[input], result_types=[_tensor(i1, shape_of(input.type))])

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        return [_tensor(i1, shape_of(operand_types[0]))]


class _Binary(BinaryOp):
    """An elementwise function of two tensors of one element type, with broadcasting."""

    FLOPS_PER_ELEMENT: ClassVar[int] = 1
    INTEGERS_ONLY: ClassVar[bool] = False
    EXAMPLE: ClassVar[str] = (
        "%z = {name} %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>"
    )

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        _integers_only(self, operand_types[0])
        return BinaryOp.infer_for(operand_types[0], operand_types[1])

    def flops(self) -> int:
        return self.FLOPS_PER_ELEMENT * num_elements(shape_of(self.result.type))


class _Compare(_Binary):
    """An elementwise comparison (or logical connective): `i1` out, with broadcasting."""

    EXAMPLE: ClassVar[str] = (
        "%m = {name} %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>"
    )

    def __init__(self, lhs: SSAValue, rhs: SSAValue) -> None:
        (ty,) = BinaryOp.infer_for(lhs.type, rhs.type)
        NpuOp.__init__(self, operands=[lhs, rhs], result_types=[_tensor(i1, shape_of(ty))])

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        (ty,) = BinaryOp.infer_for(operand_types[0], operand_types[1])
        return [_tensor(i1, shape_of(ty))]


class _Select(NpuOp):
    """`where(cond, a, b)`: `a` where the `i1` condition holds, else `b`, all broadcast."""

    ENGINE: ClassVar[Engine] = Engine.VECTOR
    FLOPS_PER_ELEMENT: ClassVar[int] = 1
    EXAMPLE: ClassVar[str] = (
        "%z = {name} %m, %a, %b : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>"
    )
    cond = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        cond, a, b = operand_types
        assert isinstance(cond, TensorType)
        if cond.element_type != i1:
            raise VerifyException(f"the condition must be i1, got {cond.element_type}")
        (ty,) = BinaryOp.infer_for(a, b)
        assert isinstance(ty, TensorType)
        return [_tensor(ty.element_type, broadcast_shapes(shape_of(cond), shape_of(ty)))]

    def flops(self) -> int:
        return num_elements(shape_of(self.result.type))


class _Scan(NpuOp):
    """An inclusive scan along `axis`: the same type out."""

    ENGINE: ClassVar[Engine] = Engine.VECTOR
    FLOPS_PER_ELEMENT: ClassVar[int] = 1
    EXAMPLE: ClassVar[str] = (
        "%c = {name} %x {{axis = 1 : i64}} : (tensor<4x8xf32>) -> tensor<4x8xf32>"
    )
    input = operand_def(TensorType)
    result = result_def(TensorType)
    axis = opt_attr_def(IntegerAttr)
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        ty = operand_types[0]
        rank = len(shape_of(ty))
        if self.axis is not None:
            normalize_axis(self.axis.value.data, max(rank, 1))
        return [ty]

    def flops(self) -> int:
        return self.FLOPS_PER_ELEMENT * num_elements(shape_of(self.result.type))


class _Reduce(ReduceOp):
    """A reduction over `axes` (default: all), keeping them as 1 with `keepdims`."""

    FLOPS_PER_ELEMENT: ClassVar[int] = 1
    EXAMPLE: ClassVar[str] = (
        "%r = {name} %x {{axes = array<i64: 1>}} : (tensor<4x8xf32>) -> tensor<4xf32>"
    )

    def flops(self) -> int:
        return self.FLOPS_PER_ELEMENT * num_elements(shape_of(self.input.type))


class _ArgReduce(NpuOp):
    """The i64 index of the extreme element along `axis` (absent: of the flattened
    tensor), the first one on ties; `keepdims` keeps the reduced dims as 1."""

    ENGINE: ClassVar[Engine] = Engine.VECTOR
    FLOPS_PER_ELEMENT: ClassVar[int] = 1
    EXAMPLE: ClassVar[str] = (
        "%i = {name} %x {{axis = 1 : i64}} : (tensor<4x8xf32>) -> tensor<4xi64>"
    )
    input = operand_def(TensorType)
    result = result_def(TensorType)
    axis = opt_attr_def(IntegerAttr)
    keepdims = opt_attr_def(UnitAttr)
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        shape = shape_of(operand_types[0])
        keep = self.keepdims is not None
        if self.axis is None:
            return [_tensor(i64, (1,) * len(shape) if keep else ())]
        ax = normalize_axis(self.axis.value.data, max(len(shape), 1))
        if not shape:
            return [_tensor(i64, ())]
        out = [1 if i == ax else d for i, d in enumerate(shape) if keep or i != ax]
        return [_tensor(i64, out)]

    def flops(self) -> int:
        return self.FLOPS_PER_ELEMENT * num_elements(shape_of(self.input.type))


class _Sort(NpuOp):
    """Sorted values along `axis` (default -1), ascending unless `descending`, and their
    i64 indices; equal values keep their order (a stable sort), NaN sorts as the largest."""

    ENGINE: ClassVar[Engine] = Engine.VECTOR
    FLOPS_PER_ELEMENT: ClassVar[int] = 1
    EXAMPLE: ClassVar[str] = (
        "%v, %i = {name} %x {{axis = -1 : i64, descending}} : (tensor<4x8xf32>) "
        "-> (tensor<4x8xf32>, tensor<4x8xi64>)"
    )
    input = operand_def(TensorType)
    values = result_def(TensorType)
    indices = result_def(TensorType)
    axis = opt_attr_def(IntegerAttr)
    descending = opt_attr_def(UnitAttr)
    traits = traits_def(PureUntilScheduled())

    def _axis(self, rank: int) -> int:
        return normalize_axis(self.axis.value.data if self.axis else -1, max(rank, 1))

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        ty = operand_types[0]
        assert isinstance(ty, TensorType)
        shape = shape_of(ty)
        self._axis(len(shape))
        return [ty, _tensor(i64, shape)]

    def flops(self) -> int:
        shape = shape_of(self.input.type)
        if not shape:
            return 1
        n = shape[self._axis(len(shape))]
        n = 1 if n == DYN else n
        return num_elements(shape) * max(1, math.ceil(math.log2(max(2, n))))


class _Declared(NpuOp):
    """An op without operands whose result type is the declared one."""

    ENGINE: ClassVar[Engine] = Engine.VECTOR
    result = result_def(TensorType)
    traits = traits_def(PureUntilScheduled())
    # The format of every npu op, less the operands it has none of.
    assembly_format = "attr-dict `:` `(` `)` `->` type($result)"

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        return [self.result.type]

    def flops(self) -> int:
        return num_elements(shape_of(self.result.type))


class _Fill(_Declared):
    """A tensor of the declared type with every element `value` (0 when absent)."""

    EXAMPLE: ClassVar[str] = "%f = {name} {{value = 1.0 : f64}} : () -> tensor<4x8xf16>"
    value = opt_attr_def(FloatAttr)


class _Arange(_Declared):
    """The 1-D sequence `start + i * step` (defaults 0 and 1) of the declared type."""

    EXAMPLE: ClassVar[str] = (
        "%r = {name} {{start = 0.0 : f64, step = 2.0 : f64}} : () -> tensor<8xi64>"
    )
    start = opt_attr_def(FloatAttr)
    step = opt_attr_def(FloatAttr)

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        if len(shape_of(self.result.type)) != 1:
            raise VerifyException(f"the result must be 1-D, got {self.result.type}")
        return [self.result.type]


def _index_type(ty: Attribute, what: str) -> TensorType[Attribute]:
    assert isinstance(ty, TensorType)
    elem = ty.element_type
    if elem not in (i64, _I32):
        raise VerifyException(f"{what} must be i32 or i64, got {elem}")
    return ty


class _GatherElements(NpuOp):
    """`torch.gather`: `out[i][j] = data[index[i][j]][j]` along `axis`; the shape of the
    index, the element type of the data."""

    ENGINE: ClassVar[Engine] = Engine.VECTOR
    EXAMPLE: ClassVar[str] = (
        "%g = {name} %x, %i {{axis = 1 : i64}} : (tensor<4x8xf32>, tensor<4x2xi64>) "
        "-> tensor<4x2xf32>"
    )
    data = operand_def(TensorType)
    index = operand_def(TensorType)
    result = result_def(TensorType)
    axis = opt_attr_def(IntegerAttr)
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        data, index = operand_types
        assert isinstance(data, TensorType)
        idx = _index_type(index, "the index")
        if len(shape_of(idx)) != len(shape_of(data)):
            raise VerifyException(
                f"index rank {len(shape_of(idx))} differs from data rank {len(shape_of(data))}"
            )
        return [_tensor(data.element_type, shape_of(idx))]


class _Scatter(NpuOp):
    """`torch.scatter` and its reductions: a copy of `data` with `src`'s elements put at
    `index` along `axis`, combined by `reduce` ("none", the default, "sum", "prod",
    "amax", "amin" or "mean"), leaving the old values out of the reduction with
    `exclude_self`."""

    ENGINE: ClassVar[Engine] = Engine.VECTOR
    REDUCTIONS: ClassVar[tuple[str, ...]] = ("none", "sum", "prod", "amax", "amin", "mean")
    EXAMPLE: ClassVar[str] = (
        '%s = {name} %x, %i, %u {{axis = 0 : i64, reduce = "sum"}} : (tensor<4x8xf32>, '
        "tensor<2x8xi64>, tensor<2x8xf32>) -> tensor<4x8xf32>"
    )
    data = operand_def(TensorType)
    index = operand_def(TensorType)
    src = operand_def(TensorType)
    result = result_def(TensorType)
    axis = opt_attr_def(IntegerAttr)
    reduce = opt_attr_def(StringAttr)
    exclude_self = opt_attr_def(UnitAttr)
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        data, index, src = operand_types
        assert isinstance(data, TensorType) and isinstance(src, TensorType)
        _index_type(index, "the index")
        if self.reduce is not None and self.reduce.data not in self.REDUCTIONS:
            raise VerifyException(
                f"reduce must be one of {', '.join(self.REDUCTIONS)}, got {self.reduce.data!r}"
            )
        if src.element_type != data.element_type:
            raise VerifyException(
                f"src element type {src.element_type} differs from data's {data.element_type}"
            )
        return [data]

    def flops(self) -> int:
        return num_elements(shape_of(self.index.type))


def _index_result(data: Shape, dims: Sequence[int], index: Sequence[Shape]) -> Shape:
    """The shape of `data` indexed at `dims` by tensors of shapes `index` (numpy's rule:
    adjacent indexed dims are replaced in place by the indices' broadcast shape; apart,
    the broadcast shape goes first)."""
    if len(dims) != len(index) or not dims:
        raise VerifyException(f"'dims' names {len(dims)} dims for {len(index)} index tensors")
    norm = [normalize_axis(d, len(data)) for d in dims]
    if norm != sorted(set(norm)):
        raise VerifyException(f"'dims' must increase, got {list(dims)}")
    joint: Shape = ()
    for shape in index:
        joint = broadcast_shapes(joint, shape)
    rest = [d for i, d in enumerate(data) if i not in norm]
    if norm == list(range(norm[0], norm[0] + len(norm))):
        return (*data[: norm[0]], *joint, *data[norm[-1] + 1 :])
    return (*joint, *rest)


class _Index(NpuOp):
    """Advanced indexing (`aten.index.Tensor`): `data` indexed at the dims `dims` by the
    integer index tensors, the other dims taken whole."""

    ENGINE: ClassVar[Engine] = Engine.VECTOR
    EXAMPLE: ClassVar[str] = (
        "%g = {name} %x, %i {{dims = array<i64: 1>}} : (tensor<4x8xf32>, tensor<3xi64>) "
        "-> tensor<4x3xf32>"
    )
    data = operand_def(TensorType)
    indices = var_operand_def(TensorType)
    result = result_def(TensorType)
    dims = opt_attr_def(DenseArrayBase)
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        data = operand_types[0]
        assert isinstance(data, TensorType)
        index = [shape_of(_index_type(t, "an index")) for t in operand_types[1:]]
        shape = _index_result(shape_of(data), _ints(self.dims), index)
        return [_tensor(data.element_type, shape)]


class _IndexPut(NpuOp):
    """`aten.index_put`: a copy of `data` with `values` (broadcast) written at the places
    the index tensors name along `dims`, added to what is there with `accumulate`."""

    ENGINE: ClassVar[Engine] = Engine.VECTOR
    EXAMPLE: ClassVar[str] = (
        "%p = {name} %x, %v, %i {{dims = array<i64: 0>, accumulate}} : (tensor<4x8xf32>, "
        "tensor<8xf32>, tensor<2xi64>) -> tensor<4x8xf32>"
    )
    data = operand_def(TensorType)
    values = operand_def(TensorType)
    indices = var_operand_def(TensorType)
    result = result_def(TensorType)
    dims = opt_attr_def(DenseArrayBase)
    accumulate = opt_attr_def(UnitAttr)
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        data, values = operand_types[0], operand_types[1]
        assert isinstance(data, TensorType) and isinstance(values, TensorType)
        index = [shape_of(_index_type(t, "an index")) for t in operand_types[2:]]
        target = _index_result(shape_of(data), _ints(self.dims), index)
        if values.element_type != data.element_type:
            raise VerifyException(
                f"values' element type {values.element_type} differs from data's "
                f"{data.element_type}"
            )
        broadcast_shapes(target, shape_of(values))
        return [data]

    def flops(self) -> int:
        return num_elements(shape_of(self.values.type))


class _Flip(NpuOp):
    """The tensor with the order of its elements reversed along `axes`."""

    ENGINE: ClassVar[Engine] = Engine.VECTOR
    EXAMPLE: ClassVar[str] = (
        "%f = {name} %x {{axes = array<i64: 0, 1>}} : (tensor<4x8xf32>) -> tensor<4x8xf32>"
    )
    input = operand_def(TensorType)
    result = result_def(TensorType)
    axes = opt_attr_def(DenseArrayBase)
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        rank = len(shape_of(operand_types[0]))
        for a in _ints(self.axes):
            normalize_axis(a, max(rank, 1))
        return [operand_types[0]]


class _Pad(NpuOp):
    """The tensor padded by `pads` (before and after each dim, in dim order; a negative
    pad crops), with `value` (mode "constant", the default), the mirror image ("reflect")
    or the edge element ("edge")."""

    ENGINE: ClassVar[Engine] = Engine.VECTOR
    MODES: ClassVar[tuple[str, ...]] = ("constant", "reflect", "edge")
    EXAMPLE: ClassVar[str] = (
        '%p = {name} %x {{pads = array<i64: 0, 0, 1, 2>, mode = "reflect"}} : '
        "(tensor<4x8xf32>) -> tensor<4x11xf32>"
    )
    input = operand_def(TensorType)
    result = result_def(TensorType)
    pads = opt_attr_def(DenseArrayBase)
    mode = opt_attr_def(StringAttr)
    value = opt_attr_def(FloatAttr)
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        ty = operand_types[0]
        assert isinstance(ty, TensorType)
        shape = shape_of(ty)
        pads = _ints(self.pads) or (0,) * (2 * len(shape))
        if len(pads) != 2 * len(shape):
            raise VerifyException(f"'pads' needs {2 * len(shape)} values, got {len(pads)}")
        if self.mode is not None and self.mode.data not in self.MODES:
            raise VerifyException(
                f"mode must be one of {', '.join(self.MODES)}, got {self.mode.data!r}"
            )
        out = []
        for d, (lo, hi) in enumerate(zip(pads[::2], pads[1::2])):
            size = shape[d]
            if size == DYN:
                out.append(DYN)
                continue
            if size + lo + hi < 0:
                raise VerifyException(f"pads {lo}, {hi} crop dim {d} of size {size} below 0")
            out.append(size + lo + hi)
        return [_tensor(ty.element_type, out)]


class _AsStrided(NpuOp):
    """`aten.as_strided` of a contiguous tensor: the elements at `offset + sum(i_d *
    strides[d])` for every index of the shape `sizes` (the result's)."""

    ENGINE: ClassVar[Engine] = Engine.VECTOR
    EXAMPLE: ClassVar[str] = (
        "%d = {name} %x {{sizes = array<i64: 4>, strides = array<i64: 9>, offset = 0 : i64}} "
        ": (tensor<4x8xf32>) -> tensor<4xf32>"
    )
    input = operand_def(TensorType)
    result = result_def(TensorType)
    sizes = opt_attr_def(DenseArrayBase)
    strides = opt_attr_def(DenseArrayBase)
    offset = opt_attr_def(IntegerAttr)
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        ty = operand_types[0]
        assert isinstance(ty, TensorType)
        sizes, strides = _ints(self.sizes), _ints(self.strides)
        if len(sizes) != len(strides) or any(s < 0 for s in (*sizes, *strides)):
            raise VerifyException(
                f"'sizes' {list(sizes)} and 'strides' {list(strides)} must be as long and >= 0"
            )
        offset = self.offset.value.data if self.offset else 0
        numel = num_elements(shape_of(ty))
        last = offset + sum((n - 1) * s for n, s in zip(sizes, strides) if n > 0)
        if DYN not in shape_of(ty) and all(sizes) and not 0 <= offset <= last < numel:
            raise VerifyException(
                f"elements up to {last} from offset {offset} exceed the {numel} of "
                f"{fmt_shape(shape_of(ty))}"
            )
        return [_tensor(ty.element_type, sizes)]


class _Fft(NpuOp):
    """A discrete Fourier transform over `axes`, torch's `_fft_*` ops: `kind` "r2c" (real
    in, complex out; with `onesided` the last axis keeps n // 2 + 1 entries), "c2r" (the
    inverse of a onesided one: complex in, real out, the last axis `last_dim_size` long) or
    "c2c" (forward, or inverse with `inverse`).  Unnormalized unless `normalization` is 1
    (times 1 / sqrt(n)) or 2 (times 1 / n), n being the signal's size over the axes.  Costed
    as radix-2 FFTs, 5 n log2 n real operations per complex transform, half that for a real
    one; run on the vector unit (an assumption: see docs/aten-coverage.md)."""

    ENGINE: ClassVar[Engine] = Engine.VECTOR
    KINDS: ClassVar[tuple[str, ...]] = ("r2c", "c2r", "c2c")
    EXAMPLE: ClassVar[str] = (
        '%y = {name} %x {{kind = "r2c", axes = array<i64: 1>, onesided}} : '
        "(tensor<4x8xf32>) -> tensor<4x5xcomplex<f32>>"
    )
    input = operand_def(TensorType)
    result = result_def(TensorType)
    kind = opt_attr_def(StringAttr)
    axes = opt_attr_def(DenseArrayBase)
    normalization = opt_attr_def(IntegerAttr)
    onesided = opt_attr_def(UnitAttr)
    inverse = opt_attr_def(UnitAttr)
    last_dim_size = opt_attr_def(IntegerAttr)
    traits = traits_def(PureUntilScheduled())

    def _axes(self, rank: int) -> list[int]:
        axes = [normalize_axis(a, max(rank, 1)) for a in _ints(self.axes)]
        if not axes or len(set(axes)) != len(axes):
            raise VerifyException(f"'axes' must name distinct dims, got {list(_ints(self.axes))}")
        return axes

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        ty = operand_types[0]
        assert isinstance(ty, TensorType)
        kind = self.kind.data if self.kind is not None else ""
        if kind not in self.KINDS:
            raise VerifyException(f"kind must be one of {', '.join(self.KINDS)}, got {kind!r}")
        norm = self.normalization.value.data if self.normalization else 0
        if norm not in (0, 1, 2):
            raise VerifyException(f"normalization must be 0, 1 or 2, got {norm}")
        shape = list(shape_of(ty))
        last = self._axes(len(shape))[-1]
        elem = ty.element_type
        if kind == "r2c":
            if not isinstance(elem, Float32Type | Float64Type):
                raise VerifyException(f"an r2c transform takes f32 or f64, got {elem}")
            if self.onesided is not None and shape[last] != DYN:
                shape[last] = shape[last] // 2 + 1
            return [_tensor(ComplexType(elem), shape)]
        if not isinstance(elem, ComplexType):
            raise VerifyException(f"a {kind} transform takes a complex tensor, got {elem}")
        if kind == "c2c":
            return [ty]
        if self.last_dim_size is None:
            raise VerifyException("a c2r transform needs 'last_dim_size'")
        shape[last] = self.last_dim_size.value.data
        inner = elem.element_type
        assert isinstance(inner, Attribute)
        return [_tensor(inner, shape)]

    def flops(self) -> int:
        real = self.input.type if self.kind is None or self.kind.data != "c2r" else self.result.type
        shape = [1 if d == DYN else d for d in shape_of(real)]
        n = math.prod(shape[a] for a in self._axes(len(shape))) if shape else 1
        batch = num_elements(tuple(shape)) // max(n, 1)
        complex_ops = 5 * n * max(1, math.ceil(math.log2(max(n, 2)))) * batch
        return (
            complex_ops if self.kind is not None and self.kind.data == "c2c" else complex_ops // 2
        )


_I32 = IntegerType(32)

FAMILIES: dict[str, type[NpuOp]] = {
    "unary": _Unary,
    "predicate": _Predicate,
    "binary": _Binary,
    "compare": _Compare,
    "select": _Select,
    "scan": _Scan,
    "reduce": _Reduce,
    "arg_reduce": _ArgReduce,
    "sort": _Sort,
    "fill": _Fill,
    "arange": _Arange,
    "gather_elements": _GatherElements,
    "scatter": _Scatter,
    "index": _Index,
    "index_put": _IndexPut,
    "flip": _Flip,
    "pad": _Pad,
    "as_strided": _AsStrided,
    "fft": _Fft,
}
"""Each family's base class."""

MATH_OPS: tuple[MathOp, ...] = (
    # unary math: per-element costs as vector instruction counts (a polynomial or a
    # table lookup for a transcendental function, one instruction for a sign or a round)
    MathOp("abs", "unary", 1, "Elementwise absolute value."),
    MathOp("sign", "unary", 1, "Elementwise sign: -1, 0 or 1 (NaN stays NaN)."),
    MathOp("reciprocal", "unary", 1, "Elementwise `1 / x`."),
    MathOp("floor", "unary", 1, "Elementwise rounding down (integers unchanged)."),
    MathOp("ceil", "unary", 1, "Elementwise rounding up (integers unchanged)."),
    MathOp("round", "unary", 1, "Elementwise rounding to nearest, ties to even."),
    MathOp("trunc", "unary", 1, "Elementwise rounding toward zero."),
    MathOp("bitwise_not", "unary", 1, "Elementwise bitwise not (logical not on i1)."),
    MathOp("log", "unary", 4, "Elementwise natural logarithm."),
    MathOp("log2", "unary", 4, "Elementwise base-2 logarithm."),
    MathOp("log10", "unary", 4, "Elementwise base-10 logarithm."),
    MathOp("log1p", "unary", 5, "Elementwise `log(1 + x)`, accurate near 0."),
    MathOp("expm1", "unary", 5, "Elementwise `exp(x) - 1`, accurate near 0."),
    MathOp("sin", "unary", 6, "Elementwise sine."),
    MathOp("cos", "unary", 6, "Elementwise cosine."),
    MathOp("tan", "unary", 8, "Elementwise tangent."),
    MathOp("asin", "unary", 8, "Elementwise arcsine."),
    MathOp("acos", "unary", 8, "Elementwise arccosine."),
    MathOp("atan", "unary", 8, "Elementwise arctangent."),
    MathOp("sinh", "unary", 6, "Elementwise hyperbolic sine."),
    MathOp("cosh", "unary", 6, "Elementwise hyperbolic cosine."),
    MathOp("tanh", "unary", 6, "Elementwise hyperbolic tangent."),
    MathOp("asinh", "unary", 8, "Elementwise inverse hyperbolic sine."),
    MathOp("acosh", "unary", 8, "Elementwise inverse hyperbolic cosine."),
    MathOp("atanh", "unary", 8, "Elementwise inverse hyperbolic tangent."),
    MathOp("erf", "unary", 8, "Elementwise error function."),
    # tests
    MathOp("isnan", "predicate", 1, "Elementwise test for NaN."),
    MathOp("isinf", "predicate", 1, "Elementwise test for an infinity of either sign."),
    MathOp("logical_not", "predicate", 1, "Elementwise `x == 0`."),
    # binary math
    MathOp("minimum", "binary", 1, "Elementwise minimum (NaN if either is NaN)."),
    MathOp("pow", "binary", 8, "Elementwise power `a ** b`."),
    MathOp("remainder", "binary", 2, "Elementwise remainder with the divisor's sign (`%`)."),
    MathOp("fmod", "binary", 2, "Elementwise remainder with the dividend's sign (C's fmod)."),
    MathOp("floor_divide", "binary", 2, "Elementwise quotient rounded down."),
    MathOp("atan2", "binary", 10, "Elementwise arctangent of `a / b` in the right quadrant."),
    MathOp("bitwise_and", "binary", 1, "Elementwise bitwise and (logical and on i1)."),
    MathOp("bitwise_or", "binary", 1, "Elementwise bitwise or (logical or on i1)."),
    MathOp("bitwise_xor", "binary", 1, "Elementwise bitwise xor (logical xor on i1)."),
    # comparisons and logical connectives: i1 out
    MathOp("eq", "compare", 1, "Elementwise `a == b`."),
    MathOp("ne", "compare", 1, "Elementwise `a != b`."),
    MathOp("lt", "compare", 1, "Elementwise `a < b`."),
    MathOp("le", "compare", 1, "Elementwise `a <= b`."),
    MathOp("gt", "compare", 1, "Elementwise `a > b`."),
    MathOp("ge", "compare", 1, "Elementwise `a >= b`."),
    MathOp("logical_and", "compare", 1, "Elementwise `a != 0 and b != 0`."),
    MathOp("logical_or", "compare", 1, "Elementwise `a != 0 or b != 0`."),
    MathOp("logical_xor", "compare", 1, "Elementwise `(a != 0) != (b != 0)`."),
    # the rest
    MathOp("select", "select", 1, "Elementwise choice between two tensors by an i1 mask."),
    MathOp("cumsum", "scan", 1, "Inclusive running sum along `axis`."),
    MathOp("cumprod", "scan", 1, "Inclusive running product along `axis`."),
    MathOp("reduce_min", "reduce", 1, "Minimum over `axes`."),
    MathOp("reduce_prod", "reduce", 1, "Product over `axes`."),
    MathOp("argmax", "arg_reduce", 1, "Index of the largest element along `axis`."),
    MathOp("argmin", "arg_reduce", 1, "Index of the smallest element along `axis`."),
    MathOp("sort", "sort", 1, "Stable sort along `axis`, with the indices it takes."),
    MathOp("fill", "fill", 1, "A tensor of one value (`torch.full`, `zeros`, `ones`)."),
    MathOp("arange", "arange", 1, "An arithmetic sequence (`torch.arange`)."),
    MathOp("gather_elements", "gather_elements", 0, "Elements picked along `axis` by index."),
    MathOp("scatter", "scatter", 1, "Elements put along `axis` by index, maybe reduced."),
    MathOp("index", "index", 0, "Advanced indexing by integer tensors."),
    MathOp("index_put", "index_put", 1, "Writes (or adds) values at advanced indices."),
    MathOp("flip", "flip", 0, "Reversal along some axes."),
    MathOp("pad", "pad", 0, "Constant, reflection or edge padding."),
    MathOp("as_strided", "as_strided", 0, "A strided view of a contiguous tensor, copied."),
    MathOp("fft", "fft", 5, "A discrete Fourier transform, real or complex."),
)
"""The table: one row per op; `_make` makes each row's class."""


def _class_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_")) + "Op"


def _make(row: MathOp) -> type[NpuOp]:
    base = FAMILIES[row.family]
    name = f"npu.{row.name}"
    example = str(getattr(base, "EXAMPLE", "")).format(name=name)
    if row.name.startswith("bitwise_"):
        example = example.replace("f32", "i32")
    doc = f"{row.summary}\n\n{_doc_of(base)}\n\n```mlir\n{example}\n```\n"
    body: dict[str, object] = {
        "name": name,
        "__doc__": doc,
        "__module__": __name__,
        "__qualname__": _class_name(row.name),
        "ENGINE": row.engine,
        "FLOPS_PER_ELEMENT": row.flops,
        "INTEGERS_ONLY": row.name.startswith("bitwise_"),
        # IRDL takes an upper-case field for a constant only when it is a ClassVar.
        "__annotations__": {
            "ENGINE": ClassVar[Engine],
            "FLOPS_PER_ELEMENT": ClassVar[int],
            "INTEGERS_ONLY": ClassVar[bool],
        },
    }
    cls = type(_class_name(row.name), (base,), body)
    return irdl_op_definition(cls)


def _doc_of(base: type) -> str:
    return " ".join((base.__doc__ or "").split())


MATH_OP_CLASSES: tuple[type[NpuOp], ...] = tuple(_make(row) for row in MATH_OPS)
"""The op classes of `MATH_OPS`, in its order; `npuir.dialects.npu` registers them."""

_BY_NAME = {row.name: row for row in MATH_OPS}


def family_of(op_name: str) -> str | None:
    """The family of a table-made op (`"npu.cos"` gives `"unary"`), None for any other."""
    row = _BY_NAME.get(op_name.removeprefix("npu."))
    return None if row is None else row.family
