"""Core limits chosen with streams: the policies `auto limits=true` and the oracle search.

Seed 003's lever is `limit_core_num`: an op that holds cores while it waits (an aiv-mode
collective, which keeps every vector core it asks for until its peers arrive; a
`full_core_sync` op, which accumulates its engine's cores) blocks the other work of its
engine for its whole run.  Limited, it leaves the rest of the engine to the other streams.
The seed's rules, all kept here:

- **Pairs.**  When limits are used with several streams, any two streams' cores must not
  exceed the device's (任意两条流使用的核总数不能超过当前设备核的总数): a stream's count on
  an engine is the largest of its ops'; an unlimited op counts the whole engine.
- **Kernels.**  Limits act only on the kernels seed 003's table lets them
  (`npuir.analysis.core_limits.limit_has_no_effect`): never on AI CPU or ATB kernels,
  TBE kernels on AI Vector only, collectives in aiv mode only.
- **Hold-and-wait.**  A plan whose streams' counts fit pairwise leaves no hazard between
  the ops it limits (two holders on two streams ask for at most the device together).

A **policy** is assignment-independent, so that one search can judge it on every stream
assignment it tries: on engine `e`, the streams holding the policy's `holders` get `count`
cores of `e`; every other stream with an op `e`'s limits act on gets the rest, `total -
count` when there is one such stream, else `min(total - count, total // 2)` (so those
streams fit pairwise too).  `count` is on a coarse grid: half, a quarter and an eighth of
the engine (`grid`); the holders are each holder alone and, when there are several, all of
them together.  Ops the user limited keep their limits and are not counted as free; a plan
that breaks the pair rule with them (checked as if every two streams could overlap: the
check needs no happens-before, so a search can afford it on every candidate) is refused.
Ops whose kernels take no limit are left alone and count the device in the check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from npuir.analysis.core_limits import ENGINES, CoreLimits, engines_used, limit_has_no_effect
from npuir.analysis.program import NodeKind, Program
from npuir.backends.npu.hardware import Hardware
from npuir.dialects.npu import NpuOp
from npuir.schedule.core_check import holds_while_waiting

GRID = (2, 4, 8)
"""The fractions of an engine's cores a policy tries: half, a quarter, an eighth."""

MAX_SINGLE_HOLDERS = 4
"""Each of at most this many holders (the first in issue order) gets policies of its own."""


def grid(hw: Hardware, engine: str) -> list[int]:
    """The counts a policy may give on `engine`: `GRID`'s fractions, at least 1, each once."""
    total = hw.cores(engine)
    return sorted({max(1, total // d) for d in GRID}, reverse=True)


def limit_acts(op: NpuOp, engine: str) -> bool:
    """Whether a limit on `engine` changes what `op` takes (seed 003's table)."""
    return engine in engines_used(op) and limit_has_no_effect(op, engine) is None


@dataclass(eq=False)
class LimitSpace:
    """What a search may limit in one function, read once from its module's limits."""

    total: dict[str, int]
    free: dict[str, set[Operation]]
    """Per engine, the ops a policy limits: limits act on them and the user set none."""
    fixed: dict[str, dict[Operation, int]]
    """Per engine, the other ops that use it, with their count (the device when unlimited)."""
    configured: dict[str, set[Operation]] = field(default_factory=dict[str, set[Operation]])
    """Per engine, the fixed ops whose count the user set (they make their stream limited)."""

    @staticmethod
    def of(prog: Program, hw: Hardware) -> LimitSpace:
        """The space of `prog`'s npu ops under their module's written limits."""
        total = {e: hw.cores(e) for e in ENGINES}
        space = LimitSpace(total, {e: set() for e in ENGINES}, {e: {} for e in ENGINES})
        space.configured = {e: set() for e in ENGINES}
        ops = [o for o in prog.ops if isinstance(o, NpuOp)]
        if not ops:
            return space
        module = ops[0].get_toplevel_object()
        written = CoreLimits(module, hw).run() if isinstance(module, ModuleOp) else None
        for op in ops:
            for engine in engines_used(op):
                configured = written is not None and written.configured(op, engine)
                if limit_acts(op, engine) and not configured:
                    space.free[engine].add(op)
                    continue
                count = written.of(op)[engine] if written is not None else total[engine]
                space.fixed[engine][op] = min(count, total[engine])
                if configured:
                    space.configured[engine].add(op)
        return space


@dataclass(frozen=True, eq=False)
class LimitPolicy:
    """On `engine`, the streams of `holders` get `count` cores, the others the rest."""

    engine: str
    holders: frozenset[Operation]
    count: int
    space: LimitSpace

    def describe(self) -> str:
        return f"{self.engine} {self.count} for {len(self.holders)} holder(s)"

    def limits(self, prog: Program, stream_of: Sequence[int]) -> dict[Operation, int] | None:
        """Each free op's count on `engine` under this policy when `prog`'s nodes run on
        `stream_of`, or None when the plan breaks the pair rule (module docstring)."""
        engine, total = self.engine, self.space.total[self.engine]
        free, fixed = self.space.free[engine], self.space.fixed[engine]
        configured = self.space.configured[engine]
        holding: set[int] = set()
        users: set[int] = set()
        for n, op in enumerate(prog.ops):
            if prog.kind[n] is not NodeKind.COMPUTE:
                continue
            if op in self.holders:
                holding.add(stream_of[n])
            if op in free:
                users.add(stream_of[n])
        others = users - holding
        rest = total - self.count if len(others) <= 1 else min(total - self.count, total // 2)
        out: dict[Operation, int] = {}
        most: dict[int, int] = {}
        limited: set[int] = set()
        for n, op in enumerate(prog.ops):
            if prog.kind[n] is not NodeKind.COMPUTE:
                continue
            s = stream_of[n]
            if op in free:
                count = self.count if s in holding else rest
                out[op] = count
                limited.add(s)
            elif op in fixed:
                count = fixed[op]
                if op in configured:
                    limited.add(s)
            else:
                continue
            most[s] = max(most.get(s, 0), count)
        streams = sorted(most)
        for i, s in enumerate(streams):
            for t in streams[i + 1 :]:
                if (s in limited or t in limited) and most[s] + most[t] > total:
                    return None
        return out


def policies(prog: Program, hw: Hardware, space: LimitSpace | None = None) -> list[LimitPolicy]:
    """Every policy a search tries on `prog` (module docstring), in a fixed order: per
    engine, each of the first `MAX_SINGLE_HOLDERS` holders alone, then all holders, each
    over the grid.  Empty when no free op holds cores while it waits."""
    space = space if space is not None else LimitSpace.of(prog, hw)
    out: list[LimitPolicy] = []
    for engine in ENGINES:
        holders = [
            op
            for n, op in enumerate(prog.ops)
            if prog.kind[n] is NodeKind.COMPUTE
            and op in space.free[engine]
            and isinstance(op, NpuOp)
            and holds_while_waiting(op)
        ]
        groups = [frozenset([h]) for h in holders[:MAX_SINGLE_HOLDERS]]
        if len(holders) > 1:
            groups.append(frozenset(holders))
        for group in groups:
            for count in grid(hw, engine):
                out.append(LimitPolicy(engine, group, count, space))
    return out
