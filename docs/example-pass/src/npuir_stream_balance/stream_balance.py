"""`example-stream-balance`: how each function's simulated time splits over its streams.

A multi-stream partition pays off only when the streams share the work: if one
stream is busy for most of the function's time, the others wait and the
partition buys little.  This pass simulates each function on the target
device and reports, per stream, the time it spends executing; it warns when
one stream carries more than `max-share` of the work.

It reads the IR through npuir's analyses and never changes it (so it keeps
the context's analysis cache, `PRESERVES = ALL`): the program graph and its
happens-before order (`LoweredFunction`, shared with `sync-verify` through the
cache; every cross-stream use must be ordered, else the simulation would mean
nothing), `CoreLimits` (the cores each op may take, so the pass gives the same
answer before and after `coreset-lower`), and the schedule layer's `device_of`
(which device the module targets).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from npuir.analysis import (
    CoreLimits,
    HappensBefore,
    LoweredFunction,
    NodeKind,
    Program,
    analyses,
    limit_fn,
    module_streams,
    scheduled_functions,
)
from npuir.backends.npu.simulator import simulate
from npuir.passes import ALL, ModulePass, Preserved, error, option, remark, warn
from npuir.schedule.device import device_of


@dataclass(frozen=True)
class StreamBalancePass(ModulePass):
    """Report each stream's share of a function's simulated work; warn when one dominates."""

    name = "example-stream-balance"

    PRESERVES: ClassVar[Preserved] = ALL

    max_share: float = option(
        0.75, "warn when one stream is busy for more than this share of the function's work"
    )
    hw: str | None = option(
        None, "the device preset or TOML file (default: the module's npu.target, else 910b2)"
    )

    def __post_init__(self) -> None:
        # A bad value is a usage error naming the option as pipelines spell it.
        if not 0 < self.max_share <= 1:
            raise ValueError(f"max-share must be in (0, 1], got {self.max_share}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        streams = module_streams(op)
        functions = scheduled_functions(op)
        if not streams:
            raise error(
                functions[0] if functions else op,
                f"{self.name} needs a partitioned module; run stream-partition first",
            )
        hw = device_of(op, self.hw)
        limit_of = limit_fn(CoreLimits(op, hw).run())

        for func in functions:
            lowered = analyses(ctx).get(LoweredFunction, func, tuple(streams))
            prog = lowered.prog
            self._check_ordered(prog, lowered.happens_before)
            result = simulate([prog], hw, limits=limit_of)
            if result.deadlock is not None:
                raise error(func, f"the simulation deadlocks: {result.deadlock.describe()}")
            busy = {s: ns for (_, s), ns in result.stream_busy_ns.items() if ns > 0}
            total = sum(busy.values())
            if total == 0:
                continue
            shares = ", ".join(
                f"{prog.stream_name(s)} {100 * ns / total:.0f}%"
                for s, ns in sorted(busy.items(), key=lambda item: -item[1])
            )
            remark(
                ctx,
                func,
                f"{self.name} on @{func.sym_name.data}: {len(busy)} busy streams "
                f"({shares}); makespan {result.makespan_ns} ns on {hw.name}",
            )
            worst = max(busy, key=lambda s: busy[s])
            if len(busy) > 1 and busy[worst] > self.max_share * total:
                warn(
                    ctx,
                    func,
                    f"stream {prog.stream_name(worst)} does {100 * busy[worst] / total:.0f}% "
                    f"of @{func.sym_name.data}'s work (max-share {self.max_share}); "
                    "the other streams mostly wait",
                )

    def _check_ordered(self, prog: Program, hb: HappensBefore) -> None:
        """Every dependency must be ordered, or the simulated times mean nothing."""
        for n in range(len(prog)):
            if prog.kind[n] is not NodeKind.COMPUTE:
                continue
            for gap in hb.missing(n):
                raise error(
                    prog.ops[n],
                    f"{prog.describe(n)} uses {prog.describe(gap.producer)} from "
                    f"{prog.stream_name(prog.stream[gap.producer])} with nothing ordering "
                    "them; run insert-events first",
                )
