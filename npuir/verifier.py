"""Verification that reports the op that failed, with its source location.

xDSL's `Operation.verify` raises an exception without a location; npuir walks
the IR and verifies op by op instead.  The dialects verify their own
attributes wherever they are attached (`npuir.dialects.attributes`); what
stays here is what no dialect can see: the walk that locates each error, the
dialect attributes on ops of other dialects (a `builtin.module`, a `func.func`
and its arguments), checked at those ops, and the order of definitions and uses.
"""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.utils.exceptions import VerifyException

from npuir.diagnostics import error
from npuir.dialects.attributes import (
    VerifiesDialectAttributes,
    enclosing_ops_verified,
    verify_op_attributes,
)


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
