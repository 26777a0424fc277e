"""Verification that reports the op that failed, with its source location.

xDSL's `Operation.verify` raises an exception without a location; npuir walks
the IR and verifies op by op instead.  The dialects verify their own
attributes wherever they are attached (`npuir.dialects.attributes`); what
stays here is what no dialect can see: the walk that locates each error, the
dialect attributes on ops of other dialects (a `builtin.module`, a `func.func`
and its arguments), checked at those ops, the order of definitions and uses,
and that a function has at most one block (npuir schedules straight-line
dataflow; a declaration has none).
"""

from __future__ import annotations

from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import VerifyException

from npuir.deep_stack import deep_stack
from npuir.diagnostics import VERIFY_ERROR, Kind, error
from npuir.dialects.attributes import (
    VerifiesDialectAttributes,
    enclosing_ops_verified,
    verify_op_attributes,
)

USE_BEFORE_DEF = Kind("verify.use-before-def")
"""A value used before it is defined."""


@deep_stack
def verify(root: Operation) -> None:
    """Verify `root` and everything nested in it; raise a located `DiagnosticError`."""
    seen: set[Operation] = set()
    with enclosing_ops_verified():
        for op in root.walk():
            _check_defined_before_use(op, seen)
            seen.add(op)
            try:
                # npuir's ops check their own attributes (a trait); other
                # dialects' ops, such as the module and functions, are checked here.
                if not op.has_trait(VerifiesDialectAttributes):
                    verify_op_attributes(op)
                op.verify(verify_nested_ops=False)
                if isinstance(op, FuncOp):
                    _verify_single_block(op)
            except (VerifyException, ValueError) as exc:
                raise error(op, f"'{op.name}' op {exc}", VERIFY_ERROR, op_name=op.name) from None


def _verify_single_block(func: FuncOp) -> None:
    blocks = len(func.body.blocks)
    if blocks > 1:
        raise VerifyException(
            f"has {blocks} blocks: functions with control flow between blocks are not "
            "supported (npuir schedules straight-line dataflow)"
        )


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
                USE_BEFORE_DEF,
            )
