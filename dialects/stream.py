"""The `stream` dialect: where work runs.

Mirrors TorchAir's `npu_stream_switch` and `npu_wait_tensor` at the user level
(`stream.switch`, `stream.wait_tensor`) and, after `stream-partition`, names
the hardware streams themselves (`stream.decl`, and the `stream.on` attribute
on every op).  Ops in one stream run first-in first-out in issue order; streams
are ordered against each other only by `sync` events.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    base,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, SingleBlockImplicitTerminator, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from npuir.diagnostics import Kind
from npuir.dialects import effects, scope, validation
from npuir.dialects.attributes import AttributeVerifier, VerifiesDialectAttributes, walk_facts

MAIN_TAG = validation.MAIN_STREAM
"""The label of the stream that ops outside any `stream.switch` run on (the main stream):
reserved, so that no user tag -- "default" included -- can name it."""

STREAM_ON = effects.STREAM_ON
"""The attribute naming an op's stream (a `@symbol` of a `stream.decl`) once lowered."""

RECORD_STREAM = "stream.record_stream"
"""Capture mode's lifetime mark, written by `capture-close`: the other streams (`[@s1, ...]`)
that use an op's results, where PyTorch's `tensor.record_stream(stream)` keeps the caching
allocator from reusing the block before they are done."""
RECORD_STREAM_FORM = Kind(
    "stream.record-stream-form",
    "'stream.record_stream' must list streams as [@symbol, ...], got {value}",
)
"""A `stream.record_stream` that is not a non-empty list of `@symbol`s; argument: `value`."""
RECORD_STREAM_OWN = Kind(
    "stream.record-stream-own", "'stream.record_stream' lists the op's own stream @{stream}"
)
"""A `stream.record_stream` naming the op's own stream; argument: `stream`."""
RECORD_STREAM_UNDECLARED = Kind(
    "stream.record-stream-undeclared",
    "'stream.record_stream' names stream @{stream}, which no 'stream.decl' declares",
)
"""A `stream.record_stream` naming an undeclared stream; argument: `stream`."""


@irdl_op_definition
class YieldOp(scope.ScopeYieldOp):
    """Passes values out of a `stream.switch` scope.

    ```mlir
    stream.yield %m : tensor<8x8xf16>
    ```
    """

    name = "stream.yield"

    traits = lazy_traits_def(lambda: (HasParent(SwitchOp),))


@irdl_op_definition
class SwitchOp(scope.ScopeOp):
    """Runs the ops of its body on the stream named by its tag.

    Mirrors TorchAir's `npu_stream_switch(tag, priority)`: the same tag is the
    same stream, scopes nest and the innermost wins, and ops outside any scope
    run on the default stream.  Lower priority numbers are served first.

    ```mlir
    %mm = stream.switch "1" priority 0 -> tensor<8x8xf16> {
      %m = npu.matmul %a, %b : (tensor<8x8xf16>, tensor<8x8xf16>) -> tensor<8x8xf16>
      stream.yield %m : tensor<8x8xf16>
    }
    ```
    """

    name = "stream.switch"

    traits = traits_def(VerifiesDialectAttributes(), SingleBlockImplicitTerminator(YieldOp))

    tag = prop_def(StringAttr)
    priority = prop_def(IntegerAttr[I64], default_value=IntegerAttr(0, i64))

    def __init__(
        self,
        tag: str,
        body: Region,
        result_types: list[Attribute] | None = None,
        priority: int = 0,
    ) -> None:
        super().__init__(
            properties={"tag": StringAttr(tag), "priority": IntegerAttr(priority, i64)},
            result_types=[result_types or []],
            regions=[body],
        )

    @property
    def tag_name(self) -> str:
        return self.tag.data

    @property
    def priority_value(self) -> int:
        return self.priority.value.data

    @classmethod
    def parse(cls, parser: Parser) -> SwitchOp:
        tag = parse_tag(parser)
        priority = 0
        if parser.parse_optional_keyword("priority") is not None:
            priority = parse_priority(parser)
        types = scope.parse_result_types(parser)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = scope.parse_body(parser, YieldOp)
        properties = {"tag": StringAttr(tag), "priority": scope.i64_attr(priority)}
        return scope.build_parsed(cls, properties, types, attrs, body)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.tag_name)
        if self.priority_value != 0:
            printer.print_string(f" priority {self.priority_value}")
        scope.print_tail(printer, self, self.result_types, self.body)

    def verify_(self) -> None:
        validation.stream_tag(self.tag_name)
        validation.stream_priority(self.priority_value)
        scope.verify_scope(self)


@irdl_op_definition
class WaitTensorOp(IRDLOperation):
    """Returns `tensor`, ordered after the op that produced `dep` has finished.

    TorchAir's `npu_wait_tensor(self, dep)` (seed 001) orders *every* node that
    uses `self` after the wait: TorchAir code writes it as a statement and keeps
    using `self`.  So every use of `tensor` that comes after this op in program
    order -- later in the same block, or nested in a later op's regions -- is
    ordered after `dep`, whether it uses the result or `tensor` itself.
    `stream-partition` makes that explicit by first pointing those uses at the
    result.  A `dep` that is a function argument orders nothing (arguments are
    ready at the start).  The op stays in the lowered IR (a no-op there), so the
    ordering it asks for stays visible: `sync-verify` and the simulator's race
    check refuse a lowered program whose events do not implement it.

    ```mlir
    %w = stream.wait_tensor %b after %sum : tensor<8x8xf16>, tensor<8x8xf16>
    ```
    """

    name = "stream.wait_tensor"

    # It orders the later uses of `tensor`, not only of its result: never dead.
    traits = traits_def(VerifiesDialectAttributes(), effects.OrdersStream())

    T: ClassVar = VarConstraint("T", base(TensorType))

    tensor = operand_def(T)
    dep = operand_def(TensorType)
    result = result_def(T)

    assembly_format = "$tensor `after` $dep attr-dict `:` type($tensor) `,` type($dep)"

    def __init__(self, tensor: SSAValue, dep: SSAValue) -> None:
        super().__init__(operands=[tensor, dep], result_types=[tensor.type])


@irdl_op_definition
class DeclOp(IRDLOperation):
    """Declares a hardware stream at module level, after `stream-partition`.

    Streams are device resources shared by every function of the module
    (gear versions, per-rank functions); ops name theirs with `stream.on`.

    ```mlir
    stream.decl @s1 "1" priority 0
    ```
    """

    name = "stream.decl"

    sym_name = prop_def(SymbolNameConstraint())
    tag = prop_def(StringAttr)
    # No default: a declaration always spells its priority, and the declarative
    # format would leave a default value out of the printed text.
    priority = prop_def(IntegerAttr[I64])

    # Streams are module-level resources (`stream.on` resolves against the module).
    traits = traits_def(HasParent(ModuleOp), SymbolOpInterface(), VerifiesDialectAttributes())

    assembly_format = "$sym_name $tag `priority` $priority attr-dict"

    def __init__(self, sym_name: str, tag: str, priority: int = 0) -> None:
        super().__init__(
            properties={
                "sym_name": StringAttr(sym_name),
                "tag": StringAttr(tag),
                "priority": IntegerAttr(priority, i64),
            }
        )

    @property
    def symbol(self) -> str:
        return self.sym_name.data

    @property
    def priority_value(self) -> int:
        return self.priority.value.data

    def verify_(self) -> None:
        if self.tag.data != MAIN_TAG:
            validation.stream_tag(self.tag.data)
        validation.stream_priority(self.priority_value)


def parse_tag(parser: Parser) -> str:
    """A stream tag: a string literal; a number where the tag belongs is the rule's error
    (`stream.tag-type`), as it is on every other route."""
    start = parser.pos
    tag = parser.parse_optional_str_literal()
    if tag is not None:
        return tag
    number = parser.parse_optional_number()
    if number is not None:
        validation.refuse_parsed(
            parser, start, validation.ValidationError(validation.TAG_TYPE, value=number)
        )
    return parser.parse_str_literal(" for the stream tag")


def parse_priority(parser: Parser) -> int:
    """A priority: a whole number; a fraction or a string is `stream.priority-type`."""
    start = parser.pos
    value: object = parser.parse_optional_number()
    if value is None:
        value = parser.parse_optional_str_literal()
    if isinstance(value, int):
        return value
    if value is not None:
        validation.refuse_parsed(
            parser, start, validation.ValidationError(validation.PRIORITY_TYPE, value=repr(value))
        )
    return parser.parse_integer(allow_boolean=False)


def bind_later_uses(func: Operation, only: Collection[WaitTensorOp] | None = None) -> None:
    """Spell out every `stream.wait_tensor`'s seed meaning in the flattened function:
    each later use of its tensor in program order (the same block, or nested in a
    later op) uses the wait's result instead, so that the ordering survives a reissue.

    The unlowered program graph orders those uses after the wait's `dep` by their
    place (`npuir.analysis.program`); a lowered function keeps the ordering in its
    data: `stream-partition` calls this once it has flattened the stream scopes and
    `coreset-lower` once more after inlining the limit scopes, for the waits those
    scopes held (`only`), so then every later use reads the wait's result.  (A wait
    made after the first call, such as `stream-partition`'s collective chain, orders
    its own user alone.)"""
    ops = list(func.regions[0].walk())
    waits = [op for op in ops if isinstance(op, WaitTensorOp) and (only is None or op in only)]
    if not waits:
        return
    # Pre-order positions: the ops nested in `parent` are exactly those positioned in
    # (pos[parent], end[parent]], so a use is later than a wait in the wait's block (or
    # nested in a later op of it) when pos[wait] < pos[use] <= end[wait's parent].
    pos = {op: i for i, op in enumerate(ops)}
    end = list(range(len(ops)))
    for i in reversed(range(len(ops))):
        parent = ops[i].parent_op()
        if parent is not None and parent in pos:
            end[pos[parent]] = max(end[pos[parent]], end[i])
    for wait in waits:
        parent = wait.parent_op()
        limit = end[pos[parent]] if parent is not None and parent in pos else len(ops)
        for use in list(wait.tensor.uses):
            at = pos.get(use.operation, -1)
            if isinstance(use.operation, WaitTensorOp) and use.index == 1:
                continue  # a later wait *after* the tensor waits for its producer, not a use
            if pos[wait] < at <= limit:
                use.operation.operands[use.index] = wait.result


def stream_of(op: Operation) -> str | None:
    """The symbol an op's `stream.on` names, or None before partitioning."""
    ref = op.attributes.get(STREAM_ON)
    return ref.root_reference.data if isinstance(ref, SymbolRefAttr) else None


class StreamAttributeVerifier(AttributeVerifier):
    """`stream.on` names a stream that a `stream.decl` of the module declares."""

    def verify_operation_attribute(self, op: Operation, name: str, value: Attribute) -> None:
        if name == RECORD_STREAM:
            self._verify_record_stream(op, value)
            return
        if name != STREAM_ON:
            return
        if not isinstance(value, SymbolRefAttr) or value.nested_references.data:
            raise VerifyException(f"'{STREAM_ON}' must name a stream as @symbol, got {value}")
        # Streams are declared at module level, in the op's module.
        module = op.parent_op()
        while module is not None and not isinstance(module, ModuleOp):
            module = module.parent_op()
        if module is None:
            return  # a detached op: nothing to resolve against yet
        name = value.root_reference.data
        if name not in _declared(module):
            raise VerifyException(f"names stream @{name}, which no 'stream.decl' declares")

    def _verify_record_stream(self, op: Operation, value: Attribute) -> None:
        """`stream.record_stream`: a non-empty list of declared streams, none the op's own."""
        refs = value.data if isinstance(value, ArrayAttr) else None
        if not refs or not all(
            isinstance(r, SymbolRefAttr) and not r.nested_references.data for r in refs
        ):
            raise validation.ValidationError(RECORD_STREAM_FORM, value=str(value))
        names = [r.root_reference.data for r in refs if isinstance(r, SymbolRefAttr)]
        own = stream_of(op)
        if own in names:
            raise validation.ValidationError(RECORD_STREAM_OWN, stream=own)
        module = op.parent_op()
        while module is not None and not isinstance(module, ModuleOp):
            module = module.parent_op()
        if module is None:
            return
        for name in names:
            if name not in _declared(module):
                raise validation.ValidationError(RECORD_STREAM_UNDECLARED, stream=name)


def _declared(module: ModuleOp) -> Collection[str]:
    """The stream symbols `module` declares (read once per verifier walk)."""
    facts = walk_facts()
    if facts is not None:
        known = facts.get(("stream.decl", module))
        if isinstance(known, frozenset):
            return known
    names = frozenset(o.sym_name.data for o in module.ops if isinstance(o, DeclOp))
    if facts is not None:
        facts[("stream.decl", module)] = names
    return names


Stream = Dialect(
    "stream", [SwitchOp, YieldOp, WaitTensorOp, DeclOp], [], [StreamAttributeVerifier()]
)
