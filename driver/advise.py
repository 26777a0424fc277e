"""`npuir-advise`: where to put `npu_stream_switch` and `limit_core_num`, and what it buys.

The library behind the tool:

    advice = advise(AdviseConfig(path="examples/seed_multistream.mlir"))
    print(advice.render())        # or advice.to_json()

**Rows.**  For each case -- the program's input shapes, or each gear of a geared program --
the program is lowered and simulated as `npuir-run` would, in the variants a TorchAir user
knows: as written; without the scopes (what GE does with an unannotated graph, `mode=ge`);
without the scopes and with `config.ge_config.enable_single_stream = True`; GE's automatic
multi-stream (`ge.autoMultistreamParallelMode`, `mode=minidag`); npuir's advice; npuir's
unconstrained `auto`, the pass row (`npuir.torchair.auto_streams`); and the lower bound
(`npuir.schedule.bounds`).  A geared program's pass row is what the pass gives it: one FX
graph serves every gear, so the pass writes one schedule, the gear's `auto` schedule with the
least sum over the gears, and the row is that schedule run in each gear (`OneSchedule`);
each gear's own `auto` is in the per-gear advice.

**The advice is structured.**  A user writes `with` blocks, so the advice's assignment is
one that `with` blocks can say (`--granularity`):

- `line` (default): the ops one source line creates stay on one stream, and so do the ops
  the same line creates in repeated calls (the layers of a model), unless the user's own
  scopes already put them on different streams;
- `scope`: only the user's own `with` blocks move (each kept, removed, or given another tag);
- `op`: no constraint -- the advice is `auto`'s.

The structured search judges assignments with the simulator the `auto` search uses
(`npuir.schedule.auto.Judge`): it starts from the user's annotation, one stream, and the
streams of `ge`, `nimble`, `minidag` and `auto` projected onto the units above (each unit
takes the stream most of its work is on), then moves one unit at a time along the critical
path while the makespan drops.  A geared program gets one annotation for all its gears, the
one with the least weighted sum of the gears' makespans (`gear_weights`, equal by default).
When the best structured variant is within 2% of the user's annotation, or gains less than
the launches of the streams it adds, the edits row is the annotation as written (no edits).

**The recommendation** (`recommend`) is the row -- each one an option the user has, said as
they would apply it (`OPTIONS`) -- with the least (weighted) makespan among those that run
and fit `--mem-budget`, with its planned peak against the annotation as written; a tie goes
to the least work.  So the annotation is kept only when no option is faster.  A variant that
deadlocks or has a hold-and-wait hazard gets its core limits from `coreset-partition`, said
as `limit_core_num` around the lines of the ops it limits.

**Edits** are in the source's own terms: each scope remembers where its `with` is (the
`stream.switch` op's location, which the torch route takes from the `air::scope_enter`
node's stack trace and the builder from its Python line), so "remove" and "change the tag"
name that line; new scopes name the statements to wrap (for a Python file, whole statements
found with `ast`); a GE dump's edits name its op names and attributes.  `apply_edits`
applies the edits to a Python source, as a user would by hand.  No edit adds an
`npu_wait_tensor`: every cross-stream data dependency gets its event without one, and the
user's waits stay where they are -- a wait in a removed scope then orders every later use of
its tensor in the enclosing block, which the search judges (`Target.variant`), so the
advised makespan is the edited program's.

`--emit-mlir` writes the advised annotation back in source form (`stream.switch`,
`coreset.limit`); the advice's own row is `npuir-run` on exactly that text.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib.util
import math
import os
import re
import sysconfig
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import (
    ArrayAttr,
    FileLineColLoc,
    IntAttr,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region, SSAValue

from npuir.analysis.core_limits import CoreLimits, limit_fn
from npuir.analysis.mem_planners import argument_bytes, parse_budget
from npuir.analysis.partition import STRATEGIES, Assignment, Mode, assign, permuted
from npuir.analysis.program import DEFAULT_STREAM, NodeKind, Program, StreamInfo, build_program
from npuir.api import print_ir
from npuir.backends.npu import timing
from npuir.backends.npu.estimates import estimated_ops
from npuir.backends.npu.explain import Explanation, compare, explain
from npuir.backends.npu.hardware import Hardware
from npuir.backends.npu.memory import program_memory
from npuir.backends.npu.numerics import NumericsError, resolve_entry
from npuir.context import make_context
from npuir.deep_stack import on_deep_stack
from npuir.diagnostics import (
    Diagnostic,
    DiagnosticError,
    Kind,
    SourceLocation,
    UsageError,
    diagnostic_json,
    error,
)
from npuir.dialects import coreset, stream
from npuir.dialects.npu import OP_NAME, NpuOp
from npuir.dialects.scope import ScopeOp, walk_nested
from npuir.dialects.stream import bind_later_uses
from npuir.driver.gear_cases import gear_cases
from npuir.driver.identical import share_identical
from npuir.driver.mem_tradeoff import Point, memory_tradeoff
from npuir.driver.run import (
    NO_GEAR,
    RunConfig,
    Timed,
    entries_and_shapes,
    entry_names,
    time_program,
    timing_function,
)
from npuir.executor import Executor, parse_jobs, using
from npuir.frontends.load import Format, load_source, read, source_of_text
from npuir.passmanager.pipeline import build_pipeline, run_passes
from npuir.schedule.auto import Judge, cost_strategies, shared_searches
from npuir.schedule.bounds import lower_bound_ns
from npuir.schedule.device import device_of
from npuir.transforms.coreset_check import HOLD_AND_WAIT
from npuir.transforms.stream_source_form import HOIST, WANT, escaping, hoist, hoisted_order, wrap

TAIL = "coreset-lower,insert-events,coreset-check,sync-verify"
GRANULARITIES = ("line", "scope", "op")
KEEP_WITHIN = 0.02
"""The advice keeps the user's annotation when its best variant is within this fraction."""
SEARCH_OPS, SEARCH_MIN, SEARCH_MAX = 30_000, 16, 120
"""The structured search's trials: about SEARCH_OPS simulated ops, within these bounds
(a fixed count, not a clock, so that the advice is deterministic)."""
EDIT_COST = 1e-3
"""What one edit weighs in the search's objective (ns): only a tie-breaker."""
MAX_STREAMS = 8
"""Streams the structured search may use, the default one included (stream-partition's cap)."""
SIMPLIFY_WITHIN = 0.01
"""What the advice may give up, in all, for fewer edits (a fraction of its makespan)."""


STREAM_PER_LAYER = Kind(
    "advise.stream-per-layer",
    "this npu_stream_switch opens a stream of its own in each of its {copies} copies (tags "
    "{tags}), and one shared stream serves: {shared_us} µs with one tag against {written_us} "
    "µs as written; give every copy the same tag",
)
"""A warning at a `with` line (one scope site) whose copies -- the layers of a model calling
the same code -- each have a tag of their own, when giving them all one tag is no slower:
streams are a device budget, and a side stream per layer is a known trap (prefill throughput
down from 4.11 to 1.2 in the report issue 36 cites, restored by sharing one stream).
Arguments: `copies`, `tags` (the tags, comma-separated), `shared_us`, `written_us`."""


def _ignoring(mode: str) -> str:
    return f"gear-multiversion,stream-partition{{mode={mode} ignore-tags=true}},{TAIL}"


PASS_ATTRIBUTE = "post_grad_custom_pre_pass"
"""TorchAir's `CompilerConfig` attribute for a custom FX pass run on the graph after AOT
autograd, before TorchAir's own passes (Ascend/torchair `python/torchair/configs/
compiler_config.py`, run by `_optimize_fx` in `python/torchair/npu_fx_compiler.py`); TorchAir's
own example of a multi-stream pass sets it (`docs/zh/ascend_ir/features/basic/
post_grad_custom_pass.md`)."""
PASS_CALL = f"config.{PASS_ATTRIBUTE} = npuir.torchair.auto_streams()"
"""The pass row, as a TorchAir user writes it."""
GE_AUTO_OPTION = "ge.autoMultistreamParallelMode"
"""GE's option for its automatic multi-stream: TorchAir's `CompilerConfig` has no field for
it (`ge_config` and `experimental_config` in Ascend/torchair `python/torchair/configs/`
write no such key), so the row names GE's own option and npuir's spelling of it."""
GE_AUTO_FIELD = "config.ge_config.auto_multistream_parallel_mode"
"""npuir's `CompilerConfig` field for `GE_AUTO_OPTION` (the name Ascend's TensorFlow adapter
gives it); npuir's backend honours it (`npuir.frontends.torchair.configs.compiler_config`)."""


@dataclass(frozen=True)
class Baseline:
    """A variant npuir-advise times, in npuir's and in TorchAir's terms.

    `option` is what the user does to get it (`OPTIONS`); `torchair` says how, in the
    words a TorchAir user acts on."""

    name: str
    torchair: str
    pipeline: str | None
    option: str = "keep"


OPTIONS = ("keep", "remove", "single-stream", "ge-auto", "pass", "edits")
"""The user's options, least work first (the order that breaks a tie between rows of the
same makespan): change nothing, delete the scopes, one config switch, one GE option, one
config line naming npuir's pass, edits to the model's source."""

AS_WRITTEN = Baseline("as written", "keep your annotation: change nothing", None, "keep")
BEFORE = (
    AS_WRITTEN,
    Baseline(
        "no annotation",
        "remove your npu_stream_switch scopes: GE's own streams",
        _ignoring("ge"),
        "remove",
    ),
    Baseline(
        "single stream",
        "remove your scopes and set config.ge_config.enable_single_stream = True",
        _ignoring("single"),
        "single-stream",
    ),
    Baseline(
        "GE auto multi-stream",
        f"remove your scopes and switch on GE's automatic multi-stream: "
        f'{GE_AUTO_FIELD} = "LoadBalance" in npuir (GE\'s option {GE_AUTO_OPTION}; '
        "TorchAir's CompilerConfig has no field for it)",
        _ignoring("minidag"),
        "ge-auto",
    ),
)
AUTO_PARTITION = "stream-partition{mode=auto ignore-tags=true limits=true}"
AUTO_PIPELINE = f"gear-multiversion,{AUTO_PARTITION},{TAIL}"
AUTO = Baseline(
    "auto (per op)",
    f"{PASS_CALL}: npuir's auto schedule (streams, issue order, core limits) written into "
    "the graph by a TorchAir custom pass, no model edit",
    AUTO_PIPELINE,
    "pass",
)


def _auto_under(budget: str) -> Baseline:
    """The pass row under a memory budget: `auto` keeping the fastest schedule whose plan
    fits (`auto_streams(memory_budget=...)`)."""
    return Baseline(
        AUTO.name,
        f"config.{PASS_ATTRIBUTE} = npuir.torchair.auto_streams(memory_budget={budget!r}): "
        "npuir's auto schedule within the budget, written into the graph by a TorchAir custom "
        "pass, no model edit",
        f"gear-multiversion,stream-partition{{mode=auto ignore-tags=true mem-budget={budget}}},"
        f"{TAIL}",
        "pass",
    )


LIMITS_PIPELINE = f"gear-multiversion,stream-partition,coreset-partition,{TAIL}"


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
    granularity: str = "line"
    gear_weights: list[float] | None = None
    jobs: str = "1"
    """Where the independent work runs (`--jobs`: `npuir.executor.parse_jobs`)."""
    mem_budget: str | None = None
    """The planned peak the recommendation must fit (as `npuir-run --mem-budget` takes it:
    bytes, `64MiB`, or `hbm`); the pass row is then `auto` under it."""
    edit_files: list[str] | None = None
    """Globs of the files edits may name (default: every file outside installed packages,
    `owned_file`)."""


@dataclass
class Variant:
    """One way to run the program in one case, and what the simulator said of it."""

    name: str
    torchair: str
    pipeline: str | None
    case: str | None
    makespan_ns: int | None
    deadlock: bool
    waits: int
    streams: int
    explanation: Explanation | None
    hazards: int
    peak_bytes: int | None = None
    """The memory plan's peak (the largest rank's), as `npuir-run` reports it."""
    option: str = "keep"
    """What the user does to get this row (one of `OPTIONS`)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "option": self.option,
            "torchair": self.torchair,
            "pipeline": self.pipeline,
            "case": self.case,
            "makespan_ns": self.makespan_ns,
            "deadlock": self.deadlock,
            "waits": self.waits,
            "streams": self.streams,
            "hazards": self.hazards,
            "peak_bytes": self.peak_bytes,
            "why": self.explanation.lines() if self.explanation else [],
        }


IMPORT = "import npuir.torchair as torchair"
"""What an edited Python file needs to name `torchair.scope` (TorchAir's `import torchair`
on an NPU machine)."""


@dataclass(frozen=True)
class Edit:
    """One change to the user's source, in its own terms (`source`: "python", "mlir" or
    "dump").

    `kind` is `add-import` (Python only: `IMPORT` goes before `first_line`, for the other
    edits to the file that write `torchair.`), `remove-scope` (the scope whose `with` / `stream.switch` is on `first_line`
    goes, its body stays, dedented, up to `last_line`), `retag-scope` (that scope's tag
    becomes `tag`), `add-stream-scope` or `add-limit-scope` (a new scope around lines
    `first_line`-`last_line`), `hoist-call` (Python only: the call `expr` on `first_line`
    becomes a statement of its own, `name = expr`, just before the line -- in a new
    `npu_stream_switch(tag)` when `tag` is set -- and `name` takes its place on the line);
    for a GE dump, the same said of the named ops' attributes.
    `write` is the text to write (the removed one for `remove-scope`), `torchair` the
    TorchAir statement it stands for."""

    kind: str
    file: str
    first_line: int
    last_line: int
    source: str = "python"
    tag: str | None = None
    counts: tuple[int, int] | None = None
    ops: tuple[str, ...] = ()
    expr: str | None = None
    """`hoist-call`: the call taken out of its line (the text on the line)."""
    name: str | None = None
    """`hoist-call`: the variable that holds its value, in its place on the line."""
    column: int = 0
    """`hoist-call`: where the call starts on its line (0-based)."""

    @property
    def torchair(self) -> str:
        """The TorchAir statement the edit writes (or removes)."""
        if self.kind == "add-import":
            return "import torchair"
        if self.kind == "add-limit-scope":
            assert self.counts is not None
            return f"with torchair.scope.limit_core_num({self.counts[0]}, {self.counts[1]}):"
        return f'with torchair.scope.npu_stream_switch("{self.tag}"):'

    @property
    def write(self) -> str:
        """The text to write, in the source's own terms."""
        if self.kind == "hoist-call":
            return f"{self.name} = {self.expr}"
        if self.kind == "add-import":
            return IMPORT
        if self.source == "python":
            return self.torchair
        if self.source == "dump":
            if self.kind == "add-limit-scope":
                assert self.counts is not None
                return (
                    f'_op_aicore_num = "{self.counts[0]}", _op_vectorcore_num = "{self.counts[1]}"'
                )
            return f'_user_stream_label = "{self.tag}"'
        if self.kind == "add-limit-scope":
            assert self.counts is not None
            return f"coreset.limit cube {self.counts[0]} vector {self.counts[1]}"
        return f'stream.switch "{self.tag}"'

    @property
    def where(self) -> str:
        """`file:line[-line]`, or a dump's op names."""
        if self.source == "dump" and self.ops:
            names = self.ops
            return (
                ", ".join(names)
                if len(names) <= 4
                else f"{names[0]} ... {names[-1]} ({len(names)} ops)"
            )
        span = (
            f"{self.first_line}"
            if self.first_line == self.last_line
            else f"{self.first_line}-{self.last_line}"
        )
        return f"{self.file}:{span}"

    @property
    def action(self) -> str:
        """What to do there, in words."""
        if self.kind == "hoist-call":
            where = f" in `{self.torchair}`" if self.tag is not None else ""
            return (
                f"take `{self.expr}` out of the line: write `{self.write}` just before it"
                f"{where}, and `{self.name}` in its place"
            )
        if self.kind == "add-import":
            return (
                f"add `{self.write}` before this line (under TorchAir: `{self.torchair}`): "
                "the other edits to this file use it"
            )
        if self.source == "python":
            if self.kind == "remove-scope":
                return f"remove `{self.write}` (and dedent its body)"
            if self.kind == "retag-scope":
                return f"change it to `{self.write}`"
            return f"wrap in `{self.write}`"
        if self.source == "dump":
            if self.kind == "remove-scope":
                return f"delete {self.write} (TorchAir: remove `{self.torchair}`)"
            return f"set {self.write} (TorchAir: `{self.torchair}`)"
        if self.kind == "remove-scope":
            return f"remove the `{self.write}` scope, keeping its ops (TorchAir: remove `{self.torchair}`)"
        if self.kind == "retag-scope":
            return f'give the scope the tag "{self.tag}" (TorchAir: `{self.torchair}`)'
        return f"wrap in `{self.write}` (TorchAir: `{self.torchair}`)"

    def __str__(self) -> str:
        return f"{self.where}: {self.action}"

    def to_json(self) -> dict[str, Any]:
        return {
            "where": self.where,
            "action": self.action,
            "kind": self.kind,
            "source": self.source,
            "file": self.file,
            "first_line": self.first_line,
            "last_line": self.last_line,
            "write": self.write,
            "torchair": self.torchair,
            "ops": list(self.ops),
            "tag": self.tag,
            "counts": list(self.counts) if self.counts else None,
            "expr": self.expr,
            "name": self.name,
            "text": str(self),
        }


def _mib(n: int) -> str:
    """A byte count as a person reads it (MiB, KiB or bytes, by size)."""
    if n >= 1 << 20:
        return f"{n / (1 << 20):.2f} MiB"
    if n >= 1 << 10:
        return f"{n / (1 << 10):.2f} KiB"
    return f"{n} bytes"


def _us(ns: float) -> str:
    return f"{ns / 1000:.1f} µs"


@dataclass
class Recommendation:
    """The option `npuir-advise` recommends: the row with the least (weighted) makespan
    among those that run (no deadlock, no hold-and-wait hazard) in every case and whose
    planned peak fits the memory budget, if one is given; a tie goes to the least work
    (`OPTIONS`' order)."""

    row: str
    option: str
    apply: str
    weighted_ns: float
    """The weighted sum of the row's makespans over the cases (the makespan for one)."""
    written_ns: float | None
    """The same for the annotation as written (None when it does not run)."""
    peak_bytes: int | None
    """The row's planned peak, the largest over the cases."""
    written_peak_bytes: int | None
    budget_bytes: int | None
    fits: bool
    """False only when no row fits the budget: the row is then the one with the least peak."""
    per_case: dict[str | None, tuple[str, int]] = field(
        default_factory=dict[str | None, tuple[str, int]]
    )
    """For a geared program: each gear's best row (by the same rule) and its makespan."""
    shared_ns: float | None = None
    """For a geared program: the weighted makespan of one shared annotation (the edits row)."""
    shared_per_case: dict[str | None, int] = field(default_factory=dict[str | None, int])
    """For a geared program: each gear's makespan under that one shared annotation, beside
    its own best (`per_case`)."""

    @property
    def peak_delta_bytes(self) -> int | None:
        """The row's peak less the annotation as written's."""
        if self.peak_bytes is None or self.written_peak_bytes is None:
            return None
        return self.peak_bytes - self.written_peak_bytes

    def memory(self) -> str:
        """What the recommendation costs in planned peak memory against the annotation as
        written."""
        if self.peak_bytes is None:
            return "its peak memory is unknown"
        here = f"peak memory {_mib(self.peak_bytes)}"
        delta = self.peak_delta_bytes
        if delta is None or self.written_peak_bytes is None:
            return here
        if delta == 0:
            return f"{here}, the same as your annotation as written"
        share = f" ({delta / self.written_peak_bytes:+.0%})" if self.written_peak_bytes > 0 else ""
        sign = "+" if delta > 0 else "-"
        return (
            f"{here}, {sign}{_mib(abs(delta))}{share} against your annotation as written "
            f"({_mib(self.written_peak_bytes)})"
        )

    def lines(self, cases: list[str | None], weights: dict[str | None, float]) -> list[str]:
        head = (
            "recommended: keep your annotation"
            if self.option == "keep"
            else f"recommended ({self.row}): {self.apply}"
        )
        out = [head]
        span = "weighted makespan" if len(cases) > 1 else "makespan"
        timing = f"{span} {_us(self.weighted_ns)}"
        if self.written_ns is not None and self.option != "keep":
            delta = self.written_ns - self.weighted_ns
            timing += f", {_us(abs(delta))} {'less' if delta >= 0 else 'more'} than your annotation"
        out.append(f"  {timing}; {self.memory()}")
        if self.budget_bytes is not None:
            out.append(
                f"  within the memory budget of {_mib(self.budget_bytes)}"
                if self.fits
                else f"  no option fits the memory budget of {_mib(self.budget_bytes)}: this "
                "is the one with the smallest peak"
            )
        if len(cases) > 1 and self.per_case:
            out.extend(self._per_gear(cases, weights))
        return out

    def _per_gear(self, cases: list[str | None], weights: dict[str | None, float]) -> list[str]:
        """Which gear gets which option, and what one shared annotation costs each gear."""
        out = ["  per gear, the best option (and one shared annotation, the edits row):"]
        for case in cases:
            if case not in self.per_case:
                continue
            row, ns = self.per_case[case]
            line = f"    {case}: {row}, {_us(ns)}"
            shared = self.shared_per_case.get(case)
            if shared is not None:
                line += f"; shared annotation {_us(shared)} ({_us(shared - ns)} more)"
            out.append(line)
        best_each = sum(weights.get(c, 1.0) * ns for c, (_, ns) in self.per_case.items())
        out.append(f"  each gear with its best option: weighted {_us(best_each)}")
        if self.shared_ns is not None:
            out.append(
                f"  one shared annotation for every gear (the edits row): weighted "
                f"{_us(self.shared_ns)}, {_us(max(0.0, self.shared_ns - best_each))} more"
            )
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "row": self.row,
            "option": self.option,
            "apply": self.apply,
            "weighted_ns": self.weighted_ns,
            "written_ns": self.written_ns,
            "peak_bytes": self.peak_bytes,
            "written_peak_bytes": self.written_peak_bytes,
            "peak_delta_bytes": self.peak_delta_bytes,
            "memory": self.memory(),
            "budget_bytes": self.budget_bytes,
            "fits": self.fits,
            "per_case": [
                {
                    "case": c,
                    "row": row,
                    "makespan_ns": ns,
                    "shared_ns": self.shared_per_case.get(c),
                }
                for c, (row, ns) in self.per_case.items()
            ],
            "shared_ns": self.shared_ns,
        }


def _runs(v: Variant) -> bool:
    """Whether a row is an option at all: it ran, without deadlock or hazard."""
    return v.makespan_ns is not None and not v.deadlock and v.hazards == 0


def recommend(
    variants: Sequence[Variant],
    weights: dict[str | None, float],
    budget_bytes: int | None = None,
    shared: str | None = None,
    per_gear: Sequence[Variant] = (),
) -> Recommendation | None:
    """The best row of `variants` (see `Recommendation`); None when no row runs in every
    case.  `shared` names the row of one shared annotation (for a geared program's
    comparison); `per_gear` are options for a gear on its own, not rows (each gear's own
    `auto` schedule, which one graph for every gear cannot carry), that the per-gear
    advice weighs too."""
    cases = list(dict.fromkeys(v.case for v in variants))
    rows: dict[str, dict[str | None, Variant]] = {}
    for v in variants:
        rows.setdefault(v.name, {})[v.case] = v
    complete = {
        name: per for name, per in rows.items() if all(c in per and _runs(per[c]) for c in cases)
    }

    def weighted(per: dict[str | None, Variant]) -> float:
        return sum(weights.get(c, 1.0) * (per[c].makespan_ns or 0) for c in cases)

    def peak(per: dict[str | None, Variant]) -> int | None:
        peaks = [per[c].peak_bytes for c in cases]
        return None if any(p is None for p in peaks) else max(p for p in peaks if p is not None)

    def effort(name: str) -> int:
        option = next(iter(rows[name].values())).option
        return OPTIONS.index(option) if option in OPTIONS else len(OPTIONS)

    def fits(per: dict[str | None, Variant]) -> bool:
        p = peak(per)
        return budget_bytes is None or (p is not None and p <= budget_bytes)

    if not complete:
        return None
    fitting = [n for n, per in complete.items() if fits(per)]
    if fitting:
        name = min(fitting, key=lambda n: (weighted(complete[n]), effort(n)))
    else:
        name = min(
            complete,
            key=lambda n: (peak(complete[n]) or 0, weighted(complete[n]), effort(n)),
        )
    per = complete[name]
    first = next(iter(per.values()))
    written = rows.get(AS_WRITTEN.name)
    written_ok = written is not None and all(c in written and _runs(written[c]) for c in cases)
    per_case: dict[str | None, tuple[str, int]] = {}
    if len(cases) > 1:
        for v in per_gear:
            rows.setdefault(v.name, {})[v.case] = v
        for case in cases:
            options = [
                n
                for n, p in rows.items()
                if case in p
                and _runs(p[case])
                and (budget_bytes is None or (p[case].peak_bytes or 0) <= budget_bytes)
            ]
            if options:
                best = min(options, key=lambda n: (rows[n][case].makespan_ns or 0, effort(n)))
                per_case[case] = (best, rows[best][case].makespan_ns or 0)
    shared_ns = weighted(complete[shared]) if len(cases) > 1 and shared in complete else None
    shared_per_case = (
        {c: v.makespan_ns or 0 for c, v in complete[shared].items()}
        if shared_ns is not None and shared is not None
        else {}
    )
    return Recommendation(
        name,
        first.option,
        first.torchair,
        weighted(per),
        weighted(written) if written is not None and written_ok else None,
        peak(per),
        peak(written) if written is not None and all(c in written for c in cases) else None,
        budget_bytes,
        bool(fitting),
        per_case,
        shared_ns,
        shared_per_case,
    )


@dataclass
class Advice:
    """Everything `npuir-advise` says."""

    variants: list[Variant]
    lower_bounds: dict[str | None, int | None]
    reasons: list[str]
    best: str
    edits: list[Edit]
    keep: bool
    granularity: str
    weights: dict[str | None, float]
    emitted: str | None = None
    source: str = ""
    """The advised annotation in source form (what `--emit-mlir` writes)."""
    memory_pareto: list[Point] = field(default_factory=list[Point])
    """Makespan against planned peak: the Pareto points `auto`'s budgeted search found
    (`npuir.driver.mem_tradeoff`), fastest first."""
    warnings: list[Diagnostic] = field(default_factory=list[Diagnostic])
    """What importing the input warned about (a `.pt2`'s ops costed by estimate, gears
    the export dropped), and what the advice warns of in the annotation (`STREAM_PER_LAYER`)."""
    recommendation: Recommendation | None = None
    """The best of the user's options (`recommend`); None when no row runs."""

    @property
    def lower_bound_ns(self) -> int | None:
        return next(iter(self.lower_bounds.values()), None)

    @property
    def advised_ns(self) -> dict[str | None, int | None]:
        """Each case's makespan under the advice."""
        return {v.case: v.makespan_ns for v in self.variants if v.name == self.best}

    @property
    def cases(self) -> list[str | None]:
        return list(dict.fromkeys(v.case for v in self.variants))

    def to_json(self) -> dict[str, Any]:
        return {
            "variants": [v.to_json() for v in self.variants],
            "lower_bounds": [{"case": c, "ns": n} for c, n in self.lower_bounds.items()],
            "lower_bound_ns": self.lower_bound_ns,
            "gear_weights": [{"case": c, "weight": w} for c, w in self.weights.items()],
            "why": self.reasons,
            "best": self.best,
            "granularity": self.granularity,
            "keep_annotation": self.keep,
            "edits": [e.to_json() for e in self.edits],
            "emitted_mlir": self.emitted,
            "memory_pareto": [p.to_json() for p in self.memory_pareto],
            "warnings": [diagnostic_json(w) for w in self.warnings],
            "recommendation": self.recommendation.to_json() if self.recommendation else None,
        }

    def render(self) -> str:
        lines: list[str] = []
        for case in self.cases:
            if case is not None:
                weight = self.weights.get(case, 1.0)
                lines.append(f"{case} (weight {weight:g}):")
            lines.append(
                "variant                  makespan (µs)  waits  streams  peak (MiB)  "
                "in TorchAir terms"
            )
            for v in self.variants:
                if v.case != case:
                    continue
                span = "deadlock" if v.deadlock else f"{(v.makespan_ns or 0) / 1000:.1f}"
                peak = "-" if v.peak_bytes is None else f"{v.peak_bytes / (1 << 20):.2f}"
                lines.append(
                    f"{v.name:<24} {span:>13}  {v.waits:>5}  {v.streams:>7}  {peak:>10}  "
                    f"{v.torchair}"
                )
            bound = self.lower_bounds.get(case)
            if bound is not None:
                lines.append(f"{'lower bound':<24} {bound / 1000:>13.1f}")
            lines.append("")
        if self.memory_pareto:
            lines.append("makespan against memory (auto under a budget; Pareto points):")
            lines.extend(
                f"  {p.makespan_ns / 1000:.1f} µs at {p.peak_bytes / (1 << 20):.2f} MiB "
                f"({p.streams} stream{'s' if p.streams != 1 else ''}, "
                f"{p.orderings} ordering{'s' if p.orderings != 1 else ''} added)"
                for p in self.memory_pareto
            )
            lines.append("")
        lines.extend(f"why: {r}" for r in self.reasons)
        lines.append("")
        rec = self.recommendation
        if rec is None:
            lines.append("recommended: none of the options runs in every case")
        else:
            lines.extend(rec.lines(self.cases, self.weights))
        if self.edits:
            lines.append(
                "the edits:"
                if rec is not None and rec.row == self.best
                else f"the edits of the {self.best} row, if you prefer to edit your source:"
            )
            lines.extend(f"  {e}" for e in self.edits)
        if self.emitted:
            lines.append(f"annotated source written to {self.emitted}")
        return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Cases: the shapes given, or each gear
# ---------------------------------------------------------------------------------------------


@dataclass
class Case:
    """One set of input shapes the program is advised for."""

    label: str | None
    shapes: dict[str, tuple[int, ...]]
    weight: float


def _cases(config: AdviseConfig, module: ModuleOp) -> list[Case]:
    funcs = {f.sym_name.data: f for f in module.ops if isinstance(f, FuncOp)}
    names = entry_names(_run_config(config, None, None, config.shapes), module)
    gears = [] if config.shapes else gear_cases(funcs[names[0]])
    if not gears:
        if config.gear_weights:
            raise UsageError("--gear-weights needs a geared program advised for all its gears")
        return [Case(None, dict(config.shapes), 1.0)]
    weights = config.gear_weights or [1.0] * len(gears)
    if len(weights) != len(gears):
        raise UsageError(
            f"--gear-weights gives {len(weights)} weight(s) for the {len(gears)} gears of "
            f"@{names[0]}"
        )
    return [Case(g.label, dict(g.shapes), w) for g, w in zip(gears, weights)]


def _run_config(
    config: AdviseConfig,
    pipeline: str | None,
    source: str | None,
    shapes: dict[str, tuple[int, ...]],
) -> RunConfig:
    return RunConfig(
        path=config.path,
        source=source,
        pipeline=pipeline,
        entry=config.entry,
        entries=config.entries,
        # With --entries the rank count is theirs (npuir-run refuses a disagreeing --ranks).
        ranks=None if config.entries else config.ranks,
        hw=config.hw,
        shapes=dict(shapes),
        timing_only=True,
    )


# ---------------------------------------------------------------------------------------------
# Timing the variants
# ---------------------------------------------------------------------------------------------


def _variant(base: Baseline, case: Case, timed: Timed | None, hw: Hardware, why: bool) -> Variant:
    if timed is None:
        return Variant(
            base.name,
            base.torchair,
            base.pipeline,
            case.label,
            None,
            False,
            0,
            0,
            None,
            0,
            option=base.option,
        )
    result = timed.result
    deadlock = result.deadlock is not None
    hazards = sum(1 for w in timed.warnings if w.kind == HOLD_AND_WAIT.code)
    streams = len({(r, s) for (r, s) in result.stream_busy_ns if r == 0})
    explanation = explain(result, timed.programs, hw) if why and not deadlock else None
    plans = {id(p): p for p in timed.programs}.values()
    peak = max((program_memory(p).peak for p in plans), default=0)
    return Variant(
        base.name,
        base.torchair,
        base.pipeline,
        case.label,
        None if deadlock else result.makespan_ns,
        deadlock,
        result.waits_executed,
        streams,
        explanation,
        hazards,
        peak,
        base.option,
    )


def _time(
    config: AdviseConfig, case: Case, pipeline: str | None, module: ModuleOp, source: str | None
) -> Timed | None:
    """`npuir-run --timing-only` of `module` (a fresh copy, lowered in place) under
    `pipeline`; None when the pipeline refuses the program."""
    try:
        return time_program(_run_config(config, pipeline, source, case.shapes), module)
    except DiagnosticError:
        return None


def _span(v: Variant) -> int:
    return v.makespan_ns if v.makespan_ns is not None else 1 << 62


# ---------------------------------------------------------------------------------------------
# The units of the structured search
# ---------------------------------------------------------------------------------------------

Site = tuple[str, int]
"""A source place: a file and a line (a GE dump's op block)."""


@dataclass(eq=False)
class Scope:
    """One user scope (`with npu_stream_switch`) as written: every copy the program has of
    it (each layer calling the same module code) shares one `Scope`."""

    key: tuple[str, int, str]
    tag: str
    priority: int
    parent: Scope | None
    ops: list[Operation] = field(default_factory=list[Operation])
    """Every op under it, nested scopes included, in every copy."""


@dataclass
class OpInfo:
    """Where an npu op comes from: its source line, its innermost user scope, its name."""

    site: Site
    scope: Scope | None
    """The innermost user scope around the op as written (None: the default stream)."""
    name: str | None
    expr: str | None = None
    """The call that makes the op, when it can be taken out of its statement into one of its
    own (`_mark_hoistable`): the op is then a unit of its own."""

    @property
    def base(self) -> str | None:
        """The torch function the op's name comes from (`index_select_2` -> `index_select`)."""
        return _base_name(self.name)


def _base_name(name: str | None) -> str | None:
    if name is None:
        return None
    head, sep, tail = name.rpartition("_")
    return head if sep and tail.isdigit() and head else name


def _site(op: Operation, fallback: int) -> Site:
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return (loc.filename.data, loc.line.data)
    return ("<unknown>", -1 - fallback)


def _op_name(op: Operation) -> str | None:
    name = op.attributes.get(OP_NAME)
    return name.data if isinstance(name, StringAttr) else None


def _read_sites(
    func: FuncOp, scopes: dict[tuple[str, int, str], Scope], infos: dict[Operation, OpInfo]
) -> None:
    """Each npu op's site and innermost user scope, in one walk without recursion (a
    program may nest thousands of scopes)."""
    stack: list[tuple[Iterator[Operation], Scope | None]] = [(iter(func.body.block.ops), None)]
    while stack:
        ops, scope = stack[-1]
        op = next(ops, None)
        if op is None:
            stack.pop()
            continue
        if isinstance(op, stream.SwitchOp) and op.tag_name != stream.MAIN_TAG:
            file, line = _site(op, len(infos))
            key = (file, line, op.tag_name)
            inner = scopes.get(key)
            if inner is None:
                inner = scopes[key] = Scope(key, op.tag_name, op.priority_value, scope)
            stack.append((iter(op.body.block.ops), inner))
            continue
        if isinstance(op, NpuOp):
            infos[op] = OpInfo(_site(op, len(infos)), scope, _op_name(op))
            s = scope
            while s is not None:
                s.ops.append(op)
                s = s.parent
        for region in op.regions:
            for block in region.blocks:
                stack.append((iter(block.ops), scope))


Unit = tuple[object, ...]


def _unit(info: OpInfo, granularity: str) -> Unit | None:
    """What moves together (None: the op stays on the default stream)."""
    if granularity == "scope":
        return None if info.scope is None else ("scope", info.scope.key)
    written = info.scope.tag if info.scope is not None else stream.MAIN_TAG
    if info.expr is not None:
        return ("expr", info.site, written, info.expr)
    return ("line", info.site, written)


def _mark_hoistable(
    funcs: Sequence[FuncOp], infos: dict[Operation, OpInfo], calls: set[Site]
) -> None:
    """Give `expr` to the ops whose call can be taken out of its statement (a Python
    statement of one line, in a file on disk): the op's operands come from other lines and
    its results are used on its own line only, in every copy of the line (every layer), and
    the line holds exactly one call of the op's torch function, without calls in its
    arguments (`_Source.hoistable`).  Such an op may go on another stream than the rest of
    its line: the edit moves the call into a statement of its own before the line."""
    ok: dict[tuple[Site, str], bool] = {}
    members: dict[tuple[Site, str], list[Operation]] = {}
    for func in funcs:
        for op in walk_nested(func):
            info = infos.get(op)
            if info is None or info.base is None or info.site in calls:
                continue
            if not _python(info.site[0]):
                continue
            key = (info.site, info.base)
            members.setdefault(key, []).append(op)
            good = ok.get(key, True)
            # (An operand from an op that is not an npu op is defined before the run of
            # npu ops of the line the op moves to the front of.)
            if any(
                isinstance(v.owner, Operation)
                and v.owner in infos
                and infos[v.owner].site == info.site
                for v in op.operands
            ):
                good = False
            users = [use.operation for result in op.results for use in result.uses]
            if not users or any(u not in infos or infos[u].site != info.site for u in users):
                good = False
            ok[key] = good
    sources: dict[str, _Source] = {}
    for key, good in ok.items():
        (file, line), base = key
        if not good or not os.path.isfile(file):
            continue
        expr = sources.setdefault(file, _Source(file)).hoistable(line, base)
        if expr is None:
            continue
        for op in members[key]:
            infos[op].expr = expr


class Target:
    """A program the search judges: one function of one case.

    Removing a user scope that holds an `npu_wait_tensor` widens what the wait orders
    (every later use of its tensor in the enclosing block, not only those in the scope), so
    an assignment that removes such scopes is judged on the function with them inlined
    (`variant`)."""

    def __init__(
        self,
        func: FuncOp,
        hw: Hardware,
        counts: CoreLimits,
        infos: dict[Operation, OpInfo],
        granularity: str,
        weight: float,
    ) -> None:
        self.wait_scopes: set[tuple[str, int, str]] = set()
        """The user scopes holding a wait."""
        for op in walk_nested(func):
            if isinstance(op, stream.WaitTensorOp):
                parent = op.parent_op()
                while parent is not None and parent is not func:
                    if isinstance(parent, stream.SwitchOp):
                        self.wait_scopes.add(_scope_key(parent))
                    parent = parent.parent_op()
        self.name = func.sym_name.data
        self.func = func
        self.reorders_only = not any(
            isinstance(op, stream.WaitTensorOp) for op in walk_nested(func)
        )
        """Whether a variant only reissues the nodes (`_reordered`): no wait binds uses."""
        self.base = None if self.reorders_only else func.clone()
        """The function as written, its waits not yet bound (for `_rebuilt`; None without
        waits, when binding changes nothing and `func` itself serves)."""
        self.hw = hw
        self.counts = counts
        self.infos = infos
        self.granularity = granularity
        self.weight = weight
        self.ops = [op for op in walk_nested(func) if isinstance(op, NpuOp)]
        bind_later_uses(func)
        self.prog = build_program(func)
        self.units = [
            _unit(infos[op], granularity) if op in infos else None for op in self.prog.ops
        ]
        self.solo = [_work(op) for op in self.prog.ops]
        """Per node, a rough cost (work in flops and bytes) to rank units by."""
        self._work = dict(zip(self.prog.ops, self.solo))
        self._origin: dict[Operation, Operation] = {}
        self.judge = Judge(self.prog, hw, limit_fn(counts))
        self._variants: dict[
            tuple[frozenset[tuple[str, int, str]], frozenset[tuple[Site, str]]],
            tuple[Program, list[Unit | None], Judge],
        ] = {}

    def work(self, op: Operation) -> int:
        """`_work` of an op of the program or of one of its variants."""
        return self._work.get(self._origin.get(op, op), 0)

    def variant(
        self,
        removed: frozenset[tuple[str, int, str]],
        hoisted: frozenset[tuple[Site, str]] = frozenset(),
    ) -> tuple[Program, list[Unit | None], Judge]:
        """The program, units and judge with the scopes `removed` (holding waits) inlined
        and the calls `hoisted` (site, torch function) issued first on their lines."""
        removed = removed & self.wait_scopes
        if not removed and not hoisted:
            return self.prog, self.units, self.judge
        hit = self._variants.get((removed, hoisted))
        if hit is None:
            hit = self._variants[(removed, hoisted)] = (
                self._reordered(hoisted) if self.reorders_only else None
            ) or self._rebuilt(removed, hoisted)
        return hit

    def _reordered(
        self, hoisted: frozenset[tuple[Site, str]]
    ) -> tuple[Program, list[Unit | None], Judge] | None:
        """The variant with the calls `hoisted`, as the program's nodes reissued: without
        `stream.wait_tensor`s hoisting only changes the issue order (no wait binds another
        use), so the function need not be copied and read again.  None when the walk does
        not give every node once (then `_rebuilt` is the answer)."""
        infos = self.infos

        def marked(op: Operation) -> bool:
            info = infos.get(op)
            return info is not None and (info.site, info.base) in hoisted

        index = self.prog.index
        order: list[int] = []
        # Issue order (`issue_order`), each block's ops hoisted as `hoist` would; the lists
        # are reversed so that the next op is popped from the end.
        stack = [hoisted_order(list(self.func.body.block.ops), marked)[::-1]]
        while stack:
            ops = stack[-1]
            if not ops:
                stack.pop()
                continue
            op = ops.pop()
            if isinstance(op, ScopeOp):
                stack.append(hoisted_order(list(op.body.block.ops), marked)[::-1])
            elif (node := index.get(op)) is not None:
                order.append(node)
        if sorted(order) != list(range(len(self.prog))):
            return None
        prog = permuted(self.prog, order)
        units = [self.units[n] for n in order]
        judge = self.judge
        return (
            prog,
            units,
            Judge(prog, self.hw, judge.limits, cache=judge.cache, known_limits=judge.known_limits),
        )

    def _rebuilt(
        self,
        removed: frozenset[tuple[str, int, str]],
        hoisted: frozenset[tuple[Site, str]],
    ) -> tuple[Program, list[Unit | None], Judge]:
        """The variant read from a copy of the function with the scopes inlined and the
        calls hoisted."""
        from npuir.dialects import scope as scope_utils

        func = (self.base or self.func).clone()
        copies = [op for op in walk_nested(func) if isinstance(op, NpuOp)]
        original = dict(zip(copies, self.ops))
        for op in reversed([o for o in walk_nested(func) if isinstance(o, stream.SwitchOp)]):
            if _scope_key(op) in removed:
                scope_utils.inline_scope(op)
        if hoisted:
            blocks: dict[Block, None] = {}
            for op in copies:
                info = self.infos.get(original[op])
                if info is not None and (info.site, info.base) in hoisted:
                    op.attributes[HOIST] = UnitAttr()
                    if (block := op.parent_block()) is not None:
                        blocks[block] = None
            for block in blocks:
                hoist(block)
            for op in copies:
                op.attributes.pop(HOIST, None)
        bind_later_uses(func)
        prog = build_program(func)
        units = [
            _unit(self.infos[original[op]], self.granularity) if op in original else None
            for op in prog.ops
        ]
        counts = self.counts

        def limit(p: Program, node: int, engine: str) -> int | None:
            op = p.ops[node]
            return (
                counts.of(original[op]).get(engine)
                if isinstance(op, NpuOp) and op in original
                else None
            )

        self._origin.update(original)
        # The variant's ops are copies of the target's: the same signatures, read once.
        return prog, units, Judge(prog, self.hw, limit, cache=self.judge.cache)


def _scope_key(op: stream.SwitchOp) -> tuple[str, int, str]:
    file, line = _site(op, 0)
    return (file, line, op.tag_name)


class Search:
    """The structured search (see the module docstring)."""

    def __init__(
        self,
        targets: list[Target],
        scopes: dict[tuple[str, int, str], Scope],
        infos: dict[Operation, OpInfo],
        granularity: str,
        calls: set[Site] | None = None,
    ) -> None:
        self.calls = calls or set()
        self.targets = targets
        self.scopes = scopes
        self.infos = infos
        self.granularity = granularity
        self.cache: dict[
            tuple[tuple[Unit, str], ...], tuple[float, list[list[tuple[Unit, float]]]]
        ] = {}
        units: dict[Unit, None] = {}
        for t in targets:
            for u in t.units:
                if u is not None:
                    units[u] = None
        self.units = [u for u in units if not (u[0] == "line" and u[1] in self.calls)]
        self.pinned = {u: str(u[2]) for u in units if u[0] == "line" and u[1] in self.calls}
        # Line units also move with the other units of each user scope around them.
        movable = set(self.units)
        self.groups: dict[Unit, list[list[Unit]]] = {}
        if granularity == "line":
            for scope in scopes.values():
                group = list(
                    dict.fromkeys(
                        u
                        for op in scope.ops
                        if (u := _unit(infos[op], granularity)) is not None and u in movable
                    )
                )
                if len(group) > 1:
                    for u in group:
                        self.groups.setdefault(u, []).append(group)
        self.priorities: dict[str, int] = {s.tag: s.priority for s in scopes.values()}
        user = set(self.priorities)
        self.fresh = [f"s{i}" for i in range(1, 64) if f"s{i}" not in user][:MAX_STREAMS]
        self.trials = 0

    def written(self) -> dict[Unit, str]:
        """Each unit's tag as the user wrote it."""
        out: dict[Unit, str] = {}
        for u in self.units:
            if u[0] == "scope":
                out[u] = self.scopes[u[1]].tag  # type: ignore[index]
            else:
                out[u] = u[2]  # type: ignore[assignment]
        return out

    def _assignment(
        self, prog: Program, units: list[Unit | None], tags: dict[Unit, str]
    ) -> Assignment | None:
        streams = [StreamInfo("s0", stream.MAIN_TAG, 0)]
        index = {stream.MAIN_TAG: 0}
        stream_of: list[int] = []
        for n, unit in enumerate(units):
            tag = stream.MAIN_TAG if unit is None else tags.get(unit, stream.MAIN_TAG)
            if prog.kind[n] is not NodeKind.COMPUTE:
                tag = stream.MAIN_TAG
            s = index.get(tag)
            if s is None:
                s = index[tag] = len(streams)
                streams.append(StreamInfo(f"s{s}", tag, self.priorities.get(tag, 0)))
            stream_of.append(s)
        if len(streams) > MAX_STREAMS:
            return None
        return Assignment(streams, stream_of)

    def cost(self, tags: dict[Unit, str]) -> tuple[float, list[list[tuple[Unit, float]]]]:
        """The weighted makespan of `tags` and each target's critical nodes (`with` blocks
        that cannot say `tags` cost infinitely much)."""
        costed = self.cost_below(tags, None)
        assert costed is not None
        return costed

    def cost_below(
        self, tags: dict[Unit, str], below: float | None
    ) -> tuple[float, list[list[tuple[Unit, float]]]] | None:
        """`cost(tags)`, or with `below`, None when the cost is sure to be above it (one
        target whose makespan floor says so: `Judge.within`).  That answer is not kept: a
        later call without `below` simulates."""
        tags = {**tags, **self.pinned}
        key = tuple(sorted(((u, t) for u, t in tags.items()), key=repr))
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        total = 0.0
        critical: list[list[tuple[Unit, float]]] = []
        plan = _plan(tags, self)
        if plan is None:
            self.cache[key] = (float(1 << 62), [[] for _ in self.targets])
            return self.cache[key]
        removed = frozenset(k for k, d in plan.decisions.items() if d == "remove")
        hoisted = frozenset(plan.hoists)
        # Of two equally fast annotations, the one with fewer edits.
        total += EDIT_COST * (
            sum(d != "keep" for d in plan.decisions.values()) + len(plan.wraps) + len(hoisted)
        )
        for target in self.targets:
            prog, units, judge = target.variant(removed, hoisted)
            assignment = self._assignment(prog, units, tags)
            if assignment is None:
                total = float(1 << 62)
                critical.append([])
                continue
            self.trials += 1
            if below is not None and len(self.targets) == 1 and target.weight > 0:
                # At most `below` only with a makespan at most (below - total) / weight;
                # rounded up, so that float rounding cannot refuse a candidate.
                most = math.ceil((below - total) / target.weight)
                within = judge.within("structured", assignment, most)
                if within is None:
                    return None
                judged = within
            else:
                judged = judge("structured", assignment)
            total += target.weight * judged.makespan
            critical.append(
                [
                    (u, target.weight * (1 + target.work(prog.ops[n])))
                    for n in judged.critical
                    if (u := units[n]) is not None
                ]
            )
        self.cache[key] = (total, critical)
        return total, critical

    def project(self, per_target: list[list[str]]) -> dict[Unit, str]:
        """Each unit on the tag most of its work has in `per_target` (per node tags)."""
        votes: dict[Unit, dict[str, float]] = {}
        for target, tags in zip(self.targets, per_target):
            for n, unit in enumerate(target.units):
                if unit is None:
                    continue
                box = votes.setdefault(unit, {})
                box[tags[n]] = box.get(tags[n], 0.0) + target.weight * (1 + target.solo[n])
        return {u: max(box.items(), key=lambda kv: (kv[1], kv[0]))[0] for u, box in votes.items()}

    def run(self, starts: list[dict[Unit, str]], budget: int) -> tuple[dict[Unit, str], float]:
        """The best of `starts`, each improved (best first, while the budget lasts) by
        moving a unit, or the units of a user scope, along the critical path."""
        scored = sorted(
            ((self.cost(s)[0], i, s) for i, s in enumerate(starts)), key=lambda x: (x[0], x[1])
        )
        best_cost, _, best = scored[0]
        for cost, _, start in scored:
            if self.trials >= budget:
                break
            tags, c = self._climb(dict(start), cost, budget)
            if c < best_cost:
                best, best_cost = tags, c
        return dict(best), best_cost

    def simplify(
        self, best: dict[Unit, str], best_cost: float, worth: float, budget: int
    ) -> tuple[dict[Unit, str], float]:
        """Fewer edits for about the same makespan: undo each move (a call back on its
        line's stream, a unit back to its written stream) and merge each stream into
        another, keeping every change that costs less than `worth` -- what an edit must
        gain to be worth writing -- and, all together, at most SIMPLIFY_WITHIN.  No
        assignment is taken twice, and at most `budget` are looked at (cached or not)."""
        written = self.written()
        cap = best_cost * (1 + SIMPLIFY_WITHIN)
        seen = {frozenset(best.items())}
        looked = 0
        changed = True
        while changed and looked < budget:
            changed = False
            trials: list[dict[Unit, str]] = []
            for u in self.units:
                back = written[u]
                if u[0] == "expr":
                    back = best.get(("line", u[1], u[2]), written[u])
                if best.get(u) != back:
                    trials.append({**best, u: back})
            used = sorted(set(best.values()) - {stream.MAIN_TAG})
            for a in used:
                for b in [stream.MAIN_TAG, *used]:
                    if a != b:
                        trials.append({u: b if t == a else t for u, t in best.items()})
            for trial in trials:
                key = frozenset(trial.items())
                if key in seen:
                    continue
                if looked >= budget:
                    break
                looked += 1
                costed = self.cost_below(trial, min(best_cost + worth, cap))
                if costed is None:
                    continue
                c = costed[0]
                if c < best_cost + worth and c <= cap:
                    seen.add(key)
                    best, best_cost, changed = trial, c, True
                    break
        return best, best_cost

    def _climb(
        self, best: dict[Unit, str], best_cost: float, budget: int
    ) -> tuple[dict[Unit, str], float]:
        improved = True
        while improved and self.trials < budget:
            improved = False
            _, critical = self.cost(best)
            order: dict[Unit, float] = {}
            for nodes in critical:
                for u, work in nodes:
                    order[u] = order.get(u, 0.0) + work
            candidates = sorted(order, key=lambda u: -order[u])
            used = sorted(set(best.values()) - {stream.MAIN_TAG})
            new = next((t for t in self.fresh if t not in used), None)
            options = [stream.MAIN_TAG, *used] + ([new] if new is not None else [])
            moves = [
                [unit] if i < 0 else self.groups[unit][i]
                for unit in candidates
                for i in range(-1, len(self.groups.get(unit, ())))
            ]
            for group in moves:
                for tag in options:
                    if all(best.get(u) == tag for u in group) or self.trials >= budget:
                        continue
                    trial = dict(best)
                    trial.update((u, tag) for u in group)
                    costed = self.cost_below(trial, best_cost)
                    if costed is None:
                        continue
                    c = costed[0]
                    if c < best_cost:
                        best, best_cost, improved = trial, c, True
                        break
                if improved:
                    break
        return best, best_cost


def _work(op: Operation) -> int:
    if isinstance(op, NpuOp):
        try:
            return int(op.flops() // 1000 + op.bytes_moved() // 1000)
        except Exception:
            return 1
    return 0


def _targets(
    config: AdviseConfig,
    module: ModuleOp,
    cases: list[Case],
    hw: Hardware,
    granularity: str,
    calls: set[Site],
) -> tuple[list[Target], dict[tuple[str, int, str], Scope], dict[Operation, OpInfo]]:
    """The functions each case runs (a gear's version, shapes fixed), read for the search."""
    scratch = module.clone()
    ctx = make_context(collect_diagnostics=True)
    run_passes(ctx, scratch, build_pipeline("gear-multiversion"))
    funcs = {f.sym_name.data: f for f in scratch.ops if isinstance(f, FuncOp)}
    chosen: list[tuple[FuncOp, float]] = []
    seen: dict[tuple[str, tuple[tuple[int, ...], ...]], int] = {}
    for case in cases:
        names, shapes = entries_and_shapes(_run_config(config, None, None, case.shapes), module)
        for name, rank_shapes in zip(names, shapes):
            try:
                func, _ = resolve_entry(scratch, funcs[name], rank_shapes)
            except NumericsError as exc:
                raise error(exc.op or scratch, str(exc), NO_GEAR) from None
            key = (func.sym_name.data, tuple(rank_shapes))
            if key in seen:
                continue
            seen[key] = len(chosen)
            fixed = timing_function(func, rank_shapes)
            if fixed is not func:
                scratch.body.block.add_op(fixed)
            chosen.append((fixed, case.weight))
    scopes: dict[tuple[str, int, str], Scope] = {}
    infos: dict[Operation, OpInfo] = {}
    for func, _ in chosen:
        _read_sites(func, scopes, infos)
    if granularity == "line":
        _mark_hoistable([f for f, _ in chosen], infos, calls)
    counts = CoreLimits(scratch, hw).run()
    targets = [Target(func, hw, counts, infos, granularity, weight) for func, weight in chosen]
    return targets, scopes, infos


def _auto_tags(search: Search, auto_ops: dict[str, list[Operation]]) -> list[dict[Unit, str]]:
    """The projection of the streams `auto` gave (in its own row's run: `auto_ops`, each
    function's npu ops in written order, now partitioned) onto the units."""
    fresh: dict[str, str] = {}
    per_target: list[list[str]] = []
    for target in search.targets:
        ops = auto_ops.get(target.name)
        if ops is None or len(ops) != len(target.ops):
            return []
        index = {op: i for i, op in enumerate(target.ops)}
        module = ops[0].get_toplevel_object() if ops else None
        decls = (
            {d.symbol: d.tag.data for d in module.ops if isinstance(d, stream.DeclOp)}
            if isinstance(module, ModuleOp)
            else {}
        )
        tags: list[str] = []
        for op in target.prog.ops:
            i = index.get(op)
            ref = ops[i].attributes.get(stream.STREAM_ON) if i is not None else None
            tag = decls.get(ref.root_reference.data) if isinstance(ref, SymbolRefAttr) else None
            if tag is None or tag == stream.MAIN_TAG:
                tags.append(stream.MAIN_TAG)
                continue
            if tag not in fresh:
                fresh[tag] = search.fresh[len(fresh) % len(search.fresh)]
            tags.append(fresh[tag])
        per_target.append(tags)
    return [search.project(per_target)]


def _baseline_tags(search: Search, hw: Hardware, limits_of: Judge) -> list[dict[Unit, str]]:
    """The projections of GE's, Nimble's and minidag's streams onto the units."""
    strategies = {**STRATEGIES, **cost_strategies(hw, limits_of.limits, None)}
    starts: list[dict[Unit, str]] = []
    for mode in (Mode.GE, Mode.NIMBLE, Mode.MINIDAG):
        per_target: list[list[str]] = []
        for target in search.targets:
            prog = target.prog
            try:
                result = assign(
                    mode,
                    prog,
                    [None] * len(prog),
                    {},
                    MAX_STREAMS,
                    reserved=set(search.priorities),
                    strategies=strategies,
                )
            except (ValueError, DiagnosticError):
                per_target = []
                break
            tags = [
                stream.MAIN_TAG
                if s == DEFAULT_STREAM
                else search.fresh[(s - 1) % len(search.fresh)]
                for s in result.stream_of
            ]
            per_target.append(tags)
        if per_target:
            starts.append(search.project(per_target))
    return starts


# ---------------------------------------------------------------------------------------------
# From an assignment to scopes: which `with` to keep, remove or retag, which lines to wrap
# ---------------------------------------------------------------------------------------------


@dataclass
class Plan:
    """The advised annotation in the user's structure."""

    op_tag: dict[Operation, str]
    decisions: dict[tuple[str, int, str], str]
    """Per user scope: "keep", "remove" or "retag:TAG"."""
    wraps: dict[tuple[Site, str | None], str]
    """Per source line (and torch function, for a call hoisted out of it): the tag of the
    new `with` around it."""
    hoists: set[tuple[Site, str]] = field(default_factory=set[tuple[Site, str]])
    """The calls (source line, torch function) taken out of their statements, into one of
    their own before it: those whose stream is not their line's."""


def _plan(tags: dict[Unit, str], search: Search) -> Plan | None:
    """The scopes that give every op its unit's tag, or None when `with` blocks cannot."""
    tags = {**tags, **search.pinned}
    op_tag: dict[Operation, str] = {}
    for op, info in search.infos.items():
        unit = _unit(info, search.granularity)
        op_tag[op] = stream.MAIN_TAG if unit is None else tags.get(unit, stream.MAIN_TAG)
    decisions: dict[tuple[str, int, str], str] = {}
    for key, scope in search.scopes.items():  # outer scopes were read before inner ones
        wanted = {op_tag[op] for op in scope.ops}
        if wanted == {scope.tag}:
            decisions[key] = "keep"
        elif len(wanted) == 1 and stream.MAIN_TAG not in wanted:
            decisions[key] = "retag:" + next(iter(wanted))
        elif stream.MAIN_TAG not in wanted:
            decisions[key] = "keep"
        else:
            decisions[key] = "remove"

    def inherited(scope: Scope | None) -> str:
        while scope is not None:
            d = decisions[scope.key]
            if d == "keep":
                return scope.tag
            if d.startswith("retag:"):
                return d[len("retag:") :]
            scope = scope.parent
        return stream.MAIN_TAG

    by_site: dict[tuple[Site, str | None], list[tuple[str, str]]] = {}
    hoists: set[tuple[Site, str]] = set()
    for op, info in search.infos.items():
        where: tuple[Site, str | None] = (info.site, None)
        if info.expr is not None and info.base is not None and search.granularity == "line":
            written = info.scope.tag if info.scope is not None else stream.MAIN_TAG
            line_tag = tags.get(("line", info.site, written), stream.MAIN_TAG)
            if op_tag[op] != line_tag:
                hoists.add((info.site, info.base))
                where = (info.site, info.base)
        by_site.setdefault(where, []).append((op_tag[op], inherited(info.scope)))
    wraps: dict[tuple[Site, str | None], str] = {}
    for where, pairs in by_site.items():
        if all(t == i for t, i in pairs):
            continue
        if where[0] in search.calls:
            return None
        wanted = {t for t, _ in pairs}
        if len(wanted) != 1 or stream.MAIN_TAG in wanted:
            return None
        wraps[where] = wanted.pop()
    return Plan(op_tag, decisions, wraps, hoists)


def _rename(tags: dict[Unit, str], search: Search) -> dict[Unit, str]:
    """Give the advice's streams the user's tags where a user scope's ops all went to one
    new stream (the same streams, fewer edits)."""
    mapping: dict[str, str] = {}
    used = set(tags.values())
    for scope in search.scopes.values():
        if scope.priority != 0 or scope.tag in used or scope.tag in mapping.values():
            continue
        unit_tags = {
            tags.get(u, stream.MAIN_TAG)
            for op in scope.ops
            if (u := _unit(search.infos[op], search.granularity)) is not None
        }
        if len(unit_tags) == 1:
            only = next(iter(unit_tags))
            if only in search.fresh and only not in mapping:
                mapping[only] = scope.tag
    # The other new streams numbered in the order the program first uses them.
    fresh = iter(search.fresh)
    for u in search.units:
        t = tags.get(u, stream.MAIN_TAG)
        if t in search.fresh and t not in mapping:
            mapping[t] = next(fresh)
    return {u: mapping.get(t, t) for u, t in tags.items()}


# ---------------------------------------------------------------------------------------------
# The plan in source form (IR) and as edits (text)
# ---------------------------------------------------------------------------------------------


def _source_form(module: ModuleOp, plan: Plan) -> None:
    """Apply `plan` to the user's module (not gear-multiversioned), by `stream-source-form`:
    the scopes it removes or retags, the calls it hoists and the lines it wraps, each
    found by source position (the module's ops are not the search's)."""
    for op in walk_nested(module):
        if isinstance(op, stream.SwitchOp) and op.tag_name != stream.MAIN_TAG:
            file, line = _site(op, 0)
            decision = plan.decisions.get((file, line, op.tag_name), "keep")
            if decision == "remove":
                op.attributes[WANT] = StringAttr(stream.MAIN_TAG)
            elif decision.startswith("retag:"):
                op.attributes[WANT] = StringAttr(decision[len("retag:") :])
        elif isinstance(op, NpuOp):
            site = _site(op, 0)
            base = _base_name(_op_name(op))
            key: tuple[Site, str | None] = (site, None)
            if base is not None and (site, base) in plan.hoists:
                key = (site, base)
                op.attributes[HOIST] = UnitAttr()
            if key in plan.wraps:
                op.attributes[WANT] = StringAttr(plan.wraps[key])
    run_passes(make_context(), module, build_pipeline("stream-source-form"))


def _limit_ops(
    module: ModuleOp, limits: dict[str, tuple[int | None, int | None]]
) -> list[Operation]:
    """Wrap every npu op that runs on a stream `limits` names in a `coreset.limit` with its
    counts (what `set_stream_limit` said, as `limit_core_num` at each op's line)."""
    wrapped: list[Operation] = []
    for op in [o for o in walk_nested(module) if isinstance(o, NpuOp)]:
        tag = stream.MAIN_TAG
        parent = op.parent_op()
        while parent is not None and not isinstance(parent, FuncOp):
            if isinstance(parent, stream.SwitchOp):
                tag = parent.tag_name
                break
            parent = parent.parent_op()
        counts = limits.get(tag)
        if counts is None:
            continue
        out = escaping([op])
        scope = coreset.LimitOp(*counts, Region(Block()), [v.type for v in out])
        wrap([op], scope)
        scope.regions[0].blocks[0].add_op(coreset.YieldOp(*out))
        wrapped.append(scope)
    return wrapped


def _stream_limits(module: ModuleOp) -> dict[str, tuple[int | None, int | None]]:
    return {
        op.tag.data: (op.count("cube"), op.count("vector"))
        for op in walk_nested(module)
        if isinstance(op, coreset.StreamLimitOp)
    }


class _Source:
    """A Python file's statements, to name whole statements and blocks in edits."""

    def __init__(self, path: str) -> None:
        self.lines: list[str] = []
        self.statements: dict[int, tuple[int, int, int]] = {}
        """line -> (first, last, id of the enclosing body)"""
        self.withs: dict[int, tuple[int, int]] = {}
        """`with` line -> (its first body line, its last line)"""
        self.simple: dict[int, ast.stmt] = {}
        """line -> the simple statement (an assignment, an expression, a return) that is
        all of it"""
        self.names: set[str] = set()
        """Every name the file uses (a hoisted call's new name is none of them)."""
        self.binds_torchair = False
        """Whether the module imports a name `torchair` (`import torchair`, `import
        npuir.torchair as torchair`, `from npuir import torchair`)."""
        self.import_line = 1
        """Where a new module-level import goes: after the last one, or after the
        docstring."""
        self.text = ""
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            tree = ast.parse(text)
        except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
            return
        self.text = text
        self.lines = text.splitlines()
        for stmt in tree.body:
            if isinstance(stmt, ast.Import | ast.ImportFrom):
                self.import_line = (stmt.end_lineno or stmt.lineno) + 1
                bound = (a.asname or a.name.split(".")[0] for a in stmt.names)
                self.binds_torchair |= "torchair" in bound
            elif (
                stmt is tree.body[0]
                and isinstance(stmt, ast.Expr)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str)
            ):
                self.import_line = (stmt.end_lineno or stmt.lineno) + 1
        starts: dict[int, int] = {}
        for node in ast.walk(tree):
            for attr in ("body", "orelse", "finalbody"):
                body = getattr(node, attr, None)
                if not isinstance(body, list):
                    continue
                for stmt in body:
                    if not isinstance(stmt, ast.stmt):
                        continue
                    last = stmt.end_lineno or stmt.lineno
                    for line in range(stmt.lineno, last + 1):
                        # The innermost statement wins: ast.walk goes outer before inner.
                        self.statements[line] = (stmt.lineno, last, id(body))
                    if isinstance(stmt, ast.With):
                        self.withs[stmt.lineno] = (stmt.body[0].lineno, last)
                    starts[stmt.lineno] = starts.get(stmt.lineno, 0) + 1
                    simple = ast.Assign | ast.AnnAssign | ast.AugAssign | ast.Expr | ast.Return
                    if isinstance(stmt, simple) and last == stmt.lineno:
                        self.simple[stmt.lineno] = stmt
            if isinstance(node, ast.Name):
                self.names.add(node.id)
            elif isinstance(node, ast.arg):
                self.names.add(node.arg)
        for line, count in starts.items():
            if count > 1:  # `a = f(x); b = g(a)`: not one statement to split
                self.simple.pop(line, None)

    def statement(self, line: int) -> tuple[int, int, int] | None:
        return self.statements.get(line)

    def hoistable(self, line: int, function: str) -> str | None:
        """The text of the one call of `function` in the one-line statement at `line`, when
        it can become a statement of its own before it: it is not the whole statement, no
        call is in it, and nothing in the statement (an assignment expression, a lambda, a
        comprehension, `await`, `yield`) evaluates out of the usual left-to-right order."""
        stmt = self.simple.get(line)
        if stmt is None:
            return None
        odd = (
            ast.NamedExpr,
            ast.Lambda,
            ast.comprehension,
            ast.Await,
            ast.Yield,
            ast.YieldFrom,
            ast.IfExp,
            ast.BoolOp,
        )
        if any(isinstance(n, odd) for n in ast.walk(stmt)):
            return None
        matches = [n for n in ast.walk(stmt) if isinstance(n, ast.Call) and _called(n) == function]
        if len(matches) != 1 or matches[0] is getattr(stmt, "value", None):
            return None
        call = matches[0]
        if any(isinstance(n, ast.Call) for n in ast.walk(call) if n is not call):
            return None
        segment = ast.get_source_segment(self.text, call)
        if segment is None or "\n" in segment or self.lines[line - 1].count(segment) != 1:
            return None
        return segment

    def fresh(self, function: str) -> str:
        """A new variable name for a hoisted call of `function`."""
        name = f"{function}_out"
        n = 1
        while name in self.names:
            n += 1
            name = f"{function}_out{n}"
        self.names.add(name)
        return name


def _called(call: ast.Call) -> str | None:
    """The name of the function `call` calls (`torch.bmm(...)` -> `bmm`)."""
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    if isinstance(call.func, ast.Name):
        return call.func.id
    return None


def _python(file: str) -> bool:
    """Whether `file` is Python source (its statements are read when it is on disk)."""
    return file.endswith(".py")


def _line_ranges(
    file: str, lines: list[int], sources: dict[str, _Source], breaks: Collection[int] = ()
) -> list[tuple[int, int]]:
    """`lines` of `file` as ranges of whole statements that one `with` can wrap: for a
    Python file, the statements holding them, consecutive ones of one body merged unless
    the second starts on a line of `breaks` (one a call is hoisted out of: the hoisted
    statement goes between them); a file not on disk: each line alone."""
    if _python(file) and not os.path.isfile(file):
        return [(n, n) for n in sorted(set(lines))]
    if not _python(file):
        # IR lines: consecutive ones (consecutive ops) share one scope.
        out: list[tuple[int, int]] = []
        for n in sorted(set(lines)):
            if out and out[-1][1] + 1 == n:
                out[-1] = (out[-1][0], n)
            else:
                out.append((n, n))
        return out
    source = sources.setdefault(file, _Source(file))
    stmts = sorted({source.statement(n) or (n, n, -n) for n in lines})
    ranges: list[tuple[int, int, int]] = []
    for first, last, body in stmts:
        if ranges:
            a, b, prev_body = ranges[-1]
            between = range(b + 1, first)
            blank = all(
                not source.lines[i - 1].strip() or source.lines[i - 1].strip().startswith("#")
                for i in between
                if 0 < i <= len(source.lines)
            )
            if prev_body == body and blank and first > b and first not in breaks:
                ranges[-1] = (a, max(b, last), body)
                continue
        ranges.append((first, last, body))
    return [(a, b) for a, b, _ in ranges]


def _edits(
    plan: Plan,
    search: Search,
    limits: dict[Site, tuple[int, int]],
) -> list[Edit]:
    """The plan as edits: scopes removed or retagged, then new scopes by line."""
    sources: dict[str, _Source] = {}
    kind = "dump" if _is_dump(search) else "mlir"
    out: list[Edit] = []

    def source_of(file: str) -> str:
        return "python" if _python(file) else kind

    for key, decision in plan.decisions.items():
        if decision == "keep":
            continue
        file, line, tag = key
        scope = search.scopes[key]
        names = tuple(dict.fromkeys(n for op in scope.ops if (n := search.infos[op].name)))
        last = line
        if _python(file):
            last = sources.setdefault(file, _Source(file)).withs.get(line, (line, line))[1]
        if decision == "remove":
            out.append(Edit("remove-scope", file, line, last, source_of(file), tag, ops=names))
        else:
            new = decision[len("retag:") :]
            out.append(Edit("retag-scope", file, line, last, source_of(file), new, ops=names))
    by_tag: dict[tuple[str, str], list[int]] = {}
    for ((file, line), hoisted), tag in plan.wraps.items():
        if hoisted is None:
            by_tag.setdefault((file, tag), []).append(line)
    # Calls taken out of their lines, in the order they are on the line.
    breaks: dict[str, set[int]] = {}
    hoists: list[Edit] = []
    for (file, line), function in sorted(plan.hoists):
        source = sources.setdefault(file, _Source(file))
        expr = source.hoistable(line, function)
        assert expr is not None
        breaks.setdefault(file, set()).add(line)
        hoists.append(
            Edit(
                "hoist-call",
                file,
                line,
                line,
                "python",
                plan.wraps.get(((file, line), function)),
                ops=tuple(
                    dict.fromkeys(
                        info.name
                        for info in search.infos.values()
                        if info.name and info.site == (file, line) and info.base == function
                    )
                ),
                expr=expr,
                name=source.fresh(function),
                column=source.lines[line - 1].index(expr),
            )
        )
    out.extend(sorted(hoists, key=lambda e: (e.file, e.first_line, e.column)))
    names_at: dict[Site, list[str]] = {}
    for info in search.infos.values():
        if info.name:
            names_at.setdefault(info.site, []).append(info.name)

    def names_in(file: str, a: int, b: int) -> tuple[str, ...]:
        return tuple(
            dict.fromkeys(n for ln in range(a, b + 1) for n in names_at.get((file, ln), []))
        )

    for (file, tag), lines in sorted(by_tag.items()):
        for a, b in _line_ranges(file, lines, sources, breaks.get(file, set())):
            out.append(
                Edit("add-stream-scope", file, a, b, source_of(file), tag, ops=names_in(file, a, b))
            )
    by_counts: dict[tuple[str, tuple[int, int]], list[int]] = {}
    for (file, line), counts in limits.items():
        by_counts.setdefault((file, counts), []).append(line)
    for (file, counts), lines in sorted(by_counts.items()):
        for a, b in _line_ranges(file, lines, sources, breaks.get(file, set())):
            out.append(
                Edit(
                    "add-limit-scope",
                    file,
                    a,
                    b,
                    source_of(file),
                    counts=counts,
                    ops=names_in(file, a, b),
                )
            )
    return out


_WRITES_TORCHAIR = ("retag-scope", "add-stream-scope", "add-limit-scope")


def _with_imports(edits: list[Edit], sources: dict[str, _Source] | None = None) -> list[Edit]:
    """`edits` and, first, an `add-import` for each Python file on disk whose edits write
    `torchair.` but that does not import that name."""
    sources = {} if sources is None else sources
    needs: dict[str, None] = {}
    for e in edits:
        if e.source == "python" and (
            e.kind in _WRITES_TORCHAIR or (e.kind == "hoist-call" and e.tag is not None)
        ):
            needs[e.file] = None
    out: list[Edit] = []
    for file in needs:
        if not os.path.isfile(file):
            continue
        source = sources.setdefault(file, _Source(file))
        if source.lines and not source.binds_torchair:
            line = source.import_line
            out.append(Edit("add-import", file, line, line, "python"))
    return out + edits


def _is_dump(search: Search) -> bool:
    files = {info.site[0] for info in search.infos.values()}
    return (
        bool(files)
        and all(f.endswith((".txt", ".pbtxt")) for f in files)
        and all(info.name for info in search.infos.values())
    )


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """`text` (a Python source) with `edits` applied as a user would: a removed `with`
    line goes and its body is dedented; a retagged one is rewritten; a new `with` goes
    before its first line, at its indentation, and the lines it wraps are indented; a
    hoisted call's statement goes before its line (and before a new `with` starting
    there), the variable in the call's place."""
    lines = text.splitlines()
    indent = [len(s) - len(s.lstrip(" ")) for s in lines]
    delta = [0] * (len(lines) + 2)
    drop: set[int] = set()
    replace: dict[int, str] = {}
    before: dict[int, list[tuple[int, str]]] = {}
    hoisted: dict[int, list[Edit]] = {}
    imports: dict[int, list[str]] = {}
    for e in edits:
        if e.kind == "add-import":
            imports.setdefault(e.first_line, []).append(e.write)
        if e.kind == "remove-scope":
            drop.add(e.first_line)
            body = next(
                (n for n in range(e.first_line + 1, e.last_line + 1) if lines[n - 1].strip()),
                e.first_line,
            )
            shift = indent[body - 1] - indent[e.first_line - 1]
            for n in range(e.first_line + 1, e.last_line + 1):
                delta[n] -= shift
    for e in edits:
        if e.kind == "retag-scope":
            replace[e.first_line] = " " * indent[e.first_line - 1] + e.torchair
        elif e.kind in ("add-stream-scope", "add-limit-scope"):
            # Stream scopes outside limit scopes on the same lines.
            order = 0 if e.kind == "add-stream-scope" else 1
            before.setdefault(e.first_line, []).append((order, e.torchair))
            for n in range(e.first_line, e.last_line + 1):
                delta[n] += 4
        elif e.kind == "hoist-call":
            hoisted.setdefault(e.first_line, []).append(e)
    out: list[str] = []
    for n, line in enumerate(lines, start=1):
        out.extend(imports.get(n, ()))
        if n in hoisted:
            at = indent[n - 1] + delta[n] - 4 * len(before.get(n, ()))
            for e in hoisted[n]:
                assert e.expr is not None and e.name is not None
                if e.tag is not None:
                    out.append(" " * at + e.torchair)
                out.append(" " * (at + 4 * (e.tag is not None)) + e.write)
                line = line.replace(e.expr, e.name, 1)
        if n in before:
            outer = delta[n] - 4 * len(before[n])
            for depth, (_, write) in enumerate(sorted(before[n])):
                out.append(" " * (indent[n - 1] + outer + 4 * depth) + write)
        if n in drop:
            continue
        if n in replace:
            out.append(" " * max(0, indent[n - 1] + delta[n]) + replace[n].lstrip())
            continue
        if not line.strip():
            out.append(line)
            continue
        out.append(" " * max(0, indent[n - 1] + delta[n]) + line.lstrip(" "))
    out.extend(w for n, ws in sorted(imports.items()) if n > len(lines) for w in ws)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


# ---------------------------------------------------------------------------------------------
# The advice
# ---------------------------------------------------------------------------------------------


def _load(config: AdviseConfig) -> tuple[ModuleOp, str | None, set[Site], list[Diagnostic]]:
    """The program (by the one loader, whatever its format), its IR text when the file is
    not IR (a `.pt2` or a GE dump, imported once, every op keeping its location in the model
    or the dump), the call sites: the model's lines that call code creating ops
    elsewhere (a `with` there would move the callee's ops too, so the advice never wraps
    them), and the import's warnings.

    Edits name only the files the user owns (`owned_file`): a `.pt2`'s op made in library
    code is located at the line of the user's file that calls into it (the innermost owned
    frame of its node's stack, `_retarget`); an op at a line of a file the user does not own
    that no owned frame reaches (an IR input keeps one frame per op) stays where it is,
    pinned like a call site (`_not_owned`): only the rows that need no edit move it."""
    source = read(config.path)
    ctx = make_context(collect_diagnostics=True)
    module = load_source(source, ctx)
    calls = _call_sites(module)
    if source.format is Format.PT2:
        frames = _pt2_frames(source)
        if frames:
            calls = _retarget(module, frames, config.edit_files)
    text = None if source.format is Format.MLIR else print_ir(module, debuginfo=True)
    return (
        module,
        text,
        calls | _not_owned(module, config.edit_files),
        list(ctx.diagnostics.drain()),
    )


_STACK_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
"""A frame of an FX node's `stack_trace` (Python's traceback format)."""


@cache
def _installed_dirs() -> tuple[str, ...]:
    """The directories of code a user does not edit: the standard library, and torch and
    transformers where they are installed (found without importing them)."""
    dirs = {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib")}
    for name in ("torch", "transformers", "npuir"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.submodule_search_locations:
            dirs.update(str(Path(p).resolve()) for p in spec.submodule_search_locations)
    return tuple(sorted(d for d in dirs if d))


_NOT_OWNED_PARTS = frozenset({"site-packages", "dist-packages"})
_PYTHON_DIR = re.compile(r"python\d+(\.\d+)?")


def owned_file(path: str, globs: Sequence[str] | None = None) -> bool:
    """Whether an edit may name `path`.  With `globs` (`--edit-files`): exactly the files
    one of them matches (`fnmatch`, on the path as recorded or made absolute).  By default
    every file but those of installed packages (under `site-packages` / `dist-packages`),
    the standard library, torch, transformers and npuir, and the pseudo-files Python names
    in angle brackets (`<string>`, `<frozen ...>`)."""
    if path.startswith("<"):
        return False
    if globs:
        full = os.path.abspath(path)
        return any(fnmatch.fnmatch(path, g) or fnmatch.fnmatch(full, g) for g in globs)
    parts = re.split(r"[\\/]", path)
    if _NOT_OWNED_PARTS & set(parts):
        return False
    # Another machine's standard library (an archive keeps the exporter's paths).
    if any(a == "lib" and _PYTHON_DIR.fullmatch(b) for a, b in pairwise(parts)):
        return False
    from npuir.frontends.torch import library_frame  # torch's and npuir.torchair's own files

    if library_frame(path):
        return False
    full = str(Path(path).resolve()) if os.path.isabs(path) else path
    return not any(full == d or full.startswith(d + os.sep) for d in _installed_dirs())


def _pt2_frames(source: Any) -> dict[str, list[Site]]:
    """Each node of a `.pt2`'s program: its stack's frames outside torch, outermost first
    (read as data, as the importer reads them)."""
    from npuir.frontends.pt2 import read_pt2
    from npuir.frontends.pt2_graph import graph_of
    from npuir.frontends.torch import library_frame

    try:
        graph = graph_of(read_pt2(source.filename, data=source.data).program)
    except Exception:  # the import succeeded: a second read that fails only loses frames
        return {}
    out: dict[str, list[Site]] = {}
    for node in graph.nodes:
        trace = node.meta.get("stack_trace")
        if isinstance(trace, str):
            out[node.name] = [
                (f, int(n)) for f, n in _STACK_FRAME.findall(trace) if not library_frame(f)
            ]
    return out


def _retarget(
    module: ModuleOp, frames: dict[str, list[Site]], globs: Sequence[str] | None
) -> set[Site]:
    """Locate each npu op whose line is in a file the user does not own at the innermost
    frame of its node's stack in one they do (the call in their file that reaches the
    library code making it); the call sites again, in owned files only: every owned frame
    of a node's stack but the innermost."""
    calls: set[Site] = set()
    owned_cache: dict[str, bool] = {}

    def owned(file: str) -> bool:
        hit = owned_cache.get(file)
        if hit is None:
            hit = owned_cache[file] = owned_file(file, globs)
        return hit

    for chain in frames.values():
        mine = [f for f in chain if owned(f[0])]
        calls.update(mine[:-1])
    for op in walk_nested(module):
        if not isinstance(op, NpuOp):
            continue
        file, _ = _site(op, 0)
        name = _op_name(op)
        if owned(file) or name is None:
            continue
        chain = frames.get(name) or frames.get(_base_name(name) or name) or []
        mine = [f for f in chain if owned(f[0])]
        if mine:
            op.location = FileLineColLoc(StringAttr(mine[-1][0]), IntAttr(mine[-1][1]), IntAttr(0))
    return calls


def _not_owned(module: ModuleOp, globs: Sequence[str] | None) -> set[Site]:
    """The lines of npu ops and scopes in files the user does not own: pinned, as call sites
    are (never wrapped, never hoisted from)."""
    out: set[Site] = set()
    verdict: dict[str, bool] = {}
    for op in walk_nested(module):
        if isinstance(op, NpuOp | stream.SwitchOp):
            site = _site(op, 0)
            if site[1] < 0:
                continue
            if site[0] not in verdict:
                verdict[site[0]] = _python(site[0]) and not owned_file(site[0], globs)
            if verdict[site[0]]:
                out.add(site)
    return out


def advise(config: AdviseConfig, write: Any = None) -> Advice:
    """Time every variant in every case and say which annotation to use (see the module
    docstring).  `write(path, text)` writes `--emit-mlir` (default: the shared writer)."""
    if config.granularity not in GRANULARITIES:
        raise UsageError(
            f"--granularity {config.granularity} is not one of: {', '.join(GRANULARITIES)}"
        )
    parse_jobs(config.jobs)  # a bad --jobs is refused before any work
    module, text, calls, warnings = _load(config)
    config, copies = _share_copies(config, module)
    advice: Advice = on_deep_stack(_advise, config, module, text, calls, write, copies)
    advice.warnings = warnings + advice.warnings
    if copies:
        firsts = sorted(set(copies.values()))
        advice.reasons.append(
            f"{len(copies)} entry function(s) are copies of "
            + ", ".join(f"@{n}" for n in firsts)
            + " (the same ops and types): each was advised once, and the advice applies to "
            "its copies alike"
        )
    return advice


def _share_copies(config: AdviseConfig, module: ModuleOp) -> tuple[AdviseConfig, dict[str, str]]:
    """MPMD entries that are copies of each other (`share_identical`): the copies taken out
    of `module` and each rank given its first copy's name, so that every distinct function
    is searched once (memory and time grow with the distinct functions, not the ranks).
    Returns the config to advise with and each copy's name -> the function it copies."""
    if not config.entries:
        return config, {}
    order = [f.sym_name.data for f in module.ops if isinstance(f, FuncOp)]
    shared = share_identical(module, config.entries)
    copies = {n: s for n, s in zip(config.entries, shared, strict=True) if n != s}
    if not copies:
        return config, {}
    # Keep the module's order of the copies, for putting them back into what is emitted.
    copies = {n: copies[n] for n in order if n in copies}
    return replace(config, entries=shared), copies


def _with_copies(module: ModuleOp, copies: dict[str, str]) -> ModuleOp:
    """`module` (advised, copies taken out) with each copy put back: a clone of the function
    it copies, under its own name, after it."""
    funcs = {f.sym_name.data: f for f in module.ops if isinstance(f, FuncOp)}
    last: dict[str, FuncOp] = {}
    for name, first in copies.items():
        clone = funcs[first].clone()
        clone.sym_name = StringAttr(name)
        module.body.block.insert_op_after(clone, last.get(first, funcs[first]))
        last[first] = clone
    return module


def _advise(
    config: AdviseConfig,
    module: ModuleOp,
    text: str | None,
    calls: set[Site],
    write: Any,
    copies: dict[str, str] | None = None,
) -> Advice:
    # Auto's row and the memory trade-off search the same program: once (on this thread).
    with shared_searches():
        return _advise_shared(config, module, text, calls, write, copies or {})


def _advise_shared(
    config: AdviseConfig,
    module: ModuleOp,
    text: str | None,
    calls: set[Site],
    write: Any,
    copies: dict[str, str],
) -> Advice:
    hw = device_of(module, config.hw)
    cases = _cases(config, module)
    budget_bytes = _budget_bytes(config, module, hw)
    variants: list[Variant] = []
    by: dict[tuple[str, str | None], Variant] = {}
    timed_of: dict[tuple[str, str | None], Timed | None] = {}

    def add(base: Baseline, case: Case, timed: Timed | None, why: bool) -> Variant:
        v = _variant(base, case, timed, hw, why)
        variants.append(v)
        by[(base.name, case.label)] = v
        timed_of[(base.name, case.label)] = timed
        return v

    for case in cases:
        written = _time(config, case, None, module.clone(), text)
        if written is None:
            # The user's program does not lower: that is the user's error, said as npuir-run says it.
            time_program(_run_config(config, None, text, case.shapes), module.clone())
        add(AS_WRITTEN, case, written, True)
    unannotated = _without_scopes(module)
    # The other baselines and the bounds go to the executor and run while the search below
    # does (with --jobs); their results are read by key at the end.
    pool = parse_jobs(config.jobs).make()
    try:
        _submit_baselines(pool, config, cases, unannotated)
        # Auto's own candidates (`stream-partition{mode=auto}` in its row and the memory
        # trade-off) run their batches on the same pool (`npuir.executor.using`).
        with using(pool):
            advice = _search_and_report(
                config,
                module,
                text,
                calls,
                write,
                hw,
                cases,
                budget_bytes,
                unannotated,
                pool,
                copies,
                variants,
                by,
                timed_of,
                add,
            )
    finally:
        pool.close()
    return advice


def _submit_baselines(
    pool: Executor[tuple[str, int], Any],
    config: AdviseConfig,
    cases: list[Case],
    unannotated: ModuleOp,
) -> None:
    """Submit the baselines after the first (`BEFORE`) and the lower bound of every case,
    keyed (what, case index), each a task on the printed unannotated program."""
    flat_text = print_ir(unannotated, debuginfo=True)
    for i, case in enumerate(cases):
        for base in BEFORE[1:]:
            pool.submit((base.name, i), _baseline_task, config, case, base, flat_text)
        pool.submit(("lower bound", i), _bound_task, config, case, flat_text)


def _baseline_task(config: AdviseConfig, case: Case, base: Baseline, text: str) -> Variant:
    """A task: `base`'s row of `case`, on the program `text` (parsed here: every executor
    runs the same work)."""
    module = _parse_text(config, text)
    hw = device_of(module, config.hw)
    return _variant(base, case, _time(config, case, base.pipeline, module, None), hw, True)


def _bound_task(config: AdviseConfig, case: Case, text: str) -> int | None:
    """A task: `_lower_bound` of `case` on the program `text`."""
    module = _parse_text(config, text)
    return _lower_bound(config, module, case, device_of(module, config.hw))


def _search_and_report(
    config: AdviseConfig,
    module: ModuleOp,
    text: str | None,
    calls: set[Site],
    write: Any,
    hw: Hardware,
    cases: list[Case],
    budget_bytes: int | None,
    unannotated: ModuleOp,
    pool: Executor[tuple[str, int], Any],
    copies: dict[str, str],
    variants: list[Variant],
    by: dict[tuple[str, str | None], Variant],
    timed_of: dict[tuple[str, str | None], Timed | None],
    add: Callable[[Baseline, Case, Timed | None, bool], Variant],
) -> Advice:

    # The structured search.
    granularity = config.granularity
    best_name = f"advice ({granularity})"
    advice_base = Baseline(
        best_name,
        {
            "line": "the edits below: one stream per source line, the same in every layer",
            "scope": "the edits below: your with blocks kept, removed or retagged",
            "op": "the edits below (any op on any stream)",
        }[granularity],
        None,
        "edits",
    )
    auto_base = AUTO if config.mem_budget is None else _auto_under(config.mem_budget)
    reasons: list[str] = []
    keep = False
    source_text: str
    edits: list[Edit] = []
    # Auto's rows, made at once: a row keeps its figures, not the run behind them (a run of
    # a thousand ranks holds its simulation's arrays).
    auto_rows: dict[str | None, Variant] = {}
    auto_ops: dict[str, list[Operation]] = {}
    for case in cases:
        auto_module = unannotated.clone()
        if case.label is None:
            # Which op is which, before auto may reissue them (for its projection below).
            auto_ops = {
                f.sym_name.data: [o for o in walk_nested(f) if isinstance(o, NpuOp)]
                for f in auto_module.ops
                if isinstance(f, FuncOp)
            }
        auto_rows[case.label] = _variant(
            auto_base, case, _time(config, case, auto_base.pipeline, auto_module, None), hw, False
        )
    if granularity == "op":
        annotated = _annotated_auto(module, config)
        plan = None
        search = None
    else:
        targets, scopes, infos = _targets(config, module, cases, hw, granularity, calls)
        search = Search(targets, scopes, infos, granularity, calls)
        written_tags = search.written()
        starts = [written_tags, {u: stream.MAIN_TAG for u in search.units}]
        # The user's annotation with each per-layer scope's copies on one stream (what
        # STREAM_PER_LAYER suggests), for the search to judge.
        shared_tag = {t: tags[0] for _, tags in _per_layer_sites(module).values() for t in tags[1:]}
        if shared_tag:
            starts.append({u: shared_tag.get(t, t) for u, t in written_tags.items()})
        if targets:
            starts += _baseline_tags(search, hw, targets[0].judge)
            if auto_ops:
                starts += _auto_tags(search, auto_ops)
        budget = max(
            SEARCH_MIN, min(SEARCH_MAX, SEARCH_OPS // max(1, sum(len(t.prog) for t in targets)))
        )
        tags, best_cost = search.run(starts, search.trials + budget)
        tags, best_cost = search.simplify(
            tags, best_cost, timing.launch_cost(hw) * sum(t.weight for t in targets), budget
        )
        tags = _rename(tags, search)
        written_cost = search.cost(written_tags)[0]
        launch = timing.launch_cost(hw)

        def worth(candidate: dict[Unit, str], cost: float) -> bool:
            """Whether an assignment gains enough over the annotation as written: more
            than KEEP_WITHIN, and more than the launches of the streams it adds."""
            added = len(set(candidate.values()) - set(written_tags.values()) - {stream.MAIN_TAG})
            gain = written_cost - cost
            return gain > KEEP_WITHIN * written_cost and gain >= added * launch

        # The search's best, else the best start (the per-layer scopes' copies on one stream
        # among them) that `with` blocks can say and that is worth its edits.
        plan = None
        for candidate, cost in [
            (tags, best_cost),
            *sorted(((t, search.cost(t)[0]) for t in starts), key=lambda tc: tc[1]),
        ]:
            if cost >= written_cost or not worth(candidate, cost):
                continue
            plan = _plan(candidate, search)
            if plan is not None:
                tags, best_cost = candidate, cost
                break
        if plan is None:
            keep = True
            plan = _plan(written_tags, search)
            assert plan is not None
        annotated = module.clone()
        # The clone's ops are new objects: re-read the plan by source position.
        _source_form(annotated, plan)
    # Core limits, when a variant deadlocks or has a hold-and-wait hazard.
    limits: dict[Site, tuple[int, int]] = {}

    def time_all(m: ModuleOp) -> tuple[str, list[Timed | None]]:
        text_ = print_ir(m, debuginfo=True)
        return text_, [_time(config, c, None, _parse_text(config, text_), text_) for c in cases]

    def weighted(timed: list[Timed | None]) -> float:
        return sum(
            c.weight * (1 << 62 if t is None or t.result.deadlock else t.result.makespan_ns)
            for c, t in zip(cases, timed)
        )

    source_text, timed_advice = time_all(annotated)
    if any(_bad(t) for t in timed_advice):
        limited = _with_limits(config, annotated)
        if limited is not None:
            annotated, limits = limited
            source_text, timed_advice = time_all(annotated)
            keep = False
    written_bad = any(_bad(timed_of[(AS_WRITTEN.name, c.label)]) for c in cases)
    if written_bad and search is not None:
        # The user's own streams with core limits: fewer edits, preferred unless the
        # structured variant is more than KEEP_WITHIN faster.
        limited = _with_limits(config, module)
        if limited is not None:
            text_w, timed_w = time_all(limited[0])
            if not any(_bad(t) for t in timed_w) and weighted(timed_w) <= (
                1 + KEEP_WITHIN
            ) * weighted(timed_advice):
                annotated, limits = limited
                source_text, timed_advice = text_w, timed_w
                plan = _plan(search.written(), search)
                keep = False
    # A geared program's pass row: the one schedule the pass writes for every gear, in each.
    one = _one_schedule(
        config,
        unannotated,
        cases,
        auto_base,
        auto_rows,
        [timed_of.get((AS_WRITTEN.name, c.label)) for c in cases],
        budget_bytes,
        hw,
    )
    if one is not None:
        auto_rows = {c.label: row for c, row in zip(cases, one.rows)}
    elif len(cases) > 1:
        reasons.append(
            "the auto (per op) row gives each gear its own auto schedule: the pass writes one "
            "schedule for every gear, and npuir could not say one on this program"
        )
    for case, timed in zip(cases, timed_advice):
        add(advice_base, case, timed, False)
        auto_row = auto_rows[case.label]
        variants.append(auto_row)
        by[(auto_base.name, case.label)] = auto_row
    if search is not None and plan is not None and not keep:
        edits = _with_imports(_edits(plan, search, limits))
    elif search is None:
        edits = _auto_edits(module, annotated, hw)
        owned = [e for e in edits if e.source != "python" or owned_file(e.file, config.edit_files)]
        if len(owned) < len(edits):
            reasons.append(
                "some of auto's changes are in files you do not edit (installed packages): "
                "the edits leave them out, the pass row applies them all"
            )
        edits = _with_imports(owned)
    done = pool.results()
    for i, case in enumerate(cases):
        for base in BEFORE[1:]:
            v = done[(base.name, i)]
            variants.append(v)
            by[(base.name, case.label)] = v
    variants = _ordered(variants, cases)
    _reason(reasons, by, cases, best_name, keep)
    for case in cases:
        timed = timed_of.get((AS_WRITTEN.name, case.label))
        if timed is not None and timed.result.deadlock is None:
            estimated = estimated_ops(timed.result, timed.programs)
            if estimated is not None:
                where = "" if case.label is None else f"{case.label}: "
                reasons.append(where + estimated.line() + " (as written)")
    flat = unannotated
    bounds = {case.label: done[("lower bound", i)] for i, case in enumerate(cases)}
    weights = {c.label: c.weight for c in cases}
    layer_warnings = _stream_per_layer(
        config, module, cases, [timed_of.get((AS_WRITTEN.name, c.label)) for c in cases]
    )
    advice = Advice(
        variants,
        bounds,
        reasons,
        best_name,
        edits,
        keep and not limits,
        granularity,
        weights,
        source=source_text,
        memory_pareto=_memory_pareto(config, flat, cases),
        recommendation=recommend(
            variants, weights, budget_bytes, best_name, one.own if one is not None else ()
        ),
        warnings=layer_warnings,
    )
    if config.emit_mlir is not None:
        text = print_ir(_with_copies(annotated.clone(), copies) if copies else annotated)
        if write is None:
            with open(config.emit_mlir, "w", encoding="utf-8") as f:
                f.write(text)
        else:
            write(config.emit_mlir, text)
        advice.emitted = config.emit_mlir
    return advice


def _per_layer_sites(module: ModuleOp) -> dict[Site, tuple[int, list[str]]]:
    """The `with` lines whose copies have several tags: each site's column and tags, first
    use first."""
    tags: dict[Site, tuple[int, dict[str, None]]] = {}
    for op in walk_nested(module):
        if isinstance(op, stream.SwitchOp) and op.tag_name != stream.MAIN_TAG:
            site = _site(op, 0)
            loc = op.location
            if site[1] > 0 and isinstance(loc, FileLineColLoc):
                tags.setdefault(site, (loc.column.data, {}))[1][op.tag_name] = None
    return {site: (col, list(t)) for site, (col, t) in tags.items() if len(t) > 1}


def _stream_per_layer(
    config: AdviseConfig, module: ModuleOp, cases: list[Case], written: list[Timed | None]
) -> list[Diagnostic]:
    """`STREAM_PER_LAYER` for each site whose copies' tags, made one (the site's first), cost
    no more in any case than as written (`written`, per case)."""
    out: list[Diagnostic] = []
    for site, (column, tags) in _per_layer_sites(module).items():
        shared = module.clone()
        copies = 0
        for op in walk_nested(shared):
            if isinstance(op, stream.SwitchOp) and op.tag_name in tags and _site(op, 0) == site:
                op.tag = StringAttr(tags[0])
                copies += 1
        text = print_ir(shared, debuginfo=True)
        spans: list[tuple[int, int]] = []
        for case, before in zip(cases, written):
            after = _time(config, case, None, _parse_text(config, text), text)
            if _bad(before) or _bad(after):
                break
            assert before is not None and after is not None
            spans.append((after.result.makespan_ns, before.result.makespan_ns))
        if len(spans) != len(cases) or any(a > b for a, b in spans):
            continue
        shared_ns = sum(c.weight * a for c, (a, _) in zip(cases, spans))
        written_ns = sum(c.weight * b for c, (_, b) in zip(cases, spans))
        out.append(
            Diagnostic.of(
                "warning",
                STREAM_PER_LAYER,
                SourceLocation(site[0], site[1], column),
                copies=copies,
                tags=", ".join(tags),
                shared_us=f"{shared_ns / 1000:.1f}",
                written_us=f"{written_ns / 1000:.1f}",
            )
        )
    return out


def _budget_bytes(config: AdviseConfig, module: ModuleOp, hw: Hardware) -> int | None:
    """`config.mem_budget` in bytes (`hbm`: the device's HBM less the entry's static
    arguments, as `mem-plan` reads it)."""
    if config.mem_budget is None:
        return None
    funcs = {f.sym_name.data: f for f in module.ops if isinstance(f, FuncOp)}
    names = entry_names(_run_config(config, None, None, config.shapes), module)
    try:
        return parse_budget(config.mem_budget, hw.hbm_bytes, argument_bytes(funcs[names[0]]))
    except ValueError as exc:
        raise UsageError(f"--mem-budget: {exc}") from None


def _memory_pareto(config: AdviseConfig, module: ModuleOp, cases: list[Case]) -> list[Point]:
    """The makespan/memory Pareto points of the entry function of `module` (the program
    without its scopes, as auto's row has it; none for a geared one)."""
    if len(cases) != 1 or cases[0].label is not None:
        return []
    entry = entry_names(_run_config(config, None, None, config.shapes), module)[0]
    try:
        return memory_tradeoff(module, entry, config.hw)
    except DiagnosticError:
        return []


def _ordered(variants: list[Variant], cases: list[Case]) -> list[Variant]:
    order = [b.name for b in BEFORE]
    rank = {c.label: i for i, c in enumerate(cases)}

    def key(v: Variant) -> tuple[int, int]:
        pos = order.index(v.name) if v.name in order else (len(order) + (v.name == AUTO.name))
        return (rank[v.case], pos)

    return sorted(variants, key=key)


def _bad(timed: Timed | None) -> bool:
    """Whether a variant did not run, deadlocked or has a hold-and-wait hazard."""
    return (
        timed is None
        or timed.result.deadlock is not None
        or any(w.kind == HOLD_AND_WAIT.code for w in timed.warnings)
    )


def _parse_text(config: AdviseConfig, text: str) -> ModuleOp:
    return load_source(source_of_text(config.path, text), make_context())


def _without_scopes(module: ModuleOp) -> ModuleOp:
    """`module` with its stream scopes inlined (the `ignore-tags` variants' input: the same
    program, without the scopes to flatten again for each)."""
    from npuir.dialects import scope as scope_utils

    out = module.clone()
    for op in reversed([o for o in walk_nested(out) if isinstance(o, stream.SwitchOp)]):
        scope_utils.inline_scope(op)
    return out


def _with_limits(
    config: AdviseConfig, annotated: ModuleOp
) -> tuple[ModuleOp, dict[Site, tuple[int, int]]] | None:
    """The advised annotation with the core limits `coreset-partition` chooses for it,
    written as `limit_core_num` around the ops of each limited stream."""
    hw = device_of(annotated, config.hw)
    trial = annotated.clone()
    ctx = make_context(collect_diagnostics=True)
    try:
        run_passes(
            ctx, trial, build_pipeline("gear-multiversion,stream-partition,coreset-partition")
        )
    except DiagnosticError:
        return None
    limits = _stream_limits(trial)
    if not limits:
        return None
    out = annotated.clone()
    wrapped = _limit_ops(out, limits)
    sites: dict[Site, tuple[int, int]] = {}
    for scope in wrapped:
        assert isinstance(scope, coreset.LimitOp)
        cube = scope.count("cube")
        vector = scope.count("vector")
        sites[_site(scope, 0)] = (
            cube if cube is not None else hw.cube_cores,
            vector if vector is not None else hw.vector_cores,
        )
    return out, sites


# ---------------------------------------------------------------------------------------------
# The pass row of a geared program: one schedule for every gear
# ---------------------------------------------------------------------------------------------

INDEX = "advise.index"
"""A scratch attribute: each npu op's place in the program (its versions' ops are clones of
the program's, so they carry it), by which one gear's schedule is said on the program."""


@dataclass
class OneSchedule:
    """What `npuir.torchair.auto_streams` gives a geared program: TorchAir compiles one FX
    graph for every gear, so the pass writes one schedule into it, the gear's `auto` schedule
    with the least sum of the gears' makespans (its rule, every gear alike)."""

    chosen: str | None
    """The gear whose `auto` schedule the graph carries (None: the pass leaves the graph as
    written)."""
    rows: list[Variant]
    """The pass row in each case: that schedule, said as scopes, run in the gear."""
    own: list[Variant]
    """Each gear's own `auto` schedule (what the gear would get from a graph of its own)."""


def _partition_of(pipeline: str) -> str:
    """The `stream-partition{...}` element of `pipeline` (an option holds no comma)."""
    return next(p for p in pipeline.split(",") if p.startswith("stream-partition"))


def _one_schedule(
    config: AdviseConfig,
    unannotated: ModuleOp,
    cases: list[Case],
    base: Baseline,
    own: dict[str | None, Variant],
    written: list[Timed | None],
    budget_bytes: int | None,
    hw: Hardware,
) -> OneSchedule | None:
    """The pass row of a geared program (see `OneSchedule`): each gear's `auto` schedule
    said on the program (`_said`) and timed in every gear as the program as written is
    (`written`, per case); the least sum among those that run and fit `budget_bytes` in
    every gear, if it is less than the program as written's, else the program as written
    (the pass leaves the graph so).  None when a schedule cannot be said so (several
    functions, a scope of the user's that the schedule would cut through), and the row
    stays each gear's own `auto`."""
    numbered = unannotated.clone()
    funcs = [f for f in numbered.ops if isinstance(f, FuncOp)]
    if len(funcs) != 1 or len(cases) < 2:
        return None
    body = list(funcs[0].body.block.ops)[:-1]  # all but the terminator
    if any(op.regions for op in body):
        return None  # a scope of the user's (a core limit) that a schedule would cut through
    for i, op in enumerate(body):
        op.attributes[INDEX] = IntAttr(i)
    versions = numbered.clone()
    partition = _partition_of(base.pipeline or AUTO_PIPELINE)
    if config.hw:
        partition = partition[:-1] + f" hw={config.hw}}}"
    try:
        run_passes(
            make_context(collect_diagnostics=True), versions, build_pipeline("gear-multiversion")
        )
    except DiagnosticError:
        return None
    candidates: list[tuple[str | None, ModuleOp]] = []
    for case in cases:
        version = _version_of(versions, case)
        if version is None:
            return None
        alone = ModuleOp([version.clone()])
        alone.attributes.update(dict(versions.attributes))
        try:
            run_passes(make_context(collect_diagnostics=True), alone, build_pipeline(partition))
        except DiagnosticError:
            candidates = []  # a gear auto cannot schedule (a budget it cannot fit): no pass
            break
        said = _said(numbered, alone)
        if said is None:
            return None
        candidates.append((case.label, said))
    best: tuple[int, str | None, list[Variant]] | None = None
    seen: set[str] = set()
    for label, said in candidates:
        text = print_ir(said, debuginfo=True)
        if text in seen:  # gears whose auto schedules are the same: timed once
            continue
        seen.add(text)
        timed = [_time(config, c, None, _parse_text(config, text), text) for c in cases]
        rows = [_variant(base, c, t, hw, False) for c, t in zip(cases, timed)]
        if any(_bad(t) for t in timed) or any(
            budget_bytes is not None and (v.peak_bytes or 0) > budget_bytes for v in rows
        ):
            continue
        total = sum(v.makespan_ns or 0 for v in rows)
        if best is None or total < best[0]:
            best = (total, label, rows)
    if best is not None and (
        any(_bad(t) for t in written) or best[0] < sum(t.result.makespan_ns for t in written if t)
    ):
        _, chosen, rows = best
        apply = (
            f"{base.torchair}; one schedule for every gear (one FX graph): {chosen}'s auto "
            "schedule, the least sum of the gears' makespans"
        )
        pass_rows = [replace(v, torchair=apply) for v in rows]
    else:
        chosen = None
        apply = (
            f"{base.torchair}; on this program it leaves the graph as written: no gear's auto "
            "schedule, shared by every gear"
            + ("" if budget_bytes is None else " within the memory budget")
            + ", is faster over the gears"
        )
        row = replace(base, torchair=apply)
        pass_rows = [_variant(row, c, t, hw, False) for c, t in zip(cases, written)]
    return OneSchedule(chosen, pass_rows, [replace(own[c.label], name=OWN_AUTO) for c in cases])


OWN_AUTO = "auto (the gear's own)"
"""The per-gear advice's name for a gear's own `auto` schedule (not a row: one FX graph
carries one schedule for every gear)."""


def _version_of(versions: ModuleOp, case: Case) -> FuncOp | None:
    """The static version (`gear-multiversion`'s) whose argument shapes are `case`'s."""
    for func in versions.ops:
        if not isinstance(func, FuncOp) or not func.body.blocks:
            continue
        shapes = [
            tuple(t.get_shape()) if isinstance(t, TensorType) else None
            for t in func.function_type.inputs.data
        ]
        if any(s is not None and any(d < 0 for d in s) for s in shapes):
            continue  # the generic body (a dispatcher, or `fallback=dynamic`'s)
        if all(
            int(k) < len(shapes) and shapes[int(k)] == tuple(shape)
            for k, shape in case.shapes.items()
        ):
            return func
    return None


def _said(numbered: ModuleOp, partitioned: ModuleOp) -> ModuleOp | None:
    """`numbered` (one function, the ops of its block numbered by `INDEX`) in the order, on
    the streams, under the core limits and with the orderings (a memory budget's
    `stream.wait_tensor`s) that `partitioned` (a version of it, after `stream-partition`)
    gives its ops, said as scopes by `stream-source-form`; None when the version holds
    anything else."""
    (version,) = [f for f in partitioned.ops if isinstance(f, FuncOp)]
    steps: list[tuple[list[Operation], Operation | None]] = []
    for op in version.body.block.ops:
        if INDEX in op.attributes or isinstance(op, stream.WaitTensorOp):
            steps.append(([op], None))
        elif isinstance(op, coreset.LimitOp):
            inner = [o for o in op.body.block.ops if not isinstance(o, coreset.YieldOp)]
            if not all(INDEX in o.attributes for o in inner):
                return None
            steps.append((inner, op))
        elif not isinstance(op, ReturnOp):
            return None
    out = numbered.clone()
    (func,) = [f for f in out.ops if isinstance(f, FuncOp)]
    block = func.body.block
    terminator = block.last_op
    assert terminator is not None
    by_index = {_index(o): o for o in block.ops if INDEX in o.attributes}
    order = [_index(o) for ops, _ in steps for o in ops if INDEX in o.attributes]
    if sorted(order) != sorted(by_index) or len(set(order)) != len(order):
        return None
    waits: dict[SSAValue, SSAValue] = {}

    def mine(value: SSAValue) -> SSAValue | None:
        """The program's value for the version's `value`."""
        if isinstance(value, BlockArgument):
            return func.args[value.index] if value.owner is version.body.block else None
        assert isinstance(value, OpResult)
        if value in waits:
            return waits[value]
        if isinstance(value.op, coreset.LimitOp):
            last = value.op.body.block.last_op
            return None if last is None else mine(last.operands[value.index])
        if INDEX in value.op.attributes:
            return by_index[_index(value.op)].results[value.index]
        return None

    for ops, limit in steps:
        moved: list[Operation] = []
        for op in ops:
            if INDEX not in op.attributes:
                assert isinstance(op, stream.WaitTensorOp)
                # An ordering `auto` added: the same wait, read by the same operand of the same op.
                tensor, dep = mine(op.tensor), mine(op.dep)
                # (A later wait of a chain reads it through `mine`.)
                users = [
                    (use.operation, use.index)
                    for use in op.result.uses
                    if not isinstance(use.operation, stream.WaitTensorOp)
                ]
                if (
                    tensor is None
                    or dep is None
                    or any(INDEX not in u.attributes for u, _ in users)
                ):
                    return None
                wait = stream.WaitTensorOp(tensor, dep)
                wait.location = op.location
                block.insert_op_before(wait, terminator)
                waits[op.result] = wait.result
                for user, index in users:
                    by_index[_index(user)].operands[index] = wait.result
                moved.append(wait)
            else:
                here = by_index[_index(op)]
                here.detach()
                block.insert_op_before(here, terminator)
                moved.append(here)
            on = op.attributes.get(stream.STREAM_ON)
            if on is not None:
                moved[-1].attributes[stream.STREAM_ON] = on
        if isinstance(limit, coreset.LimitOp):
            escaping_values = escaping(moved)
            scope = coreset.LimitOp(
                limit.count("cube"),
                limit.count("vector"),
                Region(Block()),
                [v.type for v in escaping_values],
            )
            wrap(moved, scope)
            scope.regions[0].blocks[0].add_op(coreset.YieldOp(*escaping_values))
    for op in by_index.values():
        del op.attributes[INDEX]
    first = out.body.block.first_op
    assert first is not None
    for decl in [d for d in partitioned.ops if isinstance(d, stream.DeclOp)]:
        out.body.block.insert_op_before(decl.clone(), first)
    run_passes(make_context(collect_diagnostics=True), out, build_pipeline("stream-source-form"))
    return out


def _index(op: Operation) -> int:
    attr = op.attributes[INDEX]
    assert isinstance(attr, IntAttr)
    return attr.data


def _annotated_auto(module: ModuleOp, config: AdviseConfig) -> ModuleOp:
    """`auto`'s assignment in source form (the `op` granularity)."""
    out = module.clone()
    ctx = make_context(collect_diagnostics=True)
    spec = "stream-partition{mode=auto ignore-tags=true limits=true}"
    if config.hw:
        spec = f"stream-partition{{mode=auto ignore-tags=true limits=true hw={config.hw}}}"
    # Back in source form: each run of ops on a stream other than the main one in a scope.
    run_passes(ctx, out, build_pipeline(spec + ",stream-source-form"))
    return out


def _auto_edits(original: ModuleOp, annotated: ModuleOp, hw: Hardware) -> list[Edit]:
    """Edits for the `op` granularity: every user scope removed, each run of ops `auto`
    put on a stream wrapped (by the ops' lines; they need not be whole statements), and each
    core limit `auto` chose (`limits=true`) as a `limit_core_num` around its op's line."""
    out: list[Edit] = []
    for op in walk_nested(original):
        if isinstance(op, stream.SwitchOp) and op.tag_name != stream.MAIN_TAG:
            file, line = _site(op, 0)
            source = "python" if _python(file) else "mlir"
            out.append(Edit("remove-scope", file, line, line, source, op.tag_name))
    for op in walk_nested(annotated):
        if isinstance(op, stream.SwitchOp):
            sites = [_site(o, 0) for o in op.body.walk() if isinstance(o, NpuOp)]
            if sites:
                lines = sorted(s[1] for s in sites)
                file = sites[0][0]
                source = "python" if _python(file) else "mlir"
                out.append(Edit("add-stream-scope", file, lines[0], lines[-1], source, op.tag_name))
    written = {_site(op, 0) for op in walk_nested(original) if isinstance(op, coreset.LimitOp)}
    limited: list[tuple[str, tuple[int, int], int]] = []
    for op in walk_nested(annotated):
        if isinstance(op, coreset.LimitOp) and (site := _site(op, 0)) not in written:
            cube, vector = op.count("cube"), op.count("vector")
            counts = (
                cube if cube is not None else hw.cube_cores,
                vector if vector is not None else hw.vector_cores,
            )
            limited.append((site[0], counts, site[1]))
    # Consecutive lines with the same counts: one scope.
    ranges: list[tuple[str, tuple[int, int], int, int]] = []
    for file, counts, line in sorted(limited):
        if ranges and ranges[-1][:2] == (file, counts) and ranges[-1][3] + 1 >= line:
            ranges[-1] = (file, counts, ranges[-1][2], line)
        else:
            ranges.append((file, counts, line, line))
    for file, counts, first, last in sorted(ranges, key=lambda r: (r[0], r[2])):
        source = "python" if _python(file) else "mlir"
        out.append(Edit("add-limit-scope", file, first, last, source, counts=counts))
    return out


def _reason(
    reasons: list[str],
    by: dict[tuple[str, str | None], Variant],
    cases: list[Case],
    best: str,
    keep: bool,
) -> None:
    for case in cases:
        prefix = f"{case.label}: " if case.label else ""
        written = by.get((AS_WRITTEN.name, case.label))
        single = by.get(("single stream", case.label))
        advised = by.get((best, case.label))
        if written is not None and written.deadlock:
            reasons.append(
                prefix + "your annotation deadlocks: an op that must hold all the cores it asks "
                "for waits for cores a collective holds while that collective waits for its peer "
                "(npuir-run shows the cycle)"
            )
        if (
            single is not None
            and single.explanation is not None
            and written is not None
            and written.explanation is not None
        ):
            reasons.append(
                prefix
                + compare(written.explanation, single.explanation, "your annotation", "one stream")
            )
        if advised is not None and written is not None and not keep:
            if advised.makespan_ns is not None and written.makespan_ns is not None:
                delta = written.makespan_ns - advised.makespan_ns
                reasons.append(
                    prefix + f"the advice takes {advised.makespan_ns / 1000:.1f} µs, "
                    f"{abs(delta) / 1000:.1f} µs {'less' if delta >= 0 else 'more'} than "
                    "your annotation"
                )
            elif advised.makespan_ns is not None:
                reasons.append(
                    prefix + f"the advice runs without the deadlock, in "
                    f"{advised.makespan_ns / 1000:.1f} µs"
                )
    if keep:
        reasons.append(
            f"no edit to your with blocks is worth writing: the best structured variant is "
            f"within {KEEP_WITHIN:.0%} of your annotation, or gains less than the launches of "
            f"the streams it would add (the {best} row is your annotation as written)"
        )


CALL_SITES = "torch.call_sites"
"""The module attribute the torch importer lists the model's call sites in
(`npuir.frontends.torch.CALL_SITES`; named here too, torch being optional)."""


def _call_sites(module: ModuleOp) -> set[Site]:
    listed = module.attributes.get(CALL_SITES)
    out: set[Site] = set()
    if isinstance(listed, ArrayAttr):
        for entry in listed.data:
            if isinstance(entry, StringAttr):
                file, _, line = entry.data.rpartition(":")
                if file and line.isdigit():
                    out.add((file, int(line)))
    return out


def _lower_bound(config: AdviseConfig, module: ModuleOp, case: Case, hw: Hardware) -> int | None:
    """`npuir.schedule.bounds.lower_bound_ns` of the entry function (rank 0's) in `case`."""
    try:
        scratch = module.clone()
        run_passes(
            make_context(collect_diagnostics=True), scratch, build_pipeline("gear-multiversion")
        )
        funcs = {f.sym_name.data: f for f in scratch.ops if isinstance(f, FuncOp)}
        names, shapes = entries_and_shapes(_run_config(config, None, None, case.shapes), module)
        func, _ = resolve_entry(scratch, funcs[names[0]], shapes[0])
        return lower_bound_ns(timing_function(func, shapes[0]), hw)
    except (DiagnosticError, UsageError, NumericsError):
        return None


__all__ = [
    "Advice",
    "AdviseConfig",
    "Edit",
    "Variant",
    "advise",
    "apply_edits",
]
