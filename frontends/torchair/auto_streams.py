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
   where `auto` issues them.  A view (no device task) goes with its node's task.  A node
   whose npu ops `auto` puts apart (a biased `linear`'s matmul and add, a `chunk`'s slices,
   a `mean`'s sum and division, an in-place `copy_` into a slice's kept parts and their
   `cat`), or issues before a tensor it reads for its shape only (an `empty_like`), is first
   rewritten as finer ATen nodes, all functional, that npuir imports to the same npu ops
   (`finer`), and `auto` runs again on that graph; a node with no such rewrite (a write into
   a tensor an earlier view of it reads) goes whole at its first step after the nodes it
   reads (`split`);
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

import math
import operator
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue

from npuir.analysis.mem_planners import argument_bytes, parse_budget
from npuir.analysis.program import build_program, module_streams
from npuir.backends.npu.cost import runs_without_task
from npuir.backends.npu.hardware import known_device
from npuir.backends.npu.memory import program_memory
from npuir.backends.npu.simulator import simulate
from npuir.context import make_context
from npuir.diagnostics import DiagnosticEngine, DiagnosticError, Kind
from npuir.dialects import coreset, gear, npu, stream
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
    finer: list[str] = field(default_factory=list[str])
    """Nodes the pass rewrote as finer ATen nodes (`linear` with a bias as its matmul and its
    add, a `chunk` as slices, ...) so that the graph can say where `auto` runs each part."""
    refined_ns: int | None = None
    """`auto`'s makespan on the graph with the finer nodes, when it differs from `auto_ns`."""
    gears: list[str] = field(default_factory=list[str])
    """A geared graph's gears (the shapes that differ), in order; the lists below are per gear."""
    gear_written_ns: list[int | None] = field(default_factory=list[int | None])
    gear_auto_ns: list[int | None] = field(default_factory=list[int | None])
    """Each gear's own `auto` schedule, simulated in that gear."""
    gear_applied_ns: list[int | None] = field(default_factory=list[int | None])
    """Each gear under the one schedule the graph carries (`chosen`'s)."""
    chosen: str = ""
    """The gear whose `auto` schedule the graph carries: the least sum over the gears."""

    def _render_gears(self, us: Any) -> str:
        lines = [
            f"auto_streams: one graph for {len(self.gears)} gears carries one schedule: "
            f"{self.chosen}'s auto schedule, the least sum of the gears' makespans:"
        ]
        for label, written, own, applied in zip(
            self.gears, self.gear_written_ns, self.gear_auto_ns, self.gear_applied_ns
        ):
            more = "-" if applied is None or own is None else us(applied - own)
            lines.append(
                f"  {label}: {us(written)} as written -> {us(applied)}; its own auto "
                f"{us(own)} ({more} more)"
            )
        for tag, nodes in self.streams.items():
            name = "default stream" if not tag else f'"{tag}"'
            lines.append(f"  {name}: {', '.join(nodes)}")
        return "\n".join(lines)

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
        if self.gears:
            return self._render_gears(us)
        exact = "auto's" if self.applied_ns == self.auto_ns else f"auto's {us(self.auto_ns)}"
        lines = [
            f"auto_streams: applied auto's schedule, {us(self.written_ns)} as written -> "
            f"{us(self.applied_ns)} ({exact}), {self.stream_count} stream(s):"
        ]
        if self.finer:
            lines.append(f"  as finer nodes (auto puts their parts apart): {', '.join(self.finer)}")
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
            report = self.rewrite(gm, config, example_inputs)
        else:
            report = _refused_by(config) or self.rewrite(gm, None, example_inputs)
        self.reports.append(report)

    def _partition(self) -> str:
        options = [f"mode=auto ignore-tags=true max-streams={self.max_streams}"]
        if self.memory_budget is not None:
            options.append(f"mem-budget={self.memory_budget}")
        if self.hw is not None:
            options.append(f"hw={self.hw}")
        return f"stream-partition{{{' '.join(options)}}}"

    def rewrite(
        self,
        gm: torch.fx.GraphModule,
        config: CompilerConfig | None,
        example_inputs: Sequence[Any] = (),
    ) -> AutoStreamsReport:
        """Apply `auto`'s schedule to `gm.graph` in place, or say why not (`example_inputs`:
        the graph's inputs, whose `set_dim_gears` marks make it a geared graph)."""
        graph = gm.graph
        foreign = _foreign_scopes(graph)
        if foreign:
            return AutoStreamsReport(False, f"the graph has scopes it does not replace ({foreign})")
        if config is not None and config.ge_config.enable_single_stream:
            return AutoStreamsReport(False, "ge_config.enable_single_stream puts it on one stream")
        if config is not None and config.mode != "max-autotune":
            return AutoStreamsReport(False, _capture_reason(config.mode))
        work = _copy(graph)
        try:
            # Ops without an npu op are `npu.opaque`, costed from their tensor sizes: on
            # TorchAir, GE runs the whole graph.  (npuir's backend gives the pass each part
            # of a graph it splits, all of whose ops it takes.)
            module = _quiet_import(work, config)
        except (TorchairError, DiagnosticError) as exc:
            return AutoStreamsReport(False, f"npuir cannot import it: {exc.diagnostic.message}")
        func = _only_function(module)
        gears = _gears(graph, example_inputs)
        if func is not None and _dynamic(func) and gears:
            try:
                module = _quiet_import(work, config, gears)
                return self._geared(gm, work, module, config, gears)
            except (TorchairError, DiagnosticError) as exc:
                return AutoStreamsReport(False, f"npuir cannot schedule its gears: {exc}")
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
        report = AutoStreamsReport(False, "")
        try:
            report.written_ns = _makespan(module.clone(), f"{written_pass},{_LOWER}", self.hw)
            report.auto_ns, source = self._auto(module)
        except DiagnosticError as exc:
            return AutoStreamsReport(False, f"auto cannot schedule it: {exc.diagnostic.message}")
        written_ns, auto_ns = report.written_ns, report.auto_ns
        if written_ns is not None and (auto_ns is None or auto_ns >= written_ns):
            report.reason = (
                f"auto ({_us(auto_ns)}) is not faster than the graph as written ({_us(written_ns)})"
            )
            return report
        items = _items(source.body.block, AutoStreamsReport(False, ""))
        # Nodes the graph cannot place where `auto` runs their ops (split, or issued before a
        # tensor they read only for its shape) are rewritten as finer nodes, which import to
        # the same npu ops, and `auto` runs again on what the graph then says.
        for _ in range(_FINER_ROUNDS):
            names = sorted(set(_split_nodes(items)) | _early(items, _reads(work, items)))
            finer = _refine(work, names)
            if not finer:
                break
            report.finer += finer
            try:
                module = _quiet_import(work, config)
                refined, source = self._auto(module)
            except (TorchairError, DiagnosticError) as exc:
                return AutoStreamsReport(
                    False, f"its finer nodes do not compile: {exc.diagnostic.message}"
                )
            if refined != auto_ns:
                report.refined_ns = refined
            items = _items(source.body.block, AutoStreamsReport(False, ""))
        items = _whole(_items(source.body.block, report))
        report.split = _split_nodes(items)
        items = _anchored(items, _reads(work, items))
        _record(items, report)
        # What the graph will say, checked on a copy first: imported and simulated as the
        # backend will (a node `auto` splits goes whole where its first task runs).
        trial = _copy(work)
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
        # The same finer nodes in the graph itself (the same rewrites in the same order give
        # the same names), then the schedule.
        check = _copy(graph)
        _refine(check, report.finer)
        named = {i.node for i in items if i.node} - {n.name for n in check.nodes}
        if named:  # never write half a schedule into the user's graph
            report.reason = f"its finer nodes came out named otherwise ({', '.join(named)})"
            return report
        _refine(graph, report.finer)
        _apply(graph, items)
        gm.recompile()
        report.changed = True
        report.reason = "applied"
        return report

    def _geared(
        self,
        gm: torch.fx.GraphModule,
        work: torch.fx.Graph,
        module: ModuleOp,
        config: CompilerConfig | None,
        gears: dict[int, dict[int, list[int]]],
    ) -> AutoStreamsReport:
        """A geared graph: TorchAir compiles one FX graph for all its gears, so it carries one
        schedule.  Each gear's `auto` schedule is a candidate; each, written into the graph,
        is costed in every gear, and the one with the least sum of the gears' makespans
        (every gear weighted alike, as `npuir-advise` does by default) among those whose
        memory plan fits `memory_budget` in every gear is applied (a schedule that fits one
        gear's budget may not fit a larger gear's).  The
        report gives each gear's makespan under it against that gear's own `auto`."""
        options = config.pass_options().get("stream-partition", {}) if config else {}
        written_pass = "stream-partition" + (
            "{" + " ".join(f"{k}={v}" for k, v in sorted(options.items())) + "}" if options else ""
        )
        lowered = f"{written_pass},{_LOWER}"
        versions = _versions(module)
        report = AutoStreamsReport(False, "")
        report.gears = [label for label, _ in versions]
        written = [_makespan(v.clone(), lowered, self.hw) for _, v in versions]
        candidates: list[tuple[list[_Item], AutoStreamsReport]] = []
        for _, version in versions:
            own, source = self._auto(version)
            report.gear_auto_ns.append(own)
            said = AutoStreamsReport(False, "")
            items = _whole(_items(source.body.block, said))
            said.split = _split_nodes(items)
            items = _anchored(items, _reads(work, items))
            _record(items, said)
            candidates.append((items, said))
        best: tuple[int, int, list[int | None]] | None = None
        for index, (items, _) in enumerate(candidates):
            trial = _copy(work)
            _apply(trial, items)
            rewritten = _quiet_import(trial, config, gears)
            spans = []
            fits = True
            for _, v in _versions(rewritten):
                # A gear's schedule may need more memory in a larger gear: within the budget
                # in every gear, or not a candidate.
                budget = self._budget(v)
                spans.append(_makespan(v, lowered, self.hw))
                fits = fits and (budget is None or _peak(v) <= budget)
            if any(n is None for n in spans) or not fits:
                continue
            total = sum(n or 0 for n in spans)
            if best is None or total < best[0]:
                best = (total, index, spans)
        report.gear_written_ns = written
        if (
            best is None
            or any(n is None for n in written)
            or best[0] >= sum(n or 0 for n in written)
        ):
            report.reason = (
                "no gear's auto schedule, shared by every gear, is faster than the graph as "
                "written over the gears"
            )
            return report
        total, index, spans = best
        report.chosen = report.gears[index]
        report.gear_applied_ns = spans
        items, said = candidates[index]
        report.streams, report.priorities = said.streams, said.priorities
        report.limits, report.waits, report.split = said.limits, said.waits, said.split
        _apply(gm.graph, items)
        gm.recompile()
        report.changed = True
        report.reason = "applied"
        return report

    def _budget(self, module: ModuleOp) -> int | None:
        """`memory_budget` in bytes for `module`'s function (`hbm`: the device's HBM less its
        arguments, as `stream-partition` reads it)."""
        func = _only_function(module)
        if self.memory_budget is None or func is None:
            return None
        hbm = device_of(module, self.hw).hbm_bytes
        return parse_budget(self.memory_budget, hbm, argument_bytes(func))

    def _auto(self, module: ModuleOp) -> tuple[int | None, FuncOp]:
        """`auto`'s makespan on `module` and its schedule in source form."""
        scheduled = module.clone()
        run_passes(make_context(), scheduled, build_pipeline(self._partition()))
        auto_ns = _makespan(scheduled.clone(), _LOWER, self.hw)
        run_passes(make_context(), scheduled, build_pipeline("stream-source-form"))
        source = _only_function(scheduled)
        assert source is not None  # the same functions as `module`
        return auto_ns, source


_FINER_ROUNDS = 3
"""Rounds of finer nodes (`_finer`) the pass tries before it keeps what is left whole."""


def _refine(graph: torch.fx.Graph, names: list[str]) -> list[str]:
    """`_finer` on the nodes `names`, in order; the names it rewrote.  A name no longer in
    the graph is passed over: an in-place write goes finer with every other write into its
    tensor (`_writes`), so a later name of the same group is gone by then, and the same
    names in the same order rewrite another copy of the graph alike."""
    done: list[str] = []
    for name in names:
        node = next((n for n in graph.nodes if n.name == name), None)
        if node is not None and _finer(graph, node):
            done.append(name)
    return done


def _copy(graph: torch.fx.Graph) -> torch.fx.Graph:
    out = torch.fx.Graph()
    out.output(out.graph_copy(graph, {}))
    return out


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


def _quiet_import(
    graph: torch.fx.Graph,
    config: CompilerConfig | None,
    gears: dict[int, dict[int, list[int]]] | None = None,
) -> ModuleOp:
    """`graph` imported as npuir's backend imports it (with `gears` on its tensor inputs), its
    warnings (ops costed by estimate) left to the backend's own import, which says them once."""
    from npuir.frontends.torch import import_fx_graph

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return import_fx_graph(
            graph, config=config, gears=gears or None, diagnostics=DiagnosticEngine()
        )


def _gears(graph: torch.fx.Graph, example_inputs: Sequence[Any]) -> dict[int, dict[int, list[int]]]:
    """The `set_dim_gears` marks of the graph's inputs, keyed as `import_fx_graph` takes them
    (by tensor placeholder)."""
    from .inference import gears_of

    out: dict[int, dict[int, list[int]]] = {}
    tensors = 0
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    for node, value in zip(placeholders, example_inputs):
        if not isinstance(node.meta.get("val"), torch.Tensor):
            continue
        found = gears_of(value) if isinstance(value, torch.Tensor) else None
        if found:
            out[tensors] = found
        tensors += 1
    return out


def _versions(module: ModuleOp) -> list[tuple[str, ModuleOp]]:
    """Each gear of `module` as a module of its own static version (`gear-multiversion`'s),
    labelled by the shapes of the inputs that differ between gears."""
    versions = module.clone()
    run_passes(make_context(), versions, build_pipeline("gear-multiversion"))
    funcs = [
        op
        for op in versions.ops
        if isinstance(op, FuncOp)
        and op.body.blocks
        and not any(isinstance(o, gear.DispatchOp) for o in op.body.block.ops)
    ]
    shapes = [
        ["x".join(str(d) for d in t.get_shape()) if isinstance(t, TensorType) else "" for t in ins]
        for ins in (f.function_type.inputs.data for f in funcs)
    ]
    differ = [i for i in range(len(shapes[0]) if shapes else 0) if len({s[i] for s in shapes}) > 1]
    out: list[tuple[str, ModuleOp]] = []
    for func, shape in zip(funcs, shapes):
        copy = ModuleOp([func.clone()])
        copy.attributes.update(dict(module.attributes))
        out.append(("gear " + ", ".join(f"arg{i}={shape[i]}" for i in differ), copy))
    return out


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


def _peak(module: ModuleOp) -> int:
    """The planned peak of `module`, lowered (`_makespan` lowers it), as `npuir-run` reports
    it."""
    func = _only_function(module)
    assert func is not None
    return program_memory(build_program(func, module_streams(module))).peak


def _name(op: Operation) -> str | None:
    attr = op.attributes.get(npu.OP_NAME)
    return attr.data if isinstance(attr, StringAttr) else None


def _producer(value: SSAValue) -> str:
    """The FX node that computes `value`: a scope's result is its yielded value's."""
    while isinstance(value, OpResult) and isinstance(
        value.op, stream.SwitchOp | coreset.LimitOp | stream.WaitTensorOp
    ):
        if isinstance(value.op, stream.WaitTensorOp):  # an ordering: its tensor's value
            value = value.op.tensor
            continue
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
            # the op it orders (through the later waits of a chain on the same operand).
            users = [use.operation for use in op.result.uses]
            while len(users) == 1 and isinstance(users[0], stream.WaitTensorOp):
                users = [use.operation for use in users[0].result.uses]
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


def _anchored(items: list[_Item], inputs: dict[str, set[str]]) -> list[_Item]:
    """Each node at one step only, and no scope left empty by that: its first step at which
    every node it reads (`inputs`: an FX node's inputs, by name) is in place, else its last.

    A node `auto` splits (`_split_nodes`) may run its first task before all of its inputs
    exist (the `arange` of a `histc`); put there whole, it would pull the nodes it reads,
    and theirs, into that step's scope and away from the streams `auto` gave them."""
    last = {item.node: i for i, item in enumerate(items) if item.kind == "node"}
    chosen: dict[str, int] = {}
    placed: set[str] = set()
    for position, item in enumerate(items):
        if item.kind != "node" or item.node in chosen:
            continue
        pending = {n for n in inputs.get(item.node, set()) if n in last and n not in placed}
        if not pending or position == last[item.node]:
            chosen[item.node] = position
            placed.add(item.node)
    seen: set[str] = set()
    kept: list[_Item] = []
    for position, item in enumerate(items):
        if item.kind == "node":
            if item.node in seen or chosen.get(item.node) != position:
                continue
            seen.add(item.node)
        if item.kind == "exit" and kept and kept[-1].kind == "enter":
            kept.pop()
            continue
        kept.append(item)
    return kept


def _reads(graph: torch.fx.Graph, items: list[_Item]) -> dict[str, set[str]]:
    """Per FX node, the scheduled nodes (those `items` names) it reads, through the nodes
    that are not scheduled (a `getitem`, a placeholder)."""
    scheduled = {item.node for item in items if item.kind == "node"}
    memo: dict[torch.fx.Node, set[str]] = {}

    def reads(node: torch.fx.Node) -> set[str]:
        if node not in memo:
            out: set[str] = set()
            for source in node.all_input_nodes:
                out |= {source.name} if source.name in scheduled else reads(source)
            memo[node] = out
        return memo[node]

    return {node.name: reads(node) for node in graph.nodes if node.name in scheduled}


def _early(items: list[_Item], inputs: dict[str, set[str]]) -> set[str]:
    """The nodes `auto` issues (their first task) before a node they read."""
    first: dict[str, int] = {}
    for position, item in enumerate(items):
        if item.kind == "node":
            first.setdefault(item.node, position)
    return {
        name
        for name, position in first.items()
        if any(first.get(source, -1) > position for source in inputs.get(name, ()))
    }


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
# Finer nodes: what a graph of ATen nodes needs to say `auto`'s schedule
# ---------------------------------------------------------------------------------------------

_FACTORIES: dict[str, Any] = {
    "aten.empty_like.default": 0,
    "aten.zeros_like.default": 0,
    "aten.ones_like.default": 1,
    "aten.new_empty.default": 0,
    "aten.new_zeros.default": 0,
    "aten.new_ones.default": 1,
    "aten.full_like.default": None,  # the value is the node's own
    "aten.new_full.default": None,
}
"""Nodes that read a tensor for its shape only (npuir imports each as an `npu.fill` of the
result's shape, read from nothing): the value each fills with (None: its last argument)."""

_SPLITS = ("aten.chunk.default", "aten.split.Tensor", "aten.split_with_sizes.default")


def _val(node: Any) -> Any:
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else node


def _fake(node: torch.fx.Node, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """`target` run on the traced values of `args` in the fake mode `node`'s value was traced
    in: the new node's `meta["val"]`."""
    mode = getattr(node.meta.get("val"), "fake_mode", None)
    values = torch.fx.node.map_arg(args, _val)
    if mode is None:
        return None
    with mode:
        return target(*values, **kwargs)


def _new(
    graph: torch.fx.Graph,
    like: torch.fx.Node,
    target: Any,
    args: tuple[Any, ...],
    name: str,
    kwargs: dict[str, Any] | None = None,
    val: Any = None,
) -> torch.fx.Node:
    """A node computing `target(*args)` just before `like`, with `like`'s source location and
    module stack (so the import locates its ops at the user's line, as it did `like`'s)."""
    with graph.inserting_before(like):
        node = graph.create_node("call_function", target, args, kwargs or {}, name=name)
    node.meta = {k: v for k, v in like.meta.items() if k != "val"}
    node.meta["val"] = val if val is not None else _fake(like, target, args, kwargs or {})
    return node


def _finer(graph: torch.fx.Graph, node: torch.fx.Node) -> bool:
    """Rewrite `node` as ATen nodes that npuir imports to the same npu ops, one node per run
    of them `auto` may put apart; False (the graph unchanged) when there is no such rewrite.

    - `linear(x, w, b)`: `linear(x, w)` and `add(.., b)` (the matmul, then the bias);
    - `mean(x, dims)`: `sum(x, dims)` and `div(.., count)`;
    - `chunk` / `split` / `split_with_sizes`: one `slice` per piece its `getitem`s read;
    - `empty_like(x)`, `new_ones(x, size)`, ...: `full(shape, value)`, which reads no tensor,
      so that `auto` may issue it before `x` exists;
    - an in-place write into a fresh tensor (`copy_` into a `slice` of it, `scatter_`): every
      write into that tensor in functional form (`_writes`)."""
    aten = torch.ops.aten
    target = _target(node)
    val: Any = node.meta.get("val")
    args: Any = node.args
    kwargs = node.kwargs
    if target == "aten.linear.default" and not kwargs and _is_tensor(val):
        x, shape = args[0], getattr(_val(args[0]), "shape", None)
        bias = args[2] if len(args) > 2 else None
        if shape is None or not all(isinstance(d, int) for d in shape):
            return False
        if len(shape) == 2 and bias is None:
            return False
        if len(shape) > 2:
            # npuir folds the leading dims into the matmul's rows by a reshape, and back
            rows = [math.prod(int(d) for d in shape[:-1]), int(shape[-1])]
            x = _new(graph, node, aten.view.default, (x, rows), f"{node.name}_rows")
        total = _new(graph, node, aten.linear.default, (x, args[1]), f"{node.name}_mm")
        if len(shape) > 2:
            total = _new(
                graph, node, aten.view.default, (total, list(val.shape)), f"{node.name}_view"
            )
        if bias is not None:
            total = _new(graph, node, aten.add.Tensor, (total, bias), f"{node.name}_bias", val=val)
    elif target == "aten.mean.dim" and not kwargs and _is_tensor(val):
        x = args[0]
        shape = getattr(_val(x), "shape", None)
        dims = list(args[1]) if len(args) > 1 and args[1] else []
        if shape is None or not all(isinstance(d, int) for d in shape):
            return False
        keep = bool(args[2]) if len(args) > 2 else False
        count = 1
        for d in dims or range(len(shape)):
            count *= int(shape[d])
        summed = _new(
            graph, node, aten.sum.dim_IntList, (x, dims or None, keep), f"{node.name}_sum"
        )
        total = _new(graph, node, aten.div.Tensor, (summed, count), f"{node.name}_div", val=val)
    elif target in _SPLITS and not kwargs:
        return _sliced(graph, node)
    elif target in _WRITES and not kwargs:
        return _writes(graph, node)
    elif target == "aten.histc.default" and not kwargs:
        made = _histc(graph, node)
        if made is None:
            return False
        total = made
    elif target in _FACTORIES and _is_tensor(val) and all(isinstance(d, int) for d in val.shape):
        value = _FACTORIES[target]
        if value is None:
            value = args[-1] if not kwargs else kwargs.get("fill_value")
            if not isinstance(value, bool | int | float):
                return False
        total = _new(
            graph,
            node,
            aten.full.default,
            (list(val.shape), value),
            f"{node.name}_full",
            {"dtype": val.dtype, "device": val.device},
            val=val,
        )
    else:
        return False
    node.replace_all_uses_with(total)
    graph.erase_node(node)
    return True


def _histc(graph: torch.fx.Graph, node: torch.fx.Node) -> torch.fx.Node | None:
    """`histc(x, bins, lo, hi)` with its range given, in the ATen ops npuir builds it from
    (`npuir.frontends.aten_models`), one node per npu op: each element's bin `(x - lo) *
    bins / (hi - lo)`, floored and clamped to `[0, bins - 1]`, compared with every bin's
    number and counted where `lo <= x <= hi`; None when the range is the data's or a size is
    not static."""
    aten = torch.ops.aten
    args: Any = node.args
    x = args[0]
    val: Any = node.meta.get("val")
    shape = getattr(_val(x), "shape", None)
    bins = int(args[1]) if len(args) > 1 else 100
    lo = float(args[2]) if len(args) > 2 else 0.0
    hi = float(args[3]) if len(args) > 3 else 0.0
    if (
        lo == hi
        or shape is None
        or not _is_tensor(val)
        or not val.dtype.is_floating_point
        or not all(isinstance(d, int) for d in shape)
    ):
        return None
    n = math.prod(int(d) for d in shape)
    name = node.name

    def new(target: Any, *operands: Any, **kwargs: Any) -> torch.fx.Node:
        return _new(graph, node, target, operands, f"{name}_{len(made)}", kwargs)

    made: list[torch.fx.Node] = []

    def add(target: Any, *operands: Any, **kwargs: Any) -> torch.fx.Node:
        made.append(new(target, *operands, **kwargs))
        return made[-1]

    flat = add(aten.view.default, x, [n])
    scaled = add(aten.mul.Tensor, add(aten.sub.Tensor, flat, lo), bins)
    # `hi - lo` as npuir computes it: a subtraction of two constants (torch wraps them)
    span = add(aten.sub.Tensor, hi, lo)
    scaled = add(aten.div.Tensor, scaled, span)
    top = add(aten.clamp.default, add(aten.floor.default, scaled), None, bins - 1)
    which = add(aten.clamp.default, top, 0, None)
    above = add(aten._to_copy.default, add(aten.ge.Scalar, flat, lo), dtype=val.dtype)
    below = add(aten._to_copy.default, add(aten.le.Scalar, flat, hi), dtype=val.dtype)
    inside = add(aten.mul.Tensor, above, below)
    numbers = add(aten.arange.default, bins, dtype=val.dtype, device=val.device)
    same = add(
        aten.eq.Tensor,
        add(aten.view.default, which, [1, n]),
        add(aten.view.default, numbers, [bins, 1]),
    )
    hits = add(
        aten.mul.Tensor,
        add(aten._to_copy.default, same, dtype=val.dtype),
        add(aten.view.default, inside, [1, n]),
    )
    return add(aten.sum.dim_IntList, hits, [1])


_WRITES = ("aten.copy_.default", "aten.scatter_.value", "aten.scatter_.src")
"""The in-place writes `_writes` says in functional form: a `copy_` into a `slice` of a
tensor (DeepSeek-V3's attention fills the two parts of a `new_empty` key so) and a
`scatter_` into the tensor itself (its MoE routing marks the chosen groups in a
`zeros_like`)."""


def _schema(node: torch.fx.Node) -> Any:
    return getattr(node.target, "_schema", None) if node.op == "call_function" else None


def _aliases(node: torch.fx.Node) -> bool:
    """Whether `node`'s result may be a view of an operand (unknown: yes)."""
    schema = _schema(node)
    return schema is None or any(r.alias_info is not None for r in schema.returns)


def _mutates(node: torch.fx.Node) -> bool:
    """Whether `node` writes into an operand (unknown: yes)."""
    schema = _schema(node)
    if schema is None:
        return node.op == "call_function" and node.target is not operator.getitem
    return any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments)


def _slice_bounds(view: torch.fx.Node) -> tuple[int, int, int] | None:
    """(dim, start, end) of a unit-step `slice` node of static sizes, as the importer
    reads a write through it (`npuir.frontends.aten_models.Forms.slice`); else None."""
    args: Any = view.args
    shape = getattr(_val(args[0]), "shape", None)
    if _target(view) != "aten.slice.Tensor" or view.kwargs or shape is None:
        return None
    dim, start, end = (list(args[1:4]) + [0, None, None][len(args) - 1 :])[:3]
    step = args[4] if len(args) > 4 else 1
    if step != 1 or not all(isinstance(v, int) for v in (dim, start or 0, end or 0)):
        return None
    dim %= len(shape)
    size = shape[dim]
    if not isinstance(size, int):
        return None
    lo = 0 if start is None else (start + size if start < 0 else min(start, size))
    hi = size if end is None or end >= size else (end + size if end < 0 else end)
    return dim, lo, hi


def _writes(graph: torch.fx.Graph, node: torch.fx.Node) -> bool:
    """`node`, an in-place write (`_WRITES`) into a tensor `base` a node computes afresh
    (not a view, not an input), with every other write into `base`, in functional form, as
    npuir imports them (`aten_models.Forms.inplace`: the written tensor rebound to the new
    value), one node per npu op `auto` may put apart:

    - `copy_(slice(base, d, a, b), src)`: `src` (cast and expanded to the slice, if it is
      not already), `slice(base, d, 0, a)` and `slice(base, d, b, n)` (the parts kept),
      `cat` of the three along `d`: the new `base`;
    - `scatter_(base, d, index, value)`: `full(index's shape, value)` and
      `scatter(base, d, index, full)` (a `src` tensor: the `scatter` alone);

    each node after a write that reads `base` reads the new value instead.  False (the graph
    unchanged) unless every use of `base` is one of those writes, a `slice` only written
    through, or a reader that is not a view of it before its last write (torch's views
    would see a later write; a value does not)."""
    aten = torch.ops.aten
    write_args: Any = node.args
    target = write_args[0]
    base = target.args[0] if _target(node) == "aten.copy_.default" else target
    if not isinstance(base, torch.fx.Node) or base.op != "call_function" or _aliases(base):
        return False
    position = {n: i for i, n in enumerate(graph.nodes)}
    writes: list[torch.fx.Node] = []
    others: list[torch.fx.Node] = []
    for user in base.users:
        if _target(user) == "aten.slice.Tensor" and user.args[0] is base:
            users = list(user.users)
            if (
                len(users) != 1
                or _target(users[0]) != "aten.copy_.default"
                or users[0].args[0] is not user
                or users[0].args[1] is user
                or _slice_bounds(user) is None
            ):
                return False
            writes.append(users[0])
        elif _target(user) in _WRITES[1:] and user.args[0] is base and not user.kwargs:
            writes.append(user)
        else:
            others.append(user)
    writes.sort(key=position.__getitem__)
    last = position[writes[-1]]
    if any(_mutates(o) or (_aliases(o) and position[o] < last) for o in others):
        return False
    for write in writes[:-1]:  # a write's result is a view of `base`: read only after all
        if write.users:
            return False
    if any(_mutates(u) for u in writes[-1].users):
        return False
    latest = base
    for write in writes:
        args: Any = write.args
        val = _val(base)
        name = write.name
        if _target(write) == "aten.copy_.default":
            view, value = args[0], args[1]
            bounds = _slice_bounds(view)
            assert bounds is not None
            dim, lo, hi = bounds
            want = _val(view)
            have = _val(value)
            if not _is_tensor(have) or not _is_tensor(want):
                return False
            if have.dtype != want.dtype:
                value = _new(
                    graph,
                    write,
                    aten._to_copy.default,
                    (value,),
                    f"{name}_cast",
                    {"dtype": want.dtype},
                )
            if tuple(have.shape) != tuple(want.shape):
                value = _new(
                    graph, write, aten.expand.default, (value, list(want.shape)), f"{name}_expand"
                )
            size = int(val.shape[dim])
            parts = [
                *(
                    [_new(graph, write, aten.slice.Tensor, (latest, dim, 0, lo), f"{name}_head")]
                    if lo > 0
                    else []
                ),
                value,
                *(
                    [_new(graph, write, aten.slice.Tensor, (latest, dim, hi, size), f"{name}_tail")]
                    if hi < size
                    else []
                ),
            ]
            new = (
                parts[0]
                if len(parts) == 1
                else _new(graph, write, aten.cat.default, (parts, dim), f"{name}_cat", val=val)
            )
            result = value  # the importer binds a `copy_`'s own result to the value written
        else:
            dim, index, source = args[1], args[2], args[3]
            if _target(write) == "aten.scatter_.value":
                shape = getattr(_val(index), "shape", None)
                if shape is None or not all(isinstance(d, int) for d in shape):
                    return False
                source = _new(
                    graph,
                    write,
                    aten.full.default,
                    (list(shape), source),
                    f"{name}_full",
                    {"dtype": val.dtype, "device": val.device},
                )
            new = _new(
                graph, write, aten.scatter.src, (latest, dim, index, source), f"{name}_src", val=val
            )
            result = new
        for later in list(latest.users):
            if later in position and position[later] > position[write]:
                later.replace_input_with(latest, new)
        write.replace_all_uses_with(result)
        graph.erase_node(write)
        latest = new
    return True


def _is_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor)


def _sliced(graph: torch.fx.Graph, node: torch.fx.Node) -> bool:
    """`chunk` / `split` / `split_with_sizes` as one `slice` per piece (see `_finer`)."""
    args: Any = node.args
    x = args[0]
    pieces: Any = node.meta.get("val")
    shape = getattr(_val(x), "shape", None)
    if shape is None or not isinstance(pieces, list | tuple) or len(pieces) < 2:
        return False
    dim = int(args[2]) if len(args) > 2 else 0
    users = list(node.users)
    if any(u.target is not operator.getitem for u in users):
        return False
    starts, start = [], 0
    for piece in pieces:
        size = piece.shape[dim]
        if not isinstance(size, int):
            return False
        starts.append((start, start + size))
        start += size
    made = [
        _new(
            graph,
            node,
            torch.ops.aten.slice.Tensor,
            (x, dim, a, b),
            f"{node.name}_{i}",
            val=pieces[i],
        )
        for i, (a, b) in enumerate(starts)
    ]
    for user in users:
        index: Any = user.args[1]
        user.replace_all_uses_with(made[int(index)])
        graph.erase_node(user)
    graph.erase_node(node)  # a piece nothing reads stays: its npu op was imported too
    return True


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

    reads: dict[tuple[str, str], torch.fx.Node] = {}
    """(ordered node, operand) -> what the ordered node reads for it: the last wait written."""
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
                current = reads.get((item.node, item.operand), operand)
                wait = graph.call_function(torch.ops.air.wait_tensor.default, (current, dependency))
                wait.meta = dict(operand.meta)
                later.replace_input_with(current, wait)
                reads[(item.node, item.operand)] = wait
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
