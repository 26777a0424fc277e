"""`stream-partition`: give every op a stream and flatten `stream.switch` scopes.

The user-level program says where work runs with scopes (TorchAir's
`npu_stream_switch`); the lowered program declares each stream once at module
level (`stream.decl`) and tags every `npu` op and `stream.wait_tensor` with
`stream.on = @sym`.  The order of the ops is kept exactly: it is the issue
order the host enqueues them in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from npuir.analysis.core_limits import CoreLimits
from npuir.analysis.partition import MODES, Assignment, assign, pinned_tags
from npuir.analysis.program import (
    DEFAULT_STREAM,
    NodeKind,
    Program,
    StreamInfo,
    build_program,
    is_lowered,
    module_streams,
    scheduled_functions,
)
from npuir.backends.npu.hardware import Hardware
from npuir.context import remark
from npuir.diagnostics import error
from npuir.dialects import coreset, scope, stream
from npuir.dialects.npu import DYN, NpuOp
from npuir.transforms.coreset_lower import device_of


class StreamTable:
    """The module's streams by tag: default first, then in order of first use."""

    def __init__(self, existing: list[StreamInfo]) -> None:
        self.infos: list[StreamInfo] = list(existing)
        self.by_tag: dict[str, int] = {info.tag: i for i, info in enumerate(existing)}
        self.new: list[StreamInfo] = []
        self._refs: dict[str, SymbolRefAttr] = {}
        self.get(stream.DEFAULT_TAG, 0, None)

    def get(self, tag: str, priority: int, where: Operation | None) -> SymbolRefAttr:
        index = self.by_tag.get(tag)
        if index is None:
            taken = {info.symbol for info in self.infos}
            number = len(self.infos)
            while f"s{number}" in taken:
                number += 1
            info = StreamInfo(f"s{number}", tag, priority)
            self.by_tag[tag] = len(self.infos)
            self.infos.append(info)
            self.new.append(info)
            index = self.by_tag[tag]
        info = self.infos[index]
        if info.priority != priority and where is not None:
            if tag == stream.DEFAULT_TAG:
                # Nothing else set it: the default stream's priority is the fixed one
                # every function's unscoped ops and `func.return` run at.
                raise error(
                    where,
                    f'stream "{tag}" is given priority {priority} here, but the default '
                    f"stream's priority is fixed at {info.priority}; drop the priority or "
                    "use another tag",
                )
            raise error(
                where,
                f'stream "{tag}" is given priority {priority} here but {info.priority} '
                "elsewhere; one stream has one priority",
            )
        ref = self._refs.get(info.symbol)
        if ref is None:
            ref = self._refs[info.symbol] = SymbolRefAttr(info.symbol)
        return ref


def _has_dynamic_args(func: FuncOp) -> bool:
    return any(
        isinstance(t, TensorType) and DYN in t.get_shape() for t in func.function_type.inputs
    )


def _first_switch(func: FuncOp) -> stream.SwitchOp | None:
    for op in func.body.walk():
        if isinstance(op, stream.SwitchOp):
            return op
    return None


def reissue(func: FuncOp, prog: Program, order: list[int]) -> None:
    """Issue the ops of a flat function in `order` (node indices of `prog`).

    Ops that are not nodes keep their place in front (`coreset.stream_limit`);
    a `stream.wait_tensor` goes right before its first user — its `dep`'s
    producer precedes every user already, as a control dependency.
    """
    block = func.body.block
    nodes = [prog.ops[n] for n in order]
    in_program = set(nodes)
    waits = [op for op in block.ops if isinstance(op, stream.WaitTensorOp)]
    leading = [op for op in block.ops if op not in in_program and op not in waits]
    for op in list(block.ops):
        op.detach()
    placed: set[Operation] = set()

    def place(op: Operation) -> None:
        for operand in op.operands:
            owner = operand.owner
            if isinstance(owner, stream.WaitTensorOp) and owner not in placed:
                place(owner)
        placed.add(op)
        block.add_op(op)

    for op in leading:
        block.add_op(op)
    for op in nodes[:-1]:
        place(op)
    for wait in waits:
        if wait not in placed:
            place(wait)
    place(nodes[-1])


def flatten_switches(func: FuncOp) -> None:
    """Move every scope's body in front of it and replace its results by the yielded values."""
    switches = [op for op in func.body.walk() if isinstance(op, stream.SwitchOp)]
    for switch in reversed(switches):
        scope.inline_scope(switch)


def _first_scope_over(func: FuncOp, max_streams: int) -> stream.SwitchOp | None:
    """The scope whose tag is the first one the cap has no stream left for."""
    seen: set[str] = set()
    for op in func.body.walk():
        if isinstance(op, stream.SwitchOp) and op.tag_name != stream.DEFAULT_TAG:
            seen.add(op.tag_name)
            if len(seen) + 1 > max_streams:
                return op
    return None


def _first_scopes(func: FuncOp) -> dict[str, stream.SwitchOp]:
    scopes: dict[str, stream.SwitchOp] = {}
    for op in func.body.walk():
        if isinstance(op, stream.SwitchOp):
            scopes.setdefault(op.tag_name, op)
    return scopes


def _wait_tensor_streams(
    block: Block,
    tag: str | None,
    prog: Program,
    result: Assignment,
    by_tag: dict[str, int] | None,
    follow: bool,
    out: dict[stream.WaitTensorOp, int],
) -> None:
    """A `stream.wait_tensor` runs on its scope's stream (when tags count,
    `by_tag` is given); outside any scope on its first user's stream if the
    mode places ops itself (`follow`), else on the default stream.
    insert-events erases it, so the choice only makes the IR read well."""
    for op in block.ops:
        if isinstance(op, stream.SwitchOp):
            inner = op.tag_name if by_tag is not None else None
            _wait_tensor_streams(op.body.block, inner, prog, result, by_tag, follow, out)
        elif isinstance(op, coreset.LimitOp):
            _wait_tensor_streams(op.body.block, tag, prog, result, by_tag, follow, out)
        elif isinstance(op, stream.WaitTensorOp):
            if tag is not None and by_tag is not None:
                out[op] = by_tag[tag]
                continue
            users = [prog.index[u.operation] for u in op.result.uses if u.operation in prog.index]
            out[op] = result.stream_of[min(users)] if users and follow else DEFAULT_STREAM


def _assign_auto(
    func: FuncOp,
    prog: Program,
    pinned: list[str | None],
    priorities: dict[str, int],
    max_streams: int,
    hw: Hardware,
    reserved: set[str],
) -> Assignment:
    """Run the cost-model-driven search, with the core limits coreset-lower would write."""
    from npuir.transforms.stream_partition_auto import assign_auto

    module = func.parent_op()
    assert isinstance(module, ModuleOp)
    limits = CoreLimits(module, hw).run()

    def limit_of(p: Program, n: int, engine: str) -> int | None:
        op = p.ops[n]
        return limits.of(op)[engine] if isinstance(op, NpuOp) else None

    return assign_auto(
        prog, pinned, priorities, max_streams, hw, limits=limit_of, reserved=reserved
    )


@dataclass(frozen=True)
class StreamPartitionPass(ModulePass):
    """Assign every op a stream and flatten stream.switch scopes (TorchAir's npu_stream_switch).

    The assignment itself is `npuir.analysis.partition.assign`; its module
    docstring says exactly what each mode does.  Options:
    - `mode`: "user" (default) puts each op on the stream of its innermost
      scope, the same tag being the same stream, and the rest on the default
      stream; "single" puts everything on the default stream and rejects a
      program that has scopes; the baselines "ge" (GE's default logical
      stream allocation), "engine" (a stream per engine class) and "nimble"
      (Nimble's minimum path cover); "auto" (cost-model driven).  Every mode
      but "single" keeps the ops of a scope on their tag's stream.
    - `max-streams`: the most streams a function may use, the default one
      included (default 8).  User tags beyond it are an error at the first
      scope over the cap; the other modes merge their streams to fit.
    - `ignore-tags`: treat the program as if it had no scopes (an honest
      baseline for an annotated program).
    - `dynamic-multi-stream`: partition a function whose arguments have
      dynamic dims; by default such a function runs on one stream (TorchAir's
      rule for dynamic shapes), with a remark saying so.
    - `hw`: the device preset or TOML file `auto` costs with (default: the
      module's `npu.target`, else 910b2).

    Streams a mode makes are tagged "comm", "cube", "aicpu", "ge1", "chain1",
    ...; a module's scope tags are never reused for them, and functions share
    one `stream.decl` per tag.
    """

    name = "stream-partition"

    MODES: ClassVar[tuple[str, ...]] = (*MODES, "auto")

    mode: str = "user"
    ignore_tags: bool = False
    dynamic_multi_stream: bool = False
    max_streams: int = 8
    hw: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in self.MODES:
            raise ValueError(f"mode '{self.mode}' is not one of: {', '.join(self.MODES)}")
        if self.max_streams < 1:
            raise ValueError(f"max-streams must be >= 1, got {self.max_streams}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        table = StreamTable(module_streams(op))
        reserved = set(table.by_tag) | {
            s.tag_name for s in op.walk() if isinstance(s, stream.SwitchOp)
        }
        hardware = device_of(op, self.hw) if self.mode == "auto" else None
        for func in scheduled_functions(op):
            if is_lowered(func):
                continue
            first = _first_switch(func)
            if self.mode == "single" and not self.ignore_tags and first is not None:
                raise error(
                    first,
                    f'single-stream mode conflicts with the stream label "{first.tag_name}" '
                    "(remove the scope, or pass ignore-tags=true)",
                )
            mode = self.mode
            use_tags = mode != "single" and not self.ignore_tags
            if mode != "single" and not self.dynamic_multi_stream and _has_dynamic_args(func):
                name = func.sym_name.data
                if use_tags and first is not None:
                    remark(
                        ctx,
                        func,
                        f"@{name} has dynamic-shape arguments and runs on one stream; its stream "
                        "labels are ignored (dynamic-multi-stream=true honours them)",
                    )
                elif mode != "user":
                    remark(
                        ctx,
                        func,
                        f"@{name} has dynamic-shape arguments and runs on one stream; mode={mode} "
                        "is not applied (dynamic-multi-stream=true applies it)",
                    )
                mode, use_tags = "single", False
            self._partition(func, mode, use_tags, table, reserved, hardware)
        self._declare(op, table)

    def _partition(
        self,
        func: FuncOp,
        mode: str,
        use_tags: bool,
        table: StreamTable,
        reserved: set[str],
        hardware: Hardware | None,
    ) -> None:
        prog = build_program(func)
        pinned: list[str | None] = [None] * len(prog)
        priorities: dict[str, int] = {}
        scopes: dict[str, stream.SwitchOp] = {}
        if use_tags:
            pinned, priorities = pinned_tags(func)
            over = _first_scope_over(func, self.max_streams)
            if over is not None:
                raise error(
                    over,
                    f'the stream label "{over.tag_name}" needs a stream beyond max-streams='
                    f"{self.max_streams} (the default stream counts)",
                )
            scopes = _first_scopes(func)
        try:
            if mode == "auto":
                assert hardware is not None
                result = _assign_auto(
                    func, prog, pinned, priorities, self.max_streams, hardware, reserved
                )
            else:
                result = assign(mode, prog, pinned, priorities, self.max_streams, reserved=reserved)
        except ValueError as exc:
            raise error(func, str(exc)) from None
        refs = [table.get(info.tag, info.priority, scopes.get(info.tag)) for info in result.streams]
        for n, kind in enumerate(prog.kind):
            if kind is NodeKind.COMPUTE:
                prog.ops[n].attributes[stream.STREAM_ON] = refs[result.stream_of[n]]
        waits: dict[stream.WaitTensorOp, int] = {}
        by_tag = {info.tag: i for i, info in enumerate(result.streams)} if use_tags else None
        follow = mode not in ("user", "single")
        _wait_tensor_streams(func.body.block, None, prog, result, by_tag, follow, waits)
        for wait, s in waits.items():
            wait.attributes[stream.STREAM_ON] = refs[s]
        flatten_switches(func)
        if result.order is not None:
            reissue(func, prog, result.order)

    @staticmethod
    def _declare(module: ModuleOp, table: StreamTable) -> None:
        existing = [o for o in module.ops if isinstance(o, stream.DeclOp)]
        anchor = existing[-1].next_op if existing else module.body.block.first_op
        for info in table.new:
            decl = stream.DeclOp(info.symbol, info.tag, info.priority)
            if anchor is None:
                module.body.block.add_op(decl)
            else:
                module.body.block.insert_op_before(decl, anchor)
