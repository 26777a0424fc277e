"""Schedule quality against the exact optimum: `auto` on small generated graphs.

Each graph is `workloads.random_dag` (cube matmuls, vector ops, sdma all_reduces; 256x512
activations so that launch, memory and compute all weigh) of a few ops.  Its optimum over every
issue order and stream assignment is `oracle.exact_schedule`; `auto` is
`assign_auto` as `stream-partition{mode=auto ignore-tags=true}` calls it; both are judged by the
same simulation (`npuir.schedule.auto.Judge`: one rank, mirrored peers, a schedule with a
hold-and-wait hazard infeasible).  auto's schedule is the oracle's `start`: it only cuts the
search (what cannot match it is not searched), the optimum is still the space's fastest
schedule.  Each row gives the CPU seconds of auto and of the oracle.  The report gives, per graph, auto / optimum, and in all: how
many graphs auto solves exactly, how many within 1%, the worst and the geometric mean ratio.
`--first N` leaves out each size's first N seeds: another set of graphs.

With `limits` (`bench/run.py oracle --limits`) the graphs hold cores while they wait, which
core limits act on: their collectives are aiv-mode (`comm_rate` 0.3 so that most graphs have
one) and on every other graph a quarter of the matmul and vector ops are `full_core_sync`.
Each size draws its own graphs (seed `100 * ops + k`: the graphs of one seed and several sizes
share their first ops); graphs that no limit acts on (no op holds cores while it waits: the
oracle without limits covers them) are skipped and counted.  `auto` is
`assign_auto(search_limits=True)` as `stream-partition{mode=auto limits=true}` calls it,
judged with the limits it chose, and the optimum is `oracle.exact_with_limits`
(every order, stream assignment and core-limit policy on the grid of `npuir.schedule.limits`).
Each graph also gives `auto` without limits, so the report shows what the limits are worth.
The summary is also given per size.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from typing import Any

from oracle import exact_schedule, exact_with_limits, judged_makespan
from workloads import DagConfig, random_dag
from xdsl.dialects.func import FuncOp

import npuir
from npuir.analysis.program import Program, build_program
from npuir.backends.npu.hardware import Hardware, load_hardware
from npuir.schedule.auto import assign_auto
from npuir.schedule.limits import policies

HW = "910b2"


def _graphs(
    ops: int, count: int, limits: bool, hw: Hardware, first: int = 0
) -> Iterator[tuple[int, Program | None]]:
    """`count` graphs of `ops` ops (module docstring) with their seeds, the `first` ones
    left out; with `limits`, also the graphs drawn on the way that no limit acts on (with
    None for the program)."""
    k, found = first, 0
    while found < count:
        seed, cfg = k, DagConfig(ops=ops, rows=256, cols=512)
        if limits:
            seed, sync = 100 * ops + k, 0.25 if k % 2 else 0.0
            cfg = DagConfig(
                ops=ops, rows=256, cols=512, comm_rate=0.3, comm_mode="aiv", sync_rate=sync
            )
        k += 1
        text = random_dag(seed, cfg)
        module = npuir.parse_text(npuir.make_context(), text)
        prog = build_program(next(op for op in module.ops if isinstance(op, FuncOp)))
        if limits and not policies(prog, hw):
            yield seed, None
            continue
        found += 1
        yield seed, prog


def run_oracle(
    sizes: list[int], seeds: int, limits: bool = False, first: int = 0
) -> dict[str, Any]:
    """`seeds` graphs of each op count in `sizes` (seeds `first`.. of random_dag, with
    `limits` `100 * ops + first`..); with `limits`, aiv collectives and core limits searched
    (module docstring)."""
    hw = load_hardware(HW)
    graphs: list[dict[str, Any]] = []
    skipped = 0
    for ops in sizes:
        for seed, prog in _graphs(ops, seeds, limits, hw, first):
            if prog is None:
                skipped += 1
                continue
            row: dict[str, Any] = {"ops": ops, "seed": seed}
            began = time.process_time()
            auto = assign_auto(prog, [None] * len(prog), {}, 8, hw, search_limits=limits)
            span = judged_makespan(prog, auto, hw)
            # auto's schedule is the search's start: only what can match it is searched.
            start = time.process_time()
            if limits:
                found = exact_with_limits(prog, hw, start=auto)
                exact = found.exact
                row["policies"] = found.policies
                row["optimum_limits"] = None if found.policy is None else found.policy.describe()
            else:
                exact = exact_schedule(prog, hw, start=auto)
            solve_s = time.process_time() - start
            row["auto_s"] = round(start - began, 2)
            row["start_outside"] = exact.start_outside
            row.update(
                {
                    "optimum_ns": exact.makespan,
                    "auto_ns": span,
                    "ratio": span / exact.makespan,
                    "schedules": exact.schedules,
                    "solve_s": round(solve_s, 2),
                }
            )
            if limits:
                row["auto_limits"] = len(auto.limits)
                unlimited = assign_auto(prog, [None] * len(prog), {}, 8, hw)
                row["auto_unlimited_ns"] = judged_makespan(prog, unlimited, hw)
            graphs.append(row)
    per_size = {str(ops): _summary([g for g in graphs if g["ops"] == ops]) for ops in sizes}
    summary = {
        "hardware": HW,
        "limits": limits,
        "first": first,
        "graphs": graphs,
        "per_size": per_size,
    }
    return summary | {"skipped": skipped} | _summary(graphs)


def _summary(graphs: list[dict[str, Any]]) -> dict[str, Any]:
    """How many of `graphs` auto solves exactly and within 1%, the worst and geomean ratio."""
    ratios = [g["ratio"] for g in graphs]
    return {
        "count": len(graphs),
        "optimal": sum(1 for r in ratios if r <= 1.0),
        "within_1pct": sum(1 for r in ratios if r <= 1.01),
        "worst": max(ratios, default=1.0),
        "geomean": math.exp(sum(math.log(r) for r in ratios) / max(1, len(ratios))),
    }


def print_oracle(result: dict[str, Any]) -> None:
    for g in result["graphs"]:
        print(
            f"ops {g['ops']} seed {g['seed']:2d}: optimum {g['optimum_ns']:>7} ns, "
            f"auto {g['auto_ns']:>7} ns, auto/optimum {g['ratio']:.4f} "
            f"({g['schedules']} schedules, oracle {g['solve_s']} CPU-s, auto {g['auto_s']} CPU-s)"
            + (
                f"; limits: optimum {g['optimum_limits'] or 'none'}, auto limits "
                f"{g['auto_limits']} ops (auto without: {g['auto_unlimited_ns']} ns)"
                if "policies" in g
                else ""
            )
        )
    for ops, size in result["per_size"].items():
        print(
            f"{ops} ops: {size['count']} graphs, auto exactly optimal on {size['optimal']}, "
            f"within 1% on {size['within_1pct']}, worst {size['worst']:.4f}"
        )
    if result["skipped"]:
        print(f"({result['skipped']} graphs drawn on the way skipped: no limit acts on them)")
    print(
        f"{result['count']} graphs: auto exactly optimal on {result['optimal']}, "
        f"within 1% on {result['within_1pct']}, worst {result['worst']:.4f}, "
        f"geomean {result['geomean']:.4f}"
    )
