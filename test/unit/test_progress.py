"""The progress line: shown on a terminal after the delay, never otherwise."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from npuir import progress as progress_module
from npuir.progress import Progress


class _Terminal(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.fixture
def no_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_module, "DELAY_S", 0.0)
    monkeypatch.setattr(progress_module, "EVERY_S", 0.0)


@pytest.mark.usefixtures("no_delay")
def test_a_terminal_sees_the_phase_and_count_and_then_a_cleared_line() -> None:
    out = _Terminal(tty=True)
    p = Progress(out)
    p.phase("stream-partition")
    p.advance(3)
    assert out.getvalue().endswith("stream-partition: 3")
    p.clear()
    assert out.getvalue().endswith("\r\x1b[K")


@pytest.mark.usefixtures("no_delay")
def test_nothing_is_written_when_stderr_is_not_a_terminal_or_after_disable() -> None:
    pipe = _Terminal(tty=False)
    p = Progress(pipe)
    p.phase("insert-events")
    p.advance()
    p.clear()
    assert pipe.getvalue() == ""
    tty = _Terminal(tty=True)
    quiet = Progress(tty)
    quiet.disable()
    quiet.phase("insert-events")
    quiet.advance()
    assert tty.getvalue() == ""


def test_start_counts_the_delay_from_the_new_work(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_module, "EVERY_S", 0.0)
    out = _Terminal(tty=True)
    monkeypatch.setattr(progress_module, "DELAY_S", 0.0)
    p = Progress(out)
    monkeypatch.setattr(progress_module, "DELAY_S", 3600.0)
    p.start("torch.compile: export")  # long after the process started, but new work
    p.advance()
    assert out.getvalue() == ""
    monkeypatch.setattr(progress_module, "DELAY_S", 0.0)
    p.start("torch.compile: export")
    assert out.getvalue().endswith("npuir     0s  torch.compile: export")
    p.clear()


def test_a_short_command_shows_nothing() -> None:
    out = _Terminal(tty=True)
    p = Progress(out)  # the real delay: this test is over long before it
    p.phase("parse")
    p.advance(1000)
    assert out.getvalue() == ""


def test_npuir_run_json_disables_the_line() -> None:
    from pathlib import Path

    from npuir.progress import progress
    from npuir.tools.run import run

    examples = Path(__file__).parents[2] / "examples"
    assert run([str(examples / "seed_multistream.mlir"), "--timing-only", "--json"]) == 0
    assert progress.enabled is False


# ---------------------------------------------------------------------------------------------
# The tools under a pseudo-terminal and without one
# ---------------------------------------------------------------------------------------------


def _tool(name: str, *args: str, terminal: bool) -> tuple[int, str, str]:
    """Run tool `name` with stderr on a pseudo-terminal (or a pipe) and the progress line's
    delay at 0, as if the command ran long; (exit code, stdout, stderr)."""
    import sys

    return _command([str(Path(sys.executable).parent / name), *args], terminal=terminal)


def _command(argv: list[str], *, terminal: bool) -> tuple[int, str, str]:
    """`_tool` for any command."""
    import os
    import pty
    import subprocess

    env = {**os.environ, "NPUIR_PROGRESS_DELAY_S": "0"}
    if not terminal:
        done = subprocess.run(argv, capture_output=True, text=True, env=env)
        return done.returncode, done.stdout, done.stderr
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env
    )
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    out, _ = proc.communicate()
    return proc.returncode, out.decode(), seen.decode(errors="replace")


SEED = str(Path(__file__).parents[2] / "examples" / "seed_multistream.mlir")


def test_a_long_advise_on_a_terminal_shows_its_phases_then_clears_the_line() -> None:
    code, out, err = _tool("npuir-advise", SEED, terminal=True)
    assert code == 0 and "advice" in out
    lines = [line for line in err.split("\r\x1b[K") if line]
    assert any(line.startswith("npuir ") and "s  " in line for line in lines), err
    assert err.endswith("\r\x1b[K")  # erased before the advice was printed


@pytest.mark.parametrize(
    ("args", "terminal"),
    [((), False), (("--quiet",), True), (("--json",), True)],
    ids=["pipe", "quiet", "json"],
)
def test_no_progress_in_a_pipe_with_quiet_or_with_json(
    args: tuple[str, ...], terminal: bool
) -> None:
    import json

    code, out, err = _tool("npuir-run", SEED, "--timing-only", *args, terminal=terminal)
    assert code == 0
    assert "\x1b" not in err and "npuir " not in err
    if "--json" in args:
        assert json.loads(out)["makespan_ns"] > 0
    else:
        assert "makespan" in out


_COMPILE = """
import torch
from npuir.torchair import get_npu_backend

def f(x, y):
    return torch.relu(x @ y) + x

x, y = torch.randn(4, 4), torch.randn(4, 4)
# npuir's torch.compile backend on the graph dynamo would hand it (dynamo itself skipped:
# the test's CPU budget)
compiled = get_npu_backend()(torch.fx.symbolic_trace(f), [x, y])
print("close" if torch.allclose(compiled(x, y)[0], f(x, y), atol=1e-5) else "differs")
"""


@pytest.mark.torch
@pytest.mark.slow
def test_a_torch_compile_shows_its_phases_on_a_terminal(tmp_path: Path) -> None:
    """On a pseudo-terminal the compile's phases show and the line is erased when it
    returns (the same `Progress` as the tools': off a terminal it writes nothing, which the
    pipe test above checks; a second torch start would double this test's CPU time)."""
    import sys

    script = tmp_path / "compile.py"
    script.write_text(_COMPILE, encoding="utf-8")
    code, out, err = _command([sys.executable, str(script)], terminal=True)
    assert code == 0 and out.strip() == "close", err
    lines = [line for line in err.split("\r\x1b[K") if line.strip()]
    phases = [m.group(1) for line in lines if (m := re.match(r"npuir +\d+s  (.*)", line))]
    assert phases[0] == "torch.compile: export", err
    assert any(p.startswith("torch.compile graph 0: ") for p in phases), err
    assert err.rstrip("\r\n").endswith("\r\x1b[K")  # cleared once the compile returned
