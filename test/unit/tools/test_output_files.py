"""Output files handled as a Unix tool handles them (`npuir.tools.output.write_output`).

The cases go through `npuir-opt -o` (and `npuir-run --trace` for one), the way a
user meets them: regular files are replaced atomically keeping their mode, new
ones honour the umask, devices and FIFOs are written through, symlinks are
followed, and every failure is one line with exit status 2 and nothing left behind.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import pytest

from npuir.tools import opt, run
from npuir.tools.output import OutputError, write_output

ROOT = Path(__file__).resolve().parents[3]
SEED = ROOT / "examples" / "seed_multistream.mlir"
OVERLAP = ROOT / "test" / "runner" / "overlap.mlir"


def npuir_opt(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    code = opt.run([str(a) for a in args])
    _, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, err


@pytest.fixture(scope="module")
def expected() -> str:
    """What `npuir-opt SEED` prints on stdout."""
    from npuir.api import print_ir
    from npuir.context import make_context
    from npuir.frontends.load import parse_file

    return print_ir(parse_file(make_context(), SEED))


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


@pytest.mark.usefixtures("umask_022")
def test_new_file_honours_the_umask(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, expected: str
) -> None:
    out = tmp_path / "new.mlir"
    code, err = npuir_opt(capsys, SEED, "-o", out)
    assert (code, err) == (0, "")
    assert out.read_text() == expected
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert leftovers(tmp_path) == []


def test_new_file_under_another_umask(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        out = tmp_path / "private.mlir"
        assert npuir_opt(capsys, SEED, "-o", out)[0] == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


@pytest.mark.parametrize("mode", [0o644, 0o664, 0o755])
def test_replaced_file_keeps_its_mode(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, expected: str, mode: int
) -> None:
    out = tmp_path / "old.mlir"
    out.write_text("old contents\n")
    out.chmod(mode)
    old_inode = out.stat().st_ino
    assert npuir_opt(capsys, SEED, "-o", out)[0] == 0
    assert out.read_text() == expected
    assert stat.S_IMODE(out.stat().st_mode) == mode
    assert out.stat().st_ino != old_inode  # replaced by a rename, not rewritten in place
    assert leftovers(tmp_path) == []


def test_dev_null_is_written_through_not_replaced(capsys: pytest.CaptureFixture[str]) -> None:
    before = os.stat("/dev/null")
    assert npuir_opt(capsys, SEED, "-o", "/dev/null") == (0, "")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode)
    assert (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


def test_fifo_is_written_through(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, expected: str
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def reader() -> None:
        with open(fifo, "rb") as f:
            received.append(f.read())

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    code, _ = npuir_opt(capsys, SEED, "-o", fifo)
    thread.join(timeout=30)
    assert code == 0
    assert received == [expected.encode()]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)  # still a FIFO
    assert leftovers(tmp_path) == []


def test_symlink_is_followed_and_kept(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, expected: str
) -> None:
    elsewhere = tmp_path / "real"
    elsewhere.mkdir()
    target = elsewhere / "target.mlir"
    target.write_text("old\n")
    target.chmod(0o640)
    link = tmp_path / "link.mlir"
    link.symlink_to(target)
    assert npuir_opt(capsys, SEED, "-o", link)[0] == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == expected
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert leftovers(tmp_path) == [] and leftovers(elsewhere) == []


def test_dangling_symlink_creates_its_target(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, expected: str
) -> None:
    target = tmp_path / "later.mlir"
    link = tmp_path / "link.mlir"
    link.symlink_to(target)
    assert npuir_opt(capsys, SEED, "-o", link)[0] == 0
    assert link.is_symlink() and target.read_text() == expected


@pytest.mark.parametrize(
    ("where", "reason"),
    [
        ("missing/x.mlir", "No such file or directory"),
        ("somedir", "Is a directory"),
        ("", "the file name is empty"),
    ],
)
def test_errors_are_one_line_with_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, where: str, reason: str
) -> None:
    (tmp_path / "somedir").mkdir()
    path = str(tmp_path / where) if where else ""
    code, err = npuir_opt(capsys, SEED, "-o", path)
    assert code == 2
    assert err == f"npuir-opt: error: cannot write '{path}': {reason}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["somedir"]
    assert list((tmp_path / "somedir").iterdir()) == []


def test_unwritable_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    if os.geteuid() == 0:
        # Root ignores permission bits; /proc refuses new files even to root.
        path = "/proc/npuir-test.mlir"
    else:
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        path = str(locked / "out.mlir")
    code, err = npuir_opt(capsys, SEED, "-o", path)
    assert code == 2
    assert err.startswith(f"npuir-opt: error: cannot write '{path}': ")
    assert len(err.splitlines()) == 1
    assert not os.path.exists(path)


def test_a_full_device_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    code, err = npuir_opt(capsys, SEED, "-o", "/dev/full")
    assert code == 2
    assert err == "npuir-opt: error: cannot write '/dev/full': No space left on device\n"


def test_a_failed_run_leaves_the_old_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f( {\n")
    out = tmp_path / "out.mlir"
    out.write_text("keep me\n")
    code, _ = npuir_opt(capsys, bad, "-o", out)
    assert code == 1
    assert out.read_text() == "keep me\n"


def test_a_writer_that_fails_halfway_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out.bin"
    out.write_bytes(b"old")

    def half(f: BinaryIO) -> None:
        f.write(b"half of it")
        raise RuntimeError("the writer broke")

    with pytest.raises(RuntimeError):
        write_output(str(out), half)
    assert out.read_bytes() == b"old"
    assert leftovers(tmp_path) == []
    with pytest.raises(OutputError, match="cannot write"):
        write_output(str(tmp_path), half)


def test_dash_is_standard_output(capsys: pytest.CaptureFixture[str], expected: str) -> None:
    code = opt.run([str(SEED), "-o", "-"])
    assert code == 0
    assert capsys.readouterr().out == expected


@pytest.mark.usefixtures("umask_022")
def test_trace_uses_the_same_writer(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    assert run.run([str(OVERLAP), "--hw", "tiny", "--timing-only", "--trace", str(trace)]) == 0
    assert stat.S_IMODE(trace.stat().st_mode) == 0o644
    code = run.run([str(OVERLAP), "--hw", "tiny", "--timing-only", "--trace", str(tmp_path)])
    _, err = capsys.readouterr()
    assert code == 2
    assert err == f"npuir-run: error: cannot write '{tmp_path}': Is a directory\n"
    assert run.run([str(OVERLAP), "--hw", "tiny", "--timing-only", "--trace", "/dev/null"]) == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
