"""A GE dump against the same program as `.mlir`: CPU time and peak memory of each route.

    python bench/ge_vs_mlir.py [--ops 100000,1000000] [--keep DIR]

For each size N, writes one program twice -- a chain of N 2048x2048 f16 ops, matmuls
and adds alternating, two inputs:

- as a GE text dump (`ge_chain_text` of bench/extreme_inputs.py: `op` blocks with their
  input and output descriptors, as TorchAir writes them), and
- as `.mlir` (`chain` of bench/generate.py: the same ops, types and order);

then runs, each in a fresh child process timed by `getrusage` (user + system CPU
seconds, peak RSS):

- the GE route: `npuir-import DUMP -o OUT` (read, build, verify, print with locations);
- the `.mlir` route: `npuir-opt CHAIN.mlir -o OUT` (parse, verify, print).

It prints both and their ratios (GE over `.mlir`); the target is at most 2x in both.
With `--reread`, a third row, `npuir-opt` reading the import's own output (op names and
locations on every op), shows what a user pays to re-read an imported program.  Run it on an idle
machine: CPU time is what other processes disturb least, but not at all.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(HERE))

from extreme_inputs import ge_chain_text  # noqa: E402
from generate import chain  # noqa: E402

WRAPPER = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
use = resource.getrusage(resource.RUSAGE_CHILDREN)
if done.returncode:
    sys.stderr.buffer.write(done.stderr[-2000:])
print(done.returncode, use.ru_utime + use.ru_stime, use.ru_maxrss)
"""


def measure(argv: list[str]) -> tuple[float, float]:
    """CPU seconds and peak RSS (MB) of `argv` run alone in a child."""
    out = subprocess.run(
        [sys.executable, "-c", WRAPPER, *argv], capture_output=True, text=True, check=True
    )
    status, cpu, rss = out.stdout.split()
    if status != "0":
        raise SystemExit(f"{' '.join(argv)} exited {status}: {out.stderr}")
    return float(cpu), int(rss) / 1024


def compare(n: int, directory: Path, reread: bool) -> dict[str, tuple[float, float]]:
    """Each route's CPU seconds and peak MB, printed as each is measured."""
    dump, mlir, out = directory / f"chain{n}.txt", directory / f"chain{n}.mlir", directory / "out"
    dump.write_text(ge_chain_text(n))
    mlir.write_text(chain(n))
    runs = {
        "npuir-import (GE dump)": [str(BIN / "npuir-import"), str(dump), "-o", f"{out}.ge"],
        "npuir-opt (.mlir)": [str(BIN / "npuir-opt"), str(mlir), "-o", f"{out}.mlir"],
    }
    if reread:
        runs["npuir-opt (import's output)"] = [
            str(BIN / "npuir-opt"),
            f"{out}.ge",
            "-o",
            f"{out}.rt",
        ]
    print(f"{n} ops{'':<26}{'CPU s':>9}{'peak MB':>9}", flush=True)
    rows: dict[str, tuple[float, float]] = {}
    for name, argv in runs.items():
        cpu, mb = rows[name] = measure(argv)
        print(f"  {name:<29}{cpu:>9.2f}{mb:>9.0f}", flush=True)
    for path in (dump, mlir, Path(f"{out}.ge"), Path(f"{out}.mlir"), Path(f"{out}.rt")):
        path.unlink(missing_ok=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", default="100000,1000000", help="comma-separated sizes")
    ap.add_argument("--keep", type=Path, help="write the programs here, not in a temp dir")
    ap.add_argument(
        "--reread", action="store_true", help="also time npuir-opt reading the import's output"
    )
    args = ap.parse_args(argv)
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="npuir-ge-vs-mlir-") as scratch:
        directory = args.keep or Path(scratch)
        directory.mkdir(parents=True, exist_ok=True)
        for n in (int(x) for x in args.ops.split(",")):
            rows = compare(n, directory, args.reread)
            (ge_cpu, ge_mb), (ml_cpu, ml_mb) = list(rows.values())[:2]
            print(
                f"  GE over .mlir: CPU {ge_cpu / ml_cpu:.2f}x, peak {ge_mb / ml_mb:.2f}x",
                flush=True,
            )
            worst = max(worst, ge_cpu / ml_cpu, ge_mb / ml_mb)
    return 0 if worst <= 2.0 else 1


if __name__ == "__main__":
    sys.exit(main())
