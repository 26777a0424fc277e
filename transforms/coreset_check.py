"""`coreset-check`: the core-limiting rules — the stream pair rule and hold-and-wait hazards.

The pair rule (the core-limiting seed's): for two streams that can run at the
same time, the cores their ops may hold together must fit the device, for
cube and for vector separately.  It is a rule about *limits*, so a stream
counts for an engine when each of its ops using that engine has a configured
limit below the device's count (an op scope, a stream limit or the module's
global limit); an op holds
at most `min(limit, parallelism)` cores, or its whole limit when it must hold
its cores before it starts (`full_core_sync`, aiv collectives).  An unlimited
stream promises nothing to check; the hazard check below is what catches an
unlimited stream that can deadlock.

Hazards: the pair rule alone does not prevent hold-and-wait.  A
`full_core_sync` op takes free cores as they appear and holds them until it
has all it asks for; if a collective that holds vector cores (aiv mode), or
another `full_core_sync` op, on another stream can run at the same time (not
ordered by happens-before) and their demands on one engine together exceed
the device, each may hold what the other waits for — across ranks, a
collective waiting for its peers turns that into a deadlock (the seed's
NonZero against reduceScatter).  Each hazard is a located warning at the
`full_core_sync` op saying which limit would remove it.

An aiv collective is a holder of another kind: it takes vector cores as they
free up and holds them until its peers on the other ranks join it.  Beside an
ordinary op on another stream that can run at the same time, their cores
together over the device's, it can starve that op; when a peer's progress
needs the op (a collective of another group that peer issued first, or data
through one), the ranks wait on each other for ever.  Whether that happens
depends on timing, so the program may run as written and deadlock once
something runs a little earlier or later.  Each such pair is a located
warning at the collective (kind `core.collective-hold-and-wait`) saying
which limit, or which ordering, removes it.

A pair-rule violation is an error (seed 003: the cores of any two streams "must not"
exceed the device's), naming both streams, the engine and the limits;
`pair-rule=warning` downgrades it.

Two streams can overlap unless one's last op happens before the other's
first.  Needs a lowered function (after `insert-events`, so events order it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from npuir.analysis.manager import ALL, Preserved, analyses
from npuir.analysis.program import Program
from npuir.backends.npu.hardware import Hardware
from npuir.context import warn
from npuir.diagnostics import Kind, error, op_location
from npuir.passes import PARTITIONED, IRState, option
from npuir.schedule.core_check import CoreChecker, Hazard, function_checkers
from npuir.schedule.device import device_of

PAIR_EXCEEDS_DEVICE = Kind(
    "core.pair-exceeds-device",
    "streams {first} and {second} can run at the same time, and their {engine} core limits, "
    "{limits_said}, add up to {total}, more than the {device_cores} {engine} cores of {device}; "
    "the cores of any two streams together must fit the device{where}",
)
"""Two streams that can overlap have core limits that together exceed the device (seed 003);
arguments: `first`, `second` (stream names), `engine`, `limits` (theirs, in that order),
`total`, `device_cores`, `device`; `limits_said` and `where` (where each configured limit
stands, or "") are the same facts as the message words them."""
HOLD_AND_WAIT = Kind(
    "core.hold-and-wait",
    "hold-and-wait hazard: {holder} on {holder_stream} holds up to {demand} {engine} cores "
    "while it waits for the rest, and {other} on {other_stream}, which can run at the same "
    "time, holds up to {other_demand}: {together} > {device_cores} on {device}; {fix}",
)
"""A `full_core_sync` op can hold cores while another op that can overlap it holds the rest;
arguments: `holder`, `other` (ops), `holder_stream`, `other_stream`, `engine`, `demand`,
`other_demand`, `together` (their sum), `device_cores`, `device`, and `fix` (the limit that
removes it, `room` cores: the device's less the other's demand)."""
COLLECTIVE_HOLD_AND_WAIT = Kind(
    "core.collective-hold-and-wait",
    "hold-and-wait hazard: {holder} on {holder_stream} holds up to {demand} {engine} cores "
    "while it waits for its peers, and {other} on {other_stream}{more}, which can run at the "
    "same time, needs up to {other_demand}: {together} > {device_cores} on {device}; if a "
    "peer's progress needs that op, the ranks can deadlock on another timing; {fix}",
)
"""An aiv collective, which holds cores while it waits for its peers, can run beside an op it
can starve; arguments as `core.hold-and-wait`'s (for the first such op), `others` (how many
ops it can starve) and `more` (the words for them, or "")."""


@dataclass(frozen=True)
class CoresetCheckPass(ModulePass):
    """Check the stream pair rule and report hold-and-wait hazards between core-holding ops."""

    name = "coreset-check"

    REQUIRES: ClassVar[tuple[IRState, ...]] = (PARTITIONED,)

    hw: str | None = option(
        None, "the device preset or TOML file (default: the module's npu.target, else 910b2)"
    )
    strict: bool = option(False, "make every finding an error instead of a warning")
    pair_rule: str = option(
        "error",
        "'error' (default: seed 003 says two streams' cores *must not* exceed the device) or "
        "'warning' to downgrade the stream pair rule",
    )

    PAIR_RULES: ClassVar[tuple[str, ...]] = ("error", "warning")

    def __post_init__(self) -> None:
        if self.pair_rule not in self.PAIR_RULES:
            raise ValueError(f"pair-rule '{self.pair_rule}' is not one of: error, warning")

    PRESERVES: ClassVar[Preserved] = ALL

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        hw = device_of(op, self.hw)
        for _, checker in function_checkers(op, hw, analyses(ctx)):
            prog = checker.prog
            for v in checker.pair_violations():
                total = hw.cores(v.engine)
                names = (prog.stream_name(v.first), prog.stream_name(v.second))
                # Unlimited counts as the whole device (after coreset-lower a limit equal
                # to the device's count reads the same).
                limits = [
                    f"{name} {count}" + (" (the whole device)" if count >= total else "")
                    for name, count in zip(names, v.limits)
                ]
                where = [
                    f"{name} set at {loc}"
                    for name, n, configured in zip(names, v.at, v.configured)
                    if configured and (loc := op_location(prog.ops[n])) is not None
                ]
                # Point at a limited stream's op: the second's when both are limited.
                at = v.at[1] if v.configured[1] else v.at[0]
                self._report(
                    ctx,
                    prog.ops[at],
                    self.pair_rule == "error",
                    PAIR_EXCEEDS_DEVICE,
                    first=names[0],
                    second=names[1],
                    engine=v.engine,
                    limits=list(v.limits),
                    limits_said=" and ".join(limits),
                    total=sum(v.limits),
                    device_cores=total,
                    device=hw.name,
                    where=f" (limits: {'; '.join(where)})" if where else "",
                )
            for h in checker.hazards():
                total = hw.cores(h.engine)
                room = total - h.other_demand
                fix = (
                    f"'coreset.limit {h.engine} {room}' around it (or a stream limit) removes it"
                    if room >= 1
                    else f"limit {prog.describe(h.other)} below {total} {h.engine} cores to remove it"
                )
                self._report(
                    ctx,
                    prog.ops[h.holder],
                    False,
                    HOLD_AND_WAIT,
                    **_hazard_args(prog, h, hw),
                    room=room,
                    fix=fix,
                )
            self._collective_hazards(ctx, checker, hw)

    def _collective_hazards(self, ctx: Context, checker: CoreChecker, hw: Hardware) -> None:
        """One warning per aiv collective, at it, naming the first op it can starve."""
        prog = checker.prog
        by_holder: dict[int, list[Hazard]] = {}
        for h in checker.collective_hazards():
            by_holder.setdefault(h.holder, []).append(h)
        for found in by_holder.values():
            h = found[0]
            total = hw.cores(h.engine)
            # The largest of the other ops' demands decides the limit that removes them all.
            room = total - max(x.other_demand for x in found if x.engine == h.engine)
            limit = (
                f"'coreset.limit {h.engine} {room}' around the collective, " if room >= 1 else ""
            )
            more = f" (and {len(found) - 1} more op(s) like it)" if len(found) > 1 else ""
            self._report(
                ctx,
                prog.ops[h.holder],
                False,
                COLLECTIVE_HOLD_AND_WAIT,
                **_hazard_args(prog, h, hw),
                more=more,
                others=len(found),
                room=room,
                fix=f"{limit}or ordering them (a stream.wait_tensor, or one stream) removes it",
            )

    def _report(
        self,
        ctx: Context,
        at: Operation,
        is_error: bool,
        kind: Kind,
        **args: object,
    ) -> None:
        if self.strict or is_error:
            raise error(at, kind, None, **args)
        warn(ctx, at, kind, None, **args)


def _hazard_args(prog: Program, h: Hazard, hw: Hardware) -> dict[str, object]:
    """The facts every hold-and-wait warning names: both ops, their streams and demands."""
    return {
        "holder": prog.describe(h.holder),
        "holder_stream": prog.stream_name(prog.stream[h.holder]),
        "other": prog.describe(h.other),
        "other_stream": prog.stream_name(prog.stream[h.other]),
        "engine": h.engine,
        "demand": h.demand,
        "other_demand": h.other_demand,
        "together": h.demand + h.other_demand,
        "device_cores": hw.cores(h.engine),
        "device": hw.name,
    }
