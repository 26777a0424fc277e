"""`mem-verify`: check a memory plan on its own, or point at the two ops it lets collide.

A plan (`mem.offset` / `mem.size` on each op, `mem.pool` on the function; see
`npuir.dialects.mem`) is safe when every tensor a device op writes has a place
(its caller's memory for arguments and results, its source's for a view), each
place holds its tensor, lies in the pool and is 512-byte aligned, and any two
buffers whose addresses overlap are **ordered**: every access of the one
written first (its writer and every reader, through views and
`stream.wait_tensor`) happens before the other's writer.  Happens-before is
`npuir.analysis.happens_before`'s: stream order and events, physical event ids
read as the hardware reads them.

This code shares nothing with the planner (`mem-plan`) but that analysis: it
finds buffers and readers by walking SSA uses, and it never enumerates
conflicts.  It sweeps the writers in issue order over a map from address
ranges to the buffer last written there, and checks each new buffer against
the buffers it overwrites: order is transitive, so every pair of buffers that
share an address is covered by a chain of such checks.  A function without a
plan is refused (run `mem-plan`), except one with dynamically shaped buffers,
which `mem-plan` leaves unplanned.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import ReturnOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from npuir.analysis.happens_before import HappensBefore
from npuir.analysis.manager import ALL, Preserved, lowered_functions
from npuir.analysis.program import Program
from npuir.diagnostics import Diagnostic, DiagnosticError, Kind, error, op_location
from npuir.dialects import mem, stream
from npuir.dialects.npu import DYN, NpuOp, tensor_bytes
from npuir.gc_pause import without_collector
from npuir.passes import LIMITS_LOWERED, MEMORY_PLANNED, PARTITIONED, IRState

OVERLAP = Kind(
    "mem.unordered-overlap",
    "mem-verify: {writer} on stream {writer_stream} writes [{start}, {end}), which overlaps the "
    "buffer of {owner} at [{owner_start}, {owner_end}), but {access} on stream {access_stream} "
    "{how} that buffer and is not ordered before the write (no stream order or event puts it "
    "first)",
)
"""Two buffers share addresses but happens-before does not order them; arguments: `writer`
and `writer_stream` (the later write), `start`, `end`, `owner` (the buffer's writer),
`owner_start`, `owner_end`, `access` and `access_stream` (the unordered access), `how`
("writes" or "reads")."""
OVERLAP_NOTE = Kind("mem.unordered-overlap.first-writer", "the buffer of {owner} is written here")
"""The note beside `OVERLAP`, at the buffer's writer; argument: `owner`."""
# A place that cannot hold its tensor: `mem.bad-place.<what>`; `result` is the op's result
# number.
RETURNED_IN_POOL = Kind(
    "mem.bad-place.returned-in-pool",
    "mem-verify: result {result} is returned, so it lives in the caller's memory, yet it has a "
    "place in the pool",
)
"""A returned tensor placed in the pool; argument: `result`."""
NO_PLACE = Kind(
    "mem.bad-place.missing",
    "mem-verify: result {result} is written to device memory but has no place",
)
"""A tensor written to device memory without a place; argument: `result`."""
TOO_SMALL = Kind(
    "mem.bad-place.too-small",
    "mem-verify: result {result} takes {need} bytes but mem.size gives it {size}",
)
"""A place smaller than its tensor; arguments: `result`, `need`, `size`."""
UNALIGNED = Kind(
    "mem.bad-place.unaligned", "mem-verify: result {result}'s place is not {align}-byte aligned"
)
"""A place off the alignment; arguments: `result`, `align`."""
BEYOND_POOL = Kind(
    "mem.bad-place.beyond-pool",
    "mem-verify: result {result} at [{start}, {end}) lies beyond the pool of {pool} bytes",
)
"""A place past the pool's end; arguments: `result`, `start`, `end`, `pool`."""
DYNAMIC_PLANNED = Kind(
    "mem.bad-place.dynamic",
    "mem-verify: a buffer of dynamic shape cannot be planned statically, yet the function "
    "carries a plan",
)
"""A function with a dynamic-shape buffer that carries a static plan."""
VIEW_IN_POOL = Kind(
    "mem.bad-place.view-in-pool",
    "mem-verify: a view of a tensor the pool does not hold has a place in the pool",
)
"""A view placed in the pool while its source is not."""
VIEW_ELSEWHERE = Kind(
    "mem.bad-place.view-elsewhere",
    "mem-verify: a view shares its source's buffer, at {place}, but its place is {got}",
)
"""A view placed elsewhere than its source; arguments: `place`, `got`."""
NO_PLAN = Kind("mem.no-plan", "mem-verify: @{function} has no memory plan; run mem-plan first")
"""A lowered function without a memory plan; argument: `function`."""


@dataclass
class _Placed:
    writer: int
    value: SSAValue
    offset: int
    size: int
    readers: list[int]


def _uses(value: SSAValue) -> tuple[list[Operation], bool, list[SSAValue]]:
    """Ops reading `value` (through `stream.wait_tensor`), whether the function returns it,
    and the views of it."""
    readers: list[Operation] = []
    views: list[SSAValue] = []
    returned = False
    todo = [value]
    while todo:
        v = todo.pop()
        for use in v.uses:
            user = use.operation
            if isinstance(user, stream.WaitTensorOp):
                if use.index == 0:
                    todo.append(user.results[0])
            elif isinstance(user, ReturnOp):
                returned = True
            else:
                readers.append(user)
                if user.name in mem.VIEW_OPS and use.index == 0:
                    views.append(user.results[0])
    return readers, returned, views


def _buffers(prog: Program, pool: int | None) -> list[_Placed]:
    """Every planned buffer, checked for a sound place; views and externals checked too."""
    func = prog.func
    placed: list[_Placed] = []
    planned_anything = pool is not None
    dynamic: Operation | None = None
    expected: list[tuple[Operation, list[tuple[int, int] | None], list[str]]] = []
    for n, op in enumerate(prog.ops):
        if not isinstance(op, NpuOp) or op.name in mem.NOT_DEVICE_BUFFERS:
            continue
        places = mem.placement(op)
        if places is not None:
            planned_anything = True
        if op.name in mem.VIEW_OPS:
            continue  # checked with its source
        for i, res in enumerate(op.results):
            todo = [res]
            readers: list[Operation] = []
            returned = False
            views: list[SSAValue] = []
            while todo:
                r, ret, vs = _uses(todo.pop())
                readers += r
                returned = returned or ret
                views += vs
                todo += vs
            place = None if places is None else places[i]
            if returned:
                if place is not None and place[0] != mem.UNPLANNED:
                    raise error(op, RETURNED_IN_POOL, result=i)
                for v in views:
                    _check_view(v, None)
                continue
            ty = res.type
            assert isinstance(ty, TensorType)
            if DYN in ty.get_shape():
                dynamic = dynamic or op
                continue
            if place is None or place[0] == mem.UNPLANNED:
                if pool is None and places is None:
                    expected.append((op, [], []))
                    continue
                raise error(op, NO_PLACE, result=i)
            offset, size = place
            need = tensor_bytes(ty)
            if size < need:
                raise error(op, TOO_SMALL, result=i, need=need, size=size)
            if offset % mem.ALIGN or size % mem.ALIGN:
                raise error(op, UNALIGNED, result=i, align=mem.ALIGN)
            if pool is not None and offset + size > pool:
                raise error(op, BEYOND_POOL, result=i, start=offset, end=offset + size, pool=pool)
            for v in views:
                _check_view(v, place)
            nodes = sorted({prog.index[r] for r in readers if r in prog.index})
            placed.append(_Placed(n, res, offset, size, nodes))
    if dynamic is not None:
        if planned_anything:
            raise error(dynamic, DYNAMIC_PLANNED)
        return []
    if not planned_anything and expected:
        raise error(func, NO_PLAN, function=func.sym_name.data)
    return placed


def _check_view(view: SSAValue, place: tuple[int, int] | None) -> None:
    op = view.owner
    assert isinstance(op, Operation)
    got = mem.placement(op)
    want_none = place is None or place[0] == mem.UNPLANNED
    if want_none:
        if got is not None and got[0][0] != mem.UNPLANNED:
            raise error(op, VIEW_IN_POOL)
        return
    if got is None or got[0] != place:
        raise error(op, VIEW_ELSEWHERE, place=str(place), got=str(None if got is None else got[0]))


def _ordered_before(b: _Placed, c: _Placed, hb: HappensBefore) -> int | None:
    """An access of b that does not happen before c's writer, or None."""
    w = c.writer
    if not hb.ordered(b.writer, w):
        return b.writer
    for r in b.readers:
        if not hb.ordered(r, w):
            return r
    return None


def check_plan(prog: Program, hb: HappensBefore) -> DiagnosticError | None:
    """The first unsafe place of `prog`'s plan as a located error, or None."""
    try:
        placed = _buffers(prog, mem.pool_size(prog.func))
    except DiagnosticError as exc:
        return exc
    placed.sort(key=lambda p: p.writer)
    starts: list[int] = [0]
    owner: list[int] = [-1]
    for k, c in enumerate(placed):
        if c.size == 0:
            continue
        lo, hi = c.offset, c.offset + c.size
        i = bisect_right(starts, lo) - 1
        j = bisect_left(starts, hi)
        for seg in range(i, j):
            b_index = owner[seg]
            if b_index < 0:
                continue
            b = placed[b_index]
            bad = _ordered_before(b, c, hb)
            if bad is not None:
                return _collision(prog, b, c, bad)
        right_owner = owner[j - 1]
        new_starts = [lo]
        new_owner = [k]
        if starts[i] < lo:
            new_starts.insert(0, starts[i])
            new_owner.insert(0, owner[i])
        if j == len(starts) or starts[j] != hi:
            new_starts.append(hi)
            new_owner.append(right_owner)
        starts[i:j] = new_starts
        owner[i:j] = new_owner
    return None


def _collision(prog: Program, b: _Placed, c: _Placed, access: int) -> DiagnosticError:
    first, second = prog.ops[b.writer], prog.ops[c.writer]
    how = "writes" if access == b.writer else "reads"
    diag = error(
        second,
        OVERLAP,
        writer=prog.describe(c.writer),
        writer_stream=prog.stream_name(prog.stream[c.writer]),
        start=c.offset,
        end=c.offset + c.size,
        owner=prog.describe(b.writer),
        owner_start=b.offset,
        owner_end=b.offset + b.size,
        access=prog.describe(access),
        access_stream=prog.stream_name(prog.stream[access]),
        how=how,
    ).diagnostic
    note = Diagnostic.of("note", OVERLAP_NOTE, op_location(first), owner=prog.describe(b.writer))
    return DiagnosticError(diag, (note,))


def check_function(prog: Program, hb: HappensBefore) -> None:
    """Raise the first unsafe place of `prog`'s plan."""
    found = check_plan(prog, hb)
    if found is not None:
        raise found


@dataclass(frozen=True)
class MemVerifyPass(ModulePass):
    """Check that no two buffers of a memory plan overlap unless happens-before orders them."""

    name = "mem-verify"

    # An op inside a coreset.limit scope is read as writing a tensor with no place (its
    # place is on the op, the scope's result is what the walk of uses sees): lower first.
    REQUIRES: ClassVar[tuple[IRState, ...]] = (PARTITIONED, LIMITS_LOWERED, MEMORY_PLANNED)

    PRESERVES: ClassVar[Preserved] = ALL

    @without_collector
    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for lowered in lowered_functions(ctx, op, "mem-verify"):
            check_function(lowered.prog, lowered.happens_before)


__all__ = ["MemVerifyPass", "check_function", "check_plan"]
