"""Static memory planners: offsets for buffers such that conflicting ones never overlap.

Input: each buffer's size and the buffers it conflicts with
(`npuir.analysis.memory.Lifetimes.conflicts`, happens-before based).  Output:
an offset per buffer; the plan's peak is the highest end.  Every planner places
buffers one at a time, each at a place where it overlaps no conflicting buffer
placed before it, so every plan is safe by construction; they differ in the
order and the fit:

- `greedy-by-size` (TensorFlow Lite's `GreedyBySize`): largest first; each buffer
  takes the smallest gap between its placed neighbours that holds it (best fit),
  else the space above them.
- `greedy-by-conflicts` (TVM's USMP `greedy_by_conflicts`): most-conflicted first
  (then largest), each at the lowest offset that fits (first fit).
- `greedy-by-order`: in the order the buffers are written, first fit: what a
  linear-scan allocator gives, cheapest to run.
- `best-of` (GE's `HybridMemAssigner` runs its planners and keeps the smaller
  plan): all of the above, the smallest peak kept; ties go to the first in the
  order above, so the choice is deterministic.

Ties inside a planner are broken by buffer index (issue order of the writer).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from xdsl.dialects.builtin import TensorType
from xdsl.dialects.func import FuncOp

from npuir.analysis.happens_before import HappensBefore
from npuir.analysis.memory import Buffers, Lifetimes, antichain_bound, find_buffers
from npuir.analysis.program import Program
from npuir.diagnostics import Kind
from npuir.dialects.npu import DYN, tensor_bytes


class Algo(Enum):
    """A planner, as `mem-plan{algo=...}` names it."""

    BY_SIZE = "greedy-by-size"
    BY_CONFLICTS = "greedy-by-conflicts"
    BY_ORDER = "greedy-by-order"
    BEST_OF = "best-of"


@dataclass(frozen=True)
class Plan:
    """Offsets per buffer, the pool size they need, and which planner made them."""

    offsets: list[int]
    peak: int
    algo: Algo


def _place(
    order: Sequence[int],
    sizes: Sequence[int],
    adj: Sequence[Sequence[int]],
    best_fit: bool,
) -> list[int]:
    offsets = [-1] * len(sizes)
    for b in order:
        size = sizes[b]
        taken = sorted(
            (offsets[x], offsets[x] + sizes[x]) for x in adj[b] if offsets[x] >= 0 and sizes[x]
        )
        if size == 0:
            offsets[b] = 0
            continue
        chosen = -1
        best_gap = -1
        top = 0
        for lo, hi in taken:
            gap = lo - top
            if gap >= size:
                if not best_fit:
                    chosen = top
                    break
                if best_gap < 0 or gap < best_gap:
                    chosen, best_gap = top, gap
            if hi > top:
                top = hi
        offsets[b] = chosen if chosen >= 0 else top
    return offsets


def _peak(offsets: Sequence[int], sizes: Sequence[int]) -> int:
    return max((o + s for o, s in zip(offsets, sizes)), default=0)


def _by_size(sizes: Sequence[int], adj: Sequence[Sequence[int]]) -> list[int]:
    order = sorted(range(len(sizes)), key=lambda b: (-sizes[b], b))
    return _place(order, sizes, adj, best_fit=True)


def _by_conflicts(sizes: Sequence[int], adj: Sequence[Sequence[int]]) -> list[int]:
    order = sorted(range(len(sizes)), key=lambda b: (-len(adj[b]), -sizes[b], b))
    return _place(order, sizes, adj, best_fit=False)


def _by_order(sizes: Sequence[int], adj: Sequence[Sequence[int]]) -> list[int]:
    return _place(range(len(sizes)), sizes, adj, best_fit=False)


_PLANNERS: dict[Algo, Callable[[Sequence[int], Sequence[Sequence[int]]], list[int]]] = {
    Algo.BY_SIZE: _by_size,
    Algo.BY_CONFLICTS: _by_conflicts,
    Algo.BY_ORDER: _by_order,
}


def plan(sizes: Sequence[int], adj: Sequence[Sequence[int]], algo: Algo = Algo.BEST_OF) -> Plan:
    """Offsets for buffers of `sizes` whose conflicts are `adj` (symmetric lists)."""
    if algo is not Algo.BEST_OF:
        offsets = _PLANNERS[algo](sizes, adj)
        return Plan(offsets, _peak(offsets, sizes), algo)
    best: Plan | None = None
    for one, planner in _PLANNERS.items():
        offsets = planner(sizes, adj)
        peak = _peak(offsets, sizes)
        if best is None or peak < best.peak:
            best = Plan(offsets, peak, one)
    assert best is not None
    return best


__all__ = [
    "Algo",
    "FunctionPlan",
    "Plan",
    "argument_bytes",
    "over_budget",
    "parse_budget",
    "plan",
    "plan_program",
]


@dataclass
class FunctionPlan:
    """A lowered function's buffers, lifetimes, conflicts and chosen plan."""

    buffers: Buffers
    lifetimes: Lifetimes
    conflicts: list[list[int]]
    plan: Plan

    @property
    def peak(self) -> int:
        return self.plan.peak

    @property
    def no_reuse(self) -> int:
        """What the buffers take without any reuse (GE's `no_reuse`)."""
        return sum(self.buffers.size)


def plan_program(prog: Program, hb: HappensBefore, algo: Algo = Algo.BEST_OF) -> FunctionPlan:
    """Plan every buffer of `prog` (a lowered function's program graph)."""
    buffers = find_buffers(prog)
    lifetimes = Lifetimes(buffers, hb)
    conflicts = lifetimes.conflicts()
    return FunctionPlan(buffers, lifetimes, conflicts, plan(buffers.size, conflicts, algo))


def argument_bytes(func: FuncOp) -> int:
    """What `func`'s static arguments (inputs, weights) take in device memory."""
    return sum(
        tensor_bytes(ty)
        for ty in func.function_type.inputs
        if isinstance(ty, TensorType) and DYN not in ty.get_shape()
    )


OVER_BUDGET = Kind(
    "mem.over-budget",
    "{function} needs {peak} bytes of device memory, over the budget of {budget} bytes; at its "
    "peak {live} bytes are live at once (no plan can fit: these buffers are live together; "
    "largest: {largest})",
)
"""A function's plan needs more device memory than the budget allows, and no plan can fit:
the buffers live at once at its peak (the heaviest antichain) take more.  Arguments:
`function`, `peak`, `budget`, `live` (bytes), `largest` (the largest of those buffers)."""
UNFITTED = Kind(
    "mem.over-budget.unfitted",
    "{function} needs {peak} bytes of device memory, over the budget of {budget} bytes; at its "
    "peak {live} bytes are live at once (the buffers live together need only {live} bytes, but "
    "no planner fitted them; largest: {largest})",
)
"""As `OVER_BUDGET`, but the buffers live together would fit: no planner found the plan."""


def over_budget_facts(name: str, fp: FunctionPlan, budget: int) -> tuple[Kind, dict[str, Any]]:
    """Why `fp` does not fit `budget`, as a kind and its arguments: the buffers live together
    at the peak (the heaviest antichain), largest first."""
    chain = antichain_bound(fp.lifetimes)
    bufs = fp.buffers
    largest = sorted(chain.buffers, key=lambda b: (-bufs.size[b], b))[:4]
    named = ", ".join(f"{bufs.describe(b)} {bufs.size[b]} bytes" for b in largest)
    kind = OVER_BUDGET if chain.bytes > budget else UNFITTED
    args = {"function": name, "peak": fp.peak, "budget": budget, "live": chain.bytes}
    return kind, {**args, "largest": named}


def over_budget(name: str, fp: FunctionPlan, budget: int) -> str:
    """Why `fp` does not fit `budget`, in words (`over_budget_facts` rendered)."""
    kind, args = over_budget_facts(name, fp, budget)
    return kind.render(args)


def parse_budget(spec: str, hbm_bytes: int, argument_bytes: int) -> int:
    """A budget as `mem-budget=`/`budget=` spell it: bytes (`1048576`, `64MiB`, `2GiB`) or
    `hbm`, the device's HBM less what the program's arguments (inputs, weights) take.

    Raises `ValueError` naming what is accepted."""
    text = spec.strip().lower()
    if text == "hbm":
        return max(hbm_bytes - argument_bytes, 0)
    scale = 1
    for suffix, factor in (("kib", 1 << 10), ("mib", 1 << 20), ("gib", 1 << 30), ("b", 1)):
        if text.endswith(suffix):
            text, scale = text[: -len(suffix)], factor
            break
    try:
        value = int(text)
    except ValueError:
        raise ValueError(
            f"a memory budget is a byte count (e.g. 1048576, 64MiB, 2GiB) or 'hbm', got '{spec}'"
        ) from None
    if value < 0:
        raise ValueError(f"a memory budget cannot be negative, got '{spec}'")
    return value * scale
