"""Running recursive IR work on a thread whose stack can hold deeply nested input.

xDSL's parser, printer, walkers and structural equality are recursive: each
nesting level of the input (a region, an array attribute, a parenthesised
type) costs a few Python frames, and a few C frames where the recursion
passes through a constructor or a generator.  Python's default recursion
limit (1,000 frames) and the main thread's 8 MiB stack give up near 120
levels, where `mlir-opt` handles thousands.  Rewriting xDSL's recursive
descent iteratively would fork it; instead the entry points that walk IR
(`parse_module`, `verify`, `run_passes`, `print_ir` and the tools' `main`)
run their work here, on a thread with a 512 MiB stack and a recursion limit
to match, and the parser refuses input nested deeper than `MAX_NESTING`
levels with a located error, so the stack is never exhausted.  The stack is
reserved address space: pages are committed only as deep as the work goes.

Under cProfile (`python -m cProfile`, `cProfile.run`) the work runs on the calling
thread instead, so that the profile shows it rather than one wait on a lock: a
profiler sees only the thread it was started on.  Other `sys.setprofile` hooks (which
libraries may leave installed) do not change where the work runs.  Input nested more than about
a hundred levels then fails as it would without this module; profile such input by
calling the profiler on the deep-stack thread (`on_deep_stack(cProfile.run, ...)`).
"""

from __future__ import annotations

import contextvars
import sys
import threading
from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

MAX_NESTING = 5000
"""How deeply regions, attributes and types may nest in parsed text.

One level of nested `stream.switch` scopes costs about 30 Python frames when
parsed.  At 4,990 levels every phase (parse, verify, print in both forms,
parse again) stays within the stack and frame budget below, in about 40 CPU
seconds and 320 MB (`python bench/deep_nesting.py`); the printed text is
75 MB by then, nearly all indentation, so a deeper bound would buy nothing."""

STACK_BYTES = 512 * 1024 * 1024
RECURSION_LIMIT = 400_000

_state = threading.local()
_limit_lock = threading.Lock()
_start_lock = threading.Lock()
_active = 0
_saved_limit = 0


def on_deep_stack(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Call `fn` on a deep-stack thread (directly when already on one) and
    return its result or raise its exception."""
    if getattr(_state, "deep", False) or _under_cprofile():
        return fn(*args, **kwargs)
    result: list[R] = []
    failure: list[BaseException] = []

    def work() -> None:
        _state.deep = True
        try:
            result.append(fn(*args, **kwargs))
        except BaseException as exc:  # handed to the caller's thread
            failure.append(exc)

    _raise_limit()
    try:
        # The caller's context variables (`npuir.executor.using`, the searches' shared
        # memos) hold on the thread too: a new thread would start with none.
        context = contextvars.copy_context()
        thread = threading.Thread(
            target=context.run, args=(work,), name="npuir-deep-stack", daemon=True
        )
        # The stack size is read when the thread starts, not when it is built, and it is
        # process-wide: hold it (under a lock, so that two callers do not restore each
        # other's setting) until the thread is running on its stack.
        with _start_lock:
            previous = threading.stack_size(STACK_BYTES)
            try:
                thread.start()
            finally:
                threading.stack_size(previous)
        thread.join()
    finally:
        _restore_limit()
    if failure:
        raise failure[0].with_traceback(failure[0].__traceback__)
    return result[0]


def _under_cprofile() -> bool:
    # `python -m cProfile` runs cProfile as `__main__`, so its profiler class is
    # `__main__.Profile`: ask for the C profiler every cProfile profiler derives from.
    from _lsprof import Profiler

    return isinstance(sys.getprofile(), Profiler)


def deep_stack(fn: Callable[P, R]) -> Callable[P, R]:
    """Decorate `fn` to run through `on_deep_stack`."""

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        return on_deep_stack(fn, *args, **kwargs)

    return wrapper


def _raise_limit() -> None:
    # The limit is per interpreter, not per thread; the calling thread waits
    # in `join` meanwhile, so only the deep thread can use the raised limit.
    global _active, _saved_limit
    with _limit_lock:
        if _active == 0:
            _saved_limit = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_saved_limit, RECURSION_LIMIT))
        _active += 1


def _restore_limit() -> None:
    global _active
    with _limit_lock:
        _active -= 1
        if _active == 0:
            sys.setrecursionlimit(_saved_limit)
