"""`capture-verify`: refuse a lowered program that the runtime would refuse to capture.

The rules are the runtime's, checked on each function (one captured graph each) before a
device sees it:

- **joined** (`capture.unjoined-stream`): every side stream's last task is an event record
  that a captured stream waits on, and the capture stream's return is ordered after it.
  Otherwise `aclmdlRICaptureEnd` fails with error 107025 (`ACL_ERROR_RT_STREAM_UNJOINED`),
  "capture model contains a stream that was not joined to the original stream"
  (hicann/runtime `src/runtime/core/src/context/context.cc`,
  `Context::CheckCaptureModelValidity`; the error seen in vllm-ascend issue threads).
- **forked** (`capture.unforked-stream`): every side stream's first task is a wait on an
  event recorded by a stream already in the capture.  A task issued on a stream before
  that is not part of the captured graph: it would run once, at capture time, and never
  on replay.  npugraph_ex inserts this wait for every user stream
  (`apply_event_closure_with_multi_stream`, `tagged_event_wait_on_stream`).

`npu-capture` runs `capture-close`, which adds what is missing, before this check; run alone
on a hand-written lowered program, it says what the program lacks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from npuir.analysis.happens_before import HappensBefore
from npuir.analysis.manager import ALL, LoweredFunction, Preserved, lowered_functions
from npuir.analysis.program import (
    NodeKind,
)
from npuir.diagnostics import DiagnosticError, Kind, error
from npuir.passes import PARTITIONED, IRState
from npuir.schedule.capture_rules import capture_stream, unforked, unjoined

UNJOINED = Kind(
    "capture.unjoined-stream",
    "capture model contains a stream that was not joined to the original stream (runtime "
    "error 107025): stream {stream}'s last task, {last}, is {why}; record an event after it "
    "and wait on it on {origin} before the return",
)
"""A side stream a capture cannot end with; arguments: `stream`, `last` (its last task),
`why`, `origin` (the capture stream)."""
UNFORKED = Kind(
    "capture.unforked-stream",
    "stream {stream} is not forked from the capture: its first task, {first}, does not wait on "
    "an event of a capturing stream, so the capture would not contain it; record an event on "
    "{origin} before it and wait on it on {stream} first",
)
"""A side stream whose first task precedes its fork; arguments: `stream`, `first`, `origin`."""


def check_capture(lowered: LoweredFunction) -> DiagnosticError | None:
    """The first capture rule `lowered` breaks, as a located error, or None."""
    prog = lowered.prog
    hb: HappensBefore = lowered.happens_before
    origin = prog.stream_name(capture_stream(prog))
    for s, n in unforked(prog):
        return error(
            prog.ops[n],
            UNFORKED,
            stream=prog.stream_name(s),
            first=prog.describe(n),
            origin=origin,
        )
    waited = {prog.event_of[w] for w in range(len(prog)) if prog.kind[w] is NodeKind.WAIT}
    for s, n in unjoined(prog, hb):
        if prog.kind[n] is not NodeKind.RECORD:
            why = "not an event record"
        elif n not in waited:
            why = "an event record that no stream waits on"
        else:
            why = "an event record the return is not ordered after"
        return error(
            prog.ops[n],
            UNJOINED,
            stream=prog.stream_name(s),
            last=prog.describe(n),
            why=why,
            origin=origin,
        )
    return None


@dataclass(frozen=True)
class CaptureVerifyPass(ModulePass):
    """Check that every side stream forks from and joins back to the capture stream."""

    name = "capture-verify"

    REQUIRES: ClassVar[tuple[IRState, ...]] = (PARTITIONED,)

    PRESERVES: ClassVar[Preserved] = ALL

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for lowered in lowered_functions(ctx, op, "capture-verify"):
            problem = check_capture(lowered)
            if problem is not None:
                raise problem
