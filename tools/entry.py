"""The console-script entry points: answer `--version` without importing the compiler.

Each tool's own module imports the dialects, passes and backend it needs (xDSL included),
which takes far longer than printing a version; `--version` is answered here from
`npuir.__version__` alone, as argparse's version action would print it, and anything else
is handed to the tool's `main`.
"""

from __future__ import annotations

import importlib
import sys
from typing import NoReturn

from npuir import __version__


def _start(prog: str, module: str) -> NoReturn:
    # argparse prints the version wherever `--version` stands; so does this, unless the
    # word follows `--` (then it is a file name).
    args = sys.argv[1:]
    words = args[: args.index("--")] if "--" in args else args
    if "--version" in words:
        print(f"{prog} {__version__}")
        sys.exit(0)
    try:
        # Loading the compiler takes a while: Ctrl-C meanwhile is an interruption like
        # any other (exit 130, one line), not a traceback from the middle of an import.
        main = importlib.import_module(f"npuir.tools.{module}").main
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        sys.exit(130)
    main()
    raise AssertionError("a tool's main exits")  # pragma: no cover


def opt() -> NoReturn:
    """`npuir-opt`."""
    _start("npuir-opt", "opt")


def run() -> NoReturn:
    """`npuir-run`."""
    _start("npuir-run", "run")


def advise() -> NoReturn:
    """`npuir-advise`."""
    _start("npuir-advise", "advise")


def import_dump() -> NoReturn:
    """`npuir-import`."""
    _start("npuir-import", "import_dump")
