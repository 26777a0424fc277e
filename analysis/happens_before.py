"""Happens-before on a lowered function, by vector clocks.

Exactly two kinds of edge order work on the device: a stream runs its ops
first-in first-out in issue order, and a `sync.wait` holds its stream until
the `sync.record` it waits on has executed.  Host issue order alone orders
nothing across streams.  When records carry physical `event_id`s, a wait means
what the hardware means — after the latest record of that id issued before it
— so an unsafe reuse of an id shows up as a missing order.

A clock is a list with one entry per stream: `clock[t]` is how many of stream
t's ops are known to have finished.  One sweep along issue order computes the
clock each node starts with; `ordered(a, b)` is then a lookup.

    hb = HappensBefore(program).run()
    hb.ordered(a, b)          # does a finish before b starts?
    hb.missing(n)             # n's cross-stream dependencies left unordered
    hb.unjoined()             # streams whose work the return does not wait for
"""

from __future__ import annotations

from dataclasses import dataclass

from npuir.analysis.program import DepKind, NodeKind, Program

Clock = list[int]


class ClockSweep:
    """Stream clocks advanced along issue order; shared by analyses and passes.

    `op(s)` accounts one more op on stream s and returns its position there;
    `snapshot(s)` is what a record on s publishes; `join(s, snap)` is a wait.
    """

    def __init__(self, num_streams: int) -> None:
        self.clocks: list[Clock] = [[0] * num_streams for _ in range(num_streams)]

    def op(self, s: int) -> int:
        clock = self.clocks[s]
        pos = clock[s]
        clock[s] = pos + 1
        return pos

    def covers(self, s: int, t: int, pos: int) -> bool:
        """Is the op at position `pos` of stream t finished before stream s goes on?"""
        return self.clocks[s][t] > pos

    def snapshot(self, s: int) -> Clock:
        return list(self.clocks[s])

    def join(self, s: int, snap: Clock) -> None:
        clock = self.clocks[s]
        for t, v in enumerate(snap):
            if v > clock[t]:
                clock[t] = v


@dataclass(frozen=True)
class Unordered:
    """A dependency `consumer` needs that nothing orders: what is missing."""

    consumer: int
    producer: int
    kind: DepKind


class HappensBefore:
    """Vector clocks over a lowered `Program` (see the module docstring)."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.position: list[int] = []
        self.start_clock: list[Clock] = []
        self.bound_record: dict[int, int] = {}
        """For each wait, the record it is released by (physical ids applied)."""

    def run(self) -> HappensBefore:
        prog = self.program
        sweep = ClockSweep(len(prog.streams))
        published: dict[int, Clock] = {}
        latest_with_id: dict[int, int] = {}
        self.position = [0] * len(prog)
        self.start_clock = [[] for _ in range(len(prog))]
        for n in range(len(prog)):
            s = prog.stream[n]
            kind = prog.kind[n]
            if kind is NodeKind.WAIT:
                record = prog.event_of[n]
                event_id = prog.event_id[record]
                if event_id >= 0:
                    record = latest_with_id.get(event_id, record)
                self.bound_record[n] = record
                sweep.join(s, published[record])
            self.start_clock[n] = sweep.snapshot(s)
            self.position[n] = sweep.op(s)
            if kind is NodeKind.RECORD:
                published[n] = sweep.snapshot(s)
                if prog.event_id[n] >= 0:
                    latest_with_id[prog.event_id[n]] = n
        return self

    def ordered(self, a: int, b: int) -> bool:
        """Whether node a finishes before node b starts."""
        sa, sb = self.program.stream[a], self.program.stream[b]
        if sa == sb:
            return self.position[a] < self.position[b]
        return self.start_clock[b][sa] > self.position[a]

    def missing(self, n: int) -> list[Unordered]:
        """The dependencies of node n that happens-before does not provide."""
        return [Unordered(n, p, k) for p, k in self.program.deps[n] if not self.ordered(p, n)]

    def unjoined(self) -> list[tuple[int, int]]:
        """(return node, stream) pairs: streams whose compute work the return does not wait for."""
        prog = self.program
        last_on: dict[int, int] = {}
        out: list[tuple[int, int]] = []
        for n in range(len(prog)):
            if prog.kind[n] is NodeKind.RETURN:
                for s, last in sorted(last_on.items()):
                    if s != prog.stream[n] and not self.ordered(last, n):
                        out.append((n, s))
            elif prog.kind[n] is NodeKind.COMPUTE:
                last_on[prog.stream[n]] = n
        return out
