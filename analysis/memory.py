"""Buffer lifetimes of a lowered function under happens-before, and the memory lower bound.

Every tensor a device op writes is a **buffer** (`Buffers`): function arguments
and results are external (their caller provides them), a view (`npu.reshape`)
shares its source's buffer, and a constant is no device buffer.  A buffer's
*accesses* are the op that writes it and every op that reads it or one of its
views.

Two buffers may share addresses only if one is **before** the other: every
access of the first happens before (`npuir.analysis.happens_before`: stream
order and events, never host issue order) the op that writes the second.  GE's
memory assigner states the same rule for its cross-stream reuse
(`CanAReuseB` in hicann/ge's `dependency_analyzer.cc`: B's space may be reused
by A only when every consumer of B reaches A's producer).  With vector clocks
the test is one comparison per stream: buffer b is before c iff, for every
stream t, b's last access on t is at a position below what `c`'s writer knows
of t (`HappensBefore.start_clock`).  "Before" is a strict partial order on
buffers (each access of b precedes c's writer, which precedes every access of c),
and two buffers **conflict** when neither is before the other.

`Lifetimes.conflicts()` lists every conflicting pair in one sweep along issue
order: since happens-before implies issue order, only a buffer written earlier
can conflict with the one being written, and per stream the clocks only grow,
so a buffer once known to be before a stream's clock stays so.  Each stream
keeps the buffers not yet behind its clock; cost O(buffers x streams + pairs).

**Lower bound.** Buffers that pairwise conflict must all be disjoint, so the
largest total size of an antichain of the order bounds every safe static plan
from below (`antichain_bound`).  It is computed as a minimum flow (Dilworth's
theorem, weighted): each buffer is an edge from its writer to a join node with
lower bound its size; the join has edges from the buffer's last accesses and to
the first node of every stream that all of them happen before, so a path passes
from buffer b to buffer c exactly when b is before c (every edge respects
happens-before; the join edges are what "all accesses" needs).  The minimum
flow covering every buffer edge equals the heaviest antichain; it is found as
the feasible flow of one path per buffer minus a maximum flow (Dinic) back
from the sink to the source, and the antichain itself is read off the final
residual graph, so the caller gets a certificate (`Antichain.buffers`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from dataclasses import dataclass, field
from itertools import pairwise
from typing import cast

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, OpResult, SSAValue

from npuir.analysis.happens_before import HappensBefore
from npuir.analysis.program import NodeKind, Program
from npuir.dialects import coreset, mem, stream
from npuir.dialects.npu import DYN, tensor_bytes


@dataclass
class Buffers:
    """The planned buffers of a lowered function (see the module docstring)."""

    prog: Program
    writer: list[int] = field(default_factory=list[int])
    """Per buffer, the node that writes it."""
    result: list[int] = field(default_factory=list[int])
    """Per buffer, which result of its writer it is."""
    size: list[int] = field(default_factory=list[int])
    """Per buffer, its size in bytes, aligned to `mem.ALIGN`."""
    of_value: dict[SSAValue, int] = field(default_factory=dict[SSAValue, int])
    """Every value that lives in a planned buffer (views included) -> buffer."""
    readers: list[list[int]] = field(default_factory=list[list[int]])
    """Per buffer, the nodes that read it (or one of its views), in issue order."""
    dynamic: Operation | None = None
    """The first op whose buffer has a dynamic shape: then nothing is planned."""

    def __len__(self) -> int:
        return len(self.writer)

    def describe(self, b: int) -> str:
        return self.prog.describe(self.writer[b])


_THROUGH = (stream.WaitTensorOp, stream.SwitchOp, coreset.LimitOp)


def _source(value: SSAValue) -> SSAValue:
    """The value a chain of `stream.wait_tensor` results and scope results (before
    partitioning) stands for."""
    while True:
        # `owner` is a Block for an argument; an isinstance check against xDSL's abstract
        # SSAValue classes costs more than the rest of a buffer walk.
        op = value.owner
        if type(op) not in _THROUGH:
            return value
        if isinstance(op, stream.WaitTensorOp):
            value = op.tensor
        else:
            assert isinstance(op, stream.SwitchOp | coreset.LimitOp)
            assert isinstance(value, OpResult)
            value = op.source_of(value)


def find_buffers(prog: Program) -> Buffers:
    """The buffers of `prog` (a lowered function's program graph) and who reads them."""
    out = Buffers(prog)
    # A class per written value; views join their source's class; a class that reaches an
    # argument or a result of the function is external.
    cls_of: dict[SSAValue, int] = {}
    members: list[tuple[int, int]] = []  # class -> (writer node, result index)
    external: set[int] = set()
    readers: list[list[int]] = []
    kinds = prog.kind
    record, wait = NodeKind.RECORD, NodeKind.WAIT
    for n, op in enumerate(prog.ops):
        kind = kinds[n]
        if kind is record or kind is wait:
            continue
        read: list[int] = []
        for operand in op.operands:
            c = cls_of.get(operand)
            if c is None:
                c = cls_of.get(_source(operand))
                if c is None:
                    continue  # an argument, a constant or another unplanned value
            if kind is NodeKind.RETURN:
                external.add(c)
            elif c not in read:
                read.append(c)
        for c in read:
            readers[c].append(n)
        if kind is not NodeKind.COMPUTE or op.name in mem.NOT_DEVICE_BUFFERS:
            continue
        if op.name in mem.VIEW_OPS:
            src = _source(op.operands[0])
            if src in cls_of:
                cls_of[op.results[0]] = cls_of[src]
            continue
        for i, res in enumerate(op.results):
            cls_of[res] = len(members)
            members.append((n, i))
            readers.append([])
    index: dict[int, int] = {}
    sizes: dict[Attribute, int] = {}
    for c, (n, i) in enumerate(members):
        if c in external:
            continue
        # Results of npu ops are tensors (their verifiers say so); an isinstance check on
        # the generic TensorType costs more than the rest of this loop.
        ty = cast(TensorType[Attribute], prog.ops[n].results[i].type)
        if DYN in ty.get_shape():
            if out.dynamic is None:
                out.dynamic = prog.ops[n]
            continue
        index[c] = len(out.writer)
        out.writer.append(n)
        out.result.append(i)
        size = sizes.get(ty)
        if size is None:
            size = sizes[ty] = mem.align(tensor_bytes(ty))
        out.size.append(size)
        out.readers.append(readers[c])
    out.of_value = {v: index[c] for v, c in cls_of.items() if c in index}
    return out


class Lifetimes:
    """When each buffer is accessed, per stream, and which buffers conflict."""

    def __init__(self, buffers: Buffers, hb: HappensBefore) -> None:
        self.buffers = buffers
        self.hb = hb
        prog = buffers.prog
        pos = hb.position
        self.last: list[dict[int, int]] = []
        """Per buffer, stream -> the position of its last access there."""
        for b, w in enumerate(buffers.writer):
            last = {prog.stream[w]: pos[w]}
            for r in buffers.readers[b]:
                s = prog.stream[r]
                if last.get(s, -1) < pos[r]:
                    last[s] = pos[r]
            self.last.append(last)

    def before(self, b: int, c: int) -> bool:
        """Whether every access of buffer b happens before c's writer."""
        clock = self.hb.start_clock[self.buffers.writer[c]]
        return all(clock[t] > p for t, p in self.last[b].items())

    def conflicts(self) -> list[list[int]]:
        """Per buffer, the buffers it conflicts with (each pair listed on both sides)."""
        bufs = self.buffers
        prog = bufs.prog
        adj: list[list[int]] = [[] for _ in range(len(bufs))]
        live: list[list[int]] = [[] for _ in prog.streams]
        start_clock = self.hb.start_clock
        last_items = [tuple(d.items()) for d in self.last]
        b = 0
        n_bufs = len(bufs)
        while b < n_bufs:
            w = bufs.writer[b]
            s = prog.stream[w]
            clock = start_clock[w]
            kept = []
            for x in live[s]:
                for t, p in last_items[x]:
                    if clock[t] <= p:
                        kept.append(x)
                        break
            live[s] = kept
            first = b
            while b < n_bufs and bufs.writer[b] == w:
                for x in kept:
                    adj[b].append(x)
                    adj[x].append(b)
                for y in range(first, b):
                    adj[b].append(y)
                    adj[y].append(b)
                b += 1
            for lst in live:
                lst.extend(range(first, b))
        return adj


@dataclass(frozen=True)
class Antichain:
    """A heaviest set of pairwise-conflicting buffers: no safe static plan is smaller."""

    bytes: int
    buffers: tuple[int, ...]


def antichain_bound(lt: Lifetimes) -> Antichain:
    """The heaviest antichain of the before-order (see the module docstring)."""
    bufs = lt.buffers
    prog = bufs.prog
    hb = lt.hb
    n_nodes = len(prog)
    n_bufs = len(bufs)
    if n_bufs == 0:
        return Antichain(0, ())
    source = n_nodes + n_bufs
    sink = source + 1
    graph = _FlowGraph(sink + 1)
    inf = sum(bufs.size) + 1
    # Happens-before edges among nodes: stream order and record -> wait.
    on_stream: list[list[int]] = [[] for _ in prog.streams]
    for n in range(n_nodes):
        on_stream[prog.stream[n]].append(n)
    for nodes in on_stream:
        for a, b in pairwise(nodes):
            graph.add(a, b, inf)
    for wait, record in hb.bound_record.items():
        graph.add(record, wait, inf)
    # Per stream, each stream's clock column along it (non-decreasing), to find where a
    # buffer's join leads: the first node of stream t whose clock passes every last access
    # is the latest of the first nodes passing each one (a bisection per access).
    columns = [
        [[hb.start_clock[n][u] for n in nodes] for u in range(len(on_stream))]
        for nodes in on_stream
    ]
    head, to, cap = graph.head, graph.to, graph.cap

    def arc(u: int, v: int, c: int) -> None:  # `_FlowGraph.add`, inlined for the hot loop
        head[u].append(len(to))
        to.append(v)
        cap.append(c)
        head[v].append(len(to))
        to.append(u)
        cap.append(0)

    writer_weight: dict[int, int] = {}
    for b in range(n_bufs):
        join = n_nodes + b
        w = bufs.writer[b]
        last = lt.last[b]
        for t, p in last.items():
            a = on_stream[t][p]
            if a != w:
                arc(a, join, inf)
        arc(w, join, inf)  # the buffer's own edge (its lower bound is the supply below)
        for t, nodes in enumerate(on_stream):
            column = columns[t]
            i = max((bisect_right(column[u], p) for u, p in last.items()), default=0)
            if i < len(nodes):
                arc(join, nodes[i], inf)
        # The residual of the one-path-per-buffer flow: its size can go back from the sink
        # through the join, and leave through the writer towards the source.
        arc(sink, join, bufs.size[b])
        writer_weight[w] = writer_weight.get(w, 0) + bufs.size[b]
    for w, weight in writer_weight.items():
        graph.add(w, source, weight)
    returned = graph.max_flow(sink, source)
    reach = graph.reachable(sink)
    chosen = tuple(b for b in range(n_bufs) if reach[n_nodes + b] and not reach[bufs.writer[b]])
    return Antichain(sum(bufs.size) - returned, chosen)


class _FlowGraph:
    """Arcs in flat arrays (arc e and its reverse e ^ 1) for Dinic's maximum flow."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.head: list[list[int]] = [[] for _ in range(n)]
        self.to: list[int] = []
        self.cap: list[int] = []

    def add(self, u: int, v: int, cap: int) -> None:
        self.head[u].append(len(self.to))
        self.to.append(v)
        self.cap.append(cap)
        self.head[v].append(len(self.to))
        self.to.append(u)
        self.cap.append(0)

    def _levels(self, s: int, t: int = -1) -> list[int]:
        """Breadth-first levels from `s` over arcs with capacity left; with `t`, only up to
        `t`'s level (deeper nodes stay -1: no shortest path to `t` passes them)."""
        level = [-1] * self.n
        level[s] = 0
        queue = deque([s])
        to, cap, head = self.to, self.cap, self.head
        while queue:
            u = queue.popleft()
            nxt = level[u] + 1
            if t >= 0 and level[t] >= 0 and nxt > level[t]:
                break
            for e in head[u]:
                v = to[e]
                if cap[e] > 0 and level[v] < 0:
                    level[v] = nxt
                    queue.append(v)
        return level

    def max_flow(self, s: int, t: int) -> int:
        total = 0
        to, cap, head = self.to, self.cap, self.head
        sizes = [len(arcs) for arcs in head]
        while True:
            level = self._levels(s, t)
            if level[t] < 0:
                return total
            ptr = [0] * self.n
            while True:
                # One augmenting path along the level graph, found iteratively.
                path: list[int] = []
                u = s
                while u != t:
                    arcs = head[u]
                    size = sizes[u]
                    deeper = level[u] + 1
                    i = ptr[u]
                    while i < size:
                        e = arcs[i]
                        if cap[e] > 0 and level[to[e]] == deeper:
                            break
                        i += 1
                    ptr[u] = i
                    if i == size:
                        if u == s:
                            break
                        level[u] = -1  # a dead end: never enter it again this phase
                        e = path.pop()
                        u = to[e ^ 1]
                        continue
                    e = arcs[i]
                    path.append(e)
                    u = to[e]
                if u != t:
                    break
                pushed = min([cap[e] for e in path])
                for e in path:
                    cap[e] -= pushed
                    cap[e ^ 1] += pushed
                total += pushed

    def reachable(self, s: int) -> list[bool]:
        return [lv >= 0 for lv in self._levels(s)]


__all__ = [
    "Antichain",
    "Buffers",
    "Lifetimes",
    "antichain_bound",
    "find_buffers",
]
