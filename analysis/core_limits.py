"""Effective core limits: how many cube and vector cores each op may take.

Each count is resolved on its own, first match wins:

1. op scope — the innermost enclosing `coreset.limit` that gives the count
   (limits are lexical: a `stream.switch` nested inside keeps the limit);
2. stream — a `coreset.stream_limit` for the op's stream tag (in a function
   it holds for the whole function; at module level, for every function; a
   count of -1 sets none, as `set_stream_limit`'s default; one per tag per
   function, a second is an error);
3. module — the `coreset.global` attribute;
4. device — the hardware's core count.

After `coreset-lower`, an op's `coreset.cores` attribute is its limit.  The
op's stream is its `stream.on` once partitioned, else its innermost
`stream.switch` tag.

    limits = CoreLimits(module, hw).run()
    limits.of(op)            # {"cube": 24, "vector": 8}
    limits.source(op, "vector")   # the op that set it (for diagnostics), or None
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr
from xdsl.ir import Block, Operation

from npuir.analysis.program import Program, defined_functions
from npuir.diagnostics import Kind, error, op_location
from npuir.dialects import coreset, stream, validation
from npuir.dialects.npu import CollectiveOp, Engine, NpuOp, kernel_of
from npuir.dialects.scope import Visit, issue_order

STREAM_LIMIT_TWICE = Kind(
    "core.stream-limit-twice",
    'stream "{tag}" already has a coreset.stream_limit in {where}{first_at}; give each stream '
    "one limit, with both counts in it",
)
"""A stream has two `coreset.stream_limit`s; arguments: `tag`, `where` (the module or the
function), `first` (the first limit's location, or null) and `first_at` (its words)."""

ENGINES = coreset.ENGINES


def engines_used(op: NpuOp) -> tuple[str, ...]:
    """The core pools an op draws from: cube or vector, aiv collectives vector."""
    if isinstance(op, CollectiveOp):
        return ("vector",) if op.uses_vector_cores else ()
    if op.engine is Engine.CUBE:
        return ("cube",)
    if op.engine is Engine.VECTOR:
        return ("vector",)
    return ()


def limit_has_no_effect(op: NpuOp, engine: str) -> str | None:
    """Why a core limit on `engine` does not act on `op`, or None when it does.

    Seed 003's table of what core limits apply to: AscendC kernels on AI Core and AI
    Vector yes, AI CPU kernels no; TBE kernels on AI Vector only; ATB kernels no; HCCL
    collectives in AIV mode yes, in AI CPU mode no (npuir's `sdma` mode, which runs on the
    DMA engines, takes no cores either); MC2 (fused compute and communication,
    `npu.matmul_all_reduce`, a collective) in AIV mode yes.  Static kernels under
    aclgraph, which lose their tiling and so any limit, are not modelled: every kernel is
    taken to read its limit at run time.
    """
    kernel = kernel_of(op)
    if op.engine is Engine.AICPU or kernel == "aicpu":
        return "it runs as an AI CPU kernel"
    if kernel == "atb":
        return "it is an ATB kernel"
    if kernel == "tbe" and engine != "vector":
        return "it is a TBE kernel, which takes limits on AI Vector cores only"
    if isinstance(op, CollectiveOp) and not op.uses_vector_cores:
        return f"it is a collective in {op.mode} mode, which holds no cores"
    return None


class Device(Protocol):
    """What the analysis needs of a device (`npuir.backends.npu.hardware.Hardware` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def cube_cores(self) -> int: ...

    @property
    def vector_cores(self) -> int: ...

    def cores(self, engine: str) -> int: ...


@dataclass(frozen=True)
class Limit:
    """One resolved count and the op that set it (None: the device)."""

    count: int
    source: Operation | None


def _given(op: coreset.LimitOp | coreset.StreamLimitOp) -> dict[str, Limit]:
    """The counts a limit op gives, each set by `op` (a stream limit's -1 gives none)."""
    if isinstance(op, coreset.StreamLimitOp):
        return {e: Limit(c, op) for e in ENGINES if (c := op.limit(e)) is not None}
    return {e: Limit(c, op) for e in ENGINES if (c := op.count(e)) is not None}


def _once(seen: dict[str, coreset.StreamLimitOp], op: coreset.StreamLimitOp, where: str) -> None:
    """Refuse a second stream limit for one tag in one place: one would silently win."""
    first = seen.setdefault(op.tag.data, op)
    if first is not op:
        loc = op_location(first)
        at = f" (the first is at {loc})" if loc is not None else ""
        raise error(
            op,
            STREAM_LIMIT_TWICE,
            tag=op.tag.data,
            where=where,
            first=None if loc is None else str(loc),
            first_at=at,
        )


class CoreLimits:
    """Resolves every op's limits (see the module docstring)."""

    def __init__(self, module: ModuleOp, hw: Device) -> None:
        self.module = module
        self.hw = hw
        self._limits: dict[Operation, dict[str, Limit]] = {}
        self._tags: dict[str, str] = {}
        self.no_effect: list[tuple[NpuOp, str, Limit, str]] = []
        """Limits of scopes and stream limits that do not act on an op (seed 003's table):
        the op, the engine, the limit and why; the op runs unlimited by them."""

    def run(self) -> CoreLimits:
        """Resolve every op's limits.  Two `coreset.stream_limit`s for one tag in one function
        (or both at module level) are a located error at the second."""
        module_streams: dict[str, dict[str, Limit]] = {}
        module_seen: dict[str, coreset.StreamLimitOp] = {}
        for op in self.module.ops:
            if isinstance(op, stream.DeclOp):
                self._tags[op.symbol] = op.tag.data
            elif isinstance(op, coreset.StreamLimitOp):
                _once(module_seen, op, "the module")
                self._add_stream_limit(module_streams, op)
        global_attr = self.module.attributes.get(coreset.GLOBAL)
        device = {
            "cube": Limit(self.hw.cube_cores, None),
            "vector": Limit(self.hw.vector_cores, None),
        }
        base = dict(device)
        if isinstance(global_attr, coreset.CoresAttr):
            for engine in ENGINES:
                count = global_attr.count(engine)
                if count is not None:
                    base[engine] = Limit(count, self.module)
        for func in defined_functions(self.module):
            streams = {tag: dict(v) for tag, v in module_streams.items()}
            seen: dict[str, coreset.StreamLimitOp] = {}
            for op in func.body.walk():
                if isinstance(op, coreset.StreamLimitOp):
                    _once(seen, op, f"@{func.sym_name.data}")
                    self._add_stream_limit(streams, op)
            self._walk(func.body.block, streams, base)
        return self

    @staticmethod
    def _add_stream_limit(table: dict[str, dict[str, Limit]], op: coreset.StreamLimitOp) -> None:
        table.setdefault(op.tag.data, {}).update(_given(op))

    def _walk(
        self,
        block: Block,
        streams: dict[str, dict[str, Limit]],
        base: dict[str, Limit],
    ) -> None:
        # The innermost scope's (tag, limits) on top; a limit scope keeps its stream's tag.
        context: list[tuple[str, dict[str, Limit]]] = [(stream.MAIN_TAG, {})]
        for visit, op in issue_order(block):
            if isinstance(op, NpuOp):
                tag, scope = context[-1]
                self._limits[op] = self._resolve(op, tag, scope, streams, base)
            elif visit is Visit.EXIT:
                context.pop()
            elif isinstance(op, coreset.LimitOp):
                tag, scope = context[-1]
                context.append((tag, {**scope, **_given(op)}))
            elif isinstance(op, stream.SwitchOp):
                context.append((op.tag_name, context[-1][1]))

    def _resolve(
        self,
        op: NpuOp,
        tag: str,
        scope: dict[str, Limit],
        streams: dict[str, dict[str, Limit]],
        base: dict[str, Limit],
    ) -> dict[str, Limit]:
        lowered = op.attributes.get(coreset.CORES)
        out: dict[str, Limit] = {}
        if isinstance(lowered, coreset.CoresAttr):
            for engine in ENGINES:
                count = lowered.count(engine)
                out[engine] = Limit(count, op) if count is not None else base[engine]
            return out
        ref = op.attributes.get(stream.STREAM_ON)
        if isinstance(ref, SymbolRefAttr):
            tag = self._tags.get(ref.root_reference.data, tag)
        by_stream = streams.get(tag, {})
        for engine in ENGINES:
            given = scope.get(engine) or by_stream.get(engine)
            if given is not None and (why := limit_has_no_effect(op, engine)) is not None:
                # Reported where the op would draw on the engine's cores, or runs on none.
                if engine in engines_used(op) or not engines_used(op) or "AI CPU" in why:
                    self.no_effect.append((op, engine, given, why))
                given = None
            out[engine] = given or base[engine]
        return out

    def of(self, op: NpuOp) -> dict[str, int]:
        """The op's effective cube and vector counts."""
        return {e: lim.count for e, lim in self._limits[op].items()}

    def limit(self, op: NpuOp, engine: str) -> Limit:
        return self._limits[op][engine]

    def configured(self, op: NpuOp, engine: str) -> bool:
        """Whether the op's count comes from a limit the program sets: an op scope, a stream
        limit or the module's global limit, not the device.  After `coreset-lower` the count
        on the op is all there is, so there a count below the device's is a set limit and one
        equal to it reads as none (it sums the same: unlimited counts as the device)."""
        limit = self._limits[op][engine]
        if limit.source is None:
            return False
        if limit.source is op:
            return limit.count < self.hw.cores(engine)
        return True

    def check_ranges(self) -> None:
        """Every count a limit gives must be in [1, device max]: a located error otherwise."""
        global_attr = self.module.attributes.get(coreset.GLOBAL)
        if isinstance(global_attr, coreset.CoresAttr):
            self._check(self.module, {e: global_attr.count(e) for e in ENGINES}, "coreset.global")
        for op in self.module.walk():
            if isinstance(op, coreset.StreamLimitOp):
                self._check(op, {e: op.limit(e) for e in ENGINES}, op.name)
            elif isinstance(op, coreset.LimitOp):
                self._check(op, {e: op.count(e) for e in ENGINES}, op.name)

    def _check(self, where: Operation, counts: dict[str, int | None], what: str) -> None:
        for engine, count in counts.items():
            if count is None:
                continue
            try:
                validation.core_count(
                    f"{what}: {engine} count",
                    count,
                    engine=engine,
                    most=self.hw.cores(engine),
                    device=self.hw.name,
                )
            except validation.ValidationError as exc:
                raise error(where, str(exc), exc.kind, **exc.args_) from None


class Counts(Protocol):
    """Anything that gives each op its effective counts (`CoreLimits`, or a search's
    overridden copy of them)."""

    def of(self, op: NpuOp) -> Mapping[str, int]: ...


def limit_fn(limits: Counts) -> Callable[[Program, int, str], int | None]:
    """`limits` as the simulator's `CoreLimitFn`: a node's count of an engine, or None
    (unlimited) for a node that is no npu op and for an engine no limit counts (aicpu)."""

    def limit(prog: Program, node: int, engine: str) -> int | None:
        op = prog.ops[node]
        return limits.of(op).get(engine) if isinstance(op, NpuOp) else None

    return limit
