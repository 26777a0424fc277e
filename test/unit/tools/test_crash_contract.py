"""The crash contract every tool keeps (`npuir.tools.cli.run_tool`): a bug is exit 70 and one line.

A crash is injected by making a pass (or the simulator) raise `RuntimeError`, as a bug
would.  Without `--debug` the user sees one line naming the command to report and a
file holding the traceback; with `--debug` the traceback itself.  Bad input and bad
flags keep their own exit codes, and every tool lists its codes in `--help`.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import pytest
from xdsl.passes import ModulePass

import npuir
import npuir.driver.run as driver_run
from npuir.tools import opt, run
from npuir.tools.cli import EXIT_INTERNAL, run_tool
from npuir.transforms import PASSES

ROOT = Path(__file__).resolve().parents[3]
SEED = ROOT / "examples" / "seed_multistream.mlir"
OVERLAP = ROOT / "test" / "runner" / "overlap.mlir"

TOOLS: dict[str, Callable[[list[str] | None], NoReturn]] = {
    "npuir-opt": opt.main,
    "npuir-run": run.main,
}
ARGS = {
    "npuir-opt": [str(SEED), "-p", "npu-default"],
    "npuir-run": [str(OVERLAP), "--hw", "tiny"],
}


def call(main: Callable[[list[str] | None], NoReturn], args: list[str]) -> int:
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    code = exit_info.value.code
    assert isinstance(code, int)
    return code


@pytest.fixture
def broken_pass(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`sync-verify`, which both tools run here, raises as a bug would; crash reports go
    to `tmp_path`."""

    def boom(self: ModulePass, ctx: Any, module: Any) -> None:
        raise RuntimeError("injected failure\nsecond line")

    monkeypatch.setattr(PASSES["sync-verify"](), "apply", boom)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


@pytest.mark.usefixtures("broken_pass")
@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_a_crash_is_exit_70_and_one_line(
    tool: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = call(TOOLS[tool], ARGS[tool])
    out, err = capsys.readouterr()
    assert code == EXIT_INTERNAL == 70
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith(f"{tool}: internal error: RuntimeError: injected failure -- ")
    assert f"this is a bug in npuir {npuir.__version__}" in line
    assert f"({tool} {' '.join(ARGS[tool])})" in line  # the command line to report
    # The traceback is saved to the file the line names, with the command line.
    match = re.search(r"saved in (\S+) \(or rerun with --debug\)", line)
    assert match, line
    report = Path(match.group(1))
    assert report.parent == tmp_path
    text = report.read_text()
    assert text.startswith(f"command: {tool} ")
    assert "Traceback (most recent call last)" in text
    assert "RuntimeError: injected failure" in text


@pytest.mark.usefixtures("broken_pass")
@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_debug_prints_the_traceback(
    tool: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = call(TOOLS[tool], [*ARGS[tool], "--debug"])
    _, err = capsys.readouterr()
    assert code == 70
    assert err.startswith("Traceback (most recent call last)")
    assert "in boom" in err
    last = err.splitlines()[-1]
    assert last.startswith(f"{tool}: internal error: RuntimeError: injected failure")
    assert last.endswith("and the traceback above")
    assert list(tmp_path.iterdir()) == []  # nothing saved when it was printed


def test_a_crash_in_the_simulator_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def boom(*args: object, **kwargs: object) -> NoReturn:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(driver_run, "simulate", boom)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code = call(run.main, ARGS["npuir-run"])
    _, err = capsys.readouterr()
    assert code == 70
    assert err.startswith("npuir-run: internal error: ZeroDivisionError: division by zero")


def test_user_errors_keep_their_codes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f( {\n")
    assert call(opt.main, [str(bad)]) == 1
    assert call(opt.main, [str(SEED), "-p", "no-such-pass"]) == 2
    assert call(run.main, [str(bad)]) == 1
    assert call(run.main, [str(OVERLAP), "--ranks", "0"]) == 2
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err


def test_interrupt_is_130_without_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted(argv: list[str]) -> int:
        raise KeyboardInterrupt

    assert run_tool("npuir-x", interrupted, []) == 130
    assert capsys.readouterr().err == "npuir-x: interrupted\n"


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_help_lists_the_exit_codes(tool: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert call(TOOLS[tool], ["--help"]) == 0
    out = capsys.readouterr().out
    epilog = out[out.index("exit codes:") :]
    for code in (0, 1, 2, 70):
        assert re.search(rf"^  {code}\s+\S", epilog, re.M), epilog
    assert "70  internal error: a bug in npuir" in epilog


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_version(tool: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert call(TOOLS[tool], ["--version"]) == 0
    assert capsys.readouterr().out == f"{tool} {npuir.__version__}\n"
    # The installed package has the same version: pyproject.toml reads it from npuir.
    assert importlib.metadata.version("npuir") == npuir.__version__


def test_readme_documents_every_exit_code() -> None:
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("| exit |") :]
    for code in (0, 1, 2, 3, 4, 70, 130, 141):
        assert re.search(rf"^\| {code} +\|", table, re.M), f"exit {code} missing from README"


def test_the_console_script_exits_70() -> None:
    """The installed entry point goes through the same wrapper (a real process)."""
    program = (
        "import sys\n"
        "from npuir.transforms import PASSES\n"
        "def boom(self, ctx, module):\n"
        "    raise RuntimeError('injected')\n"
        "PASSES['sync-verify']().apply = boom\n"
        "from npuir.tools.opt import main\n"
        "sys.argv = ['npuir-opt', sys.argv[1], '-p', 'npu-default', '--debug']\n"
        "main()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", program, str(SEED)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 70
    assert proc.stdout == ""
    assert "Traceback" in proc.stderr
    assert proc.stderr.splitlines()[-1].startswith("npuir-opt: internal error: RuntimeError")


def test_a_closed_pipe_is_not_a_crash(capfd: pytest.CaptureFixture[str]) -> None:
    """`npuir-opt big.mlir | head -1`: the reader went away; exit 141 and nothing said.
    (capfd: the tool points file descriptor 1 at /dev/null, which capfd undoes.)"""

    def reader_gone(argv: list[str]) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    assert run_tool("npuir-x", reader_gone, []) == 141
    assert capfd.readouterr().err == ""
