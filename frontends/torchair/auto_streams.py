"""`auto_streams`: npuir's `auto` schedule as a TorchAir custom FX pass.

TorchAir runs user FX passes after AOT autograd from `CompilerConfig.post_grad_custom_pre_pass`
and `.post_grad_custom_post_pass` (TorchAir's `python/torchair/configs/compiler_config.py`),
with the signature `fn(gm, example_inputs, config)`; the pass changes `gm.graph` in place
(`Ascend/torchair/docs/zh/ascend_ir/features/basic/post_grad_custom_pass.md`, whose own
example is a multi-stream pass).  `auto_streams()` returns such a pass:

1. it imports the ATen graph as npuir's backend does (`npuir.frontends.torch.import_fx_graph`;
   an op without an npu op is an `npu.opaque` costed from its tensor sizes: on TorchAir, GE
   runs the whole graph, while npuir's backend gives the pass each part of a graph it
   splits);
2. it runs `stream-partition{mode=auto ignore-tags=true}` (streams, issue order, core limits;
   within `memory_budget` when one is given) and `stream-source-form`, which says the
   result as scopes around runs of ops, in issue order;
3. it says that schedule with TorchAir's own ops and attribute keys only (`WRITTEN` lists
   each with the TorchAir file that defines it): the nodes in `auto`'s issue order;
   `air.scope_enter(["_user_stream_label", "_user_stream_priority"], ...)` /
   `air.scope_exit()` around each run on a side stream; `air.scope_enter(["_op_aicore_num",
   "_op_vectorcore_num"], ...)` (the keys `auto` limits) around a limited op; and
   `air.wait_tensor(self, dependency)` for each ordering a memory budget adds, its result
   read by the op it orders (TorchAir's GE converter makes that an Identity with a control
   edge).  The model's own stream and core-limit scopes are replaced; its waits are kept
   where `auto` issues them.  A view (no device task) goes with its node's task; a node
   whose task-running ops `auto` puts apart goes whole where its first one runs (`split`);
4. it writes that on a copy of the graph, imports and simulates it as the backend will, and
   applies it to the graph only when it is faster than the graph as written: the report's
   `applied_ns` is then what npuir's backend reports as annotated (`auto_ns` exactly when
   no node was split).

Cross-stream data dependencies need no wait: GE and npuir's `insert-events` both add the
events.  The pass keeps the graph as written, and its report says why, for dynamic shapes
(`auto` keeps them on one stream, TorchAir's rule), `set_stream_limit` in the graph, a
single-stream or `reduce-overhead` config, a memory budget no schedule fits, or a rewrite
that is not faster.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue

from npuir.analysis.mem_planners import parse_budget
from npuir.analysis.program import build_program, module_streams
from npuir.backends.npu.cost import runs_without_task
from npuir.backends.npu.hardware import known_device
from npuir.backends.npu.simulator import simulate
from npuir.context import make_context
from npuir.diagnostics import DiagnosticEngine, DiagnosticError, Kind
from npuir.dialects import coreset, npu, stream
from npuir.passmanager.pipeline import build_pipeline, run_passes
from npuir.schedule.device import device_of

from . import air_ops
from .configs.compiler_config import CompilerConfig
from .errors import TorchairError, fail
from .scope_keys import (
    AICORE_NUM,
    INNER_PARALLEL,
    STREAM_LABEL,
    STREAM_PRIORITY,
    VECTORCORE_NUM,
)

BAD_ARGUMENT = Kind(
    "torchair.bad-argument.auto-streams", "auto_streams: {name} must be {what}, got {value}"
)
"""A bad `auto_streams` argument; arguments: `name`, `what` (what it takes), `value`."""

SCOPE_ENTER = "air.scope_enter.default"
SCOPE_EXIT = "air.scope_exit.default"
WAIT_TENSOR = "air.wait_tensor.default"

WRITTEN: dict[str, str] = {
    SCOPE_ENTER: "python/torchair/scope/_scope.py (lib.define scope_enter)",
    SCOPE_EXIT: "python/torchair/scope/_scope.py (lib.define scope_exit)",
    WAIT_TENSOR: "python/torchair/scope/_wait_tensor.py (lib.define wait_tensor)",
    STREAM_LABEL: "python/torchair/scope/__init__.py (npu_stream_switch)",
    STREAM_PRIORITY: "python/torchair/scope/__init__.py (npu_stream_switch)",
    AICORE_NUM: "python/torchair/scope/__init__.py (limit_core_num)",
    VECTORCORE_NUM: "python/torchair/scope/__init__.py (limit_core_num)",
}
"""Every op name and scope key the pass writes, with the file of Ascend/torchair that defines
it (read at commit fced8842)."""

_REPLACED_KEYS = frozenset(
    {STREAM_LABEL, STREAM_PRIORITY, INNER_PARALLEL, AICORE_NUM, VECTORCORE_NUM}
)
"""The keys of the scopes the pass replaces: the model's own stream and core-limit scopes."""

_LOWER = "coreset-lower,insert-events,coreset-check,sync-verify"


@dataclass
class AutoStreamsReport:
    """What one run of the pass did to one graph."""

    changed: bool
    reason: str
    """Why the graph was left as written, or a summary of what was applied."""
    written_ns: int | None = None
    """The graph as written, simulated (None when the pass did not get that far)."""
    auto_ns: int | None = None
    """`auto`'s schedule, simulated: what the rewritten graph gives."""
    streams: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    """Per stream ("" the default one, else the `_user_stream_label` written): its nodes in
    issue order."""
    priorities: dict[str, int] = field(default_factory=dict[str, int])
    """`_user_stream_priority` of each side stream."""
    limits: dict[str, tuple[int | None, int | None]] = field(
        default_factory=dict[str, tuple[int | None, int | None]]
    )
    """Per limited node: (`_op_aicore_num`, `_op_vectorcore_num`), None where not limited."""
    waits: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    """Each `air.wait_tensor` written: (the node it orders, the node it waits for)."""
    split: list[str] = field(default_factory=list[str])
    """Nodes whose npu ops `auto` puts on different streams or apart in the issue order:
    a graph of ATen nodes cannot say that, so each goes whole where its first task runs."""
    applied_ns: int | None = None
    """The rewritten graph, imported and simulated as npuir's backend compiles it: `auto_ns`
    exactly, unless `split` names nodes."""

    @property
    def stream_count(self) -> int:
        """Streams the graph uses after the pass (the default one included)."""
        return max(len(self.streams), 1)

    def render(self) -> str:
        """The report as `npuir.torchair.reports` prints it."""

        def us(ns: int | None) -> str:
            return "-" if ns is None else f"{ns / 1000:.1f} µs"

        if not self.changed:
            return f"auto_streams: graph left as written: {self.reason}"
        exact = "auto's" if self.applied_ns == self.auto_ns else f"auto's {us(self.auto_ns)}"
        lines = [
            f"auto_streams: applied auto's schedule, {us(self.written_ns)} as written -> "
            f"{us(self.applied_ns)} ({exact}), {self.stream_count} stream(s):"
        ]
        if self.split:
            lines.append(f"  kept whole (auto splits their npu ops): {', '.join(self.split)}")
        for tag, nodes in self.streams.items():
            name = "default stream" if not tag else f'"{tag}" priority {self.priorities[tag]}'
            lines.append(f"  {name}: {', '.join(nodes)}")
        for node, (cube, vector) in self.limits.items():
            lines.append(
                f"  limit_core_num {node}: aicore {cube or '-'}, vectorcore {vector or '-'}"
            )
        for later, earlier in self.waits:
            lines.append(f"  npu_wait_tensor: {later} after {earlier}")
        return "\n".join(lines)


@dataclass
class _Item:
    """One step of the schedule as the FX graph says it."""

    kind: str
    """"enter", "exit", "node" or "wait"."""
    keys: list[str] = field(default_factory=list[str])
    values: list[str] = field(default_factory=list[str])
    node: str = ""
    """"node": the FX node; "wait": the node it orders."""
    operand: str = ""
    """"wait": the node whose value the ordered node reads through the wait."""
    dependency: str = ""
    """"wait": the node waited for."""
    free: bool = False
    """"node": the npu op runs without a device task (a view: no launch, no time)."""


class AutoStreams:
    """The pass `auto_streams()` returns: callable as `fn(gm, example_inputs, config)`.

    `reports` holds one `AutoStreamsReport` per graph it ran on, in order.
    """

    def __init__(self, memory_budget: str | int | None, max_streams: int, hw: str | None) -> None:
        self.memory_budget = None if memory_budget is None else str(memory_budget)
        self.max_streams = max_streams
        self.hw = hw
        self.reports: list[AutoStreamsReport] = []

    def __call__(
        self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any], config: Any = None
    ) -> None:
        from .auto_streams_capture import is_capture, rewrite  # capture mode: npugraph_ex's ops

        if is_capture(config):
            report = rewrite(self, gm)
        elif isinstance(config, CompilerConfig) or config is None:
            report = self.rewrite(gm, config)
        else:
            report = _refused_by(config) or self.rewrite(gm, None)
        self.reports.append(report)

    def _partition(self) -> str:
        options = [f"mode=auto ignore-tags=true max-streams={self.max_streams}"]
        if self.memory_budget is not None:
            options.append(f"mem-budget={self.memory_budget}")
        if self.hw is not None:
            options.append(f"hw={self.hw}")
        return f"stream-partition{{{' '.join(options)}}}"

    def rewrite(self, gm: torch.fx.GraphModule, config: CompilerConfig | None) -> AutoStreamsReport:
        """Apply `auto`'s schedule to `gm.graph` in place, or say why not."""
        graph = gm.graph
        foreign = _foreign_scopes(graph)
        if foreign:
            return AutoStreamsReport(False, f"the graph has scopes it does not replace ({foreign})")
        if config is not None and config.ge_config.enable_single_stream:
            return AutoStreamsReport(False, "ge_config.enable_single_stream puts it on one stream")
        if config is not None and config.mode != "max-autotune":
            return AutoStreamsReport(False, _capture_reason(config.mode))
        try:
            # Ops without an npu op are `npu.opaque`, costed from their tensor sizes: on
            # TorchAir, GE runs the whole graph.  (npuir's backend gives the pass each part
            # of a graph it splits, all of whose ops it takes.)
            module = _quiet_import(graph, config)
        except (TorchairError, DiagnosticError) as exc:
            return AutoStreamsReport(False, f"npuir cannot import it: {exc.diagnostic.message}")
        func = _only_function(module)
        if func is None or _dynamic(func):
            return AutoStreamsReport(
                False,
                "it has dynamic dims (dynamic=True or gears): auto keeps a dynamic graph on "
                "one stream (TorchAir's rule), and one graph cannot hold a schedule per gear",
            )
        options = config.pass_options().get("stream-partition", {}) if config else {}
        written_pass = "stream-partition" + (
            "{" + " ".join(f"{k}={v}" for k, v in sorted(options.items())) + "}" if options else ""
        )
        try:
            written_ns = _makespan(module.clone(), f"{written_pass},{_LOWER}", self.hw)
            scheduled = module.clone()
            run_passes(make_context(), scheduled, build_pipeline(self._partition()))
            auto_ns = _makespan(scheduled.clone(), _LOWER, self.hw)
            run_passes(make_context(), scheduled, build_pipeline("stream-source-form"))
        except DiagnosticError as exc:
            return AutoStreamsReport(False, f"auto cannot schedule it: {exc.diagnostic.message}")
        report = AutoStreamsReport(False, "", written_ns, auto_ns)
        if written_ns is not None and (auto_ns is None or auto_ns >= written_ns):
            report.reason = (
                f"auto ({_us(auto_ns)}) is not faster than the graph as written ({_us(written_ns)})"
            )
            return report
        source = _only_function(scheduled)
        assert source is not None  # the same functions as `module`
        items = _whole(_items(source.body.block, report))
        report.split = _split_nodes(items)
        items = _anchored(items)
        _record(items, report)
        # What the graph will say, checked on a copy first: imported and simulated as the
        # backend will (a node `auto` splits goes whole where its first task runs).
        trial = torch.fx.Graph()
        trial.output(trial.graph_copy(graph, {}))
        _apply(trial, items)
        try:
            applied = _quiet_import(trial, config)
            report.applied_ns = _makespan(applied, f"{written_pass},{_LOWER}", self.hw)
        except (TorchairError, DiagnosticError) as exc:
            report.reason = f"the rewritten graph does not compile: {exc.diagnostic.message}"
            return report
        if report.applied_ns is None or (
            written_ns is not None and report.applied_ns >= written_ns
        ):
            report.reason = (
                f"auto's schedule with {', '.join(report.split)} kept whole "
                f"({_us(report.applied_ns)}) is not faster than the graph as written "
                f"({_us(written_ns)})"
            )
            return report
        _apply(graph, items)
        gm.recompile()
        report.changed = True
        report.reason = "applied"
        return report


def auto_streams(
    memory_budget: str | int | None = None, max_streams: int = 8, hw: str | None = None
) -> AutoStreams:
    """A TorchAir custom FX pass applying npuir's `auto` schedule (see the module docstring).

    `memory_budget`: the most bytes the memory plan may take (`2GiB`, `64MiB`, a byte
    count, or `"hbm"`); `max_streams`: the most streams a graph may use (the default one
    included); `hw`: the device preset or TOML file `auto` costs with (default: 910b2).
    Set it as `config.post_grad_custom_pre_pass = auto_streams()`.
    """
    if memory_budget is not None:
        if isinstance(memory_budget, bool) or not isinstance(memory_budget, str | int):
            raise fail(
                BAD_ARGUMENT,
                name="memory_budget",
                what="a byte count or a size such as '2GiB'",
                value=repr(memory_budget),
            )
        try:
            parse_budget(str(memory_budget), 0, 0)
        except ValueError:
            raise fail(
                BAD_ARGUMENT,
                name="memory_budget",
                what="a byte count or a size such as '2GiB'",
                value=repr(memory_budget),
            ) from None
    if isinstance(max_streams, bool) or not isinstance(max_streams, int) or max_streams < 1:
        raise fail(BAD_ARGUMENT, name="max_streams", what="an int >= 1", value=repr(max_streams))
    if hw is not None and (not isinstance(hw, str) or known_device(hw) is None):
        raise fail(BAD_ARGUMENT, name="hw", what="a device preset or TOML file", value=repr(hw))
    air_ops.register()
    return AutoStreams(memory_budget, max_streams, hw)


# ---------------------------------------------------------------------------------------------
# Reading the graph and the schedule
# ---------------------------------------------------------------------------------------------


def _target(node: torch.fx.Node) -> str:
    return str(node.target) if node.op == "call_function" else ""


def _foreign_scopes(graph: torch.fx.Graph) -> str:
    """The keys of the scopes in `graph` the pass would not replace (`set_stream_limit`, a
    mistake the trace carried), as text; "" when there are none."""
    keys: set[str] = set()
    for node in graph.nodes:
        if _target(node) == SCOPE_ENTER:
            keys.update(k for k in node.args[0] if k not in _REPLACED_KEYS)
    return ", ".join(sorted(keys))


def _quiet_import(graph: torch.fx.Graph, config: CompilerConfig | None) -> ModuleOp:
    """`graph` imported as npuir's backend imports it, its warnings (ops costed by estimate)
    left to the backend's own import, which says them once."""
    from npuir.frontends.torch import import_fx_graph

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return import_fx_graph(graph, config=config, diagnostics=DiagnosticEngine())


def _capture_reason(mode: str) -> str:
    """Why the GE-mode pass leaves a capture-mode graph: the `air::` scope ops it writes are
    among what TorchAir warns "may not take effect" in reduce-overhead mode
    (`_check_config_support`); npugraph_ex reads its own `scope_enter`, `record`, `wait`."""
    return (
        f'mode "{mode}": the air:: scope ops this pass writes may not take effect in capture '
        "mode (TorchAir's warning); npugraph_ex reads its own scope_enter/record/wait"
    )


def _refused_by(config: Any) -> AutoStreamsReport | None:
    """TorchAir's own `CompilerConfig` (the pass run by TorchAir): its options are
    `OptionValue`s (`python/torchair/configs/_option_base.py`); the two that rule out
    in-graph streams are read, the rest of it means nothing to npuir's import."""
    mode = getattr(getattr(config, "mode", None), "value", None)
    if mode is not None and mode != "max-autotune":
        return AutoStreamsReport(False, _capture_reason(mode))
    ge_config = getattr(config, "ge_config", None)
    if bool(getattr(ge_config, "enable_single_stream", False)):
        return AutoStreamsReport(False, "ge_config.enable_single_stream puts it on one stream")
    return None


def _only_function(module: ModuleOp) -> FuncOp | None:
    funcs = [op for op in module.ops if isinstance(op, FuncOp)]
    return funcs[0] if len(funcs) == 1 else None


def _dynamic(func: FuncOp) -> bool:
    return any(
        isinstance(t, TensorType) and any(d < 0 for d in t.get_shape())
        for t in func.function_type.inputs.data
    )


def _us(ns: int | None) -> str:
    return "-" if ns is None else f"{ns / 1000:.1f} µs"


def _makespan(module: ModuleOp, pipeline: str, hw: str | None) -> int | None:
    """`module` lowered by `pipeline` and simulated (timing only); None if it deadlocks."""
    run_passes(make_context(), module, build_pipeline(pipeline))
    func = _only_function(module)
    assert func is not None
    result = simulate([build_program(func, module_streams(module))], device_of(module, hw))
    return None if result.deadlock is not None else result.makespan_ns


def _name(op: Operation) -> str | None:
    attr = op.attributes.get(npu.OP_NAME)
    return attr.data if isinstance(attr, StringAttr) else None


def _producer(value: SSAValue) -> str:
    """The FX node that computes `value`: a scope's result is its yielded value's."""
    while isinstance(value, OpResult) and isinstance(value.op, stream.SwitchOp | coreset.LimitOp):
        terminator = value.op.body.block.last_op
        assert terminator is not None
        value = terminator.operands[value.index]
    if isinstance(value, BlockArgument):
        return value.name_hint or ""
    assert isinstance(value, OpResult)
    return _name(value.op) or ""


def _items(block: Block, report: AutoStreamsReport) -> list[_Item]:
    """The schedule in `block` (source form) as FX steps, recording it in `report`."""
    items: list[_Item] = []
    for op in block.ops:
        if isinstance(op, stream.SwitchOp):
            inner, priority = op.tag.data, op.priority.value.data
            report.priorities[inner] = priority
            items.append(_Item("enter", [STREAM_LABEL, STREAM_PRIORITY], [inner, str(priority)]))
            items.extend(_items(op.body.block, report))
            items.append(_Item("exit"))
        elif isinstance(op, coreset.LimitOp):
            keys, values = [], []
            counts: list[int | None] = []
            for key, count in ((AICORE_NUM, op.cube), (VECTORCORE_NUM, op.vector)):
                number = count.value.data if isinstance(count, IntegerAttr) else None
                counts.append(number)
                if number is not None:
                    keys.append(key)
                    values.append(str(number))
            inner_items = _items(op.body.block, report)
            for item in inner_items:
                if item.kind == "node":
                    report.limits[item.node] = (counts[0], counts[1])
            items.extend([_Item("enter", keys, values), *inner_items, _Item("exit")])
        elif isinstance(op, stream.WaitTensorOp) and _name(op) is None:
            # An ordering `auto` added (a memory budget): spelled as a wait on the operand of
            # the op it orders.
            users = [use.operation for use in op.result.uses]
            later = _name(users[0]) if users else None
            if later:
                dependency = _producer(op.dep)
                items.append(
                    _Item("wait", node=later, operand=_producer(op.tensor), dependency=dependency)
                )
                report.waits.append((later, dependency))
        elif isinstance(op, stream.YieldOp | coreset.YieldOp | ReturnOp):
            continue
        elif (name := _name(op)) is not None:
            free = isinstance(op, npu.NpuOp) and runs_without_task(op)
            items.append(_Item("node", node=name, free=free))
    return items


def _whole(items: list[_Item]) -> list[_Item]:
    """`items` with each ATen node said once where its npu ops run tasks: an op without a
    device task (the reshapes around a `linear`'s matmul) costs no launch and no time, so
    the node goes where its task-running ops are.  A node of such ops only keeps them."""
    working = {i.node for i in items if i.kind == "node" and not i.free}
    return [i for i in items if i.kind != "node" or not i.free or i.node not in working]


def _record(items: list[_Item], report: AutoStreamsReport) -> None:
    """Each node's stream in `report`, in issue order."""
    tags: list[str] = []
    for item in items:
        if item.kind == "enter" and STREAM_LABEL in item.keys:
            tags.append(item.values[item.keys.index(STREAM_LABEL)])
        elif item.kind == "enter":
            tags.append(tags[-1] if tags else "")
        elif item.kind == "exit":
            tags.pop()
        elif item.kind == "node":
            nodes = report.streams.setdefault(tags[-1] if tags else "", [])
            if not nodes or nodes[-1] != item.node:
                nodes.append(item.node)


def _anchored(items: list[_Item]) -> list[_Item]:
    """Each node at its first step only, and no scope left empty by that."""
    seen: set[str] = set()
    kept: list[_Item] = []
    for item in items:
        if item.kind == "node":
            if item.node in seen:
                continue
            seen.add(item.node)
        if item.kind == "exit" and kept and kept[-1].kind == "enter":
            kept.pop()
            continue
        kept.append(item)
    return kept


def _split_nodes(items: list[_Item]) -> list[str]:
    """The FX nodes whose npu ops are not one run of consecutive steps."""
    last: dict[str, int] = {}
    split: set[str] = set()
    for position, item in enumerate(items):
        if item.kind != "node":
            continue
        if item.node in last and last[item.node] != position - 1:
            split.add(item.node)
        last[item.node] = position
    return sorted(split)


# ---------------------------------------------------------------------------------------------
# Writing the graph
# ---------------------------------------------------------------------------------------------


def _apply(graph: torch.fx.Graph, items: list[_Item]) -> None:
    """Reorder `graph` as `items` say and write their scopes and waits."""
    by_name = {node.name: node for node in graph.nodes}
    old_scopes = [n for n in graph.nodes if _target(n) in (SCOPE_ENTER, SCOPE_EXIT)]
    output = graph.output_node()
    order: list[torch.fx.Node] = []
    placed: set[torch.fx.Node] = {n for n in graph.nodes if n.op == "placeholder"}
    placed.update(old_scopes)

    def place(node: torch.fx.Node) -> None:
        if node in placed or node is output:
            return
        placed.add(node)
        for source in node.all_input_nodes:
            place(source)
        order.append(node)

    with graph.inserting_before(output):
        for item in items:
            if item.kind in ("enter", "exit"):
                marker = (
                    graph.call_function(
                        torch.ops.air.scope_enter.default, (list(item.keys), list(item.values))
                    )
                    if item.kind == "enter"
                    else graph.call_function(torch.ops.air.scope_exit.default, ())
                )
                placed.add(marker)
                order.append(marker)
            elif item.kind == "wait":
                later, operand = by_name[item.node], by_name[item.operand]
                dependency = by_name[item.dependency]
                place(operand)
                place(dependency)
                wait = graph.call_function(torch.ops.air.wait_tensor.default, (operand, dependency))
                wait.meta = dict(operand.meta)
                later.replace_input_with(operand, wait)
                placed.add(wait)
                order.append(wait)
            else:
                place(by_name[item.node])
    for node in list(graph.nodes):
        place(node)  # what the schedule does not name: before its first user, or at the end
    for node in order:
        output.prepend(node)
    for node in old_scopes:
        graph.erase_node(node)
    graph.lint()


__all__ = ["WRITTEN", "AutoStreams", "AutoStreamsReport", "auto_streams"]
