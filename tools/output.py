"""Output files written the way Unix tools write them: the one writer every tool uses.

`write_output(path, write)` is behind `npuir-opt -o`, `npuir-run --trace`,
`--plot`, `--outputs`, `--save-inputs` and every later output option:

- a regular file (or a new one) is written to a temporary file in the same
  directory and renamed over the target, so a failing run never leaves a
  half-written file and readers never see one.  A replaced file keeps its
  mode (and, where the process may, its owner); a new file gets the mode
  `open()` would give it, 0666 less the umask;
- a device, a FIFO or a socket is written through, never replaced: as root,
  `-o /dev/null` must not turn `/dev/null` into a regular file;
- a symlink is followed: its target is replaced and the link kept;
- `-` is standard output;
- an existing file the caller could not open for writing (read-only, another user's
  without write permission), or one owned by another user (which a rename would take
  over; root may replace it and gives it back), is refused as `cp` refuses it;
- every failure (missing directory, a directory as target, no permission,
  disk full) raises `OutputError`, a `UsageError` the tools print as
  `TOOL: error: cannot write 'PATH': REASON` with exit status 2.

A hard link to a replaced file keeps the old contents, as with every writer
that renames (editors, `sed -i`).
"""

from __future__ import annotations

import errno
import io
import os
import secrets
import stat
import sys
import threading
from collections.abc import Callable
from typing import Any, BinaryIO, TextIO, cast

from npuir.diagnostics import UsageError

__all__ = [
    "OutputError",
    "remove_partial_outputs",
    "strict_stdout",
    "write_bytes",
    "write_output",
    "write_text",
]


class OutputError(UsageError):
    """An output file could not be written; nothing was left behind."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"cannot write '{path}': {reason}")
        self.path = path
        self.reason = reason


Writer = Callable[[BinaryIO], None]
"""Writes the whole output to the binary file it is given."""


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


_in_flight: set[str] = set()
"""The temporary files being written now.  The tools write on a worker thread
(`npuir.deep_stack`), so Ctrl-C or SIGTERM reaches the main thread while the worker is
mid-write and never runs its cleanup: `remove_partial_outputs` does it."""
_in_flight_lock = threading.Lock()


def remove_partial_outputs() -> None:
    """Remove every temporary output file still being written (on an interrupt or a
    signal: the targets are left as they were)."""
    with _in_flight_lock:
        pending = list(_in_flight)
        _in_flight.clear()
    for tmp in pending:
        try:
            os.unlink(tmp)
        except OSError:
            pass  # renamed into place meanwhile, or already gone


def _forget(tmp: str) -> None:
    with _in_flight_lock:
        _in_flight.discard(tmp)


def _create_temporary(directory: str, name: str) -> tuple[int, str]:
    """A new file beside the target, created with mode 0666 so that the kernel applies the
    umask exactly as for a plain `open()` (mkstemp would make it 0600).  It is registered
    before it exists, so that a signal can never leave an unregistered one behind."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        tmp = os.path.join(directory, f".{name}.{secrets.token_hex(4)}.tmp")
        with _in_flight_lock:
            _in_flight.add(tmp)
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            _forget(tmp)
            continue
        except PermissionError:
            _forget(tmp)
            raise OutputError(
                os.path.join(directory, name),
                f"Permission denied: the directory '{directory}' is not writable, and the "
                "file is replaced through a temporary file beside it -- make the directory "
                "writable, or write the file in place with a shell redirect (> FILE)",
            ) from None
        except BaseException:
            _forget(tmp)
            raise


def _replace(path: str, target: str, existing: os.stat_result | None, write: Writer) -> None:
    directory, name = os.path.split(target)
    fd, tmp = _create_temporary(directory or ".", name)
    try:
        with os.fdopen(fd, "wb") as out:
            if existing is not None:
                os.fchmod(out.fileno(), stat.S_IMODE(existing.st_mode))
                if (existing.st_uid, existing.st_gid) != (os.geteuid(), os.getegid()):
                    try:
                        os.fchown(out.fileno(), existing.st_uid, existing.st_gid)
                    except PermissionError:
                        pass  # only root may give a file away; the mode is still kept
            write(out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    finally:
        _forget(tmp)


def _check_replaceable(path: str, existing: os.stat_result) -> None:
    """Refuse to replace a file the caller could not overwrite in place.

    A rename needs only a writable directory, so without this check `-o` would replace
    a read-only file, or another user's, and take it over -- where `cp` and a shell
    redirect, which open the file itself, are refused.  The file is opened for writing
    (without truncating it) exactly as they would; and a file owned by someone else is
    refused unless the caller may give the new file back to its owner (root)."""
    flags = os.O_WRONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except PermissionError:
        raise OutputError(path, "Permission denied (the file is not writable by you)") from None
    os.close(fd)
    uid = os.geteuid()
    if uid != 0 and existing.st_uid != uid:
        raise OutputError(
            path,
            f"the file belongs to another user (uid {existing.st_uid}); replacing it would "
            "make it yours -- write it in place with a shell redirect, or remove it first",
        )


class _FullWrites(io.RawIOBase):
    """A file descriptor written until every byte is taken, or an `OSError` raised.

    CPython's buffered standard output loses the error of a short write: stdout to a
    file that reaches `ulimit -f` was cut short silently, with exit status 0."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            written = os.write(self._fd, view[done:])
            if written <= 0:
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            done += written
        return done


def strict_stdout(stdout: TextIO) -> io.TextIOWrapper[Any]:
    """A text stream on `stdout`'s descriptor, with its encoding, whose writes fail loudly
    on a short write (`_FullWrites`), and at once: each write goes to the descriptor as it
    is made, so a failure stops the tool before it says anything more."""
    return io.TextIOWrapper(
        cast(Any, _FullWrites(stdout.fileno())),  # unbuffered on purpose: raw, no buffer
        encoding=stdout.encoding,
        errors=stdout.errors,
        write_through=True,
    )


def _write_stdout(write: Writer) -> None:
    """Standard output, written through `_FullWrites` when it is the process's own: a short
    write raises its `OSError` (`run_tool` reports it, exit 2)."""
    sys.stdout.flush()
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        fd = -1  # a stream of the caller's (a test's capture): written as it is
    if fd < 0:
        write(sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    out = io.BufferedWriter(_FullWrites(fd))
    write(out)
    out.flush()
    out.detach()  # the descriptor stays open: it is the process's stdout


def write_output(path: str, write: Writer) -> None:
    """Call `write` with a binary file open on `path` (see the module docstring).

    Standard output's failures are `OSError`s, as every other write to it: `run_tool`
    says "cannot write standard output"."""
    if path == "-":
        _write_stdout(write)
        return
    try:
        if not path:
            raise OutputError(path, "the file name is empty")
        try:
            existing: os.stat_result | None = os.stat(path)  # follows symlinks
        except FileNotFoundError:
            existing = None  # a new file, or a symlink to one not created yet
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            raise OutputError(path, "Is a directory")
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            # A device, FIFO or socket: write through it (it cannot be half-written).
            with open(path, "wb") as out:
                write(out)
            return
        if existing is not None:
            _check_replaceable(path, existing)
        _replace(path, os.path.realpath(path), existing, write)
    except OutputError:
        raise
    except OSError as exc:
        raise OutputError(path, _reason(exc)) from None


def write_bytes(path: str, data: bytes) -> None:
    """Write `data` to `path` (see `write_output`)."""

    def write(out: BinaryIO) -> None:
        out.write(data)

    write_output(path, write)


def write_text(path: str, text: str) -> None:
    """Write `text` to `path` as UTF-8 (see `write_output`)."""
    write_bytes(path, text.encode("utf-8"))
