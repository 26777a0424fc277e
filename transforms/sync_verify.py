"""`sync-verify`: prove a lowered function race-free, or point at the race.

A function is race-free when every use of a value on another stream than its
producer is ordered after the producer by stream order and events, every
`stream.wait_tensor` ordering holds the same way, every stream's work is
joined before `func.return`, and every wait comes after its record in issue
order.  Physical event ids are read as the hardware reads them (a wait is
released by the latest record of its id issued before it).  The standard
pipelines end with this pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from npuir.analysis.happens_before import HappensBefore
from npuir.analysis.manager import ALL, Preserved, lowered_functions
from npuir.analysis.program import (
    DepKind,
    Program,
)
from npuir.diagnostics import DiagnosticError, Kind, error
from npuir.passes import PARTITIONED, IRState

RACE = Kind(
    "sync.race",
    "race: {consumer} on stream {consumer_stream} {how} {producer} on stream "
    "{producer_stream}, but no event orders it after its producer",
)
"""A cross-stream use that no event orders after its producer; arguments: `consumer`,
`producer` (ops), their streams, `dependence` ("data" or "control") and `how` (its words)."""
UNJOINED = Kind(
    "sync.unjoined-stream",
    "race: stream {stream} is not joined into {return_stream} before the function returns",
)
"""A stream not joined before the function returns; arguments: `stream`, `return_stream`."""


def find_race(prog: Program, hb: HappensBefore | None = None) -> DiagnosticError | None:
    """The first race in issue order as a located error, or None (`hb`: prog's
    happens-before, when the caller has it)."""
    hb = hb if hb is not None else HappensBefore(prog).run()
    for n in range(len(prog)):
        for miss in hb.missing(n):
            p = miss.producer
            how = "uses the result of" if miss.kind is DepKind.DATA else "must wait for"
            return error(
                prog.ops[n],
                RACE,
                consumer=prog.describe(n),
                consumer_stream=prog.stream_name(prog.stream[n]),
                producer=prog.describe(p),
                producer_stream=prog.stream_name(prog.stream[p]),
                dependence="data" if miss.kind is DepKind.DATA else "control",
                how=how,
            )
    for ret, s in hb.unjoined():
        return error(
            prog.ops[ret],
            UNJOINED,
            stream=prog.stream_name(s),
            return_stream=prog.stream_name(prog.stream[ret]),
        )
    return None


@dataclass(frozen=True)
class SyncVerifyPass(ModulePass):
    """Check that every cross-stream use is ordered by events and every stream is joined."""

    name = "sync-verify"

    REQUIRES: ClassVar[tuple[IRState, ...]] = (PARTITIONED,)

    PRESERVES: ClassVar[Preserved] = ALL

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for lowered in lowered_functions(ctx, op, "sync-verify"):
            race = find_race(lowered.prog, lowered.happens_before)
            if race is not None:
                raise race
