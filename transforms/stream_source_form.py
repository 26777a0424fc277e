"""`stream-source-form`: the streams ops should run on, said as `stream.switch` scopes, the
way a user writes them (TorchAir's `with npu_stream_switch`).

`npuir-advise` uses it to write its advice back into the user's program (`--emit-mlir`,
and the advice's own row, which is `npuir-run` on that text).  Its input is one of:

- a partitioned, not yet lowered module (`stream-partition`'s output): each op's
  `stream.on` names a `stream.decl`, and the op wants that decl's tag;
- a module in source form whose ops say what they want: `stream.want = "TAG"` on an npu
  op is the stream it should run on; on a `stream.switch` it is the scope's new tag, or
  `"<main>"` to remove the scope (its body stays, in its place); `stream.hoist` on an npu
  op moves it before the other ops of its source line (a call taken out of its statement
  into one of its own, evaluated first).

The pass, function by function:

1. removes or retags each `stream.switch` that carries `stream.want`, innermost first;
2. moves each `stream.hoist` op before the run of consecutive npu ops located on the same
   source line that holds it (hoisted ops keep their order among themselves);
3. puts each maximal run of consecutive ops that want the same tag, other than the tag of
   the scope around them, into a new `stream.switch` of that tag, with the priority of a
   user scope or declaration of that tag (0 when there is none); values used after the
   run leave through its `stream.yield`.  A `coreset.limit` around a single op that
   wants a tag wants it too (it moves with its op, as `auto`'s limits are written);
4. drops every `stream.want`, `stream.hoist` and `stream.on`, and the `stream.decl`s.

```mlir
%b = npu.relu %a {stream.want = "s1"} : (tensor<4xf16>) -> tensor<4xf16>
%c = npu.exp %b : (tensor<4xf16>) -> tensor<4xf16>
// becomes
%b = stream.switch "s1" -> tensor<4xf16> {
  %0 = npu.relu %a : (tensor<4xf16>) -> tensor<4xf16>
  stream.yield %0 : tensor<4xf16>
}
%c = npu.exp %b : (tensor<4xf16>) -> tensor<4xf16>
```

A lowered function (events inserted) is refused: its order is the events', not the
user's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp, StringAttr, SymbolRefAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import IsTerminator

from npuir.diagnostics import Kind, error
from npuir.dialects import coreset, stream, sync
from npuir.dialects import scope as scope_utils
from npuir.dialects.npu import NpuOp
from npuir.dialects.scope import walk_nested
from npuir.passes import PARTITIONED, IRState

WANT = "stream.want"
"""The stream an op should run on (on a `stream.switch`: its new tag, `"<main>"` to remove it)."""
HOIST = "stream.hoist"
"""On an npu op: issue it before the other ops of its source line."""

LOWERED_INPUT = Kind(
    "stream.source-form-lowered",
    "stream-source-form: @{function} is lowered (its events fix an order); give it the "
    "partitioned or source-form function",
)
"""`stream-source-form` given a lowered function; argument: `function`."""


def _want(op: Operation) -> str | None:
    want = op.attributes.get(WANT)
    return want.data if isinstance(want, StringAttr) else None


def _line(op: Operation) -> tuple[str, int] | None:
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return (loc.filename.data, loc.line.data)
    return None


def wrap(ops: list[Operation], scope: Operation) -> Operation:
    """Put the consecutive `ops` into `scope` (a `stream.switch` or `coreset.limit` with an
    empty body block and one result per value used after `ops`, in the order of
    `escaping(ops)`), in their place; its terminator (`yield_op`) is the caller's to add."""
    block = ops[0].parent_block()
    assert block is not None
    inside = {inner for op in ops for inner in walk_nested(op)}
    body = scope.regions[0].blocks[0]
    scope.location = ops[0].location
    block.insert_op_before(scope, ops[0])
    for value, new in zip(escaping(ops), scope.results):
        for use in list(value.uses):
            if use.operation not in inside:
                use.operation.operands[use.index] = new
    for op in ops:
        op.detach()
        body.add_op(op)
    return scope


def escaping(ops: list[Operation]) -> list[SSAValue]:
    """The results of `ops` used by an op outside them, in order."""
    inside = {inner for op in ops for inner in walk_nested(op)}
    return [
        result
        for op in ops
        for result in op.results
        if any(use.operation not in inside for use in result.uses)
    ]


def switch_around(ops: list[Operation], tag: str, priority: int) -> stream.SwitchOp:
    """The consecutive `ops` in a new `stream.switch "tag"`."""
    out = escaping(ops)
    scope = stream.SwitchOp(tag, Region(Block()), [v.type for v in out], priority=priority)
    wrap(ops, scope)
    scope.body.block.add_op(stream.YieldOp(*out))
    return scope


def _runs(ops: list[Operation], key: Callable[[Operation], str | None]) -> list[list[Operation]]:
    """Maximal runs of consecutive ops with the same non-None key."""
    out: list[list[Operation]] = []
    prev: str | None = None
    for op in ops:
        k = key(op)
        if k is not None and out and k == prev:
            out[-1].append(op)
        elif k is not None:
            out.append([op])
        prev = k
    return out


def hoisted_order(ops: list[Operation], marked: Callable[[Operation], bool]) -> list[Operation]:
    """`ops` (one block's, in order) with each run of npu ops from one source line
    reordered so that its `marked` ops come first, each part in its own order."""
    out: list[Operation] = []
    i = 0
    while i < len(ops):
        line = _line(ops[i]) if isinstance(ops[i], NpuOp) else None
        j = i + 1
        while (
            line is not None
            and j < len(ops)
            and isinstance(ops[j], NpuOp)
            and _line(ops[j]) == line
        ):
            j += 1
        run = ops[i:j]
        out.extend(o for o in run if marked(o))
        out.extend(o for o in run if not marked(o))
        i = j
    return out


def hoist(block: Block) -> None:
    """Step 2 in one block: each op marked `stream.hoist` before the other ops of its line."""
    previous: Operation | None = None
    for op in hoisted_order(list(block.ops), lambda o: HOIST in o.attributes):
        if op.prev_op is not previous:
            op.detach()
            if previous is None:
                first = block.first_op
                assert first is not None
                block.insert_op_before(op, first)
            else:
                block.insert_op_after(op, previous)
        previous = op


@dataclass(frozen=True)
class StreamSourceFormPass(ModulePass):
    """Say each op's wanted stream as `stream.switch` scopes (see the module docstring)."""

    name = "stream-source-form"

    INVALIDATES: ClassVar[tuple[IRState, ...]] = (PARTITIONED,)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        funcs = [f for f in op.ops if isinstance(f, FuncOp)]
        for func in funcs:
            if any(isinstance(o, sync.RecordOp | sync.WaitOp) for o in walk_nested(func)):
                raise error(
                    func,
                    LOWERED_INPUT,
                    function=func.sym_name.data,
                )
        decls = [d for d in op.ops if isinstance(d, stream.DeclOp)]
        tags = {d.symbol: d.tag.data for d in decls}
        priorities: dict[str, int] = {}
        for d in decls:
            priorities.setdefault(d.tag.data, d.priority_value)
        switches = [s for s in walk_nested(op) if isinstance(s, stream.SwitchOp)]
        for s in switches:
            priorities.setdefault(s.tag_name, s.priority_value)
        # A partitioned function: each op wants its stream's tag.
        for inner in walk_nested(op):
            ref = inner.attributes.pop(stream.STREAM_ON, None)
            if isinstance(ref, SymbolRefAttr) and ref.root_reference.data in tags:
                inner.attributes[WANT] = StringAttr(tags[ref.root_reference.data])
        # A core limit around one op (as `auto` writes them) goes where its op goes.
        for limit in [o for o in walk_nested(op) if isinstance(o, coreset.LimitOp)]:
            body = [o for o in limit.body.block.ops if not o.has_trait(IsTerminator)]
            if len(body) == 1 and WANT in body[0].attributes and WANT not in limit.attributes:
                limit.attributes[WANT] = body[0].attributes.pop(WANT)
        # 1. Scopes removed or retagged, innermost first.
        for s in reversed(switches):
            want = s.attributes.pop(WANT, None)
            if not isinstance(want, StringAttr):
                continue
            if want.data == stream.MAIN_TAG:
                scope_utils.inline_scope(s)
            else:
                s.properties["tag"] = StringAttr(want.data)
        blocks: dict[Block, None] = {}
        for inner in walk_nested(op):
            if _want(inner) is not None or HOIST in inner.attributes:
                block = inner.parent_block()
                if block is not None:
                    blocks[block] = None
        # 2. Hoisted ops first on their line.
        for block in blocks:
            hoist(block)

        # 3. Runs that want another stream than their scope's.
        def inherited(block: Block) -> str:
            parent = block.parent_op()
            while parent is not None and not isinstance(parent, FuncOp | ModuleOp):
                if isinstance(parent, stream.SwitchOp):
                    return parent.tag_name
                parent = parent.parent_op()
            return stream.MAIN_TAG

        for block in blocks:
            around = inherited(block)

            def key(inner: Operation, around: str = around) -> str | None:
                want = _want(inner)
                return want if want is not None and want != around else None

            ops = [o for o in block.ops if not o.has_trait(IsTerminator)]
            for run in _runs(ops, key):
                tag = key(run[0])
                assert tag is not None
                switch_around(run, tag, priorities.get(tag, 0))
        # 4. The annotations and declarations go.
        for inner in walk_nested(op):
            inner.attributes.pop(WANT, None)
            inner.attributes.pop(HOIST, None)
        for d in decls:
            d.detach()
            d.erase()
