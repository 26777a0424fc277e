"""Output cut short: a size limit on stdout, a signal mid-write, a read-only directory.

- stdout to a file that reaches `ulimit -f`: exit 2 and one line (CPython's buffered
  stdout drops the error of a short write, which gave exit 0 and a truncated file);
- SIGINT or SIGTERM while `-o` writes (on the work thread): the temporary file beside the
  target is removed and the target left as it was;
- a writable target in a read-only directory: the error names the directory.
"""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from npuir.tools import output
from npuir.tools.output import OutputError, write_text

ROOT = Path(__file__).resolve().parents[3]
SEED = ROOT / "examples" / "seed_multistream.mlir"
DUMP = ROOT / "test" / "frontends" / "Inputs" / "seed_multistream.txt"
BIN = Path(sys.executable).parent


def _limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))


@pytest.mark.parametrize(
    ("tool", "args"), [("npuir-opt", [str(SEED)]), ("npuir-import", [str(DUMP)])]
)
def test_stdout_cut_short_by_a_size_limit_is_exit_2(
    tool: str, args: list[str], tmp_path: Path
) -> None:
    target = tmp_path / "out.mlir"
    with target.open("wb") as out:
        done = subprocess.run(
            [str(BIN / tool), *args],
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_limit_file_size,
            timeout=120,
        )
    assert done.returncode == 2, done.stderr
    # (npuir-import's summary goes to stderr first.)
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert errors == [f"{tool}: error: cannot write standard output: File too large"], errors
    assert target.stat().st_size <= 1024


# Writes one chunk, says so, then waits to be interrupted: a write that is mid-way for as
# long as the test needs, on the work thread `run_tool` uses, as the tools' writes are.
_SLOW_WRITER = """
import sys, time
from npuir.tools.cli import run_tool
from npuir.tools.output import write_output

def slow(out):
    out.write(b"x" * 65536)
    out.flush()
    time.sleep(60)

def run(args):
    write_output(args[0], slow)
    return 0

sys.exit(run_tool("slow-writer", run, sys.argv[1:], exiting=True))
"""


def _default_signals() -> None:
    # As a terminal starts a tool: a shell without job control starts its background
    # commands with SIGINT ignored, and Python then installs no handler for it (the writer
    # would sleep through the signal and exit 0).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@pytest.mark.parametrize(
    ("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, -signal.SIGTERM)]
)
def test_a_signal_mid_write_leaves_no_temporary_file(
    signum: int, status: int, tmp_path: Path
) -> None:
    target = tmp_path / "out.txt"
    target.write_text("before\n")
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_WRITER, str(target)],
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_signals,
    )
    try:
        deadline = time.monotonic() + 60
        temporary: list[Path] = []
        while time.monotonic() < deadline:
            temporary = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
            if temporary and temporary[0].stat().st_size >= 65536:
                break
            time.sleep(0.02)
        assert temporary, "the writer never started"
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == status, err
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]
    assert target.read_text() == "before\n"


def test_a_read_only_directory_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # As root a mode cannot refuse the temporary file, so the kernel's answer is simulated.
    real_open = os.open

    def refusing(path: str, flags: int, mode: int = 0o777) -> int:
        if str(path).endswith(".tmp"):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        return real_open(path, flags, mode)

    monkeypatch.setattr(output.os, "open", refusing)
    target = tmp_path / "out.mlir"
    target.write_text("old\n")
    with pytest.raises(OutputError) as caught:
        write_text(str(target), "new\n")
    assert f"the directory '{tmp_path}' is not writable" in str(caught.value)
    assert target.read_text() == "old\n"
    assert not output._in_flight
