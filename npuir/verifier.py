"""Verification that reports the op that failed, with its source location.

xDSL's `Operation.verify` raises an exception without a location; npuir walks
the IR and verifies op by op instead, and adds the checks xDSL cannot express:
attributes on function arguments (`gear.dims` must name an existing, dynamic
dim), the module's `npu.target` and `coreset.global`, and that a function
has at most one block (npuir schedules straight-line dataflow; a declaration
has none).
"""

from __future__ import annotations

from xdsl.dialects.builtin import DictionaryAttr, ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import VerifyException

from npuir.deep_stack import deep_stack
from npuir.diagnostics import error
from npuir.dialects.coreset import GLOBAL, CoresAttr
from npuir.dialects.gear import DIMS, POLICIES, POLICY, DimsAttr
from npuir.dialects.npu import DYN, TARGET


@deep_stack
def verify(root: Operation) -> None:
    """Verify `root` and everything nested in it; raise a located `DiagnosticError`."""
    seen: set[Operation] = set()
    for op in root.walk():
        _check_defined_before_use(op, seen)
        seen.add(op)
        try:
            op.verify(verify_nested_ops=False)
            if isinstance(op, ModuleOp):
                _verify_module_attrs(op)
            elif isinstance(op, FuncOp):
                _verify_single_block(op)
                _verify_gear_annotations(op)
        except (VerifyException, ValueError) as exc:
            raise error(op, f"'{op.name}' op {exc}") from None


def _check_defined_before_use(op: Operation, seen: set[Operation]) -> None:
    """xDSL does not check dominance; a use before the definition (which is how
    a `stream.wait_tensor` cycle looks in SSA) would otherwise go unnoticed."""
    for operand in op.operands:
        owner = operand.owner
        if isinstance(owner, Operation) and owner not in seen:
            name = f"%{operand.name_hint}" if operand.name_hint else f"a result of '{owner.name}'"
            raise error(
                op,
                f"'{op.name}' op uses {name} before it is defined (a value must be "
                "computed before its uses; a wait_tensor cycle looks like this)",
            )


def _verify_module_attrs(module: ModuleOp) -> None:
    target = module.attributes.get(TARGET)
    if target is not None and (not isinstance(target, StringAttr) or not target.data):
        raise VerifyException(f"'{TARGET}' must be a non-empty string naming a device preset")
    cores = module.attributes.get(GLOBAL)
    if cores is not None and not isinstance(cores, CoresAttr):
        raise VerifyException(f"'{GLOBAL}' must be a #coreset.cores attribute, got {cores}")


def _verify_single_block(func: FuncOp) -> None:
    blocks = len(func.body.blocks)
    if blocks > 1:
        raise VerifyException(
            f"has {blocks} blocks: functions with control flow between blocks are not "
            "supported (npuir schedules straight-line dataflow)"
        )


def _verify_gear_annotations(func: FuncOp) -> None:
    policy = func.attributes.get(POLICY)
    if policy is not None and (not isinstance(policy, StringAttr) or policy.data not in POLICIES):
        raise VerifyException(f'\'{POLICY}\' must be "zip" or "product", got {policy}')
    if func.arg_attrs is None:
        return
    for index, (attrs, ty) in enumerate(zip(func.arg_attrs, func.function_type.inputs)):
        assert isinstance(attrs, DictionaryAttr)
        dims = attrs.data.get(DIMS)
        if dims is None:
            continue
        if not isinstance(dims, DimsAttr):
            raise VerifyException(f"argument {index}: '{DIMS}' must be a #gear.dims attribute")
        if not isinstance(ty, TensorType):
            raise VerifyException(f"argument {index}: gears apply to tensor arguments")
        shape = ty.get_shape()
        for dim, _ in dims.items():
            if dim >= len(shape):
                raise VerifyException(
                    f"argument {index}: gear dim {dim} is out of range for {ty} (rank {len(shape)})"
                )
            if shape[dim] != DYN:
                raise VerifyException(
                    f"argument {index}: gear dim {dim} of {ty} is static ({shape[dim]}); "
                    "only dynamic ('?') dims take gears"
                )
