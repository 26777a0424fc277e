"""Exact static memory placement: the smallest peak a safe plan can have, by search.

`mem-plan`'s planners (`npuir.analysis.mem_planners`) are greedy; the antichain bound
(`npuir.analysis.memory.antichain_bound`) is a floor no plan goes under.  When the two
meet the plan is optimal; when they do not, this module searches for the optimum, so a
gap can be told apart as the planners' fault or as the bound's slack.

The problem: buffers with sizes, and a conflict graph from happens-before (two buffers
conflict when neither is ordered before the other).  With several streams that graph is
the incomparability graph of a partial order, not an interval graph: an interval
(time-line) packer would treat buffers as disjoint in time that some interleaving of the
streams makes live together.  Only the conflict graph is used here, so every plan this
module returns is safe in the sense `mem-verify` checks.

**The search** (after MiniMalloc, Moffitt, ASPLOS'23, which does this for time
intervals).  Any plan can be pushed down -- each buffer dropped until it rests on offset 0
or on the end of a conflicting buffer below it -- without raising its peak, so some optimal
plan is *canonical*: every buffer sits at exactly the highest end of its conflicting
buffers below it (0 if none).  Listing a canonical plan's buffers by offset (ties by
index), each buffer's offset is fixed by those listed before it.  The search builds that
list: at each step it picks the next buffer, which goes at `lo`, the highest end of its
placed neighbours; `lo` must not be below the previous buffer's offset (the list is
sorted), and at an equal offset the index must grow (buffers at one offset do not
conflict, so their order among themselves is free).  Among the buffers that may come
next it tries the lowest `lo` first, then the most bytes of conflicting buffers (the
most constrained).  It prunes

- a state where an unplaced buffer's `lo` is below the current offset and none of its
  neighbours is left to lift it: no sorted canonical list continues from there (one
  that some neighbour can lift starts at the current offset plus that neighbour's size
  at the least);
- by a lower bound: the highest end placed so far; each unplaced buffer's earliest
  end; and for each of a few cliques of the conflict graph (greedy, one grown from each
  buffer), its unplaced members stacked from the lowest place any of them can start.

The tree is walked by limited discrepancy search (Harvey and Ginsberg, IJCAI'95): the
k-th choice at a node spends k of a pass's slack, the slack doubles from pass to pass,
and a pass that cut no branch for slack was exhaustive.  Plain depth-first search only
revises its deepest choices within a budget; with this the early choices are revisited
first, where a greedy first dive goes wrong.

The conflict graph's connected components are solved one by one (the peak is the
largest of theirs); each starts from an incumbent plan (mem-plan's) and stops as soon as
it meets a lower bound (the antichain bound, the cliques, the largest buffer).  Within
`node_limit` search nodes (and `cpu_limit` CPU seconds, if given) the result is either
proved optimal or the best found with the lower bound proved: `ExactPlan.optimal` says
which, never more.

This is kept out of `mem-plan`'s path: `best-of` already meets the antichain bound on
every bench workload (docs/benchmarks.md), the search is exponential in the worst case,
and a compiler's output must not depend on how long a search was allowed.  The bench
(`bench/memory_exact.py`) and the tests use it to measure the planners against the
optimum.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from npuir.analysis.mem_planners import plan


@dataclass(frozen=True)
class ExactPlan:
    """An offset per buffer, its peak, and what is proved about it."""

    offsets: list[int]
    peak: int
    lower_bound: int
    """No safe plan is smaller: `peak` itself when `optimal`."""
    optimal: bool
    nodes: int
    """Search nodes visited (every component's)."""


def plan_peak(offsets: Sequence[int], sizes: Sequence[int]) -> int:
    """The pool a plan needs: its highest end."""
    return max((o + s for o, s in zip(offsets, sizes, strict=True)), default=0)


def is_safe(offsets: Sequence[int], sizes: Sequence[int], adj: Sequence[Sequence[int]]) -> bool:
    """Whether no two conflicting buffers of nonzero size overlap, and no offset is
    negative."""
    for b, nbrs in enumerate(adj):
        if offsets[b] < 0:
            return False
        for c in nbrs:
            if not sizes[b] or not sizes[c]:
                continue
            if offsets[b] < offsets[c] + sizes[c] and offsets[c] < offsets[b] + sizes[b]:
                return False
    return True


class _Stop(Exception):
    """The node or CPU budget ran out."""


class _Component:
    """The search on one connected component, buffers renumbered 0..m-1."""

    def __init__(self, sizes: list[int], nbrs: list[list[int]]) -> None:
        self.sizes = sizes
        self.nbrs = nbrs
        m = len(sizes)
        self.mask = [sum(1 << c for c in nbrs[b]) for b in range(m)]
        self.cliques = self._cliques()

    def _cliques(self) -> list[list[int]]:
        """One greedy clique grown from each buffer (heaviest neighbour first), distinct."""
        sizes, mask = self.sizes, self.mask
        seen: set[int] = set()
        out: list[list[int]] = []
        for b in range(len(sizes)):
            members, bits, cand = [b], 1 << b, mask[b]
            while cand:
                c = max(_bits(cand), key=lambda x: (sizes[x], -x))
                members.append(c)
                bits |= 1 << c
                cand &= mask[c]
            if len(members) > 1 and bits not in seen:
                seen.add(bits)
                out.append(members)
        return out

    def clique_bound(self) -> int:
        return max(
            [max(self.sizes, default=0)] + [sum(self.sizes[b] for b in k) for k in self.cliques]
        )

    def solve(
        self, incumbent: list[int], lower_bound: int, node_limit: int, deadline: float | None
    ) -> tuple[list[int], int, bool, int]:
        """(offsets, peak, complete, nodes) from `incumbent`.  Complete: the search ran to
        its end (the peak is the component's optimum) or met `lower_bound` (a bound on the
        whole plan, so nothing better is needed); not complete: the budget ran out."""
        sizes, nbrs, cliques = self.sizes, self.nbrs, self.cliques
        m = len(sizes)
        # Among the buffers that can go lowest, the passes alternate between trying the
        # most constrained first (the most bytes of conflicting buffers) and the largest
        # first.  On the bench's random programs, of 31 that plain depth-first search left
        # unproved in 200k nodes, the first order proved 31 and the second 28, but the
        # first ran out on one that the second proves in 46 nodes.
        by_conflicts = [-sum(sizes[c] for c in nbrs[b]) for b in range(m)]
        by_size = [-x for x in sizes]
        best = list(incumbent)
        best_peak = plan_peak(best, sizes)
        bound = max(lower_bound, self.clique_bound())
        if best_peak <= bound:
            return best, best_peak, True, 0
        offsets = [-1] * m
        lo = [0] * m
        placed = [False] * m
        nodes = 0
        cut = False

        def dfs(floor: int, last: int, peak: int, left: int, slack: int, weight: list[int]) -> None:
            nonlocal best, best_peak, nodes, cut
            nodes += 1
            if nodes > node_limit or (
                deadline is not None and nodes % 256 == 0 and time.process_time() > deadline
            ):
                raise _Stop
            if left == 0:
                if peak < best_peak:
                    best, best_peak = list(offsets), peak
                return
            est = peak
            unplaced = [b for b in range(m) if not placed[b]]
            start = [0] * m
            for b in unplaced:
                s = lo[b]
                if s < floor:
                    # Stranded below the list's offset: only a neighbour placed later can
                    # lift it, to that neighbour's end at the least.
                    lift = [sizes[c] for c in nbrs[b] if not placed[c]]
                    if not lift:
                        return  # nothing left can lift it to where the list has got to
                    s = floor + min(lift)
                start[b] = s
                if s + sizes[b] > est:
                    est = s + sizes[b]
            if est >= best_peak:
                return
            for k in cliques:
                low = -1
                total = 0
                for b in k:
                    if not placed[b]:
                        total += sizes[b]
                        if low < 0 or start[b] < low:
                            low = start[b]
                if low >= 0 and low + total >= best_peak:
                    return
            cands = [b for b in unplaced if lo[b] > floor or (lo[b] == floor and b > last)]
            cands.sort(key=lambda b: (lo[b], weight[b], b))
            for rank, b in enumerate(cands):
                if rank > slack:
                    cut = True
                    return
                o = lo[b]
                end = o + sizes[b]
                raised: list[tuple[int, int]] = []
                for c in nbrs[b]:
                    if not placed[c] and lo[c] < end:
                        raised.append((c, lo[c]))
                        lo[c] = end
                offsets[b] = o
                placed[b] = True
                dfs(o, b, max(peak, end), left - 1, slack - rank, weight)
                placed[b] = False
                offsets[b] = -1
                for c, old in raised:
                    lo[c] = old
                if best_peak <= bound:
                    return

        # Limited discrepancy search (Harvey and Ginsberg): the k-th candidate of a node
        # costs k of the pass's slack, and the slack doubles each pass, so the early passes
        # revise any level's choice, not only the deepest ones as plain depth-first does
        # (which, from a greedy first dive, spent 200k nodes on 25 buffers without finding
        # a plan CP-SAT found at the bound).  A pass that cut nothing was exhaustive.
        slack = 0
        try:
            while True:
                for weight in (by_conflicts, by_size):
                    cut = False
                    dfs(0, -1, 0, m, slack, weight)
                    if not cut or best_peak <= bound:
                        return best, best_peak, True, nodes
                slack = slack * 2 + 1
        except _Stop:
            return best, best_peak, best_peak <= bound, nodes


def _bits(x: int) -> list[int]:
    out = []
    while x:
        low = x & -x
        out.append(low.bit_length() - 1)
        x ^= low
    return out


def _components(adj: Sequence[Sequence[int]], live: Sequence[bool]) -> list[list[int]]:
    seen = [False] * len(adj)
    out: list[list[int]] = []
    for b in range(len(adj)):
        if seen[b] or not live[b]:
            continue
        seen[b] = True
        comp, stack = [], [b]
        while stack:
            x = stack.pop()
            comp.append(x)
            for y in adj[x]:
                if live[y] and not seen[y]:
                    seen[y] = True
                    stack.append(y)
        out.append(sorted(comp))
    return out


def exact_plan(
    sizes: Sequence[int],
    adj: Sequence[Sequence[int]],
    *,
    incumbent: Sequence[int] | None = None,
    lower_bound: int = 0,
    node_limit: int = 100_000,
    cpu_limit: float | None = None,
) -> ExactPlan:
    """The smallest-peak safe offsets for buffers of `sizes` whose conflicts are `adj`
    (symmetric lists), or the best found within the budget.

    `incumbent`: a safe plan to start from (default: `mem-plan`'s best-of); `lower_bound`:
    a bound already proved (the antichain bound), to stop at; `node_limit` search nodes and
    `cpu_limit` CPU seconds bound the work (each component gets what the earlier ones left).
    """
    n = len(sizes)
    if incumbent is None:
        # A good first plan matters: the search proves optimality by meeting the bound,
        # and from a poor start its dives through canonical lists often run into dead
        # states before they reach a plan (25 buffers, 100k nodes, nothing better found).
        incumbent = plan(sizes, adj).offsets
    if not is_safe(incumbent, sizes, adj):
        raise ValueError("the incumbent plan overlaps two conflicting buffers")
    deadline = None if cpu_limit is None else time.process_time() + cpu_limit
    offsets = [0] * n  # a buffer of size 0 stays at 0
    parts: list[tuple[list[int], _Component, list[int]]] = []
    for comp in _components(adj, [s > 0 for s in sizes]):
        index = {b: i for i, b in enumerate(comp)}
        part = _Component(
            [sizes[b] for b in comp], [[index[c] for c in adj[b] if c in index] for b in comp]
        )
        # The incumbent's offsets shifted down to the component's own floor: still safe.
        base = min(incumbent[b] for b in comp)
        parts.append((comp, part, [incumbent[b] - base for b in comp]))
    proved = max([lower_bound] + [part.clique_bound() for _, part, _ in parts])
    nodes = 0
    # Highest incumbent first: a component whose plan is within the bound needs no search.
    parts.sort(key=lambda p: -plan_peak(p[2], p[1].sizes))
    for comp, part, inc in parts:
        left = node_limit - nodes
        out_of_time = deadline is not None and time.process_time() > deadline
        if plan_peak(inc, part.sizes) > proved and left > 0 and not out_of_time:
            inc, peak, complete, used = part.solve(inc, proved, left, deadline)
            nodes += used
            if complete:
                # Either the component's optimum (a bound on the whole plan) or within the
                # bound already proved.
                proved = max(proved, peak)
        for b, o in zip(comp, inc, strict=True):
            offsets[b] = o
    peak = plan_peak(offsets, sizes)
    return ExactPlan(offsets, peak, proved, peak <= proved, nodes)


__all__ = ["ExactPlan", "exact_plan", "is_safe", "plan_peak"]
