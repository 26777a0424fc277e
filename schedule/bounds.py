"""A lower bound on any schedule's makespan, for judging how good a schedule is.

No schedule of a function can finish before

- its **critical path**: the longest chain of dependent ops (data and `wait_tensor`
  orderings), each taking its duration alone on the device on every core it can use, plus
  its task launch -- an op never runs faster than that, and a chain runs in order; nor before
- each **engine's arithmetic** divided by its cores: an op's FLOPs at one core's rate
  (`flops / flops_per_core`) is the least core-time it occupies however many cores it is
  granted -- with `c` cores its compute term alone is `flops / (c * rate)` for each of the
  `c`, and memory only makes it longer -- and the engine has `cores` of them.  (Memory-bound
  ops and aiv collectives are left out of this term: with fewer cores they occupy fewer
  core-ns, so counting them at their solo occupancy would not be a bound.)

Events, contention and launch queues only add to both, so the maximum of the two is a valid
bound for every stream assignment and issue order.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.func import FuncOp

from npuir.analysis.dependence import DependenceGraph
from npuir.analysis.program import NodeKind
from npuir.backends.npu.cost import NS_PER_S, op_work, solo_duration_ns
from npuir.backends.npu.hardware import Hardware
from npuir.dialects.npu import NpuOp

__all__ = ["LowerBound", "lower_bound", "lower_bound_ns"]


@dataclass
class LowerBound:
    """The two bounds of the module docstring (ns)."""

    critical_path_ns: int
    engine_ns: dict[str, float]

    @property
    def ns(self) -> float:
        return max(self.critical_path_ns, *self.engine_ns.values(), 0)


def lower_bound(func: FuncOp, hw: Hardware) -> LowerBound:
    """The bound of the module docstring for one unlowered (or lowered) function."""
    prog = DependenceGraph(func).run().prog
    finish = [0] * len(prog)
    work_by_engine: dict[str, float] = {"cube": 0.0, "vector": 0.0, "aicpu": 0.0}
    for n in range(len(prog)):
        start = max((finish[p] for p, _ in prog.deps[n]), default=0)
        duration = 0
        op = prog.ops[n]
        if prog.kind[n] is NodeKind.COMPUTE and isinstance(op, NpuOp):
            work = op_work(op, hw)
            solo = solo_duration_ns(hw, work)
            duration = solo + hw.launch_ns
            if work.engine != "comm" and work.flops:
                rate = hw.flops_per_core(work.engine, work.dtype)
                work_by_engine[work.engine] += work.flops * NS_PER_S / rate
        finish[n] = start + duration
    engine_ns = {e: w / hw.cores(e) for e, w in work_by_engine.items() if w}
    return LowerBound(max(finish, default=0), engine_ns)


def lower_bound_ns(func: FuncOp, hw: Hardware) -> int:
    """`lower_bound(func, hw).ns`, rounded down to whole nanoseconds."""
    return int(lower_bound(func, hw).ns)
