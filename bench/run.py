"""The benchmark harness: `python bench/run.py SUBCOMMAND [--json]`.

Subcommands:
  compile   parse, print, npu-default, auto and nimble side by side on a chain,
            a wide DAG and an annotated transformer (time and peak RSS per phase,
            each in a subprocess; bench/scale.py), at 1k, 10k and 100k ops.
  scale     the same at two sizes, printing each phase's growth exponent and
            factor.
  schedule  simulated makespan, waits and streams of every workload under every
            stream-partition mode, against a lower bound (schedule_quality.py).
  oracle    auto against the exact optimum on small generated graphs
            (oracle_quality.py).
  sim       simulator throughput on lowered programs of 10k and 100k ops
            (sim_throughput.py).
  gears     gear-multiversion time against the number of gears (gear_time.py).
  interp    interpreter overhead against calling the numpy kernels directly
            (interp_overhead.py).
  build     building a program with npuir.torchair against parsing it as text
            (torchair_build.py).
  roundtrip npuir-opt (fast and xDSL parser) and mlir-opt-19 reading and printing the
            same generic file, when mlir-opt is installed (roundtrip.py).
  geimport  importing a 1 MB GE dump (roundtrip.py).
  torch     the torch.compile backend's compile overhead on a decoder layer, as a
            ratio to torch.compile(backend="eager") (torch_compile.py; needs torch).
  examples  rewrite examples/*.mlir from the workload generators
            (`--check`: only say whether they are up to date).

`--json` prints one JSON document; `--quick` makes any subcommand a small
smoke run.

The harness is not a test and CI does not run it.  Figures are ratios from
one run: these machines are noisy, so compare within a run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))


def run_compile(sizes: list[int], shapes: list[str], phases: list[str]) -> dict[str, Any]:
    from scale import run_scale

    return run_scale(sizes, tuple(shapes), phases=tuple(phases))


def _print_compile(result: dict[str, Any]) -> None:
    from scale import print_scale

    print_scale(result)


def _print_growth(result: dict[str, Any]) -> None:
    for key in ("exponent", "factor"):
        for shape, exps in result[f"growth_{key}s"].items():
            text = ", ".join(f"{p} {'-' if e is None else e}" for p, e in exps.items())
            print(f"growth {key} ({shape}): {text}")


def run_examples(check: bool) -> dict[str, Any]:
    from workloads import EXAMPLES, EXAMPLES_DIR, example_text

    status: dict[str, str] = {}
    for name, (filename, _) in EXAMPLES.items():
        path = EXAMPLES_DIR / filename
        text = example_text(name)
        current = path.read_text() if path.exists() else None
        if current == text:
            status[filename] = "up to date"
        elif check:
            status[filename] = "stale"
        else:
            path.write_text(text)
            status[filename] = "written"
    return {"examples": status, "ok": not check or all(v == "up to date" for v in status.values())}


def main() -> None:
    from schedule_quality import MODES

    ap = argparse.ArgumentParser(prog="bench/run.py", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compile", help="parse, print, npu-default, auto, nimble side by side")
    c.add_argument("--sizes", default="1000,10000,100000")
    c.add_argument(
        "--shapes", default="chain,wide,transformer", help="any of chain, wide, transformer"
    )
    sc = sub.add_parser("scale", help="growth exponents of every compile phase")
    sc.add_argument("--sizes", default="10000,100000")
    sc.add_argument(
        "--shapes", default="chain,wide,transformer", help="any of chain, wide, transformer"
    )
    s = sub.add_parser("schedule", help="makespan per workload and stream-partition mode")
    s.add_argument("--workloads", help="comma-separated names or prefixes (default: all)")
    s.add_argument("--modes", default=",".join(MODES), help="comma-separated modes")
    o = sub.add_parser("oracle", help="auto against the exact optimum on small graphs")
    o.add_argument("--sizes", default="5,6,7,8", help="op counts (the solver takes up to 8)")
    o.add_argument("--seeds", type=int, default=8, help="graphs per op count")
    o.add_argument(
        "--first", type=int, default=0, help="skip this many seeds (another set of graphs)"
    )
    o.add_argument(
        "--limits",
        action="store_true",
        help="aiv collectives; auto limits=true against the optimum over core limits too",
    )
    m = sub.add_parser("sim", help="simulator throughput at 10k and 100k ops")
    m.add_argument("--sizes", default="10000,100000")
    g = sub.add_parser("gears", help="gear-multiversion time against the number of gears")
    g.add_argument("--ops", type=int, default=1000)
    g.add_argument("--gears", default="10,25,50,100")
    i = sub.add_parser("interp", help="interpreter overhead against direct kernel calls")
    i.add_argument("--size", type=int, default=2048)
    i.add_argument("--repeats", type=int, default=3)
    b = sub.add_parser("build", help="npuir.torchair building against parsing")
    b.add_argument("--sizes", default="1000,10000,100000")
    t = sub.add_parser("torch", help="the torch.compile backend's overhead (needs torch)")
    t.add_argument("--repeats", type=int, default=5)
    st = sub.add_parser("startup", help="tool start-up against importing xDSL")
    st.add_argument("--repeats", type=int, default=5)
    rt = sub.add_parser("roundtrip", help="npuir-opt against mlir-opt on the same generic file")
    rt.add_argument("--sizes", default="10000,100000")
    rt.add_argument("--shapes", default="chain,transformer", help="any of chain, wide, transformer")
    gi = sub.add_parser("geimport", help="import of a 1 MB GE dump")
    e = sub.add_parser("examples", help="rewrite examples/*.mlir from the generators")
    e.add_argument("--check", action="store_true", help="only report stale files")
    for p in (c, sc):
        p.add_argument(
            "--phases",
            default="parse,print,npu-default,auto,nimble",
            help="which phases to run (parse always runs: the ratios are to it)",
        )
    for p in (c, sc, s, o, m, g, i, b, t, st, rt, gi, e):
        p.add_argument("--json", action="store_true")
        p.add_argument("--quick", action="store_true", help="a small smoke run")
    args = ap.parse_args()
    result: dict[str, Any]
    if args.command in ("compile", "scale"):
        sizes = "200,1000" if args.quick else args.sizes
        shapes = [shape.strip() for shape in args.shapes.split(",") if shape.strip()]
        phases = [phase.strip() for phase in args.phases.split(",") if phase.strip()]
        from scale import PHASES, SHAPES

        for name, given, known in (("phase", phases, PHASES), ("shape", shapes, SHAPES)):
            for item in given:
                if item not in known:
                    ap.error(f"unknown {name} '{item}'; expected one of {', '.join(known)}")
        result = run_compile([int(n) for n in sizes.split(",")], shapes, phases)
        printer: Callable[[dict[str, Any]], None] = (
            _print_compile if args.command == "compile" else _print_growth
        )
    elif args.command == "schedule":
        from schedule_quality import print_schedule, run_schedule

        modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
        result = run_schedule(args.workloads, args.quick, modes)
        printer = print_schedule
    elif args.command == "oracle":
        from oracle_quality import print_oracle, run_oracle

        sizes = "4" if args.quick else args.sizes
        seeds = 3 if args.quick else args.seeds
        result = run_oracle([int(n) for n in sizes.split(",")], seeds, args.limits, args.first)
        printer = print_oracle
    elif args.command == "sim":
        from sim_throughput import print_sim, run_sim

        sizes = "1000,10000" if args.quick else args.sizes
        result = run_sim([int(n) for n in sizes.split(",")])
        printer = print_sim
    elif args.command == "gears":
        from gear_time import print_gears, run_gears

        ops, gears = (100, "10,25") if args.quick else (args.ops, args.gears)
        result = run_gears(ops, [int(n) for n in gears.split(",")])
        printer = print_gears
    elif args.command == "interp":
        from interp_overhead import print_interp, run_interp

        size, repeats = (256, 2) if args.quick else (args.size, args.repeats)
        result = run_interp(size, repeats)
        printer = print_interp
    elif args.command == "build":
        from torchair_build import print_build, run_build

        sizes = "200,1000" if args.quick else args.sizes
        result = run_build([int(n) for n in sizes.split(",")])
        printer = print_build
    elif args.command == "roundtrip":
        from roundtrip import print_roundtrip, run_roundtrip

        sizes = "200,1000" if args.quick else args.sizes
        shapes = [shape.strip() for shape in args.shapes.split(",") if shape.strip()]
        result = run_roundtrip([int(n) for n in sizes.split(",")], shapes)
        printer = print_roundtrip
    elif args.command == "geimport":
        from roundtrip import print_ge_import, run_ge_import

        result = run_ge_import()
        printer = print_ge_import
    elif args.command == "torch":
        from torch_compile import print_torch, run_torch

        result = run_torch(1 if args.quick else args.repeats)
        printer = print_torch
    elif args.command == "startup":
        from startup import print_startup, run_startup

        result = run_startup(2 if args.quick else args.repeats)
        printer = print_startup
    else:
        result = run_examples(args.check)

        def printer(r: dict[str, Any]) -> None:
            for name, state in r["examples"].items():
                print(f"examples/{name}: {state}")

    if args.json:
        print(json.dumps({args.command: result}, indent=2))
    else:
        printer(result)
    if args.command == "examples" and not result["ok"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
