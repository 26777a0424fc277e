"""Progress on stderr for long commands: one throttled status line, only on a terminal.

A command that runs longer than `DELAY_S` shows what it is doing — the phase (a pass, the
auto search, a simulation) and a count — on one line of stderr that is rewritten at most
every `EVERY_S` seconds and erased when the work is done.  Nothing is written when stderr
is not a terminal, or after `disable()` (the tools call it under `--json` and `--quiet`),
so logs, pipes and machine-read output never see it.  Once shown, a daemon thread keeps
the elapsed time moving while one long call (a simulation) makes no `advance()`.
`NPUIR_PROGRESS_DELAY_S` in the environment replaces `DELAY_S` (tests set it to 0).

A dozen lines instead of `rich` or `tqdm`: neither is a dependency of npuir, a status line
is all that is needed, and `advance()` costs one clock read, so it can sit in a search loop.

    from npuir.progress import progress
    progress.start("torch.compile")   # new work: the delay counts from here (else: import)
    progress.phase("stream-partition")
    progress.advance()      # one more trial, op, ...
    progress.clear()        # when the phase's output is about to be printed
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from typing import TextIO


def _delay() -> float:
    try:
        return max(float(os.environ.get("NPUIR_PROGRESS_DELAY_S", "")), 0.0)
    except ValueError:
        return 2.0


DELAY_S = _delay()
"""Nothing is shown before the command has run this long."""
EVERY_S = 0.25
"""The line is rewritten at most this often."""


class Progress:
    """The status line of one process (see the module docstring)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._start = time.monotonic()
        self._next = self._start + DELAY_S
        self._phase = ""
        self._count = 0
        self._shown = False
        self._active = False
        """A phase is under way (from `phase()`/`advance()` to `clear()`)."""
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.enabled: bool | None = None
        """None: decide on first use (stderr is a terminal); False after `disable()`."""

    @property
    def stream(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stderr

    def disable(self) -> None:
        self.clear()
        self.enabled = False

    def start(self, name: str) -> None:
        """A new piece of work begins with phase `name`: the delay counts from now (a
        `torch.compile` in a long session shows its line only if the compile runs long)."""
        now = time.monotonic()
        self._start, self._next = now, now + DELAY_S
        self.phase(name)

    def phase(self, name: str) -> None:
        """Start phase `name` with a count of 0."""
        self._phase, self._count, self._active = name, 0, True
        self._tick()

    def advance(self, n: int = 1) -> None:
        """Count `n` more units of the current phase."""
        self._count += n
        self._active = True
        self._tick()

    def clear(self) -> None:
        """Erase the line if it is shown (until the next `phase()` or `advance()`)."""
        with self._lock:
            self._active = False
            if self._shown:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
                self._shown = False

    def _tick(self) -> None:
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + EVERY_S
        if self.enabled is None:
            self.enabled = self.stream.isatty()
        if not self.enabled:
            return
        with self._lock:
            self._draw(now)
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._refresh, name="npuir-progress", daemon=True
            )
            self._thread.start()

    def _draw(self, now: float) -> None:
        count = f": {self._count}" if self._count else ""
        line = f"npuir {now - self._start:5.0f}s  {self._phase}{count}"
        self.stream.write(f"\r\x1b[K{line}")
        self.stream.flush()
        self._shown = True

    def _refresh(self) -> None:
        """The thread: redraw the line every `EVERY_S` while a phase is under way."""
        while self.enabled:
            time.sleep(max(EVERY_S, 0.05))
            with self._lock:
                if self._active and self.enabled:
                    try:
                        self._draw(time.monotonic())
                    except (OSError, ValueError):  # stderr closed: nothing more to show
                        self.enabled = False


progress = Progress()
"""This process's status line."""


def _at_exit() -> None:
    try:
        progress.clear()
    except (OSError, ValueError):
        pass  # stderr is gone: nothing is shown there


atexit.register(_at_exit)
