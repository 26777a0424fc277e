"""The trade-off between makespan and planned memory that `auto` can make, for `npuir-advise`.

Streams buy overlap with memory (`npuir.schedule.mem_budget`).  To show what a
smaller plan costs in time, this runs the budgeted search on the program's entry
function the way `stream-partition{mode=auto ignore-tags=true mem-budget=...
favor=min-peak-memory}` would: from `auto`'s unconstrained assignment, orderings
at the peak and stream merges down to one stream, every candidate planned and
simulated (one rank, as `auto` judges an SPMD program).  The points no other
candidate beats on both makespan and planned peak are the Pareto front, fastest
first; the last is the smallest plan the search found.  The descents by orderings
stop after `MAX_TRIALS` candidates (the merges do not), so the front of a large
program rests mostly on merges.

`npuir-advise` passes its program without the user's scopes, as its `auto (per op)` row
has it, and runs both within `npuir.schedule.auto.shared_searches`: auto's search for
streams and order (the one `limits=true` starts from, and the only one `mem-budget` runs)
is made once for the row and this front.

Only a function with static argument shapes and no gears has one plan to show
(a geared one has a plan per gear, a dynamic one none), and only up to `MAX_OPS`
ops; for others the front is empty.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import ModuleOp, TensorType

from npuir.analysis.core_limits import CoreLimits, limit_fn
from npuir.analysis.mem_planners import argument_bytes, parse_budget
from npuir.analysis.partition import STRATEGIES, Mode, assign
from npuir.analysis.program import build_program, module_streams, scheduled_functions
from npuir.context import make_context
from npuir.dialects import stream
from npuir.dialects.npu import DYN
from npuir.dialects.scope import walk_nested
from npuir.passmanager.pipeline import build_pipeline, run_passes
from npuir.schedule.auto import cost_strategies
from npuir.schedule.device import device_of
from npuir.schedule.mem_budget import BudgetError, Favor, fit_budget

MAX_STREAMS = 8
"""`auto`'s stream cap, as `stream-partition`'s default."""
MAX_OPS = 1000
"""Above this many ops no front is computed: `auto` and every candidate's plan and
simulation grow with the function (about 13 s CPU at 1,000 ops of `bench`'s random DAG)."""
MAX_TRIALS = 40
"""Candidates judged before the descents by orderings stop (the merges go on): each is a
plan and a simulation of the whole function, and advice should stay quick."""


@dataclass(frozen=True)
class Point:
    """One schedule of the front."""

    makespan_ns: int
    peak_bytes: int
    streams: int
    orderings: int
    """Orderings added at the peak (each a `stream.wait_tensor` the pass would write)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "makespan_ns": self.makespan_ns,
            "peak_bytes": self.peak_bytes,
            "streams": self.streams,
            "orderings": self.orderings,
        }


def memory_tradeoff(module: ModuleOp, entry: str, hw: str | None) -> list[Point]:
    """The Pareto front of makespan against planned peak for `entry` of `module` (which
    is not changed), fastest first; empty when `entry` has gears or dynamic shapes."""
    module = module.clone()
    run_passes(make_context(), module, build_pipeline("gear-multiversion"))
    func = next((f for f in scheduled_functions(module) if f.sym_name.data == entry), None)
    if func is None or any(
        isinstance(t, TensorType) and DYN in t.get_shape() for t in func.function_type.inputs
    ):
        return []
    hardware = device_of(module, hw)
    limits = limit_fn(CoreLimits(module, hardware).run())
    prog = build_program(func)
    if len(prog) > MAX_OPS:
        return []
    unpinned: list[str | None] = [None] * len(prog)
    strategies = {**STRATEGIES, **cost_strategies(hardware, limits)}
    # The tags `stream-partition` reserves (never given to a stream auto makes): the main
    # one, the declared streams' and every scope's.  With the same ones, within
    # `shared_searches`, this is the search the pass made already.
    reserved = {stream.MAIN_TAG, *(info.tag for info in module_streams(module))}
    for other in scheduled_functions(module):
        reserved.update(o.tag_name for o in walk_nested(other) if isinstance(o, stream.SwitchOp))
    start = assign(
        Mode.AUTO, prog, unpinned, {}, MAX_STREAMS, reserved=reserved, strategies=strategies
    )
    budget = parse_budget("hbm", hardware.hbm_bytes, argument_bytes(func))
    try:
        search = fit_budget(
            prog,
            start,
            unpinned,
            hardware,
            limits,
            budget,
            Favor.MIN_PEAK_MEMORY,
            f"@{entry}",
            max_trials=MAX_TRIALS,
        )
    except BudgetError:
        return []
    return [Point(f.makespan, f.peak, f.streams, len(f.orderings)) for f in search.pareto()]


__all__ = ["Point", "memory_tradeoff"]
