"""Start-up cost of the tools against importing xDSL (`python bench/run.py startup`).

Each command runs `repeats` times in a fresh process; the figure is the least CPU time
(user + system) it took, read from `resource.getrusage(RUSAGE_CHILDREN)` around the run,
and each tool's figure is given as a ratio to its reference, measured in the same run:
`npuir-opt --version` against `python -c "import xdsl"`, a one-op `npuir-opt` run against
importing xDSL's parser, printer, builtin and func dialects.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
ONE_OP = """func.func @f(%a: tensor<4xf16>) -> tensor<4xf16> {
  %b = npu.relu %a : (tensor<4xf16>) -> tensor<4xf16>
  func.return %b : tensor<4xf16>
}
"""
XDSL_PARSE = "import xdsl.parser, xdsl.printer, xdsl.dialects.builtin, xdsl.dialects.func  # noqa"


def cpu_seconds(command: list[str], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return best


def run_startup(repeats: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        one = Path(scratch) / "one.mlir"
        one.write_text(ONE_OP)
        figures = {
            "import_xdsl": cpu_seconds([sys.executable, "-c", "import xdsl"], repeats),
            "npuir_opt_version": cpu_seconds([str(BIN / "npuir-opt"), "--version"], repeats),
            "import_xdsl_parser": cpu_seconds([sys.executable, "-c", XDSL_PARSE], repeats),
            "npuir_opt_one_op": cpu_seconds([str(BIN / "npuir-opt"), str(one)], repeats),
        }
    figures["version_ratio"] = figures["npuir_opt_version"] / figures["import_xdsl"]
    figures["one_op_ratio"] = figures["npuir_opt_one_op"] / figures["import_xdsl_parser"]
    return figures


def print_startup(r: dict[str, Any]) -> None:
    print(
        f"npuir-opt --version   {r['npuir_opt_version']:.3f} s CPU  "
        f"{r['version_ratio']:.2f}x  python -c 'import xdsl' ({r['import_xdsl']:.3f} s)"
    )
    print(
        f"npuir-opt one op      {r['npuir_opt_one_op']:.3f} s CPU  "
        f"{r['one_op_ratio']:.2f}x  importing xDSL's parser, printer, builtin, func "
        f"({r['import_xdsl_parser']:.3f} s)"
    )
