"""The `sync` dialect: events that order one stream after another.

Mirrors the record/wait pairs of ACL and CUDA events (and MLIR's Async
tokens): `sync.record` marks the point on its stream after everything issued
there so far; `sync.wait` holds its stream until that point has executed.  An
event is an SSA value, so a record precedes its waits in issue order.  After
`insert-events` assigns physical ids, a record carries `event_id`, and a wait
means what the hardware means: after the latest record of that id issued
before it.
"""

from __future__ import annotations

from xdsl.dialects.builtin import I64, IntegerAttr, SymbolRefAttr, i64
from xdsl.ir import Dialect, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_attr_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.utils.exceptions import VerifyException

from npuir.dialects.attributes import VerifiesDialectAttributes
from npuir.dialects.effects import OrdersStream

EVENT_ID = "event_id"


@irdl_attr_definition
class EventType(ParametrizedAttribute, TypeAttribute):
    """The type of an event value, `!sync.event`."""

    name = "sync.event"


@irdl_op_definition
class RecordOp(IRDLOperation):
    """Records an event on a stream, after everything issued there so far.

    ```mlir
    %e = sync.record on @s0 {event_id = 0 : i64}
    ```
    """

    name = "sync.record"

    traits = traits_def(VerifiesDialectAttributes(), OrdersStream())

    stream = prop_def(SymbolRefAttr)
    event_id = opt_attr_def(IntegerAttr[I64], attr_name=EVENT_ID)
    event = result_def(EventType)

    assembly_format = "`on` $stream attr-dict"

    def __init__(self, stream: str, event_id: int | None = None) -> None:
        attrs = {} if event_id is None else {EVENT_ID: IntegerAttr(event_id, i64)}
        super().__init__(
            properties={"stream": SymbolRefAttr(stream)},
            attributes=attrs,
            result_types=[EventType()],
        )

    @property
    def stream_name(self) -> str:
        return self.stream.root_reference.data

    @property
    def event_id_value(self) -> int | None:
        return None if self.event_id is None else self.event_id.value.data

    def verify_(self) -> None:
        if self.event_id is not None and self.event_id.value.data < 0:
            raise VerifyException(f"event_id must be >= 0, got {self.event_id.value.data}")


@irdl_op_definition
class WaitOp(IRDLOperation):
    """Holds a stream until an event's record has executed.

    ```mlir
    sync.wait %e on @s1
    ```
    """

    name = "sync.wait"

    traits = traits_def(VerifiesDialectAttributes(), OrdersStream())

    event = operand_def(EventType)
    stream = prop_def(SymbolRefAttr)

    assembly_format = "$event `on` $stream attr-dict"

    def __init__(self, event: SSAValue, stream: str) -> None:
        super().__init__(operands=[event], properties={"stream": SymbolRefAttr(stream)})

    @property
    def stream_name(self) -> str:
        return self.stream.root_reference.data

    def verify_(self) -> None:
        self.verify_event_source()

    def verify_event_source(self) -> None:
        """The check that depends on where the op stands (its operand's producer), not on
        its signature: run at every op even when the verifier memoises the rest."""
        if not isinstance(self.event.owner, RecordOp):
            raise VerifyException("waits on a value that is not the result of 'sync.record'")


Sync = Dialect("sync", [RecordOp, WaitOp], [EventType])
