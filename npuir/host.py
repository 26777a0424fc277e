"""What the host machine can give a run: its available memory, and the CANN environment
variable npuir honours (`ENABLE_DYNAMIC_SHAPE_MULTI_STREAM`).

Inputs far smaller than what they make npuir allocate (a 40 GB tensor declared in one
line, weights listed in a small archive) are refused up front when what they need is
more than `available_bytes()`, with a message naming the cause, instead of ending in a
`MemoryError` or the kernel's out-of-memory killer.
"""

from __future__ import annotations

import os

__all__ = ["DYNAMIC_MULTI_STREAM_ENV", "available_bytes", "dynamic_multi_stream_env", "gib"]

DYNAMIC_MULTI_STREAM_ENV = "ENABLE_DYNAMIC_SHAPE_MULTI_STREAM"
"""CANN's variable: `1` lets graphs with dynamic-shape inputs use several streams."""


def dynamic_multi_stream_env() -> bool:
    """Whether `ENABLE_DYNAMIC_SHAPE_MULTI_STREAM=1` is set: the one reader of it, which the
    `dynamic-multi-stream` option's default, `npuir-opt`, `npuir-run`, `CompilerConfig` and
    the torch routes share (read when asked, so a change of the environment takes effect on
    the next pipeline)."""
    return os.environ.get(DYNAMIC_MULTI_STREAM_ENV, "").strip() == "1"


def available_bytes() -> int | None:
    """The memory the host can give without swapping (`MemAvailable` in `/proc/meminfo`,
    else physical pages times page size), or None where neither is known.  The
    environment variable `NPUIR_HOST_MEMORY` (bytes) overrides it, for tests."""
    forced = os.environ.get("NPUIR_HOST_MEMORY")
    if forced is not None:
        try:
            return max(0, int(forced))
        except ValueError:
            pass
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, AttributeError):
        return None


def gib(n: int) -> str:
    """`n` bytes as `12.3 GiB` (or MiB below one GiB)."""
    if n >= 1 << 30:
        return f"{n / (1 << 30):.1f} GiB"
    return f"{n / (1 << 20):.1f} MiB"
