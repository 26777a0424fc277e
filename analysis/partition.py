"""Stream assignment strategies over the compact program graph.

`stream-partition` decides which stream each op runs on; the decision itself
lives here, as pure functions over an un-partitioned `Program`, so that the
pass, the benchmarks and automatic partitioning share it without touching IR:

    prog = build_program(func)
    pinned, priorities = pinned_tags(prog)          # the user's scopes
    result = assign(Mode.NIMBLE, prog, pinned, priorities, max_streams=8)
    result.streams[result.stream_of[n]]             # node n's stream

Each mode is a `Mode`; the ones that need no cost model are `STRATEGIES`,
functions of a `Request`.  The cost-aware ones (`minidag`, `opara`, `auto`)
live in `npuir.schedule`, which adds its strategies to this table.

Rules every mode keeps:

- `streams[0]` is the default stream (tag "default"); `func.return` is on it.
- A pinned node (`pinned[n]` is the tag of its innermost `stream.switch`)
  runs on its tag's stream; the same tag is the same stream, and the tag
  "default" is the default stream.  Pinned streams come right after the
  default one, in the order their scopes appear.  (`single` alone ignores
  pins: the pass rejects scopes in that mode before it gets here.)
- At most `max_streams` streams, the default one included.  If the pinned
  tags alone need more, `assign` raises `ValueError`; otherwise each mode
  merges its own streams to fit (below).
- Streams a mode makes get tags of their own — "comm", "cube", "aicpu",
  "ge1", "chain3" — created in order of first use; a tag that is already a
  pin or in `reserved` (the pass passes every scope tag of the module) gets
  "_" appended until it is free, so it never joins a user's stream.
- Any assignment is valid: issue order is topological, and `insert-events`
  orders every cross-stream dependency.  The modes differ only in speed.
- A mode that issues the nodes in a new order keeps the collectives in their
  written order relative to each other (`keep_collective_order`): the ranks'
  collectives pair up by issue order (HCCL requires every rank to issue them in
  the same order), and each rank's function is partitioned on its own, so a
  collective moved on one rank would pair with the wrong peer or deadlock.

The modes:

`user`
    Pinned nodes on their tag's stream, everything else on the default stream
    (TorchAir's `npu_stream_switch`).

`single`
    Everything on the default stream.

`ge`
    GE's default logical stream allocation, as in graphengine's
    `ge/graph/build/logical_stream_allocator.cc` (read in the
    mindspore-ai/graphengine mirror) on the subgraphs of
    `ge/graph/partition/graph_partition.cc`:

    1. *Partition* (`GraphPartitioner::MarkClusters`): in topological order,
       each node tries to merge with its input clusters, those with fewer
       outputs first; two clusters merge when they have the same engine and
       the same stream label and no second path joins them (`IsMergeable`,
       `HasSecondPath`, searching only clusters below the child).  Engines
       follow `ge/engine_manager/engine_conf.json`: cube and vector ops are
       both `AIcoreEngine` (FE places both on AI Core), collectives are
       `DNN_HCCL` (`independent: true`), AI CPU ops `DNN_VM_AICPU`
       (`attach: true`).
    2. `AssignByLabelPass`: a labelled (pinned) subgraph gets its label's
       stream.
    3. `IndependentStreamPass`: every unlabelled subgraph of an independent
       engine — communication — goes to one stream per engine, "comm".
       (Newer GE skips user-labelled subgraphs here, as we do.)
    4. `AssignByDependencyPass`: the others, in subgraph order, reuse the
       stream of the first predecessor subgraph that `CouldReuse` allows —
       the predecessor is not independent and not labelled; no *other*
       successor of it has the predecessor's engine (so one stream continues
       one chain: a fork keeps the same-engine branch on the stream and sends
       the other engine's branch elsewhere); and the engines match, or this
       engine attaches, or the predecessor itself reused a stream of this
       engine.  Otherwise `AssignNewStream` opens stream `k mod
       max_parallel` of its engine, where `max_parallel` is GE's
       `ge.streamMaxParallelNum`, default 1 (`kDefaultMaxParalleNum` in
       `logical_stream_allocator.h`).  As in GE's
       `UpdateAssignedSubgraphs` for a graph with a parent stream, the first
       new stream is the default stream; the others are "ge1", "ge2", ...

    So, with GE's defaults, all AI Core work shares one stream: GE runs
    AI Core ops in parallel only when told to (labels, or a larger
    `max_parallel`).  Simplified: one scheduler (`scheduler_id`); no
    skip-assign engines (GE_LOCAL, HOST_CPU), force-attach, parallel groups,
    `AllReduceParallelPass` or memory-priority option; among several
    reusable predecessors we take the earliest subgraph (GE's older code
    takes the first in its pointer-keyed map, newer code a "top priority"
    one).  Over `max_streams`: the "comm" stream keeps its own, then "ge1",
    "ge2", ... while slots remain; the rest fold into the default stream.

`engine`
    One stream per engine class — cube, vector, AI CPU, communication (GE's
    "cv" split of AI Core work, plus communication).  The vector class runs
    on the default stream (it holds most ops and usually the return's
    producers, so most edges stay on one stream); a function with no vector
    work puts the class of its first op there.  The other classes get
    "comm", "cube", "aicpu" in that order of precedence while slots remain
    (communication overlap gains most); a class without a slot folds into
    the default stream.

`nimble`
    Nimble's stream assignment (Kwon et al., "Nimble: Lightweight and
    Parallel GPU Task Scheduling for Deep Learning", NeurIPS 2020):
    take the transitive reduction of the dependence DAG, build the
    bipartite graph with an edge u→v for each reduced edge, find a maximum
    matching (Hopcroft-Karp), and give each path of the resulting minimum
    path cover a stream.  No cost model.  Pinned nodes are not on any path,
    but orderings through them count: the reduction is that of the
    reachability order among the unpinned nodes.  The reduction builds
    reachability bitsets in reverse topological order, each relative to its
    node and cut at the furthest position its readers ask about, and drops
    each once read for the last time (memory: the live windows, not N x N
    bits); each node's reduced successors are the minimal elements of the
    unpinned nodes it reaches first.  The path holding the
    first op gets the default stream, the others "chain1", "chain2", ...
    Over `max_streams`: the longest paths keep a stream (ties: the earlier
    path); each other path, in issue order, joins the stream of its head's
    latest unpinned producer, or — when the head has none — the stream with
    the fewest ops.

`minidag` (GE's automatic multi-stream), `opara` and `auto` are not here:
they need the cost model (and `auto` the simulator), which an analysis does
not import; `npuir.schedule.minidag` and `npuir.schedule.auto` implement
them and call back into `assign` for the cost-free modes.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from xdsl.ir import Block, Operation

from npuir.analysis.program import (
    DEFAULT_STREAM,
    DepKind,
    NodeKind,
    Program,
    StreamInfo,
    canonical_deps,
)
from npuir.diagnostics import Kind, error
from npuir.dialects import coreset, stream
from npuir.dialects.npu import CollectiveOp, Engine, NpuOp

PRIORITY_CONFLICT = Kind(
    "stream.priority-conflict",
    'stream "{tag}" is given priority {priority} here but {other} elsewhere; one stream has '
    "one priority",
)
"""One stream tag given two priorities; arguments: `tag`, `priority` (here), `other`."""


class Mode(StrEnum):
    """How `stream-partition` assigns streams (the module docstring describes each)."""

    USER = "user"
    SINGLE = "single"
    GE = "ge"
    ENGINE = "engine"
    NIMBLE = "nimble"
    MINIDAG = "minidag"
    OPARA = "opara"
    AUTO = "auto"
    IOS = "ios"

    @property
    def uses_tags(self) -> bool:
        """Whether the user's scopes pin ops (every mode but `single`)."""
        return self is not Mode.SINGLE

    @property
    def places_ops(self) -> bool:
        """Whether the mode decides where unpinned ops run (not `user` or `single`)."""
        return self not in (Mode.USER, Mode.SINGLE)


GE_MAX_PARALLEL = 1
"""GE's default streams per engine (`kDefaultMaxParalleNum`, logical_stream_allocator.h)."""


@dataclass
class Assignment:
    """A stream for every node of an un-partitioned `Program`."""

    streams: list[StreamInfo]
    """Index 0 is the default stream (tag "default"); symbols are `s<index>`."""
    stream_of: list[int]
    """Per node, an index into `streams`; `func.return` is on 0."""
    order: list[int] | None = None
    """A new issue order (node indices, topological, the return last), or None
    to keep the order as written."""
    limits: tuple[tuple[int, str, int], ...] = ()
    """Core limits chosen with the streams (`stream-partition{mode=auto limits=true}`):
    (node, engine, count), written as a `coreset.limit` scope around each node's op."""


@dataclass(frozen=True)
class Request:
    """What a strategy is asked: assign `prog`'s nodes under these pins and caps."""

    prog: Program
    pinned: Sequence[str | None]
    """Per node, its tag or None."""
    priorities: dict[str, int]
    """Each pinned tag's priority."""
    max_streams: int
    reserved: Collection[str] = field(default_factory=tuple[str, ...])
    """Tags never given to a stream the mode makes."""
    max_parallel: int = GE_MAX_PARALLEL
    """GE's streams per engine (mode `ge` only)."""
    variant: str = "loadbalance"
    """How `minidag` merges its logical streams (mode `minidag` only)."""

    @property
    def reorderable(self) -> bool:
        """Whether a strategy may issue the nodes in another order (`issue_order_fixed`)."""
        return not issue_order_fixed(self.prog)


def issue_order_fixed(prog: Program) -> bool:
    """Whether `prog`'s nodes must keep their written issue order: when the function has a
    `coreset.limit` scope.  A scope is lexical -- its ops are one region, and its limit
    covers exactly them -- so a new order could only be realised by splitting scopes,
    which the stream-partition pass does not do (it reissues the ops of a flat function).
    A scope that holds no compute op (only a `stream.wait_tensor`) counts too: reissuing
    around it would leave it in front of the values its wait uses."""
    return any(isinstance(op, coreset.LimitOp) for op in prog.func.body.walk())


Strategy = Callable[[Request], Assignment]
"""One mode's assignment."""


# --------------------------------------------------------------------------
# The user's scopes
# --------------------------------------------------------------------------


def permuted(prog: Program, order: Sequence[int]) -> Program:
    """`prog` with its nodes issued in `order` (which must be topological)."""
    position = {old: new for new, old in enumerate(order)}
    out = Program(prog.func, streams=list(prog.streams))
    for old in order:
        out.ops.append(prog.ops[old])
        out.kind.append(prog.kind[old])
        out.stream.append(prog.stream[old])
        out.deps.append([(position[p], k) for p, k in prog.deps[old]])
        out.event_of.append(-1 if prog.event_of[old] < 0 else position[prog.event_of[old]])
        out.event_id.append(prog.event_id[old])
        out.pinned.append(prog.pinned[old])
    out.scopes, out.priorities = prog.scopes, prog.priorities
    out.priority_clash, out.wait_tensors = prog.priority_clash, prog.wait_tensors
    return out


def partitioned_program(
    prog: Program,
    stream_of: Sequence[int],
    order: Sequence[int] | None,
    added: Sequence[tuple[int, int]],
    waits: Sequence[tuple[stream.WaitTensorOp, int]],
) -> Program | None:
    """The graph `build_program` reads from `prog`'s function once `stream-partition` has
    written it, made from what the pass knows: node `n` of `prog` on stream `stream_of[n]`
    (an index into the module's streams, which the caller sets as `streams`), issued in
    `order` (None: as written), with a control dependency for each `(after, before)` in
    `added` (the `stream.wait_tensor`s the pass adds: the collective chain, a memory
    budget's orderings), and `waits` every `stream.wait_tensor` in program order with the
    node after it in the new order.  Dependencies are listed canonically
    (`canonical_deps`).  None when `prog` already has `sync` nodes (the pass then leaves
    the graph to be read)."""
    if any(k is NodeKind.RECORD or k is NodeKind.WAIT for k in prog.kind):
        return None
    issue = list(order) if order is not None else list(range(len(prog)))
    position = {old: new for new, old in enumerate(issue)}
    extra: dict[int, list[int]] = {}
    for after, before in added:
        extra.setdefault(after, []).append(before)
    out = Program(prog.func)
    for old in issue:
        out.ops.append(prog.ops[old])
        out.kind.append(prog.kind[old])
        out.stream.append(DEFAULT_STREAM if prog.kind[old] is NodeKind.RETURN else stream_of[old])
        deps = [(position[p], k) for p, k in prog.deps[old]]
        deps += [(position[p], DepKind.CONTROL) for p in extra.get(old, ())]
        out.deps.append(canonical_deps(deps))
        out.event_of.append(-1)
        out.event_id.append(-1)
    out.index = {op: i for i, op in enumerate(out.ops)}
    out.pinned = [None] * len(out.ops)
    out.wait_tensors = [(wait, None) for wait, _ in waits]
    out.wait_positions = [at for _, at in waits]
    return out


def nearest_topological(
    prog: Program, wanted: Sequence[int], extra: Iterable[tuple[int, int]] = ()
) -> list[int]:
    """`prog`'s nodes in a topological order of its dependences plus the `extra`
    ``(before, after)`` edges, as close to `wanted` as Kahn's algorithm gets by always
    issuing the ready node that comes first in `wanted`; an order that already respects
    them all comes back unchanged.  Nodes on a cycle are left out (fewer nodes return)."""
    position = {n: i for i, n in enumerate(wanted)}
    users: list[list[int]] = [[] for _ in prog.ops]
    indegree = [0] * len(prog.ops)
    for n, deps in enumerate(prog.deps):
        for p in {p for p, _ in deps}:
            users[p].append(n)
            indegree[n] += 1
    for before, after in extra:
        users[before].append(after)
        indegree[after] += 1
    ready = [(position[n], n) for n in range(len(prog)) if indegree[n] == 0]
    heapq.heapify(ready)
    out: list[int] = []
    while ready:
        _, n = heapq.heappop(ready)
        out.append(n)
        for u in users[n]:
            indegree[u] -= 1
            if indegree[u] == 0:
                heapq.heappush(ready, (position[u], u))
    return out


def keep_collective_order(prog: Program, order: Sequence[int]) -> list[int]:
    """`order` (a topological issue order of `prog`'s nodes, the return last) changed as
    little as possible so that the collectives keep their relative order in `prog`.

    Kahn's algorithm over the data dependences plus a chain through the collectives in
    `prog`'s order, always issuing the ready node that comes first in `order`: an order
    that already keeps the collectives' order comes back unchanged.  `prog`'s own order
    satisfies both, so the result always covers every node."""
    colls = [n for n, op in enumerate(prog.ops) if isinstance(op, CollectiveOp)]
    if len(colls) < 2:
        return list(order)
    chosen = set(colls)
    if [n for n in order if n in chosen] == colls:
        return list(order)
    out = nearest_topological(prog, order, itertools.pairwise(colls))
    if len(out) != len(prog):
        raise AssertionError("keep_collective_order: the written order is not topological")
    returns = [n for n in out if prog.kind[n] is NodeKind.RETURN]
    return [n for n in out if prog.kind[n] is not NodeKind.RETURN] + returns


def collective_chain(ops: Sequence[Operation]) -> list[tuple[int, int]]:
    """``(earlier, later)`` positions in `ops` (a function's ops in issue order): each
    collective after the previous one of its communicator group, the pairs a mode that
    places ops orders with a wait (`stream-partition`'s `chain_collectives`), so that a
    group's collectives run one after another, as one HCCL communicator runs them.

    A previous collective inside a `coreset.limit` scope that does not hold the later one
    is not visible there: such a pair is left out, as the pass leaves it."""
    last: dict[str, int] = {}
    pairs: list[tuple[int, int]] = []
    for n, op in enumerate(ops):
        if not isinstance(op, CollectiveOp):
            continue
        previous = last.get(op.group)
        last[op.group] = n
        if previous is None:
            continue
        home = ops[previous].parent_block()
        if home is not None and _encloses(home, op):
            pairs.append((previous, n))
    return pairs


def _encloses(block: Block, op: Operation) -> bool:
    """Whether `op` sits in `block` or in an op nested in it."""
    current: Operation | None = op
    while current is not None:
        if current.parent_block() is block:
            return True
        current = current.parent_op()
    return False


def with_collective_chain(prog: Program) -> Program:
    """`prog` with each collective ordered after the previous one of its group
    (`collective_chain`, a control dependence), as the lowered program of every mode that
    places ops has it: what a search must judge and a bound may assume.  `prog` itself
    when no such order is missing; else a copy sharing everything but `deps`."""
    added: dict[int, int] = {}
    for earlier, later in collective_chain(prog.ops):
        if all(p != earlier for p, _ in prog.deps[later]):
            added[later] = earlier
    if not added:
        return prog
    deps = [[*d, (added[n], DepKind.CONTROL)] if n in added else d for n, d in enumerate(prog.deps)]
    return dataclasses.replace(prog, deps=deps)


def pinned_tags(prog: Program) -> tuple[list[str | None], dict[str, int]]:
    """Per node, the tag of its innermost `stream.switch` (None outside every scope),
    and each tag's priority in order of first scope: what `build_program` recorded.

    One tag given two priorities is a located error at the second scope.
    """
    clash = prog.priority_clash
    if clash is not None:
        name = clash.tag_name
        raise error(
            clash,
            PRIORITY_CONFLICT,
            tag=name,
            priority=clash.priority_value,
            other=prog.priorities[name],
        )
    return list(prog.pinned), dict(prog.priorities)


# --------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------


def assign(
    mode: str,
    prog: Program,
    pinned: Sequence[str | None],
    priorities: dict[str, int],
    max_streams: int,
    *,
    reserved: Collection[str] = (),
    max_parallel: int = GE_MAX_PARALLEL,
    variant: str = "loadbalance",
    strategies: dict[Mode, Strategy] | None = None,
) -> Assignment:
    """Assign every node of `prog` a stream by `mode` (see the module docstring).

    `pinned[n]` is node n's tag or None; `priorities` each tag's priority.
    `reserved` tags are never given to a stream the mode makes;
    `max_parallel` is GE's streams per engine (mode `ge` only), `variant`
    minidag's merge (mode `minidag` only).  `strategies`
    is the table to look the mode up in (default: `STRATEGIES`, the modes that
    need no cost model).  Raises `ValueError` for a mode the table lacks, a cap
    below 1, a program that already has sync nodes, or pins that need more
    than `max_streams` streams.
    """
    table = STRATEGIES if strategies is None else strategies
    try:
        strategy = table[Mode(mode)]
    except (ValueError, KeyError):
        raise ValueError(f"mode '{mode}' is not one of: {', '.join(table)}") from None
    if max_streams < 1:
        raise ValueError(f"max-streams must be >= 1, got {max_streams}")
    if len(pinned) != len(prog):
        raise ValueError(f"{len(pinned)} pins for a program of {len(prog)} nodes")
    if any(k in (NodeKind.RECORD, NodeKind.WAIT) for k in prog.kind):
        raise ValueError("stream assignment needs an un-partitioned program (it has sync nodes)")
    result = strategy(
        Request(prog, pinned, priorities, max_streams, reserved, max_parallel, variant)
    )
    if result.order is not None:
        order = keep_collective_order(prog, result.order)
        result.order = None if order == list(range(len(prog))) else order
    return result


def _assign_single(req: Request) -> Assignment:
    priority = req.priorities.get(stream.MAIN_TAG, 0)
    return Assignment(
        [StreamInfo("s0", stream.MAIN_TAG, priority)], [DEFAULT_STREAM] * len(req.prog)
    )


def _assign_user(req: Request) -> Assignment:
    base = _Streams(req)
    return base.finish(req.prog, req.pinned, [0] * len(req.prog), {}, "")


class _Streams:
    """The default and pinned streams, then the ones a mode makes, by first use."""

    def __init__(self, req: Request) -> None:
        pinned, priorities, max_streams = req.pinned, req.priorities, req.max_streams
        self.infos = [StreamInfo("s0", stream.MAIN_TAG, priorities.get(stream.MAIN_TAG, 0))]
        self.by_tag = {stream.MAIN_TAG: DEFAULT_STREAM}
        for tag in dict.fromkeys([*priorities, *(t for t in pinned if t is not None)]):
            if tag not in self.by_tag:
                self._add(tag, priorities.get(tag, 0))
        if len(self.infos) > max_streams:
            raise ValueError(
                f"the stream labels need {len(self.infos)} streams (the default one included) "
                f"but max-streams is {max_streams}"
            )
        self.budget = max_streams - len(self.infos)
        """How many more streams a mode may make."""
        self._taken = set(self.by_tag) | set(req.reserved)

    def _add(self, tag: str, priority: int) -> int:
        index = len(self.infos)
        self.infos.append(StreamInfo(f"s{index}", tag, priority))
        self.by_tag[tag] = index
        return index

    def _fresh(self, tag: str) -> int:
        while tag in self._taken:
            tag += "_"
        self._taken.add(tag)
        return self._add(tag, 0)

    def finish(
        self,
        prog: Program,
        pinned: Sequence[str | None],
        group_of: Sequence[int],
        names: dict[int, str],
        prefix: str,
    ) -> Assignment:
        """Pinned nodes on their tag's stream, group 0 on the default stream, and
        each other group on a stream of its own, made on first use and tagged
        `names[group]`, else `prefix` numbered from 1."""
        stream_of = [DEFAULT_STREAM] * len(prog)
        made = {0: DEFAULT_STREAM}
        numbered = 0
        for n in range(len(prog)):
            tag = pinned[n]
            if tag is not None:
                stream_of[n] = self.by_tag[tag]
            elif prog.kind[n] is NodeKind.COMPUTE:
                g = group_of[n]
                s = made.get(g)
                if s is None:
                    name = names.get(g)
                    if name is None:
                        numbered += 1
                        name = f"{prefix}{numbered}"
                    s = made[g] = self._fresh(name)
                stream_of[n] = s
        return Assignment(self.infos, stream_of)


def _free_compute(prog: Program, pinned: Sequence[str | None]) -> list[bool]:
    return [k is NodeKind.COMPUTE and t is None for k, t in zip(prog.kind, pinned)]


def _engine(prog: Program, n: int) -> Engine:
    op = prog.ops[n]
    assert isinstance(op, NpuOp)
    return op.engine


# --------------------------------------------------------------------------
# ge
# --------------------------------------------------------------------------

_GE_ENGINE = {
    Engine.CUBE: "AIcoreEngine",
    Engine.VECTOR: "AIcoreEngine",
    Engine.AICPU: "DNN_VM_AICPU",
    Engine.COMM: "DNN_HCCL",
}
_GE_INDEPENDENT = frozenset({"DNN_HCCL"})
_GE_ATTACH = frozenset({"DNN_VM_AICPU"})


class _Clusters:
    """GE's `GraphPartitioner::MarkClusters` over the compute nodes.

    A cluster is named by its first node.  `ins`/`outs` are the cluster graph;
    `done_outs` holds only the edges into clusters already visited, which are
    all that GE's `HasSecondPath` may follow (it searches below the child),
    so the search never scans the edges into the rest of the graph.
    """

    def __init__(self, prog: Program, keys: list[tuple[str, str] | None]) -> None:
        self.keys = keys
        nodes = [n for n, k in enumerate(keys) if k is not None]
        self.members: dict[int, list[int]] = {n: [n] for n in nodes}
        self.ins: dict[int, set[int]] = {n: set() for n in nodes}
        self.outs: dict[int, set[int]] = {n: set() for n in nodes}
        self.done_outs: dict[int, set[int]] = {n: set() for n in nodes}
        self.cluster_of = list(range(len(keys)))
        for n in nodes:
            for p, _ in prog.deps[n]:
                if keys[p] is not None:
                    self.ins[n].add(p)
                    self.outs[p].add(n)
        for child in nodes:
            for p in self.ins[child]:
                self.done_outs[p].add(child)
            parents = sorted(self.ins[child], key=lambda p: (len(self.outs[p]), p))
            merged = child
            for parent in parents:
                if self._mergeable(parent, merged):
                    merged = self._merge(parent, merged)

    def _mergeable(self, parent: int, child: int) -> bool:
        if self.keys[parent] != self.keys[child]:
            return False
        # Another path parent -> ... -> child would become a cycle once merged.
        seen = {parent}
        stack = [parent]
        while stack:
            c = stack.pop()
            for out in self.done_outs[c]:
                if out == child:
                    if c != parent:
                        return False
                elif out not in seen:
                    seen.add(out)
                    stack.append(out)
        return True

    def _merge(self, a: int, b: int) -> int:
        small, big = min(a, b), max(a, b)
        for n in self.members[big]:
            self.cluster_of[n] = small
        self.members[small].extend(self.members.pop(big))
        ins, outs, done = self.ins.pop(big), self.outs.pop(big), self.done_outs.pop(big)
        for x in ins:
            if x != small:
                self.outs[x].discard(big)
                self.outs[x].add(small)
                if big in self.done_outs[x]:
                    self.done_outs[x].discard(big)
                    self.done_outs[x].add(small)
        for y in outs:
            if y != small:
                self.ins[y].discard(big)
                self.ins[y].add(small)
        for edges, more in ((self.ins, ins), (self.outs, outs), (self.done_outs, done)):
            edges[small] |= more
            edges[small] -= {small, big}
        return small


def _assign_ge(req: Request) -> Assignment:
    prog, pinned, base, max_parallel = req.prog, req.pinned, _Streams(req), req.max_parallel
    keys: list[tuple[str, str] | None] = [
        (_GE_ENGINE[_engine(prog, n)], pinned[n] or "") if k is NodeKind.COMPUTE else None
        for n, k in enumerate(prog.kind)
    ]
    clusters = _Clusters(prog, keys)
    order = sorted(clusters.members)
    engine = {c: key[0] for c in order if (key := keys[c]) is not None}
    labelled = {c for c in order if pinned[c] is not None}

    # Stream keys: ("indep", engine) or ("dep", engine, k); labelled ones stay pinned.
    stream_key: dict[int, tuple[str, ...]] = {}
    for c in order:
        if c not in labelled and engine[c] in _GE_INDEPENDENT:
            stream_key[c] = ("indep", engine[c])
    next_stream: dict[str, int] = {}
    new_streams: list[tuple[str, ...]] = []
    reused: dict[int, int] = {}

    def new_stream(c: int) -> tuple[str, ...]:
        k = next_stream.get(engine[c], 0)
        if k >= max_parallel:
            k = 0
        next_stream[engine[c]] = k + 1
        key = ("dep", engine[c], str(k))
        if key not in new_streams:
            new_streams.append(key)
        stream_key[c] = key
        return key

    def could_reuse(c: int, pred: int) -> bool:
        if engine[pred] in _GE_INDEPENDENT or pred in labelled:
            return False
        if any(s != c and engine[s] == engine[pred] for s in clusters.outs[pred]):
            return False
        if engine[c] == engine[pred] or engine[c] in _GE_ATTACH:
            return True
        origin = reused.get(pred)
        return origin is not None and engine[origin] == engine[c]

    for c in order:
        if c in labelled or c in stream_key:
            continue
        pred = next((p for p in sorted(clusters.ins[c]) if could_reuse(c, p)), None)
        if pred is None:
            new_stream(c)
            continue
        stream_key[c] = stream_key[pred] if pred in stream_key else new_stream(pred)
        reused[c] = reused.get(pred, pred)

    # Groups: the first new stream is the default; then comm, ge1, ge2, ... within budget.
    extra = sorted({k for k in stream_key.values() if k[0] == "indep"}) + new_streams[1:]
    group: dict[tuple[str, ...], int] = {k: 0 for k in new_streams[:1]}
    names: dict[int, str] = {}
    for i, made in enumerate(extra):
        if i < base.budget:
            group[made] = i + 1
            if made[0] == "indep":
                names[i + 1] = "comm"
        else:
            group[made] = 0
    group_of = [0] * len(prog)
    for n, cluster_key in enumerate(keys):
        if cluster_key is not None and pinned[n] is None:
            group_of[n] = group[stream_key[clusters.cluster_of[n]]]
    return base.finish(prog, pinned, group_of, names, "ge")


# --------------------------------------------------------------------------
# engine
# --------------------------------------------------------------------------

_ENGINE_PRECEDENCE = (Engine.COMM, Engine.CUBE, Engine.AICPU, Engine.VECTOR)


def _assign_engine(req: Request) -> Assignment:
    prog, pinned, base = req.prog, req.pinned, _Streams(req)
    free = _free_compute(prog, pinned)
    used = list(dict.fromkeys(_engine(prog, n) for n in range(len(prog)) if free[n]))
    home = Engine.VECTOR if Engine.VECTOR in used or not used else used[0]
    others = [e for e in _ENGINE_PRECEDENCE if e in used and e != home]
    own = {e: i + 1 for i, e in enumerate(others[: base.budget])}
    group_of = [own.get(_engine(prog, n), 0) if free[n] else 0 for n in range(len(prog))]
    names = {g: str(e) for e, g in own.items()}
    return base.finish(prog, pinned, group_of, names, "engine")


# --------------------------------------------------------------------------
# nimble
# --------------------------------------------------------------------------


def transitive_reduction(prog: Program, keep: Sequence[bool] | None = None) -> list[list[int]]:
    """Per node, its successors in the transitive reduction of the dependence
    DAG restricted to the nodes in `keep` (all compute nodes by default).

    Orderings through other nodes still count: u -> v is reduced if u reaches
    v, both are kept, and no other kept node lies on a path between them.

    In reverse issue order (reverse topological), each node gets the set of
    nodes it reaches, as a bitset (a Python int) relative to its own position
    and cut at its *horizon*: the furthest position any reader of the set
    asks about.  A kept node's candidates are the kept nodes it reaches first
    (through unkept ones); the furthest of them bounds what it asks of its
    candidates' sets, and a node's set is read only by its predecessors (up
    to their horizons) and by the kept nodes whose candidate it is.  A set is
    dropped once its last reader is done.  So memory is the live sets times
    their windows, not N x N bits: a chain or a layered graph keeps a few
    short sets, and only edges that really span the graph make wide ones.
    """
    n_nodes = len(prog)
    work = [k is NodeKind.COMPUTE for k in prog.kind]
    kept = list(keep) if keep is not None else work
    succ: list[list[int]] = [[] for _ in range(n_nodes)]
    preds: list[list[int]] = [[] for _ in range(n_nodes)]
    for n, deps in enumerate(prog.deps):
        if work[n]:
            for p, _ in deps:
                if work[p]:
                    succ[p].append(n)
                    preds[n].append(p)
    # The furthest kept node each node reaches first (through unkept nodes).
    furthest = [-1] * n_nodes
    for u in range(n_nodes - 1, -1, -1):
        for s in succ[u]:
            furthest[u] = max(furthest[u], s if kept[s] else furthest[s])
    # Forward: each set's horizon, and when its last (lowest) reader is done.
    horizon = list(range(n_nodes))
    asked = [-1] * n_nodes  # furthest candidate of a kept node that has this one as candidate
    lowest = [n_nodes] * n_nodes  # lowest kept node that has this one as candidate
    release: list[list[int]] = [[] for _ in range(n_nodes)]
    for x in range(n_nodes):
        if not work[x]:
            continue
        last = x
        for p in preds[x]:
            horizon[x] = max(horizon[x], horizon[p])
            asked[x] = max(asked[x], furthest[p] if kept[p] else asked[p])
            lowest[x] = min(lowest[x], p if kept[p] else lowest[p])
            last = min(last, p)
        horizon[x] = max(horizon[x], asked[x])
        release[min(last, lowest[x])].append(x)
    reach: dict[int, int] = {}  # bit i: position x + i is reached (i >= 1)
    first: dict[int, int] = {}  # unkept nodes: the kept nodes reached first
    reduced: list[list[int]] = [[] for _ in range(n_nodes)]
    for u in range(n_nodes - 1, -1, -1):
        if not work[u]:
            continue
        r = f = 0
        for s in succ[u]:
            d = s - u
            r |= (reach[s] << d) | (1 << d)
            f |= (1 << d) if kept[s] else first[s] << d
        reach[u] = r & ((2 << (horizon[u] - u)) - 1)
        if not kept[u]:
            first[u] = f
        else:
            # The minimal candidates, in topological order: a candidate reached
            # from an earlier one is implied by it.
            out: list[int] = []
            while f:
                low = f & -f
                d = low.bit_length() - 1
                out.append(u + d)
                f = (f ^ low) & ~(reach[u + d] << d)
            reduced[u] = out
        for x in release[u]:
            reach.pop(x, None)
            first.pop(x, None)
    return reduced


def max_matching(num: int, adj: Sequence[Sequence[int]]) -> list[int]:
    """Hopcroft-Karp on the bipartite graph with `num` vertices a side and
    edges `u -> adj[u]`; returns, per left vertex, its right partner or -1."""
    match_l = [-1] * num
    match_r = [-1] * num
    for u in range(num):  # a greedy start saves most of the phases
        for v in adj[u]:
            if match_r[v] < 0:
                match_l[u], match_r[v] = v, u
                break
    while True:
        dist = [-1] * num
        queue = [u for u in range(num) if match_l[u] < 0]
        for u in queue:
            dist[u] = 0
        found = False
        head = 0
        while head < len(queue):
            u = queue[head]
            head += 1
            for v in adj[u]:
                w = match_r[v]
                if w < 0:
                    found = True
                elif dist[w] < 0:
                    dist[w] = dist[u] + 1
                    queue.append(w)
        if not found:
            return match_l
        cursor = [0] * num
        for root in range(num):
            if match_l[root] >= 0:
                continue
            path: list[int] = [root]
            via: list[int] = []
            while path:
                u = path[-1]
                if cursor[u] == len(adj[u]):
                    dist[u] = -1  # a dead end for the rest of this phase
                    path.pop()
                    if via:
                        via.pop()
                    continue
                v = adj[u][cursor[u]]
                cursor[u] += 1
                w = match_r[v]
                if w < 0:
                    via.append(v)
                    for x, y in zip(path, via):
                        match_l[x], match_r[y] = y, x
                    break
                if dist[w] == dist[u] + 1:
                    path.append(w)
                    via.append(v)


def path_cover(prog: Program, keep: Sequence[bool]) -> list[list[int]]:
    """Nimble's minimum path cover of the transitive reduction over the `keep`
    nodes: the paths, each in issue order, ordered by their first node."""
    return cover_paths([n for n in range(len(prog)) if keep[n]], transitive_reduction(prog, keep))


def cover_paths(nodes: Sequence[int], succ: Sequence[Sequence[int]]) -> list[list[int]]:
    """A minimum path cover of the DAG on `nodes` (program nodes, in issue order) whose
    edges are `succ[n]`, by maximum matching (`max_matching`): the paths, each in issue
    order, ordered by their first node."""
    index = {n: i for i, n in enumerate(nodes)}
    match = max_matching(len(nodes), [[index[v] for v in succ[n]] for n in nodes])
    has_pred = [False] * len(nodes)
    for v in match:
        if v >= 0:
            has_pred[v] = True
    paths: list[list[int]] = []
    for i in range(len(nodes)):
        if has_pred[i]:
            continue
        path = [nodes[i]]
        j = match[i]
        while j >= 0:
            path.append(nodes[j])
            j = match[j]
        paths.append(path)
    return paths


def _assign_nimble(req: Request) -> Assignment:
    prog, pinned, base = req.prog, req.pinned, _Streams(req)
    free = _free_compute(prog, pinned)
    paths = path_cover(prog, free)
    slots = 1 + base.budget
    group_of = [0] * len(prog)
    if len(paths) <= slots:
        for g, path in enumerate(paths):
            for n in path:
                group_of[n] = g
        return base.finish(prog, pinned, group_of, {}, "chain")
    longest = sorted(range(1, len(paths)), key=lambda i: (-len(paths[i]), i))[: slots - 1]
    kept = [0, *sorted(longest)]
    group = {p: g for g, p in enumerate(kept)}
    load = [len(paths[p]) for p in kept]
    for i, path in enumerate(paths):
        if i in group:
            g = group[i]
        else:
            producers = [p for p, _ in prog.deps[path[0]] if free[p]]
            if producers:
                g = group_of[max(producers)]
            else:
                g = min(range(len(kept)), key=lambda k: (load[k], k))
            load[g] += len(path)
        for n in path:
            group_of[n] = g
    return base.finish(prog, pinned, group_of, {}, "chain")


STRATEGIES: dict[Mode, Strategy] = {
    Mode.USER: _assign_user,
    Mode.SINGLE: _assign_single,
    Mode.GE: _assign_ge,
    Mode.ENGINE: _assign_engine,
    Mode.NIMBLE: _assign_nimble,
}
"""The modes that need no cost model; `npuir.schedule` adds the others."""

__all__ = [
    "GE_MAX_PARALLEL",
    "STRATEGIES",
    "Assignment",
    "Mode",
    "Request",
    "Strategy",
    "assign",
    "collective_chain",
    "cover_paths",
    "keep_collective_order",
    "max_matching",
    "partitioned_program",
    "path_cover",
    "pinned_tags",
    "transitive_reduction",
    "with_collective_chain",
]
