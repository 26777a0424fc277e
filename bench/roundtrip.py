"""Round trip against MLIR: `npuir-opt` and `mlir-opt` reading and printing the same file.

`python bench/run.py roundtrip [--sizes 10000,100000] [--shapes chain,transformer]`
writes each benchmark program (bench/generate.py) in the generic form, then times, each
in a subprocess and in CPU seconds (user + system of the child, one run):

  npuir-opt       `npuir-opt --print-op-generic FILE`: parse (the fast parser),
                  verify, print;
  npuir-opt xdsl  the same with `--parser=xdsl` (xDSL's parser alone, the reference);
  mlir-opt        `mlir-opt-19 --allow-unregistered-dialect --mlir-print-op-generic
                  FILE` (npuir's dialects are unregistered there, so MLIR parses the
                  generic form and verifies only what it knows), when installed
                  (`apt-get install mlir-19-tools`); skipped otherwise.

Both tools' output is discarded (`-o /dev/null`).  `import of a 1 MB GE dump` is
`geimport` (this module's `run_ge_import`): `npuir.frontends.ge.import_text` on the
994 KB ResNet-50 dump in test/frontends/Inputs, in this process, the grammar built first.
"""

from __future__ import annotations

import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
ROOT = HERE.parent
GE_DUMP = (
    ROOT
    / "test"
    / "frontends"
    / "Inputs"
    / "ge_proto_00015_OptimizeQuantGraph_FeGraphFusionAfter.txt"
)
MLIR_OPT_NAMES = ("mlir-opt-19", "mlir-opt")


def _generic_text(shape: str, n: int) -> str:
    sys.path.insert(0, str(HERE))
    from generate import chain, transformer_layers, wide_dag

    import npuir

    make = {"chain": chain, "wide": wide_dag, "transformer": transformer_layers}[shape]
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, make(n), f"{shape}-{n}.mlir")
    return npuir.print_ir(module, generic=True)


def _child_cpu(cmd: list[str]) -> dict[str, Any]:
    """Run `cmd`; its CPU seconds (user + system) and its exit status."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"status": f"failed: {last}"}
    return {"status": "ok", "seconds": round(seconds, 3)}


def mlir_opt() -> str | None:
    """The installed mlir-opt, or None."""
    for name in MLIR_OPT_NAMES:
        found = shutil.which(name)
        if found is not None:
            return found
    return None


def run_roundtrip(sizes: list[int], shapes: list[str]) -> dict[str, Any]:
    """Time npuir-opt (fast and xDSL parser) and mlir-opt on the same generic files."""
    npuir_opt = str(Path(sys.executable).parent / "npuir-opt")
    mlir = mlir_opt()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in shapes:
            for n in sizes:
                path = Path(tmp) / f"{shape}-{n}.generic.mlir"
                path.write_text(_generic_text(shape, n))
                base = [npuir_opt, "--print-op-generic", str(path), "-o", "/dev/null"]
                row: dict[str, Any] = {"shape": shape, "ops": n}
                row["npuir-opt"] = _child_cpu(base)
                row["npuir-opt xdsl"] = _child_cpu([*base, "--parser=xdsl"])
                if mlir is not None:
                    row["mlir-opt"] = _child_cpu(
                        [
                            mlir,
                            "--allow-unregistered-dialect",
                            "--mlir-print-op-generic",
                            str(path),
                            "-o",
                            "/dev/null",
                        ]
                    )
                    ours, theirs = row["npuir-opt"], row["mlir-opt"]
                    if ours["status"] == theirs["status"] == "ok" and theirs["seconds"] > 0:
                        row["npuir_over_mlir"] = round(ours["seconds"] / theirs["seconds"], 1)
                rows.append(row)
    return {"mlir_opt": mlir, "rows": rows}


def print_roundtrip(result: dict[str, Any]) -> None:
    if result["mlir_opt"] is None:
        print("mlir-opt not installed: npuir-opt only (apt-get install mlir-19-tools)")
    print(
        f"{'shape':<12} {'ops':>7} {'npuir-opt s':>12} {'xdsl parser s':>14} {'mlir-opt s':>11} {'ratio':>6}"
    )
    for r in result["rows"]:

        def cell(key: str, row: dict[str, Any] = r) -> str:
            got = row.get(key)
            if got is None:
                return "-"
            return f"{got['seconds']:.2f}" if got["status"] == "ok" else got["status"]

        ratio = r.get("npuir_over_mlir")
        print(
            f"{r['shape']:<12} {r['ops']:>7} {cell('npuir-opt'):>12} {cell('npuir-opt xdsl'):>14} "
            f"{cell('mlir-opt'):>11} {'-' if ratio is None else f'{ratio}x':>6}"
        )


def run_ge_import(path: Path = GE_DUMP) -> dict[str, Any]:
    """CPU seconds of importing the GE dump at `path` (one run, grammar built first)."""
    from npuir.context import make_context
    from npuir.frontends import protobuf_text
    from npuir.frontends.ge import import_text

    text = path.read_text(encoding="utf-8")
    protobuf_text._parser()  # built once per process: start-up, not import
    t0 = time.process_time()
    protobuf_text.parse(text, path.name)
    parse = time.process_time() - t0
    t0 = time.process_time()
    import_text(make_context(), text, path.name)
    seconds = time.process_time() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "dump": path.name,
        "bytes": len(text.encode()),
        "parse_s": round(parse, 3),
        "import_s": round(seconds, 3),
        "peak_rss_mb": round(peak, 1),
    }


def print_ge_import(result: dict[str, Any]) -> None:
    print(
        f"{result['dump']} ({result['bytes'] / 1e6:.2f} MB): import {result['import_s']:.3f} s "
        f"(protobuf text parse alone {result['parse_s']:.3f} s), peak RSS {result['peak_rss_mb']} MB"
    )
