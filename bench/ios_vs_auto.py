"""`auto` against IOS's exact stage search (`stream-partition{mode=ios}`), per graph.

Each graph goes through the pipeline of `schedule_quality` (gear-multiversion,
stream-partition{mode=M ignore-tags=true}, coreset-lower, insert-events, sync-verify) once with
`auto` and once with `ios`, and is simulated on all its ranks (`schedule_quality.run_mode`, the
measurement of every mode's makespan in docs/benchmarks.md).  The graphs: every bench workload
(`workloads.WORKLOADS`, or the quick sizes with `--quick`) and `--random` generated ones
(`workloads.random_dag`, `--ops` ops, 256x512 activations, seeds from `--first`).

The report gives, per graph, auto's makespan / IOS's (below 1: auto is faster), both compile
times in CPU seconds;
in all, the mean and geometric mean of the ratio and every graph where IOS wins (ratio > 1).

Usage: python bench/ios_vs_auto.py [--workloads a,b] [--random 20] [--ops 24] [--quick] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from schedule_quality import HW, run_mode
from workloads import QUICK_WORKLOADS, WORKLOADS, DagConfig, random_dag

import npuir
from npuir.backends.npu.hardware import load_hardware


def graphs(
    names: list[str] | None, quick: bool, randoms: int, ops: int, first: int
) -> list[tuple[str, str]]:
    """(name, module text) of every graph compared."""
    table = QUICK_WORKLOADS if quick else WORKLOADS
    chosen = [n for n in table if names is None or any(n.startswith(p) for p in names)]
    out = [(name, table[name]()) for name in chosen]
    for seed in range(first, first + randoms):
        cfg = DagConfig(ops=ops, rows=256, cols=512)
        out.append((f"random{ops}_{seed}", random_dag(seed, cfg)))
    return out


def compare(name: str, text: str) -> dict[str, Any]:
    """auto's and ios's makespans and compile CPU seconds on one graph."""
    hw = load_hardware(HW)
    module = npuir.parse_text(npuir.make_context(), text, f"{name}.mlir")
    row: dict[str, Any] = {"name": name}
    for mode in ("auto", "ios"):
        result = run_mode(module, mode, hw)
        row[mode] = result.to_json()
    auto, ios = row["auto"].get("makespan_ns"), row["ios"].get("makespan_ns")
    row["ratio"] = auto / ios if auto and ios else None
    return row


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
    return {
        "graphs": len(rows),
        "compared": len(ratios),
        "mean": sum(ratios) / len(ratios) if ratios else None,
        "geomean": math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None,
        "worst": max(ratios, default=None),
        "ios_wins": [r["name"] for r in rows if r["ratio"] is not None and r["ratio"] > 1.0],
        "failed": [r["name"] for r in rows if r["ratio"] is None],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", help="comma-separated names or prefixes (default: all)")
    ap.add_argument("--quick", action="store_true", help="the workloads at their quick sizes")
    ap.add_argument("--random", type=int, default=20, help="generated graphs")
    ap.add_argument("--ops", type=int, default=24, help="ops per generated graph")
    ap.add_argument("--first", type=int, default=0, help="the first generated graph's seed")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    names = args.workloads.split(",") if args.workloads else None
    rows = []
    for name, text in graphs(names, args.quick, args.random, args.ops, args.first):
        row = compare(name, text)
        rows.append(row)
        if not args.json:
            auto, ios = row["auto"], row["ios"]
            ratio = f"{row['ratio']:.4f}" if row["ratio"] is not None else "n/a"
            print(
                f"{name:22} auto {auto.get('makespan_ns', auto['status']):>10} ns "
                f"({auto.get('compile_cpu_s', 0):.2f} CPU-s)  ios "
                f"{ios.get('makespan_ns', ios['status']):>10} ns "
                f"({ios.get('compile_cpu_s', 0):.2f} CPU-s)  auto/ios {ratio}",
                flush=True,
            )
    total = summary(rows)
    if args.json:
        print(json.dumps({"hardware": HW, "rows": rows, "summary": total}, indent=1))
    else:
        print(
            f"{total['compared']} of {total['graphs']} graphs compared: auto/ios mean "
            f"{total['mean']:.4f}, geomean {total['geomean']:.4f}, worst {total['worst']:.4f}; "
            f"IOS wins on {len(total['ios_wins'])}: {', '.join(total['ios_wins']) or 'none'}"
        )
        if total["failed"]:
            print(f"not compared (a mode failed): {', '.join(total['failed'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
