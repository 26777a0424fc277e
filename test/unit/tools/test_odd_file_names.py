"""File names that are not UTF-8 (a Linux path may hold any bytes but `/` and NUL).

Python keeps such bytes as lone surrogates, which no UTF-8 writer accepts: printing a
location with `--mlir-print-debuginfo` crashed, and so did the crash handler itself
while saving its report.  Now the name reads `\\xNN` wherever npuir prints it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from xdsl.passes import ModulePass

from npuir.tools import opt
from npuir.tools.cli import run_tool
from npuir.transforms import PASSES

ROOT = Path(__file__).resolve().parents[3]
SEED = ROOT / "examples" / "seed_multistream.mlir"
BIN = Path(sys.executable).parent


def odd_copy(directory: Path, text: str) -> str:
    """`text` in a file whose name holds the byte 0xff, as the str Python gives it."""
    raw = os.path.join(os.fsencode(directory), b"seed\xff.mlir")
    with open(raw, "w", encoding="utf-8") as f:
        f.write(text)
    return os.fsdecode(raw)


def test_locations_of_such_a_file_print(tmp_path: Path) -> None:
    path = odd_copy(tmp_path, SEED.read_text())
    proc = subprocess.run(
        [os.fsencode(BIN / "npuir-opt"), os.fsencode(path), b"--mlir-print-debuginfo"],
        capture_output=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert b'loc("' in proc.stdout and b"seed\\\\xff.mlir" in proc.stdout


def test_an_error_in_such_a_file_names_it_readably(tmp_path: Path) -> None:
    path = odd_copy(tmp_path, "func.func @f( {\n")
    proc = subprocess.run(
        [os.fsencode(BIN / "npuir-opt"), os.fsencode(path)], capture_output=True, timeout=300
    )
    assert proc.returncode == 1
    first = proc.stderr.decode().splitlines()[0]
    assert first.endswith("seed\\xff.mlir:1:15: error: Expected argument or type")


def test_the_crash_handler_survives_such_a_name(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def boom(self: ModulePass, ctx: Any, module: Any) -> None:
        raise RuntimeError("injected failure")

    monkeypatch.setattr(PASSES["sync-verify"](), "apply", boom)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    path = odd_copy(tmp_path, SEED.read_text())
    code = run_tool("npuir-opt", opt.run, [path, "-p", "npu-default"])
    err = capsys.readouterr().err
    assert code == 70
    line = err.strip().splitlines()[-1]
    assert "seed\\xff.mlir" in line and "internal error: RuntimeError" in line
    match = re.search(r"saved in (\S+) \(or rerun", line)
    assert match, line
    assert "seed\\xff.mlir" in Path(match.group(1)).read_text()
