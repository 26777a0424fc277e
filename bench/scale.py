"""Scale: parse, print, npu-default, auto and nimble side by side, time and peak memory.

Each measured phase runs in a fresh subprocess (`python bench/scale.py PHASE SHAPE N`),
which generates the text, parses it and — for a pass phase — runs the pipeline on the
parsed module, then reports the phase's CPU time (`time.process_time`: these shared
machines are noisy, so wall time would measure the neighbours) and the process's peak RSS
(`ru_maxrss`).  The `parse` phase stops after parsing, so "RSS above parse" is the pass
process's peak minus the parse process's peak: what the phase adds on top of the IR.

Shapes (bench/generate.py):
  chain        unannotated: one long dependence chain of 2048x2048 f16 ops, matmuls and
               adds alternating;
  wide         unannotated: levels of 16 such ops, each reading one or two of the level
               before;
  transformer  annotated: decoder-layer blocks with their k/v projections and all_reduce in
               `stream.switch` scopes (two scopes per 13 ops), the shape whose parse used to
               grow with regions x values.

`python bench/scale.py --per-node RANKS [--layers 61] [--functions K]` measures instead
what one simulated (rank, op) node costs: `npuir-run --timing-only` on the DeepSeek-V3-shaped
program of `bench/deepseek_v3.py` with every rank simulated (no mirroring), SPMD (`--ranks`)
or, with `--functions K`, MPMD over K copies of the rank function (`--entries`), in a child
process; it prints the child's CPU seconds and peak RSS, and both over the simulated nodes
(every rank's nodes: its ops, records, waits and return).

`python bench/scale.py --auto-plans DIR [--jobs N]` runs `stream-partition{mode=auto}` (with
`ignore-tags=true`, and again with `limits=false`) on every bench workload
(`bench/workloads`) in this process, writes each plan (the printed module) into DIR and
prints each search's CPU seconds and their total: `diff -r` two such directories to check
that a change to the search's machinery leaves its plans byte for byte as they were.
`--jobs N` judges the candidates on a pool of N processes (`npuir.executor`).

The growth exponent of a phase between two sizes is log(t2 / t1) / log(n2 / n1): 1.0 is
linear, 2.0 quadratic.  The growth factor is t2 / t1 itself (10.0 is linear over 10x).
"""

from __future__ import annotations

import gc
import json
import math
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
PHASES: dict[str, str | None] = {
    "parse": None,
    "verify": None,
    "print": None,
    "npu-default": "npu-default",
    "auto": "stream-partition{mode=auto}",
    "nimble": "stream-partition{mode=nimble}",
    "run": None,
}
"""Each phase and the pipeline it runs after parsing (None: no pipeline).

`parse` is `npuir.parse_text`: parsing and the verification after it (npuir verifies
what it reads), as every tool does; `verify` is that verification alone, timed again
on the parsed module; `print` prints the module in the custom form; `run` is the whole
`npuir-run --timing-only --mirror-peers` on the program's file (parse, verify, lower,
simulate, explain), in the child."""
SHAPES = ("chain", "wide", "transformer")


def _text(shape: str, n: int) -> str:
    sys.path.insert(0, str(HERE))
    from generate import chain, transformer_layers, wide_dag

    make = {"chain": chain, "wide": wide_dag, "transformer": transformer_layers}[shape]
    return make(n)


def child(phase: str, shape: str, n: int) -> dict[str, Any]:
    """Run one phase in this process and return its figures."""
    import npuir

    text = _text(shape, n)
    ctx = npuir.make_context()
    gc.collect()
    t0 = time.process_time()
    module = npuir.parse_text(ctx, text, f"{shape}-{n}.mlir")
    seconds = time.process_time() - t0
    del text
    gc.freeze()  # the IR is long-lived: keep the cyclic collector off it
    pipeline = PHASES[phase]
    if phase == "verify":
        from npuir.verifier import forget_passed_signatures, verify

        forget_passed_signatures()  # as a first verification: the parse's is remembered
        t0 = time.process_time()
        verify(module)
        seconds = time.process_time() - t0
    elif phase == "run":
        import tempfile

        from npuir.tools.cli import run_tool
        from npuir.tools.run import run

        with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
            f.write(_text(shape, n))
        import contextlib
        import io

        t0 = time.process_time()
        with contextlib.redirect_stdout(io.StringIO()):
            # As the tool's `main` does: this process ends after the run.
            status = run_tool(
                "npuir-run", run, [f.name, "--timing-only", "--mirror-peers"], exiting=True
            )
        seconds = time.process_time() - t0
        Path(f.name).unlink()
        if status != 0:
            raise SystemExit(f"npuir-run exited {status}")
    elif phase == "print":
        t0 = time.process_time()
        npuir.print_ir(module)
        seconds = time.process_time() - t0
    elif pipeline is not None:
        t0 = time.process_time()
        npuir.run_passes(ctx, module, npuir.build_pipeline(pipeline), verify_each=False)
        seconds = time.process_time() - t0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": round(seconds, 3), "peak_rss_mb": round(rss_mb, 1)}


def measure(phase: str, shape: str, n: int, timeout: float) -> dict[str, Any]:
    """Run `phase` in a subprocess; a phase that does not finish in `timeout` s says so."""
    cmd = [sys.executable, str(Path(__file__)), phase, shape, str(n)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"status": f"timeout after {timeout:.0f} s"}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"status": f"failed: {last}"}
    return {"status": "ok", **json.loads(done.stdout)}


def run_scale(
    sizes: list[int],
    shapes: tuple[str, ...] = SHAPES,
    timeout: float = 3600,
    phases: tuple[str, ...] = tuple(PHASES),
) -> dict[str, Any]:
    """Measure `phases` (parse always, since the ratios are to it) of every shape and size."""
    wanted = [p for p in PHASES if p == "parse" or p in phases]
    rows: list[dict[str, Any]] = []
    for shape in shapes:
        for n in sizes:
            phases_run = {phase: measure(phase, shape, n, timeout) for phase in wanted}
            rows.append({"shape": shape, "ops": n, "phases": phases_run, **_ratios(phases_run)})
    return {"rows": rows, "growth_exponents": growth(rows), "growth_factors": growth(rows, False)}


def _ratios(phases: dict[str, dict[str, Any]]) -> dict[str, Any]:
    parse = phases["parse"]
    out: dict[str, Any] = {}
    if parse.get("status") != "ok":
        return out
    for phase in ("npu-default", "auto", "nimble"):
        r = phases.get(phase, {})
        if r.get("status") == "ok":
            out[f"{phase}_over_parse"] = round(r["seconds"] / parse["seconds"], 3)
            out[f"{phase}_rss_above_parse_mb"] = round(r["peak_rss_mb"] - parse["peak_rss_mb"], 1)
    return out


def growth(rows: list[dict[str, Any]], exponent: bool = True) -> dict[str, dict[str, float | None]]:
    """Per shape and phase, the growth exponent between its two largest sizes measured (or,
    with `exponent` false, the growth factor: the larger size's time over the smaller's)."""
    out: dict[str, dict[str, float | None]] = {}
    for shape in dict.fromkeys(r["shape"] for r in rows):
        mine = sorted((r for r in rows if r["shape"] == shape), key=lambda r: r["ops"])
        if len(mine) < 2:
            continue
        a, b = mine[-2], mine[-1]
        exps: dict[str, float | None] = {}
        for phase in a["phases"]:
            ra, rb = a["phases"][phase], b["phases"][phase]
            ok = ra.get("status") == rb.get("status") == "ok" and ra["seconds"] > 0
            if not (ok and rb["seconds"] > 0):
                exps[phase] = None
                continue
            factor = rb["seconds"] / ra["seconds"]
            exps[phase] = round(
                math.log(factor) / math.log(b["ops"] / a["ops"]) if exponent else factor, 2
            )
        out[shape] = exps
    return out


def print_scale(result: dict[str, Any]) -> None:
    shown = list(result["rows"][0]["phases"]) if result["rows"] else []
    head = "".join(f" {p + ' s':>13} {'MB':>7}" for p in shown)
    print(f"{'shape':<6} {'ops':>7}{head}")
    for r in result["rows"]:
        cells = ""
        for phase in shown:
            f = r["phases"][phase]
            if f.get("status") == "ok":
                cells += f" {f['seconds']:>13.2f} {f['peak_rss_mb']:>7.0f}"
            else:
                cells += f" {f['status'][:21]:>21}"
        print(f"{r['shape']:<6} {r['ops']:>7}{cells}")
        ratios = ", ".join(f"{k} {v}" for k, v in r.items() if k.endswith(("_parse", "_mb")))
        if ratios:
            print(f"{'':<15}{ratios}")
    for shape, exps in result["growth_exponents"].items():
        text = ", ".join(f"{p} {'-' if e is None else e}" for p, e in exps.items())
        print(f"growth exponent ({shape}): {text}")
    for shape, factors in result["growth_factors"].items():
        text = ", ".join(f"{p} {'-' if f is None else f}" for p, f in factors.items())
        print(f"growth factor ({shape}): {text}")


def per_node(ranks: int, layers: int = 61, functions: int = 1) -> dict[str, Any]:
    """CPU and peak RSS of `npuir-run --timing-only` on `ranks` ranks of the DeepSeek-V3
    program, and both per simulated node (see the module docstring)."""
    import os
    import tempfile

    sys.path.insert(0, str(HERE))
    from deepseek_v3 import DeepSeekV3Config, deepseek_v3, entries
    from workloads.moe import MoeConfig

    import npuir
    from npuir.analysis.program import build_program, module_streams, scheduled_functions

    cfg = DeepSeekV3Config(layers=layers, moe=MoeConfig(tokens=64, ep=ranks))
    text = deepseek_v3(cfg, functions)
    with tempfile.TemporaryDirectory(prefix="npuir-scale-") as tmp:
        path = Path(tmp) / "deepseek_v3.mlir"
        path.write_text(text)
        who = (
            ["--entries", ",".join(entries(cfg, functions))]
            if functions > 1
            else ["--ranks", str(ranks)]
        )
        run = Path(sys.executable).parent / "npuir-run"
        child = subprocess.Popen(
            [str(run), str(path), "--timing-only", *who],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _, status, usage = os.wait4(child.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"npuir-run exited {os.waitstatus_to_exitcode(status)}")
        # The nodes one rank simulates: its function lowered by the default pipeline.
        one = deepseek_v3(cfg, 1)
        ctx = npuir.make_context()
        module = npuir.parse_text(ctx, one, "one.mlir")
        npuir.run_passes(ctx, module, npuir.build_pipeline("npu-default"), verify_each=False)
        (func,) = scheduled_functions(module)
        nodes = len(build_program(func, module_streams(module))) * ranks
    cpu = usage.ru_utime + usage.ru_stime
    rss = usage.ru_maxrss * 1024
    return {
        "ranks": ranks,
        "layers": layers,
        "functions": functions,
        "nodes": nodes,
        "cpu_s": round(cpu, 2),
        "peak_rss_mb": round(rss / 2**20),
        "us_per_node": round(cpu / nodes * 1e6, 2),
        "kib_per_node": round(rss / nodes / 1024, 3),
    }


def auto_plans(out: Path, jobs: str = "1") -> float:
    """Write auto's plan of every bench workload into `out` (see the module docstring) and
    print each search's CPU seconds; their total."""
    sys.path.insert(0, str(HERE))
    from workloads import WORKLOADS

    import npuir
    from npuir.executor import parse_jobs, using

    out.mkdir(parents=True, exist_ok=True)
    total = 0.0
    with parse_jobs(jobs).make() as pool, using(pool):
        for name, make in WORKLOADS.items():
            text = make()
            for tag, options in (("auto", ""), ("nolimits", " limits=false")):
                ctx = npuir.make_context()
                module = npuir.parse_text(ctx, text, f"{name}.mlir")
                spec = f"stream-partition{{mode=auto ignore-tags=true{options}}}"
                t0 = time.process_time()
                npuir.run_passes(ctx, module, npuir.build_pipeline(spec), verify_each=False)
                seconds = time.process_time() - t0
                total += seconds
                (out / f"{name}.{tag}.mlir").write_text(npuir.print_ir(module))
                print(f"{name:<22} {tag:<9} {seconds:6.2f} CPU-s", flush=True)
    print(f"{'total':<32} {total:6.2f} CPU-s")
    return total


if __name__ == "__main__":
    if sys.argv[1] == "--auto-plans":
        import argparse

        ap = argparse.ArgumentParser(description="auto's plans of the bench workloads")
        ap.add_argument("--auto-plans", type=Path, required=True, metavar="DIR")
        ap.add_argument("--jobs", default="1")
        a = ap.parse_args()
        auto_plans(a.auto_plans, a.jobs)
    elif sys.argv[1] == "--per-node":
        import argparse

        ap = argparse.ArgumentParser(description="CPU and memory per simulated node")
        ap.add_argument("--per-node", type=int, required=True, metavar="RANKS")
        ap.add_argument("--layers", type=int, default=61)
        ap.add_argument("--functions", type=int, default=1)
        a = ap.parse_args()
        print(json.dumps(per_node(a.per_node, a.layers, a.functions)))
    else:
        print(json.dumps(child(sys.argv[1], sys.argv[2], int(sys.argv[3]))))
