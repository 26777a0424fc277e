"""Interop with MLIR 19: npuir's generic output is MLIR that `mlir-opt` reads.

Every valid input of the lit suite (each `// -----` chunk that parses and
verifies) goes through `npu-default`; its generic form must parse in
`mlir-opt-19` (with the npuir dialects unregistered there), and what
`mlir-opt-19` prints must read back in npuir as the same module.
Skipped where `mlir-opt-19` is not installed (Debian: `apt-get install
mlir-19-tools`).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp

import npuir
from npuir import DiagnosticError, make_context, parse_text, print_ir
from npuir.deep_stack import on_deep_stack

ROOT = Path(__file__).resolve().parents[3]
MLIR_OPT = shutil.which("mlir-opt-19")
SPLIT = re.compile(r"^// -----\s*$", re.MULTILINE)

pytestmark = pytest.mark.skipif(
    MLIR_OPT is None, reason="mlir-opt-19 is not installed (Debian package mlir-19-tools)"
)


def lowered_lit_inputs() -> list[tuple[str, ModuleOp]]:
    """(name, module after npu-default) of every lit chunk that parses,
    verifies and goes through `npu-default` (the error cases do not)."""
    found = []
    for path in sorted((ROOT / "test").rglob("*.mlir")):
        if "Output" in path.parts:
            continue
        for index, chunk in enumerate(SPLIT.split(path.read_text())):
            ctx = make_context()
            try:
                module = parse_text(ctx, chunk)
                npuir.run_passes(ctx, module, npuir.build_pipeline("npu-default"))
            except DiagnosticError:
                continue
            found.append((f"{path.relative_to(ROOT)}#{index}", module))
    return found


def test_npu_default_generic_output_round_trips_through_mlir_opt() -> None:
    inputs = lowered_lit_inputs()
    assert len(inputs) > 20
    texts = [print_ir(module, generic=True) for _, module in inputs]
    assert MLIR_OPT is not None
    proc = subprocess.run(
        [
            MLIR_OPT,
            "--allow-unregistered-dialect",
            "--split-input-file",
            "--mlir-print-op-generic",
            "-",
        ],
        input="// -----\n".join(texts),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    back = SPLIT.split(proc.stdout)
    assert len(back) == len(inputs)
    for (name, module), text in zip(inputs, back):
        again = parse_text(make_context(), text, f"mlir-opt:{name}")
        assert on_deep_stack(module.is_structurally_equivalent, again), name
