"""`npuir-advise`: where to put `npu_stream_switch` and `limit_core_num`, and what it buys.

The library behind the tool:

    advice = advise(AdviseConfig(path="examples/seed_multistream.mlir"))
    print(advice.render())        # or advice.to_json()

It runs the program as the user annotated it, on one stream, and with `auto` (the user's
scopes ignored) -- each through the same runner `npuir-run` uses, simulated on the device --
and, when a variant deadlocks or `coreset-check` finds a hold-and-wait hazard, the same with
`coreset-partition` choosing core limits.  It reports each makespan next to the lower bound,
says why the user's version is slower or faster than one stream from the simulator's own
records (`npuir.backends.npu.explain`), and gives the fastest variant's annotation as edits
in TorchAir's terms, grouped by source location (a line range of the `.mlir` or Python file
an op came from, or the GE op names of a dump).

`--emit-mlir` writes that annotation back in source form -- `stream.switch` and
`coreset.limit` scopes, not the lowered IR -- so it can be read, edited and run: `npuir-run`
on the file reproduces the advised makespan (the advice checks that it does).
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import FileLineColLoc, ModuleOp, StringAttr, SymbolRefAttr
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue

from npuir.analysis.program import is_dispatcher, scheduled_functions
from npuir.api import print_ir
from npuir.backends.npu.explain import Explanation, compare, explain
from npuir.backends.npu.hardware import Hardware
from npuir.context import make_context
from npuir.diagnostics import DiagnosticError
from npuir.dialects import coreset, stream
from npuir.dialects.npu import OP_NAME, NpuOp
from npuir.driver.run import EXIT_DEADLOCK, RunConfig, RunOutcome, run_program
from npuir.frontends.load import Format, load, load_source, read
from npuir.passmanager.pipeline import build_pipeline, run_passes
from npuir.schedule.bounds import lower_bound_ns
from npuir.schedule.device import device_of
from npuir.transforms.coreset_check import HOLD_AND_WAIT

_TAIL = "coreset-lower,insert-events,coreset-check,sync-verify"
PIPELINES: dict[str, str] = {
    "one stream": f"gear-multiversion,stream-partition{{mode=single ignore-tags=true}},{_TAIL}",
    "auto": f"gear-multiversion,stream-partition{{mode=auto ignore-tags=true}},{_TAIL}",
}
"""The variants besides the user's own annotation (which runs `npuir-run`'s default)."""

WITH_LIMITS = {
    "as written + core limits": "gear-multiversion,stream-partition,coreset-partition," + _TAIL,
    "auto + core limits": (
        "gear-multiversion,stream-partition{mode=auto ignore-tags=true},coreset-partition," + _TAIL
    ),
}
"""Tried when a variant deadlocks or has a hold-and-wait hazard."""

# The part of each pipeline that decides the annotation (no lowering), for the source form.
_ANNOTATE = {
    "as written": "",
    "one stream": "stream-partition{mode=single ignore-tags=true}",
    "auto": "stream-partition{mode=auto ignore-tags=true}",
    "as written + core limits": "stream-partition,coreset-partition",
    "auto + core limits": "stream-partition{mode=auto ignore-tags=true},coreset-partition",
}


@dataclass
class AdviseConfig:
    """What `npuir-advise` was asked."""

    path: str
    hw: str | None = None
    entries: list[str] | None = None
    entry: str | None = None
    ranks: int | None = None
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict[str, tuple[int, ...]])
    emit_mlir: str | None = None


@dataclass
class Variant:
    """One way to run the program, and what the simulator said of it."""

    name: str
    pipeline: str | None
    makespan_ns: int | None
    deadlock: bool
    waits: int
    streams: int
    explanation: Explanation | None
    hazards: int

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "pipeline": self.pipeline,
            "makespan_ns": self.makespan_ns,
            "deadlock": self.deadlock,
            "waits": self.waits,
            "streams": self.streams,
            "hazards": self.hazards,
            "why": self.explanation.lines() if self.explanation else [],
        }


@dataclass(frozen=True)
class Edit:
    """One change to the user's source, in TorchAir's terms."""

    where: str
    """`file:line-line`, or GE op names."""
    action: str

    def __str__(self) -> str:
        return f"{self.where}: {self.action}"


@dataclass
class Advice:
    """Everything `npuir-advise` says."""

    variants: list[Variant]
    lower_bound_ns: int | None
    reasons: list[str]
    best: str
    edits: list[Edit]
    pipeline: str | None
    emitted: str | None = None
    reproduced_ns: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "variants": [v.to_json() for v in self.variants],
            "lower_bound_ns": self.lower_bound_ns,
            "why": self.reasons,
            "best": self.best,
            "edits": [{"where": e.where, "action": e.action} for e in self.edits],
            "npuir_run_pipeline": self.pipeline,
            "emitted_mlir": self.emitted,
            "emitted_makespan_ns": self.reproduced_ns,
        }

    def render(self) -> str:
        lines = ["variant                    makespan (µs)  waits  streams"]
        for v in self.variants:
            span = "deadlock" if v.deadlock else f"{(v.makespan_ns or 0) / 1000:.1f}"
            lines.append(f"{v.name:<26} {span:>13}  {v.waits:>5}  {v.streams:>7}")
        if self.lower_bound_ns is not None:
            lines.append(f"{'lower bound':<26} {self.lower_bound_ns / 1000:>13.1f}")
        lines.append("")
        lines.extend(f"why: {r}" for r in self.reasons)
        for v in self.variants:
            if v.explanation is not None and v.name in ("as written", self.best):
                lines.extend(f"  {v.name}: {line}" for line in v.explanation.lines())
        lines.append("")
        if self.edits:
            lines.append(f"recommended ({self.best}):")
            lines.extend(f"  {e}" for e in self.edits)
        else:
            lines.append(f"recommended: keep the program as it is ({self.best} is the fastest)")
        if self.pipeline:
            lines.append(f"or run it as: npuir-run FILE --pipeline '{self.pipeline}'")
        if self.emitted:
            reproduced = (
                f" (npuir-run on it: {self.reproduced_ns / 1000:.1f} µs)"
                if self.reproduced_ns is not None
                else ""
            )
            lines.append(f"annotated source written to {self.emitted}{reproduced}")
        return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Running the variants
# ---------------------------------------------------------------------------------------------


def _run(config: AdviseConfig, pipeline: str | None, source: str | None = None) -> RunOutcome:
    return run_program(
        RunConfig(
            path=config.path,
            source=source,
            pipeline=pipeline,
            entry=config.entry,
            entries=config.entries,
            # With --entries the rank count is theirs (npuir-run refuses a disagreeing --ranks).
            ranks=None if config.entries else config.ranks,
            hw=config.hw,
            shapes=dict(config.shapes),
            timing_only=True,
        )
    )


def _variant(name: str, pipeline: str | None, outcome: RunOutcome, hw: Hardware) -> Variant:
    result = outcome.result
    deadlock = outcome.status == EXIT_DEADLOCK
    hazards = sum(1 for w in outcome.warnings if w.kind == HOLD_AND_WAIT.code)
    if result is None:
        return Variant(name, pipeline, None, deadlock, 0, 0, None, hazards)
    streams = len({(r, s) for (r, s) in result.stream_busy_ns if r == 0})
    explanation = None if deadlock else explain(result, outcome.programs, hw)
    return Variant(
        name,
        pipeline,
        None if deadlock else result.makespan_ns,
        deadlock,
        result.waits_executed,
        streams,
        explanation,
        hazards,
    )


def _try(config: AdviseConfig, name: str, pipeline: str | None, hw: Hardware) -> Variant | None:
    """A variant, or None when its pipeline refuses the program (e.g. no hazard to fix)."""
    try:
        return _variant(name, pipeline, _run(config, pipeline), hw)
    except DiagnosticError:
        return None


def _key(v: Variant) -> tuple[bool, int, int]:
    return (v.deadlock, v.makespan_ns if v.makespan_ns is not None else 1 << 62, v.waits)


# ---------------------------------------------------------------------------------------------
# The annotation in source form, and as edits
# ---------------------------------------------------------------------------------------------


def _tag_of(op: Operation, tags: dict[str, str]) -> str | None:
    """The stream tag an op runs on (None: it does not say, e.g. a scope or the return)."""
    ref = op.attributes.get(stream.STREAM_ON)
    if isinstance(ref, SymbolRefAttr):
        return tags.get(ref.root_reference.data)
    if isinstance(op, coreset.LimitOp):
        inner = {_tag_of(o, tags) for o in op.body.block.ops if not isinstance(o, coreset.YieldOp)}
        return inner.pop() if len(inner) == 1 else None
    return None


def _wrap(ops: list[Operation], tag: str) -> None:
    """Put the consecutive `ops` in one `stream.switch TAG` scope; values used after it
    leave through `stream.yield`."""
    block = ops[0].parent_block()
    assert block is not None
    inside_all = {inner for op in ops for inner in op.walk()}
    escaping: list[SSAValue] = []
    for op in ops:
        for result in op.results:
            if any(use.operation not in inside_all for use in result.uses):
                escaping.append(result)
    body = Block()
    scope = stream.SwitchOp(tag, Region(body), [v.type for v in escaping])
    scope.location = ops[0].location
    block.insert_op_before(scope, ops[0])
    for value, new in zip(escaping, scope.results):
        for use in list(value.uses):
            if use.operation not in inside_all:
                use.operation.operands[use.index] = new
    for op in ops:
        op.detach()
        body.add_op(op)
    body.add_op(stream.YieldOp(*escaping))


def _scope_block(block: Block, tags: dict[str, str]) -> None:
    """Wrap each run of consecutive ops on one non-default stream in its scope."""
    run: list[Operation] = []
    run_tag: str | None = None

    def flush() -> None:
        if run and run_tag is not None and run_tag != stream.DEFAULT_TAG:
            _wrap(list(run), run_tag)
        run.clear()

    for op in list(block.ops):
        if isinstance(op, ReturnOp | coreset.YieldOp):
            flush()
            run_tag = None
            continue
        tag = _tag_of(op, tags)
        if tag is None and isinstance(op, coreset.LimitOp):
            flush()
            run_tag = None
            _scope_block(op.body.block, tags)
            continue
        if tag != run_tag:
            flush()
            run_tag = tag
        run.append(op)
    flush()


def _isolate_waits(func: FuncOp) -> None:
    """Keep each `stream.wait_tensor` meaning only what it meant when partitioned.

    Partitioning already pointed every use the wait orders at its result; in source form a
    wait also orders the later *direct* uses of its tensor in its block.  Where such a use
    exists (the schedule moved ops around the wait), the wait gets a scope of its own, in
    which nothing follows it."""
    for wait in [op for op in func.body.walk() if isinstance(op, stream.WaitTensorOp)]:
        later: set[Operation] = set()
        op = wait.next_op
        while op is not None:
            later.update(op.walk())
            op = op.next_op
        if any(use.operation in later for use in wait.tensor.uses):
            parent = wait.parent_op()
            tag = parent.tag_name if isinstance(parent, stream.SwitchOp) else stream.DEFAULT_TAG
            _wrap([wait], tag)


def source_form(module: ModuleOp) -> None:
    """Turn a partitioned (not yet lowered) module back into the user-level form: each run of
    ops on a non-default stream in a `stream.switch` of its tag, no `stream.on`, no
    `stream.decl`."""
    tags = {d.symbol: d.tag.data for d in module.ops if isinstance(d, stream.DeclOp)}
    for func in scheduled_functions(module):
        _scope_block(func.body.block, tags)
        _isolate_waits(func)
    for op in list(module.walk()):
        op.attributes.pop(stream.STREAM_ON, None)
        if isinstance(op, stream.DeclOp):
            op.detach()


def _where(op: Operation) -> tuple[str, int, str | None]:
    loc = op.location
    name = op.attributes.get(OP_NAME)
    ge_name = name.data if isinstance(name, StringAttr) else None
    if isinstance(loc, FileLineColLoc):
        return loc.filename.data, loc.line.data, ge_name
    return "<unknown>", 0, ge_name


def _span(ops: Sequence[Operation]) -> str:
    places = [_where(o) for o in ops]
    named = [n for _, _, n in places if n]
    files = {f for f, _, _ in places}
    if (
        named
        and len(named) == len(places)
        and files
        and next(iter(files)).endswith((".txt", ".pbtxt"))
    ):
        return (
            ", ".join(named)
            if len(named) <= 4
            else f"{named[0]} ... {named[-1]} ({len(named)} ops)"
        )
    lines = sorted(line for _, line, _ in places)
    file = places[0][0]
    return f"{file}:{lines[0]}" if lines[0] == lines[-1] else f"{file}:{lines[0]}-{lines[-1]}"


def _scopes(
    module: ModuleOp, hw: Hardware
) -> dict[tuple[object, ...], tuple[str, list[Operation]]]:
    """Each scope of the module's functions as TorchAir would write it: a key that names what
    it is and which ops (by source location) it covers, the edit's wording, and its ops."""
    out: dict[tuple[object, ...], tuple[str, list[Operation]]] = {}
    for func in scheduled_functions(module):
        for op in func.body.walk():
            if isinstance(op, stream.SwitchOp | coreset.LimitOp):
                body = [o for o in op.body.walk() if isinstance(o, NpuOp)]
                if not body:
                    continue
                covered = tuple(sorted(_where(o) for o in body))
                if isinstance(op, stream.SwitchOp):
                    if op.tag_name == stream.DEFAULT_TAG:
                        continue
                    what = f'torchair.scope.npu_stream_switch("{op.tag_name}")'
                    key: tuple[object, ...] = ("stream", op.tag_name, covered)
                else:
                    cube = op.count("cube")
                    vector = op.count("vector")
                    what = (
                        "torchair.scope.limit_core_num("
                        f"{cube if cube is not None else hw.cube_cores}, "
                        f"{vector if vector is not None else hw.vector_cores})"
                    )
                    key = ("limit", cube, vector, covered)
                out[key] = (what, body)
            elif isinstance(op, coreset.StreamLimitOp):
                counts = ", ".join(
                    f"{c} {e}" for e in ("cube", "vector") if (c := op.count(e)) is not None
                )
                what = f'a limit of {counts} cores on stream "{op.tag.data}" (set_stream_limit)'

                out[("stream_limit", op.tag.data, op.count("cube"), op.count("vector"))] = (
                    what,
                    [op],
                )
    return out


def edits_of(annotated: ModuleOp, original: ModuleOp, hw: Hardware) -> list[Edit]:
    """What turns the original's scopes into the annotated module's, as TorchAir edits:
    the scopes to remove, then the ones to add, each by source location."""
    before, after = _scopes(original, hw), _scopes(annotated, hw)
    out = [
        Edit(_span(ops), f"remove {what}") for k, (what, ops) in before.items() if k not in after
    ]
    for key, (what, ops) in after.items():
        if key in before:
            continue
        verb = "add" if key[0] == "stream_limit" else "wrap in"
        out.append(Edit(_span(ops), f"{verb} {what}"))
    return out


def _annotated(config: AdviseConfig, name: str) -> ModuleOp:
    # Remarks from lowering a variant are not advice: kept (and dropped) with the context.
    ctx = make_context(collect_diagnostics=True)
    module = load(config.path, ctx)
    spec = _ANNOTATE[name]
    if spec:
        run_passes(ctx, module, build_pipeline(spec))
        source_form(module)
    return module


# ---------------------------------------------------------------------------------------------
# The advice
# ---------------------------------------------------------------------------------------------


def advise(config: AdviseConfig, write: Any = None) -> Advice:
    """Run every variant and say which annotation to use (see the module docstring).

    `write(path, text)` writes `--emit-mlir` (default: the shared output writer).  A
    `torch.export` archive (`.pt2`, needs `npuir[torch]`) is imported first, keeping each
    op's model line, so the edits name the model's own source lines."""
    source = read(config.path)
    if source.format is not Format.MLIR:
        # Imported once, keeping every op's location in the model or the dump; the
        # variants then re-read the IR.
        with tempfile.TemporaryDirectory(prefix="npuir-advise-") as scratch:
            imported = Path(scratch) / (Path(config.path).stem + ".mlir")
            imported.write_text(print_ir(load_source(source), debuginfo=True))
            return advise(dataclasses.replace(config, path=str(imported)), write)
    module = load(config.path)
    hw = device_of(module, config.hw)
    variants: list[Variant] = []
    written = _variant("as written", None, _run(config, None), hw)
    variants.append(written)
    for name, pipeline in PIPELINES.items():
        v = _try(config, name, pipeline, hw)
        if v is not None:
            variants.append(v)
    if any(v.deadlock or v.hazards for v in variants):
        for name, pipeline in WITH_LIMITS.items():
            v = _try(config, name, pipeline, hw)
            if v is not None:
                variants.append(v)
    by_name = {v.name: v for v in variants}
    best = min(variants, key=_key)
    reasons: list[str] = []
    single = by_name.get("one stream")
    if written.deadlock:
        reasons.append(
            "your annotation deadlocks: an op that must hold all the cores it asks for waits "
            "for cores a collective holds while that collective waits for its peer "
            "(npuir-run shows the cycle)"
        )
    if single is not None and single.explanation is not None:
        if written.explanation is not None:
            reasons.append(
                compare(written.explanation, single.explanation, "your annotation", "one stream")
            )
        if best.explanation is not None and best.name != "as written":
            reasons.append(compare(best.explanation, single.explanation, best.name, "one stream"))
    elif single is not None and single.deadlock:
        reasons.append(
            "one stream deadlocks too (the ranks issue their collectives in another order)"
        )
    annotated = _annotated(config, best.name)
    edits = edits_of(annotated, module, hw)
    if written.deadlock:
        fixed = [v for v in variants if "core limits" in v.name and not v.deadlock]
        if fixed:
            limits = edits_of(_annotated(config, fixed[0].name), module, hw)
            named = "; ".join(str(e) for e in limits if "limit" in e.action) or "its core limits"
            reasons.append(f"'{fixed[0].name}' removes the deadlock: {named}")
    advice = Advice(
        variants,
        _lower_bound(config, hw),
        reasons,
        best.name,
        edits,
        best.pipeline if best.name != "as written" else None,
    )
    if config.emit_mlir is not None:
        text = print_ir(annotated)
        if write is None:
            Path(config.emit_mlir).write_text(text, encoding="utf-8")
        else:
            write(config.emit_mlir, text)
        advice.emitted = config.emit_mlir
        rerun = _run(config, None, source=text)
        advice.reproduced_ns = None if rerun.result is None else rerun.result.makespan_ns
    return advice


def _lower_bound(config: AdviseConfig, hw: Hardware) -> int | None:
    """`npuir.schedule.bounds.lower_bound_ns` of the entry function (rank 0's)."""
    module = load(config.path)
    funcs = [f for f in module.ops if isinstance(f, FuncOp) and not is_dispatcher(f)]
    if not funcs:
        return None
    name = config.entry or (config.entries[0] if config.entries else None)
    func = next((f for f in funcs if f.sym_name.data == name), funcs[0])
    try:
        return lower_bound_ns(func, hw)
    except DiagnosticError:
        return None
