"""`core-deadlock-check`: ops that can deadlock on cores, found before the device runs them.

The rule (TorchAir's npugraph_ex `deadlock_check`,
Ascend/torchair/docs/zh/npugraph_ex/dfx/deadlock_check.md, and the core-limiting seed 003,
TorchAir's appendix on core limits in eager and graph mode): an op that *holds* the cores it
has while it waits -- a collective in AIV mode (HCCL or MC2) waiting for its peers on the
other ranks, or a kernel with a SyncAll that needs all its cores at once (npuir's
`full_core_sync`, e.g. `npu.nonzero`) -- can run beside another such op on another
stream.  If their demands on one engine together exceed the device's cores, each may
hold part of what the other waits for: on one card a SyncAll kernel waits for cores a
collective holds, and that collective waits for its peer on the next card, held up the
same way (seed 003's NonZero against reduceScatter / dispatchCombine), or two collectives
on two streams each hold part of the AIV cores and wait for peers that hold the rest
(`aiv_all_gather (32) <-> MoeDistributeDispatchV2 (24) sum=56 > 48`).

Every such pair is an error at the op issued later, naming both ops, their streams, their
demands and the device's count, with a note at the other op.  Two ops "can run at the
same time" when happens-before (`npuir.analysis.happens_before`: stream order and event
waits) orders neither before the other.  An op's demand on an engine is its effective
core limit (`npuir.analysis.core_limits`: op scope, stream limit, global limit, else the
whole device): a holder takes its whole limit.  Ordinary kernels are not holders -- they
run their blocks in waves on whatever cores are free and release them -- so they are
left out, as npugraph_ex's check filters compute kernels out of its task dump; ops whose
limits do not act on them (AI CPU kernels, collectives in AI CPU / SDMA mode) take no AI
Core cores at all.

How it differs from npugraph_ex's check: that one reads the task dump of a graph already
captured (stream and task ids, block dims as launched) and so runs only on the device; this
one reads the scheduled IR, one function per rank, and reports source locations.  It
checks what the program allows, not one run: any pair happens-before leaves unordered.

Complexity: with H holders on S streams, O(H log H) to index them by stream and demand
(`npuir.analysis.overlap.StreamWindows`: the holders of stream s that may overlap a node
of stream t form one contiguous run; a sparse table gives the largest demand in a run),
then O(S log H) per holder: O(H S log H) in all, never a pass over all pairs of ops.  Each
holder is reported with, for each other stream, the overlapping holder of largest demand:
limiting the first below the device's count less that demand removes every conflict it
has on that stream.  The happens-before sweep it reads is O(N S) for N nodes.

Needs a partitioned function, after `insert-events` (before it nothing orders streams,
and every pair on two streams is reported).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar, Literal

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from npuir.analysis.core_limits import ENGINES, CoreLimits, engines_used
from npuir.analysis.manager import ALL, AnalysisManager, LoweredFunction, Preserved, analyses
from npuir.analysis.overlap import StreamWindows
from npuir.analysis.program import (
    NOT_PARTITIONED,
    NodeKind,
    Program,
    module_streams,
    scheduled_functions,
)
from npuir.backends.npu.hardware import Hardware
from npuir.context import NpuirContext
from npuir.diagnostics import Diagnostic, DiagnosticError, Kind, error, op_location
from npuir.dialects.npu import OP_NAME, CollectiveOp, NpuOp
from npuir.passes import PARTITIONED, IRState, option
from npuir.schedule.capture_rules import DEFAULT_CAPTURE_LIMIT
from npuir.schedule.device import device_of

CORE_DEADLOCK = Kind(
    "core.deadlock-risk",
    "core deadlock risk in @{function}: {op} on {stream} ({demand} {engine}{why}) <-> {other} "
    "on {other_stream} ({other_demand} {engine}{other_why}) sum={total} > {device_cores} "
    "{engine} cores of {device}: nothing orders the two, and each holds the cores it has "
    "while it waits for the rest; {fix}",
)
"""Two ops that hold cores while they wait can run at the same time on different streams and
together need more cores of one engine than the device has; arguments: `function`, `op`,
`other` (the ops), `stream`, `other_stream`, `engine`, `demand`, `other_demand`, `total`
(their sum), `device_cores`, `device`, `room` (the device's count less `other_demand`: a
limit on `op` that removes the pair, or 0), and the words `why`, `other_why`, `fix`."""
CORE_DEADLOCK_PEER = Kind(
    "core.deadlock-risk-peer",
    "{other} on {other_stream} holds up to {other_demand} {engine} cores while it waits: it "
    "is the other op of the core deadlock risk at {at}",
)
"""The note at the second op of a `core.deadlock-risk` pair; arguments: `other`,
`other_stream`, `other_demand`, `engine`, `at` (where the error stands)."""
CORE_DEADLOCK_FOUND = Kind(
    "core.deadlock-risks",
    "core deadlock risk detected: {count} conflicting pair(s) of ops (each reported above); "
    "on the device the program can hang",
)
"""`core-deadlock-check` found pairs (reported one by one before it); argument: `count`."""


# ---------------------------------------------------------------------------------------------
# What an op holds
# ---------------------------------------------------------------------------------------------


def holds_cores(op: Operation) -> bool:
    """Whether `op` holds the cores it has while it waits for more (SyncAll kernels) or for
    its peers (collectives in AIV mode, MC2 included)."""
    if not isinstance(op, NpuOp):
        return False
    if isinstance(op, CollectiveOp):
        return op.uses_vector_cores
    return op.full_core_sync and bool(engines_used(op))


def _why(op: NpuOp, demand: int, total: int) -> str:
    """Why an op holds its cores, as the message says it."""
    if isinstance(op, CollectiveOp):
        words = ", AIV collective waiting for its peers"
    else:
        words = ", SyncAll: needs them all at once"
    return words + (", every core" if demand >= total else "")


class _RangeMax:
    """Index of the largest value in `values[lo:hi]` in O(1) after O(n log n) (a sparse
    table; ties go to the earlier index)."""

    def __init__(self, values: Sequence[int]) -> None:
        self.values = values
        level = list(range(len(values)))
        self.levels = [level]
        width = 1
        while 2 * width <= len(values):
            prev = level
            level = [
                self._better(prev[i], prev[i + width]) for i in range(len(values) - 2 * width + 1)
            ]
            self.levels.append(level)
            width *= 2

    def _better(self, i: int, j: int) -> int:
        return j if self.values[j] > self.values[i] else i

    def argmax(self, lo: int, hi: int) -> int:
        k = (hi - lo).bit_length() - 1
        level = self.levels[k]
        return self._better(level[lo], level[hi - (1 << k)])


@dataclass(frozen=True)
class Conflict:
    """Two holders that can run at the same time, over the device's count on `engine`:
    `op` (issued later, where the error stands) and `other`, as program nodes."""

    op: int
    other: int
    engine: str
    demand: int
    other_demand: int


def find_conflicts(
    windows: StreamWindows, demand: dict[tuple[int, str], int], hw: Hardware
) -> list[Conflict]:
    """The conflicting pairs of one function's holders (see the module docstring): for each
    holder and each other stream, the overlapping holder of largest demand on each engine,
    when the two need more than the device has; each pair once."""
    tables: dict[tuple[int, str], _RangeMax] = {}
    for s in windows.streams():
        for engine in ENGINES:
            tables[(s, engine)] = _RangeMax([demand.get((n, engine), 0) for n in windows.on(s)])
    seen: set[tuple[int, int, str]] = set()
    out: list[Conflict] = []
    for t in windows.streams():
        for b in windows.on(t):
            mine = {e: d for e in ENGINES if (d := demand.get((b, e), 0)) > 0}
            for s in windows.streams():
                if s == t or not mine:
                    continue
                lo, hi = windows.window(b, s)
                if lo >= hi:
                    continue
                for engine, need in mine.items():
                    a = windows.on(s)[tables[(s, engine)].argmax(lo, hi)]
                    theirs = demand.get((a, engine), 0)
                    if theirs == 0 or need + theirs <= hw.cores(engine):
                        continue
                    first, second = min(a, b), max(a, b)
                    if (first, second, engine) in seen:
                        continue
                    seen.add((first, second, engine))
                    out.append(
                        Conflict(
                            second, first, engine, demand[(second, engine)], demand[(first, engine)]
                        )
                    )
    out.sort(key=lambda c: (c.op, c.other, c.engine))
    return out


# ---------------------------------------------------------------------------------------------
# The library function
# ---------------------------------------------------------------------------------------------


def check_core_deadlock(
    module: ModuleOp, hardware: Hardware | None = None, *, cache: AnalysisManager | None = None
) -> list[Diagnostic]:
    """Every pair of ops of a partitioned `module` that can deadlock on cores, as diagnostics
    in order: for each pair a `core.deadlock-risk` error at one op, then a
    `core.deadlock-risk-peer` note at the other.  Empty when there is none.

    `hardware` is the device (default: the module's `npu.target`, else npuir's default
    device); each function is one rank's program, checked against one device.  `cache`
    shares the program graphs and happens-before relations a pipeline already built.
    Raises a located `DiagnosticError` for a module that is not partitioned."""
    hw = hardware if hardware is not None else device_of(module, None)
    streams = tuple(module_streams(module))
    funcs = scheduled_functions(module)
    if not funcs:
        return []
    if not streams:
        raise error(funcs[0], NOT_PARTITIONED, needs="core-deadlock-check", unit="module")
    limits = CoreLimits(module, hw).run()
    manager = cache if cache is not None else AnalysisManager()
    out: list[Diagnostic] = []
    for func in funcs:
        lowered = manager.get(LoweredFunction, func, streams)
        prog = lowered.prog
        holders = [
            n
            for n in range(len(prog))
            if prog.kind[n] is NodeKind.COMPUTE and holds_cores(prog.ops[n])
        ]
        if not holders:
            continue
        demand: dict[tuple[int, str], int] = {}
        for n in holders:
            op = prog.ops[n]
            assert isinstance(op, NpuOp)
            counts = limits.of(op)
            for engine in engines_used(op):
                if engine in counts:
                    demand[(n, engine)] = min(counts[engine], hw.cores(engine))
        windows = StreamWindows(lowered.happens_before, holders)
        for c in find_conflicts(windows, demand, hw):
            out.extend(_diagnostics(prog, c, hw, func.sym_name.data))
    return out


def _describe(prog: Program, n: int) -> str:
    """The op as messages name it, with the operator's own name when the importer kept it
    (npugraph_ex's report names kernels so: `MoeDistributeDispatchV2`)."""
    named = prog.ops[n].attributes.get(OP_NAME)
    said = prog.describe(n)
    return f"{said} named {named.data}" if isinstance(named, StringAttr) else said


def _diagnostics(prog: Program, c: Conflict, hw: Hardware, function: str) -> list[Diagnostic]:
    op, other = prog.ops[c.op], prog.ops[c.other]
    assert isinstance(op, NpuOp) and isinstance(other, NpuOp)
    total = hw.cores(c.engine)
    room = total - c.other_demand
    order = "order them (a stream.wait_tensor, or one stream)"
    fix = f"{order}, or limit this op to {room} {c.engine} cores" if room >= 1 else order
    stream, other_stream = (
        prog.stream_name(prog.stream[c.op]),
        prog.stream_name(prog.stream[c.other]),
    )
    where = op_location(op)
    main = Diagnostic.of(
        "error",
        CORE_DEADLOCK,
        where,
        function=function,
        op=_describe(prog, c.op),
        other=_describe(prog, c.other),
        stream=stream,
        other_stream=other_stream,
        engine=c.engine,
        demand=c.demand,
        other_demand=c.other_demand,
        total=c.demand + c.other_demand,
        device_cores=total,
        device=hw.name,
        room=max(room, 0),
        why=_why(op, c.demand, total),
        other_why=_why(other, c.other_demand, total),
        fix=fix,
    )
    note = Diagnostic.of(
        "note",
        CORE_DEADLOCK_PEER,
        op_location(other),
        other=_describe(prog, c.other),
        other_stream=other_stream,
        other_demand=c.other_demand,
        engine=c.engine,
        at=str(where) if where is not None else f"{_describe(prog, c.op)} in @{function}",
    )
    return [main, note]


# ---------------------------------------------------------------------------------------------
# The stream budget under capture
# ---------------------------------------------------------------------------------------------

CAPTURE_STREAM_BUDGET = Kind(
    "capture.stream-budget",
    "@{function} uses {streams} stream(s) in each captured graph; {captured} capture(s) "
    "({captures_said}) take {total} streams, more than the {budget} streams of {device}; "
    "a re-capture past it stops for lack of streams (npugraph_ex's capture_limit note); use "
    "fewer streams, or capture fewer shapes (capture_limit)",
)
"""The streams a function's captured graphs take exceed the device's stream budget
(`Hardware.max_streams`); arguments: `function`, `streams` (per captured graph), `captures`
(what the caller gave, or null), `capture_limit`, `captured` (graphs counted), `total`
(`streams` x `captured`), `budget`, `device`, `captures_said` (the words for them).  An error
when the captures are known, a warning when only `capture_limit` bounds them."""
BAD_CAPTURE_LIMIT = Kind(
    "capture.bad-capture-limit",
    "capture_limit must be an int >= 1 (npugraph_ex's minimum), got {value}",
)
"""A capture limit below 1; argument: `value`."""


def captured_streams(
    streams: int, captures: int | None = None, capture_limit: int = DEFAULT_CAPTURE_LIMIT
) -> tuple[int, int]:
    """`(captured graphs, streams they take)`: a graph captured once per shape, each with its
    own `streams`, up to `capture_limit` graphs (later shapes run eagerly and capture
    nothing); `captures` None (not known before run time) counts `capture_limit` of them."""
    captured = capture_limit if captures is None else min(captures, capture_limit)
    return captured, streams * captured


def check_capture_stream_budget(
    module: ModuleOp,
    hardware: Hardware | None = None,
    *,
    captures: int | None = None,
    capture_limit: int = DEFAULT_CAPTURE_LIMIT,
    cache: AnalysisManager | None = None,
) -> list[Diagnostic]:
    """The `capture.stream-budget` diagnostics of a partitioned `module` captured in capture
    mode: for each function (one rank, on its own device), the streams its ops use (the
    capture stream always counted) times the graphs captured of it, against
    `hardware.max_streams` (default device: the module's `npu.target`).

    `captures`: how many shapes will be captured (e.g. the number of gears a caller knows
    of); over budget is then an error.  None: unknown, so up to `capture_limit` (default
    64) are counted and over budget is a warning -- it fails only if that many shapes come.
    Each diagnostic is located at its function.  A `capture_limit` below 1 is a located
    error (`capture.bad-capture-limit`)."""
    hw = hardware if hardware is not None else device_of(module, None)
    funcs = scheduled_functions(module)
    if isinstance(capture_limit, bool) or not isinstance(capture_limit, int) or capture_limit < 1:
        raise error(funcs[0] if funcs else module, BAD_CAPTURE_LIMIT, value=repr(capture_limit))
    streams = tuple(module_streams(module))
    manager = cache if cache is not None else AnalysisManager()
    out: list[Diagnostic] = []
    for func in funcs:
        used = {0}
        if streams:
            prog = manager.get(LoweredFunction, func, streams).prog
            used.update(s for s in prog.stream if s >= 0)
        captured, total = captured_streams(len(used), captures, capture_limit)
        if total <= hw.max_streams:
            continue
        if captures is None:
            said = f"up to capture_limit={capture_limit}, one per input shape"
        elif captures > capture_limit:
            said = f"{captures} shapes, capture_limit={capture_limit} of them captured"
        else:
            said = f"{captures} shape(s)"
        out.append(
            Diagnostic.of(
                "warning" if captures is None else "error",
                CAPTURE_STREAM_BUDGET,
                op_location(func),
                function=func.sym_name.data,
                streams=len(used),
                captures=captures,
                capture_limit=capture_limit,
                captured=captured,
                captures_said=said,
                total=total,
                budget=hw.max_streams,
                device=hw.name,
            )
        )
    return out


# ---------------------------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CoreDeadlockCheckPass(ModulePass):
    """Refuse two core-holding ops that can overlap on two streams and overrun the device.

    An op that holds its cores while it waits (an AIV collective, a SyncAll kernel such as
    `npu.nonzero`) beside another on another stream, nothing ordering them, their demands on
    one engine over the device's count: an error at one naming both, their streams, demands
    and the device's count, a note at the other, per rank (function).  What npugraph_ex's
    `deadlock_check` reports after capture, found before it (docs/deadlock-check.md)."""

    name = "core-deadlock-check"

    REQUIRES: ClassVar[tuple[IRState, ...]] = (PARTITIONED,)
    PRESERVES: ClassVar[Preserved] = ALL

    hw: str | None = option(
        None, "the device preset or TOML file (default: the module's npu.target, else 910b2)"
    )
    severity: Literal["error", "warning"] = option(
        "error", "'error' (default) refuses the module; 'warning' reports each pair and goes on"
    )

    stream_budget: bool = option(
        False,
        "also check the streams x captured graphs of each function against the device's "
        "stream budget (capture.stream-budget)",
    )
    captures: int | None = option(
        None, "with stream-budget: the shapes that will be captured (default: capture-limit)"
    )
    capture_limit: int = option(
        DEFAULT_CAPTURE_LIMIT, "with stream-budget: npugraph_ex's capture_limit (default 64)"
    )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        hw = device_of(op, self.hw)
        cache = analyses(ctx)
        found = check_core_deadlock(op, hw, cache=cache)
        if self.severity == "warning":
            found = [replace(d, severity="warning") if d.severity == "error" else d for d in found]
        if self.stream_budget:
            found += check_capture_stream_budget(
                op, hw, captures=self.captures, capture_limit=self.capture_limit, cache=cache
            )
        errors = [d for d in found if d.severity == "error"]
        if not errors:
            for diagnostic in found:
                _emit(ctx, diagnostic)
            return
        pairs = [d for d in errors if d.kind == CORE_DEADLOCK.code]
        if not pairs:
            # Only the stream budget: its first error is the failure.
            for diagnostic in found:
                if diagnostic is not errors[0]:
                    _emit(ctx, diagnostic)
            raise DiagnosticError(errors[0])
        for diagnostic in found:
            _emit(ctx, diagnostic)
        raise DiagnosticError(
            Diagnostic.of("error", CORE_DEADLOCK_FOUND, pairs[0].location, count=len(pairs))
        )


def _emit(ctx: Context, diagnostic: Diagnostic) -> None:
    """Report through npuir's engine (collected or printed), or to stderr under a plain
    xDSL context."""
    if isinstance(ctx, NpuirContext):
        ctx.diagnostics.add(diagnostic)
    else:
        print(diagnostic.render(), file=sys.stderr)
