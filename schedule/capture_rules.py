"""The capture rules on a lowered program graph: which streams a captured graph forks and joins.

Aclgraph capture (torch_npu's npugraph_ex, TorchAir's `reduce-overhead`) records the host's
stream and event calls.  A side stream is part of the capture once it has waited on an event
of a capturing stream (`unforked` finds those that issue work before), and the capture can
end only when each side stream's last task is an event record that a captured stream waits
on, with the capture stream ordered after it (`unjoined`; the runtime's
`CheckCaptureModelValidity`, hicann/runtime `src/runtime/core/src/context/context.cc`,
error 107025).  `capture-close` adds what is missing and `capture-verify` refuses what is
left; both read the rules here (docs/capture-mode.md).
"""

from __future__ import annotations

from npuir.analysis.happens_before import HappensBefore
from npuir.analysis.program import NodeKind, Program
from npuir.backends.npu.cost import runs_without_task
from npuir.dialects.npu import NpuOp

DEFAULT_CAPTURE_LIMIT = 64
"""How many shapes npugraph_ex captures per FX graph before it falls back to eager
(`capture_limit`, default 64, minimum 1:
Ascend/torchair/docs/zh/npugraph_ex/basic/capture_limit.md)."""


def capture_stream(prog: Program) -> int:
    """The stream the capture began on: the one `func.return` runs on."""
    for n in range(len(prog) - 1, -1, -1):
        if prog.kind[n] is NodeKind.RETURN:
            return prog.stream[n]
    return 0


def is_task(prog: Program, n: int) -> bool:
    """Whether node n issues a device task (a kernel, a record or a wait): a view that
    runs without one (`runs_without_task`) is captured as nothing."""
    kind = prog.kind[n]
    if kind is NodeKind.RETURN:
        return False
    op = prog.ops[n]
    return kind is not NodeKind.COMPUTE or not (isinstance(op, NpuOp) and runs_without_task(op))


def stream_tasks(prog: Program) -> dict[int, list[int]]:
    """Each stream's device tasks in issue order."""
    tasks: dict[int, list[int]] = {}
    for n in range(len(prog)):
        if is_task(prog, n):
            tasks.setdefault(prog.stream[n], []).append(n)
    return tasks


def unforked(prog: Program) -> list[tuple[int, int]]:
    """(stream, its first task) for each side stream whose first task is not a wait on an
    event recorded by a stream already in the capture: work the capture would miss."""
    origin = capture_stream(prog)
    capturing = {origin}
    out: list[tuple[int, int]] = []
    first_seen: set[int] = set()
    for n in range(len(prog)):
        s = prog.stream[n]
        if s in first_seen or not is_task(prog, n):
            continue
        first_seen.add(s)
        if s == origin:
            continue
        joins = prog.kind[n] is NodeKind.WAIT and prog.stream[prog.event_of[n]] in capturing
        if joins:
            capturing.add(s)
        else:
            out.append((s, n))
            capturing.add(s)  # report each stream once, from its first task
    return out


def unjoined(prog: Program, hb: HappensBefore) -> list[tuple[int, int]]:
    """(stream, its last task) for each side stream the runtime would call unjoined: its
    last task is not an event record that some captured stream waits on, or the capture
    stream's return is not ordered after it (the runtime's `CheckCaptureModelValidity`,
    hicann/runtime `src/runtime/core/src/context/context.cc`)."""
    origin = capture_stream(prog)
    returns = [n for n in range(len(prog)) if prog.kind[n] is NodeKind.RETURN]
    waited = {prog.event_of[n] for n in range(len(prog)) if prog.kind[n] is NodeKind.WAIT}
    out: list[tuple[int, int]] = []
    for s, tasks in sorted(stream_tasks(prog).items()):
        if s == origin:
            continue
        last = tasks[-1]
        closed = prog.kind[last] is NodeKind.RECORD and last in waited
        if not closed or any(not hb.ordered(last, r) for r in returns):
            out.append((s, last))
    return out


__all__ = ["capture_stream", "is_task", "stream_tasks", "unforked", "unjoined"]
