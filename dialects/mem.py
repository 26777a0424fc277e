"""The `mem` dialect: where a lowered program keeps its tensors in device memory.

`mem-plan` gives every tensor a device op writes a place in one HBM pool per
rank, as discardable attributes on the op that writes it (one entry per
result; ops with several results spell both as arrays):

```mlir
%y = npu.add %a, %b {stream.on = @s0, mem.offset = 0 : i64, mem.size = 512 : i64} : ...
%v, %i = npu.topk %x {k = 2 : i64, stream.on = @s0,
                      mem.offset = array<i64: 0, 512>, mem.size = array<i64: 512, 512>} : ...
func.func @f(...) attributes {mem.pool = 1024 : i64}
```

A result that is not planned -- a function result or argument lives in
memory its caller provides (external), a view (`npu.reshape`) shares its
source's buffer and repeats its place -- has offset -1 and size 0 when it is
not a view.  `mem.pool` on a function is the pool's size in bytes (the
planned peak).  Offsets and sizes are multiples of `ALIGN`.  The dialect has
no ops: only these attributes, checked wherever they stand.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, IntegerType, i64
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Dialect, Operation
from xdsl.utils.exceptions import VerifyException

from npuir.dialects.attributes import AttributeVerifier

OFFSET = "mem.offset"
"""Byte offset of each result's buffer in its rank's pool (-1: not planned)."""
SIZE = "mem.size"
"""Bytes reserved for each result's buffer (a multiple of `ALIGN`)."""
POOL = "mem.pool"
"""On a `func.func`: the size of its pool in bytes, i.e. the planned peak."""

ALIGN = 512
"""Every buffer starts on, and is sized to, a multiple of 512 bytes: GE's memory
assigner aligns HBM blocks to 512 bytes (`MEM_ALIGN_SIZE` in hicann/ge)."""

UNPLANNED = -1
"""The offset of a result that has no buffer of its own in the pool."""

NOT_DEVICE_BUFFERS = frozenset({"npu.constant"})
"""Ops whose result is no device buffer (a constant folded into its users)."""

VIEW_OPS = frozenset({"npu.reshape"})
"""Ops whose result is a view of their first operand: no data moves, same buffer."""


def align(nbytes: int) -> int:
    """`nbytes` rounded up to a multiple of `ALIGN`."""
    return -(-nbytes // ALIGN) * ALIGN


def _ints(value: Attribute) -> list[int] | None:
    if isinstance(value, IntegerAttr):
        return [value.value.data]
    if isinstance(value, DenseArrayBase):
        return [int(v) for v in value.get_values()]
    return None


def placement(op: Operation) -> list[tuple[int, int]] | None:
    """`(offset, size)` per result of `op`, or None when `op` carries no plan."""
    offsets = op.attributes.get(OFFSET)
    sizes = op.attributes.get(SIZE)
    if offsets is None or sizes is None:
        return None
    offs, sz = _ints(offsets), _ints(sizes)
    if offs is None or sz is None:
        return None
    return list(zip(offs, sz, strict=False))


_I64: dict[int, IntegerAttr[IntegerType]] = {}


def _i64(value: int) -> IntegerAttr[IntegerType]:
    """A shared `value : i64` (attributes are immutable; building one costs more than a plan
    step, and a plan repeats few distinct offsets and sizes)."""
    attr = _I64.get(value)
    if attr is None:
        attr = _I64[value] = IntegerAttr(value, i64)
    return attr


def set_placement(op: Operation, places: Sequence[tuple[int, int]]) -> None:
    """Write `places` (one `(offset, size)` per result) onto `op`."""
    if len(places) == 1:
        op.attributes[OFFSET] = _i64(places[0][0])
        op.attributes[SIZE] = _i64(places[0][1])
    else:
        op.attributes[OFFSET] = DenseArrayBase.from_list(i64, [p[0] for p in places])
        op.attributes[SIZE] = DenseArrayBase.from_list(i64, [p[1] for p in places])


def pool_size(func: FuncOp) -> int | None:
    """The function's planned pool size, or None when it has no plan."""
    value = func.attributes.get(POOL)
    return value.value.data if isinstance(value, IntegerAttr) else None


def set_pool_size(func: FuncOp, nbytes: int) -> None:
    func.attributes[POOL] = IntegerAttr(nbytes, i64)


def clear_plan(func: FuncOp) -> None:
    """Remove every `mem` attribute from `func` and its ops."""
    func.attributes.pop(POOL, None)
    for op in func.body.walk():
        op.attributes.pop(OFFSET, None)
        op.attributes.pop(SIZE, None)


class MemAttributeVerifier(AttributeVerifier):
    """`mem.offset`/`mem.size`: i64 (one result) or `array<i64>` (one per result), offsets
    aligned or -1, sizes aligned and non-negative; `mem.pool` an i64 on a function."""

    def verify_operation_attribute(self, op: Operation, name: str, value: Attribute) -> None:
        if name == POOL:
            if not isinstance(op, FuncOp):
                raise VerifyException(f"'{POOL}' belongs on a 'func.func', not on '{op.name}'")
            if not isinstance(value, IntegerAttr) or value.value.data < 0:
                raise VerifyException(f"'{POOL}' must be a non-negative i64, got {value}")
            return
        if name not in (OFFSET, SIZE):
            raise VerifyException(f"unknown mem attribute '{name}'")
        values = _ints(value)
        if values is None or (
            isinstance(value, IntegerAttr)
            and not (isinstance(value.type, IntegerType) and value.type.width.data == 64)
        ):
            raise VerifyException(f"'{name}' must be an i64 or an array<i64: ...>, got {value}")
        if len(values) != len(op.results):
            raise VerifyException(
                f"'{name}' gives {len(values)} value(s) but '{op.name}' has "
                f"{len(op.results)} result(s)"
            )
        for v in values:
            if name == OFFSET and v != UNPLANNED and (v < 0 or v % ALIGN):
                raise VerifyException(
                    f"'{OFFSET}' must be -1 or a non-negative multiple of {ALIGN}, got {v}"
                )
            if name == SIZE and (v < 0 or v % ALIGN):
                raise VerifyException(
                    f"'{SIZE}' must be a non-negative multiple of {ALIGN}, got {v}"
                )


Mem = Dialect("mem", [], [], [MemAttributeVerifier()])
