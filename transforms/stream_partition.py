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

from npuir.analysis.program import StreamInfo, is_lowered, module_streams, scheduled_functions
from npuir.context import remark
from npuir.diagnostics import error
from npuir.dialects import stream
from npuir.dialects.npu import DYN, NpuOp


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


def _assign(block: Block, ref: SymbolRefAttr, table: StreamTable, use_tags: bool) -> None:
    """Tag ops with the stream of their innermost scope (innermost wins)."""
    for op in block.ops:
        if isinstance(op, stream.SwitchOp):
            inner = table.get(op.tag_name, op.priority_value, op) if use_tags else ref
            _assign(op.body.block, inner, table, use_tags)
        elif isinstance(op, NpuOp | stream.WaitTensorOp):
            op.attributes[stream.STREAM_ON] = ref
        else:
            for region in op.regions:
                for inner_block in region.blocks:
                    _assign(inner_block, ref, table, use_tags)


def flatten_switches(func: FuncOp) -> None:
    """Move every scope's body in front of it and replace its results by the yielded values."""
    switches = [op for op in func.body.walk() if isinstance(op, stream.SwitchOp)]
    for switch in reversed(switches):
        parent = switch.parent_block()
        assert parent is not None
        body = switch.body.block
        term = body.last_op
        assert isinstance(term, stream.YieldOp)
        for op in list(body.ops):
            if op is term:
                continue
            op.detach()
            parent.insert_op_before(op, switch)
        for result, value in zip(switch.results, term.operands):
            result.replace_all_uses_with(value)
        parent.erase_op(switch)


@dataclass(frozen=True)
class StreamPartitionPass(ModulePass):
    """Assign every op a stream and flatten stream.switch scopes (TorchAir's npu_stream_switch).

    Options:
    - `mode`: "user" (default) puts each op on the stream of its innermost
      scope, the same tag being the same stream; "single" puts everything on
      the default stream and rejects a program that has scopes.
    - `ignore-tags`: treat the program as if it had no scopes (an honest
      baseline for an annotated program).
    - `dynamic-multi-stream`: honour scopes in a function whose arguments have
      dynamic dims; by default such a function runs on one stream (TorchAir's
      rule for dynamic shapes), with a remark saying so.
    """

    name = "stream-partition"

    MODES: ClassVar[tuple[str, ...]] = ("user", "single")

    mode: str = "user"
    ignore_tags: bool = False
    dynamic_multi_stream: bool = False

    def __post_init__(self) -> None:
        if self.mode not in self.MODES:
            raise ValueError(f"mode '{self.mode}' is not one of: {', '.join(self.MODES)}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        table = StreamTable(module_streams(op))
        default = table.get(stream.DEFAULT_TAG, 0, None)
        for func in scheduled_functions(op):
            if is_lowered(func):
                continue
            use_tags = self.mode == "user" and not self.ignore_tags
            first = _first_switch(func)
            if self.mode == "single" and not self.ignore_tags and first is not None:
                raise error(
                    first,
                    f'single-stream mode conflicts with the stream label "{first.tag_name}" '
                    "(remove the scope, or pass ignore-tags=true)",
                )
            if use_tags and first is not None and _has_dynamic_args(func):
                if not self.dynamic_multi_stream:
                    remark(
                        ctx,
                        func,
                        f"@{func.sym_name.data} has dynamic-shape arguments and runs on one "
                        "stream; its stream labels are ignored (dynamic-multi-stream=true "
                        "honours them)",
                    )
                    use_tags = False
            _assign(func.body.block, default, table, use_tags)
            flatten_switches(func)
        self._declare(op, table)

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
