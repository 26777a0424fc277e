"""`mem-plan`: a place in device memory for every tensor a lowered function writes.

Each scheduled function (every gear version on its own) gets one HBM pool; every
buffer (`npuir.analysis.memory`: a tensor a device op writes, views sharing
their source's, arguments and results left to the caller) gets an offset and a
size there, 512-byte aligned, written as `mem.offset` / `mem.size` on its
writer and `mem.pool` on the function (`npuir.dialects.mem`).  Two buffers share
addresses only when one's last access happens before the other's write --
stream order and events, never one serial order -- so a plan stays safe however
the streams interleave.  The planners are `npuir.analysis.mem_planners`'s
(`algo=best-of` by default: all of them, the smallest plan kept).

A function whose buffers have dynamic shapes (a `fallback=dynamic` version) is
left unplanned: its sizes are only known at run time.  With `budget=` a plan
larger than the budget is an error at the function naming the buffers that are
live together at the peak.  `stats=true` prints one remark per function in the
spirit of GE's `[IMAS]AfterAssignMemory` log line (theory minimum, total, no
reuse, streams).

`exact-nodes=N` (0, off, by default) follows the planners with the exact search of
`npuir.schedule.mem_exact` on any function whose plan is above the antichain bound,
started from the planners' plan and kept only if smaller.  Its budget is search nodes,
not seconds, so the plan is the same on every machine; `stats=true` then names the
algorithm `exact` (proved optimal) or `exact-best-found`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar, Literal

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from npuir.analysis.manager import ALL, LoweredFunction, Preserved, analyses
from npuir.analysis.mem_planners import (
    Algo,
    FunctionPlan,
    Plan,
    argument_bytes,
    over_budget_facts,
    parse_budget,
    plan_program,
)
from npuir.analysis.memory import antichain_bound
from npuir.analysis.program import (
    NOT_PARTITIONED,
    NodeKind,
    module_streams,
    scheduled_functions,
)
from npuir.context import remark
from npuir.diagnostics import Kind, error
from npuir.dialects import mem
from npuir.gc_pause import without_collector
from npuir.passes import MEMORY_PLANNED, PARTITIONED, IRState, option
from npuir.schedule.device import device_of
from npuir.schedule.mem_exact import exact_plan

PLAN_SUMMARY = Kind(
    "mem.plan-summary",
    "[IMAS]AfterAssignMemory : @{function} memoffset[{peak}], memtype[HBM], "
    "theory_min[{theory_min}], zero_copy[0], total_size[{peak}], no_reuse[{no_reuse}], "
    "streams[{streams}] algo[{algo}]",
)
"""`stats=true`: the plan in GE's `[IMAS]AfterAssignMemory` terms; arguments: `function`,
`peak`, `theory_min` (the antichain bound), `no_reuse`, `streams`, `algo`.  (A plan over
`budget` is `npuir.analysis.mem_planners.OVER_BUDGET` or `UNFITTED`.)"""

TOO_LARGE = Kind(
    "mem.plan-too-large",
    "a plan of {bytes} bytes for @{function} exceeds the largest size a plan can hold "
    "({limit} bytes, i64); its largest buffer, {size} bytes, is written here",
)
"""A plan (or one of its buffers) larger than the `i64` the plan attributes hold: tensor
dims such as 10^12 x 10^12; located at the op writing the largest buffer; arguments:
`bytes`, `function`, `limit`, `size`."""
I64_MAX = 2**63 - 1


def _check_size(func: FuncOp, fp: FunctionPlan) -> None:
    """Refuse a plan whose offsets or sizes the `i64` plan attributes cannot hold."""
    if fp.peak <= I64_MAX:
        return
    bufs = fp.buffers
    largest: tuple[int, Operation] | None = None
    for op in bufs.prog.ops:
        for res in op.results:
            b = bufs.of_value.get(res)
            if b is not None and (largest is None or bufs.size[b] > largest[0]):
                largest = (bufs.size[b], op)
    where: Operation = func if largest is None else largest[1]
    raise error(
        where,
        TOO_LARGE,
        bytes=fp.peak,
        function=func.sym_name.data,
        limit=I64_MAX,
        size=0 if largest is None else largest[0],
    )


def improve_plan(fp: FunctionPlan, nodes: int) -> tuple[FunctionPlan, str]:
    """`fp` with the exact search's plan if that is smaller, and the algorithm's name for
    the summary remark."""
    name = fp.plan.algo.value
    bound = antichain_bound(fp.lifetimes).bytes
    if fp.peak <= bound or nodes <= 0:
        return fp, name
    sizes = fp.buffers.size
    found = exact_plan(
        sizes, fp.conflicts, incumbent=fp.plan.offsets, lower_bound=bound, node_limit=nodes
    )
    if found.peak >= fp.peak:
        return fp, name
    plan = Plan(found.offsets, found.peak, fp.plan.algo)
    return replace(fp, plan=plan), "exact" if found.optimal else "exact-best-found"


def write_plan(func: FuncOp, fp: FunctionPlan) -> None:
    """Put `fp` on `func` and its ops (an earlier plan is replaced)."""
    mem.clear_plan(func)
    bufs = fp.buffers
    offsets = fp.plan.offsets
    prog = bufs.prog
    for n, op in enumerate(prog.ops):
        if prog.kind[n] is not NodeKind.COMPUTE or op.name in mem.NOT_DEVICE_BUFFERS:
            continue
        places = []
        for res in op.results:
            b = bufs.of_value.get(res)
            places.append((mem.UNPLANNED, 0) if b is None else (offsets[b], bufs.size[b]))
        if any(o != mem.UNPLANNED for o, _ in places):
            mem.set_placement(op, places)
    mem.set_pool_size(func, fp.peak)


@dataclass(frozen=True)
class MemPlanPass(ModulePass):
    """Give every tensor a lowered function writes an offset in its rank's HBM pool."""

    name = "mem-plan"

    REQUIRES: ClassVar[tuple[IRState, ...]] = (PARTITIONED,)
    ESTABLISHES: ClassVar[tuple[IRState, ...]] = (MEMORY_PLANNED,)

    PRESERVES: ClassVar[Preserved] = ALL  # attributes only: the program graphs stay valid

    algo: Literal["best-of", "greedy-by-size", "greedy-by-conflicts", "greedy-by-order"] = option(
        "best-of", "the planner; best-of runs every planner and keeps the smallest plan"
    )
    budget: str | None = option(
        None,
        "the most bytes a plan may take: a byte count (64MiB, 2GiB) or hbm (the device's HBM "
        "less the function's arguments); default: no limit",
    )
    hw: str | None = option(
        None, "the device preset or TOML file (default: the module's npu.target, else 910b2)"
    )
    stats: bool = option(
        False, "one [IMAS]AfterAssignMemory remark per function: theory minimum, total, no reuse"
    )
    exact_nodes: int = option(
        0,
        "then search for a smaller plan, exactly, within this many search nodes (0: off); "
        "a plan at the antichain bound is not searched",
    )

    def __post_init__(self) -> None:
        if self.budget is not None:
            parse_budget(self.budget, 0, 0)
        if self.exact_nodes < 0:
            raise ValueError(f"exact-nodes must be >= 0, got {self.exact_nodes}")

    @without_collector
    def apply(self, ctx: Context, op: ModuleOp) -> None:
        streams = tuple(module_streams(op))
        algo = Algo(self.algo)
        for func in scheduled_functions(op):
            if not streams:
                raise error(func, NOT_PARTITIONED, needs="mem-plan", unit="module")
            lowered = analyses(ctx).get(LoweredFunction, func, streams)
            fp = plan_program(lowered.prog, lowered.happens_before, algo)
            if fp.buffers.dynamic is not None:
                mem.clear_plan(func)
                continue
            fp, algo_name = improve_plan(fp, self.exact_nodes)
            if self.budget is not None:
                hbm = device_of(op, self.hw).hbm_bytes
                budget = parse_budget(self.budget, hbm, argument_bytes(func))
                if fp.peak > budget:
                    kind, args = over_budget_facts(f"@{func.sym_name.data}", fp, budget)
                    raise error(func, kind, **args)
            _check_size(func, fp)
            write_plan(func, fp)
            if self.stats:
                bound = antichain_bound(fp.lifetimes).bytes
                remark(
                    ctx,
                    func,
                    PLAN_SUMMARY,
                    function=func.sym_name.data,
                    peak=fp.peak,
                    theory_min=bound,
                    no_reuse=fp.no_reuse,
                    streams=len(streams),
                    algo=algo_name,
                )
