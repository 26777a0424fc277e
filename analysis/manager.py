"""The analysis cache: each analysis computed once per IR it reads, until a pass changes it.

MLIR's `AnalysisManager` is the model.  A pass asks for an analysis of an op through
`analyses(ctx).get(factory, *args)`; the first call computes `factory(*args)`, later calls
with the same factory and arguments (compared by identity for IR objects) return the same
object.  A pass that rewrites IR and already knows an analysis of what it wrote hands it
on with `provide` (stream-partition gives the partitioned graph to insert-events, which
gives the lowered one to the checks and the runner), and a pass that changes IR but not an
analysis says so with `keep`, so each function's graph is read from the IR once per
lowering.  `run_passes` clears the cache before a pipeline and after every pass that does not
declare, with `PRESERVES = ALL`, that it leaves the IR as it found it (MLIR's
`markAllAnalysesPreserved`); a pass may also name the factories it keeps, as a tuple.

    from npuir.analysis.manager import LoweredFunction, analyses

    lowered = analyses(ctx).get(LoweredFunction, func, tuple(streams))
    lowered.prog, lowered.happens_before

Under a plain xDSL `Context` (a stock `xdsl-opt`) there is no cache to share: every call
computes afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from typing import Any, Final, Literal, TypeVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from npuir.analysis.happens_before import HappensBefore
from npuir.analysis.program import (
    NOT_PARTITIONED,
    Program,
    StreamInfo,
    build_program,
    module_streams,
    scheduled_functions,
)
from npuir.diagnostics import error

T = TypeVar("T")

ALL: Final = "all"
"""`PRESERVES = ALL`: the pass changes no IR, so every analysis stays valid."""

Preserved = Literal["all"] | tuple[Callable[..., Any], ...]
"""What a pass keeps valid: every analysis, or the factories it names."""


class AnalysisManager:
    """A cache of analyses keyed by (factory, arguments)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[Hashable, ...], Any] = {}
        self._provided: dict[tuple[Hashable, ...], Any] = {}
        self.computed = 0
        """How many analyses were made: computed on a cache miss, or provided by the pass that
        made them (`provide`); for tests and benchmarks."""

    def get(self, factory: Callable[..., T], *args: Hashable) -> T:
        key = (factory, *args)
        if key in self._cache:
            return self._cache[key]
        value = factory(*args)
        self.computed += 1
        self._cache[key] = value
        return value

    def provide(self, factory: Callable[..., T], *args: Hashable, value: T) -> None:
        """Hand over `value` as `factory(*args)` of the IR the running pass leaves behind:
        a pass that rewrites IR and already knows the analysis of its result (insert-events
        knows the program graph of what it wrote) gives it to the passes after it.  It
        takes effect when the pass ends, and survives that pass's invalidation."""
        self._provided[(factory, *args)] = value
        self.computed += 1

    def keep(self, factory: Callable[..., Any], *args: Hashable) -> None:
        """Declare that the running pass leaves `factory(*args)` valid, when it is cached:
        like `provide` with the value already there (`coreset-lower` keeps the graph of
        each function whose data it did not change)."""
        key = (factory, *args)
        if key in self._cache:
            self._provided[key] = self._cache[key]

    def reset(self) -> None:
        """Forget everything, what a failed pass provided too (a pipeline starts so)."""
        self._cache.clear()
        self._provided.clear()

    def invalidate(self, preserved: Preserved = ()) -> None:
        """Forget every analysis but those `preserved` names; then keep what the pass
        that just ran provided (`provide`)."""
        if preserved != ALL:
            keep = set(preserved)
            self._cache = {k: v for k, v in self._cache.items() if k[0] in keep}
        self._cache.update(self._provided)
        self._provided.clear()


def analyses(ctx: Context) -> AnalysisManager:
    """The context's analysis cache, or a fresh one where the context has none."""
    manager = getattr(ctx, "analyses", None)
    return manager if isinstance(manager, AnalysisManager) else AnalysisManager()


def preserved_by(pass_: object) -> Preserved:
    """What a pass declares it preserves (`PRESERVES`); nothing by default."""
    preserved: Preserved = getattr(pass_, "PRESERVES", ())
    return preserved


class LoweredFunction:
    """A partitioned function's program graph and, on first use, its happens-before."""

    def __init__(self, func: FuncOp, streams: tuple[StreamInfo, ...]) -> None:
        self.prog = build_program(func, list(streams))
        self._hb: HappensBefore | None = None

    @classmethod
    def of(cls, prog: Program) -> LoweredFunction:
        """The analysis of a program graph a pass already has (see `provide`)."""
        made = cls.__new__(cls)
        made.prog = prog
        made._hb = None
        return made

    @property
    def happens_before(self) -> HappensBefore:
        if self._hb is None:
            self._hb = HappensBefore(self.prog).run()
        return self._hb


def lowered_functions(ctx: Context, module: ModuleOp, needs: str) -> Iterator[LoweredFunction]:
    """Each scheduled function of a partitioned `module` as the context's cached
    `LoweredFunction`, for a pass named `needs` that reads lowered IR; a located
    `stream.not-partitioned` error at the first function if the module declares no stream."""
    streams = tuple(module_streams(module))
    for func in scheduled_functions(module):
        if not streams:
            raise error(func, NOT_PARTITIONED, needs=needs, unit="module")
        yield analyses(ctx).get(LoweredFunction, func, streams)


__all__ = [
    "ALL",
    "AnalysisManager",
    "LoweredFunction",
    "Preserved",
    "analyses",
    "lowered_functions",
    "preserved_by",
]
