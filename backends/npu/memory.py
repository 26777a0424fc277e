"""Device memory of a simulated run: the plan, its lower bounds and the live-bytes timeline.

For each rank's program this reads the memory plan `mem-plan` wrote (or, for a
program lowered without it, makes one with `best-of`) and measures:

- `peak_bytes`: the plan's pool size, what the rank must reserve;
- `bound_bytes`: the heaviest antichain of buffers under happens-before
  (`npuir.analysis.memory.antichain_bound`), below which no safe static plan goes;
- `timeline_peak_bytes`: the most planned bytes live at one instant of the
  simulated run, each buffer from its writer's start to the end of its last
  access.  Buffers live at the same instant are pairwise unordered, so
  timeline peak <= bound <= planned peak;
- `single_stream_peak_bytes` (given the one-stream programs): the planned peak of
  the same graph on one stream; `cost_of_parallelism` = peak / that.

`live_bytes(result, programs)` is the timeline itself, per rank, which the
Perfetto trace draws as a counter track.

`gear_pool_bytes(module, capture)` is what a module's gear versions reserve together.  In
capture mode the graphs captured from one FX graph (one per gear: aclgraph is static-shape)
share one memory pool by default (npugraph_ex's `reuse_graph_pool_in_same_fx`, "mode two",
`Ascend/torchair/docs/zh/npugraph_ex/basic/memory_reuse.md`), so a dispatcher's versions
need the largest of their pools; npuir's graph-mode plan gives each version its own pool,
and they add up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from npuir.analysis.happens_before import HappensBefore
from npuir.analysis.mem_planners import Algo, FunctionPlan, plan_program
from npuir.analysis.memory import Buffers, Lifetimes, antichain_bound, find_buffers
from npuir.analysis.program import Program
from npuir.dialects import gear, mem

from .simulator import SimResult

BOUND_LIMIT = 200_000
"""Above this many buffers the antichain bound (a maximum flow in pure Python) is skipped
and reported as null; the planned peak is still computed."""


@dataclass
class RankMemory:
    """One program's plan, read from its IR or made afresh."""

    prog: Program
    buffers: Buffers
    offsets: list[int]
    peak: int
    algo: str
    """The planner's name, or "ir" for a plan read from the IR."""
    lifetimes: Lifetimes

    def bound(self) -> int | None:
        if len(self.buffers) > BOUND_LIMIT:
            return None
        return antichain_bound(self.lifetimes).bytes


def program_memory(prog: Program) -> RankMemory:
    """`prog`'s memory plan: the one in its IR when it has one, else a best-of plan."""
    hb = HappensBefore(prog).run()
    pool = mem.pool_size(prog.func)
    if pool is not None:
        bufs = find_buffers(prog)
        offsets = []
        for b in range(len(bufs)):
            places = mem.placement(prog.ops[bufs.writer[b]]) or []
            offset = places[bufs.result[b]][0] if bufs.result[b] < len(places) else -1
            offsets.append(offset)
        if all(o >= 0 for o in offsets):
            return RankMemory(prog, bufs, offsets, pool, "ir", Lifetimes(bufs, hb))
    fp: FunctionPlan = plan_program(prog, hb, Algo.BEST_OF)
    return RankMemory(prog, fp.buffers, fp.plan.offsets, fp.peak, fp.plan.algo.value, fp.lifetimes)


def _plan_of(programs: Sequence[Program]) -> list[RankMemory]:
    cache: dict[int, RankMemory] = {}
    out = []
    for prog in programs:
        got = cache.get(id(prog))
        if got is None:
            got = cache[id(prog)] = program_memory(prog)
        out.append(got)
    return out


def live_bytes(
    result: SimResult, programs: Sequence[Program], plans: Sequence[RankMemory] | None = None
) -> list[list[tuple[int, int]]]:
    """Per rank, (time ns, planned bytes live from then on) at every change."""
    plans = list(plans) if plans is not None else _plan_of(programs)
    out: list[list[tuple[int, int]]] = []
    for r, rm in enumerate(plans):
        deltas: dict[int, int] = {}
        bufs = rm.buffers
        # The rank's times by node (not its records: a thousand ranks' would not fit).
        start, end = result.times_of(r, len(rm.prog))
        makespan = result.makespan_ns
        for b in range(len(bufs)):
            if not bufs.size[b]:
                continue
            writer = bufs.writer[b]
            born = start[writer]
            if born < 0:
                continue
            dies = end[writer]
            for n in bufs.readers[b]:
                dies = max(dies, end[n] if start[n] >= 0 else makespan)
            deltas[born] = deltas.get(born, 0) + bufs.size[b]
            deltas[dies] = deltas.get(dies, 0) - bufs.size[b]
        level = 0
        steps = [(0, 0)]
        for t in sorted(deltas):
            level += deltas[t]
            steps.append((t, level))
        out.append(steps)
    return out


def memory_report(
    result: SimResult,
    programs: Sequence[Program],
    single_programs: Sequence[Program] | None = None,
) -> dict[str, Any]:
    """The report's `"memory"` object (see the module docstring): the largest value over
    the ranks at the top level, and `"by_rank"` with each rank's when there are several."""
    plans = _plan_of(programs)
    singles = _plan_of(single_programs) if single_programs else None
    timeline = live_bytes(result, programs, plans)
    bounds: dict[int, int | None] = {}
    ranks: list[dict[str, Any]] = []
    for r, rm in enumerate(plans):
        if id(rm) not in bounds:
            bounds[id(rm)] = rm.bound()
        single = singles[r].peak if singles is not None else None
        ranks.append(
            {
                "peak_bytes": rm.peak,
                "bound_bytes": bounds[id(rm)],
                "timeline_peak_bytes": max(level for _, level in timeline[r]),
                "single_stream_peak_bytes": single,
                "cost_of_parallelism": round(rm.peak / single, 4) if single else None,
                "no_reuse_bytes": sum(rm.buffers.size),
                "buffers": len(rm.buffers),
                "algo": rm.algo,
                "streams": len(rm.prog.streams),
            }
        )
    top = max(ranks, key=lambda d: d["peak_bytes"]) if ranks else {}
    report = dict(top)
    if len(ranks) > 1:
        report["by_rank"] = ranks
    return report


def imas_line(name: str, memory: dict[str, Any]) -> str:
    """The report's memory as GE's memory assigner logs it (`[IMAS]AfterAssignMemory`)."""
    bound = memory.get("bound_bytes")
    return (
        f"[IMAS]AfterAssignMemory : {name} memoffset[{memory['peak_bytes']}], memtype[HBM], "
        f"theory_min[{bound if bound is not None else 'n/a'}], zero_copy[0], "
        f"total_size[{memory['peak_bytes']}], no_reuse[{memory['no_reuse_bytes']}], "
        f"streams[{memory['streams']}]"
    )


__all__ = ["RankMemory", "imas_line", "live_bytes", "memory_report", "program_memory"]


def gear_pool_bytes(module: ModuleOp, capture: bool) -> int | None:
    """The bytes the planned pools of `module`'s functions reserve together: per
    `gear.dispatch`, the largest of its versions' pools in capture mode (one shared pool per
    FX graph) or their sum in graph mode; other functions count once.  None when a function
    has no plan."""
    funcs = {f.sym_name.data: f for f in module.ops if isinstance(f, FuncOp)}
    counted: set[str] = set()
    total = 0
    for op in module.walk():
        if not isinstance(op, gear.DispatchOp):
            continue
        names = [c.root_reference.data for c in op.callees.data]
        if op.fallback is not None:
            names.append(op.fallback.root_reference.data)
        sizes = [mem.pool_size(funcs[n]) for n in names if n in funcs]
        if any(size is None for size in sizes):
            return None
        planned = [size for size in sizes if size is not None]
        total += (max(planned, default=0)) if capture else sum(planned)
        counted.update(names)
    for name, func in funcs.items():
        if name in counted or func.body.blocks.first is None:
            continue
        if any(isinstance(o, gear.DispatchOp) for o in func.body.walk()):
            continue
        size = mem.pool_size(func)
        if size is None:
            if any(not isinstance(o, FuncOp) for o in func.body.walk()):
                return None
            continue
        total += size
    return total
