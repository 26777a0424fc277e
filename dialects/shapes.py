"""Shape specialisation: re-infer a function's types after some dims become static.

Built on the `npu` ops' own result-type inference (`NpuOp.infer_result_types`), through
scope results (`stream.switch`, `coreset.limit`) and `stream.wait_tensor`.  Used by
`gear-multiversion` (one static clone per gear) and by the runner (a dynamic program timed
at the shapes the user gives).
"""

from __future__ import annotations

from xdsl.dialects.builtin import FunctionType, StringAttr, TensorType, i64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import VerifyException

from npuir.dialects import gear, stream
from npuir.dialects.npu import DYN, NonzeroOp, NpuOp
from npuir.dialects.scope import ScopeOp

Dim = tuple[int, int]
"""(argument index, dim index)."""

__all__ = ["Dim", "RetypeError", "retype", "specialise"]


def _static_type(ty: Attribute, dims: dict[int, int]) -> Attribute:
    assert isinstance(ty, TensorType)
    shape = [dims.get(i, d) for i, d in enumerate(ty.get_shape())]
    return TensorType(ty.element_type, shape)


class RetypeError(Exception):
    """A function whose types do not check once its shapes change, at the op where they stop."""

    def __init__(self, op: Operation, message: str) -> None:
        super().__init__(message)
        self.op = op


def retype(block: Block, upper_bound_data_dependent: bool = False) -> None:
    """Re-infer every result type in `block` from its operands, in order.

    With `upper_bound_data_dependent`, a data-dependent dim (`npu.nonzero`'s
    row count) takes its upper bound, as costing a program needs.
    """
    for op in block.ops:
        for region in op.regions:
            for inner in region.blocks:
                retype(inner, upper_bound_data_dependent)
        new_types: list[Attribute]
        if isinstance(op, NpuOp):
            try:
                new_types = op.infer_result_types([v.type for v in op.operands])
            except VerifyException as exc:
                raise RetypeError(op, str(exc)) from None
            if upper_bound_data_dependent and isinstance(op, NonzeroOp):
                shape = op.input.type.get_shape()
                if DYN not in shape:
                    rows = 1
                    for d in shape:
                        rows *= d
                    new_types = [TensorType(i64, [rows, len(shape)])]
        elif isinstance(op, stream.WaitTensorOp):
            new_types = [op.tensor.type]
        elif isinstance(op, ScopeOp):
            new_types = [v.type for v in op.yielded()]
        else:
            continue
        for result, ty in zip(list(op.results), new_types):
            if result.type != ty:
                Rewriter.replace_value_with_new_type(result, ty)


def specialise(
    func: FuncOp, name: str, values: dict[Dim, int], upper_bound_data_dependent: bool = False
) -> FuncOp:
    """A clone of `func` named `name` with the argument dims `values` made static
    (`(argument, dim) -> size`) and every type re-inferred; raises `RetypeError` if it does
    not type-check.  Gear versions and timing at given shapes are both made this way."""
    clone = func.clone()
    clone.sym_name = StringAttr(name)
    for attr in (gear.POLICY,):
        clone.attributes.pop(attr, None)
    per_arg: dict[int, dict[int, int]] = {}
    for (arg_index, dim), v in values.items():
        per_arg.setdefault(arg_index, {})[dim] = v
    block = clone.body.block
    for index, value in enumerate(list(block.args)):
        if index in per_arg:
            Rewriter.replace_value_with_new_type(value, _static_type(value.type, per_arg[index]))
    retype(block, upper_bound_data_dependent)
    for op in clone.body.walk():
        if isinstance(op, NpuOp):
            try:
                op.verify_()
            except VerifyException as exc:
                raise RetypeError(op, str(exc)) from None
    ret = block.last_op
    assert isinstance(ret, ReturnOp)
    clone.function_type = FunctionType.from_lists(
        [a.type for a in block.args], [v.type for v in ret.operands]
    )
    clone.arg_attrs = None
    return clone
