"""`capture-close`: make a lowered program capturable as one graph (aclgraph / npugraph_ex).

Capture mode (`CompilerConfig.mode = "reduce-overhead"`, torch_npu's `npugraph_ex`
backend) records the host's stream and event calls into one graph and replays it.  Only
work issued on the capture stream, or on a stream that has waited on an event recorded by
a capturing stream, is captured; and the runtime refuses to end the capture while a side
stream is left hanging (`sync.capture` in `capture-verify`).  So, per function (one
captured graph each), this pass adds what npugraph_ex's FX pass
`apply_event_closure_with_multi_stream`
(`Ascend/torchair: npugraph_ex/npugraph_ex/_acl_concrete_graph/graph_pass.py`) adds around
every user stream, but only where the program does not already have it:

- **fork**: one `sync.record` on the capture stream (the stream `func.return` is on) at the
  top of the function, and a `sync.wait` on it as the first task of each side stream whose
  first task is not already a wait on a capturing stream's event (TorchAir's
  `tagged_event_record` before the first node and `tagged_event_wait_on_stream` per stream);
- **join**: for each side stream whose last task is not an event record that the capture
  stream is (transitively) ordered after, a `sync.record` after its last task and a
  `sync.wait` on the capture stream before `func.return` (TorchAir's
  `tagged_event_record_on_stream` and `tagged_event_wait` before the output node).
  `insert-events` already joins every stream before the return, so on its output this
  adds a join only where it ordered a stream's end through another stream in a way the
  runtime does not accept (the last task is not a record).

Two more capture-mode rules are written here, as the lowered program's data:

- **record_stream** (`stream.record_stream = [@s...]` on an op): the streams other than
  its own that use its results, which PyTorch's caching allocator has to be told
  (`tensor.record_stream(stream)`, npugraph_ex's multi_stream.md step 4) so that the block
  is not reused before those streams are done.  npuir's memory plan already keeps a buffer
  until its last use on any stream (`mem-plan`'s happens-before rule), so the mark changes
  no offset; it says where the model needs the call.
- **core limits**: `coreset-lower` has resolved every op's limit lexically, which is what
  npugraph_ex's `replace_core_limit_nodes` builds from `set_stream_limit` with a saved and
  restored state (a stream switch inside a `limit_core_num` scope copies the limit onto
  the new stream).  In capture mode only Ascend C kernels take a limit
  (`Ascend/torchair/docs/zh/npugraph_ex/advanced/limit_cores.md`: only Ascend C kernels take
  limits, "仅支持对Ascend C算子控核"): a TBE kernel,
  which graph mode limits on AI Vector cores (seed 003), runs unlimited here, with a
  warning (`capture.limit-no-effect`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, SymbolRefAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from npuir.analysis.happens_before import HappensBefore
from npuir.analysis.program import (
    NOT_PARTITIONED,
    DepKind,
    NodeKind,
    Program,
    build_program,
    module_streams,
    scheduled_functions,
)
from npuir.backends.npu.hardware import Hardware
from npuir.context import warn
from npuir.diagnostics import Kind, error
from npuir.dialects import coreset, gear, stream, sync
from npuir.dialects.npu import NpuOp, kernel_of
from npuir.passes import LIMITS_LOWERED, PARTITIONED, IRState, option
from npuir.schedule.capture_rules import (
    DEFAULT_CAPTURE_LIMIT,
    capture_stream,
    unforked,
    unjoined,
)
from npuir.schedule.device import device_of

CAPTURE_LIMIT_NO_EFFECT = Kind(
    "capture.limit-no-effect",
    "the core limit ({counts}) has no effect on '{op_name}' in capture mode: it is a {kernel} "
    "kernel, and npugraph_ex limits Ascend C kernels only (limit_cores.md)",
)
"""A TBE kernel with a vector-core limit under capture mode (graph mode honours it);
arguments: `op_name`, `kernel`, `counts`."""
CAPTURE_LIMIT = Kind(
    "capture.capture-limit",
    "@{function} has {gears} gears, more than capture_limit {limit}: npugraph_ex captures the "
    "first {limit} shapes it meets and runs the rest eagerly (capture_limit.md); npuir "
    "compiles and reports every gear as a captured graph",
)
"""More gear versions than captured graphs allowed; arguments: `function`, `gears`, `limit`."""


class _Events:
    """Fresh physical event ids above the function's own (an id the closure uses is
    recorded once, so it never aliases an `insert-events` id)."""

    def __init__(self, prog: Program) -> None:
        self.next = 1 + max((i for i in prog.event_id if i >= 0), default=-1)

    def record(self, symbol: str, where: Operation) -> sync.RecordOp:
        rec = sync.RecordOp(symbol, self.next)
        rec.location = where.location
        self.next += 1
        return rec


def close_function(func: FuncOp, prog: Program, hb: HappensBefore) -> int:
    """Add the fork and join events `func` lacks; the number of events added."""
    origin = capture_stream(prog)
    symbols = [info.symbol for info in prog.streams]
    events = _Events(prog)
    added = 0
    forks = unforked(prog)
    if forks:
        body = func.body.block
        first = body.first_op
        assert first is not None
        fork = events.record(symbols[origin], first)
        Rewriter.insert_op(fork, InsertPoint.before(first))
        added += 1
        for s, n in forks:
            wait = sync.WaitOp(fork.event, symbols[s])
            wait.location = prog.ops[n].location
            Rewriter.insert_op(wait, InsertPoint.before(prog.ops[n]))
    joins = unjoined(prog, hb)
    returns = [prog.ops[n] for n in range(len(prog)) if prog.kind[n] is NodeKind.RETURN]
    for s, last in joins:
        join = events.record(symbols[s], prog.ops[last])
        Rewriter.insert_op(join, InsertPoint.after(prog.ops[last]))
        added += 1
        for ret in returns:
            wait = sync.WaitOp(join.event, symbols[origin])
            wait.location = ret.location
            Rewriter.insert_op(wait, InsertPoint.before(ret))
    return added


def mark_record_stream(prog: Program) -> None:
    """`stream.record_stream` on each op whose results a stream other than its own reads
    (a data use, the return's included: an ordering alone keeps no buffer alive)."""
    symbols = [info.symbol for info in prog.streams]
    readers: dict[int, set[int]] = {}
    for n in range(len(prog)):
        if prog.kind[n] not in (NodeKind.COMPUTE, NodeKind.RETURN):
            continue
        for p, dep in prog.deps[n]:
            if dep is DepKind.DATA and prog.stream[p] != prog.stream[n]:
                readers.setdefault(p, set()).add(prog.stream[n])
    for p, others in readers.items():
        prog.ops[p].attributes[stream.RECORD_STREAM] = ArrayAttr(
            [SymbolRefAttr(symbols[s]) for s in sorted(others)]
        )


def unlimit_tbe(ctx: Context, func: FuncOp, hw: Hardware) -> None:
    """A TBE kernel's vector limit has no effect under capture: its `coreset.cores` goes
    back to the device's count, with a warning."""
    for op in func.body.walk():
        if not isinstance(op, NpuOp) or kernel_of(op) != "tbe":
            continue
        cores = op.attributes.get(coreset.CORES)
        if not isinstance(cores, coreset.CoresAttr):
            continue
        vector = cores.vector_count
        if vector is None or vector >= hw.vector_cores:
            continue
        warn(
            ctx,
            op,
            CAPTURE_LIMIT_NO_EFFECT,
            op_name=op.name,
            kernel="TBE",
            counts=f"vector {vector}",
        )
        op.attributes[coreset.CORES] = coreset.CoresAttr(cores.cube_count, hw.vector_cores)


@dataclass(frozen=True)
class CaptureClosePass(ModulePass):
    """Add the fork and join events a captured graph needs, mark cross-stream lifetimes."""

    name = "capture-close"

    REQUIRES: ClassVar[tuple[IRState, ...]] = (PARTITIONED, LIMITS_LOWERED)

    hw: str | None = option(
        None, "the device preset or TOML file (default: the module's npu.target, else 910b2)"
    )
    capture_limit: int = option(
        DEFAULT_CAPTURE_LIMIT,
        "npugraph_ex's capture_limit: more gears than this in one dispatcher is a warning",
    )

    def __post_init__(self) -> None:
        if self.capture_limit < 1:
            raise ValueError(f"capture-limit must be >= 1, got {self.capture_limit}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        streams = module_streams(op)
        hw = device_of(op, self.hw)
        for dispatch in op.walk():
            if isinstance(dispatch, gear.DispatchOp):
                gears = len(dispatch.callees.data)
                if gears > self.capture_limit:
                    func = dispatch.parent_op()
                    name = func.sym_name.data if isinstance(func, FuncOp) else "?"
                    warn(
                        ctx,
                        dispatch,
                        CAPTURE_LIMIT,
                        function=name,
                        gears=gears,
                        limit=self.capture_limit,
                    )
        for func in scheduled_functions(op):
            if not streams:
                raise error(func, NOT_PARTITIONED, needs="capture-close", unit="module")
            prog = build_program(func, streams)
            close_function(func, prog, HappensBefore(prog).run())
            mark_record_stream(prog)
            unlimit_tbe(ctx, func, hw)


__all__ = [
    "CAPTURE_LIMIT",
    "CAPTURE_LIMIT_NO_EFFECT",
    "CaptureClosePass",
    "close_function",
]
