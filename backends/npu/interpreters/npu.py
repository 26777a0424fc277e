"""Interpreter functions for the `npu` dialect: each op calls its numpy kernel.

Attributes are decoded to plain Python values and the result types passed
along (`npuir.backends.npu.kernels` documents the convention).  Collectives
take the stacked inputs of their whole group (a leading rank axis) and return
the stacked results; the rank executor (`npuir.backends.npu.numerics`) forms
the groups.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Attribute

from npuir.backends.npu.kernels import (
    MissingKernelError,
    kernel_attrs,
    kernel_for,
    numpy_dtype,
)
from npuir.dialects import npu

# Attributes that schedule an op but do not change what it computes.
_SCHEDULING_ATTRS = frozenset({"stream.on", "coreset.cores", npu.FULL_CORE_SYNC})


def _decode(attr: Attribute) -> object:
    if isinstance(attr, IntegerAttr):
        return attr.value.data
    if isinstance(attr, FloatAttr):
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, DenseArrayBase):
        return tuple(attr.get_values())
    if isinstance(attr, UnitAttr):
        return True
    return attr


def op_kernel_attrs(op: npu.NpuOp) -> dict[str, object]:
    """The kernel's view of an op: decoded attributes and result types."""
    shapes = []
    dtypes = []
    for result in op.results:
        ty = result.type
        assert isinstance(ty, TensorType)
        shapes.append(tuple(None if d == npu.DYN else d for d in ty.get_shape()))
        dtypes.append(npu.dtype_name(ty.element_type))
    plain = {k: _decode(v) for k, v in op.attributes.items() if k not in _SCHEDULING_ATTRS}
    return kernel_attrs(plain, result_shapes=shapes, result_dtypes=dtypes)


def run_npu_op(op: npu.NpuOp, args: PythonValues) -> tuple[Any, ...]:
    """Apply `op`'s kernel to `args` (numpy arrays)."""
    if isinstance(op, npu.OpaqueOp):
        raise MissingKernelError(
            op.name,
            f"GE type '{op.ge_type.data}' has no npu op to compute it; --timing-only simulates it",
        )
    return tuple(kernel_for(op.name)(list(args), op_kernel_attrs(op)))


def constant_value(op: npu.ConstantOp) -> Any:
    """The array `op` stands for: its values in its type's shape and element type."""
    ty = op.result.type
    assert isinstance(ty, TensorType)
    dtype = numpy_dtype(npu.dtype_name(ty.element_type))
    shape = tuple(ty.get_shape())
    values = op.value.get_values()
    if len(values) == 1:
        return np.full(shape, values[0], dtype=dtype)
    return np.asarray(values, dtype=dtype).reshape(shape)


@register_impls
class NpuFunctions(InterpreterFunctions):
    """Every `npu` op, through its numpy kernel; `npu.constant`, its value."""

    @impl(npu.ConstantOp)
    def run_constant(
        self, interpreter: Interpreter, op: npu.ConstantOp, args: PythonValues
    ) -> PythonValues:
        return (constant_value(op),)


def _make_impl(op_type: type[npu.NpuOp]) -> None:
    def run(
        self: NpuFunctions, interpreter: Interpreter, op: npu.NpuOp, args: PythonValues
    ) -> PythonValues:
        return run_npu_op(op, args)

    setattr(NpuFunctions, f"run_{op_type.name.split('.')[1]}", impl(op_type)(run))


for _op_type in npu.NPU_OPS:
    _make_impl(_op_type)


register_impls(NpuFunctions)
