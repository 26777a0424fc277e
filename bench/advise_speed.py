"""How long `npuir-advise` takes, against the budgets of the advice issue, in one run.

`python bench/advise_speed.py [--depths 250,1000,4990] [--skip-torch] [--repeat 3]`

Each command runs in its own process and is measured in CPU seconds (user + system, of
the child and everything it starts), so that a busy machine slows the numerator and the
denominator alike; each pair is run `--repeat` times, the two commands taking turns, and
each keeps its least time (what the machine's other load added least to).  npuir's bytecode is compiled first (`compileall`, as `pip install`
does for an installed package; torch's is compiled already), so that neither side pays
for compiling its modules under `PYTHONDONTWRITEBYTECODE`.  Printed, with their ratios:

- `npuir-advise model.pt2` on the 2-layer MoE decoder of `examples/moe_decoder.py` against
  `python -c "import torch"` (budget: 2x), and against `npuir-run` on the same model
  imported as IR (`npuir-import`; budget: 3x);
- `npuir-advise` against `npuir-run --timing-only` on the seed, the deadlock example, the
  gears example and on `stream.switch` scopes nested `--depths` deep (the nesting
  `bench/deep_nesting.py` times phase by phase; budget: 3x).
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT / "test" / "unit"))

from test_parsing import nested_switches  # noqa: E402


def cpu(*command: str) -> float:
    """CPU seconds `command` takes (it must succeed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 3):  # 3: a deadlock npuir-run reports
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def pair(repeat: int, advise: list[str], base: list[str]) -> tuple[float, float]:
    """The least CPU seconds of `advise` and of `base` over `repeat` turns each."""
    spent = [(cpu(*advise), cpu(*base)) for _ in range(repeat)]
    return min(a for a, _ in spent), min(b for _, b in spent)


def row(name: str, times: tuple[float, float], base_name: str, budget: float) -> None:
    advise, base = times
    ratio = advise / base
    verdict = "ok" if ratio <= budget else "OVER"
    print(
        f"{name:<28} advise {advise:6.2f} s  {base_name} {base:6.2f} s  "
        f"ratio {ratio:4.2f} (budget {budget:g}x, {verdict})",
        flush=True,
    )


def _compile_npuir() -> None:
    """Byte-compile npuir's own modules (not the tests, benchmarks or the venv)."""
    skip = re.compile(r"[/\\](\.venv|test|bench|docs|examples|build)[/\\]")
    compileall.compile_dir(str(ROOT), quiet=1, rx=skip, workers=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--depths", default="250,1000,4990")
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="turns per pair (least time kept)")
    args = ap.parse_args()
    n = max(1, args.repeat)
    advise, run = str(BIN / "npuir-advise"), str(BIN / "npuir-run")
    _compile_npuir()
    with tempfile.TemporaryDirectory(prefix="npuir-bench-") as scratch:
        tmp = Path(scratch)
        if not args.skip_torch:
            archive = tmp / "moe_decoder.pt2"
            # A copy: beside the original, `import torchair` finds examples/torchair/.
            model = tmp / "moe_decoder.py"
            shutil.copy(ROOT / "examples" / "moe_decoder.py", model)
            subprocess.run(
                [sys.executable, str(model), str(archive)],
                check=True,
                env={**os.environ, "PYTHONWARNINGS": "ignore"},
            )
            imported = tmp / "moe_decoder.mlir"
            subprocess.run(
                [str(BIN / "npuir-import"), str(archive), "-o", str(imported)],
                check=True,
                capture_output=True,
            )
            row(
                "moe_decoder.pt2",
                pair(n, [advise, str(archive)], [sys.executable, "-c", "import torch"]),
                "import torch",
                2,
            )
            row(
                "moe_decoder (imported IR)",
                pair(n, [advise, str(imported)], [run, str(imported), "--timing-only"]),
                "npuir-run",
                3,
            )
        examples = [
            ("seed_multistream.mlir", []),
            ("core_limit_deadlock.mlir", ["--entries", "rank0,rank1"]),
            ("gears.mlir", ["--shape", "0=4x2", "--shape", "1=4x2"]),
        ]
        for name, extra in examples:
            path = str(ROOT / "examples" / name)
            row(
                name,
                pair(n, [advise, path, *extra], [run, path, "--timing-only", *extra]),
                "npuir-run",
                3,
            )
        for depth in map(int, args.depths.split(",")):
            deep = tmp / f"deep{depth}.mlir"
            deep.write_text(nested_switches(depth))
            row(
                f"{depth} nested scopes",
                pair(n, [advise, str(deep)], [run, str(deep), "--timing-only"]),
                "npuir-run",
                3,
            )


if __name__ == "__main__":
    main()
