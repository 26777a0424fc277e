"""Verification that reports the op that failed, with its source location.

xDSL's `Operation.verify` raises an exception without a location; npuir walks
the IR and verifies op by op instead.  The dialects verify their own
attributes wherever they are attached (`npuir.dialects.attributes`); what
stays here is what no dialect can see: the walk that locates each error, the
dialect attributes on ops of other dialects (a `builtin.module`, a `func.func`
and its arguments), checked at those ops, the order of definitions and uses,
and that a function has at most one block (npuir schedules straight-line
dataflow; a declaration has none).

An `npu` op's own checks and its IRDL constraints depend only on its class, its
operand and result types and its attributes, and a program repeats a few such
signatures thousands of times: they run once per signature (`_SignatureMemo`).  So do
the `sync` ops' (`insert-events` writes one record and one wait per cross-stream edge),
but for a wait's check that its event comes from a `sync.record`, which runs at each.  What
depends on where the op stands runs at every op: that a program's op (an npu op, a
scope, a wait, an event) stands in a function, the order of definitions and uses,
the dialect attributes (`stream.on` names a stream its module declares), and xDSL's
check that a block ends in a terminator (an op that ends its block is verified whole).
"""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, ErasedSSAValue, Operation
from xdsl.utils.exceptions import VerifyException

from npuir.deep_stack import deep_stack
from npuir.diagnostics import VERIFY_ERROR, Kind, error
from npuir.dialects.attributes import (
    VerifiesDialectAttributes,
    enclosing_ops_verified,
    verify_op_attributes,
)
from npuir.dialects.npu import OP_NAME, NpuOp
from npuir.dialects.scope import ScopeOp
from npuir.dialects.stream import WaitTensorOp
from npuir.dialects.sync import RecordOp, WaitOp
from npuir.dialects.validation import ValidationError
from npuir.gc_pause import without_collector

_PASSED_VALUES: dict[tuple[object, ...], None] = {}
"""The value keys of the signatures that passed, kept across walks: a tool that verifies
many variants of one program (`npuir-advise` lowers it once per row) checks each signature
once.  A key holds the types and attributes themselves (values, not identities), so it
stays valid however long it is kept; the oldest go beyond `_PASSED_KEPT`."""
_PASSED_KEPT = 4096
_A_NAME = StringAttr("")
"""What a signature holds for any `npu.op_name` (see `_SignatureMemo.passed`)."""


def forget_passed_signatures() -> None:
    """Empty the memo kept across walks, so that the next walk checks every signature (what
    a benchmark of one verification measures)."""
    _PASSED_VALUES.clear()


class _SignatureMemo:
    """The signatures of the ops whose own verification passed.

    Looked up first by the identity of the types and attributes, within one walk (the
    parser shares them, and the module keeps every one alive while the walk lasts, so an
    identity cannot be reused), then by their values, across walks (`_PASSED_VALUES`: IR
    that passes built shares fewer).
    """

    def __init__(self) -> None:
        self._by_id: set[tuple[object, ...]] = set()
        self._by_value = _PASSED_VALUES

    def passed(
        self, op: Operation
    ) -> tuple[bool, tuple[tuple[object, ...], tuple[object, ...]] | None]:
        """Whether `op`'s signature passed already, and its key to record it by."""
        parts: list[Attribute] = []
        for operand in op.operands:
            if isinstance(operand, ErasedSSAValue):
                return False, None  # xDSL's own check reports it
            parts.append(operand.type)
        parts.extend(op.result_types)
        attrs, props = op.attributes, op.properties
        if OP_NAME in attrs and type(attrs[OP_NAME]) is StringAttr:
            # The op's name in its source (importers set it on every op) is a label no
            # check reads: keyed by its value, every named op would be a signature of its own.
            attrs = {**attrs, OP_NAME: _A_NAME}
        id_key = (
            type(op),
            len(op.operands),
            *map(id, parts),
            *map(id, attrs.values()),
            *attrs,
            *map(id, props.values()),
            *props,
        )
        if id_key in self._by_id:
            return True, None
        try:
            value_key = (
                type(op),
                len(op.operands),
                *parts,
                tuple(attrs.items()),
                tuple(props.items()),
            )
            hit = value_key in self._by_value
        except TypeError:
            return False, None  # an unhashable attribute: verify every time
        if hit:
            self._by_id.add(id_key)
            return True, None
        return False, (id_key, value_key)

    def record(self, key: tuple[tuple[object, ...], tuple[object, ...]]) -> None:
        id_key, value_key = key
        self._by_id.add(id_key)
        values = self._by_value
        values[value_key] = None
        if len(values) > _PASSED_KEPT:
            del values[next(iter(values))]


_BY_SIGNATURE = (NpuOp, RecordOp, WaitOp)
"""The ops whose own verification `_SignatureMemo` memoises."""


USE_BEFORE_DEF = Kind(
    "verify.use-before-def",
    "'{op_name}' op uses {value} before it is defined (a value must be computed before its uses; "
    "a wait_tensor cycle looks like this)",
)
"""A value used before it is defined; arguments: `op_name` (the user), `value`."""


OUTSIDE_FUNCTION = Kind(
    "verify.outside-function",
    "'{op_name}' op stands outside every function (a program's ops run where a function "
    "issues them: put it in a func.func)",
)
"""An op of a program (an npu op, a scope, a wait or an event) whose parent is neither a
function nor a scope; arguments: `op_name`."""

_PROGRAM_OPS = (NpuOp, ScopeOp, WaitTensorOp, RecordOp, WaitOp)
"""Ops that only run where a function issues them (every pass reads them per function)."""


@deep_stack
@without_collector  # it allocates while the whole module is alive: collections would walk it
def verify(root: Operation) -> None:
    """Verify `root` and everything nested in it; raise a located `DiagnosticError`."""
    seen: set[Operation] = set()
    memo = _SignatureMemo()
    with enclosing_ops_verified():
        for op in root.walk():
            _check_defined_before_use(op, seen)
            seen.add(op)
            # Where the op stands: a scope's parent is checked too, so every program op is
            # inside a function whatever the nesting.
            if isinstance(op, _PROGRAM_OPS) and not isinstance(op.parent_op(), FuncOp | ScopeOp):
                raise error(op, OUTSIDE_FUNCTION, op_name=op.name)
            try:
                if isinstance(op, _BY_SIGNATURE) and not _ends_block(op):
                    passed, key = memo.passed(op)
                    if passed:
                        # Only the dialect attributes can fail where the same
                        # signature passed: they look at the op's module (and a
                        # wait's event source at its operand's producer).
                        verify_op_attributes(op)
                        if isinstance(op, WaitOp):
                            op.verify_event_source()
                        continue
                    op.verify(verify_nested_ops=False)
                    if key is not None:
                        memo.record(key)
                    continue
                # npuir's ops check their own attributes (a trait); other
                # dialects' ops, such as the module and functions, are checked here.
                if not op.has_trait(VerifiesDialectAttributes):
                    verify_op_attributes(op)
                op.verify(verify_nested_ops=False)
                if isinstance(op, FuncOp):
                    _verify_single_block(op)
            except ValidationError as exc:
                # One of the rules every route applies: keep its kind (`dialects.validation`).
                raise error(op, f"'{op.name}' op {exc}", exc.kind.code, **exc.args_) from None
            except (VerifyException, ValueError) as exc:
                raise error(
                    op,
                    f"'{op.name}' op {_without_name(op, str(exc))}",
                    VERIFY_ERROR,
                    op_name=op.name,
                ) from None


def _without_name(op: Operation, message: str) -> str:
    """xDSL's traits (`HasParent`, `SingleBlockImplicitTerminator`) open their messages
    with the op's name, which the diagnostic already gives."""
    prefix = f"'{op.name}' "
    return message[len(prefix) :] if message.startswith(prefix) else message


def _ends_block(op: Operation) -> bool:
    """Whether `op` is the last op of its block (xDSL then checks it is a terminator)."""
    block = op.parent
    return block is not None and block.last_op is op


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
            raise error(op, USE_BEFORE_DEF, op_name=op.name, value=name)
