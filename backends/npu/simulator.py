"""Deterministic discrete-event simulation of lowered programs on an NPU model.

The simulator runs one `Program` per rank (the same one N times for SPMD, one
per rank for MPMD) against a `Hardware` in integer nanoseconds, in graph mode:
the host is not modelled and every op is already enqueued.  The IR is read once
into per-node arrays (`npuir.backends.npu.sim_inputs`); what a run measured is
collected in `npuir.backends.npu.sim_results`.

What runs when:

- **Streams.** Each stream runs its nodes first-in first-out in issue order.
  A `sync.record` takes `hw.event_record_ns`; a `sync.wait` blocks its stream
  until the record it is bound to has executed, then takes `hw.event_wait_ns`.
  With physical event ids a wait is bound to the latest record of its id
  issued before it (what `HappensBefore.bound_record` computes).
  `func.return` costs nothing, and so do ops GE runs without a device task
  (metadata-only views such as `npu.reshape`; `cost.runs_without_task`).
- **Cores: block dispatch.** Each rank has a pool of cube, vector and AI CPU
  cores.  This is CANN's kernel launch model (`aclrtLaunchKernelAttrValue.schemMode`,
  https://www.hiascend.com/document/detail/zh/canncommercial/82RC1/API/appdevgapi/aclcppdevg_03_1814.html):
  a kernel of `blockDim` N runs N blocks, each to completion on one core.  In
  the common mode (``schemMode = 0``) it starts as soon as *one* core is free
  and its blocks go to cores as they become free; in the batch mode
  (``schemMode = 1``) it starts only when all N cores are free at once.
  - An ordinary op is ``B = min(parallelism, core limit)`` blocks
    (`cost.parallelism`; the limit from `coreset.cores`), at most ``B`` of them
    running at once.  It starts when it heads its stream and one core of its
    engine is free; from then on, whenever cores of its pool are free and it is
    first in line, it takes as many as it has blocks left.  Its launch
    (`hw.launch_ns`) is paid once, at its start: blocks dispatched during the
    launch wait for it on their cores, later ones start at once.  One block
    runs ``duration_ns(work, B, static_hbm_share(engine, B))`` (`sim_inputs`):
    an op granted all ``B`` cores at its start takes exactly what the cost
    model gives for ``B`` cores.  The op ends with its last block.
  - A `full_core_sync` op is the batch mode: it takes free cores as they
    appear and *holds* them until it has all it asks for (its limit, or every
    core of its engine), then runs on all of them and releases them at its end.
  - An aiv-mode collective is gang-scheduled: its blocks spin until their peers
    (the other blocks and the other ranks' copies) arrive, so every block must
    be resident at once.  Its blocks go to vector cores as they free up (the
    common mode) and each holds its core from then on; once it holds all it
    asks for it waits for its group, and the ring transfer starts only when
    every member is there; all its cores are released when it ends.  (HCCL's
    AIV mode launches the collective as a vector kernel that polls flags in
    peers' memory -- an assumption about its block layout: one per vector core
    it asks for.)
  - Free cores go to the waiting requests (ops queued at the head of their
    stream, and started ops with blocks left) in order of stream priority
    (lower number first), then issue order; a hold-and-wait request that is
    accumulating keeps its place in that order, and nothing behind it gets a
    core meanwhile.
  - Mixed cube/vector kernels, which on separated-architecture chips (910B)
    launch groups of 1 AIC + 2 AIV, are not modelled: every `npu` op names one
    engine, so none is a mixed kernel.
  Blocks dispatched together end together, so they are one event: an op costs
  one event per instant at which it gains cores, not one per block.
- **Collectives.** Take ``hw.launch_ns + cost.collective_ns(...)``.  A
  collective of group size G is formed by consecutive ranks (0..G-1,
  G..2G-1, ...): the k-th collective of a communicator `group` on each of
  those ranks.  It starts on all of them at once, when every simulated member
  is at its head (and, for aiv, holds its cores).  A group that reaches past
  the ranks simulated (one rank of a G=8 program) is refused unless the caller
  asks for ``mirror_peers``: then its missing members are taken to be
  identical and to arrive at the same moment (`npuir.backends.npu.groups`).
- **Races.** Independently of `sync-verify`, every node's producers
  (`Program.deps`) must have finished when it starts; a violation is a
  `Race`.  The run goes on as the hardware would.
- **Deadlock.** When nothing can progress but work remains, the run stops and
  `SimResult.deadlock` names every blocked op, what it holds, what it waits
  for, and the wait-for cycle.  The event loop ends when no event is pending,
  so the simulator never hangs.

Also measured: per-stream busy time, per-engine utilisation, the critical
path (which follows core contention as well as streams, data and events),
events used, and peak live memory.

Speed: per-node work (engine, `OpWork`, blocks and their duration, core
request, collective key, bound record) is read from the IR once per program,
shared between ops of the same signature and, through a `SimCache`, between
calls; the event loop then touches only integer arrays and heaps
(`bench/sim_throughput.py` measures it).

    progs = [build_program(func, module_streams(module))]
    result = simulate(progs, PRESETS["tiny"])
    result.makespan_ns, result.races, result.deadlock
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from npuir.analysis.program import DepKind, Program
from npuir.backends.npu.hardware import Hardware
from npuir.dialects.npu import CollectiveOp
from npuir.gc_pause import collector_paused

from .cost import OpWork
from .groups import mismatched_pairs, partial_groups
from .profile import Profile
from .sim_inputs import (
    _COMPUTE,
    _NPOOLS,
    _RECORD,
    _WAIT,
    POOL_ENGINES,
    CoreLimitFn,
    NodeCosts,
    SimCache,
    UnloweredScopes,
    _Prepared,
    _task_ns,
    coreset_limit,
    refuse_unlowered_scopes,
)
from .sim_results import (
    BlockedOp,
    Deadlock,
    OpRecord,
    Race,
    SimResult,
    collect,
    critical_path,
    last_to_end,
)

__all__ = [
    "POOL_ENGINES",
    "BlockedOp",
    "CoreLimitFn",
    "Deadlock",
    "NodeCosts",
    "OpRecord",
    "Race",
    "SimCache",
    "SimResult",
    "Span",
    "UnloweredScopes",
    "coreset_limit",
    "simulate",
    "simulate_span",
]

# Stream states.
_IDLE = 0  # the head node has not been looked at since the stream became free
_RUNNING = 1  # the head node is executing
_WAIT_EVENT = 2  # the head is a wait whose record has not executed
_WAIT_CORES = 3  # the head is queued for cores (possibly holding some)
_WAIT_PEERS = 4  # the head is a collective waiting for its group
_DONE = 5  # every node of the stream has run


# ---------------------------------------------------------------------------------------------
# The event loop
# ---------------------------------------------------------------------------------------------


class _Simulation:
    def __init__(
        self,
        preps: list[_Prepared],
        hw: Hardware,
        works: list[OpWork],
        record_steps: bool = True,
    ) -> None:
        self.preps = preps
        self.record_steps = record_steps
        """Whether to keep each ordinary op's core steps (`OpRecord.core_steps`)."""
        self.hw = hw
        self.works = works
        self.ranks = len(preps)
        self.base: list[int] = []
        self.sbase: list[int] = []
        total = 0
        streams = 0
        self.g_rank: list[int] = []
        self.s_nodes: list[list[int]] = []
        self.s_rank: list[int] = []
        self.s_prio: list[int] = []
        for r, prep in enumerate(preps):
            self.base.append(total)
            self.sbase.append(streams)
            total += len(prep.kind)
            streams += prep.num_streams
            self.g_rank.extend([r] * len(prep.kind))
            self.s_nodes.extend(prep.stream_nodes)
            self.s_rank.extend([r] * prep.num_streams)
            self.s_prio.extend(prep.priority)
        self.total = total
        self.start = [-1] * total
        self.end = [-1] * total
        self.cores = [0] * total
        """Cores each node holds now (blocks in flight, for an ordinary op)."""
        self.held_from = [-1] * total
        self.peak = [0] * total
        """The most cores each node held at once."""
        self.busy = [0] * total
        """Core-nanoseconds each node held while running."""
        self.pending = [0] * total
        """Blocks of a started ordinary op not yet dispatched."""
        self.ready = [0] * total
        """When a started ordinary op's launch is over and its blocks compute."""
        self.steps: dict[int, list[tuple[int, int]]] = {}
        """Per ordinary op that ran: (time, cores held from then on)."""
        self.s_ptr = [0] * streams
        self.s_state = [_IDLE] * streams
        self.free = [hw.cores(e) for _ in preps for e in POOL_ENGINES]
        self.reqs: list[list[tuple[int, int]]] = [[] for _ in range(len(self.free))]
        self.waiters: dict[int, list[int]] = {}
        self.arrived: dict[tuple[str, int, int, int], list[int]] = {}
        self.group_of: dict[int, list[int]] = {}
        # Completions: (time, code); code g is node g's end, code g + k * total the end of
        # k blocks of ordinary op g (they were dispatched together, so end together).
        self.heap: list[tuple[int, int]] = []
        self.now = 0
        self.finished = 0
        self.races: list[Race] = []
        self.dirty_streams: list[int] = list(range(streams))
        self.dirty_pools: list[int] = []
        self.memo: dict[int, int] = {}
        # The node whose finish last returned cores to each pool, and for each node granted
        # cores at that instant, that node: the critical path follows core contention too.
        self.last_release = [-1] * len(self.free)
        self.core_pred: dict[int, int] = {}

    # -- running ------------------------------------------------------------------------------

    def run(self) -> None:
        heap = self.heap
        pop = heapq.heappop
        advance, grant, finish, release = self._advance, self._grant, self._finish, self._release
        total = self.total
        # The order in which dirty streams and pools are visited does not change the outcome
        # (requests queue by priority and issue order, completions by time and node), and
        # visiting one twice is harmless, so plain lists do.
        while True:
            while self.dirty_streams or self.dirty_pools:
                streams, self.dirty_streams = self.dirty_streams, []
                for gs in streams:
                    advance(gs)
                pools, self.dirty_pools = self.dirty_pools, []
                for gp in pools:
                    grant(gp)
            if not heap:
                return
            t = heap[0][0]
            self.now = t
            while heap and heap[0][0] == t:
                code = pop(heap)[1]
                if code < total:
                    finish(code)
                else:
                    release(code % total, code // total)

    def _advance(self, gs: int) -> None:
        state = self.s_state[gs]
        if state != _IDLE and state != _WAIT_EVENT:
            return
        nodes = self.s_nodes[gs]
        ptr = self.s_ptr[gs]
        if ptr == len(nodes):
            self.s_state[gs] = _DONE
            return
        r = self.s_rank[gs]
        prep = self.preps[r]
        n = nodes[ptr]
        g = self.base[r] + n
        kind = prep.kind[n]
        if kind == _COMPUTE:
            pool = prep.pool[n]
            if pool >= 0:
                gp = r * _NPOOLS + pool
                heapq.heappush(self.reqs[gp], (self.s_prio[gs], n))
                self.s_state[gs] = _WAIT_CORES
                self.dirty_pools.append(gp)
            elif prep.coll[n] is not None:
                self.s_state[gs] = _WAIT_PEERS
                self._arrive(r, n, g)
            else:
                self._start(r, n, g)
        elif kind == _WAIT:
            record = self.base[r] + prep.bound[n]
            rec_end = self.end[record]
            if 0 <= rec_end <= self.now:
                self._start(r, n, g)
            elif state == _IDLE:
                self.s_state[gs] = _WAIT_EVENT
                self.waiters.setdefault(record, []).append(gs)
        else:
            self._start(r, n, g)

    def _grant(self, gp: int) -> None:
        heap = self.reqs[gp]
        free = self.free[gp]
        if not free or not heap:
            return
        r = gp // _NPOOLS
        prep = self.preps[r]
        base = self.base[r]
        cores = self.cores
        releaser = self.last_release[gp]
        if releaser >= 0 and self.end[releaser] != self.now:
            releaser = -1
        while free and heap:
            n = heap[0][1]
            g = base + n
            want = prep.want[n]
            if prep.accum[n]:
                have = cores[g]
                if not have:
                    self.held_from[g] = self.now
                take = min(want - have, free)
                free -= take
                have += take
                cores[g] = have
                if have < want:
                    break
                heapq.heappop(heap)
                if releaser >= 0:
                    self.core_pred[g] = releaser
                if prep.coll[n] is not None:
                    self.s_state[self.sbase[r] + prep.stream[n]] = _WAIT_PEERS
                    self.free[gp] = free
                    self._arrive(r, n, g)
                else:
                    self._start(r, n, g)
            else:
                now = self.now
                if self.start[g] < 0:
                    # The first free core starts the op (CANN's common scheduling mode).
                    self.start[g] = self.held_from[g] = now
                    self.pending[g] = prep.blocks[n]
                    self.ready[g] = now + prep.launch[n]
                    self.s_state[self.sbase[r] + prep.stream[n]] = _RUNNING
                    if releaser >= 0:
                        self.core_pred[g] = releaser
                held = cores[g]
                pending = self.pending[g]
                take = min(pending, free, want - held)
                free -= take
                pending -= take
                held += take
                self.pending[g] = pending
                cores[g] = held
                if held > self.peak[g]:
                    self.peak[g] = held
                ready = self.ready[g]
                end = (ready if ready > now else now) + prep.block_ns[n]
                self.busy[g] += take * (end - now)
                heapq.heappush(self.heap, (end, g + take * self.total))
                if self.record_steps:
                    self._step(g, held)
                if not pending or held == want:
                    heapq.heappop(heap)
        self.free[gp] = free

    def _step(self, g: int, held: int) -> None:
        """Ordinary op g holds `held` cores from now on."""
        steps = self.steps.get(g)
        if steps is None:
            self.steps[g] = [(self.now, held)]
        elif steps[-1][0] == self.now:
            steps[-1] = (self.now, held)
        else:
            steps.append((self.now, held))

    def _release(self, g: int, k: int) -> None:
        """k blocks of ordinary op g end now: their cores go back to the pool, and the op
        queues for more if blocks remain, or ends with its last block."""
        r = self.g_rank[g]
        n = g - self.base[r]
        prep = self.preps[r]
        gp = r * _NPOOLS + prep.pool[n]
        held = self.cores[g] - k
        self.cores[g] = held
        self.free[gp] += k
        self.dirty_pools.append(gp)
        self.last_release[gp] = g
        if self.record_steps:
            self._step(g, held)
        if self.pending[g]:
            if held + k == prep.want[n]:  # it had left the queue at its cap
                heapq.heappush(self.reqs[gp], (self.s_prio[self.sbase[r] + prep.stream[n]], n))
        elif not held:
            self.end[g] = self.now
            self._finish(g)

    def _arrive(self, r: int, n: int, g: int) -> None:
        coll = self.preps[r].coll[n]
        assert coll is not None
        group, size, k = coll
        first = (r // size) * size
        members = min(first + size, self.ranks) - first
        key = (group, size, first, k)
        arrived = self.arrived.setdefault(key, [])
        arrived.append(g)
        if len(arrived) == members:
            del self.arrived[key]
            for member in arrived:
                self.group_of[member] = arrived
                mr = self.g_rank[member]
                self._start(mr, member - self.base[mr], member)

    def _start(self, r: int, n: int, g: int) -> None:
        prep = self.preps[r]
        now = self.now
        held = self.cores[g]
        dur = _task_ns(prep, n, held, self.hw, self.works, self.memo)
        self.start[g] = now
        end = now + dur
        self.end[g] = end
        if held:
            self.peak[g] = held
            self.busy[g] = held * dur
        self.s_state[self.sbase[r] + prep.stream[n]] = _RUNNING
        heapq.heappush(self.heap, (end, g))

    def _finish(self, g: int) -> None:
        r = self.g_rank[g]
        n = g - self.base[r]
        prep = self.preps[r]
        gs = self.sbase[r] + prep.stream[n]
        self.s_state[gs] = _IDLE
        self.s_ptr[gs] += 1
        self.dirty_streams.append(gs)
        self.finished += 1
        held = self.cores[g]
        if held:
            gp = r * _NPOOLS + prep.pool[n]
            self.free[gp] += held
            self.dirty_pools.append(gp)
            self.last_release[gp] = g
        if prep.kind[n] == _RECORD:
            woken = self.waiters.pop(g, None)
            if woken:
                self.dirty_streams.extend(woken)

    def find_races(self) -> None:
        """Every node that started before one of its producers had finished.

        Checked once the run is over, from the start and end times: the same test as at each
        start, but independent of the order in which nodes starting at one instant are
        processed.
        """
        start, end = self.start, self.end
        for r, prep in enumerate(self.preps):
            base = self.base[r]
            for n, deps in enumerate(prep.deps):
                t = start[base + n]
                if t < 0 or not deps:
                    continue
                for i, p in enumerate(deps):
                    pe = end[base + p] if start[base + p] >= 0 else -1
                    if pe < 0 or pe > t:
                        self._race(r, n, p, prep.prog.deps[n][i][1], t, pe)

    def _race(self, r: int, n: int, p: int, kind: DepKind, now: int, producer_end: int) -> None:
        prog = self.preps[r].prog
        how = "uses the result of" if kind is DepKind.DATA else "must wait for"
        when = "had not started" if producer_end < 0 else f"finishes at {producer_end} ns"
        message = (
            f"race on rank {r}: {prog.describe(n)} on stream "
            f"{prog.stream_name(prog.stream[n])} starts at {now} ns and {how} "
            f"{prog.describe(p)} on stream {prog.stream_name(prog.stream[p])}, which {when}"
        )
        self.races.append(
            Race(r, n, p, kind, now, None if producer_end < 0 else producer_end, message)
        )

    # -- deadlock -----------------------------------------------------------------------------

    def deadlock(self) -> Deadlock:
        heads: dict[tuple[int, int], int] = {}  # (rank, node) -> global stream
        for gs, state in enumerate(self.s_state):
            if state != _DONE and self.s_ptr[gs] < len(self.s_nodes[gs]):
                r = self.s_rank[gs]
                heads[(r, self.s_nodes[gs][self.s_ptr[gs]])] = gs

        holders: dict[int, list[tuple[int, int, int]]] = {}
        for (r, n), _ in sorted(heads.items()):
            prep = self.preps[r]
            held = self.cores[self.base[r] + n]
            if held and prep.pool[n] >= 0:
                holders.setdefault(r * _NPOOLS + prep.pool[n], []).append((r, n, held))

        blocked: list[BlockedOp] = []
        for (r, n), gs in sorted(heads.items()):
            state = self.s_state[gs]
            if state == _WAIT_CORES or (state == _RUNNING and self.preps[r].blocks[n]):
                # A started ordinary op here has blocks left and no core to run them on.
                blocked.append(self._blocked_on_cores(r, n, holders))
                g = self.base[r] + n
                if self.start[g] >= 0:
                    self.end[g] = self.now
            elif state == _WAIT_EVENT:
                blocked.append(self._blocked_on_event(r, n))
            else:
                blocked.append(self._blocked_on_peers(r, n))
        return Deadlock(self.now, tuple(blocked), _find_cycle(blocked))

    def _head_of(self, r: int, s: int) -> tuple[int, int] | None:
        gs = self.sbase[r] + s
        ptr = self.s_ptr[gs]
        nodes = self.s_nodes[gs]
        return (r, nodes[ptr]) if ptr < len(nodes) else None

    def _blocked(
        self,
        r: int,
        n: int,
        reason: str,
        detail: str,
        *,
        holds: int = 0,
        held_from: int = -1,
        wants: int = 0,
        pool: str = "",
        core_holders: tuple[tuple[int, int, int], ...] = (),
        record: int | None = None,
        missing_peers: tuple[int, ...] = (),
        blocked_by: tuple[tuple[int, int], ...] = (),
    ) -> BlockedOp:
        prep = self.preps[r]
        s = prep.stream[n]
        return BlockedOp(
            rank=r,
            node=n,
            stream=s,
            op=prep.prog.describe(n),
            stream_name=prep.prog.stream_name(s),
            reason=reason,
            holds=holds,
            held_from=held_from,
            wants=wants,
            pool=pool,
            core_holders=core_holders,
            record=record,
            missing_peers=missing_peers,
            blocked_by=blocked_by,
            detail=detail,
        )

    def _blocked_on_cores(
        self, r: int, n: int, holders: dict[int, list[tuple[int, int, int]]]
    ) -> BlockedOp:
        prep = self.preps[r]
        held = self.cores[self.base[r] + n]
        pool = POOL_ENGINES[prep.pool[n]]
        others = tuple(
            h for h in holders.get(r * _NPOOLS + prep.pool[n], []) if (h[0], h[1]) != (r, n)
        )
        need = prep.want[n] - held if prep.accum[n] else 1
        who = ", ".join(f"{self._name(hr, hn)} ({hc} cores)" for hr, hn, hc in others)
        g = self.base[r] + n
        blocks = prep.blocks[n]
        started = (
            f"has run {blocks - self.pending[g]} of its {blocks} blocks and "
            if blocks and self.start[g] >= 0
            else ""
        )
        detail = (
            started
            + (f"holds {held} and " if held else "")
            + f"waits for {need} more of the {self.hw.cores(pool)} {pool} cores"
            + (f", held by {who}" if who else "")
        )
        return self._blocked(
            r,
            n,
            "cores",
            detail,
            holds=held,
            held_from=self.held_from[self.base[r] + n] if held else -1,
            wants=prep.want[n],
            pool=pool,
            core_holders=others,
            blocked_by=tuple((hr, hn) for hr, hn, _ in others),
        )

    def _blocked_on_event(self, r: int, n: int) -> BlockedOp:
        prep = self.preps[r]
        prog = prep.prog
        record = prep.bound[n]
        rs = prep.stream[record]
        head = self._head_of(r, rs)
        detail = f"waits for {prog.describe(record)} on stream {prog.stream_name(rs)}" + (
            f", which is queued behind {self._name(*head)}" if head else ""
        )
        return self._blocked(
            r, n, "event", detail, record=record, blocked_by=(head,) if head else ()
        )

    def _blocked_on_peers(self, r: int, n: int) -> BlockedOp:
        prep = self.preps[r]
        coll = prep.coll[n]
        assert coll is not None
        group, size, k = coll
        first = (r // size) * size
        present = {self.g_rank[m] for m in self.arrived.get((group, size, first, k), [])}
        missing = tuple(p for p in range(first, min(first + size, self.ranks)) if p not in present)
        edges: list[tuple[int, int]] = []
        notes: list[str] = []
        for p in missing:
            peer = self.preps[p].coll_by_key.get((group, k))
            if peer is None:
                notes.append(f"rank {p} never issues it")
                continue
            head = self._head_of(p, self.preps[p].stream[peer])
            if head is None:
                continue
            edges.append(head)
            if head == (p, peer):
                notes.append(f"rank {p}'s copy is blocked itself")
            else:
                notes.append(f"rank {p}'s copy is queued behind {self._name(*head)}")
        held = self.cores[self.base[r] + n]
        pool = POOL_ENGINES[prep.pool[n]] if prep.pool[n] >= 0 else ""
        detail = (
            (f"holds {held} {pool} cores and " if held else "")
            + f"waits for collective #{k} of group '{group}' on rank(s) "
            + ", ".join(map(str, missing))
            + (f" ({'; '.join(notes)})" if notes else "")
        )
        return self._blocked(
            r,
            n,
            "peers",
            detail,
            holds=held,
            held_from=self.held_from[self.base[r] + n] if held else -1,
            wants=prep.want[n],
            pool=pool,
            missing_peers=missing,
            blocked_by=tuple(edges),
        )

    def _name(self, r: int, n: int) -> str:
        prog = self.preps[r].prog
        return f"{prog.describe(n)} on rank {r} stream {prog.stream_name(prog.stream[n])}"


def _find_cycle(blocked: Sequence[BlockedOp]) -> tuple[tuple[int, int], ...]:
    """The first cycle a depth-first search of the wait-for graph meets, in key order."""
    edges = {(b.rank, b.node): [e for e in b.blocked_by] for b in blocked}
    color: dict[tuple[int, int], int] = {}
    for root in sorted(edges):
        if color.get(root):
            continue
        path: list[tuple[int, int]] = [root]
        iters = [iter(edges[root])]
        color[root] = 1
        while iters:
            nxt = next(iters[-1], None)
            if nxt is None:
                color[path.pop()] = 2
                iters.pop()
                continue
            if nxt not in edges:
                continue
            c = color.get(nxt, 0)
            if c == 1:
                return tuple(path[path.index(nxt) :])
            if c == 0:
                color[nxt] = 1
                path.append(nxt)
                iters.append(iter(edges[nxt]))
    return ()


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------


def simulate(
    programs: Sequence[Program],
    hw: Hardware,
    *,
    limits: CoreLimitFn | None = None,
    cache: SimCache | None = None,
    mirror_peers: bool = False,
    profile: Profile | None = None,
) -> SimResult:
    """Run `programs` (one per rank) on `hw` and measure what happens.

    SPMD: pass the same `Program` once per rank (its per-node work is computed once).
    `limits(program, node, engine)` gives each op's core limit; the default reads the
    `coreset.cores` attribute `coreset-lower` writes, unlimited where absent.  `cache` keeps
    what was read from the IR for later calls (see `SimCache`).  `mirror_peers` lets a
    collective whose group reaches past `programs` run as if the missing ranks were copies
    of the ones present (a planner looking at one rank of an SPMD program wants that).
    `profile` replaces the cost model's durations and core demands for the ops it covers
    (see `npuir.backends.npu.profile`); `SimResult.profiled_ops` says how many.

    Raises `ValueError` if `programs` is empty, a node has no stream (not lowered), two
    ranks' collectives that pair up differ (`groups.mismatched_pairs`), a group is partial
    without `mirror_peers` (see `npuir.backends.npu.groups`), or
    `cache` was made for another device; `UnloweredScopes` when `limits` is the default
    but an op still stands in a `coreset.limit` or `stream.switch` scope (its limit would be
    ignored: run `coreset-lower`, or pass `limits=npuir.analysis.core_limits.limit_fn(...)`,
    which resolves scopes).  A deadlock is not an exception: it is
    `SimResult.deadlock`.
    """
    # The run allocates many small objects and frees none of them in cycles; a collection
    # would walk the whole IR each time, so the collector is paused for the run.
    with collector_paused():
        sim, prepared = _run(programs, hw, limits, cache, mirror_peers, profile, True)
        sim.find_races()
        deadlock = sim.deadlock() if sim.finished < sim.total else None
        result = collect(sim, deadlock)
        result.compute_ops = sum(p.compute_ops for p in prepared)
        result.profiled_ops = sum(p.profiled for p in prepared)
        return result


@dataclass(frozen=True)
class Span:
    """What a search judges a schedule by (`simulate_span`)."""

    makespan_ns: int
    """As `SimResult.makespan_ns` when the run finishes; when it deadlocks, the latest end
    of an op that ran (`SimResult` takes the later of that and the deadlock's time)."""
    deadlocked: bool
    critical_path: list[tuple[int, int]]
    """As `SimResult.critical_path`."""


def simulate_span(
    programs: Sequence[Program],
    hw: Hardware,
    *,
    limits: CoreLimitFn | None = None,
    cache: SimCache | None = None,
    mirror_peers: bool = False,
    profile: Profile | None = None,
) -> Span:
    """The same run as `simulate` (same arguments, same errors), measured only for its
    makespan, whether it deadlocks, and its critical path: no races, memory, utilisation,
    events or deadlock report, which a search judging thousands of schedules does not
    read."""
    with collector_paused():
        sim, _ = _run(programs, hw, limits, cache, mirror_peers, profile, False)
        makespan, last = last_to_end(sim)
        return Span(makespan, sim.finished < sim.total, critical_path(sim, last))


def _run(
    programs: Sequence[Program],
    hw: Hardware,
    limits: CoreLimitFn | None,
    cache: SimCache | None,
    mirror_peers: bool,
    profile: Profile | None,
    memory: bool,
) -> tuple[_Simulation, list[_Prepared]]:
    """Check `programs`, read them (once per distinct program; what memory needs only
    with `memory`, which also keeps the ops' core steps) and run them; the finished (or
    stuck) simulation and the distinct programs' inputs."""
    if not programs:
        raise ValueError("simulate needs at least one program (one per rank)")
    if cache is None:
        cache = SimCache(hw)
    elif cache.hw is not hw and cache.hw != hw:
        raise ValueError(f"the SimCache was made for {cache.hw.name}, not {hw.name}")
    # One rank has no peer to differ from, and with `mirror_peers` no group is partial: a
    # search judging one rank's schedules skips reading the collectives.
    if len(programs) > 1 or not mirror_peers:
        per_rank = [[op for op in prog.ops if isinstance(op, CollectiveOp)] for prog in programs]
        mismatched = mismatched_pairs(per_rank, len(programs))
        if mismatched:
            raise ValueError(mismatched[0].describe())
        if not mirror_peers:
            partial = partial_groups(per_rank, len(programs))
            if partial:
                raise ValueError(
                    partial[0].describe() + "; simulate every rank, or pass mirror_peers=True"
                )
    if limits is None:
        for prog in {id(p): p for p in programs}.values():
            refuse_unlowered_scopes(prog)
    limit_fn = limits if limits is not None else coreset_limit
    prepared: dict[int, _Prepared] = {}
    preps: list[_Prepared] = []
    for prog in programs:
        prep = prepared.get(id(prog))
        if prep is None:
            prep = prepared[id(prog)] = _Prepared(prog, hw, limit_fn, cache, profile, memory)
        preps.append(prep)
    sim = _Simulation(preps, hw, list(cache.works), memory)
    sim.run()
    return sim, list(prepared.values())
