"""The benchmark harness: `python bench/run.py SUBCOMMAND [--json]`.

Subcommands:
  compile   pass time of stream-partition,insert-events,sync-verify next to
            parse time, at 1k, 10k and 100k ops, and how it grows.

The harness is not a test and CI does not run it.  Figures are ratios from
one run: these machines are noisy, so compare within a run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))


def run_compile(sizes: list[int]) -> dict[str, Any]:
    from compile_time import measure

    rows = []
    for n in sizes:
        f = measure(n)
        rows.append(
            {
                "ops": f.ops,
                "parse_s": round(f.parse_s, 4),
                "passes_s": round(f.passes_s, 4),
                "passes_over_parse": round(f.ratio, 4),
                "parse_ops_per_s": round(f.ops / f.parse_s),
            }
        )
    growth = None
    if len(rows) >= 2:
        a, b = rows[-2], rows[-1]
        growth = round(b["passes_s"] / a["passes_s"], 2), round(b["ops"] / a["ops"], 2)
    return {"rows": rows, "passes_growth_vs_size_growth": growth}


def _print_compile(result: dict[str, Any]) -> None:
    print(f"{'ops':>8} {'parse s':>9} {'passes s':>9} {'passes/parse':>13} {'parse ops/s':>12}")
    for r in result["rows"]:
        print(
            f"{r['ops']:>8} {r['parse_s']:>9.3f} {r['passes_s']:>9.3f} "
            f"{r['passes_over_parse']:>13.3f} {r['parse_ops_per_s']:>12}"
        )
    if result["passes_growth_vs_size_growth"]:
        t, n = result["passes_growth_vs_size_growth"]
        print(f"pass time grew {t}x for {n}x the ops")


def main() -> None:
    ap = argparse.ArgumentParser(prog="bench/run.py", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compile", help="pass time against parse time")
    c.add_argument("--sizes", default="1000,10000,100000")
    for p in (c,):
        p.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.command == "compile":
        result = run_compile([int(s) for s in args.sizes.split(",")])
        if args.json:
            print(json.dumps({"compile": result}, indent=2))
        else:
            _print_compile(result)


if __name__ == "__main__":
    main()
