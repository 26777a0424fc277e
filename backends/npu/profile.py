"""Operator profiles: msprof-style op-summary CSVs as per-op costs, read and written.

Ascend's profiler (msprof) writes an op summary, one row per executed task; GE's
profile-guided multi-stream mode reads the same kind of file, and torch_npu's profiler
writes it again as `kernel_details.csv` under other names (`CsvHeaders` in
`torch_npu/profiler/analysis/prof_common_func/_csv_headers.py`).  npuir reads the columns

| column | meaning |
|---|---|
| `Op Name` | the operator's name: matched against the `npu.op_name` attribute importers set |
| `OP Type` | its type: the `npu` op kind (`matmul`, `add`, ...) or an opaque op's `ge_type` |
| `Task Type` | the engine it ran on (`TASK_ENGINES`): `AI_CORE`, `AI_VECTOR_CORE`, `MIX_AIC`, ... |
| `Task Duration(us)` | how long the task ran, in microseconds |
| `Block Dim` | cores the task ran on (of its op's engine) |
| `Mix Block Dim` | for a mixed kernel, the cores of the other engine (0 otherwise) |
| `Input Shapes` | optional: `"d0,d1;d0,d1"` per input (quoted), to match by kind and shapes |

and ignores every other column.  Each column may go by its other names (`ALIASES`): newer
msprof writes `Block Num` / `Mix Block Num`, and `kernel_details.csv` has `Name`, `Type`,
`Accelerator Core`, `Duration(us)`, `Block Num`, `Mix Block Num` -- so a real device's
`kernel_details.csv` or `op_summary_*.csv` is read as the profiler wrote it.  `Mix Block
Dim` may be missing (the profiler leaves it out on some devices; then it is 0).  `OP Type`
matches an op's kind without case or underscores (`RmsNorm` is `npu.rms_norm`).  A bad row
is a located error, `file.csv:LINE: error: ...`.

An op takes its cost from the row whose `Op Name` is its `npu.op_name`; an op without a
match by name takes it from the rows of its kind and input shapes (when the file has
`Input Shapes`).  Rows that share a key (several iterations of one op) are averaged; the
largest block dim counts.  A profiled op's task duration replaces the cost model's whole
duration, launch included (the profiler times the task as the stream runs it), and its block
dim is its core demand; granted fewer cores than that (a core limit, or cores taken by
others), it runs proportionally longer -- an assumption: kernels scale linearly in their
block dim.  Ops no row covers keep the cost model.

`profile_csv` writes the same format from a simulation (`npuir-run --emit-profile`), so
a profile round-trips and users can see the format; it raises `OutputError` when it cannot
write (`npuir.tools.output`).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import StringAttr, TensorType

from npuir.analysis.program import NodeKind, Program
from npuir.diagnostics import Diagnostic, DiagnosticError, Kind, SourceLocation
from npuir.dialects.npu import OP_NAME, NpuOp, shape_of

# A profile that cannot be read: `profile.unreadable.<what>`.
PROFILE_UNREADABLE = Kind("profile.unreadable", "cannot read profile '{path}': {reason}")
"""The file cannot be read; arguments: `path`, `reason` (the system's)."""
NOT_A_NUMBER = Kind("profile.unreadable.number", "'{column}' is '{text}', which is not {expected}")
"""A cell that is not the number its column holds; arguments: `column`, `text`,
`expected`."""
EMPTY_PROFILE = Kind("profile.unreadable.empty", "the profile is empty; it needs a header row")
"""A profile without a header row."""
NOT_CSV = Kind("profile.unreadable.csv", "not CSV: {reason}")
"""Text the CSV reader refuses; argument: `reason` (its message)."""
MISSING_COLUMNS = Kind(
    "profile.unreadable.columns",
    "the header has no column {missing}; an op summary needs {needed}",
)
"""A header without a column the op summary needs; arguments: `missing`, `needed` (quoted
names, comma-separated)."""
ROW_LENGTH = Kind("profile.unreadable.row", "the row has {cells} cells, the header {columns}")
"""A row with another number of cells than the header; arguments: `cells`, `columns`."""
EMPTY_NAME = Kind("profile.unreadable.op-name", "'{column}' is empty")
"""A row without an op name; argument: `column` (`Op Name` or `Name`)."""
UNKNOWN_TASK_TYPE = Kind(
    "profile.task-type-unknown",
    "row '{name}': '{column}' is '{task}', a task type npuir does not know; the row is "
    "left out (known: {known})",
)
"""A row whose task type is neither one npuir maps to an engine nor one it ignores (a newer
profiler's, or a typo): a warning, and the row is left out; arguments: `name` (the row's op
name), `column` (`Task Type` or `Accelerator Core`), `task`, `known`."""
IGNORED_TASKS = Kind(
    "profile.task-type-ignored", "{rows} {task} row(s) left out, the first here: {why}"
)
"""Rows of a task type with no npuir meaning, counted: a note per type, located at its first
row; arguments: `rows`, `task`, `why`."""

if TYPE_CHECKING:
    from .simulator import SimResult

__all__ = [
    "COLUMNS",
    "IGNORED_TASK_TYPES",
    "TASK_ENGINES",
    "TASK_TYPES",
    "Profile",
    "ProfiledCost",
    "kind_of",
    "profile_csv",
    "read_profile",
    "shapes_of",
]

COLUMNS: tuple[str, ...] = (
    "Op Name",
    "OP Type",
    "Task Type",
    "Task Duration(us)",
    "Block Dim",
    "Mix Block Dim",
)
"""The columns a profile must have (each under its name or one of its `ALIASES`), but for
`Mix Block Dim`, which may be missing."""

ALIASES: dict[str, tuple[str, ...]] = {
    "Op Name": ("Name",),
    "OP Type": ("Type",),
    "Task Type": ("Accelerator Core",),
    "Task Duration(us)": ("Duration(us)",),
    "Block Dim": ("Block Num",),
    "Mix Block Dim": ("Mix Block Num",),
}
"""Other names of `COLUMNS`: msprof's newer op summary and torch_npu's kernel_details.csv
(`CsvHeaders.OP_SUMMARY_KERNEL_BASE_HEADERS`)."""

_OPTIONAL = frozenset({"Mix Block Dim"})


def _kind_key(kind: str) -> str:
    """An `OP Type` as it matches: without case or underscores."""
    return kind.replace("_", "").lower()


_SHAPES = "Input Shapes"

TASK_TYPES: dict[str, str] = {
    "cube": "AI_CORE",
    "vector": "AI_VECTOR_CORE",
    "aicpu": "AI_CPU",
    "comm": "HCCL",
}
"""The task type `profile_csv` gives each engine's ops (msprof's names)."""

TASK_ENGINES: dict[str, tuple[str, str]] = {
    "AI_CORE": ("cube", ""),
    "AI_VECTOR_CORE": ("vector", ""),
    "MIX_AIC": ("cube", "vector"),
    "MIX_AIV": ("vector", "cube"),
    "AI_CPU": ("aicpu", ""),
    "HCCL": ("comm", ""),
    "COMMUNICATION": ("comm", ""),
}
"""The engine a task type ran on, and for a mixed kernel the engine of its `Mix Block Dim`
(`MIX_AIC`: a cube kernel with vector cores beside; `MIX_AIV`, the converse).  `AI_CORE` is
the cube core of a device whose cores are split (910B on); msprof calls collectives `HCCL`,
newer versions `COMMUNICATION`."""

IGNORED_TASK_TYPES: dict[str, str] = {
    "WRITE_BACK": "a write-back task, not an operator",
    "INVALID": "the profiler could not tell what ran",
    "FFTS_PLUS": "a container whose sub-tasks have rows of their own",
    "DSA": "the data streaming accelerator (random numbers), which npuir does not model",
    "SDMA": "a copy task, which npuir does not model",
    "MEMCPY_ASYNC": "a copy task, which npuir does not model",
    "STREAM_ACTIVE": "stream control, which npuir's own sync ops model",
    "EVENT_RECORD": "an event, which npuir's own sync ops model",
    "EVENT_WAIT": "an event, which npuir's own sync ops model",
    "NOTIFY_RECORD": "a notify, which npuir's own sync ops model",
    "NOTIFY_WAIT": "a notify, which npuir's own sync ops model",
    "PLACEHOLDER": "a placeholder task, not an operator",
}
"""Task types the profiler writes that have no npuir meaning: their rows are left out and
counted in one note per type."""


def task_type(text: str) -> str:
    """A task type as the tables key it: upper case, spaces as underscores (torch_npu's
    `Accelerator Core` may read `AI Core` in some versions)."""
    return text.strip().upper().replace(" ", "_")


@dataclass(frozen=True)
class ProfiledCost:
    """What a profile says one op costs."""

    duration_ns: int
    """Task duration, launch included."""
    block_dim: int
    """Cores of the op's engine it ran on (0: none, e.g. an sdma collective)."""
    mix_block_dim: int
    task_type: str

    def cores_for(self, engine: str) -> int:
        """The cores of `engine` the task ran on: its block dim when it ran on `engine`, its
        mix block dim when `engine` is its mix engine, else 0 (the profile does not say:
        the cost model's parallelism stands)."""
        main, mix = TASK_ENGINES.get(self.task_type, ("", ""))
        if engine == main:
            return self.block_dim
        return self.mix_block_dim if mix and engine == mix else 0


@dataclass
class _Rows:
    durations: list[float] = field(default_factory=list[float])
    block_dim: int = 0
    mix_block_dim: int = 0
    task_type: str = ""

    def add(self, us: float, block: int, mix: int, task: str) -> None:
        self.durations.append(us)
        self.block_dim = max(self.block_dim, block)
        self.mix_block_dim = max(self.mix_block_dim, mix)
        self.task_type = task

    def cost(self) -> ProfiledCost:
        mean_us = sum(self.durations) / len(self.durations)
        return ProfiledCost(
            max(1, round(mean_us * 1000)), self.block_dim, self.mix_block_dim, self.task_type
        )


def kind_of(op: NpuOp) -> str:
    """The `OP Type` an op is matched by: an opaque op's `ge_type`, else its kind."""
    ge_type = op.attributes.get("ge_type")
    if isinstance(ge_type, StringAttr):
        return ge_type.data
    return op.name.removeprefix("npu.")


def shapes_of(values: Sequence[object]) -> str:
    """msprof's shape text: `d0,d1;d0,d1`, one group per tensor."""
    out: list[str] = []
    for value in values:
        ty = getattr(value, "type", None)
        if isinstance(ty, TensorType):
            out.append(",".join(str(d) for d in shape_of(ty)))
    return ";".join(out)


def _op_name(op: NpuOp) -> str | None:
    name = op.attributes.get(OP_NAME)
    return name.data if isinstance(name, StringAttr) else None


@dataclass(eq=False)
class Profile:
    """Per-op costs read from a profile (`read_profile`); hashed by identity, so a
    `SimCache` can keep each profile's lookups."""

    path: str
    rows: int
    by_name: dict[str, ProfiledCost]
    by_kind_and_shapes: dict[tuple[str, str], ProfiledCost]
    warnings: list[Diagnostic] = field(default_factory=list[Diagnostic])
    """Rows left out: a warning per unknown task type's row, a note per ignored type."""

    def lookup(self, op: NpuOp) -> ProfiledCost | None:
        """The profiled cost of `op`: by `npu.op_name`, else by kind and input shapes."""
        name = _op_name(op)
        if name is not None:
            cost = self.by_name.get(name)
            if cost is not None:
                return cost
        if not self.by_kind_and_shapes:
            return None
        return self.by_kind_and_shapes.get((_kind_key(kind_of(op)), shapes_of(op.operands)))


def _error(path: str, line: int, kind: Kind, /, **args: object) -> DiagnosticError:
    return DiagnosticError(Diagnostic.of("error", kind, SourceLocation(path, line, 0), **args))


def _number(path: str, line: int, column: str, text: str, integer: bool) -> float:
    text = text.strip()
    if integer and text in ("", "N/A"):
        return 0  # msprof leaves the block dims of some tasks empty
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        value = -1
    if not (value >= 0 and math.isfinite(value)):
        what = "a whole number >= 0" if integer else "a number of microseconds >= 0"
        raise _error(path, line, NOT_A_NUMBER, column=column, text=text, expected=what)
    return value


def read_profile(path: str) -> Profile:
    """Read the op summary at `path`; a missing column or a bad row is a located error."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        message = getattr(exc, "strerror", None) or str(exc)
        raise DiagnosticError(
            Diagnostic.of("error", PROFILE_UNREADABLE, path=path, reason=message)
        ) from None
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise _error(path, 1, EMPTY_PROFILE) from None
    except csv.Error as exc:
        raise _error(path, 1, NOT_CSV, reason=str(exc)) from None
    at: dict[str, int] = {}
    for name in (*COLUMNS, _SHAPES):
        found = next((n for n in (name, *ALIASES.get(name, ())) if n in header), None)
        if found is not None:
            at[name] = header.index(found)
    missing = [c for c in COLUMNS if c not in at and c not in _OPTIONAL]
    if missing:

        def spelt(c: str) -> str:
            return " or ".join(f"'{n}'" for n in (c, *ALIASES.get(c, ())))

        raise _error(
            path,
            1,
            MISSING_COLUMNS,
            missing=", ".join(spelt(c) for c in missing),
            needed=", ".join(spelt(c) for c in COLUMNS if c not in _OPTIONAL),
        )
    by_name: dict[str, _Rows] = {}
    by_kind: dict[tuple[str, str], _Rows] = {}
    rows = 0
    warnings: list[Diagnostic] = []
    ignored: dict[str, tuple[int, int]] = {}
    """Rows left out per ignored task type: (how many, the first's line)."""
    try:
        for cells in reader:
            line = reader.line_num
            if not any(c.strip() for c in cells):
                continue
            if len(cells) != len(header):
                raise _error(path, line, ROW_LENGTH, cells=len(cells), columns=len(header))
            name = cells[at["Op Name"]].strip()
            if not name:
                raise _error(path, line, EMPTY_NAME, column=header[at["Op Name"]])
            task = task_type(cells[at["Task Type"]])
            if task in IGNORED_TASK_TYPES:
                count, first = ignored.get(task, (0, line))
                ignored[task] = (count + 1, first)
                continue
            if task not in TASK_ENGINES:
                warnings.append(
                    Diagnostic.of(
                        "warning",
                        UNKNOWN_TASK_TYPE,
                        SourceLocation(path, line, 0),
                        name=name,
                        column=header[at["Task Type"]],
                        task=cells[at["Task Type"]].strip(),
                        known=", ".join((*TASK_ENGINES, *IGNORED_TASK_TYPES)),
                    )
                )
                continue
            us = _number(
                path, line, header[at["Task Duration(us)"]], cells[at["Task Duration(us)"]], False
            )
            block = int(_number(path, line, header[at["Block Dim"]], cells[at["Block Dim"]], True))
            mix_cell = cells[at["Mix Block Dim"]] if "Mix Block Dim" in at else ""
            mix_name = header[at["Mix Block Dim"]] if "Mix Block Dim" in at else "Mix Block Dim"
            mix = int(_number(path, line, mix_name, mix_cell, True))
            rows += 1
            by_name.setdefault(name, _Rows()).add(us, block, mix, task)
            if _SHAPES in at:
                key = (_kind_key(cells[at["OP Type"]].strip()), cells[at[_SHAPES]].strip())
                by_kind.setdefault(key, _Rows()).add(us, block, mix, task)
    except csv.Error as exc:
        raise _error(path, reader.line_num, NOT_CSV, reason=str(exc)) from None
    for task, (count, first) in ignored.items():
        where = SourceLocation(path, first, 0)
        why = IGNORED_TASK_TYPES[task]
        warnings.append(Diagnostic.of("note", IGNORED_TASKS, where, rows=count, task=task, why=why))
    return Profile(
        path,
        rows,
        {k: v.cost() for k, v in by_name.items()},
        {k: v.cost() for k, v in by_kind.items()},
        warnings,
    )


def profile_csv(result: SimResult, programs: Sequence[Program]) -> str:
    """`result`'s compute ops as an op summary `read_profile` reads back: one row per op per
    rank (`Device_id`), durations as the simulator ran them (launch included)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        [
            "Device_id",
            "Op Name",
            "OP Type",
            "Task Type",
            "Task Start Time(us)",
            "Task Duration(us)",
            "Block Dim",
            "Mix Block Dim",
            "Input Shapes",
            "Output Shapes",
        ]
    )
    for rec in result.ops:
        prog = programs[rec.rank]
        if prog.kind[rec.node] is not NodeKind.COMPUTE:
            continue
        op = prog.ops[rec.node]
        assert isinstance(op, NpuOp)
        name = _op_name(op) or (
            op.results[0].name_hint if op.results and op.results[0].name_hint else None
        )
        writer.writerow(
            [
                rec.rank,
                name or f"{kind_of(op)}_{rec.node}",
                kind_of(op),
                TASK_TYPES[rec.engine],
                f"{rec.start / 1000:.3f}",
                f"{(rec.end - rec.start) / 1000:.3f}",
                rec.cores,
                0,
                shapes_of(op.operands),
                shapes_of(op.results),
            ]
        )
    return out.getvalue()
