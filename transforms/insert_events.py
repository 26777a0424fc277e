"""`insert-events`: order every cross-stream dependency with the fewest waits.

For the stream assignment and issue order it is given, the pass sweeps the
program once along issue order, keeping a vector clock per stream (what each
stream knows to have finished, `npuir.analysis.happens_before.ClockSweep`).
At each op it looks at the dependencies on other streams that the clocks do
not already cover — through stream order and the waits placed so far — keeps,
per producing stream, only the latest one, and drops any that another chosen
producer's record already implies.  What is left is waited on: a record right
after each such producer (shared by all its waits) and a wait right before the
consumer.  `func.return` (default stream) is treated as a consumer of the last
op of every stream, which joins all work before the function returns.  And
every `stream.wait_tensor` stays where it is, a no-op on its stream: the
ordering it asks for stays visible, so `sync-verify` can check that the events
implement it.

Physical event ids: first fit, reused only when every wait on the id's
previous event is ordered before the new record.  The cap is the device's
(GE's runtime event allocator holds 4096), or `max-events`.  The planning
itself is `npuir.analysis.events.plan_events`, which the searches share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp, SymbolRefAttr, i64
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from npuir.analysis.events import EventPlan, plan_events, program_with_events
from npuir.analysis.manager import LoweredFunction, analyses
from npuir.analysis.program import (
    NOT_PARTITIONED,
    Program,
    is_lowered,
    module_streams,
    scheduled_functions,
)
from npuir.context import remark
from npuir.diagnostics import Kind, error
from npuir.dialects import sync
from npuir.dialects.npu import NpuOp
from npuir.passes import LIMITS_LOWERED, PARTITIONED, IRState, option
from npuir.schedule.device import device_of

EVENTS_SUMMARY = Kind(
    "sync.events-summary",
    "insert-events on @{function}: {cross} cross-stream orderings (data, wait_tensor and "
    "joins), {waits} waits, {records} records, {events} event ids",
)
"""How many events insert-events placed; arguments: `function`, `cross`, `waits`,
`records`, `events`."""
EVENT_LIMIT = Kind(
    "sync.event-limit",
    "the program needs {used} event ids at once but the limit is {limit} (max-events, or the "
    "device's event limit)",
)
"""More event ids needed at once than the limit."""


def _rewrite(
    prog: Program, plan: EventPlan
) -> tuple[dict[int, Operation], dict[int, list[Operation]]]:
    """Write `plan` into `prog`'s function; the records placed (by producer node) and the
    waits (by consumer node)."""
    # Ops are built with `create` and shared attributes: at one record and wait
    # per cross-stream edge, IRDL's checked constructors dominate large runs.
    refs = [SymbolRefAttr(info.symbol) for info in prog.streams]
    ids: dict[int, IntegerAttr[IntegerType]] = {}
    event_type = sync.EventType()
    events: dict[int, SSAValue] = {}
    records: dict[int, Operation] = {}
    waits: dict[int, list[Operation]] = {}
    for p in plan.recorded:
        producer = prog.ops[p]
        event_id = plan.event_ids[p]
        id_attr = ids.get(event_id)
        if id_attr is None:
            id_attr = ids[event_id] = IntegerAttr(event_id, i64)
        record = sync.RecordOp.create(
            properties={"stream": refs[prog.stream[p]]},
            attributes={sync.EVENT_ID: id_attr},
            result_types=[event_type],
        )
        record.location = producer.location
        Rewriter.insert_op(record, InsertPoint.after(producer))
        events[p] = record.results[0]
        records[p] = record
    for n, producers in plan.waits_before.items():
        consumer = prog.ops[n]
        ref = refs[prog.stream[n]]
        for p in producers:
            wait = sync.WaitOp.create(operands=[events[p]], properties={"stream": ref})
            wait.location = consumer.location
            Rewriter.insert_op(wait, InsertPoint.before(consumer))
            waits.setdefault(n, []).append(wait)
    return records, waits


def _has_work(func: FuncOp) -> bool:
    return any(isinstance(op, NpuOp) for op in func.body.walk())


@dataclass(frozen=True)
class InsertEventsPass(ModulePass):
    """Order every cross-stream dependency with the fewest sync.record/sync.wait pairs."""

    name = "insert-events"

    # A record goes right after its producer: inside a coreset.limit scope it would define
    # an event the scope cannot hand out (a scope's values leave only through its yield).
    REQUIRES: ClassVar[tuple[IRState, ...]] = (PARTITIONED, LIMITS_LOWERED)

    max_events: int | None = option(
        None, "the most physical event ids the program may use (default: the device's limit)"
    )
    hw: str | None = option(
        None, "the device preset or TOML file (default: the module's npu.target, else 910b2)"
    )
    stats: bool = option(
        False,
        "report dependencies found, waits and records inserted, and event ids used, "
        "as a remark on each function",
    )

    def __post_init__(self) -> None:
        if self.max_events is not None and self.max_events < 1:
            raise ValueError(f"max-events must be >= 1, got {self.max_events}")

    def _limit(self, module: ModuleOp) -> int:
        if self.max_events is not None:
            return self.max_events
        return device_of(module, self.hw).max_events

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        streams = module_streams(op)
        limit = self._limit(op)
        for func in scheduled_functions(op):
            if not is_lowered(func) and _has_work(func):
                raise error(func, NOT_PARTITIONED, needs="insert-events", unit="function")
            if not streams:
                continue  # no work and no streams: nothing to order
            # stream-partition handed on the graph of what it wrote (else it is read here).
            prog = analyses(ctx).get(LoweredFunction, func, tuple(streams)).prog
            plan = plan_events(prog)
            used = len(set(plan.event_ids.values()))
            if used > limit:
                worst = prog.ops[plan.recorded[-1]]
                raise error(worst, EVENT_LIMIT, used=used, limit=limit)
            records, waits = _rewrite(prog, plan)
            # The graph of what was just written, handed to the checks and the runner
            # after this pass (the analysis cache) instead of being read back from the IR.
            analyses(ctx).provide(
                LoweredFunction,
                func,
                tuple(streams),
                value=LoweredFunction.of(program_with_events(prog, plan, records, waits)),
            )
            if self.stats:
                placed = sum(len(v) for v in plan.waits_before.values())
                remark(
                    ctx,
                    func,
                    EVENTS_SUMMARY,
                    function=func.sym_name.data,
                    cross=plan.cross_deps,
                    waits=placed,
                    records=len(plan.recorded),
                    events=used,
                )
