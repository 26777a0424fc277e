"""Memory plans against the exact optimum (`npuir.schedule.mem_exact`), and the joint question.

    python bench/memory_exact.py [--quick] [--workloads a,b] [--random 200] [--ops 24]
                                 [--orders 30] [--order-ops 6] [--nodes 200000] [--cpu 10] [--json]

Three tables:

- **workloads**: every workload of `bench/workloads`, scheduled by `auto` and by one
  stream (the plan `mem-plan` makes for the schedule `auto` judges,
  `npuir.schedule.mem_budget.planned`): planned peak, antichain bound, the exact search's
  result and whether it is proved optimal; planned peak / optimum where proved, else /
  lower bound.
- **random**: `--random` random annotated programs of `--ops` ops on several streams
  (`bench/mem_mutations.py`'s generator, lowered by `npu-default`, whose `mem-plan` made
  the plan): how often the plan is above the bound, above the optimum, and the optimum
  above the bound; the search's nodes and CPU time.
- **orders** (the joint question): `--orders` random programs of `--order-ops` ops,
  unannotated, given `auto`'s streams; every topological issue order (collectives in
  their written order) is lowered with those streams and its optimum found: how often
  some order's optimum is below that of the order `auto` issues, and by how much; the
  same on one stream.

Each search runs within `--nodes` search nodes and `--cpu` CPU seconds; a result not
proved optimal is reported as such and the ratio taken to the bound it proved.

`--cp-sat` also solves each random program's placement with CP-SAT (OR-Tools, which
npuir does not depend on: `pip install ortools` first), one worker, `--cpu` seconds, as a
cross-check of the search: the same conflict graph, a disjunction per conflicting pair,
the peak minimised, hinted with `mem-plan`'s plan.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import npuir
from npuir.analysis.happens_before import HappensBefore
from npuir.analysis.mem_planners import FunctionPlan, plan_program
from npuir.analysis.memory import antichain_bound
from npuir.analysis.partition import STRATEGIES, Assignment, Mode, assign
from npuir.analysis.program import (
    NodeKind,
    Program,
    build_program,
    module_streams,
    scheduled_functions,
)
from npuir.backends.npu.hardware import load_hardware
from npuir.dialects.npu import CollectiveOp
from npuir.schedule.auto import cost_strategies
from npuir.schedule.mem_budget import planned
from npuir.schedule.mem_exact import ExactPlan, exact_plan, is_safe


def solve(fp: FunctionPlan, nodes: int, cpu: float) -> tuple[ExactPlan, int, float]:
    """The exact search from `fp`'s plan: its result, the antichain bound, CPU seconds."""
    bound = antichain_bound(fp.lifetimes).bytes
    began = time.process_time()
    ex = exact_plan(
        fp.buffers.size,
        fp.conflicts,
        incumbent=fp.plan.offsets,
        lower_bound=bound,
        node_limit=nodes,
        cpu_limit=cpu,
    )
    spent = time.process_time() - began
    assert is_safe(ex.offsets, fp.buffers.size, fp.conflicts)
    assert bound <= ex.lower_bound <= ex.peak <= fp.peak
    return ex, bound, spent


def _ratio(a: int, b: int) -> float:
    return round(a / b, 4) if b else 1.0


def _unpartitioned(text: str) -> Program:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, text)
    npuir.run_passes(ctx, module, npuir.build_pipeline("gear-multiversion"))
    return build_program(scheduled_functions(module)[0])


def _assignments(prog: Program) -> dict[str, Assignment]:
    hw = load_hardware("910b2")
    none: list[str | None] = [None] * len(prog)
    strategies = {**STRATEGIES, **cost_strategies(hw)}
    return {
        "auto": assign(Mode.AUTO, prog, none, {}, 8, strategies=strategies),
        "single": assign(Mode.SINGLE, prog, none, {}, 8),
    }


def workload_rows(
    names: Sequence[str], quick: bool, nodes: int, cpu: float
) -> list[dict[str, Any]]:
    from workloads import QUICK_WORKLOADS, WORKLOADS

    table = QUICK_WORKLOADS if quick else WORKLOADS
    rows = []
    for name in names:
        prog = _unpartitioned(table[name]())
        for schedule, assignment in _assignments(prog).items():
            fp = planned(prog, assignment)
            ex, bound, spent = solve(fp, nodes, cpu)
            rows.append(
                {
                    "workload": name,
                    "schedule": schedule,
                    "buffers": len(fp.buffers),
                    "plan_bytes": fp.peak,
                    "bound_bytes": bound,
                    "exact_bytes": ex.peak,
                    "optimal": ex.optimal,
                    "proved_bytes": ex.lower_bound,
                    "plan_over_optimum": _ratio(fp.peak, ex.lower_bound),
                    "nodes": ex.nodes,
                    "cpu_s": round(spent, 3),
                }
            )
    return rows


def cp_sat(fp: FunctionPlan, bound: int, cpu: float) -> dict[str, Any]:
    """CP-SAT's result for `fp`'s placement: status, peak found and bound proved (bytes)."""
    try:
        cp_model: Any = importlib.import_module("ortools.sat.python.cp_model")
    except ImportError:
        sys.exit("memory_exact.py: error: --cp-sat needs OR-Tools (pip install ortools)")
    sizes, adj = fp.buffers.size, fp.conflicts
    unit = math.gcd(*sizes) or 1
    units = [s // unit for s in sizes]
    top = sum(units)
    model = cp_model.CpModel()
    offset = [model.NewIntVar(0, top - u, f"o{b}") for b, u in enumerate(units)]
    peak = model.NewIntVar(-(-bound // unit), top, "peak")
    for b, u in enumerate(units):
        model.Add(offset[b] + u <= peak)
        model.AddHint(offset[b], fp.plan.offsets[b] // unit)
        for c in adj[b]:
            if c > b and u and units[c]:
                below = model.NewBoolVar(f"b{b}_{c}")
                model.Add(offset[b] + u <= offset[c]).OnlyEnforceIf(below)
                model.Add(offset[c] + units[c] <= offset[b]).OnlyEnforceIf(below.Not())
    model.Minimize(peak)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = cpu
    solver.parameters.num_workers = 1
    began = time.process_time()
    status = solver.StatusName(solver.Solve(model))
    return {
        "cp_sat_status": status,
        "cp_sat_bytes": int(solver.ObjectiveValue()) * unit,
        "cp_sat_bound_bytes": int(solver.BestObjectiveBound()) * unit,
        "cp_sat_cpu_s": round(time.process_time() - began, 4),
    }


def random_rows(
    count: int, ops: int, nodes: int, cpu: float, with_cp_sat: bool = False
) -> list[dict[str, Any]]:
    import mem_mutations

    rows = []
    for seed in range(count):
        module = next(mem_mutations.lowered(10_000 + seed, ops))
        func = scheduled_functions(module)[0]
        prog = build_program(func, module_streams(module))
        fp = plan_program(prog, HappensBefore(prog).run())
        if fp.buffers.dynamic is not None or not len(fp.buffers):
            continue
        ex, bound, spent = solve(fp, nodes, cpu)
        rows.append(
            {
                "seed": 10_000 + seed,
                "buffers": len(fp.buffers),
                "streams": len(prog.streams),
                "plan_bytes": fp.peak,
                "bound_bytes": bound,
                "exact_bytes": ex.peak,
                "optimal": ex.optimal,
                "proved_bytes": ex.lower_bound,
                "nodes": ex.nodes,
                "cpu_s": round(spent, 4),
                **(cp_sat(fp, bound, cpu) if with_cp_sat else {}),
            }
        )
    return rows


def _orders(prog: Program) -> Iterator[list[int]]:
    """Every topological order of `prog`, the return last, collectives in written order."""
    from oracle import topological_orders

    written = [n for n in range(len(prog)) if isinstance(prog.ops[n], CollectiveOp)]
    for order in topological_orders(prog):
        if [n for n in order if isinstance(prog.ops[n], CollectiveOp)] == written:
            yield order


def order_rows(count: int, ops: int, nodes: int, cpu: float) -> list[dict[str, Any]]:
    import mem_mutations

    rows = []
    for seed in range(count):
        prog = _unpartitioned(mem_mutations.random_program(20_000 + seed, ops, num_tags=0))
        if any(prog.kind[n] is NodeKind.RETURN for n in range(len(prog) - 1)):
            continue
        for schedule, assignment in _assignments(prog).items():
            issued = assignment.order or list(range(len(prog)))
            own = exact_plan_of(planned(prog, assignment), nodes, cpu)
            best, best_order, orders, proved = own, issued, 0, own.optimal
            for order in _orders(prog):
                orders += 1
                ex = exact_plan_of(
                    planned(prog, Assignment(assignment.streams, assignment.stream_of, order)),
                    nodes,
                    cpu,
                )
                proved = proved and ex.optimal
                if ex.peak < best.peak:
                    best, best_order = ex, order
            rows.append(
                {
                    "seed": 20_000 + seed,
                    "schedule": schedule,
                    "streams": len(set(assignment.stream_of)),
                    "orders": orders,
                    "issued_optimum": own.peak,
                    "best_optimum": best.peak,
                    "all_proved": proved,
                    "gain": _ratio(own.peak, best.peak),
                    "best_order_differs": best_order != issued,
                }
            )
    return rows


def exact_plan_of(fp: FunctionPlan, nodes: int, cpu: float) -> ExactPlan:
    return solve(fp, nodes, cpu)[0]


def _geomean(xs: Sequence[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 1.0


def summary(
    work: list[dict[str, Any]], rand: list[dict[str, Any]], orders: list[dict[str, Any]]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if work:
        out["workloads_proved"] = f"{sum(r['optimal'] for r in work)}/{len(work)}"
        out["workloads_plan_over_optimum_max"] = max(r["plan_over_optimum"] for r in work)
    if rand:
        proved = [r for r in rand if r["optimal"]]
        out["random_programs"] = len(rand)
        out["random_proved"] = len(proved)
        out["random_plan_above_bound"] = sum(r["plan_bytes"] > r["bound_bytes"] for r in rand)
        out["random_plan_above_optimum"] = sum(r["plan_bytes"] > r["exact_bytes"] for r in proved)
        out["random_optimum_above_bound"] = sum(r["exact_bytes"] > r["bound_bytes"] for r in proved)
        above = [
            r["plan_bytes"] / r["exact_bytes"] for r in proved if r["plan_bytes"] > r["exact_bytes"]
        ]
        out["random_plan_over_optimum_max"] = round(max(above, default=1.0), 4)
        out["random_plan_over_optimum_geomean"] = round(
            _geomean([r["plan_bytes"] / r["proved_bytes"] for r in rand]), 4
        )
        out["random_cpu_s_max"] = max(r["cpu_s"] for r in rand)
        out["random_buffers_max"] = max(r["buffers"] for r in rand)
        checked = [r for r in rand if "cp_sat_status" in r]
        if checked:
            sat = [r for r in checked if r["cp_sat_status"] == "OPTIMAL"]
            out["cp_sat_proved"] = len(sat)
            out["cp_sat_disagrees"] = sum(
                r["optimal"] and r["cp_sat_bytes"] != r["exact_bytes"] for r in sat
            )
            out["cp_sat_better"] = sum(r["cp_sat_bytes"] < r["exact_bytes"] for r in checked)
            out["cp_sat_cpu_s"] = round(sum(r["cp_sat_cpu_s"] for r in checked), 2)
    for schedule in ("auto", "single"):
        rows = [r for r in orders if r["schedule"] == schedule]
        if rows:
            gains = [r["gain"] for r in rows if r["gain"] > 1]
            out[f"orders_{schedule}"] = {
                "programs": len(rows),
                "order_lowers_optimum": len(gains),
                "gain_max": max(gains, default=1.0),
                "gain_geomean_where_lowered": round(_geomean(gains), 4),
                "orders_max": max(r["orders"] for r in rows),
                "all_proved": all(r["all_proved"] for r in rows),
            }
    return out


def main(argv: list[str] | None = None) -> int:
    from workloads import WORKLOADS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the workloads at small sizes")
    ap.add_argument("--workloads", help="comma-separated names (default: all; 'none': skip)")
    ap.add_argument("--random", type=int, default=200, help="random programs (0: skip)")
    ap.add_argument("--ops", type=int, default=24, help="ops per random program")
    ap.add_argument("--orders", type=int, default=30, help="programs for the joint question")
    ap.add_argument("--order-ops", type=int, default=6, help="ops per joint-question program")
    ap.add_argument("--nodes", type=int, default=200_000, help="search nodes per search")
    ap.add_argument("--cpu", type=float, default=10.0, help="CPU seconds per search")
    ap.add_argument("--cp-sat", action="store_true", help="cross-check with CP-SAT (OR-Tools)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.workloads == "none":
        names: list[str] = []
    else:
        names = args.workloads.split(",") if args.workloads else list(WORKLOADS)
    began = time.process_time()
    work = workload_rows(names, args.quick, args.nodes, args.cpu)
    rand = random_rows(args.random, args.ops, args.nodes, args.cpu, args.cp_sat)
    orders = order_rows(args.orders, args.order_ops, args.nodes, args.cpu)
    result: dict[str, Any] = {
        "workloads": work,
        "random": rand,
        "orders": orders,
        "summary": summary(work, rand, orders),
        "cpu_s": round(time.process_time() - began, 1),
    }
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    if work:
        print(
            f"{'workload':<22} {'sched':<7} {'bufs':>5} {'plan':>12} {'bound':>12} {'exact':>12} "
            f"{'proved':>6} {'plan/opt':>8} {'nodes':>7} {'cpu s':>6}"
        )
        for r in work:
            print(
                f"{r['workload']:<22} {r['schedule']:<7} {r['buffers']:>5} {r['plan_bytes']:>12} "
                f"{r['bound_bytes']:>12} {r['exact_bytes']:>12} {'yes' if r['optimal'] else 'no':>6} "
                f"{r['plan_over_optimum']:>8.4f} {r['nodes']:>7} {r['cpu_s']:>6.2f}"
            )
    for r in rand:
        if r["plan_bytes"] > r["bound_bytes"]:
            print(
                f"random {r['seed']}: {r['buffers']} buffers, {r['streams']} streams, plan "
                f"{r['plan_bytes']}, bound {r['bound_bytes']}, exact {r['exact_bytes']} "
                f"({'optimal' if r['optimal'] else 'best found'}), {r['nodes']} nodes, "
                f"{r['cpu_s']:.2f} s"
            )
    for r in orders:
        if r["gain"] > 1:
            print(
                f"order {r['seed']} {r['schedule']}: issued order's optimum {r['issued_optimum']}, "
                f"best of {r['orders']} orders {r['best_optimum']} ({r['gain']:.3f}x)"
            )
    print(json.dumps(result["summary"] | {"cpu_s": result["cpu_s"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
