"""Running a lowered function on one flat buffer per rank, laid out by its memory plan.

`npuir-run --check-memory`: every tensor an op writes is copied into its place
in the rank's pool (a numpy `uint8` array of the plan's `mem.pool` bytes) and
its readers get a view of that place, so a later write to an overlapping place
changes what they read.  The ops also run in an order the device could take
that is as hostile to the plan as happens-before allows: of the streams whose
next op may start (stream order and events, records bound as the hardware binds
their ids), the one whose next op was issued *latest* goes first.  A write
that the plan lets overlap a buffer still to be read on another stream, with no
event between them, thus tends to land before the read, and `--check` sees the
corrupted output.

`Layout.of(module, func)` reads the plan; `host_bytes_available()` is what the
runner compares the pools' total with before it allocates anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue

from npuir.analysis.program import module_streams
from npuir.dialects import mem, stream, sync
from npuir.dialects.npu import tensor_bytes

Array = np.ndarray[Any, Any]


class LayoutError(Exception):
    """A function that cannot run on a pool: it has no memory plan."""

    def __init__(self, message: str, op: Operation) -> None:
        super().__init__(message)
        self.op = op


@dataclass
class Layout:
    """One function's pool size, the place of each value that lives in the pool, and the
    happens-before predecessors of each op (by position in the block)."""

    pool_bytes: int
    places: dict[SSAValue, int] = field(default_factory=dict[SSAValue, int])
    preds: dict[Operation, list[Operation]] = field(
        default_factory=dict[Operation, list[Operation]]
    )

    @staticmethod
    def of(module: ModuleOp, func: FuncOp) -> Layout:
        """The layout `mem-plan` gave `func`; raises `LayoutError` when it has none."""
        pool = mem.pool_size(func)
        if pool is None:
            raise LayoutError(
                f"@{func.sym_name.data} has no memory plan (mem.pool) to run on; lower it "
                "with a pipeline that ends with mem-plan (npu-default does)",
                func,
            )
        layout = Layout(pool)
        streams = module_streams(module)
        main = streams[0].symbol if streams else ""
        last_on: dict[str, Operation] = {}
        latest_id: dict[int, Operation] = {}
        for op in func.body.block.ops:
            places = mem.placement(op)
            if places is not None:
                for res, (offset, _) in zip(op.results, places, strict=False):
                    if offset != mem.UNPLANNED:
                        layout.places[res] = offset
            if isinstance(op, sync.RecordOp | sync.WaitOp):
                s = op.stream_name
            elif isinstance(op, ReturnOp):
                s = main
            else:
                s = stream.stream_of(op) or main
            preds = [last_on[s]] if s in last_on else []
            if isinstance(op, sync.WaitOp):
                record = op.event.owner
                assert isinstance(record, sync.RecordOp)
                rid = record.event_id_value
                preds.append(latest_id.get(rid, record) if rid is not None else record)
            elif isinstance(op, sync.RecordOp) and op.event_id_value is not None:
                latest_id[op.event_id_value] = op
            layout.preds[op] = preds
            last_on[s] = op
        return layout


class Pool:
    """A rank's flat device memory: values written into it come back as views of it."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.data = np.zeros(layout.pool_bytes, dtype=np.uint8)

    def poison(self, results: Sequence[SSAValue]) -> None:
        """Fill the places `results` are about to be written to with all-ones bytes (NaN,
        -1): a device writes its output while it still reads its inputs, so an input
        that shares bytes with the output must not survive the write."""
        for res in results:
            offset = self.layout.places.get(res)
            if offset is not None:
                ty = res.type
                assert isinstance(ty, TensorType)
                self.data[offset : offset + tensor_bytes(ty)] = 0xFF

    def place(self, value: SSAValue, array: Any) -> Any:
        """Copy `array` to `value`'s place and return the view of it there."""
        offset = self.layout.places.get(value)
        if offset is None or not isinstance(array, np.ndarray):
            return array
        flat = np.ascontiguousarray(array)
        nbytes = flat.nbytes
        if offset + nbytes > len(self.data):
            raise ValueError(
                f"the plan puts {nbytes} bytes at offset {offset}, beyond the pool of "
                f"{len(self.data)} bytes"
            )
        region = self.data[offset : offset + nbytes]
        region[...] = flat.reshape(-1).view(np.uint8)
        return region.view(flat.dtype).reshape(flat.shape)


def host_bytes_available() -> int | None:
    """Memory the host can still give (Linux `MemAvailable`), or None when unknown."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


__all__ = ["Layout", "LayoutError", "Pool", "host_bytes_available"]
