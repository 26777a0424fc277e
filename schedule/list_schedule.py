"""Resource-aware list scheduling: one function's ops timed on the device's core pools,
then laid out on FIFO streams.

A candidate of `stream-partition{mode=auto}` (`npuir.schedule.auto`).  The other
candidates decide streams first and let the simulator find out what the cores make of
them; this one decides *when* each op runs, with the cores in view, and derives streams
and the issue order from that.  It is an event-driven list schedule that charges what
the simulator charges (`npuir.backends.npu.simulator.NodeCosts`: the same core
requests, durations and launch overhead) and follows its rules:

- **Cores.**  Each engine with cores (cube, vector, AI CPU) is a pool.  The plan times
  an op started with ``c`` of the cores it wants as if it kept those ``c`` for its whole
  run (`NodeCosts.duration_ns`: its blocks in waves of ``c``).  The simulator lets a
  started op's blocks spread onto cores as they free up, so this is pessimistic for an op
  started on a fragment, and the times of the plan are an estimate; `auto` judges every
  candidate by simulating it.  So an op whose cores are partly held does not always start
  on what is free: it starts now only if that estimate finishes no later than waiting for
  the holders to release all it wants.  A
  hold-and-wait op (`full_core_sync`, aiv collectives) starts only when all it wants is
  free.  sdma collectives hold no cores.
- **Choice.**  Whenever cores are freed or an op becomes ready, the ready ops of each
  pool are started in `priority` order (higher first; ties: the earlier op) while
  cores last; the first op that declines a fragment keeps the pool for itself.
- **Streams.**  An op goes to a stream where it could start at that moment: a stream
  is free once its last op has ended, and a producer on another stream costs an event
  (its record, then a wait on the consumer's stream, one wait per producing stream).
  The simulator starts an op as soon as it heads its stream and one core is free, so a
  stream where the op would be ready while its pool still had cores left over (cores
  the plan gave it no part of) is taken only when no other stream will ever do; when
  only a busy stream will do, the op waits for it, and with `keep_pool` no other op of
  its pool starts meanwhile.  Of the streams that do, it takes the one with the fewest
  waits, then the one freed last, then the lowest index; a new stream is opened while
  the cap allows.  Pinned ops go to their tag's stream.
- **Order.**  The issue order is the start order (topological, since an op starts after
  its producers end), the return last; a stream runs its ops in that order, as planned.

Cost: each op starts and ends once; at every start or end the head of each pool's queue
is looked at, against every stream (at most `STREAM_CAP`), and a fragment test walks the
pool's running ops (at most its core count); an op waiting for a stream is looked at
again when that stream can take it.  O(N log N) for a fixed cap on the graphs measured
(`bench/scale.py`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from npuir.analysis.partition import Assignment
from npuir.analysis.program import DEFAULT_STREAM, NodeKind, Program, StreamInfo
from npuir.backends.npu import timing
from npuir.backends.npu.hardware import Hardware
from npuir.backends.npu.simulator import POOL_ENGINES, NodeCosts
from npuir.dialects.stream import MAIN_TAG

__all__ = ["STREAM_CAP", "TimedSchedule", "fresh_tag", "list_schedule", "upward_ranks"]

STREAM_CAP = 16
"""The most streams the list schedule opens (fewer when `max-streams` says so): each op
looks at every open stream, so the cap keeps a 100k-op graph linear."""

_NO_POOL = len(POOL_ENGINES)


@dataclass
class TimedSchedule:
    """A list schedule: streams and issue order, and the times it planned."""

    assignment: Assignment
    """Streams per node, `order` the start order (the return last)."""
    start: list[int]
    end: list[int]
    cores: list[int]
    """Cores each op was planned to get (0 for ops without a pool)."""

    @property
    def makespan(self) -> int:
        return max(self.end, default=0)


def upward_ranks(prog: Program, duration: Callable[[int], int]) -> list[int]:
    """Per node, the longest `duration`-weighted path from it to the end (itself included):
    HEFT's upward rank."""
    users = prog.users()
    rank = [0] * len(prog)
    for n in reversed(range(len(prog))):
        rank[n] = duration(n) + max((rank[u] for u in users[n]), default=0)
    return rank


def fresh_tag(number: int, taken: Collection[str], prefix: str = "auto") -> str:
    """`<prefix><number>`, lengthened until it is not in `taken` (a user's tag is never
    reused for a stream a mode makes)."""
    tag = f"{prefix}{number}"
    while tag in taken:
        tag += "_"
    return tag


class _Planner:
    """One run of the list schedule: the plan's state as time advances."""

    def __init__(
        self,
        prog: Program,
        costs: NodeCosts,
        pinned: Sequence[str | None],
        priorities: dict[str, int],
        max_streams: int,
        hw: Hardware,
        reserved: Collection[str],
        keep_pool: bool,
    ) -> None:
        self.prog = prog
        self.keep_pool = keep_pool
        self.costs = costs
        self.hw = hw
        self.cap = max(1, min(max_streams, STREAM_CAP))
        self.reserved = reserved
        self.streams = [StreamInfo("s0", MAIN_TAG, priorities.get(MAIN_TAG, 0))]
        self.by_tag = {MAIN_TAG: 0}
        self.pinned_stream: list[int] = [-1] * len(prog)
        for n, tag in enumerate(pinned):
            if tag is None:
                continue
            if tag not in self.by_tag:
                self.by_tag[tag] = len(self.streams)
                symbol = f"s{len(self.streams)}"
                self.streams.append(StreamInfo(symbol, tag, priorities.get(tag, 0)))
            self.pinned_stream[n] = self.by_tag[tag]
        self.cap = max(self.cap, len(self.streams))
        self.stream_free = [0] * len(self.streams)
        self.stream_last = [-1] * len(self.streams)
        self.start = [-1] * len(prog)
        self.end = [-1] * len(prog)
        self.cores = [0] * len(prog)
        self.stream_of = [DEFAULT_STREAM] * len(prog)
        self.recorded = [False] * len(prog)
        self.free = [hw.cores(e) for e in POOL_ENGINES]
        self.running: list[list[tuple[int, int]]] = [[] for _ in POOL_ENGINES]
        self.order: list[int] = []

    # -- streams ----------------------------------------------------------------------------

    def _ready_on(self, n: int, s: int, free_at: int) -> tuple[int, int]:
        """When `n` could start on stream `s`, free from `free_at` (its waits done), and
        how many waits it needs there."""
        hw = self.hw
        stream_of, end = self.stream_of, self.end
        latest: dict[int, int] = {}
        for p, _ in self.prog.deps[n]:
            t = stream_of[p]
            if t != s and end[p] > latest.get(t, -1):
                latest[t] = end[p]
        ready = free_at
        for released in sorted(latest.values()):
            ready = timing.wait_end(hw, ready, timing.record_end(hw, released))
        return ready, len(latest)

    def stream_for(self, n: int, now: int, not_before: int) -> tuple[int, int, bool]:
        """The stream `n` takes if it starts at `now` (see the module docstring), or
        (-1, t, early) when no stream can take it before `t`; `early` says that some
        stream could take it now but for `not_before`.

        A stream where `n` would be ready before `not_before` is taken only when no other
        is ever ready: the simulator would start `n` there as soon as it is ready, on
        cores its pool had free before `not_before` that the plan did not give it."""
        options: Sequence[int]
        if self.pinned_stream[n] >= 0:
            options = (self.pinned_stream[n],)
        else:
            options = range(len(self.streams) + (len(self.streams) < self.cap))
        best: tuple[int, int, int] | None = None
        early: tuple[int, int, int] | None = None
        earliest = -1
        for s in options:
            free_at = self.stream_free[s] if s < len(self.streams) else 0
            ready, waits = self._ready_on(n, s, free_at)
            if ready > now:
                earliest = ready if earliest < 0 else min(earliest, ready)
                continue
            key = (waits, -free_at, s)
            if ready < not_before:
                if early is None or key < early:
                    early = key
            elif best is None or key < best:
                best = key
        if best is not None:
            return best[2], now, False
        if earliest >= 0:
            return -1, earliest, early is not None
        assert early is not None
        return early[2], now, False

    def _open(self, s: int) -> None:
        if s == len(self.streams):
            tag = fresh_tag(s, set(self.by_tag) | set(self.reserved))
            self.by_tag[tag] = s
            self.streams.append(StreamInfo(f"s{s}", tag, 0))
            self.stream_free.append(0)
            self.stream_last.append(-1)

    # -- cores ------------------------------------------------------------------------------

    def takes_fragment(self, n: int, pool: int, now: int) -> bool:
        """Whether `n` finishes no later on the free cores of `pool` now than on all it
        wants once enough holders have ended."""
        costs = self.costs
        want, have = costs.want[n], self.free[pool]
        if costs.holds_and_waits[n]:
            return False
        full_at = now
        for released_at, count in sorted(self.running[pool]):
            have += count
            full_at = released_at
            if have >= want:
                break
        return now + costs.duration_ns(n, self.free[pool]) <= full_at + costs.duration_ns(n, want)

    # -- the run ----------------------------------------------------------------------------

    def place(self, n: int, s: int, now: int, cores: int) -> int:
        self._open(s)
        end = now + self.costs.duration_ns(n, cores)
        hw = self.hw
        for p, _ in self.prog.deps[n]:
            t = self.stream_of[p]
            if t != s and not self.recorded[p]:
                self.recorded[p] = True
                if self.stream_last[t] == p:
                    self.stream_free[t] = timing.record_end(hw, self.stream_free[t])
        self.start[n], self.end[n], self.cores[n] = now, end, cores
        self.stream_of[n] = s
        self.stream_free[s], self.stream_last[s] = end, n
        pool = self.costs.pool[n]
        if pool >= 0:
            self.free[pool] -= cores
            self.running[pool].append((end, cores))
        self.order.append(n)
        return end

    def release(self, n: int) -> None:
        pool = self.costs.pool[n]
        if pool >= 0:
            self.free[pool] += self.cores[n]
            self.running[pool].remove((self.end[n], self.cores[n]))

    def run(self, priority: Sequence[int]) -> TimedSchedule:
        prog, costs = self.prog, self.costs
        users = prog.users()
        indegree = [len(d) for d in prog.deps]
        queues: list[list[tuple[int, int]]] = [[] for _ in range(_NO_POOL + 1)]
        later: list[tuple[int, int]] = []  # (time, node): no stream can take it before
        running: list[tuple[int, int]] = []  # (end, node)
        returns = [n for n in range(len(prog)) if prog.kind[n] is NodeKind.RETURN]
        queue_of = [_NO_POOL if p < 0 else p for p in costs.pool]

        def enqueue(n: int) -> None:
            if prog.kind[n] is not NodeKind.RETURN:
                heapq.heappush(queues[queue_of[n]], (-priority[n], n))

        for n in range(len(prog)):
            if indegree[n] == 0:
                enqueue(n)
        now = 0
        # Per pool: until when it last had cores left over after the ops started (the
        # simulator would have given them to any op at the head of its stream by then).
        idle_until = [0] * _NO_POOL
        kept_until = [0] * _NO_POOL
        while True:
            for q, queue in enumerate(queues):
                while queue:
                    n = queue[0][1]
                    cores = not_before = 0
                    if q != _NO_POOL:
                        free = self.free[q]
                        if free == 0 or now < kept_until[q]:
                            break
                        want = costs.want[n]
                        if free < want and not self.takes_fragment(n, q, now):
                            break
                        cores = min(want, free)
                        not_before = idle_until[q]
                    s, at, early = self.stream_for(n, now, not_before)
                    heapq.heappop(queue)
                    if s < 0:
                        heapq.heappush(later, (at, n))
                        if early and self.keep_pool:
                            kept_until[q] = at
                        continue
                    heapq.heappush(running, (self.place(n, s, now, cores), n))
            if running and (not later or running[0][0] <= later[0][0]):
                step = running[0][0]
            elif later:
                step = later[0][0]
            else:
                break
            for q in range(_NO_POOL):
                if self.free[q]:
                    idle_until[q] = step
            now = step
            while running and running[0][0] <= now:
                n = heapq.heappop(running)[1]
                self.release(n)
                for u in users[n]:
                    indegree[u] -= 1
                    if indegree[u] == 0:
                        enqueue(u)
            while later and later[0][0] <= now:
                enqueue(heapq.heappop(later)[1])
        order = self.order + returns
        for n in returns:
            self.stream_of[n] = DEFAULT_STREAM
        assignment = Assignment(self.streams, self.stream_of, order)
        return TimedSchedule(assignment, self.start, self.end, self.cores)


def list_schedule(
    prog: Program,
    costs: NodeCosts,
    priority: Sequence[int],
    pinned: Sequence[str | None],
    priorities: dict[str, int],
    max_streams: int,
    hw: Hardware,
    reserved: Collection[str] = (),
    keep_pool: bool = False,
) -> TimedSchedule:
    """The resource-aware list schedule of `prog` (see the module docstring).

    `costs` must be `prog`'s; `priority` ranks the nodes (higher starts first when
    both are ready); `pinned` nodes stay on their tag's stream (with `priorities`);
    at most `max_streams` streams; `reserved` tags are never given to a new stream.
    """
    planner = _Planner(prog, costs, pinned, priorities, max_streams, hw, reserved, keep_pool)
    return planner.run(priority)
