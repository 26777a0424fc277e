"""Where the tools' output goes wrong: a full device, a reader that leaves, a file the
caller may not overwrite, and Ctrl-C while the compiler loads.

- `> /dev/full`: every tool reports it (exit 2, one line), never exit 0 with half the
  bytes written, nor an internal error;
- standard output closed by its reader: exit 141, silently;
- `-o` onto a file the caller could not overwrite in place (read-only, or another
  user's) is refused as `cp` refuses it; run as another user (`setpriv`) when the tests
  run as root, else with a read-only file of one's own;
- Ctrl-C at start-up: exit 130 and one line, no traceback.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SEED = ROOT / "examples" / "seed_multistream.mlir"
DUMP = ROOT / "test" / "frontends" / "Inputs" / "seed_multistream.txt"
BIN = Path(sys.executable).parent
COMMANDS = {
    "npuir-opt": ["-p", "npu-default", str(SEED)],
    "npuir-run": [str(SEED), "--hw", "tiny"],
    "npuir-import": [str(DUMP)],
    "npuir-advise": [str(SEED)],
}


@pytest.mark.slow
@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
@pytest.mark.parametrize("tool", sorted(COMMANDS))
def test_a_full_device_on_stdout_is_an_error(tool: str) -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [str(BIN / tool), *COMMANDS[tool]], stdout=full, stderr=subprocess.PIPE, text=True
        )
    assert proc.returncode == 2, proc.stderr
    assert (
        proc.stderr.strip()
        == f"{tool}: error: cannot write standard output: No space left on device"
    )


@pytest.mark.slow
def test_a_reader_that_leaves_is_exit_141() -> None:
    big = "\n".join(["// padding to fill the pipe"] * 4000) + "\n" + SEED.read_text()
    proc = subprocess.Popen(
        [str(BIN / "npuir-opt"), "-", "--mlir-print-debuginfo"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first byte
    proc.stdin.write(big.encode() * 20)
    proc.stdin.close()
    assert proc.wait(timeout=300) == 141
    assert proc.stderr.read() == b""


def _as_other_user(argv: list[str]) -> list[str]:
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]


def _target(directory: Path, name: str, mode: int) -> Path:
    path = directory / name
    path.write_text("old\n")
    path.chmod(mode)
    return path


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory anyone may write in, reachable by another user (pytest's own
    temporary directories are private to the user running the tests)."""
    directory = Path(tempfile.mkdtemp(prefix="npuir-output-"))
    directory.chmod(0o777)
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv"
)
@pytest.mark.parametrize(
    ("mode", "reason"), [(0o444, "not writable by you"), (0o666, "another user")]
)
def test_another_users_file_is_not_taken_over(shared_dir: Path, mode: int, reason: str) -> None:
    target = _target(shared_dir, "out.mlir", mode)
    proc = subprocess.run(
        _as_other_user([str(BIN / "npuir-opt"), str(SEED), "-o", str(target)]),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2, proc.stderr
    assert reason in proc.stderr
    info = target.stat()
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (0, mode)
    assert target.read_text() == "old\n"
    assert [p.name for p in shared_dir.iterdir()] == ["out.mlir"]  # no temporary left


@pytest.mark.slow
@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv"
)
def test_ones_own_file_is_replaced_keeping_its_mode(shared_dir: Path) -> None:
    target = shared_dir / "mine.mlir"
    subprocess.run(
        _as_other_user(["sh", "-c", f"echo old > {target}; chmod 640 {target}"]), check=True
    )
    proc = subprocess.run(
        _as_other_user([str(BIN / "npuir-opt"), str(SEED), "-o", str(target)]),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert target.read_text().startswith("builtin.module")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640 and target.stat().st_uid == 65534


@pytest.mark.slow
def test_a_read_only_file_of_ones_own_is_refused(shared_dir: Path) -> None:
    target = _target(shared_dir, "out.mlir", 0o444)
    argv = [str(BIN / "npuir-opt"), str(SEED), "-o", str(target)]
    if os.geteuid() == 0:
        # Root may write a read-only file (as cp does): the file is another user's own.
        if shutil.which("setpriv") is None:
            pytest.skip("runs as root and setpriv is not installed")
        os.chown(target, 65534, 65534)
        argv = _as_other_user(argv)
    proc = subprocess.run(argv, capture_output=True, text=True)
    assert proc.returncode == 2 and "not writable by you" in proc.stderr
    assert target.read_text() == "old\n"


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.3, 0.8])
def test_ctrl_c_while_starting_is_exit_130_without_a_traceback(delay: float) -> None:
    proc = subprocess.Popen(
        [str(BIN / "npuir-run"), str(SEED), "--check"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode in (130, 0), err  # 0: it finished before the signal came
    assert "Traceback" not in err
    if proc.returncode == 130:
        assert err.strip() == "npuir-run: interrupted"
