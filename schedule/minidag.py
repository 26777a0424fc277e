"""GE's automatic multi-stream (`stream-partition{mode=minidag}`) and an Opara-style baseline.

`minidag` follows what GE's own automatic mode does (`ge.autoMultistreamParallelMode`
`LoadBalance:N`, `MainStream:N` and the weighted load balance), as described in the public
hicann/ge sources read for this: `compiler/graph/build/dag/dag_stream_allocator.cc`
(`DagStreamAllocator::ByPathCover`), `dag_stream_divide.h` (Hopcroft-Karp on the split
graph), `dag_stream_merger.{h,cc}` (`StreamMergeOptions`, the load-balance and main-stream
solvers) and `dag_weighted_stream_merger.{h,cc}` (duration-weighted scores and the makespan
re-check).  This is npuir's own code after that description:

1. **Logical streams.**  A minimum path cover of the dependence DAG of the unpinned compute
   ops by maximum bipartite matching (Hopcroft-Karp, `cover_paths`).  As GE does, the cover
   is of the graph's *direct* edges (not of its transitive reduction, as Nimble's is); an
   edge that runs through a pinned op is followed through it, as GE's residual graph goes
   through its serial nodes.
2. **Levels.**  Each op's level is its longest-path depth; a logical stream ("unit") has a
   histogram of ops (and, for `weighted`, of durations) per level.
3. **Merge** onto at most N physical streams (N = `max-streams`, default 8 as GE's
   `physical_stream_limit`): units in order of their earliest level, then larger units,
   units with more cross-unit edges and higher level peaks first.  Each unit tries a few
   candidate streams (GE's `candidate_limit`: 6, 8 for `weighted`) and takes the lowest
   score; GE's default weights:

   - `loadbalance`: the streams its neighbours use (by edge count), the three lightest
     streams in a window of 6 levels, a new stream.  Score: 3 x cross-stream edges
     ("event_local") + 4 x (peak + variance of the streams' loads in the window) + 1 x the
     stream's total size + 2 for a new stream.
   - `mainstream`: a unit alone at its level, or whose every op is alone at its level, goes
     to the main stream; else the main stream, its neighbours' streams, the three streams
     whose window histogram conflicts least with its own.  Score: 3 x event_local +
     4 x conflict + 2 for a new stream - 4 x the unit's "solo mass" on the main stream.
   - `weighted`: as `loadbalance` with durations: 3 x event_local + 4 x time conflict in the
     window + 2 x time load + 2 for a new stream; then the three best candidates are
     re-checked by simulating the makespan of what is merged so far, and the shortest
     wins.

Durations come from npuir's cost model (`solo_duration_ns` plus the launch overhead),
measured in units of the mean op duration so that GE's weights, tuned for counts, keep their
balance.  Deviations, for scale: level histograms are sparse; the re-check simulation is
npuir's own dependency-and-FIFO list simulation of the merged ops (no core contention, as
GE's), and it runs for the units met first until a fixed budget of 200k walked nodes is
spent (then the best score decides), so a 100k-op graph stays linear.  Not modelled: GE's repair
moves (off by default, `repair_moves = 0`), its `cv` mode (npuir's `engine` mode is that
split), profiles.

`opara` follows Opara (Chen et al., "Opara: Exploiting Operator Parallelism for Expediting
DNN Inference on GPUs", IEEE TPDS 2024): streams from the DAG's path cover, as Nimble's (its
stream allocator), and an issue order that alternates compute-bound and memory-bound ops
(its operator launcher): of the ops whose producers are issued, take one of the other class
than the op issued last when there is one (the cost model's roofline says which class an op
is: compute time against memory time), else the earliest.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from npuir.analysis.partition import Assignment, Mode, Request, assign, cover_paths
from npuir.analysis.program import NodeKind, Program, StreamInfo
from npuir.backends.npu import timing
from npuir.backends.npu.cost import OpWork, op_work
from npuir.backends.npu.hardware import Hardware
from npuir.dialects.npu import NpuOp
from npuir.schedule.list_schedule import fresh_tag


class Variant(StrEnum):
    """How `minidag` merges logical streams (GE's `StreamMergeStrategy`)."""

    LOADBALANCE = "loadbalance"
    MAINSTREAM = "mainstream"
    WEIGHTED = "weighted"


# GE's defaults (`StreamMergeOptions`, `WeightedStreamMergeOptions`, dag_stream_merger.h).
_WINDOW = 6
_CANDIDATES = 6
_WEIGHTED_CANDIDATES = 8
_LIGHT = 3
_LOW_CONFLICT = 3
_RESIM = 3
_EVENT_W, _BALANCE_W, _LOAD_W, _NEW_W = 3.0, 4.0, 1.0, 2.0
_CONFLICT_W, _MAIN_BONUS_W = 4.0, 4.0
_TIME_CONFLICT_W, _TIME_LOAD_W = 4.0, 2.0
_RESIM_OPS = 200_000
"""npuir's bound on simulated ops across all re-checks (see the module docstring)."""


class _Works:
    """`op_work` once per op signature (class, operand and result types, attributes):
    programs repeat a few signatures thousands of times."""

    def __init__(self, hw: Hardware) -> None:
        self.hw = hw
        self._by_signature: dict[object, OpWork] = {}

    def __call__(self, op: NpuOp) -> OpWork:
        try:
            key: object = (
                type(op),
                *[v.type for v in op.operands],
                None,
                *op.result_types,
                *op.attributes.items(),
            )
            work = self._by_signature.get(key)
        except TypeError:  # an unhashable attribute
            return op_work(op, self.hw)
        if work is None:
            work = self._by_signature[key] = op_work(op, self.hw)
        return work


def solo_durations(prog: Program, hw: Hardware) -> list[int]:
    """Per node, its launch overhead plus its duration alone on the device (0 for non-ops)."""
    out = [0] * len(prog)
    works = _Works(hw)
    solo: dict[OpWork, int] = {}
    for n, op in enumerate(prog.ops):
        if prog.kind[n] is NodeKind.COMPUTE and isinstance(op, NpuOp):
            work = works(op)
            ns = solo.get(work)
            if ns is None:
                ns = solo[work] = timing.solo_task_ns(hw, work)
            out[n] = ns
    return out


def _free_edges(prog: Program, free: Sequence[bool]) -> list[list[int]]:
    """Per free node, the free nodes it feeds directly or through non-free compute nodes."""
    n_nodes = len(prog)
    work = [k is NodeKind.COMPUTE for k in prog.kind]
    succ: list[list[int]] = [[] for _ in range(n_nodes)]
    for n, deps in enumerate(prog.deps):
        if work[n]:
            for p, _ in dict.fromkeys(deps):
                if work[p]:
                    succ[p].append(n)
    through: list[list[int]] = [[] for _ in range(n_nodes)]  # non-free nodes: free nodes they feed
    out: list[list[int]] = [[] for _ in range(n_nodes)]
    for u in range(n_nodes - 1, -1, -1):
        if not work[u]:
            continue
        reached: dict[int, None] = {}
        for s in succ[u]:
            if free[s]:
                reached[s] = None
            else:
                reached.update(dict.fromkeys(through[s]))
        (out if free[u] else through)[u] = sorted(reached)
    return out


@dataclass
class _Unit:
    nodes: list[int]
    levels: dict[int, int]
    times: dict[int, float]
    earliest: int
    size: int
    time: float
    peak: int
    solo: int = 0
    interaction: int = 0


class _Merger:
    """The merge of logical streams onto physical ones (see the module docstring)."""

    def __init__(
        self,
        prog: Program,
        paths: list[list[int]],
        edges: list[list[int]],
        durations: list[int],
        variant: Variant,
        limit: int,
    ) -> None:
        self.prog, self.variant, self.limit = prog, variant, limit
        self.edges, self.durations = edges, durations
        level = [0] * len(prog)
        for u in range(len(prog)):
            for v in edges[u]:
                level[v] = max(level[v], level[u] + 1)
        self.level = level
        self.unit_of = [-1] * len(prog)
        mean = max(1.0, sum(durations[n] for p in paths for n in p) / max(1, sum(map(len, paths))))
        global_load: dict[int, int] = {}
        for p in paths:
            for n in p:
                global_load[level[n]] = global_load.get(level[n], 0) + 1
        self.global_load = global_load
        self.units: list[_Unit] = []
        for i, path in enumerate(paths):
            levels: dict[int, int] = {}
            times: dict[int, float] = {}
            for n in path:
                self.unit_of[n] = i
                levels[level[n]] = levels.get(level[n], 0) + 1
                times[level[n]] = times.get(level[n], 0.0) + durations[n] / mean
            solo = sum(c for lv, c in levels.items() if global_load[lv] == 1)
            self.units.append(
                _Unit(
                    path,
                    levels,
                    times,
                    min(levels),
                    len(path),
                    sum(times.values()),
                    max(levels.values()),
                    solo,
                )
            )
        # Cross-unit edge counts, both ways.
        self.neighbours: list[dict[int, int]] = [{} for _ in paths]
        for u in range(len(prog)):
            a = self.unit_of[u]
            if a < 0:
                continue
            for v in edges[u]:
                b = self.unit_of[v]
                if b != a:
                    self.neighbours[a][b] = self.neighbours[a].get(b, 0) + 1
                    self.neighbours[b][a] = self.neighbours[b].get(a, 0) + 1
        for i, unit in enumerate(self.units):
            unit.interaction = sum(self.neighbours[i].values())
        self.stream_of_unit = [-1] * len(paths)
        self.sizes: list[int] = []
        self.time_load: list[float] = []
        self.hist: list[dict[int, float]] = []  # per stream: level -> ops (or time, weighted)
        self.resim_left = _RESIM_OPS

    def run(self) -> list[int]:
        order = sorted(
            range(len(self.units)),
            key=lambda i: (
                self.units[i].earliest,
                -self.units[i].size,
                -self.units[i].interaction,
                -self.units[i].peak,
                i,
            ),
        )
        for i in order:
            self._apply(i, self._choose(i))
        return self.stream_of_unit

    # -- scores --------------------------------------------------------------

    def _window(self, hist: dict[int, float], start: int) -> float:
        return sum(hist.get(lv, 0) for lv in range(start, start + _WINDOW))

    def _unit_hist(self, i: int) -> dict[int, float]:
        unit = self.units[i]
        return unit.times if self.variant is Variant.WEIGHTED else dict(unit.levels)

    def _event_local(self, i: int, s: int) -> int:
        return sum(
            c for j, c in self.neighbours[i].items() if self.stream_of_unit[j] not in (-1, s)
        )

    def _adjacent(self, i: int) -> list[int]:
        weight: dict[int, int] = {}
        for j, c in self.neighbours[i].items():
            s = self.stream_of_unit[j]
            if s >= 0:
                weight[s] = weight.get(s, 0) + c
        return sorted(weight, key=lambda s: (-weight[s], self.sizes[s], s))

    def _candidates(self, i: int) -> list[int]:
        unit, active = self.units[i], len(self.sizes)
        start = unit.earliest
        if self.variant is Variant.MAINSTREAM:
            if self.global_load[start] == 1 or unit.solo == unit.size:
                return [0]
            mine = self._unit_hist(i)
            conflict = sorted(range(active), key=lambda s: (self._conflict(mine, s, start), s))
            listed = ([0] if active else []) + self._adjacent(i) + conflict[:_LOW_CONFLICT]
            cap = _CANDIDATES
        else:
            light = sorted(
                range(active),
                key=lambda s: (self._window(self.hist[s], start), self.sizes[s], s),
            )
            listed = self._adjacent(i) + light[:_LIGHT]
            cap = _WEIGHTED_CANDIDATES if self.variant is Variant.WEIGHTED else _CANDIDATES
        if active < self.limit:
            listed.append(active)
        unique = list(dict.fromkeys(listed))[:cap]
        return unique or list(range(min(active, cap)))

    def _conflict(self, mine: dict[int, float], s: int, start: int) -> float:
        theirs = self.hist[s]
        return sum(c * theirs.get(lv, 0) for lv, c in mine.items() if start <= lv < start + _WINDOW)

    def _score(self, i: int, s: int) -> float:
        unit, active = self.units[i], len(self.sizes)
        new = s == active
        event = self._event_local(i, s)
        start = unit.earliest
        mine = self._unit_hist(i)
        if self.variant is Variant.MAINSTREAM:
            conflict = 0.0 if new else self._conflict(mine, s, start)
            bonus = unit.solo if s == 0 else 0
            return _EVENT_W * event + _CONFLICT_W * conflict + _NEW_W * new - _MAIN_BONUS_W * bonus
        if self.variant is Variant.WEIGHTED:
            conflict = 0.0 if new else self._conflict(mine, s, start)
            load = (0.0 if new else self.time_load[s]) + unit.time
            return (
                _EVENT_W * event + _TIME_CONFLICT_W * conflict + _TIME_LOAD_W * load + _NEW_W * new
            )
        loads = [self._window(h, start) for h in self.hist] + ([0.0] if new else [])
        loads[s] += self._window(mine, start)
        mean = sum(loads) / len(loads)
        balance = max(loads) + sum((x - mean) ** 2 for x in loads) / len(loads)
        size = (0 if new else self.sizes[s]) + unit.size
        return _EVENT_W * event + _BALANCE_W * balance + _LOAD_W * size + _NEW_W * new

    def _choose(self, i: int) -> int:
        scored = sorted((self._score(i, s), s) for s in self._candidates(i))
        if self.variant is not Variant.WEIGHTED or len(scored) == 1:
            return scored[0][1]
        tried = scored[:_RESIM]
        cost = len(tried) * len(self.prog)  # each re-check walks the program once
        if self.resim_left < cost:
            return scored[0][1]
        self.resim_left -= cost
        best = min(tried, key=lambda c: (self._makespan(i, c[1]), c))
        return best[1]

    def _makespan(self, i: int, s: int) -> int:
        """Makespan of the units merged so far plus unit `i` on stream `s`: each op starts
        when its stream's previous op and its merged producers are done."""
        self.stream_of_unit[i] = s
        finish: dict[int, int] = {}
        stream_free: dict[int, int] = {}
        span = 0
        for u in range(len(self.prog)):
            unit = self.unit_of[u]
            if unit < 0 or self.stream_of_unit[unit] < 0:
                continue
            where = self.stream_of_unit[unit]
            start = stream_free.get(where, 0)
            for p, _ in self.prog.deps[u]:
                start = max(start, finish.get(p, 0))
            finish[u] = stream_free[where] = start + self.durations[u]
            span = max(span, finish[u])
        self.stream_of_unit[i] = -1
        return span

    def _apply(self, i: int, s: int) -> None:
        if s == len(self.sizes):
            self.sizes.append(0)
            self.time_load.append(0.0)
            self.hist.append({})
        self.stream_of_unit[i] = s
        unit = self.units[i]
        self.sizes[s] += unit.size
        self.time_load[s] += unit.time
        hist = self.hist[s]
        for lv, c in self._unit_hist(i).items():
            hist[lv] = hist.get(lv, 0) + c


def assign_minidag(
    req: Request, hw: Hardware, variant: Variant, durations: Sequence[int] | None = None
) -> Assignment:
    """GE's automatic multi-stream assignment (see the module docstring).  `durations`:
    `solo_durations(req.prog, hw)`, when the caller has it already."""
    prog, pinned = req.prog, req.pinned
    base = assign(Mode.USER, prog, pinned, req.priorities, req.max_streams, reserved=req.reserved)
    free = [k is NodeKind.COMPUTE and t is None for k, t in zip(prog.kind, pinned)]
    nodes = [n for n in range(len(prog)) if free[n]]
    if not nodes:
        return base
    edges = _free_edges(prog, free)
    paths = cover_paths(nodes, edges)
    pinned_streams = len(base.streams)
    limit = 1 + req.max_streams - pinned_streams  # the default stream and what is left
    if durations is None:
        durations = solo_durations(prog, hw)
    merger = _Merger(prog, paths, edges, list(durations), variant, limit)
    physical = merger.run()
    return _place(req, base, paths, physical, "dag")


def _place(
    req: Request, base: Assignment, groups: list[list[int]], stream_of_group: list[int], prefix: str
) -> Assignment:
    """Pinned ops as `base` puts them; group g's ops on physical stream `stream_of_group[g]`,
    0 being the default stream and the others made on first use in issue order."""
    streams = list(base.streams)
    taken = {info.tag for info in streams} | set(req.reserved)
    stream_of = list(base.stream_of)
    physical = [-1] * len(req.prog)
    for g, group in enumerate(groups):
        for n in group:
            physical[n] = stream_of_group[g]
    made = {0: 0}
    for n, s in enumerate(physical):
        if s < 0:
            continue
        if s not in made:
            tag = fresh_tag(len(made), taken, prefix)
            taken.add(tag)
            made[s] = len(streams)
            streams.append(StreamInfo(f"s{len(streams)}", tag, 0))
        stream_of[n] = made[s]
    return Assignment(streams, stream_of)


def _compute_bound(op: NpuOp, hw: Hardware, works: _Works) -> bool:
    work = works(op)
    if work.engine not in ("cube", "vector"):
        return False
    return timing.compute_bound(hw, work)


def opara_order(prog: Program, hw: Hardware) -> list[int]:
    """Opara's launch order: alternate compute-bound and memory-bound ready ops (see the
    module docstring); the return stays last."""
    works = _Works(hw)
    compute = [
        isinstance(op, NpuOp) and prog.kind[n] is NodeKind.COMPUTE and _compute_bound(op, hw, works)
        for n, op in enumerate(prog.ops)
    ]
    users = prog.users()
    indegree = [len(dict.fromkeys(p for p, _ in d)) for d in prog.deps]
    for n in range(len(prog)):
        users[n] = list(dict.fromkeys(users[n]))
    ready: list[list[int]] = [[], []]  # heaps of memory-bound, compute-bound ready nodes
    for n in range(len(prog)):
        if indegree[n] == 0:
            heapq.heappush(ready[compute[n]], n)
    order: list[int] = []
    last = True
    while ready[0] or ready[1]:
        want = 0 if last else 1
        heap = ready[want] if ready[want] else ready[1 - want]
        n = heapq.heappop(heap)
        order.append(n)
        if prog.kind[n] is NodeKind.COMPUTE:
            last = compute[n]
        for u in users[n]:
            indegree[u] -= 1
            if indegree[u] == 0:
                heapq.heappush(ready[compute[u]], u)
    returns = [n for n in order if prog.kind[n] is NodeKind.RETURN]
    return [n for n in order if prog.kind[n] is not NodeKind.RETURN] + returns


def assign_opara(req: Request, hw: Hardware) -> Assignment:
    """Opara: Nimble's streams, issued in the alternating order (see the module docstring);
    a program whose order is fixed (`Request.reorderable`) keeps its written order."""
    result = assign(
        Mode.NIMBLE, req.prog, req.pinned, req.priorities, req.max_streams, reserved=req.reserved
    )
    if not req.reorderable:
        return result
    order = opara_order(req.prog, hw)
    keep = order == list(range(len(req.prog)))
    return Assignment(result.streams, result.stream_of, None if keep else order)


__all__ = ["Variant", "assign_minidag", "assign_opara", "opara_order", "solo_durations"]
