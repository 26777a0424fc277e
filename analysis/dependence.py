"""The dependence graph of a function: which op must follow which.

Data edges run from the op that really produced a value (through scope
results and yields) to each op that uses it; control edges come from
`stream.wait_tensor` — every user of its result must follow the producer of
its `dep`.  Built on the compact `Program` (see `npuir.analysis.program`), so
queries are integer work:

    graph = DependenceGraph(func).run()
    graph.predecessors(n)        # [(producer, DepKind)]
    graph.successors(n)
    graph.topological_order()    # issue order is one; this one is Kahn's
    graph.reachable(a, b)        # is there a path a -> ... -> b?
"""

from __future__ import annotations

import heapq

from xdsl.dialects.func import FuncOp

from npuir.analysis.program import DepKind, Program, StreamInfo, build_program


class DependenceGraph:
    """Data and control dependencies among a function's ops."""

    def __init__(self, func: FuncOp, streams: list[StreamInfo] | None = None) -> None:
        self.func = func
        self.streams = streams
        self.program: Program | None = None
        self._succ: list[list[int]] = []

    def run(self) -> DependenceGraph:
        self.program = build_program(self.func, self.streams)
        self._succ = self.program.users()
        return self

    @property
    def prog(self) -> Program:
        assert self.program is not None, "call run() first"
        return self.program

    def predecessors(self, n: int) -> list[tuple[int, DepKind]]:
        return list(self.prog.deps[n])

    def successors(self, n: int) -> list[int]:
        return list(self._succ[n])

    def topological_order(self) -> list[int]:
        """Kahn's algorithm, smallest issue index first among ready nodes."""
        prog = self.prog
        indegree = [len(d) for d in prog.deps]
        ready = [n for n, d in enumerate(indegree) if d == 0]
        heapq.heapify(ready)
        order: list[int] = []
        while ready:
            n = heapq.heappop(ready)
            order.append(n)
            for m in self._succ[n]:
                indegree[m] -= 1
                if indegree[m] == 0:
                    heapq.heappush(ready, m)
        return order

    def reachable(self, a: int, b: int) -> bool:
        """Whether b depends on a, directly or through other ops.

        Issue order is topological (the builder checks it), so the backward
        search from b never needs to look at nodes issued before a.
        """
        if a == b:
            return True
        if a > b:
            return False
        deps = self.prog.deps
        seen = {b}
        stack = [b]
        while stack:
            n = stack.pop()
            for p, _ in deps[n]:
                if p == a:
                    return True
                if p > a and p not in seen:
                    seen.add(p)
                    stack.append(p)
        return False
