"""The placing modes on three-rank programs with core limits: refusals, repairs, fallbacks.

    python bench/mode_fallbacks.py --programs 300 [--seed 0] [--json]

Each candidate of `limited_programs.candidate(seed)` (seeds from `--seed` on) is lowered
as written with `npu-default` -- `coreset-check` with the pair rule an error -- and run as
`npuir-run --check` runs it (every rank simulated, every output compared bit for bit with
the unscheduled program); the ones refused or failing are skipped, until `--programs`
programs are accepted.  Each accepted program is then lowered under every mode that
places ops (`MODES`), again with the pair rule an error, and run the same way.

Per mode it counts:

- `refused`: the mode's lowering is refused (the fault issue 37 item 4 is about);
- `deadlock`, `wrong`, `traceback`: as `bench/check_modes.py` counts them;
- `broke`: the layout the mode builds with the rule not kept (`keep-pair-rule=false`,
  lowered with the pair rule a warning so that it runs) breaks it -- what every such
  program was refused for before;
- `repaired`: `stream-partition` undid some of the mode's moves to keep the pair rule
  (remark `stream.pair-rule-repaired`); `written`: it kept the written partition instead
  (`stream.pair-rule-kept-written`, the fallback); `hazard`: the module kept its written
  streams for a hold-and-wait hazard (`stream.hold-and-wait-kept-written`, an older rule).
  `auto` keeps the rule in its search (its judge refuses a schedule that breaks it), so
  it needs few repairs;
- `cost`: on the programs the mode broke the rule on, the simulated makespan of what it
  builds now over the layout that broke it (geometric mean, maximum); `vs written`: on
  every program, its makespan over the written program's (geometric mean).

The exit status is 1 when any mode was refused, deadlocked, computed a wrong answer or
raised, or when `auto` fell back on more than 5% of the programs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from check_modes import _parse, _Parsed, _same
from limited_programs import candidate
from valid_programs import Generated

from npuir.backends.npu.numerics import run_ranks
from npuir.context import make_context
from npuir.deep_stack import on_deep_stack
from npuir.diagnostics import DiagnosticError, UsageError
from npuir.driver import run as driver

LOWER = (
    "gear-multiversion,stream-partition{{{}}},coreset-lower,insert-events,"
    "coreset-check{},sync-verify"
)
MODES: dict[str, str] = {
    "ge": "mode=ge",
    "engine": "mode=engine",
    "nimble": "mode=nimble",
    "minidag": "mode=minidag",
    "opara": "mode=opara",
    "auto": "mode=auto",
}
"""Every `stream-partition` mode that places ops."""
REPAIRED = "stream.pair-rule-repaired"
WRITTEN = "stream.pair-rule-kept-written"
HAZARD = "stream.hold-and-wait-kept-written"
BROKEN = "core.pair-exceeds-device"
FAULTS = ("refused", "deadlock", "wrong", "traceback")
AUTO_FALLBACK_LIMIT = 0.05
"""Issue 37: `auto` may keep the written partition on at most 5% of such programs."""


@dataclass
class Outcome:
    """One lowering and run: its remarks' kinds, makespan, and whether it deadlocked."""

    kinds: set[str]
    makespan: int
    deadlock: bool
    outputs: list[list[Any]]


def lower_and_run(parsed: _Parsed, options: str, pair_rule: str = "") -> Outcome:
    """Lower `parsed` (a clone) with `options` for stream-partition and simulate and run it."""
    module = parsed.module.clone()
    config = dataclasses.replace(parsed.config, pipeline=LOWER.format(options, pair_rule))
    ctx = make_context(collect_diagnostics=True)
    hw = driver._hardware(config, module)
    diagnostics = driver._lower_reporting(ctx, module, config)
    result, _, actual, _, _ = driver._simulate(
        ctx, module, parsed.names, parsed.shapes, hw, False, None
    )
    outputs = [] if result.deadlock is not None else run_ranks(module, actual, parsed.inputs)
    kinds = {d.kind for d in diagnostics}
    return Outcome(kinds, result.makespan_ns, result.deadlock is not None, outputs)


@dataclass
class ModeReport:
    outcomes: Counter[str] = field(default_factory=Counter)
    costs: list[float] = field(default_factory=list)
    """Per program whose layout the mode would have made break the rule, the makespan of
    the one it made over that one's."""
    vs_written: list[float] = field(default_factory=list)
    """Per program the mode ran, its makespan over the written program's."""
    findings: list[str] = field(default_factory=list)

    def cost(self) -> tuple[float, float]:
        return _geomean_max(self.costs)


def _geomean_max(ratios: list[float]) -> tuple[float, float]:
    if not ratios:
        return 1.0, 1.0
    return math.exp(sum(math.log(c) for c in ratios) / len(ratios)), max(ratios)


@dataclass
class Report:
    programs: int = 0
    candidates: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    modes: dict[str, ModeReport] = field(default_factory=lambda: {m: ModeReport() for m in MODES})
    seconds: float = 0.0

    @property
    def faults(self) -> int:
        return sum(r.outcomes[f] for r in self.modes.values() for f in FAULTS)

    @property
    def auto_fallback_share(self) -> float:
        return self.modes["auto"].outcomes["written"] / max(1, self.programs)

    def to_json(self) -> dict[str, Any]:
        return {
            "programs": self.programs,
            "candidates": self.candidates,
            "skipped": dict(self.skipped),
            "seconds": round(self.seconds, 1),
            "modes": {
                m: {
                    "outcomes": dict(r.outcomes),
                    "cost_geomean": round(r.cost()[0], 4),
                    "cost_max": round(r.cost()[1], 4),
                    "vs_written_geomean": round(_geomean_max(r.vs_written)[0], 4),
                    "findings": r.findings[:10],
                }
                for m, r in self.modes.items()
            },
        }


def accept(gen: Generated) -> tuple[_Parsed, list[list[Any]], int] | str:
    """The parsed program, its reference outputs and its makespan as written when `gen`
    passes `coreset-check` as written and runs correctly, else why not."""
    try:
        parsed = _parse(gen)
        written = lower_and_run(parsed, "mode=user")
    except (DiagnosticError, UsageError):
        return "refused as written"
    if written.deadlock:
        return "deadlocks as written"
    funcs = [parsed.funcs[n] for n in parsed.names]
    reference = run_ranks(parsed.module, funcs, parsed.inputs)
    if not _same(written.outputs, reference):
        return "wrong as written"
    return parsed, reference, written.makespan


def check(
    seed: int,
    parsed: _Parsed,
    reference: list[list[Any]],
    written: int,
    report: Report,
    keep: bool = True,
    cost: bool = True,
) -> None:
    """Every placing mode on one accepted program (`keep`: with `keep-pair-rule`, its
    default; without it, what the modes did before it; `cost`: measure what a repair or
    fallback cost, one more lowering each)."""
    report.programs += 1
    for mode, base in MODES.items():
        options = base if keep else base + " keep-pair-rule=false"
        r = report.modes[mode]
        try:
            run = lower_and_run(parsed, options)
        except (DiagnosticError, UsageError) as exc:
            r.outcomes["refused"] += 1
            r.findings.append(f"seed {seed}: {str(exc).splitlines()[0][:300]}")
            continue
        except Exception:
            r.outcomes["traceback"] += 1
            r.findings.append(f"seed {seed}: {traceback.format_exc()[-500:]}")
            continue
        if run.deadlock:
            r.outcomes["deadlock"] += 1
            r.findings.append(f"seed {seed}: deadlock")
            continue
        if not _same(run.outputs, reference):
            r.outcomes["wrong"] += 1
            r.findings.append(f"seed {seed}: wrong")
            continue
        r.outcomes["ok"] += 1
        r.vs_written.append(run.makespan / max(1, written))
        for kind, name in ((REPAIRED, "repaired"), (WRITTEN, "written"), (HAZARD, "hazard")):
            if kind in run.kinds:
                r.outcomes[name] += 1
        if cost and keep:
            # The mode's own layout, the rule not kept (its break a warning, so that it runs).
            own = lower_and_run(parsed, base + " keep-pair-rule=false", "{pair-rule=warning}")
            if BROKEN in own.kinds:
                r.outcomes["broke"] += 1
                r.costs.append(run.makespan / max(1, own.makespan))


def run(programs: int, seed: int = 0, progress: int = 0, keep: bool = True) -> Report:
    report = Report()
    start = time.perf_counter()
    s = seed
    while report.programs < programs:
        gen = candidate(s)
        report.candidates += 1
        got = on_deep_stack(accept, gen)
        if isinstance(got, str):
            report.skipped[got] += 1
        else:
            on_deep_stack(check, s, *got, report, keep)
            if progress and report.programs % progress == 0:
                print(
                    f"[{report.programs} programs, {time.perf_counter() - start:.0f} s]",
                    file=sys.stderr,
                    flush=True,
                )
        s += 1
    report.seconds = time.perf_counter() - start
    return report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--no-keep",
        action="store_true",
        help="lower with keep-pair-rule=false (the modes before it)",
    )
    ap.add_argument("--progress", type=int, default=0, help="a status line every N programs")
    args = ap.parse_args()
    report = run(args.programs, args.seed, args.progress, not args.no_keep)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(
            f"{report.programs} programs accepted of {report.candidates} candidates "
            f"({dict(report.skipped)}) in {report.seconds:.0f} s"
        )
        print(
            f"  {'mode':8} {'refused':>7} {'faults':>6} {'broke':>5} {'repaired':>8} {'written':>7} "
            f"{'hazard':>6} {'cost (geomean, max)':>20} {'vs written':>10}"
        )
        for mode, r in report.modes.items():
            o = r.outcomes
            faults = sum(o[f] for f in FAULTS if f != "refused")
            mean, most = r.cost()
            print(
                f"  {mode:8} {o['refused']:7} {faults:6} {o['broke']:5} {o['repaired']:8} {o['written']:7} "
                f"{o['hazard']:6} {mean:10.3f} {most:9.3f} "
                f"{_geomean_max(r.vs_written)[0]:10.3f}"
            )
            for f in r.findings[:3]:
                print(f"    {f}")
    bad = report.faults or report.auto_fallback_share > AUTO_FALLBACK_LIMIT
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
