"""The progress line: shown on a terminal after the delay, never otherwise."""

from __future__ import annotations

import io

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
