"""A lower bound on any schedule's makespan, for judging how good a schedule is.

No schedule of a function on the simulated device (`npuir.backends.npu.simulator`) can
finish before the largest of three bounds.  Write d(v) = launch_ns + solo_duration_ns(v),
the op's duration alone on the device on every core it can use.

1. **Critical path.**  The longest chain of dependent ops (data and `wait_tensor`
   orderings), each taking d(v): an op never runs faster than that, and a chain runs in
   order.

2. **Engine arithmetic.**  An op's FLOPs at one core's rate (`flops / flops_per_core`) is the
   least core-time it occupies however many cores it is granted -- with `c` cores its
   compute term alone is `flops / (c * rate)` for each of the `c`, and memory only makes it
   longer -- and the engine has `cores` of them: W_e / cores is a bound, W_e the engine's
   total.  (Memory-bound ops and aiv collectives are left out of W_e: counting them at their
   solo occupancy would need more care than this bound takes.)

3. **Engine window** (where 2 is loose: the engine's work cannot start at 0 nor run to the
   end).  Let h(v) be the longest d-weighted path *into* v (its producers, v excluded) and
   t(v) the longest *out of* v.  In a race-free schedule no op of engine e starts before
   H_e = min over e's ops of h(v), since each starts after its producers end; and each op v
   of e ends by M - t(v) <= M - T_e with T_e = min t(v), since its consumers still run after
   it (M the makespan).  So all of e's arithmetic core-time W_e lies in [H_e, M - T_e] on
   `cores` cores: M >= H_e + W_e / cores + T_e.

Events, contention and launch queues only add to all three, so their maximum is a valid
bound for every stream assignment and issue order.  The simulator models no link
contention (a collective's duration is fixed by its size and collectives overlap freely),
so a link term would not be a valid bound; the window term is the tightening that is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.func import FuncOp

from npuir.analysis.dependence import DependenceGraph
from npuir.analysis.program import NodeKind, Program
from npuir.backends.npu.cost import NS_PER_S, op_work, solo_duration_ns
from npuir.backends.npu.hardware import Hardware
from npuir.dialects.npu import NpuOp

__all__ = ["LowerBound", "lower_bound", "lower_bound_ns", "program_bound"]


@dataclass
class LowerBound:
    """The three bounds of the module docstring (ns)."""

    critical_path_ns: int
    engine_ns: dict[str, float]
    """Per engine: its arithmetic over its cores (bound 2)."""
    window_ns: dict[str, float] = field(default_factory=dict[str, float])
    """Per engine: earliest start + arithmetic over cores + shortest tail (bound 3)."""

    @property
    def plain_ns(self) -> float:
        """Bounds 1 and 2 only: the bound before the window term."""
        return max(self.critical_path_ns, *self.engine_ns.values(), 0)

    @property
    def ns(self) -> float:
        return max(self.plain_ns, *self.window_ns.values(), 0)


def program_bound(prog: Program, hw: Hardware) -> LowerBound:
    """The bound of the module docstring for an un-partitioned (or lowered) program."""
    n_nodes = len(prog)
    duration = [0] * n_nodes
    engine: list[str | None] = [None] * n_nodes
    arithmetic = [0.0] * n_nodes
    for n, op in enumerate(prog.ops):
        if prog.kind[n] is NodeKind.COMPUTE and isinstance(op, NpuOp):
            work = op_work(op, hw)
            duration[n] = hw.launch_ns + solo_duration_ns(hw, work)
            if work.engine != "comm" and work.flops:
                engine[n] = work.engine
                arithmetic[n] = work.flops * NS_PER_S / hw.flops_per_core(work.engine, work.dtype)
    head = [0] * n_nodes  # longest path into n, n excluded
    for n in range(n_nodes):
        for p, _ in prog.deps[n]:
            head[n] = max(head[n], head[p] + duration[p])
    tail = [0] * n_nodes  # longest path out of n, n excluded
    for n in range(n_nodes - 1, -1, -1):
        for p, _ in prog.deps[n]:
            tail[p] = max(tail[p], tail[n] + duration[n])
    critical = max((head[n] + duration[n] for n in range(n_nodes)), default=0)
    total: dict[str, float] = {}
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for n in range(n_nodes):
        e = engine[n]
        if e is None:
            continue
        total[e] = total.get(e, 0.0) + arithmetic[n]
        first[e] = min(first.get(e, head[n]), head[n])
        last[e] = min(last.get(e, tail[n]), tail[n])
    engine_ns = {e: w / hw.cores(e) for e, w in total.items()}
    window_ns = {e: first[e] + engine_ns[e] + last[e] for e in engine_ns}
    return LowerBound(critical, engine_ns, window_ns)


def lower_bound(func: FuncOp, hw: Hardware) -> LowerBound:
    """The bound of the module docstring for one unlowered (or lowered) function."""
    return program_bound(DependenceGraph(func).run().prog, hw)


def lower_bound_ns(func: FuncOp, hw: Hardware) -> int:
    """`lower_bound(func, hw).ns`, rounded down to whole nanoseconds."""
    return int(lower_bound(func, hw).ns)
