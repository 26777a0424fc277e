"""A lower bound on the makespan of any schedule of a program: what no stream assignment,
issue order or event plan can beat on the simulated device.

`lower_bound(prog, hw)` takes an un-partitioned (or lowered) program and returns the largest
of three bounds; each is proven below for the simulator in `npuir.backends.npu.simulator`.
Write d(v) = launch_ns + solo_duration_ns(v): the op's duration alone on the whole device.

1. **Critical path.**  Every op runs for at least d(v) — the simulator gives an op at most
   `parallelism` cores and then the HBM share those cores hold, which is what `solo` assumes
   — and starts after its producers (data and `wait_tensor` edges) end.  So the longest
   d-weighted path is a bound.

2. **Engine work.**  An op of engine e granted c <= parallelism cores runs for
   max(F / (c r), B T / (c W)) (F flops, r the per-core rate, B bytes, T the engine's cores,
   W the HBM bandwidth: its share is c / T), so it holds c x duration >=
   w(v) = max(F / r, B T / W) core-nanoseconds whatever c is (extra cores a
   `full_core_sync` op holds only add to it).  An aiv collective holds its vector cores for
   its whole fixed duration: at least k x d(v), k its core limit (every vector core when
   unlimited).  The engine has T cores, so the engine's total work W_e over T is a bound.

3. **Engine window** (new; it is where 2 is loose).  Let h(v) be the longest d-weighted path
   *into* v (v's producers, not v) and t(v) the longest one *out of* v.  No op of engine e
   starts before H_e = min over e's ops of h(v), since each starts after its producers end;
   and each op v of e ends by M - t(v) <= M - T_e with T_e = min t(v), since its consumers
   still run after it (M the makespan).  So all of e's core-time lies in [H_e, M - T_e],
   on T cores: M >= H_e + W_e / T + T_e.

The simulator models no link contention (a collective's duration is fixed by its size, and
collectives overlap freely), so a link term would not be a valid bound here; the window
bound is the tightening that is.  Rounding only helps: the simulator rounds durations up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from npuir.analysis.program import NodeKind, Program
from npuir.backends.npu.cost import OpWork, op_work, solo_duration_ns
from npuir.backends.npu.hardware import Hardware
from npuir.dialects.npu import NpuOp

CoreLimit = Callable[[int, str], int | None]
"""A node's core limit on an engine (None: unlimited), as `coreset-lower` resolves it."""


@dataclass
class LowerBound:
    """The three bounds of the module docstring, in nanoseconds."""

    critical_path_ns: int
    engine_ns: dict[str, float] = field(default_factory=dict[str, float])
    """Per engine: its work over its cores (bound 2)."""
    window_ns: dict[str, float] = field(default_factory=dict[str, float])
    """Per engine: head + work over cores + tail (bound 3)."""

    @property
    def plain_ns(self) -> float:
        """Bounds 1 and 2 only: what npuir reported before the window bound."""
        return max(self.critical_path_ns, *self.engine_ns.values(), 0)

    @property
    def ns(self) -> float:
        return max(self.plain_ns, *self.window_ns.values(), 0)


def _core_time(hw: Hardware, work: OpWork) -> float:
    """w(v) of the module docstring, for a compute op."""
    compute = work.flops * 1e9 / hw.flops_per_core(work.engine, work.dtype)
    memory = work.bytes * 1e9 * hw.cores(work.engine) / hw.hbm_bandwidth
    return max(compute, memory)


def lower_bound(prog: Program, hw: Hardware, limit: CoreLimit | None = None) -> LowerBound:
    """The bound of the module docstring for `prog` on `hw`."""
    n_nodes = len(prog)
    duration = [0] * n_nodes
    engine: list[str | None] = [None] * n_nodes
    core_time = [0.0] * n_nodes
    for n, op in enumerate(prog.ops):
        if prog.kind[n] is not NodeKind.COMPUTE or not isinstance(op, NpuOp):
            continue
        work = op_work(op, hw)
        duration[n] = hw.launch_ns + solo_duration_ns(hw, work)
        if work.engine == "comm":
            if work.mode == "aiv":
                cap = limit(n, "vector") if limit is not None else None
                engine[n] = "vector"
                core_time[n] = min(cap or hw.vector_cores, hw.vector_cores) * duration[n]
        else:
            engine[n] = work.engine
            core_time[n] = _core_time(hw, work)
    head = [0] * n_nodes  # longest path into n, n excluded
    for n in range(n_nodes):
        for p, _ in prog.deps[n]:
            head[n] = max(head[n], head[p] + duration[p])
    tail = [0] * n_nodes  # longest path out of n, n excluded
    for n in range(n_nodes - 1, -1, -1):
        for p, _ in prog.deps[n]:
            tail[p] = max(tail[p], tail[n] + duration[n])
    critical = max((head[n] + duration[n] for n in range(n_nodes)), default=0)
    work_of: dict[str, float] = {}
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for n in range(n_nodes):
        e = engine[n]
        if e is None or core_time[n] <= 0:
            continue
        work_of[e] = work_of.get(e, 0.0) + core_time[n]
        first[e] = min(first.get(e, head[n]), head[n])
        last[e] = min(last.get(e, tail[n]), tail[n])
    engine_ns = {e: w / hw.cores(e) for e, w in work_of.items()}
    window_ns = {e: first[e] + engine_ns[e] + last[e] for e in engine_ns}
    return LowerBound(critical, engine_ns, window_ns)


__all__ = ["LowerBound", "lower_bound"]
