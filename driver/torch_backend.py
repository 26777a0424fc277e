"""npuir as a `torch.compile` backend: what `npuir.torchair.get_npu_backend` returns.

```python
import torch
import npuir.torchair as tng
config = tng.CompilerConfig()
backend = tng.get_npu_backend(compiler_config=config)
model = torch.compile(model, backend=backend, dynamic=False, fullgraph=True)
model(*inputs)                       # runs npuir's lowered, scheduled program
print(tng.reports(model)[0].render())  # the schedule report of each compile
```

Per graph dynamo hands over:

1. capture: dynamo's graph (the `air::` scope ops in it, in order) is traced
   to ATen by `torch.export` (non-strict, on the example inputs dynamo
   recorded), which is AOT autograd's tracer keeping composite ops such as
   `linear` whole -- so the FX graph is exactly what a `.pt2` of the same
   model holds, and `npuir.frontends.torch.import_exported_program` (the one
   converter) builds the IR on both routes;
   Then the config's custom FX passes, `post_grad_custom_pre_pass` then
   `post_grad_custom_post_pass` (TorchAir's attributes and signature,
   `fn(gm, example_inputs, config)`), run in place on each graph npuir compiles -- the
   ATen graph, or each npuir part of a split one (below) -- before its import, as TorchAir
   runs them on the graph GE compiles; `npuir.torchair.auto_streams()` is one, and its
   report joins the graph's;
2. checks: `reduce-overhead` warns, in TorchAir's words, on the options that may not
   take effect in capture mode (`CompilerConfig.capture_warning`);
3. the graph dump the config asks for (`debug.graph_dump`);
4. the GE options logged at INFO (`Compiling concrete graph {id} with options:`);
5. lowering with the mode's pipeline (npu-default, or npu-capture under `reduce-overhead`)
   and the config's pass options (`configured_pipeline(config.pipeline_name(), ...)`);
6. the schedule report (`ScheduleReport`): the makespan as annotated, on one
   stream, with GE's default allocation (`mode=ge`), with `auto`, the lower
   bound and the simulator's "why" lines, logged at INFO and kept on the
   backend (`npuir.torchair.reports(compiled)`).

The compiled callable runs the lowered program with npuir's numpy
interpreter and returns torch tensors of the eager dtypes and shapes.  An op
npuir cannot take (no npu op maps it, a form its mapping refuses, a dtype
such as complex64 that npuir has no element type for) splits the graph there,
as `torch.compile` backends split graphs: the ATen graph is cut into runs of
ops npuir takes and runs of ops it does not (`_segments`, grouping each side's
independent ops together), the former become npuir programs (lowered,
scheduled and reported, one `ScheduleReport` per part) and the latter run in
torch eagerly between them, with one warning naming the ops and the model's
lines; `NpuBackend.splits` records each split.  Under `dynamic=True` the dims
dynamo made symbolic are exported dynamic: one program for every size
(gear-multiversioned where `set_dim_gears` set gears).  When inputs require
grad, the forward numbers are npuir's and the backward runs eagerly (one
warning).  A mistake in the model (a bad scope argument, a shape outside the
gears) is a `TorchairError` located at the model's line, raised when the
compiled model is called; a graph break is dynamo's own error.
"""

from __future__ import annotations

import itertools
import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from npuir.analysis.program import Program, module_streams
from npuir.api import print_ir
from npuir.backends.npu.estimates import estimated_ops
from npuir.backends.npu.explain import compare, explain
from npuir.backends.npu.hardware import Hardware
from npuir.backends.npu.kernels import numpy_dtype
from npuir.backends.npu.numerics import NumericsError, resolve_entry, run_ranks
from npuir.backends.npu.simulator import SimResult
from npuir.context import make_context
from npuir.diagnostics import (
    Diagnostic,
    DiagnosticEngine,
    DiagnosticError,
    Kind,
    SourceLocation,
)
from npuir.dialects import gear, npu, stream
from npuir.driver.run import RunConfig, RunOutcome, run_program
from npuir.frontends.ge_writer import graph_text
from npuir.frontends.py_writer import builder_script
from npuir.frontends.torch import import_fx_graph, node_location
from npuir.frontends.torchair import CompilerConfig, TorchairError, air_ops
from npuir.frontends.torchair.auto_streams import AutoStreams
from npuir.frontends.torchair.configs.compiler_config import CUSTOM_PASSES
from npuir.frontends.torchair.core.utils import logger
from npuir.frontends.torchair.graph import check_mode
from npuir.frontends.torchair.inference import gears_of, warn_unless_dynamic
from npuir.passmanager.pipeline import build_pipeline, configured_pipeline, run_passes
from npuir.progress import progress
from npuir.schedule.bounds import lower_bound_ns
from npuir.schedule.device import device_of

Array = np.ndarray[Any, Any]

GEAR_MISMATCH = Kind(
    "torchair.gear-mismatch",
    "input shapes ({shapes}) match no gear of set_dim_gears ({gears}, policy {policy})",
)
"""A call whose geared dims are no gear of `set_dim_gears`; arguments: `shapes`, `gears`
(per geared input), `policy`."""
TRACE_FAILED = Kind("torchair.trace-failed", "torch.export could not trace the graph: {reason}")
"""torch.export could not re-trace dynamo's graph; argument: `reason` (torch's message)."""
RUN_FAILED = Kind("torchair.run-failed", "the compiled program failed: {reason}")
"""The interpreter could not run the compiled program on the inputs given; argument:
`reason` (the interpreter's)."""
BAD_CONFIG = Kind(
    "torchair.bad-argument.compiler-config",
    "compiler_config must be a CompilerConfig, got {type}",
)
"""`get_npu_backend` given something else as `compiler_config`; argument: `type`."""
NOT_COMPILED = Kind(
    "torchair.bad-argument.reports", "reports() takes a model compiled with get_npu_backend"
)
"""`reports` given a model not compiled with `get_npu_backend`."""
STREAM_BUDGET = Kind(
    "torchair.stream-budget",
    "graph {graph} uses {streams} stream(s) in each of its {gears} gear(s): {total} streams, "
    "more than the {budget} the device ({device}) has; share streams across gears or layers",
)
"""A graph whose streams x gears exceed the device's stream budget (`Hardware.max_streams`);
arguments: `graph`, `streams`, `gears`, `total`, `budget`, `device`."""

_GRAPH_IDS = itertools.count()
"""TorchAir numbers the concrete graphs of a process from 0."""

_TAIL = "coreset-lower,insert-events,coreset-check,sync-verify"
VARIANTS: dict[str, str] = {
    "one stream": f"gear-multiversion,stream-partition{{mode=single ignore-tags=true}},{_TAIL}",
    "ge (GE default)": f"gear-multiversion,stream-partition{{mode=ge ignore-tags=true}},{_TAIL}",
    "auto": f"gear-multiversion,stream-partition{{mode=auto ignore-tags=true}},{_TAIL}",
}
"""The report's variants besides the program as annotated (the config's own pipeline)."""

_SKIP_DIRS = (
    *(str(Path(m.__file__).resolve().parent) for m in (torch, air_ops) if m.__file__ is not None),
    str(Path(__file__).resolve().parent),
)


def _caller() -> SourceLocation | None:
    """The innermost frame outside torch and npuir: the user's call of the model."""
    import sys

    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_SKIP_DIRS):
        frame = frame.f_back  # type: ignore[assignment]
    return None if frame is None else SourceLocation(frame.f_code.co_filename, frame.f_lineno, 1)


# ---------------------------------------------------------------------------------------------
# The schedule report
# ---------------------------------------------------------------------------------------------


@dataclass
class ScheduleReport:
    """What one compile's schedule is worth, on the simulated device."""

    graph_id: int
    options: dict[str, str]
    """The GE options logged for the graph (`key = value`)."""
    makespans_ns: dict[str, int | None] = field(default_factory=dict[str, int | None])
    """Per variant ("as annotated", "one stream", "ge (GE default)", "auto"); None when the
    variant does not apply (e.g. one stream refuses a single-stream conflict) or deadlocks."""
    lower_bound_ns: int | None = None
    why: list[str] = field(default_factory=list[str])
    """The simulator's reasons, as `npuir-run` and `npuir-advise` print them."""
    fallback_ops: list[str] = field(default_factory=list[str])
    """The ATen ops of dynamo's graph that run eagerly: ops npuir cannot take (no npu op, a
    form its mapping refuses, a dtype it has no element type for), where the graph is split
    (or all of it, when nothing is left for npuir)."""
    scopes: dict[str, int] = field(default_factory=dict[str, int])
    """The model's `npu_stream_switch` scopes as written: each tag and the npu ops its scopes
    hold (an op in nested scopes counts for the innermost), in the order first opened."""
    part: tuple[int, int] | None = None
    """For a split graph: this program's place among its npuir parts (1-based, count)."""
    compile_seconds: float = 0.0
    """From dynamo's graph to the lowered program: the ATen re-trace, the import, the
    checks, the dump and the lowering (dynamo's own capture excluded)."""
    report_seconds: float = 0.0
    """Making this report: four timing-only simulations and the lower bound."""
    streams: int | None = None
    """Streams the graph uses as compiled (the default one included)."""
    gears: int = 1
    """Gears of the graph: each is a graph of its own on the device, with its streams."""
    warnings: list[Diagnostic] = field(default_factory=list[Diagnostic])
    """Warnings about the graph, e.g. `torchair.stream-budget`."""
    custom_pass: list[str] = field(default_factory=list[str])
    """What the config's custom FX passes did (`auto_streams`' rendered report)."""

    run: RunOutcome | None = field(default=None, repr=False, compare=False)
    """The annotated program's run (None when it did not run): what `trace` and `html`
    draw."""

    def trace(self, path: str) -> None:
        """Write the annotated program's run as `npuir-run --trace` writes it: Chrome trace
        JSON laid out as torch_npu's trace_view.json.  Raises `ValueError` when there is no
        run to draw (the graph ran eagerly, or its schedule deadlocks)."""
        from npuir.backends.npu.trace import trace_json

        run = self._drawable()
        assert run.result is not None
        Path(path).write_bytes(trace_json(run.result, run.programs, hw=run.hw))

    def html(self, path: str) -> None:
        """Write the annotated program's run as `npuir-run --report` writes it: one
        self-contained HTML page.  Raises `ValueError` as `trace` does."""
        from npuir.backends.npu.html_report import run_report_html

        run = self._drawable()
        assert run.result is not None
        title = f"concrete graph {self.graph_id}"
        Path(path).write_text(
            run_report_html(run.report, run.result, run.programs, run.hw, title=title),
            encoding="utf-8",
        )

    def _drawable(self) -> RunOutcome:
        if self.run is None or self.run.result is None:
            raise ValueError(f"concrete graph {self.graph_id} has no scheduled run to draw")
        return self.run

    def render(self) -> str:
        """The report as the log shows it."""
        of = "" if self.part is None else f", npuir part {self.part[0]} of {self.part[1]}"
        lines = [f"schedule of concrete graph {self.graph_id}{of} (simulated makespan, µs):"]
        for name, ns in self.makespans_ns.items():
            lines.append(f"  {name:<18} {'-' if ns is None else f'{ns / 1000:.1f}':>10}")
        if self.lower_bound_ns is not None:
            lines.append(f"  {'lower bound':<18} {self.lower_bound_ns / 1000:>10.1f}")
        if self.scopes:
            lines.append(
                "  scopes as written: "
                + ", ".join(f"'{tag}' ({n} op(s))" for tag, n in self.scopes.items())
            )
        lines.extend(f"  why: {w}" for w in self.why)
        if self.streams is not None:
            lines.append(
                f"  streams: {self.streams} per graph, {self.streams * self.gears} for its "
                f"{self.gears} gear(s)"
            )
        lines.extend(f"  {d.severity}: {d.message}" for d in self.warnings)
        lines.extend(self.custom_pass)
        if self.fallback_ops:
            lines.append(
                "  runs eagerly"
                + (" (the graph is split there): " if self.part else ": ")
                + ", ".join(self.fallback_ops)
            )
        return "\n".join(lines)


def _scopes(module: ModuleOp) -> dict[str, int]:
    """Each `stream.switch` tag of the imported `module` and the npu ops it holds innermost."""
    counts: dict[str, int] = {}
    for op in module.walk():
        if isinstance(op, stream.SwitchOp):
            counts.setdefault(op.tag_name, 0)
        elif isinstance(op, npu.NpuOp):
            parent = op.parent_op()
            while parent is not None and not isinstance(parent, stream.SwitchOp):
                parent = parent.parent_op()
            if parent is not None:
                counts[parent.tag_name] += 1
    return counts


def _report(
    graph_id: int,
    options: dict[str, str],
    text: str,
    pipeline: str,
    shapes: Sequence[tuple[int, ...]],
    module: ModuleOp,
) -> ScheduleReport:
    """Simulate the annotated program and the baselines (timing only), on the first
    call's shapes (a geared graph runs the gear they match)."""
    report = ScheduleReport(graph_id, options, scopes=_scopes(module))
    explained = {}
    annotated: tuple[SimResult, list[Program]] | None = None
    hw = device_of(module, None)
    funcs = [f for f in module.ops if isinstance(f, FuncOp)]
    # `shapes` are the user inputs', the function's last arguments: a constant the model
    # made (transformers' empty cache, `torch.tensor([])`) is an argument before them.
    first = max(len(funcs[0].args) - len(shapes), 0)
    for name, p in [("as annotated", pipeline), *VARIANTS.items()]:
        try:
            outcome = run_program(
                RunConfig(
                    path=f"<concrete graph {graph_id}>",
                    source=text,
                    pipeline=p,
                    timing_only=True,
                    shapes={str(first + i): tuple(shape) for i, shape in enumerate(shapes)},
                )
            )
        except DiagnosticError:
            report.makespans_ns[name] = None
            continue
        result = outcome.result
        if result is None or outcome.status != 0:
            report.makespans_ns[name] = None
            continue
        report.makespans_ns[name] = result.makespan_ns
        explained[name] = explain(result, outcome.programs, hw)
        if name == "as annotated" and result.deadlock is None:
            annotated = (result, outcome.programs)
            report.run = outcome
    try:
        report.lower_bound_ns = lower_bound_ns(funcs[0], hw)
    except DiagnosticError:
        report.lower_bound_ns = None
    single = explained.get("one stream")
    if single is not None:
        for name in ("as annotated", "auto"):
            if name in explained:
                report.why.append(compare(explained[name], single, name, "one stream"))
    if "as annotated" in explained:
        report.why.extend(explained["as annotated"].lines())
    if annotated is not None and (estimated := estimated_ops(*annotated)) is not None:
        report.why.append(estimated.line())
    return report


# ---------------------------------------------------------------------------------------------
# GE options, as TorchAir logs them
# ---------------------------------------------------------------------------------------------


def stream_budget(graph_id: int, streams: int, gears: int, hw: Hardware) -> Diagnostic | None:
    """The `torchair.stream-budget` warning when `streams` x `gears` exceed the device's
    stream budget, else None (each gear is loaded as a graph of its own)."""
    total = streams * gears
    if total <= hw.max_streams:
        return None
    return Diagnostic.of(
        "warning",
        STREAM_BUDGET,
        None,
        graph=graph_id,
        streams=streams,
        gears=gears,
        total=total,
        budget=hw.max_streams,
        device=hw.name,
    )


def ge_options(
    config: CompilerConfig,
    names: Sequence[str],
    gears: dict[int, dict[int, list[int]]],
    shapes: Sequence[Sequence[int]],
) -> dict[str, str]:
    """The GE options of one graph (sorted by key when logged).

    `ge.inputShape` / `ge.dynamicDims` / `ge.dynamicNodeType` are GE's gear options
    (`name:-1,2;...`, one `;`-separated gear of every geared dim's value), present when
    an input has gears; `ge.aicoreNum`, `ge.enableSingleStream` and
    `ge.autoMultistreamParallelMode` mirror `ge_config`.
    """
    options: dict[str, str] = {}
    if config.ge_config.aicore_num is not None:
        options["ge.aicoreNum"] = str(config.ge_config.aicore_num)
    if config.ge_config.enable_single_stream:
        options["ge.enableSingleStream"] = "true"
    if config.ge_config.auto_multistream_parallel_mode is not None:
        options["ge.autoMultistreamParallelMode"] = config.ge_config.auto_multistream_parallel_mode
    if gears:
        parts = []
        for i, name in enumerate(names):
            dims = gears.get(i, {})
            shape = ",".join("-1" if d in dims else str(s) for d, s in enumerate(shapes[i]))
            parts.append(f"{name}:{shape}")
        options["ge.inputShape"] = ";".join(parts)
        columns = [g for i in sorted(gears) for _, g in sorted(gears[i].items())]
        if config.inference_config.dynamic_gears_merge_policy == "zip":
            combos = list(zip(*columns))
        else:
            combos = list(itertools.product(*columns))
        options["ge.dynamicDims"] = ";".join(",".join(map(str, c)) for c in combos)
        options["ge.dynamicNodeType"] = "1"
    return options


# ---------------------------------------------------------------------------------------------
# Running the program
# ---------------------------------------------------------------------------------------------


def _to_numpy(t: torch.Tensor) -> Array:
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        # numpy has no bfloat16: the same bits, as the interpreter's (ml_dtypes') bfloat16.
        bits: Array = t.view(torch.int16).numpy()
        return bits.view(numpy_dtype("bf16"))
    array: Array = t.numpy()
    return array


def _from_numpy(array: Array, dtype: torch.dtype) -> torch.Tensor:
    """`array` as a torch tensor of `dtype` (bfloat16 bit for bit, as `_to_numpy` reads it)."""
    # `np.asarray(order="C")`, not `np.ascontiguousarray`: that one makes a 0-d array (a
    # full reduction's result) 1-d, and torch would see shape [1] for its [].
    array = np.asarray(array, order="C")
    if array.dtype == numpy_dtype("bf16"):
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16).to(dtype)
    return torch.from_numpy(array).to(dtype)


def _gear_check(
    args: Sequence[Any], names: Sequence[str], gears: dict[int, dict[int, list[int]]], policy: str
) -> None:
    """Refuse inputs whose geared dims are no gear (TorchAir's guards refuse them)."""
    if not gears:
        return
    values = []
    columns = []
    for i in sorted(gears):
        for d, g in sorted(gears[i].items()):
            values.append(int(args[i].shape[d]))
            columns.append(g)
    ok = (
        any(list(c) == values for c in zip(*columns))
        if policy == "zip"
        else all(v in g for v, g in zip(values, columns))
    )
    if not ok:
        named = "; ".join(f"{names[i]}: {gears[i]}" for i in sorted(gears))
        shapes = "; ".join(f"{names[i]}: {tuple(args[i].shape)}" for i in sorted(gears))
        raise TorchairError(
            Diagnostic.of(
                "error", GEAR_MISMATCH, _caller(), shapes=shapes, gears=named, policy=policy
            )
        )


def _constants(
    module: ModuleOp, ep: torch.export.ExportedProgram | None = None
) -> list[Array | None]:
    """Per argument of the imported function: None where the caller gives it, the value
    where the export lifted a constant or holds a buffer of its own (a tensor the model made
    in `forward`, as transformers' empty cache `torch.tensor([])`).  The scalars the program
    used are `npu.constant` ops in it, not arguments."""
    from torch.export.graph_signature import InputKind

    func = next(op for op in module.ops if isinstance(op, FuncOp))
    out: list[Array | None] = []
    if ep is not None:
        nodes = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
        for spec in ep.graph_signature.input_specs:
            name = getattr(spec.arg, "name", None)
            if name is None or not isinstance(nodes[name].meta.get("val"), torch.Tensor):
                continue  # a constant the import folded: no argument
            if spec.kind is InputKind.USER_INPUT:
                out.append(None)
            elif spec.target in ep.state_dict:
                out.append(_to_numpy(ep.state_dict[spec.target]))
            else:
                out.append(_to_numpy(ep.constants[spec.target]))
    if len(out) != len(func.body.block.args):
        return [None for _ in func.body.block.args]
    return out


class _Compiled:
    """The callable `torch.compile` runs for one graph."""

    def __init__(
        self,
        gm: torch.fx.GraphModule,
        module: ModuleOp | None,
        outputs: list[tuple[torch.dtype, bool]] | None,
        names: list[str],
        gears: dict[int, dict[int, list[int]]],
        policy: str,
        error: TorchairError | None = None,
        constants: list[Array | None] | None = None,
    ) -> None:
        self.gm = gm
        self.module = module
        self.outputs = outputs
        self.names = names
        self.gears = gears
        self.policy = policy
        self.error = error
        self.entry = None
        self.constants = constants or []
        """Per function argument: the value of a `torch.const` scalar, or None for an input."""
        self.static_key: tuple[tuple[int, ...], ...] | None = None
        """The sizes of the ungeared dims this program was specialised to (see `_static_key`)."""
        self.variants: dict[tuple[tuple[int, ...], ...], _Compiled] = {}
        """Every specialisation of dynamo's graph so far, shared by all of them."""
        self.recompile: Callable[[Sequence[Any]], _Compiled] | None = None
        self.free: dict[int, set[int]] = {}
        """Per argument, the dims the program takes at any size (`dynamic=True`'s dims
        that export kept symbolic): no recompile when only they change."""
        self.split: _Split | None = None
        """Set when the graph is split at ops npuir cannot take (`NpuBackend._split`)."""
        if module is not None:
            funcs = {f.sym_name.data: f for f in module.ops if isinstance(f, FuncOp)}
            self.entry = funcs.get("forward")

    def __call__(self, *args: Any) -> Any:
        if self.error is not None:
            raise TorchairError(self.error.diagnostic)
        _gear_check(args, self.names, self.gears, self.policy)
        if self.split is None and (
            self.module is None or self.entry is None or self.outputs is None
        ):
            return self.gm(*args)
        if (
            self.recompile is not None
            and (key := _static_key(args, self.gears, self.free)) != self.static_key
        ):
            # Dims without gears are specialised to the sizes first seen (TorchAir's
            # guard_gears_shape); other sizes compile their own program, as its guard would.
            other = self.variants.get(key)
            if other is None:
                other = self.variants[key] = self.recompile(args)
            return other(*args)
        if torch.is_grad_enabled() and any(
            isinstance(a, torch.Tensor) and a.requires_grad for a in args
        ):
            return _WithEagerBackward.apply(self, *args)
        return self.run(args)

    def run(self, args: Sequence[Any]) -> tuple[torch.Tensor, ...]:
        if self.split is not None:
            return self.split.run(args)
        assert self.module is not None and self.entry is not None and self.outputs is not None
        given = iter([_to_numpy(a) for a in args if isinstance(a, torch.Tensor)])
        arrays = [next(given) if c is None else c for c in self.constants]
        func, _ = resolve_entry(self.module, self.entry, [a.shape for a in arrays])
        try:
            results = run_ranks(self.module, [func], [arrays])[0]
        except NumericsError as exc:
            raise TorchairError(
                Diagnostic.of("error", RUN_FAILED, _caller(), reason=str(exc))
            ) from None
        out = []
        for array, (dtype, _) in zip(results, self.outputs):
            out.append(_from_numpy(array, dtype))
        return tuple(out)


def _sizes_from_tensors(
    gm: torch.fx.GraphModule, placeholders: Sequence[torch.fx.Node], examples: Sequence[Any]
) -> torch.fx.GraphModule:
    """A copy of dynamo's graph whose inputs are its tensors only (see `NpuBackend._export`).

    A size input dynamo passes (a `SymInt` placeholder) becomes `aten.sym_size.int` of the
    tensor dim carrying the same symbol; one that no tensor dim carries (a derived
    size) becomes its value on this call.  Node metadata (the stack traces that locate
    the user's lines) is kept.
    """
    dims: dict[str, tuple[str, int]] = {}
    for node, example in zip(placeholders, examples):
        fake = node.meta.get("example_value")
        if isinstance(example, torch.Tensor) and isinstance(fake, torch.Tensor):
            for d, n in enumerate(fake.shape):
                if isinstance(n, torch.SymInt):
                    dims.setdefault(str(n.node.expr), (node.name, d))
    graph = torch.fx.Graph()
    copied: dict[torch.fx.Node, torch.fx.Node] = {}
    graph.output(graph.graph_copy(gm.graph, copied))
    by_name = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    last = list(by_name.values())[-1] if by_name else None
    for node, example in zip(placeholders, examples):
        if isinstance(example, torch.Tensor):
            continue
        new = copied[node]
        fake = node.meta.get("example_value")
        where = dims.get(str(fake.node.expr)) if isinstance(fake, torch.SymInt) else None
        if where is not None:
            with graph.inserting_after(last):
                size = graph.call_function(
                    torch.ops.aten.sym_size.int, (by_name[where[0]], where[1])
                )
            new.replace_all_uses_with(size)
        else:
            new.replace_all_uses_with(example)
        graph.erase_node(new)
    return torch.fx.GraphModule(gm, graph)


def _state_names(ep: torch.export.ExportedProgram) -> dict[str, str]:
    """The exported graph's placeholders that are the program's state, to their entries."""
    from torch.export.graph_signature import InputKind

    return {
        spec.arg.name: spec.target
        for spec in ep.graph_signature.input_specs
        if spec.kind is not InputKind.USER_INPUT
        and isinstance(getattr(spec.arg, "name", None), str)
        and isinstance(spec.target, str)
    }


def _symbolic_dims(placeholder: torch.fx.Node) -> set[int]:
    """The dims of a tensor input that dynamo traced as symbols (`dynamic=True`)."""
    fake = placeholder.meta.get("example_value")
    if not isinstance(fake, torch.Tensor):
        return set()
    return {d for d, n in enumerate(fake.shape) if isinstance(n, torch.SymInt)}


def _free_dims(ep: torch.export.ExportedProgram, tensor_pos: Sequence[int]) -> dict[int, set[int]]:
    """Per tensor argument (by its position among dynamo's inputs), the dims the exported
    program keeps symbolic."""
    from torch.export.graph_signature import InputKind

    user = [
        ep.graph.find_nodes(op="placeholder", target=spec.arg.name)[0]
        for spec in ep.graph_signature.input_specs
        if spec.kind is InputKind.USER_INPUT and hasattr(spec.arg, "name")
    ]
    free: dict[int, set[int]] = {}
    for i, node in zip(tensor_pos, user):
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            dims = {d for d, n in enumerate(val.shape) if not isinstance(n, int)}
            if dims:
                free[i] = dims
    return free


def _part_ops(segment: _Segment) -> list[str]:
    """The ATen ops a part computes (scope markers, sizes and getitems left out)."""
    return [_target(n) for n in segment.nodes if _target(n) not in _NEUTRAL | {"_operator.getitem"}]


def _static_key(
    args: Sequence[Any],
    gears: dict[int, dict[int, list[int]]],
    free: dict[int, set[int]] | None = None,
) -> tuple[tuple[int, ...], ...]:
    """The sizes of every tensor argument's dims that have no gears and are not free (see
    `_Compiled.free`), in order."""
    free = free or {}
    return tuple(
        tuple(
            int(n)
            for d, n in enumerate(a.shape)
            if d not in gears.get(i, {}) and d not in free.get(i, set())
        )
        for i, a in enumerate(args)
        if isinstance(a, torch.Tensor)
    )


class _WithEagerBackward(torch.autograd.Function):
    """npuir's forward numbers; the backward recomputes the graph eagerly for its gradients."""

    @staticmethod
    def forward(ctx: Any, compiled: _Compiled, *args: Any) -> Any:
        ctx.compiled = compiled
        ctx.save_for_backward(*[a for a in args if isinstance(a, torch.Tensor)])
        ctx.args = args
        return compiled.run(args)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        args = [
            a.detach().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a
            for a in ctx.args
        ]
        with torch.enable_grad():
            outs = ctx.compiled.gm(*args)
        outs = outs if isinstance(outs, tuple | list) else (outs,)
        pairs = [(o, g) for o, g in zip(outs, grads) if g is not None and o.requires_grad]
        wanted = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
        got = torch.autograd.grad(
            [o for o, _ in pairs], wanted, [g for _, g in pairs], allow_unused=True
        )
        it = iter(got)
        return (
            None,
            *[next(it) if isinstance(a, torch.Tensor) and a.requires_grad else None for a in args],
        )


# ---------------------------------------------------------------------------------------------
# Splitting a graph at the ops npuir cannot take
# ---------------------------------------------------------------------------------------------

_SCOPE_ENTER = "air.scope_enter.default"
_SCOPE_EXIT = "air.scope_exit.default"
_NEUTRAL = frozenset(
    {_SCOPE_ENTER, _SCOPE_EXIT, "aten.sym_size.int", "aten._assert_tensor_metadata.default"}
)
"""Nodes that compute nothing a part must own: they join the part being built (a scope
marker is re-opened and closed around every npuir part it spans, see `_part_graph`)."""


@dataclass
class _Segment:
    """A run of consecutive FX nodes that all run on npuir, or all eagerly."""

    eager: bool
    nodes: list[torch.fx.Node] = field(default_factory=list[torch.fx.Node])
    inputs: list[torch.fx.Node] = field(default_factory=list[torch.fx.Node])
    """Values the part reads from earlier parts or the graph's inputs, in first-use order."""
    outputs: list[torch.fx.Node] = field(default_factory=list[torch.fx.Node])
    """Values later parts (or the graph's output) read from this one."""
    why: str = ""
    """For an eager part that would have run on npuir: why it does not."""


def _target(node: torch.fx.Node) -> str:
    target = node.target
    if callable(target) and not hasattr(target, "_schema"):
        return f"{getattr(target, '__module__', '')}.{getattr(target, '__name__', target)}"
    return str(target)


def _grouped(graph: torch.fx.Graph, eager: dict[str, str]) -> list[torch.fx.Node]:
    """`graph`'s call_function nodes in a topological order that keeps each side's ops
    together: of the ops whose operands are ready, those on the side of the run being built
    go first (a `getitem` is on its producer's side, the `_NEUTRAL` nodes on either), so a
    model whose eager ops do not depend on each other's npuir neighbours splits into few
    parts.  The exported graph is functional, so any topological order computes the same
    values; a graph with scope markers keeps its own order (a marker's place is what puts an
    op in its scope)."""
    nodes = [n for n in graph.nodes if n.op == "call_function"]
    if any(_target(n) in (_SCOPE_ENTER, _SCOPE_EXIT) for n in nodes):
        return nodes
    # An op that mutates an operand (`index_put_`) is a barrier: reordered only among the
    # ops between two such ops, every op keeps its place relative to the mutations.
    order: list[torch.fx.Node] = []
    chunk: list[torch.fx.Node] = []
    for node in nodes:
        schema = getattr(node.target, "_schema", None)
        if schema is not None and schema.is_mutable:
            order += [*_grouped_chunk(chunk, eager), node]
            chunk = []
        else:
            chunk.append(node)
    return order + _grouped_chunk(chunk, eager)


def _grouped_chunk(nodes: list[torch.fx.Node], eager: dict[str, str]) -> list[torch.fx.Node]:
    """`_grouped` of ops none of which mutates anything (their inputs from outside the
    chunk are ready)."""
    position = {n: i for i, n in enumerate(nodes)}

    def side(node: torch.fx.Node) -> bool | None:
        name = _target(node)
        if name in _NEUTRAL:
            return None
        producer = node.args[0] if node.args else None
        if name == "_operator.getitem" and isinstance(producer, torch.fx.Node):
            return side(producer) if producer in position else None
        return node.name in eager

    waiting = {n: sum(1 for m in n.all_input_nodes if m in position) for n in nodes}
    ready = sorted((n for n in nodes if waiting[n] == 0), key=position.__getitem__)
    order: list[torch.fx.Node] = []
    current = side(nodes[0]) if nodes else None
    while ready:
        pick = next((n for n in ready if side(n) in (None, current)), None)
        if pick is None:
            pick = ready[0]
            current = side(pick)
        ready.remove(pick)
        order.append(pick)
        for user in pick.users:
            if user in waiting:
                waiting[user] -= 1
                if waiting[user] == 0:
                    ready.append(user)
        ready.sort(key=position.__getitem__)
    return order


def _segments(graph: torch.fx.Graph, eager: dict[str, str]) -> list[_Segment]:
    """`graph`'s call_function nodes (in `_grouped`'s order) cut into runs, a new run
    wherever npuir's side changes.

    A `getitem` joins its producer's run (a tuple never crosses parts); the nodes in
    `_NEUTRAL` join the current run.  Runs only ever read earlier ones, so running them
    in order computes the graph."""
    segments: list[_Segment] = []
    home: dict[torch.fx.Node, _Segment] = {}
    for node in _grouped(graph, eager):
        name = _target(node)
        producer = node.args[0] if node.args else None
        if name == "_operator.getitem" and isinstance(producer, torch.fx.Node) and producer in home:
            segment = home[producer]
        elif name in _NEUTRAL and segments:
            segment = segments[-1]
        else:
            runs_eagerly = node.name in eager
            if not segments or segments[-1].eager != runs_eagerly:
                segments.append(_Segment(runs_eagerly))
            segment = segments[-1]
        segment.nodes.append(node)
        home[node] = segment
    for segment in segments:
        inside = set(segment.nodes)
        for node in segment.nodes:
            for value in node.all_input_nodes:
                if value not in inside and value not in segment.inputs:
                    segment.inputs.append(value)
            if any(user not in inside for user in node.users):
                segment.outputs.append(node)
    return segments


def _part_graph(segment: _Segment, open_scopes: list[torch.fx.Node]) -> torch.fx.GraphModule:
    """One segment as a graph of its own: its inputs as placeholders (with their metadata,
    which the importer reads), its nodes, its outputs as a tuple.  An npuir part opens the
    scopes open before it and closes the ones still open after it, so a scope an eager op
    splits keeps its ops on both sides; `open_scopes` is updated to after the segment."""
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    for value in segment.inputs:
        env[value] = graph.placeholder(value.name)
        env[value].meta = dict(value.meta)
    for scope in [] if segment.eager else open_scopes:
        reopened = graph.call_function(scope.target, scope.args, scope.kwargs)  # type: ignore[arg-type]
        reopened.meta = dict(scope.meta)
    for node in segment.nodes:
        name = _target(node)
        if name == _SCOPE_ENTER:
            open_scopes.append(node)
        elif name == _SCOPE_EXIT and open_scopes:
            open_scopes.pop()
        env[node] = graph.node_copy(node, lambda n: env[n])
    for _scope in [] if segment.eager else open_scopes:
        graph.call_function(torch.ops.air.scope_exit.default, ())
    graph.output(tuple(env[n] for n in segment.outputs))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def _flat_inputs(ep: torch.export.ExportedProgram, user: Sequence[Any]) -> dict[str, Any]:
    """The value of each of the exported graph's placeholders, by name: the program's state
    (parameters, buffers, lifted constants) and the user's tensors, in order."""
    from torch.export.graph_signature import InputKind

    values: dict[str, Any] = {}
    given = iter(user)
    for spec in ep.graph_signature.input_specs:
        name = getattr(spec.arg, "name", None)
        if name is None:
            continue
        if spec.kind is InputKind.USER_INPUT:
            values[name] = next(given)
        elif spec.target in ep.state_dict:
            values[name] = ep.state_dict[spec.target]
        else:
            values[name] = ep.constants[spec.target]
    return values


@dataclass
class _Part:
    """One part of a split graph and how it runs."""

    segment: _Segment
    module: torch.fx.GraphModule
    program: _Compiled | None
    """npuir's compiled part; None: the part runs eagerly."""

    def run(self, values: Sequence[Any]) -> Sequence[Any]:
        if self.program is not None:
            return self.program.run(values)
        with torch.no_grad():
            result: Sequence[Any] = self.module(*values)
        return result


@dataclass
class _Split:
    """A graph split at the ops npuir cannot take: its parts, run in order."""

    placeholders: list[str]
    state: dict[str, Any]
    """The program's own placeholders' values (parameters, buffers, constants)."""
    parts: list[_Part]
    outputs: list[Any]
    """The exported graph's output: nodes (read from the parts) and constants."""

    def run(self, args: Sequence[Any]) -> tuple[Any, ...]:
        user = iter(a for a in args if isinstance(a, torch.Tensor))
        env: dict[str, Any] = {
            name: self.state[name] if name in self.state else next(user)
            for name in self.placeholders
        }
        for part in self.parts:
            got = part.run([env[n.name] for n in part.segment.inputs])
            env.update(zip((n.name for n in part.segment.outputs), got))
        return tuple(env[o.name] if isinstance(o, torch.fx.Node) else o for o in self.outputs)


# ---------------------------------------------------------------------------------------------
# The backend
# ---------------------------------------------------------------------------------------------


class NpuBackend:
    """The `torch.compile` backend of `get_npu_backend` (see the module docstring)."""

    def __init__(
        self,
        compiler_config: CompilerConfig | None = None,
        custom_decompositions: dict[Any, Callable[..., Any]] | None = None,
    ) -> None:
        if compiler_config is not None and not isinstance(compiler_config, CompilerConfig):
            raise TorchairError(
                Diagnostic.of("error", BAD_CONFIG, _caller(), type=type(compiler_config).__name__)
            )
        self.config = compiler_config if compiler_config is not None else CompilerConfig()
        self.decompositions = dict(custom_decompositions or {})
        self.reports: list[ScheduleReport] = []
        self.modules: list[ModuleOp] = []
        """Each compile's lowered program (what the compiled callable runs)."""
        self.imported: list[ModuleOp] = []
        """Each compile's program as imported (before lowering; what the dumps hold)."""
        self.compiles = 0
        self.splits: list[list[tuple[str, list[str]]]] = []
        """Per graph split at ops npuir cannot take: its parts in order, each "npuir" or
        "eager" with the ATen ops it computes."""
        """Graphs compiled (a gear-multiversioned graph compiles once for all gears)."""
        self._warned: set[str] = set()
        self._gears: dict[str, dict[int, list[int]]] = {}
        """The gears of each input seen (by dynamo's source name, e.g. `L['x']`)."""
        air_ops.register()

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(message, UserWarning, stacklevel=2)

    def __call__(
        self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any]
    ) -> Callable[..., Any]:
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        examples = [self._example(n, x) for n, x in zip(placeholders, example_inputs)]
        return self._specialised(gm, placeholders, examples, {}, None)

    def _specialised(
        self,
        gm: torch.fx.GraphModule,
        placeholders: list[torch.fx.Node],
        examples: list[Any],
        variants: dict[tuple[tuple[int, ...], ...], _Compiled],
        known_gears: dict[int, dict[int, list[int]]] | None,
    ) -> _Compiled:
        """`gm` compiled for the sizes of `examples`' ungeared dims, registered in `variants`
        (a respecialisation keeps the gears its first compile found)."""
        compiled = self._compile(gm, placeholders, examples, known_gears)
        compiled.static_key = _static_key(examples, compiled.gears, compiled.free)
        compiled.variants = variants
        variants[compiled.static_key] = compiled
        compiled.recompile = lambda args: self._specialised(
            gm, placeholders, list(args), variants, compiled.gears
        )
        return compiled

    def _compile(
        self,
        gm: torch.fx.GraphModule,
        placeholders: list[torch.fx.Node],
        examples: list[Any],
        known_gears: dict[int, dict[int, list[int]]] | None = None,
    ) -> _Compiled:
        # A long compile shows its phases on a terminal (npuir.progress: only there, and
        # only once the compile has run for the delay); the line is gone when it returns.
        progress.start("torch.compile: export")
        try:
            return self._compile_graph(gm, placeholders, examples, known_gears)
        finally:
            progress.clear()

    def _compile_graph(
        self,
        gm: torch.fx.GraphModule,
        placeholders: list[torch.fx.Node],
        examples: list[Any],
        known_gears: dict[int, dict[int, list[int]]] | None = None,
    ) -> _Compiled:
        start = time.perf_counter()
        self.compiles += 1
        graph_id = next(_GRAPH_IDS)
        tensor_pos = [i for i, x in enumerate(examples) if isinstance(x, torch.Tensor)]
        names = [f"arg{i}_1" for i in range(len(examples))]
        policy = self.config.inference_config.dynamic_gears_merge_policy
        if known_gears is not None:
            gears = dict(known_gears)
            remembered = {}
        else:
            gears = {i: g for i in tensor_pos if (g := gears_of(examples[i]))}
            warn_unless_dynamic([examples[i] for i in gears])  # TorchAir's gears need dynamic
            sources = [self._source(n) for n in placeholders]
            remembered = {
                i: self._gears[sources[i]]
                for i in tensor_pos
                if i not in gears and sources[i] in self._gears
            }
            for i, g in gears.items():
                self._gears[sources[i]] = g
        if remembered:
            # dynamo recompiles when a geared dim leaves its range (its guard fails), with
            # the new tensors, which carry no gears: check them against the first ones.
            gears.update(remembered)
            try:
                _gear_check(examples, names, gears, policy)
            except TorchairError as exc:
                return _Compiled(gm, None, None, names, gears, policy, exc)
        tensor_names = [names[i] for i in tensor_pos]
        tensor_gears = {tensor_pos.index(i): g for i, g in gears.items()}
        if torch.is_grad_enabled() and any(
            isinstance(x, torch.Tensor) and x.requires_grad for x in examples
        ):
            self._warn_once(
                "grad",
                "inputs or parameters require grad: npuir computes the forward graph, the "
                "backward runs eagerly (wrap inference in torch.no_grad() to avoid it)",
            )
        # dynamic=True: without gears, one dynamic program for every size; with gears, the
        # gears are the sizes and every other dim is static (TorchAir's guard_gears_shape).
        symbolic = (
            {}
            if gears
            else {i: dims for i in tensor_pos if (dims := _symbolic_dims(placeholders[i]))}
        )
        try:
            ep = self._export(gm, placeholders, examples, gears, symbolic)
            free = _free_dims(ep, tensor_pos)
            outputs = [
                (n.meta["val"].dtype, True)
                for n in ep.graph.output_node().args[0]
                if isinstance(n, torch.fx.Node) and isinstance(n.meta.get("val"), torch.Tensor)
            ]

            def imported(eager: dict[str, str] | None = None) -> ModuleOp:
                progress.phase(f"torch.compile graph {graph_id}: import")
                return import_fx_graph(
                    ep.graph,
                    state=_state_names(ep),
                    range_constraints=ep.range_constraints,
                    config=self.config,
                    gears=tensor_gears,
                    decompositions=self.decompositions,
                    diagnostics=DiagnosticEngine(),
                    eager=eager,
                )

            # One walk classifies every op; when npuir takes them all, it is the import.
            eager: dict[str, str] = {}
            module: ModuleOp | None = imported(eager)
            if eager:
                split = self._split(gm, ep, eager, examples, names, gears, graph_id, start)
                split.free = free
                return split
            user = [examples[i] for i in tensor_pos]
            applied = self._custom_passes(ep.graph_module, list(_flat_inputs(ep, user).values()))
            if applied is not None:  # a pass rewrote the graph: import what it wrote
                module = imported()
        except (TorchairError, DiagnosticError) as exc:
            logger.error("%s", exc.diagnostic.render())
            return _Compiled(gm, None, None, names, gears, policy, TorchairError(exc.diagnostic))
        output_node = ep.graph.output_node()
        if len(outputs) != len(output_node.args[0]):
            module = None  # an output that is not a tensor: the FX graph runs it
        try:
            self._check_mode(module)
        except TorchairError as exc:
            return _Compiled(gm, None, None, names, gears, policy, exc)
        opaque = (
            sorted({op.ge_type.data for op in module.walk() if isinstance(op, npu.OpaqueOp)})
            if module
            else []
        )
        shapes = [tuple(int(d) for d in examples[i].shape) for i in tensor_pos]
        options = ge_options(self.config, tensor_names, tensor_gears, shapes)
        logger.info("Compiling concrete graph %d with options:", graph_id)
        for key in sorted(options):
            logger.info("    %s = %s", key, options[key])
        text = print_ir(module, debuginfo=True) if module is not None else ""
        if module is not None and self.config.debug.graph_dump.type is not None:
            self._dump(graph_id, module, text)
        constants = _constants(module, ep) if module is not None else []
        if module is None or opaque:
            if opaque:
                self._warn_once(
                    "opaque:" + ",".join(opaque),
                    "no npu kernel for " + ", ".join(opaque) + ": this graph runs eagerly",
                )
            report = ScheduleReport(graph_id, options, fallback_ops=opaque)
            report.custom_pass = applied or []
            report.compile_seconds = time.perf_counter() - start
            self.reports.append(report)
            return _Compiled(gm, None, None, names, gears, policy)
        pipeline = configured_pipeline(self.config.pipeline_name(), self.config.pass_options())
        self.imported.append(module.clone())
        try:
            run_passes(make_context(), module, build_pipeline(pipeline))
        except DiagnosticError as exc:
            return _Compiled(gm, None, None, names, gears, policy, TorchairError(exc.diagnostic))
        seconds = time.perf_counter() - start
        self.modules.append(module)
        progress.phase(f"torch.compile graph {graph_id}: report")
        report = _report(graph_id, options, text, pipeline, shapes, self.imported[-1])
        report.custom_pass = applied or []
        self._count_streams(report, module, options)
        report.compile_seconds = seconds
        report.report_seconds = time.perf_counter() - start - seconds
        self.reports.append(report)
        self._write_pictures(report)
        logger.info("%s", report.render())
        compiled = _Compiled(gm, module, outputs, names, gears, policy, None, constants)
        compiled.free = free
        return compiled

    def _custom_passes(self, gm: torch.fx.GraphModule, inputs: list[Any]) -> list[str] | None:
        """Run the config's custom FX passes on `gm` in place, as TorchAir runs them after AOT
        autograd (pre, then post: npuir has no FX passes between them); None when the config
        has none, else the reports of the `auto_streams` passes among them, rendered."""
        hooks = [getattr(self.config, name) for name in CUSTOM_PASSES]
        if not any(hooks):
            return None
        rendered: list[str] = []
        for hook in hooks:
            if hook is None:
                continue
            hook(gm, inputs, self.config)
            if isinstance(hook, AutoStreams) and hook.reports:
                rendered.append(hook.reports[-1].render())
        gm.recompile()
        return rendered

    @staticmethod
    def _count_streams(report: ScheduleReport, module: ModuleOp, options: dict[str, str]) -> None:
        """Streams per graph and per gear set, and the budget warning (`stream_budget`)."""
        report.streams = max(len(module_streams(module)), 1)
        dims = options.get("ge.dynamicDims")
        report.gears = len(dims.split(";")) if dims else 1
        warning = stream_budget(
            report.graph_id, report.streams, report.gears, device_of(module, None)
        )
        if warning is not None:
            report.warnings.append(warning)
            logger.warning("%s", warning.render())

    def _split(
        self,
        gm: torch.fx.GraphModule,
        ep: torch.export.ExportedProgram,
        eager: dict[str, str],
        examples: list[Any],
        names: list[str],
        gears: dict[int, dict[int, list[int]]],
        graph_id: int,
        start: float,
    ) -> _Compiled:
        """dynamo's graph split at the ops npuir cannot take (`eager`: node name to reason):
        the runs of ops between them become npuir programs, lowered, scheduled and
        reported like a whole graph; the ops themselves run eagerly in between."""
        policy = self.config.inference_config.dynamic_gears_merge_policy
        user = [x for x in examples if isinstance(x, torch.Tensor)]
        flat = _flat_inputs(ep, user)
        placeholders = [n.name for n in ep.graph.nodes if n.op == "placeholder"]
        state = {name: flat[name] for name in _state_names(ep)}
        # The values of this call, for the shapes each part's report simulates.
        interpreter = torch.fx.Interpreter(ep.graph_module, garbage_collect_values=False)
        with torch.no_grad():
            interpreter.run(*[flat[name] for name in placeholders])
        values = interpreter.env
        segments = _segments(ep.graph, eager)
        by_kind: dict[str, list[torch.fx.Node]] = {}
        for node in ep.graph.nodes:
            if node.name in eager:
                by_kind.setdefault(_target(node), []).append(node)
        kinds = sorted(by_kind)
        wanted = [s for s in segments if not s.eager]
        open_scopes: list[torch.fx.Node] = []
        parts: list[_Part] = []
        pending: list[ScheduleReport] = []
        for segment in segments:
            part = _part_graph(segment, open_scopes)
            program = None
            if not segment.eager:
                program, segment.why = self._part(part, segment, ep, values, graph_id, pending)
                if program is None:
                    segment.eager = True
                else:
                    graph_id = next(_GRAPH_IDS)
            parts.append(_Part(segment, part, program))
        on_npuir = [p for p in parts if p.program is not None]
        self.splits.append(
            [("eager" if p.program is None else "npuir", _part_ops(p.segment)) for p in parts]
        )
        said = "; ".join(
            f"{kind} ({eager[by_kind[kind][0].name]}"
            + (f", {loc}" if (loc := node_location(by_kind[kind][0])) else "")
            + ")"
            for kind in kinds
        )
        refused = [s.why for s in wanted if s.why]
        self._warn_once(
            "split:" + ",".join(kinds),
            f"npuir cannot take {said}: the graph is split there, {len(on_npuir)} part(s) run on "
            "npuir and the op(s) eagerly between them"
            + (f" (parts also left eager: {'; '.join(refused)})" if refused else ""),
        )
        for index, report in enumerate(pending):
            report.part = (index + 1, len(pending))
            report.fallback_ops = kinds
            self.reports.append(report)
            logger.info("%s", report.render())
        if not pending:
            report = ScheduleReport(graph_id, {}, fallback_ops=kinds)
            report.compile_seconds = time.perf_counter() - start
            self.reports.append(report)
        compiled = _Compiled(gm, None, None, names, gears, policy)
        compiled.split = _Split(placeholders, state, parts, list(ep.graph.output_node().args[0]))
        return compiled

    def _part(
        self,
        part: torch.fx.GraphModule,
        segment: _Segment,
        ep: torch.export.ExportedProgram,
        values: dict[torch.fx.Node, Any],
        graph_id: int,
        reports: list[ScheduleReport],
    ) -> tuple[_Compiled | None, str]:
        """One npuir part: imported, lowered and reported (appended to `reports`); None and
        why when it cannot run on npuir after all."""
        start = time.perf_counter()
        if not any(_target(n) not in _NEUTRAL for n in segment.nodes):
            return None, ""  # nothing to compute: scope markers, sizes
        if not all(isinstance(values.get(n), torch.Tensor) for n in segment.outputs):
            return None, "a part whose results are not all tensors"
        state = _state_names(ep)
        applied = self._custom_passes(part, [values.get(n) for n in segment.inputs])
        module = import_fx_graph(
            part.graph,
            state={k: v for k, v in state.items() if any(n.name == k for n in segment.inputs)},
            range_constraints=ep.range_constraints,
            config=self.config,
            decompositions=self.decompositions,
            diagnostics=DiagnosticEngine(),
        )
        self._check_mode(module)
        inputs = [n for n in segment.inputs if isinstance(values.get(n), torch.Tensor)]
        shapes = [tuple(int(d) for d in values[n].shape) for n in inputs]
        options = ge_options(self.config, [n.name for n in inputs], {}, shapes)
        logger.info("Compiling concrete graph %d with options:", graph_id)
        for key in sorted(options):
            logger.info("    %s = %s", key, options[key])
        text = print_ir(module, debuginfo=True)
        if self.config.debug.graph_dump.type is not None:
            self._dump(graph_id, module, text)
        pipeline = configured_pipeline(self.config.pipeline_name(), self.config.pass_options())
        self.imported.append(module.clone())
        run_passes(make_context(), module, build_pipeline(pipeline))
        seconds = time.perf_counter() - start
        self.modules.append(module)
        progress.phase(f"torch.compile graph {graph_id}: report")
        report = _report(graph_id, options, text, pipeline, shapes, self.imported[-1])
        report.custom_pass = applied or []
        self._count_streams(report, module, options)
        report.compile_seconds = seconds
        report.report_seconds = time.perf_counter() - start - seconds
        reports.append(report)
        self._write_pictures(report)
        outputs = [(values[n].dtype, True) for n in segment.outputs]
        program = _Compiled(part, module, outputs, [], {}, "zip", None, _constants(module))
        return program, ""

    @staticmethod
    def _source(node: torch.fx.Node) -> str:
        """The Python expression dynamo read a placeholder from (`L['x']`), or its name."""
        arg = node.meta.get("grapharg")
        source = getattr(arg, "source", None)
        name = getattr(source, "name", None)
        if callable(name):
            name = name()
        return str(name) if name is not None else node.name

    @staticmethod
    def _example(node: torch.fx.Node, fake: Any) -> Any:
        """The real value dynamo recorded for a placeholder (its fake one if none)."""
        arg = node.meta.get("grapharg")
        example = getattr(arg, "example", None) if arg is not None else None
        if isinstance(example, torch.SymInt):
            return example.node.hint  # a size input: its value on this call
        return example if example is not None else fake

    def _export(
        self,
        gm: torch.fx.GraphModule,
        placeholders: list[torch.fx.Node],
        examples: list[Any],
        gears: dict[int, dict[int, list[int]]],
        symbolic: dict[int, set[int]] | None = None,
    ) -> torch.export.ExportedProgram:
        """Trace dynamo's graph to ATen with torch.export (see the module docstring).

        Under `dynamic=True` dynamo passes sizes as `SymInt` inputs beside the
        tensors; traced as plain ints they would bake the first call's sizes into
        the graph (a `reshape(s0, -1)` that is wrong for every other gear).  So the
        traced graph takes the tensors only and reads each size input from the
        tensor dim it stands for (`_sizes_from_tensors`); geared dims are exported dynamic within the
        gears' range (`Dim.AUTO`, so export finds which dims are equal), the other dims
        dynamo made symbolic (`dynamic=True`) dynamic without a range (one program for
        every size; `Dim.AUTO` again, so a dim the graph needs fixed stays fixed), and
        every other dim static.
        """
        tensors = [i for i, x in enumerate(examples) if isinstance(x, torch.Tensor)]
        traced = _sizes_from_tensors(gm, placeholders, examples)
        symbolic = symbolic or {}
        dynamic = [
            {d: torch.export.Dim.AUTO for d in symbolic.get(i, set())}
            | {
                d: torch.export.Dim.AUTO(min=min(g), max=max(g))
                for d, g in gears.get(i, {}).items()
            }
            or None
            for i in tensors
        ]
        try:
            with warnings.catch_warnings(), torch._guards.tracing(None):
                warnings.simplefilter("ignore")
                # Copies: export marks its inputs' dims, and dynamo guards on the real ones.
                copies = tuple(examples[i].detach().clone() for i in tensors)
                return torch.export.export(
                    traced,
                    copies,
                    dynamic_shapes=tuple(dynamic) if gears or symbolic else None,
                    strict=False,
                )
        except Exception as exc:  # torch's own error, e.g. gears that the graph cannot honour
            raise TorchairError(
                Diagnostic.of(
                    "error", TRACE_FAILED, _caller(), reason=(str(exc).splitlines() or [""])[0]
                )
            ) from None

    def _check_mode(self, module: ModuleOp | None) -> None:
        if module is not None:  # the builder's own check (the converter built it with it)
            check_mode(module, self.config)

    def _write_pictures(self, report: ScheduleReport) -> None:
        """`debug.schedule_report.path`: the graph's trace and HTML page, if it asks."""
        where = self.config.debug.schedule_report.path
        if where is None:
            return
        if report.run is None or report.run.result is None:  # a debugging aid: go on
            logger.warning("graph %d: no scheduled run to draw", report.graph_id)
            return
        path = Path(where)
        path.mkdir(parents=True, exist_ok=True)
        stem = f"schedule_graph_{report.graph_id}" + (
            f"_part_{report.part[0]}" if report.part is not None else ""
        )
        report.trace(str(path / f"{stem}.trace.json"))
        report.html(str(path / f"{stem}.html"))
        logger.info("graph %d: schedule trace and report in %s", report.graph_id, path)

    def _dump(self, graph_id: int, module: ModuleOp, text: str) -> None:
        dump = self.config.debug.graph_dump
        name = (
            f"dynamo_original_graph_{graph_id}_rank_{int(os.environ.get('RANK', '0'))}"
            f"_pid_{os.getpid()}_ts_{time.strftime('%Y%m%d%H%M%S')}{time.time_ns() % 10**6:06d}"
            f".{dump.type}"
        )
        path = Path(dump.path)
        path.mkdir(parents=True, exist_ok=True)
        try:
            text = (
                builder_script(module, f"concrete graph {graph_id}")
                if dump.type == "py"
                else graph_text(module, dump.type, f"graph_{graph_id}")
            )
        except DiagnosticError as exc:  # a debugging aid: say what it cannot write, go on
            logger.warning("graph %d not dumped: %s", graph_id, exc.diagnostic.render())
            return
        (path / name).write_text(text)
        logger.info("graph %d dumped to %s", graph_id, path / name)


def reports(compiled: Any) -> list[ScheduleReport]:
    """The schedule reports of a model compiled with `get_npu_backend` (or of the backend)."""
    backend = compiled
    if not isinstance(backend, NpuBackend):
        ctx = getattr(compiled, "dynamo_ctx", None)
        fn = getattr(ctx, "callback", None)
        from torch._dynamo.eval_frame import innermost_backend

        if fn is not None:
            fn = innermost_backend(fn)
            fn = getattr(fn, "compiler_fn", fn)
        backend = fn
    if not isinstance(backend, NpuBackend):
        raise TorchairError(Diagnostic.of("error", NOT_COMPILED, _caller()))
    return list(backend.reports)


def get_npu_backend(
    *,
    compiler_config: CompilerConfig | None = None,
    custom_decompositions: dict[Any, Callable[..., Any]] | None = None,
) -> NpuBackend:
    """TorchAir's `get_npu_backend`: a backend for `torch.compile(model, backend=...)`."""
    return NpuBackend(compiler_config, custom_decompositions)


__all__ = ["NpuBackend", "ScheduleReport", "gear", "get_npu_backend", "reports", "stream_budget"]
