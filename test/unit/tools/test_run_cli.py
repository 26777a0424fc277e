"""`npuir-run`'s command line: values it refuses (exit 2, one line) and standard input.

Each refused value used to be accepted or to end in a numpy traceback.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from npuir.tools.run import run

ROOT = Path(__file__).resolve().parents[3]
OVERLAP = ROOT / "test" / "runner" / "overlap.mlir"  # @overlap(%a, %b), 12408 ns on tiny
GEARS = ROOT / "examples" / "gears.mlir"  # @forward(%x1: tensor<?x2xf32>, %x2: ...)
DEADLOCK = ROOT / "test" / "runner" / "deadlock.mlir"  # @ab(%x), @ba(%x)


def npuir_run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    try:
        code = run([str(a) for a in args])
    except SystemExit as exc:  # argparse's own usage errors
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    assert "Traceback" not in err + out
    return code, out, err


@pytest.mark.parametrize("seed", ["-1", "x", "1.5"])
def test_a_seed_must_be_a_whole_number_at_least_0(
    capsys: pytest.CaptureFixture[str], seed: str
) -> None:
    code, out, err = npuir_run(capsys, OVERLAP, "--hw", "tiny", "--seed", seed)
    assert code == 2
    assert out == ""
    assert f"argument --seed: '{seed}' is not a seed: give a whole number >= 0" in err


def test_a_large_seed_is_fine(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = npuir_run(capsys, OVERLAP, "--hw", "tiny", "--seed", str(2**70))
    assert code == 0


def test_shape_for_an_argument_that_does_not_exist(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = npuir_run(
        capsys, GEARS, "--shape", "0=4x2", "--shape", "1=4x2", "--shape", "5=4x2"
    )
    assert code == 2
    assert out == ""
    assert err == (
        "npuir-run: error: --shape 5=4x2 names no argument of the function run "
        "(@forward has arguments 0 (%x1), 1 (%x2))\n"
    )


def test_shape_names_checked_against_every_rank(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = npuir_run(
        capsys, DEADLOCK, "--hw", "tiny", "--entries", "ab,ba", "--shape", "%y=4"
    )
    assert code == 2
    assert "--shape %y=4 names no argument of the function run" in err
    assert "(@ab has arguments 0 (%x); @ba has arguments 0 (%x))" in err


@pytest.mark.parametrize("name", ["x1", "%x1", "0"])
def test_shape_by_index_or_name(capsys: pytest.CaptureFixture[str], name: str) -> None:
    code, _, err = npuir_run(capsys, GEARS, "--shape", f"{name}=4x2", "--shape", "1=4x2")
    assert code == 0, err


def stdin_of(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_dash_reads_standard_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stdin_of(monkeypatch, OVERLAP.read_bytes())
    code, out, err = npuir_run(capsys, "-", "--hw", "tiny")
    assert (code, err) == (0, "")
    # Standard input gives the report the file does, the source's name aside.
    _, from_file, _ = npuir_run(capsys, OVERLAP, "--hw", "tiny")
    assert "makespan" in out
    assert out.replace("<stdin>", str(OVERLAP)) == from_file


def test_errors_on_standard_input_are_located_there(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stdin_of(monkeypatch, b"func.func @f() {\n  %0 = npu.bogus : () -> ()\n}\n")
    code, _, err = npuir_run(capsys, "-")
    assert code == 1
    assert err.startswith("<stdin>:2:8: error: Operation npu.bogus is not registered\n")
    assert "  %0 = npu.bogus : () -> ()\n       ^" in err


def test_bad_utf8_on_standard_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stdin_of(monkeypatch, b"func.func @f() {\xff\n")
    code, _, err = npuir_run(capsys, "-")
    assert code == 1
    assert err.startswith("<stdin>:1:17: error: input is not valid UTF-8 (byte 0xff)")
