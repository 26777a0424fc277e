"""npuir's dialects: `npu`, `stream`, `sync`, `coreset`, `gear` and `mem` (IR only).

A dialect file never imports a pass or a backend.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Dialect


def _npu() -> Dialect:
    from npuir.dialects.npu import Npu

    return Npu


def _stream() -> Dialect:
    from npuir.dialects.stream import Stream

    return Stream


def _sync() -> Dialect:
    from npuir.dialects.sync import Sync

    return Sync


def _coreset() -> Dialect:
    from npuir.dialects.coreset import Coreset

    return Coreset


def _gear() -> Dialect:
    from npuir.dialects.gear import Gear

    return Gear


def _mem() -> Dialect:
    from npuir.dialects.mem import Mem

    return Mem


DIALECTS: dict[str, Callable[[], Dialect]] = {
    "npu": _npu,
    "stream": _stream,
    "sync": _sync,
    "coreset": _coreset,
    "gear": _gear,
    "mem": _mem,
}
"""Every npuir dialect by name, loaded lazily (as xDSL's registry does)."""
