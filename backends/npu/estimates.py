"""Which ops of a simulated run were costed by estimate, and how much of the makespan they fill.

A makespan is only as good as the costs under it.  Most `npu` ops have a cost rule (the
roofline of `timing` on the work `cost.op_work` reads, with the Ascend kernel's engine and
tiling); two kinds of op have only a guess, and every report names them so that a user
knows how much of the figure rests on guesses:

- `npu.opaque` -- an operator npuir has no `npu` op for (an ATen op without a mapping, a GE
  type without a rule): costed from its tensor sizes, one operation per result element and
  every tensor moved once, on the engine the importer named;
- `npu.nonzero`, whose result size depends on the data: a run costs it, and the ops after
  it, at the upper bound (every element non-zero; `npuir.driver.run.timing_function`), so
  its line stands for the ops downstream of it too.

`estimated_ops` gathers them from a simulation: each kind with its count, its reason and
the share of the makespan during which an op of that kind runs, and the share of all of
them together (a union of run intervals, so estimates side by side are not counted
twice).  `npuir-run` (text and `--json`), `npuir-advise` and the torch backend's
`reports()` print `Estimated.line()`; `--json` carries `Estimated.to_json()`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.ir import Operation

from npuir.analysis.program import Program
from npuir.backends.npu.cost import runs_without_task
from npuir.backends.npu.simulator import SimResult
from npuir.dialects import npu

__all__ = ["Estimated", "EstimatedKind", "estimate_of", "estimated_ops"]

OPAQUE = "npu.opaque: no npu op, costed from its tensor sizes"
"""Why an `npu.opaque` op's cost is an estimate."""

DATA_DEPENDENT = "data-dependent size, it and the ops after it costed at the upper bound"
"""Why an `npu.nonzero`'s cost (and its consumers') is an estimate."""


def estimate_of(op: Operation) -> tuple[str, str] | None:
    """(kind, reason) when `op`'s cost is an estimate, else None: an `npu.opaque` is named by
    the operator type it stands for, any other op by its name."""
    if not isinstance(op, npu.NpuOp) or runs_without_task(op):
        return None  # a metadata-only view costs nothing, estimated or not
    if isinstance(op, npu.OpaqueOp):
        return op.ge_type.data, OPAQUE
    if isinstance(op, npu.NonzeroOp):
        return op.name, DATA_DEPENDENT
    return None


@dataclass(frozen=True)
class EstimatedKind:
    """One kind of op costed by estimate in a run."""

    kind: str
    """The operator type an `npu.opaque` stands for, or the op's name."""
    reason: str
    """Why its cost is an estimate."""
    count: int
    """Ops of this kind the run executed."""
    share: float
    """Fraction of the makespan during which at least one of them runs."""

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "reason": self.reason, "count": self.count, "share": self.share}


@dataclass(frozen=True)
class Estimated:
    """The ops a simulation costed by estimate, by kind, and the share of the makespan during
    which at least one of them runs."""

    details: tuple[EstimatedKind, ...]
    """Each kind, the largest share first."""
    share: float

    @property
    def kinds(self) -> dict[str, int]:
        """How many ops of each kind."""
        return {d.kind: d.count for d in self.details}

    def line(self) -> str:
        """The report line, as `npuir-run`, `npuir-advise` and the torch backend print it."""
        ops = sum(d.count for d in self.details)
        named = "; ".join(
            f"{d.kind}{f' x{d.count}' if d.count > 1 else ''} {d.share:.1%} ({d.reason})"
            for d in self.details
        )
        return (
            f"{ops} op(s) costed by estimate run during {self.share:.1%} of the makespan: {named}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kinds": dict(sorted(self.kinds.items())),
            "share": self.share,
            "ops": [d.to_json() for d in self.details],
        }


def _covered(spans: Iterable[tuple[int, int]]) -> int:
    """Nanoseconds covered by the union of `spans`."""
    covered = 0
    reach = -1
    for start, end in sorted(spans):
        start = max(start, reach)
        if end > start:
            covered += end - start
        reach = max(reach, end)
    return covered


def estimated_ops(result: SimResult, programs: Sequence[Program]) -> Estimated | None:
    """What of a simulated run was costed by estimate (see the module docstring); None when
    nothing was."""
    spans: dict[tuple[str, str], list[tuple[int, int]]] = {}
    # Per distinct program, its estimated nodes (SPMD ranks share one): only their records
    # are read, rank by rank.
    estimated: dict[int, dict[int, tuple[str, str]]] = {}
    for rank in range(min(result.ranks, len(programs))):
        prog = programs[rank]
        nodes = estimated.get(id(prog))
        if nodes is None:
            nodes = estimated[id(prog)] = {}
            for n, op in enumerate(prog.ops):
                found = estimate_of(op)
                if found is not None:
                    nodes[n] = found
        for n, found in nodes.items():
            record = result.op(rank, n)
            if record is not None:
                spans.setdefault(found, []).append((record.start, record.end))
    if not spans:
        return None
    makespan = result.makespan_ns

    def share(covered: int) -> float:
        return covered / makespan if makespan else 0.0

    details = sorted(
        (
            EstimatedKind(kind, reason, len(s), share(_covered(s)))
            for (kind, reason), s in spans.items()
        ),
        key=lambda d: (-d.share, d.kind),
    )
    everything = _covered(span for s in spans.values() for span in s)
    return Estimated(tuple(details), share(everything))
