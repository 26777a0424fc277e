"""Memory planning figures: plan against bound, cost of parallelism, auto under a budget, speed.

    python bench/memory.py [--quick] [--workloads seed,moe_decode,...] [--json]
    python bench/memory.py --scale 100000     # mem-plan CPU time on the chain and transformer

For every workload of `bench/workloads` (each rank of an SPMD workload runs the
same function, so one rank is planned, its peers mirrored):

- `plan/bound`: the planned peak of `auto`'s schedule (`mem-plan`, best-of)
  over the heaviest antichain of its buffers (no safe static plan is smaller);
- `cost`: the memory cost of parallelism, auto's planned peak over the planned
  peak of the same graph on one stream;
- `budget`: auto rerun with `mem-budget` = the one-stream peak; its makespan
  against one stream's, and its planned peak (never above the budget);
- `orderings`: the budgeted search itself (`npuir.schedule.mem_budget.fit_budget`,
  one rank simulated as `auto` judges) at the one-stream peak and half-way between
  it and auto's peak, with ordering at the peak against merging streams alone: the
  makespan each keeps (never slower with orderings) and the orderings kept.

`--scale N` times `mem-plan` and `mem-verify` (CPU seconds,
`time.process_time`) on the compile benchmark's chain and annotated transformer
of N ops, lowered by the rest of `npu-default` first (whose `sync-verify`
leaves the program graph and happens-before in the analysis cache, as inside
`npu-default`).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import npuir
from npuir.analysis.partition import STRATEGIES, Mode, assign
from npuir.analysis.program import build_program, scheduled_functions
from npuir.backends.npu.hardware import load_hardware
from npuir.driver.run import RunConfig, run_program
from npuir.schedule.auto import cost_strategies
from npuir.schedule.mem_budget import BudgetError, fit_budget, planned
from npuir.transforms.mem_plan import MemPlanPass
from npuir.transforms.mem_verify import MemVerifyPass

AUTO = "gear-multiversion,stream-partition{{mode=auto ignore-tags=true{extra}}},coreset-lower,insert-events,coreset-check,sync-verify,mem-plan,mem-verify"
SINGLE = "gear-multiversion,stream-partition{mode=single ignore-tags=true},coreset-lower,insert-events,coreset-check,sync-verify,mem-plan,mem-verify"
LOWER = "gear-multiversion,stream-partition,coreset-lower,insert-events,coreset-check,sync-verify"


def _run(text: str, pipeline: str) -> dict[str, Any]:
    outcome = run_program(
        RunConfig(
            path="<bench>", source=text, pipeline=pipeline, timing_only=True, mirror_peers=True
        )
    )
    return outcome.report


def ordering_figures(text: str) -> list[dict[str, Any]]:
    """The budgeted search with and without ordering at the peak, at two budgets."""
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, text)
    npuir.run_passes(ctx, module, npuir.build_pipeline("gear-multiversion"))
    hw = load_hardware("910b2")
    prog = build_program(scheduled_functions(module)[0])
    none: list[str | None] = [None] * len(prog)
    strategies = {**STRATEGIES, **cost_strategies(hw)}
    auto = assign(Mode.AUTO, prog, none, {}, 8, strategies=strategies)
    free = planned(prog, auto).peak
    single = planned(prog, assign(Mode.SINGLE, prog, none, {}, 8)).peak
    rows = []
    for where, budget in (("one-stream", single), ("half-way", (single + max(free, single)) // 2)):
        kept: dict[bool, tuple[int, int, int] | None] = {}
        for orderings in (False, True):
            try:
                best = fit_budget(prog, auto, none, hw, None, budget, orderings=orderings).best
                kept[orderings] = (best.makespan, best.peak, len(best.orderings))
            except BudgetError:
                kept[orderings] = None
        merged, ordered = kept[False], kept[True]
        rows.append(
            {
                "budget": where,
                "budget_bytes": budget,
                "merges_ns": merged[0] if merged else None,
                "orderings_ns": ordered[0] if ordered else None,
                "orderings_kept": ordered[2] if ordered else None,
                "within_budget": all(k[1] <= budget for k in kept.values() if k),
            }
        )
    return rows


def workload_figures(name: str, text: str) -> dict[str, Any]:
    auto = _run(text, AUTO.format(extra=""))
    single = _run(text, SINGLE)
    mem, one = auto["memory"], single["memory"]
    budget = one["peak_bytes"]
    fitted = _run(text, AUTO.format(extra=f" mem-budget={budget}"))
    return {
        "workload": name,
        "peak_bytes": mem["peak_bytes"],
        "bound_bytes": mem["bound_bytes"],
        "plan_over_bound": round(mem["peak_bytes"] / mem["bound_bytes"], 4)
        if mem["bound_bytes"]
        else 1.0,
        "timeline_peak_bytes": mem["timeline_peak_bytes"],
        "single_stream_peak_bytes": budget,
        "cost_of_parallelism": round(mem["peak_bytes"] / budget, 4) if budget else None,
        "auto_ns": auto["makespan_ns"],
        "single_ns": single["makespan_ns"],
        "budget_bytes": budget,
        "budget_auto_ns": fitted["makespan_ns"],
        "budget_peak_bytes": fitted["memory"]["peak_bytes"],
        "budget_faster": fitted["makespan_ns"] < single["makespan_ns"],
        "orderings": ordering_figures(text),
    }


def scale_figures(n_ops: int) -> list[dict[str, Any]]:
    from generate import chain, transformer_layers

    out = []
    for shape, text in (("chain", chain(n_ops)), ("transformer", transformer_layers(n_ops))):
        ctx = npuir.make_context()
        module = npuir.parse_text(ctx, text)
        # The rest of npu-default first: sync-verify leaves the program graph and its
        # happens-before in the analysis cache, as mem-plan finds them inside npu-default.
        npuir.run_passes(ctx, module, npuir.build_pipeline(LOWER))
        began = time.process_time()
        MemPlanPass().apply(ctx, module)
        plan_s = time.process_time() - began
        began = time.process_time()
        MemVerifyPass().apply(ctx, module)
        verify_s = time.process_time() - began
        out.append(
            {
                "shape": shape,
                "ops": n_ops,
                "mem_plan_cpu_s": round(plan_s, 2),
                "mem_verify_cpu_s": round(verify_s, 2),
            }
        )
    return out


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def main(argv: list[str] | None = None) -> int:
    from workloads import QUICK_WORKLOADS, WORKLOADS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the workloads at small sizes")
    ap.add_argument("--workloads", help="comma-separated names (default: all)")
    ap.add_argument("--scale", type=int, help="time mem-plan on the chain and transformer of N ops")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.scale:
        rows = scale_figures(args.scale)
        print(
            json.dumps(rows)
            if args.json
            else "\n".join(
                f"{r['shape']:<12} {r['ops']} ops: mem-plan {r['mem_plan_cpu_s']} s CPU, mem-verify {r['mem_verify_cpu_s']} s CPU"
                for r in rows
            )
        )
        return 0
    table = QUICK_WORKLOADS if args.quick else WORKLOADS
    names = args.workloads.split(",") if args.workloads else list(table)
    rows = [workload_figures(n, table[n]()) for n in names]
    ratios = [r["plan_over_bound"] for r in rows]
    geomean = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    faster = sum(r["budget_faster"] for r in rows)
    summary = {
        "plan_over_bound_geomean": round(geomean, 4),
        "plan_over_bound_max": max(ratios),
        "budget_faster_than_single": f"{faster}/{len(rows)}",
        "budget_never_exceeded": all(r["budget_peak_bytes"] <= r["budget_bytes"] for r in rows)
        and all(o["within_budget"] for r in rows for o in r["orderings"]),
        "orderings_never_slower": all(
            o["merges_ns"] is None
            or (o["orderings_ns"] is not None and o["orderings_ns"] <= o["merges_ns"])
            for r in rows
            for o in r["orderings"]
        ),
        "orderings_faster": sum(
            o["merges_ns"] is not None
            and o["orderings_ns"] is not None
            and o["orderings_ns"] < o["merges_ns"]
            for r in rows
            for o in r["orderings"]
        ),
    }
    if args.json:
        print(json.dumps({"workloads": rows, "summary": summary}, indent=1))
        return 0
    print(
        f"{'workload':<22} {'plan':>12} {'bound':>12} {'p/b':>6} {'timeline':>12} {'1-stream':>12} {'cost':>6} {'auto µs':>9} {'1s µs':>9} {'budget µs':>9}"
    )
    for r in rows:
        print(
            f"{r['workload']:<22} {r['peak_bytes']:>12} {r['bound_bytes']:>12} {r['plan_over_bound']:>6.3f} "
            f"{r['timeline_peak_bytes']:>12} {r['single_stream_peak_bytes']:>12} {_num(r['cost_of_parallelism']):>6} "
            f"{r['auto_ns'] / 1000:>9.1f} {r['single_ns'] / 1000:>9.1f} {r['budget_auto_ns'] / 1000:>9.1f}"
        )
    print("\nbudgeted search, merges only against ordering at the peak (µs, orderings kept):")
    for r in rows:
        cells = []
        for o in r["orderings"]:
            m = "-" if o["merges_ns"] is None else f"{o['merges_ns'] / 1000:.1f}"
            t = "-" if o["orderings_ns"] is None else f"{o['orderings_ns'] / 1000:.1f}"
            cells.append(f"{o['budget']}: {m} vs {t} ({o['orderings_kept']})")
        print(f"{r['workload']:<22} " + "; ".join(cells))
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
