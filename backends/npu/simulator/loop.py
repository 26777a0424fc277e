"""The event loop: a `Simulation` runs prepared programs to their end or to a deadlock.

The rules it applies are described in the package docstring (`npuir.backends.npu.simulator`);
every cost it charges was read by `inputs` from `npuir.backends.npu.timing`.  Once the loop
stops, `find_races` and `deadlock` report what went wrong and `measure` reads the rest.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Sequence

from npuir.analysis.program import DepKind
from npuir.backends.npu.hardware import Hardware

from ..cost import OpWork
from .inputs import COMPUTE, NPOOLS, POOL_ENGINES, RECORD, WAIT, Prepared, granted_ns
from .results import BlockedOp, Deadlock, Race

__all__ = ["Simulation"]

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


class Simulation:
    """The state of one run over `preps` (one per rank): per-node times and core holdings
    by global node id (rank base plus node), per-stream positions, per-pool free cores and
    request queues, and the heap of pending completions."""

    def __init__(
        self,
        preps: list[Prepared],
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
        # Times and core-ns as machine words (8 bytes a node, not a pointer and an int
        # object); the small counts below stay lists (their ints are Python's cached ones).
        self.start = array("q", [-1]) * total
        self.end = array("q", [-1]) * total
        self.cores = [0] * total
        """Cores each node holds now (blocks in flight, for an ordinary op)."""
        self.held_from = array("q", [-1]) * total
        self.peak = [0] * total
        """The most cores each node held at once."""
        self.busy = array("q", [0]) * total
        """Core-nanoseconds each node held while running."""
        self.pending = [0] * total
        """Blocks of a started ordinary op not yet dispatched."""
        self.ready = array("q", [0]) * total
        """When a started ordinary op's launch is over and its blocks compute."""
        # Per ordinary op that ran, its (time, cores held from then on) steps: a linked list
        # per node in flat arrays (`steps_of`), a few words per step rather than a list of
        # tuples per node.
        self.first_step = array("q", [-1]) * total
        self.last_step = array("q", [-1]) * total
        self.step_time = array("q")
        self.step_held = array("q")
        self.step_next = array("q")
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
        self.core_pred = array("q", [-1]) * total

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
        if kind == COMPUTE:
            pool = prep.pool[n]
            if pool >= 0:
                gp = r * NPOOLS + pool
                heapq.heappush(self.reqs[gp], (self.s_prio[gs], n))
                self.s_state[gs] = _WAIT_CORES
                self.dirty_pools.append(gp)
            elif prep.coll[n] is not None:
                self.s_state[gs] = _WAIT_PEERS
                self._arrive(r, n, g)
            else:
                self._start(r, n, g)
        elif kind == WAIT:
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
        r = gp // NPOOLS
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
        last = self.last_step[g]
        now = self.now
        if last >= 0 and self.step_time[last] == now:
            self.step_held[last] = held
            return
        step = len(self.step_time)
        self.step_time.append(now)
        self.step_held.append(held)
        self.step_next.append(-1)
        if last >= 0:
            self.step_next[last] = step
        else:
            self.first_step[g] = step
        self.last_step[g] = step

    def steps_of(self, g: int) -> tuple[tuple[int, int], ...] | None:
        """Node g's core steps in time order; None if none were recorded."""
        step = self.first_step[g]
        if step < 0:
            return None
        out: list[tuple[int, int]] = []
        while step >= 0:
            out.append((self.step_time[step], self.step_held[step]))
            step = self.step_next[step]
        return tuple(out)

    def _release(self, g: int, k: int) -> None:
        """k blocks of ordinary op g end now: their cores go back to the pool, and the op
        queues for more if blocks remain, or ends with its last block."""
        r = self.g_rank[g]
        n = g - self.base[r]
        prep = self.preps[r]
        gp = r * NPOOLS + prep.pool[n]
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
        dur = granted_ns(prep, n, held, self.hw, self.works, self.memo)
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
            gp = r * NPOOLS + prep.pool[n]
            self.free[gp] += held
            self.dirty_pools.append(gp)
            self.last_release[gp] = g
        if prep.kind[n] == RECORD:
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
                holders.setdefault(r * NPOOLS + prep.pool[n], []).append((r, n, held))

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
            h for h in holders.get(r * NPOOLS + prep.pool[n], []) if (h[0], h[1]) != (r, n)
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
