"""Which nodes may run at the same time as a node, stream by stream, from happens-before.

Two nodes on different streams may run at the same time unless happens-before
orders them (`HappensBefore.ordered`).  Asking that of every pair is quadratic;
this analysis answers it for a chosen subset of nodes (say, the ops that hold
cores while they wait) in logarithmic time per (node, stream) query, because
on one stream the nodes a given node can overlap form one contiguous run.

Why a run: let b be a node on stream t and the chosen nodes of stream s be
a_0, a_1, ... in issue order (the order the stream runs them).  a_i finishes
before b starts when its position on s is below `start_clock[b][s]`: a prefix.
b finishes before a_i starts when `start_clock[a_i][t] > position[b]`, and a
stream's clock never goes back, so `start_clock[a_i][t]` grows with i: a
suffix.  What is in neither is the window of a_i that may overlap b.

    windows = StreamWindows(hb, holders)
    for s in windows.streams():
        lo, hi = windows.window(b, s)      # windows.on(s)[lo:hi] may overlap b

Cost: building is O(H) for H chosen nodes; each query is two binary searches,
O(log H), plus O(H_s) once per (s, t) pair of streams queried (the clock column
of stream t along s, built on first use and kept).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from npuir.analysis.happens_before import HappensBefore


class StreamWindows:
    """The chosen nodes of each stream in issue order, and the window of them that may run
    at the same time as a node of another stream (see the module docstring)."""

    def __init__(self, hb: HappensBefore, nodes: Iterable[int]) -> None:
        self.hb = hb
        prog = hb.program
        self._on: dict[int, list[int]] = {}
        for n in sorted(set(nodes)):
            self._on.setdefault(prog.stream[n], []).append(n)
        self._positions = {s: [hb.position[n] for n in ns] for s, ns in self._on.items()}
        self._columns: dict[tuple[int, int], list[int]] = {}

    def streams(self) -> list[int]:
        """The streams that have a chosen node, in index order."""
        return sorted(self._on)

    def on(self, s: int) -> list[int]:
        """Stream s's chosen nodes in issue order (empty when it has none)."""
        return self._on.get(s, [])

    def _column(self, s: int, t: int) -> list[int]:
        """How many of stream t's nodes have finished when each chosen node of s starts."""
        key = (s, t)
        column = self._columns.get(key)
        if column is None:
            start = self.hb.start_clock
            column = self._columns[key] = [start[n][t] for n in self._on[s]]
        return column

    def window(self, b: int, s: int) -> tuple[int, int]:
        """`(lo, hi)`: `on(s)[lo:hi]` are the chosen nodes of stream s that happens-before
        orders neither before nor after node b (b must be on another stream)."""
        hb = self.hb
        t = hb.program.stream[b]
        if s == t:
            raise ValueError("a stream's own nodes are ordered: ask about another stream")
        if s not in self._on:
            return 0, 0
        lo = bisect.bisect_left(self._positions[s], hb.start_clock[b][s])
        hi = bisect.bisect_right(self._column(s, t), hb.position[b])
        return lo, max(lo, hi)
