"""What npuir's ops tell generic passes about their side effects.

Lowered IR keeps its order in block position (docs/ir.md, "Issue order"): ops on one stream
run first-in first-out in issue order, and `sync.record`/`sync.wait` pairs
order the streams.  xDSL's generic passes (`cse`, `dce`, `canonicalize`,
loop-invariant code motion) move, merge and delete an op only when its
`MemoryEffect` traits say it has no effect, so every op whose position carries
meaning must report one:

- an `npu` op is pure while it is a node of the graph, but once it stands on
  a stream (`stream.on`) it is an issued task: merging two of them or dropping
  one whose result nobody reads changes the schedule.  xDSL traits belong to
  the class, so `PureUntilScheduled` answers per op, by the presence of
  `stream.on`;
- `sync.record`, `sync.wait` and `stream.wait_tensor` are ordering itself:
  `OrdersStream` gives them an effect on their stream always.

The effects name the stream they act on (its `@symbol`) as a `StreamResource`.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from xdsl.dialects.builtin import SymbolRefAttr
from xdsl.ir import Operation
from xdsl.traits import (
    ConditionallySpeculatable,
    EffectInstance,
    MemoryEffect,
    MemoryEffectKind,
    Resource,
)

STREAM_ON = "stream.on"
"""The attribute naming an op's stream (a `@symbol` of a `stream.decl`) once lowered."""


@dataclass(frozen=True)
class StreamResource(Resource):
    """A hardware stream: its queue of issued work, which ops read and write in order."""

    def name(self) -> str:
        return "npu.stream"


_STREAM = StreamResource()


def _on(stream: SymbolRefAttr | None) -> frozenset[EffectInstance]:
    """Reading and writing the queue of `stream` (an unknown stream when None)."""
    return frozenset(
        EffectInstance(kind, stream, _STREAM)
        for kind in (MemoryEffectKind.READ, MemoryEffectKind.WRITE)
    )


def _stream_on(op: Operation) -> SymbolRefAttr | None:
    ref = op.attributes.get(STREAM_ON)
    return ref if isinstance(ref, SymbolRefAttr) else None


class PureUntilScheduled(MemoryEffect, ConditionallySpeculatable):
    """No effect (xDSL's `Pure`) until the op carries `stream.on`; then it reads and
    writes its stream, and may be neither speculated, merged nor dropped."""

    @classmethod
    def get_effects(cls, op: Operation) -> AbstractSet[EffectInstance]:
        if STREAM_ON not in op.attributes:
            return frozenset()
        return _on(_stream_on(op))

    @classmethod
    def is_speculatable(cls, op: Operation) -> bool:
        return STREAM_ON not in op.attributes


class OrdersStream(MemoryEffect):
    """Reads and writes the stream it names (a `stream` property, else `stream.on`):
    for the ops that exist to order work, whether or not their results are used."""

    @classmethod
    def get_effects(cls, op: Operation) -> AbstractSet[EffectInstance]:
        stream = op.properties.get("stream")
        return _on(stream if isinstance(stream, SymbolRefAttr) else _stream_on(op))
