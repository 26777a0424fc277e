"""The `npu` dialect: the compute graph, one op per NPU operator.

Mirrors the operators a TorchAir graph hands to an Ascend NPU.  Every op
declares the engine it runs on — the cube unit (matrix multiply), the vector
unit, the host-side AI CPU, or the communication fabric — and enough to cost
it: `flops()` and `bytes_moved()`.  How many cores an op can use depends on
the device's tile sizes, so the backend's cost model decides that; the numeric
kernels live in the backend too.

Every op prints as `npu.NAME operands attr-dict : functional-type(operands,
results)`.  Since that format does not relate result types to operand types,
each op infers its result types from its operands (`infer_result_types`) and
its verifier checks the declared ones against them; gear specialisation uses
the same inference to re-type a function whose dims became static.

Dynamic dims (`?`) count as 1 in `flops()` and `bytes_moved()`: costs are only
meaningful on static shapes, which gears and `npuir-run --shape` provide.
The one exception is `npu.nonzero`, whose data-dependent result is costed at
its upper bound (every element non-zero).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import StrEnum
from typing import Any, ClassVar

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    I64,
    BFloat16Type,
    ComplexType,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Signedness,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, AttributeCovT, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AnyAttr,
    AttrConstraint,
    IRDLOperation,
    MessageConstraint,
    ParamAttrConstraint,
    VarConstraint,
    attr_def,
    base,
    irdl_op_definition,
    operand_def,
    opt_attr_def,
    opt_operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.irdl.constraints import VerificationContext
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from npuir.dialects.attributes import AttributeVerifier, SpelledEnum, VerifiesDialectAttributes
from npuir.dialects.effects import PureUntilScheduled

DYN = DYNAMIC_INDEX
"""A dynamic dim in a shape tuple."""

TARGET = "npu.target"
"""Module attribute naming the target device preset, e.g. "910b2"."""

OP_NAME = "npu.op_name"
"""The operator's original name (GE op name, FX node name), set by the importers: the key
profiles and advice match ops by."""

KERNEL = "npu.kernel"
"""The kernel kind an op is implemented by: "ascendc" (the default), "tbe", "atb" or
"aicpu".  It decides whether a core limit acts on the op (seed 003's table, applied by
`npuir.analysis.core_limits.limit_has_no_effect`)."""

KERNELS: tuple[str, ...] = ("ascendc", "tbe", "atb", "aicpu")
"""Every kernel kind, the default first."""


def kernel_of(op: Operation) -> str:
    """The op's kernel kind (`npu.kernel`, default "ascendc")."""
    attr = op.attributes.get(KERNEL)
    return attr.data if isinstance(attr, StringAttr) else KERNELS[0]


FULL_CORE_SYNC = "full_core_sync"
"""Unit attribute: the op must hold all the cores it asks for before it starts."""

Shape = tuple[int, ...]


class Engine(StrEnum):
    """The hardware unit an op runs on."""

    CUBE = "cube"
    VECTOR = "vector"
    AICPU = "aicpu"
    COMM = "comm"


# The one definition of the engines; every other list of them derives from these.
ENGINES: tuple[str, ...] = tuple(e.value for e in Engine)
"""Every engine's name, in `Engine` order."""

CORE_ENGINES: tuple[str, ...] = (Engine.CUBE.value, Engine.VECTOR.value, Engine.AICPU.value)
"""The engines that own a pool of cores on a device.  Collectives (`comm`) run on
the links, or in `aiv` mode borrow vector cores."""

LIMITED_ENGINES: tuple[str, ...] = (Engine.CUBE.value, Engine.VECTOR.value)
"""The AI Core's engines, whose core counts `coreset` limits (TorchAir's
`limit_core_num` takes cube and vector counts)."""


class CommMode(StrEnum):
    """How a collective moves its data (its `mode` attribute)."""

    SDMA = "sdma"
    """With the DMA engines, holding no compute cores (the default)."""
    AIV = "aiv"
    """Driven from vector cores, which it holds for its whole run."""


# --------------------------------------------------------------------------
# Shapes and types
# --------------------------------------------------------------------------


def shape_of(ty: Attribute) -> Shape:
    assert isinstance(ty, TensorType)
    return tuple(ty.get_shape())


def fmt_shape(shape: Shape) -> str:
    return "x".join("?" if d == DYN else str(d) for d in shape) or "scalar"


def element_bytes(elem: Attribute) -> int:
    """Storage size of one element; i1 is a byte, as on the device."""
    if isinstance(elem, Float16Type | BFloat16Type):
        return 2
    if isinstance(elem, Float32Type):
        return 4
    if isinstance(elem, Float64Type):
        return 8
    if isinstance(elem, IntegerType):
        return max(1, elem.width.data // 8)
    if isinstance(elem, ComplexType):  # a real and an imaginary part
        return 2 * element_bytes(elem.element_type)
    raise VerifyException(f"unsupported element type {elem}")


def dtype_name(elem: Attribute) -> str:
    """The short name the backend uses: f16, bf16, f32, f64, i1, i8 .. i64, ui8 .. ui64, and
    c64 and c128 for complex<f32> and complex<f64> (numpy's names, by total bits)."""
    if isinstance(elem, Float16Type):
        return "f16"
    if isinstance(elem, BFloat16Type):
        return "bf16"
    if isinstance(elem, Float32Type):
        return "f32"
    if isinstance(elem, Float64Type):
        return "f64"
    if isinstance(elem, IntegerType):
        unsigned = elem.signedness.data == Signedness.UNSIGNED
        return f"{'ui' if unsigned else 'i'}{elem.width.data}"
    if isinstance(elem, ComplexType) and isinstance(elem.element_type, Float32Type | Float64Type):
        return f"c{2 * element_bytes(elem.element_type) * 8}"
    raise VerifyException(f"unsupported element type {elem}")


def num_elements(shape: Shape) -> int:
    return math.prod(1 if d == DYN else d for d in shape)


def tensor_bytes(ty: Attribute) -> int:
    assert isinstance(ty, TensorType)
    return num_elements(shape_of(ty)) * element_bytes(ty.element_type)


def _tensor(elem: Attribute, shape: Sequence[int]) -> TensorType[Attribute]:
    return TensorType(elem, list(shape))


def _dims_agree(a: int, b: int) -> bool:
    return a == DYN or b == DYN or a == b


def compatible(declared: Attribute, inferred: Attribute) -> bool:
    """Equal element types and ranks, dims equal where both are static."""
    if not isinstance(declared, TensorType) or not isinstance(inferred, TensorType):
        return declared == inferred
    if declared.element_type != inferred.element_type:
        return False
    ds, is_ = shape_of(declared), shape_of(inferred)
    return len(ds) == len(is_) and all(_dims_agree(a, b) for a, b in zip(ds, is_))


def broadcast_shapes(a: Shape, b: Shape) -> Shape:
    """Numpy broadcasting, with `?` matching anything."""
    rank = max(len(a), len(b))
    pa = (1,) * (rank - len(a)) + a
    pb = (1,) * (rank - len(b)) + b
    out: list[int] = []
    for x, y in zip(pa, pb):
        if x == 1:
            out.append(y)
        elif y == 1 or x == y:
            out.append(x)
        elif x == DYN:
            out.append(y)
        elif y == DYN:
            out.append(x)
        else:
            raise VerifyException(
                f"shapes {fmt_shape(a)} and {fmt_shape(b)} do not broadcast ({x} vs {y})"
            )
    return tuple(out)


def normalize_axis(axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise VerifyException(f"axis {axis} is out of range for rank {rank}")
    return axis % rank


def _int_attr(op: Operation, name: str, default: int) -> int:
    attr = op.attributes.get(name)
    return attr.value.data if isinstance(attr, IntegerAttr) else default


def _ints(attr: DenseArrayBase[I64]) -> tuple[int, ...]:
    return tuple(int(x) for x in attr.get_values())


def _str_attr(op: Operation, name: str, default: str) -> str:
    attr = op.attributes.get(name)
    return attr.data if isinstance(attr, StringAttr) else default


# --------------------------------------------------------------------------
# Attribute constraints
# --------------------------------------------------------------------------


class _Spelled(MessageConstraint[AttributeCovT]):
    """A constraint whose failure says how the attribute is spelled.

    xDSL's own messages name a parameter (`Expected attribute i64 but got f32`)
    rather than the attribute; this one gives the whole spelling instead, in one
    line, as npuir's diagnostics are.
    """

    def verify(self, attr: Attribute, constraint_context: VerificationContext) -> None:
        try:
            self.constr.verify(attr, constraint_context)
        except VerifyException:
            raise VerifyException(f"{self.message}, got {attr}") from None


def _i64_array(name: str) -> AttrConstraint[DenseArrayBase[I64]]:
    return _Spelled(DenseArrayBase.constr(i64), f"'{name}' must be an i64 array (array<i64: ...>)")


def _i64(name: str) -> AttrConstraint[IntegerAttr[I64]]:
    return _Spelled(IntegerAttr[I64], f"'{name}' must be an i64 integer (N : i64)")


def _f32(name: str) -> AttrConstraint[FloatAttr[Float32Type]]:
    return _Spelled(FloatAttr[Float32Type], f"'{name}' must be an f32 float (X : f32)")


# --------------------------------------------------------------------------
# Base classes
# --------------------------------------------------------------------------


class NpuOp(IRDLOperation):
    """Common behaviour of every `npu` op; concrete ops set `name` and `engine`."""

    ENGINE: ClassVar[Engine]
    IS_FULL_CORE_SYNC: ClassVar[bool] = False

    traits = traits_def(VerifiesDialectAttributes())

    @property
    def engine(self) -> Engine:
        """The unit the op runs on: the AI CPU for an AI CPU kernel (`npu.kernel`)."""
        if KERNEL in self.attributes and kernel_of(self) == "aicpu":
            return Engine.AICPU
        return self.ENGINE

    assembly_format = "operands attr-dict `:` functional-type(operands, results)"

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        """Result types implied by `operand_types` and the op's attributes.

        Ops whose result comes from the declared type (reshape, cast) read it.
        """
        raise NotImplementedError

    def flops(self) -> int:
        """Arithmetic operations the op performs."""
        return 0

    def bytes_moved(self) -> int:
        """Bytes read from and written to HBM."""
        return sum(tensor_bytes(v.type) for v in self.operands) + sum(
            tensor_bytes(r.type) for r in self.results
        )

    @property
    def full_core_sync(self) -> bool:
        """Whether the op must hold every core it asks for before starting."""
        return self.IS_FULL_CORE_SYNC or FULL_CORE_SYNC in self.attributes

    def verify_(self) -> None:
        operand_types = [v.type for v in self.operands]
        for ty in [*operand_types, *self.result_types]:
            if isinstance(ty, TensorType):
                element_bytes(ty.element_type)
        inferred = self.infer_result_types(operand_types)
        for i, (res, want) in enumerate(zip(self.results, inferred)):
            if not compatible(res.type, want):
                which = f"result #{i}" if len(self.results) > 1 else "result"
                raise VerifyException(
                    f"{which} type {res.type} does not match the inferred type {want}"
                )
        flag = self.attributes.get(FULL_CORE_SYNC)
        if flag is not None and not isinstance(flag, UnitAttr):
            raise VerifyException(f"'{FULL_CORE_SYNC}' is a unit attribute")


class BinaryOp(NpuOp):
    """Elementwise binary op with numpy broadcasting."""

    ENGINE: ClassVar[Engine] = Engine.VECTOR
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(PureUntilScheduled())

    def __init__(self, lhs: SSAValue, rhs: SSAValue) -> None:
        (ty,) = BinaryOp.infer_for(lhs.type, rhs.type)
        super().__init__(operands=[lhs, rhs], result_types=[ty])

    @staticmethod
    def infer_for(lhs: Attribute, rhs: Attribute) -> list[Attribute]:
        assert isinstance(lhs, TensorType) and isinstance(rhs, TensorType)
        if lhs.element_type != rhs.element_type:
            raise VerifyException(
                f"operand element types differ: {lhs.element_type} and {rhs.element_type}"
            )
        return [_tensor(lhs.element_type, broadcast_shapes(shape_of(lhs), shape_of(rhs)))]

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        return BinaryOp.infer_for(operand_types[0], operand_types[1])

    def flops(self) -> int:
        return num_elements(shape_of(self.result.type))


class UnaryOp(NpuOp):
    """Elementwise unary op; `FLOPS_PER_ELEMENT` is a rough vector-unit estimate."""

    ENGINE: ClassVar[Engine] = Engine.VECTOR
    FLOPS_PER_ELEMENT: ClassVar[int] = 1
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(PureUntilScheduled())

    def __init__(self, input: SSAValue) -> None:
        super().__init__(operands=[input], result_types=[input.type])

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        return [operand_types[0]]

    def flops(self) -> int:
        return self.FLOPS_PER_ELEMENT * num_elements(shape_of(self.result.type))


class CollectiveOp(NpuOp):
    """A collective over `group_size` ranks of the communicator `group`.

    `mode = "sdma"` (default) moves data with the DMA engines; `"aiv"` runs on
    vector cores, which it then holds for its whole run.
    """

    ENGINE: ClassVar[Engine] = Engine.COMM
    input = operand_def(TensorType)
    result = result_def(TensorType)
    group_size_attr = attr_def(_i64("group_size"), attr_name="group_size")
    MODE: ClassVar[SpelledEnum[CommMode]] = SpelledEnum.of("mode", CommMode)
    mode_attr = opt_attr_def(MODE, attr_name="mode")
    group_attr = opt_attr_def(StringAttr, attr_name="group")

    @property
    def group_size(self) -> int:
        return self.group_size_attr.value.data

    @property
    def mode(self) -> CommMode:
        return self.MODE.member(self.mode_attr) or CommMode.SDMA

    @property
    def group(self) -> str:
        return _str_attr(self, "group", "world")

    def verify_(self) -> None:
        if self.group_size < 1:
            raise VerifyException(f"group_size must be >= 1, got {self.group_size}")
        super().verify_()

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        ty = operand_types[0]
        assert isinstance(ty, TensorType)
        shape = shape_of(ty)
        return [_tensor(ty.element_type, self.result_shape(shape))]

    def result_shape(self, shape: Shape) -> Shape:
        return shape

    def _split_dim0(self, shape: Shape) -> int:
        if not shape:
            raise VerifyException("needs a tensor of rank >= 1")
        d0 = shape[0]
        if d0 != DYN and d0 % self.group_size:
            raise VerifyException(
                f"dim 0 ({d0}) is not divisible by group_size ({self.group_size})"
            )
        return d0

    @property
    def uses_vector_cores(self) -> bool:
        return self.mode is CommMode.AIV


# --------------------------------------------------------------------------
# Cube ops
# --------------------------------------------------------------------------


def _matmul_dims(a: Shape, b: Shape, ta: bool, tb: bool) -> tuple[int, int, int]:
    m, k1 = (a[-1], a[-2]) if ta else (a[-2], a[-1])
    k2, n = (b[-1], b[-2]) if tb else (b[-2], b[-1])
    if not _dims_agree(k1, k2):
        raise VerifyException(
            f"inner dimensions differ: lhs {fmt_shape(a)} gives K = {k1}, "
            f"rhs {fmt_shape(b)} gives K = {k2}"
        )
    return m, n, k1 if k1 != DYN else k2


@irdl_op_definition
class MatmulOp(NpuOp):
    """Matrix multiply `[M,K] x [K,N] -> [M,N]` on the cube unit.

    f16/bf16 products accumulate in f32, as the cube unit does.

    ```mlir
    %c = npu.matmul %a, %b {transpose_b} : (tensor<64x32xf16>, tensor<16x32xf16>) -> tensor<64x16xf16>
    ```
    """

    name = "npu.matmul"
    ENGINE: ClassVar[Engine] = Engine.CUBE
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    transpose_a = opt_attr_def(UnitAttr)
    transpose_b = opt_attr_def(UnitAttr)
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        a, b = operand_types
        assert isinstance(a, TensorType) and isinstance(b, TensorType)
        if a.get_num_dims() != 2 or b.get_num_dims() != 2:
            raise VerifyException("operands must be rank-2 tensors")
        if a.element_type != b.element_type:
            raise VerifyException(
                f"operand element types differ: {a.element_type} and {b.element_type}"
            )
        m, n, _ = _matmul_dims(
            shape_of(a), shape_of(b), self.transpose_a is not None, self.transpose_b is not None
        )
        return [_tensor(a.element_type, (m, n))]

    def mnk(self) -> tuple[int, int, int]:
        m, n, k = _matmul_dims(
            shape_of(self.lhs.type),
            shape_of(self.rhs.type),
            self.transpose_a is not None,
            self.transpose_b is not None,
        )
        return tuple(1 if d == DYN else d for d in (m, n, k))  # type: ignore[return-value]

    def flops(self) -> int:
        m, n, k = self.mnk()
        return 2 * m * n * k


@irdl_op_definition
class BatchMatmulOp(NpuOp):
    """Batched matrix multiply `[B..,M,K] x [B..,K,N]`, leading batch dims broadcast.

    ```mlir
    %c = npu.batch_matmul %a, %b : (tensor<8x64x32xf16>, tensor<8x32x16xf16>) -> tensor<8x64x16xf16>
    ```
    """

    name = "npu.batch_matmul"
    ENGINE: ClassVar[Engine] = Engine.CUBE
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    transpose_a = opt_attr_def(UnitAttr)
    transpose_b = opt_attr_def(UnitAttr)
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        a, b = operand_types
        assert isinstance(a, TensorType) and isinstance(b, TensorType)
        if a.get_num_dims() < 3 or b.get_num_dims() < 3:
            raise VerifyException("operands must have rank >= 3 ([B..,M,K] x [B..,K,N])")
        if a.element_type != b.element_type:
            raise VerifyException(
                f"operand element types differ: {a.element_type} and {b.element_type}"
            )
        sa, sb = shape_of(a), shape_of(b)
        m, n, _ = _matmul_dims(sa, sb, self.transpose_a is not None, self.transpose_b is not None)
        batch = broadcast_shapes(sa[:-2], sb[:-2])
        return [_tensor(a.element_type, (*batch, m, n))]

    def flops(self) -> int:
        out = shape_of(self.result.type)
        sa, sb = shape_of(self.lhs.type), shape_of(self.rhs.type)
        _, _, k = _matmul_dims(sa, sb, self.transpose_a is not None, self.transpose_b is not None)
        return 2 * num_elements(out) * (1 if k == DYN else k)


# --------------------------------------------------------------------------
# Vector ops: elementwise
# --------------------------------------------------------------------------


@irdl_op_definition
class AddOp(BinaryOp):
    """Elementwise sum with numpy broadcasting.

    ```mlir
    %c = npu.add %a, %b : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
    ```
    """

    name = "npu.add"


@irdl_op_definition
class SubOp(BinaryOp):
    """Elementwise difference with numpy broadcasting.

    ```mlir
    %c = npu.sub %a, %b : (tensor<4x8xf16>, tensor<8xf16>) -> tensor<4x8xf16>
    ```
    """

    name = "npu.sub"


@irdl_op_definition
class MulOp(BinaryOp):
    """Elementwise product with numpy broadcasting.

    ```mlir
    %c = npu.mul %a, %b : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "npu.mul"


@irdl_op_definition
class DivOp(BinaryOp):
    """Elementwise quotient with numpy broadcasting.

    ```mlir
    %c = npu.div %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "npu.div"


@irdl_op_definition
class MaximumOp(BinaryOp):
    """Elementwise maximum with numpy broadcasting.

    ```mlir
    %c = npu.maximum %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "npu.maximum"


@irdl_op_definition
class NegOp(UnaryOp):
    """Elementwise negation.

    ```mlir
    %y = npu.neg %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
    ```
    """

    name = "npu.neg"


@irdl_op_definition
class ExpOp(UnaryOp):
    """Elementwise exponential.

    ```mlir
    %y = npu.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "npu.exp"
    FLOPS_PER_ELEMENT: ClassVar[int] = 4


@irdl_op_definition
class SqrtOp(UnaryOp):
    """Elementwise square root.

    ```mlir
    %y = npu.sqrt %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "npu.sqrt"
    FLOPS_PER_ELEMENT: ClassVar[int] = 2


@irdl_op_definition
class RsqrtOp(UnaryOp):
    """Elementwise reciprocal square root.

    ```mlir
    %y = npu.rsqrt %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "npu.rsqrt"
    FLOPS_PER_ELEMENT: ClassVar[int] = 2


@irdl_op_definition
class ReluOp(UnaryOp):
    """Elementwise `max(x, 0)`.

    ```mlir
    %y = npu.relu %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
    ```
    """

    name = "npu.relu"


class GeluApproximation(StrEnum):
    """How `npu.gelu` computes (its `approximate` attribute)."""

    TANH = "tanh"
    NONE = "none"
    """The exact (erf) form, also what an absent attribute means."""


@irdl_op_definition
class GeluOp(UnaryOp):
    """Elementwise GELU: exact (erf) unless `approximate = "tanh"`.

    ```mlir
    %y = npu.gelu %x {approximate = "tanh"} : (tensor<4x8xf16>) -> tensor<4x8xf16>
    ```
    """

    name = "npu.gelu"
    FLOPS_PER_ELEMENT: ClassVar[int] = 8
    APPROXIMATE: ClassVar[SpelledEnum[GeluApproximation]] = SpelledEnum.of(
        "approximate", GeluApproximation
    )
    approximate = opt_attr_def(APPROXIMATE)


@irdl_op_definition
class SiluOp(UnaryOp):
    """Elementwise `x * sigmoid(x)`.

    ```mlir
    %y = npu.silu %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
    ```
    """

    name = "npu.silu"
    FLOPS_PER_ELEMENT: ClassVar[int] = 5


@irdl_op_definition
class SigmoidOp(UnaryOp):
    """Elementwise logistic function.

    ```mlir
    %y = npu.sigmoid %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
    ```
    """

    name = "npu.sigmoid"
    FLOPS_PER_ELEMENT: ClassVar[int] = 4


@irdl_op_definition
class CastOp(NpuOp):
    """Elementwise conversion to the result's element type.

    ```mlir
    %y = npu.cast %x : (tensor<4x8xf16>) -> tensor<4x8xf32>
    ```
    """

    name = "npu.cast"
    ENGINE: ClassVar[Engine] = Engine.VECTOR
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        declared = self.result.type
        assert isinstance(declared, TensorType)
        return [_tensor(declared.element_type, shape_of(operand_types[0]))]

    def flops(self) -> int:
        return num_elements(shape_of(self.result.type))


# --------------------------------------------------------------------------
# Vector ops: along an axis
# --------------------------------------------------------------------------


@irdl_op_definition
class SwigluOp(NpuOp):
    """SwiGLU: split `axis` (default -1) into halves `a, b`, give `silu(a) * b`.

    ```mlir
    %y = npu.swiglu %x : (tensor<4x16xf16>) -> tensor<4x8xf16>
    ```
    """

    name = "npu.swiglu"
    ENGINE: ClassVar[Engine] = Engine.VECTOR
    input = operand_def(TensorType)
    result = result_def(TensorType)
    axis = opt_attr_def(_i64("axis"))
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        ty = operand_types[0]
        assert isinstance(ty, TensorType)
        shape = list(shape_of(ty))
        ax = normalize_axis(_int_attr(self, "axis", -1), len(shape))
        if shape[ax] != DYN:
            if shape[ax] % 2:
                raise VerifyException(f"axis {ax} has odd size {shape[ax]}; swiglu halves it")
            shape[ax] //= 2
        return [_tensor(ty.element_type, shape)]

    def flops(self) -> int:
        return 6 * num_elements(shape_of(self.result.type))


@irdl_op_definition
class SoftmaxOp(NpuOp):
    """Softmax along `axis` (default -1).

    ```mlir
    %y = npu.softmax %x {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    """

    name = "npu.softmax"
    ENGINE: ClassVar[Engine] = Engine.VECTOR
    input = operand_def(TensorType)
    result = result_def(TensorType)
    axis = opt_attr_def(_i64("axis"))
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        normalize_axis(_int_attr(self, "axis", -1), len(shape_of(operand_types[0])))
        return [operand_types[0]]

    def flops(self) -> int:
        return 5 * num_elements(shape_of(self.result.type))


@irdl_op_definition
class RmsNormOp(NpuOp):
    """RMS normalisation over the last axis, scaled by `gamma`.

    ```mlir
    %y = npu.rms_norm %x, %gamma {epsilon = 1.0e-06 : f32} : (tensor<4x8xf16>, tensor<8xf16>) -> tensor<4x8xf16>
    ```
    """

    name = "npu.rms_norm"
    ENGINE: ClassVar[Engine] = Engine.VECTOR
    input = operand_def(TensorType)
    gamma = operand_def(TensorType)
    result = result_def(TensorType)
    epsilon = opt_attr_def(_f32("epsilon"))
    traits = traits_def(PureUntilScheduled())

    def verify_(self) -> None:
        if self.epsilon is not None and self.epsilon.value.data <= 0:
            raise VerifyException("epsilon must be > 0")
        super().verify_()

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        x, g = operand_types
        assert isinstance(x, TensorType) and isinstance(g, TensorType)
        sx, sg = shape_of(x), shape_of(g)
        if not sx:
            raise VerifyException("input must have rank >= 1")
        if len(sg) != 1 or not _dims_agree(sg[0], sx[-1]):
            raise VerifyException(
                f"gamma must be a vector of the last dim ({fmt_shape(sx[-1:])}), "
                f"got {fmt_shape(sg)}"
            )
        if x.element_type != g.element_type:
            raise VerifyException("input and gamma element types differ")
        return [x]

    def flops(self) -> int:
        return 4 * num_elements(shape_of(self.result.type))


class ReduceOp(NpuOp):
    """Reduction over `axes` (default: all), keeping them as 1 with `keepdims`."""

    ENGINE: ClassVar[Engine] = Engine.VECTOR
    input = operand_def(TensorType)
    result = result_def(TensorType)
    axes = opt_attr_def(_i64_array("axes"))
    keepdims = opt_attr_def(UnitAttr)
    traits = traits_def(PureUntilScheduled())

    def reduced_axes(self, rank: int) -> set[int]:
        if self.axes is None:
            return set(range(rank))
        axes = _ints(self.axes)
        norm = [normalize_axis(a, rank) for a in axes]
        if len(set(norm)) != len(norm):
            raise VerifyException(f"axes {list(axes)} name an axis twice")
        return set(norm)

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        ty = operand_types[0]
        assert isinstance(ty, TensorType)
        shape = shape_of(ty)
        axes = self.reduced_axes(len(shape))
        keep = self.keepdims is not None
        out = [1 if i in axes else d for i, d in enumerate(shape) if keep or i not in axes]
        return [_tensor(ty.element_type, out)]

    def flops(self) -> int:
        return num_elements(shape_of(self.input.type))


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    """Sum over `axes`.

    ```mlir
    %s = npu.reduce_sum %x {axes = array<i64: 1>, keepdims} : (tensor<4x8xf32>) -> tensor<4x1xf32>
    ```
    """

    name = "npu.reduce_sum"


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    """Maximum over `axes`.

    ```mlir
    %m = npu.reduce_max %x {axes = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<8xf32>
    ```
    """

    name = "npu.reduce_max"


# --------------------------------------------------------------------------
# Vector ops: data movement
# --------------------------------------------------------------------------


@irdl_op_definition
class TransposeOp(NpuOp):
    """Permutes dims: result dim i is input dim `perm[i]`.

    ```mlir
    %t = npu.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x8xf16>) -> tensor<8x4xf16>
    ```
    """

    name = "npu.transpose"
    ENGINE: ClassVar[Engine] = Engine.VECTOR
    input = operand_def(TensorType)
    result = result_def(TensorType)
    perm = attr_def(_i64_array("perm"))
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        ty = operand_types[0]
        assert isinstance(ty, TensorType)
        shape = shape_of(ty)
        perm = _ints(self.perm)
        if sorted(perm) != list(range(len(shape))):
            raise VerifyException(
                f"perm {list(perm)} is not a permutation of the {len(shape)} dims"
            )
        return [_tensor(ty.element_type, [shape[p] for p in perm])]


@irdl_op_definition
class ReshapeOp(NpuOp):
    """Reinterprets the elements with the result's shape (a view: no data moves).

    One result dim may be `?` when the input is static; it is then solved from
    the element count.

    ```mlir
    %r = npu.reshape %x : (tensor<4x8xf16>) -> tensor<32xf16>
    ```
    """

    name = "npu.reshape"
    ENGINE: ClassVar[Engine] = Engine.VECTOR
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        ty, declared = operand_types[0], self.result.type
        assert isinstance(ty, TensorType) and isinstance(declared, TensorType)
        if ty.element_type != declared.element_type:
            raise VerifyException("reshape keeps the element type")
        src, dst = shape_of(ty), list(shape_of(declared))
        unknown = [i for i, d in enumerate(dst) if d == DYN]
        if DYN in src:
            return [declared]
        total = num_elements(src)
        known = num_elements(tuple(d for d in dst if d != DYN))
        if len(unknown) > 1:
            raise VerifyException(
                f"cannot infer {len(unknown)} unknown dims of {fmt_shape(tuple(dst))} "
                f"from {fmt_shape(src)}; at most one may be '?'"
            )
        if unknown:
            if known == 0 or total % known:
                raise VerifyException(f"cannot reshape {fmt_shape(src)} to {fmt_shape(tuple(dst))}")
            dst[unknown[0]] = total // known
        elif known != total:
            raise VerifyException(
                f"cannot reshape {fmt_shape(src)} ({total} elements) to "
                f"{fmt_shape(tuple(dst))} ({known} elements)"
            )
        return [_tensor(ty.element_type, dst)]

    def bytes_moved(self) -> int:
        return 0


@irdl_op_definition
class ConcatOp(NpuOp):
    """Joins its operands along `axis` (default -1).

    ```mlir
    %c = npu.concat %a, %b {axis = 0 : i64} : (tensor<2x8xf16>, tensor<3x8xf16>) -> tensor<5x8xf16>
    ```
    """

    name = "npu.concat"
    ENGINE: ClassVar[Engine] = Engine.VECTOR
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    axis = opt_attr_def(_i64("axis"))
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        if not operand_types:
            raise VerifyException("needs at least one operand")
        first = operand_types[0]
        assert isinstance(first, TensorType)
        rank = first.get_num_dims()
        ax = normalize_axis(_int_attr(self, "axis", -1), rank)
        out = list(shape_of(first))
        for ty in operand_types[1:]:
            assert isinstance(ty, TensorType)
            if ty.element_type != first.element_type or ty.get_num_dims() != rank:
                raise VerifyException("operands must share element type and rank")
            s = shape_of(ty)
            for i in range(rank):
                if i == ax:
                    out[i] = DYN if DYN in (out[i], s[i]) else out[i] + s[i]
                elif not _dims_agree(out[i], s[i]):
                    raise VerifyException(
                        f"operands differ in dim {i} ({out[i]} vs {s[i]}), "
                        f"which is not the concat axis"
                    )
                elif out[i] == DYN:
                    out[i] = s[i]
        return [_tensor(first.element_type, out)]


@irdl_op_definition
class SliceOp(NpuOp):
    """Takes the span of `sizes` elements from `offsets` in each dim, every `strides`-th of
    them (so `ceil(sizes / strides)` elements; torch's `x[o : o + n : s]`).

    ```mlir
    %s = npu.slice %x {offsets = array<i64: 0, 2>, sizes = array<i64: 4, 4>} : (tensor<4x8xf16>) -> tensor<4x4xf16>
    ```
    """

    name = "npu.slice"
    ENGINE: ClassVar[Engine] = Engine.VECTOR
    input = operand_def(TensorType)
    result = result_def(TensorType)
    offsets = attr_def(_i64_array("offsets"))
    sizes = attr_def(_i64_array("sizes"))
    strides = opt_attr_def(_i64_array("strides"))
    traits = traits_def(PureUntilScheduled())

    def _strides(self, rank: int) -> tuple[int, ...]:
        return (1,) * rank if self.strides is None else _ints(self.strides)

    def verify_(self) -> None:
        offsets, sizes = _ints(self.offsets), _ints(self.sizes)
        for i, (o, n, s) in enumerate(zip(offsets, sizes, self._strides(len(offsets)))):
            if o < 0 or n < 0 or s < 1:
                raise VerifyException(f"dim {i}: offset and size must be >= 0 and stride >= 1")
        super().verify_()

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        ty = operand_types[0]
        assert isinstance(ty, TensorType)
        shape = shape_of(ty)
        offsets, sizes = _ints(self.offsets), _ints(self.sizes)
        strides = self._strides(len(shape))
        if not len(offsets) == len(sizes) == len(strides) == len(shape):
            raise VerifyException(
                f"offsets, sizes and strides need one entry per dim ({len(shape)})"
            )
        out: list[int] = []
        for i, (d, o, n, s) in enumerate(zip(shape, offsets, sizes, strides)):
            if d != DYN and o + n > d:
                raise VerifyException(f"dim {i}: offset {o} + size {n} exceeds the dim ({d})")
            out.append(-(-n // s))
        return [_tensor(ty.element_type, out)]


@irdl_op_definition
class GatherOp(NpuOp):
    """Takes the slices of `data` at `indices` along `axis` (default 0), like `np.take`.

    ```mlir
    %g = npu.gather %table, %ids : (tensor<100x16xf16>, tensor<4xi64>) -> tensor<4x16xf16>
    ```
    """

    name = "npu.gather"
    ENGINE: ClassVar[Engine] = Engine.VECTOR
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    axis = opt_attr_def(_i64("axis"))
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        data, idx = operand_types
        assert isinstance(data, TensorType) and isinstance(idx, TensorType)
        if not isinstance(idx.element_type, IntegerType) or idx.element_type.width.data == 1:
            raise VerifyException(f"indices must be i32 or i64, got {idx.element_type}")
        sd = shape_of(data)
        ax = normalize_axis(_int_attr(self, "axis", 0), len(sd))
        return [_tensor(data.element_type, (*sd[:ax], *shape_of(idx), *sd[ax + 1 :]))]


@irdl_op_definition
class TopkOp(NpuOp):
    """The `k` largest values along `axis` (default -1) and their i64 indices.

    ```mlir
    %v, %i = npu.topk %x {k = 2 : i64} : (tensor<4x8xf32>) -> (tensor<4x2xf32>, tensor<4x2xi64>)
    ```
    """

    name = "npu.topk"
    ENGINE: ClassVar[Engine] = Engine.VECTOR
    input = operand_def(TensorType)
    values = result_def(TensorType)
    indices = result_def(TensorType)
    k = attr_def(_i64("k"))
    axis = opt_attr_def(_i64("axis"))
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        ty = operand_types[0]
        assert isinstance(ty, TensorType)
        shape = list(shape_of(ty))
        k = self.k.value.data
        ax = normalize_axis(_int_attr(self, "axis", -1), len(shape))
        if k < 1 or (shape[ax] != DYN and k > shape[ax]):
            raise VerifyException(f"k = {k} must be in [1, {fmt_shape((shape[ax],))}]")
        shape[ax] = k
        return [_tensor(ty.element_type, shape), _tensor(i64, shape)]

    def flops(self) -> int:
        shape = shape_of(self.input.type)
        n = num_elements(shape)
        return n * max(1, math.ceil(math.log2(max(2, self.k.value.data))))


@irdl_op_definition
class NonzeroOp(NpuOp):
    """Indices of the non-zero elements, one row each: `tensor<?xRANKxi64>`.

    Its result shape depends on the data, and it needs every vector core at
    once (`full_core_sync`), which is what makes it deadlock-prone next to
    collectives (the core-limiting seed's scenario).

    ```mlir
    %nz = npu.nonzero %mask : (tensor<4x8xi1>) -> tensor<?x2xi64>
    ```
    """

    name = "npu.nonzero"
    ENGINE: ClassVar[Engine] = Engine.VECTOR
    IS_FULL_CORE_SYNC: ClassVar[bool] = True
    input = operand_def(TensorType)
    result = result_def(TensorType)

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        return [_tensor(i64, (DYN, len(shape_of(operand_types[0]))))]

    def flops(self) -> int:
        return num_elements(shape_of(self.input.type))

    def bytes_moved(self) -> int:
        shape = shape_of(self.input.type)
        upper = num_elements(shape) * len(shape) * 8
        return tensor_bytes(self.input.type) + upper


# --------------------------------------------------------------------------
# Communication ops
# --------------------------------------------------------------------------


@irdl_op_definition
class AllReduceOp(CollectiveOp):
    """Sums a tensor over the ranks of the group; every rank gets the sum.

    ```mlir
    %r = npu.all_reduce %x {group_size = 2 : i64, mode = "aiv"} : (tensor<64xf16>) -> tensor<64xf16>
    ```
    """

    name = "npu.all_reduce"

    def flops(self) -> int:
        return num_elements(shape_of(self.input.type))


@irdl_op_definition
class ReduceScatterOp(CollectiveOp):
    """Sums over the group, then rank r keeps part r of dim 0.

    ```mlir
    %r = npu.reduce_scatter %x {group_size = 2 : i64} : (tensor<64x8xf16>) -> tensor<32x8xf16>
    ```
    """

    name = "npu.reduce_scatter"

    def result_shape(self, shape: Shape) -> Shape:
        d0 = self._split_dim0(shape)
        return (d0 if d0 == DYN else d0 // self.group_size, *shape[1:])

    def flops(self) -> int:
        return num_elements(shape_of(self.input.type))


@irdl_op_definition
class AllGatherOp(CollectiveOp):
    """Concatenates every rank's tensor along dim 0; every rank gets the whole.

    ```mlir
    %r = npu.all_gather %x {group_size = 2 : i64} : (tensor<32x8xf16>) -> tensor<64x8xf16>
    ```
    """

    name = "npu.all_gather"

    def result_shape(self, shape: Shape) -> Shape:
        if not shape:
            raise VerifyException("needs a tensor of rank >= 1")
        d0 = shape[0]
        return (d0 if d0 == DYN else d0 * self.group_size, *shape[1:])


@irdl_op_definition
class AllToAllOp(CollectiveOp):
    """Each rank splits dim 0 into `group_size` chunks and sends chunk r to rank r.

    ```mlir
    %r = npu.all_to_all %x {group_size = 4 : i64, group = "ep"} : (tensor<64x8xf16>) -> tensor<64x8xf16>
    ```
    """

    name = "npu.all_to_all"

    def result_shape(self, shape: Shape) -> Shape:
        self._split_dim0(shape)
        return shape


# --------------------------------------------------------------------------
# Imported-graph ops: convolution, pooling, layout, unmapped operators
# --------------------------------------------------------------------------


def _pair(op: Operation, name: str, default: int, count: int = 2) -> tuple[int, ...]:
    attr = op.attributes.get(name)
    if attr is None:
        return (default,) * count
    if not isinstance(attr, DenseArrayBase):
        raise VerifyException(f"'{name}' must be an array<i64: ...>, got {attr}")
    values = tuple(int(x) for x in attr.get_values())
    if len(values) != count:
        raise VerifyException(f"'{name}' needs {count} values, got {len(values)}")
    return values


def _window_extent(
    size: int, kernel: int, stride: int, pad: int, dilation: int, ceil: bool = False
) -> int:
    """Output extent of a sliding window (the convolution / pooling formula)."""
    if size == DYN:
        return DYN
    span = size + pad - dilation * (kernel - 1) - 1
    if span < 0:
        raise VerifyException(
            f"a window of {kernel} (dilation {dilation}) does not fit an extent of {size} "
            f"with {pad} padding"
        )
    return (-(-span // stride) if ceil else span // stride) + 1


def _check_window_attrs(strides: Sequence[int], pads: Sequence[int], dil: Sequence[int]) -> None:
    if any(s < 1 for s in strides) or any(d < 1 for d in dil):
        raise VerifyException("strides and dilations must be >= 1")
    if any(p < 0 for p in pads):
        raise VerifyException("pads must be >= 0")


def _accumulator(elem: Attribute) -> Attribute:
    """The element type a cube op writes: i32 for 8-bit integer operands, else the input's."""
    if isinstance(elem, IntegerType) and elem.width.data == 8:
        return IntegerType(32)
    return elem


@irdl_op_definition
class Conv2dOp(NpuOp):
    """2-D convolution on the cube unit: `x` is NCHW, `w` is [O, C/groups, KH, KW].

    `strides` and `dilations` are `(h, w)`, `pads` is `(top, bottom, left,
    right)`; all default to 1 (pads to 0), `groups` to 1.  The optional third
    operand is a bias of O elements.  8-bit integer operands accumulate into an
    i32 result (the cube's int8 path); other types keep the input's type.  FLOPs
    are the real multiply-adds of the direct convolution.

    ```mlir
    %y = npu.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf16>, tensor<4x3x3x3xf16>) -> tensor<1x4x4x4xf16>
    ```
    """

    name = "npu.conv2d"
    ENGINE: ClassVar[Engine] = Engine.CUBE
    input = operand_def(TensorType)
    filter = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    strides = opt_attr_def(DenseArrayBase)
    pads = opt_attr_def(DenseArrayBase)
    dilations = opt_attr_def(DenseArrayBase)
    groups = opt_attr_def(IntegerAttr)
    traits = traits_def(PureUntilScheduled())

    def window(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], int]:
        """`(strides, pads, dilations, groups)` with their defaults."""
        strides = _pair(self, "strides", 1)
        pads = _pair(self, "pads", 0, 4)
        dil = _pair(self, "dilations", 1)
        _check_window_attrs(strides, pads, dil)
        groups = _int_attr(self, "groups", 1)
        if groups < 1:
            raise VerifyException(f"groups must be >= 1, got {groups}")
        return strides, pads, dil, groups

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        x, w = operand_types[0], operand_types[1]
        assert isinstance(x, TensorType) and isinstance(w, TensorType)
        if x.get_num_dims() != 4 or w.get_num_dims() != 4:
            raise VerifyException("input (NCHW) and filter (OIHW) must be rank-4 tensors")
        if x.element_type != w.element_type:
            raise VerifyException(
                f"input and filter element types differ: {x.element_type} and {w.element_type}"
            )
        (n, c, h, wd), (o, cg, kh, kw) = shape_of(x), shape_of(w)
        strides, pads, dil, groups = self.window()
        if c != DYN and cg != DYN and c != cg * groups:
            raise VerifyException(
                f"input has {c} channels but the filter takes {cg} per group x {groups} groups"
            )
        if o != DYN and o % groups:
            raise VerifyException(f"{o} output channels do not split into {groups} groups")
        elem = _accumulator(x.element_type)
        if len(operand_types) > 2:
            b = operand_types[2]
            assert isinstance(b, TensorType)
            if b.element_type != elem or shape_of(b) not in ((o,), (1, o, 1, 1)):
                raise VerifyException(
                    f"bias must be tensor<{o}x{elem}> (one value per output channel), got {b}"
                )
        ho = _window_extent(h, kh, strides[0], pads[0] + pads[1], dil[0])
        wo = _window_extent(wd, kw, strides[1], pads[2] + pads[3], dil[1])
        return [_tensor(elem, (n, o, ho, wo))]

    def gemm_extent(self) -> tuple[int, int, int]:
        """The implicit GEMM `(M, N, K)`: M = N*Ho*Wo output pixels, N = O, K = C/g*KH*KW."""
        n, o, ho, wo = (1 if d == DYN else d for d in shape_of(self.result.type))
        _, cg, kh, kw = (1 if d == DYN else d for d in shape_of(self.filter.type))
        return n * ho * wo, o, cg * kh * kw

    def flops(self) -> int:
        m, n, k = self.gemm_extent()
        return 2 * m * n * k


class PoolKind(StrEnum):
    """What `npu.pool2d` computes over each window."""

    MAX = "max"
    AVG = "avg"


@irdl_op_definition
class Pool2dOp(NpuOp):
    """2-D max or average pooling of an NCHW tensor on the vector unit.

    `kind` is "max" or "avg"; `window`, `strides` are `(h, w)` and `pads`
    `(top, bottom, left, right)`; `ceil_mode` rounds the output extent up
    (Caffe's rule).  An average divides by the window size, padding included.

    ```mlir
    %y = npu.pool2d %x {kind = "max", window = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode} : (tensor<1x4x8x8xf16>) -> tensor<1x4x4x4xf16>
    ```
    """

    name = "npu.pool2d"
    ENGINE: ClassVar[Engine] = Engine.VECTOR
    input = operand_def(TensorType)
    result = result_def(TensorType)
    KIND: ClassVar[SpelledEnum[PoolKind]] = SpelledEnum.of("kind", PoolKind)
    kind = opt_attr_def(KIND)
    window = opt_attr_def(DenseArrayBase)
    strides = opt_attr_def(DenseArrayBase)
    pads = opt_attr_def(DenseArrayBase)
    ceil_mode = opt_attr_def(UnitAttr)
    traits = traits_def(PureUntilScheduled())

    @property
    def pool_kind(self) -> PoolKind:
        kind = self.KIND.member(self.kind)
        if kind is None:  # absent (a present one is checked by the constraint)
            self.KIND.verify(self.kind or StringAttr(""), VerificationContext())
        assert kind is not None
        return kind

    def window_size(self) -> tuple[int, ...]:
        if self.window is None:
            raise VerifyException("needs 'window'")
        window = _pair(self, "window", 1)
        if any(k < 1 for k in window):
            raise VerifyException("window extents must be >= 1")
        return window

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        ty = operand_types[0]
        assert isinstance(ty, TensorType)
        if ty.get_num_dims() != 4:
            raise VerifyException("input must be a rank-4 (NCHW) tensor")
        _ = self.pool_kind  # checks the attribute
        kh, kw = self.window_size()
        strides, pads = _pair(self, "strides", 1), _pair(self, "pads", 0, 4)
        _check_window_attrs(strides, pads, (1, 1))
        n, c, h, w = shape_of(ty)
        ceil = self.ceil_mode is not None
        ho = _window_extent(h, kh, strides[0], pads[0] + pads[1], 1, ceil)
        wo = _window_extent(w, kw, strides[1], pads[2] + pads[3], 1, ceil)
        return [_tensor(ty.element_type, (n, c, ho, wo))]

    def flops(self) -> int:
        kh, kw = self.window_size()
        return kh * kw * num_elements(shape_of(self.result.type))


@irdl_op_definition
class LayoutTransformOp(NpuOp):
    """Rewrites a tensor from one memory layout to another (GE's TransData).

    IR tensors carry logical shapes, so the values and type do not change; the
    op costs the data movement of reading and writing the whole tensor.
    `src_format` and `dst_format` name the layouts (e.g. "NC1HWC0", "NCHW").

    ```mlir
    %y = npu.layout_transform %x {src_format = "NC1HWC0", dst_format = "NCHW"} : (tensor<1x64x4x4xf16>) -> tensor<1x64x4x4xf16>
    ```
    """

    name = "npu.layout_transform"
    ENGINE: ClassVar[Engine] = Engine.VECTOR
    input = operand_def(TensorType)
    result = result_def(TensorType)
    src_format = opt_attr_def(StringAttr)
    dst_format = opt_attr_def(StringAttr)
    traits = traits_def(PureUntilScheduled())

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        if self.src_format is None or self.dst_format is None:
            raise VerifyException("needs 'src_format' and 'dst_format'")
        return [operand_types[0]]


@irdl_op_definition
class LeakyReluOp(UnaryOp):
    """`x` where positive, `negative_slope * x` elsewhere (default slope 0: relu).

    ```mlir
    %y = npu.leaky_relu %x {negative_slope = 1.000000e-01 : f32} : (tensor<4x8xf16>) -> tensor<4x8xf16>
    ```
    """

    name = "npu.leaky_relu"
    FLOPS_PER_ELEMENT: ClassVar[int] = 2
    negative_slope = opt_attr_def(FloatAttr)


GE_TYPE = "ge_type"
"""`npu.opaque`'s attribute naming the operator type it stands for."""

ENGINE_ATTR = "engine"
"""`npu.opaque`'s attribute naming the unit it runs on."""


@irdl_op_definition
class OpaqueOp(NpuOp):
    """An operator an importer could not map, kept with its tensors and engine.

    `ge_type` names the original operator type and `engine` the unit it runs on
    ("cube", "vector" or "aicpu").  Its cost comes from its tensor sizes (one
    operation per result element, every operand and result moved once); it has
    no numeric kernel, so numeric runs stop at it with an error naming it.

    ```mlir
    %q = npu.opaque %x, %s {ge_type = "AscendQuant", engine = "vector"} : (tensor<1x64xf32>, tensor<64xf32>) -> tensor<1x64xi8>
    ```
    """

    name = "npu.opaque"
    ENGINE: ClassVar[Engine] = Engine.VECTOR
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    ENGINES: ClassVar[tuple[Engine, ...]] = (Engine.CUBE, Engine.VECTOR, Engine.AICPU)
    ENGINE_NAME: ClassVar[SpelledEnum[Engine]] = SpelledEnum.of("engine", Engine, ENGINES)

    ge_type = attr_def(StringAttr)
    engine_name = attr_def(ENGINE_NAME, attr_name=ENGINE_ATTR)

    def __init__(
        self,
        ge_type: str,
        engine: Engine,
        operands: Sequence[SSAValue],
        result_types: Sequence[Attribute],
    ) -> None:
        super().__init__(
            operands=[operands],
            result_types=[result_types],
            attributes={GE_TYPE: StringAttr(ge_type), ENGINE_ATTR: StringAttr(engine.value)},
        )

    @property
    def engine(self) -> Engine:
        engine = self.ENGINE_NAME.member(self.engine_name)
        if engine is None:  # only before verification
            self.ENGINE_NAME.verify(self.engine_name, VerificationContext())
        assert engine is not None
        return engine

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        if not self.ge_type.data:
            raise VerifyException("ge_type must name the original operator type")
        if not operand_types and not self.results:
            raise VerifyException("needs at least one operand or result")
        return list(self.result_types)

    def flops(self) -> int:
        return sum(num_elements(shape_of(r.type)) for r in self.results)


# --------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A value fixed in the program: a scalar the model captured (`x * 0.5`, a
    softmax scale, a mean's divisor).

    Not an operator: it runs on no engine, is no device buffer, costs nothing
    and is never launched, and it is not an input -- runs use its value and
    never ask for it.  The program graph reads its result as ready at the start,
    as it reads a function argument.

    ```mlir
    %c = npu.constant dense<5.000000e-01> : tensor<f16>
    ```
    """

    name = "npu.constant"

    T: ClassVar = VarConstraint("T", base(TensorType))

    value = prop_def(ParamAttrConstraint(DenseIntOrFPElementsAttr, (T, AnyAttr())))
    result = result_def(T)

    traits = traits_def(Pure(), VerifiesDialectAttributes())

    assembly_format = "$value attr-dict"

    def __init__(self, value: DenseIntOrFPElementsAttr) -> None:
        super().__init__(properties={"value": value}, result_types=[value.get_type()])

    @staticmethod
    def scalar(value: float, dtype: Attribute) -> ConstantOp:
        """A rank-0 constant of element type `dtype` (an int type takes `int(value)`)."""
        ty: TensorType[Any] = TensorType(dtype, [])
        number: float = int(value) if isinstance(dtype, IntegerType) else float(value)
        return ConstantOp(DenseIntOrFPElementsAttr.from_list(ty, [number]))

    def verify_(self) -> None:
        ty = self.result.type
        if isinstance(ty, TensorType):
            if DYN in ty.get_shape():
                raise VerifyException(f"a constant has a static shape, got {ty}")
            element_bytes(ty.element_type)


# --------------------------------------------------------------------------
# Module-level helpers
# --------------------------------------------------------------------------


def target_of(module: ModuleOp) -> str | None:
    """The device preset a module names with `npu.target`, if any."""
    attr = module.attributes.get(TARGET)
    return attr.data if isinstance(attr, StringAttr) else None


class NpuAttributeVerifier(AttributeVerifier):
    """`npu.target` names a device preset (which presets exist is the backend's
    business; the dialect checks the spelling); `npu.kernel` on an npu op is a kernel kind."""

    def verify_operation_attribute(self, op: Operation, name: str, value: Attribute) -> None:
        if name == TARGET and (not isinstance(value, StringAttr) or not value.data):
            raise VerifyException(f"'{TARGET}' must be a non-empty string naming a device preset")
        if name == KERNEL:
            if not isinstance(op, NpuOp):
                raise VerifyException(f"'{KERNEL}' belongs on an npu operator")
            if not isinstance(value, StringAttr) or value.data not in KERNELS:
                kinds = ", ".join(f'"{k}"' for k in KERNELS)
                raise VerifyException(f"'{KERNEL}' must be one of {kinds}, got {value}")


_HAND_WRITTEN_OPS: tuple[type[NpuOp], ...] = (
    MatmulOp,
    BatchMatmulOp,
    AddOp,
    SubOp,
    MulOp,
    DivOp,
    MaximumOp,
    NegOp,
    ExpOp,
    SqrtOp,
    RsqrtOp,
    ReluOp,
    GeluOp,
    SiluOp,
    SigmoidOp,
    CastOp,
    SwigluOp,
    SoftmaxOp,
    RmsNormOp,
    ReduceSumOp,
    ReduceMaxOp,
    TransposeOp,
    ReshapeOp,
    ConcatOp,
    SliceOp,
    GatherOp,
    TopkOp,
    NonzeroOp,
    AllReduceOp,
    ReduceScatterOp,
    AllGatherOp,
    AllToAllOp,
    Conv2dOp,
    Pool2dOp,
    LayoutTransformOp,
    LeakyReluOp,
    OpaqueOp,
)

"""The ops written as classes in this module; `npuir.dialects.npu_math` makes the
table-made ones and `npuir.dialects.npu_fused` Ascend's fused kernels."""

NPU_OPS: tuple[type[NpuOp], ...]
"""Every npu operator: this module's, the table-made ones of `npuir.dialects.npu_math`, then
the fused kernels of `npuir.dialects.npu_fused`."""

Npu: Dialect
"""The `npu` dialect: `NPU_OPS` and `npu.constant`."""


def __getattr__(name: str) -> object:
    """`NPU_OPS` and `Npu`, made on first use: the table-made ops and the fused kernels
    subclass this module's base classes, so their modules can only be imported once this one
    is, and a module-level import of them here would be circular whichever is imported first."""
    if name not in ("NPU_OPS", "Npu"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from npuir.dialects.npu_fused import FUSED_OPS
    from npuir.dialects.npu_math import MATH_OP_CLASSES

    ops = (*_HAND_WRITTEN_OPS, *MATH_OP_CLASSES, *FUSED_OPS)
    globals()["NPU_OPS"] = ops
    globals()["Npu"] = Dialect("npu", [*ops, ConstantOp], [], [NpuAttributeVerifier()])
    return globals()[name]
