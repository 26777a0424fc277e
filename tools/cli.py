"""What every npuir command-line tool shares: exit codes, common flags, the crash contract.

A tool is a `run(argv) -> int` that parses its arguments and calls the library,
and a `main()` that hands it to `run_tool`:

    def main(argv: Sequence[str] | None = None) -> NoReturn:
        sys.exit(run_tool("npuir-foo", run, argv))

`run_tool` keeps the crash contract: an error the user caused is a diagnostic
and exit status 1 or 2 (the tool's `run` prints it); anything else that
escapes is a bug in npuir, so it becomes exit status 70 (`EX_SOFTWARE` in
sysexits.h) and one line on stderr saying so, naming the command line to
report and a file holding the traceback.  With `--debug` the traceback is
printed instead.  A script can thus tell bad input (1), a bad invocation (2)
and a crash (70) apart.

Every tool takes `--version` and `--debug` (`add_common_arguments`) and lists
its exit codes in its `--help` (`exit_codes_epilog`).
"""

from __future__ import annotations

import argparse
import errno
import gc
import io
import json
import os
import platform
import shlex
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from npuir import __version__
from npuir.deep_stack import on_deep_stack
from npuir.diagnostics import Diagnostic, diagnostic_json, printable_name
from npuir.gc_pause import collector_paused
from npuir.tools.output import remove_partial_outputs, strict_stdout

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_INPUT",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "add_common_arguments",
    "exit_codes_epilog",
    "print_json",
    "print_json_error",
    "run_tool",
]

EXIT_OK = 0
EXIT_INPUT = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 70  # EX_SOFTWARE, sysexits.h: "an internal software error has been detected"
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a tool stopped by Ctrl-C
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for `cat big | head`

_SHARED_CODES: tuple[tuple[int, str], ...] = (
    (EXIT_INTERNAL, "internal error: a bug in npuir (see --debug)"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C)"),
    (EXIT_BROKEN_PIPE, "standard output closed by its reader"),
)


JSON_SCHEMA = 1
"""The version of the `--json` output of every tool (the `"schema"` field of each object it
prints).  It changes, and CHANGELOG.md says how, whenever a field is removed, renamed or
changes meaning; new fields may appear within a version.  docs/json-schema/ holds the JSON
Schema of each tool's output at this version."""


def print_json(obj: dict[str, Any]) -> None:
    """Print `obj` as a tool's `--json` answer: one JSON object, `"schema"` first."""
    print(json.dumps({"schema": JSON_SCHEMA, **obj}, indent=2))


def print_json_error(
    error: Diagnostic, notes: Sequence[Diagnostic] = (), warnings: Sequence[Diagnostic] = ()
) -> None:
    """Print a failure as a tool's `--json` answer: `{"error": {...}, "warnings": [...]}`,
    the error's notes under it (docs/json-schema: every tool's error object)."""
    print_json(
        {
            "error": {**diagnostic_json(error), "notes": [diagnostic_json(n) for n in notes]},
            "warnings": [diagnostic_json(w) for w in warnings],
        }
    )


def exit_codes_epilog(codes: Sequence[tuple[int, str]]) -> str:
    """The `--help` epilog listing a tool's own exit codes and the shared ones (use with
    `argparse.RawDescriptionHelpFormatter`)."""
    lines = ["exit codes:"]
    lines += [f"  {code:<3} {meaning}" for code, meaning in (*codes, *_SHARED_CODES)]
    return "\n".join(lines)


def add_common_arguments(ap: argparse.ArgumentParser) -> None:
    """`--version` and `--debug`, which every tool takes."""
    ap.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    ap.add_argument(
        "--debug",
        action="store_true",
        help="on an internal error, print the Python traceback instead of saving it to a file",
    )


def shape_argument(text: str) -> tuple[str, tuple[int, ...]]:
    """`--shape ARG=DxD...` (npuir-run and npuir-advise): the argument and its shape."""
    arg, sep, dims = text.partition("=")
    try:
        if not sep or not arg:
            raise ValueError
        shape = tuple(int(d) for d in dims.lower().split("x"))
        if any(d < 0 for d in shape):
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"'{text}' is not ARG=DxD... (e.g. 0=4x2 or x1=4x2)"
        ) from None
    return arg, shape


def run_tool(
    prog: str,
    run: Callable[[list[str]], int],
    argv: Sequence[str] | None = None,
    *,
    exiting: bool = False,
) -> int:
    """Call `run(argv)` under the crash contract and return the exit status.

    Standard output is flushed before the status is returned, so that a write that
    fails (a full disk, `> /dev/full`) is reported -- exit 2, one line -- instead of
    being lost in the interpreter's last flush; a reader that went away is exit 141.

    `exiting`: the process ends when this returns (a tool's `main`).  What the run built
    is then frozen (`gc.freeze`) as the collector resumes: otherwise the first
    collection after the pause, or the interpreter's last one, walks the whole IR once
    more only to free it as the process ends (0.7 s of a 9 s round trip of 100k ops)."""
    args = list(sys.argv[1:] if argv is None else argv)
    real_stdout = sys.stdout
    strict = _strict_stdout_for(real_stdout)
    previous_term = _on_sigterm_remove_partial_outputs()
    try:
        if strict is not None:
            sys.stdout = strict
        return _run_tool(prog, run, args, exiting)
    finally:
        if strict is not None:
            try:
                strict.flush()
            except OSError:
                pass  # reported already; what is left goes nowhere
            sys.stdout = real_stdout
            strict.detach()
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)


def _strict_stdout_for(stdout: TextIO | None) -> io.TextIOWrapper[Any] | None:
    """The process's own stdout, rewrapped to fail on a short write (`strict_stdout`);
    None for any other stream (a test's capture) or one without a descriptor."""
    if stdout is None or sys.__stdout__ is None or stdout is not sys.__stdout__:
        return None
    try:
        stdout.flush()
        return strict_stdout(stdout)
    except (AttributeError, OSError, ValueError):
        return None


def _on_sigterm_remove_partial_outputs() -> Any:
    """On SIGTERM, remove the output files being written, then die of the signal as
    before; returns the handler it replaced (None off the main thread, where no handler
    can be installed, or when SIGTERM was not at its default)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    previous = signal.getsignal(signal.SIGTERM)
    if previous is not signal.SIG_DFL:
        return None

    def handler(signum: int, frame: object) -> None:
        remove_partial_outputs()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, handler)
    return previous


def _run_tool(prog: str, run: Callable[[list[str]], int], args: list[str], exiting: bool) -> int:
    try:
        try:
            # Deeply nested input recurses deeply in every phase (npuir.deep_stack).  The
            # cyclic collector is off for the run: the IR lives until the tool exits, and
            # each full collection would walk all of it again (30% of `npuir-run` on a
            # 30k-op chain, growing with the program), for 3% less peak memory.
            with collector_paused():
                code = on_deep_stack(run, args)
                if exiting:
                    gc.freeze()
        except SystemExit:
            sys.stdout.flush()  # `--help` on a full disk fails too
            raise
        sys.stdout.flush()
        return code
    except KeyboardInterrupt:
        # The work thread may be mid-write: its output's temporary file goes now.
        remove_partial_outputs()
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`npuir-opt big.mlir | head`): not a bug, and nothing left to
        # say.  Point stdout at /dev/null so the interpreter's final flush does not fail too.
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        if exc.errno not in _OUTPUT_ERRNOS:
            return _report_crash(prog, args, exc)
        # Every output file goes through `npuir.tools.output`, which reports its own
        # failures; what is left failing to write with these errors is standard output.
        _silence_stdout()
        print(
            f"{prog}: error: cannot write standard output: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except Exception as exc:
        return _report_crash(prog, args, exc)


_OUTPUT_ERRNOS = frozenset(
    getattr(errno, name)
    for name in ("ENOSPC", "EDQUOT", "EFBIG", "EIO", "EROFS", "EBADF")
    if hasattr(errno, name)
)
"""Errors of a write that failed for want of room or a writable device, not of a bug."""


def _silence_stdout() -> None:
    """Point standard output at /dev/null, dropping what is buffered, so that the
    interpreter's final flush neither fails nor writes half a line more."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _summary(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    if len(first) > 160:
        first = first[:157] + "..."
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _report_crash(prog: str, args: list[str], exc: BaseException) -> int:
    # Arguments that are not UTF-8 (a file name) are shown as `\xNN`: the report must
    # never fail itself.
    command = printable_name(shlex.join([prog, *args]))
    details = "".join(traceback.format_exception(exc))
    if "--debug" in args:
        sys.stderr.write(details)
        where = "the traceback above"
    else:
        where = _save_crash_report(prog, command, details)
    print(
        f"{prog}: internal error: {_summary(exc)} -- this is a bug in npuir {__version__}; "
        f"please report it with the command line ({command}), its input files and {where}",
        file=sys.stderr,
    )
    return EXIT_INTERNAL


def _save_crash_report(prog: str, command: str, details: str) -> str:
    """Write what a bug report needs to a new file; say where, or how to get it instead."""
    try:
        fd, path = tempfile.mkstemp(prefix=f"{prog}-crash-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as out:
            out.write(
                f"command: {command}\n"
                f"npuir {__version__}, Python {platform.python_version()}, {platform.platform()}\n"
                f"\n{details}"
            )
    except (OSError, ValueError):
        return "the traceback that --debug prints"
    return f"the traceback saved in {path} (or rerun with --debug)"
