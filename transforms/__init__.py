"""npuir's passes, one per file; this registry is the one list of them.

Each entry maps a pass name to a factory returning the pass class, so that
importing the registry stays cheap (xDSL's own registry works the same way).
A pass's registry key always equals its `name` (tested).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def _gear_multiversion() -> type[ModulePass]:
    from npuir.transforms.gear_multiversion import GearMultiversionPass

    return GearMultiversionPass


def _coreset_check() -> type[ModulePass]:
    from npuir.transforms.coreset_check import CoresetCheckPass

    return CoresetCheckPass


def _coreset_partition() -> type[ModulePass]:
    from npuir.transforms.coreset_partition import CoresetPartitionPass

    return CoresetPartitionPass


def _coreset_lower() -> type[ModulePass]:
    from npuir.transforms.coreset_lower import CoresetLowerPass

    return CoresetLowerPass


def _stream_partition() -> type[ModulePass]:
    from npuir.transforms.stream_partition import StreamPartitionPass

    return StreamPartitionPass


def _stream_unlower() -> type[ModulePass]:
    from npuir.transforms.stream_unlower import StreamUnlowerPass

    return StreamUnlowerPass


def _stream_source_form() -> type[ModulePass]:
    from npuir.transforms.stream_source_form import StreamSourceFormPass

    return StreamSourceFormPass


def _insert_events() -> type[ModulePass]:
    from npuir.transforms.insert_events import InsertEventsPass

    return InsertEventsPass


def _sync_verify() -> type[ModulePass]:
    from npuir.transforms.sync_verify import SyncVerifyPass

    return SyncVerifyPass


def _mem_plan() -> type[ModulePass]:
    from npuir.transforms.mem_plan import MemPlanPass

    return MemPlanPass


def _mem_verify() -> type[ModulePass]:
    from npuir.transforms.mem_verify import MemVerifyPass

    return MemVerifyPass


def _capture_close() -> type[ModulePass]:
    from npuir.transforms.capture_close import CaptureClosePass

    return CaptureClosePass


def _capture_verify() -> type[ModulePass]:
    from npuir.transforms.capture_verify import CaptureVerifyPass

    return CaptureVerifyPass


def _core_deadlock_check() -> type[ModulePass]:
    from npuir.transforms.core_deadlock_check import CoreDeadlockCheckPass

    return CoreDeadlockCheckPass


def _npu_fuse_kernels() -> type[ModulePass]:
    from npuir.transforms.npu_fuse_kernels import NpuFuseKernelsPass

    return NpuFuseKernelsPass


PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "gear-multiversion": _gear_multiversion,
    "stream-partition": _stream_partition,
    "stream-unlower": _stream_unlower,
    "stream-source-form": _stream_source_form,
    "coreset-check": _coreset_check,
    "core-deadlock-check": _core_deadlock_check,
    "coreset-lower": _coreset_lower,
    "coreset-partition": _coreset_partition,
    "insert-events": _insert_events,
    "sync-verify": _sync_verify,
    "mem-plan": _mem_plan,
    "mem-verify": _mem_verify,
    "npu-fuse-kernels": _npu_fuse_kernels,
    "capture-close": _capture_close,
    "capture-verify": _capture_verify,
}
"""Every npuir pass by name.  The `test-*` passes that print what an analysis computes are
not among them: they live with the tests (test/lib/analysis_passes.py), and the lit tests
load them with `--load-pass` (lit.cfg's `%test-passes`)."""
