"""Every stream-partition mode, with `--check`, over generated valid programs.

    python bench/check_modes.py --programs 5000 [--seed 0] [--advise-every 50] [--json]

Each program of `valid_programs.program(seed)` (multi-rank with collectives, nested
scopes, waits, core limits, stream limits, gears) is lowered and run as written
(`npu-default`), then once per mode (`MODES`: every `stream-partition` mode and
minidag variant, auto with and without the user's tags).  A run here is what
`npuir-run --check` does -- lower, simulate every rank, run the numerics, compare every
output bit for bit with the program before lowering -- without the single-stream
baseline and the explanation `npuir-run` adds to its report.  Every 7th run's lowered
module is printed and parsed back (what `npuir-opt` does; printing them all took a tenth
of the time), and every `--advise-every`-th program goes through `npuir-advise`'s
library call.  Several processes can share a run: `--seed` and `--programs` pick
disjoint ranges, and the reports add up.

Outcomes, per program and mode:

- `wrong`: an output differs from the unscheduled program (`--check` would exit 4);
- `deadlock`: the mode's run deadlocks where the program as written runs -- a deadlock
  the compiler made, whether or not the written program had a hold-and-wait hazard
  (`coreset-check` warns about one: an op that holds cores while it waits -- an aiv
  collective, a full_core_sync op -- beside an op it can starve on another stream); the
  finding says which;
- `rejected`: the mode refuses (a located error) a program that runs as written;
- `traceback`: anything else raised -- a bug;
- `round-trip`: the printed lowered module does not parse back to the same text.

The written program itself must run (`written-failed` otherwise: a generator bug) or
deadlock on its own (`written-deadlock`, skipped).  The exit status is 1 when any
`wrong`, `deadlock`, `rejected`, `traceback`, `round-trip` or `written-failed` occurred.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from valid_programs import Generated, program

from npuir.api import print_ir
from npuir.backends.npu.numerics import NumericsError, run_ranks
from npuir.context import make_context
from npuir.deep_stack import on_deep_stack
from npuir.diagnostics import DiagnosticError, UsageError
from npuir.driver import run as driver
from npuir.frontends.load import load_source, source_of_text

# The pair rule of seed 003 is an error in npu-default; generated programs may break it
# with their own limits, and a run (as `npuir-run` does) reports it as a warning instead.
LOWER = (
    "gear-multiversion,stream-partition{{{}}},coreset-lower,insert-events,"
    "coreset-check{{pair-rule=warning}},sync-verify"
)
MODES: dict[str, str] = {
    "single": "mode=single ignore-tags=true",
    "ge": "mode=ge",
    "engine": "mode=engine",
    "nimble": "mode=nimble",
    "minidag": "mode=minidag",
    "minidag-mainstream": "mode=minidag variant=mainstream",
    "minidag-weighted": "mode=minidag variant=weighted",
    "opara": "mode=opara",
    "auto": "mode=auto",
    "auto-untagged": "mode=auto ignore-tags=true",
}
FAULTS = ("wrong", "deadlock", "rejected", "traceback", "round-trip", "written-failed")
HAZARD = "hold-and-wait hazard"


@dataclass
class Finding:
    seed: int
    mode: str
    outcome: str
    detail: str = ""


@dataclass
class Report:
    programs: int = 0
    runs: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0
    ranks: Counter[int] = field(default_factory=Counter)
    collectives: int = 0
    verbose: bool = False
    """Print each fault as it is found (on stderr)."""

    @property
    def faults(self) -> int:
        return sum(self.outcomes[f] for f in FAULTS)

    def to_json(self) -> dict[str, Any]:
        return {
            "programs": self.programs,
            "runs": self.runs,
            "outcomes": dict(self.outcomes),
            "faults": self.faults,
            "ranks": {str(k): v for k, v in sorted(self.ranks.items())},
            "collectives": self.collectives,
            "seconds": round(self.seconds, 1),
            "findings": [f.__dict__ for f in self.findings[:50]],
        }


def _config(gen: Generated, pipeline: str) -> driver.RunConfig:
    return driver.RunConfig(
        path=f"valid-{gen.seed}.mlir",
        source=gen.text,
        pipeline=pipeline,
        entries=gen.entries,
        entry=None if gen.entries else gen.entry,
        ranks=None if gen.entries else gen.ranks,
        shapes=dict(gen.shapes),
        seed=gen.seed,
    )


@dataclass
class _Run:
    deadlock: bool
    hazard: bool
    outputs: list[list[Any]]
    module: Any
    """The lowered module (printed only for the round trip, on every 7th run)."""


@dataclass
class _Parsed:
    """A program parsed once: each run lowers a clone."""

    module: Any
    config: Any
    names: list[str]
    funcs: dict[str, Any]
    shapes: list[list[tuple[int, ...]]]
    inputs: list[list[Any]]


def _parse(gen: Generated) -> _Parsed:
    config = _config(gen, driver.RUN_PIPELINE)
    ctx = make_context(collect_diagnostics=True)
    module = load_source(source_of_text(config.path, gen.text), ctx)
    names = driver.entry_names(config, module)
    funcs = driver._functions(module)
    shapes = [driver._arg_shapes(funcs[n], config, None) for n in names]
    inputs = [
        driver.make_inputs(funcs[n], s, gen.seed, r) for r, (n, s) in enumerate(zip(names, shapes))
    ]
    return _Parsed(module, config, names, funcs, shapes, inputs)


def _run(parsed: _Parsed, pipeline: str) -> _Run:
    """What `npuir-run --check` computes for `pipeline`, minus its report's extras."""
    module = parsed.module.clone()
    config = dataclasses.replace(parsed.config, pipeline=pipeline)
    ctx = make_context(collect_diagnostics=True)
    hw = driver._hardware(config, module)
    warnings = driver._lower_reporting(ctx, module, config)
    hazard = any(HAZARD in w.message for w in warnings)
    result, _, actual, _, _ = driver._simulate(
        ctx, module, parsed.names, parsed.shapes, hw, False, None
    )
    try:
        outputs = run_ranks(module, actual, parsed.inputs)
    except NumericsError as exc:
        raise DiagnosticError(driver.error(exc.op or module, str(exc)).diagnostic) from None
    return _Run(result.deadlock is not None, hazard, outputs, module)


def _same(a: list[list[Any]], b: list[list[Any]]) -> bool:
    return all(
        len(x) == len(y)
        and all(driver.same_bits(np.asarray(p), np.asarray(q)) for p, q in zip(x, y))
        for x, y in zip(a, b)
    )


def _round_trip(text: str) -> bool:
    ctx = make_context(collect_diagnostics=True)
    return print_ir(load_source(source_of_text("<printed>", text), ctx)) == text


def check_program(gen: Generated, report: Report, advise: bool = False) -> None:
    """Run `gen` as written and under every mode; add what happened to `report`."""
    report.programs += 1
    report.ranks[gen.rank_count] += 1
    report.collectives += gen.text.count('group = "')

    def note(mode: str, outcome: str, detail: str = "") -> None:
        report.outcomes[outcome] += 1
        if outcome in FAULTS:
            report.findings.append(Finding(gen.seed, mode, outcome, detail[:2000]))
        if outcome in FAULTS and report.verbose:
            print(f"seed {gen.seed} {mode}: {outcome}", file=sys.stderr, flush=True)

    try:
        parsed = _parse(gen)
        written = _run(parsed, driver.RUN_PIPELINE)
    except (DiagnosticError, UsageError) as exc:
        note("written", "written-failed", str(exc))
        return
    except Exception:
        note("written", "traceback", traceback.format_exc())
        return
    report.runs += 1
    if written.deadlock:
        note("written", "written-deadlock")
        return
    # The unscheduled program's outputs: what `--check` compares with.
    funcs = [parsed.funcs[n] for n in parsed.names]
    reference = run_ranks(parsed.module, funcs, parsed.inputs)
    outcome = "ok" if _same(written.outputs, reference) else "wrong"
    note("written", outcome)
    for mode, options in MODES.items():
        report.runs += 1
        try:
            run = _run(parsed, LOWER.format(options))
        except (DiagnosticError, UsageError) as exc:
            note(mode, "rejected", str(exc))
            continue
        except Exception:
            note(mode, "traceback", traceback.format_exc())
            continue
        if run.deadlock:
            note(
                mode,
                "deadlock",
                "the written program warns of a hold-and-wait hazard" if written.hazard else "",
            )
        elif not _same(run.outputs, reference):
            note(mode, "wrong")
        elif report.runs % 7 == 0 and not _round_trip(print_ir(run.module)):
            note(mode, "round-trip")
        else:
            note(mode, "ok")
    if advise:
        _advise(gen, note)


def _advise(gen: Generated, note: Any) -> None:
    import tempfile

    from npuir.driver.advise import AdviseConfig, advise

    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(gen.text)
    try:
        if gen.shapes or (not gen.entries and gen.ranks > 1):
            return  # advise takes one function per rank and no shapes
        advise(AdviseConfig(path=f.name, entries=gen.entries))
        note("advise", "ok")
    except (DiagnosticError, UsageError) as exc:
        note("advise", "rejected", str(exc))
    except Exception:
        note("advise", "traceback", traceback.format_exc())
    finally:
        Path(f.name).unlink()


def run(
    programs: int,
    seed: int = 0,
    advise_every: int = 0,
    max_ops: int = 14,
    seeds: list[int] | None = None,
    progress_every: int = 0,
) -> Report:
    """Check `programs` programs from `seed` on (or exactly `seeds`)."""
    report = Report(verbose=bool(progress_every))
    start = time.perf_counter()
    chosen = seeds if seeds is not None else [seed + i for i in range(programs)]
    for i, s in enumerate(chosen):
        gen = program(s, max_ops)
        if progress_every and i and i % progress_every == 0:
            print(
                f"[{i} programs, {time.perf_counter() - start:.0f} s] "
                + ", ".join(f"{k} {v}" for k, v in sorted(report.outcomes.items())),
                file=sys.stderr,
                flush=True,
            )
        # One deep-stack thread for the whole program, not one per parse, pass run and print.
        on_deep_stack(check_program, gen, report, bool(advise_every) and i % advise_every == 0)
    report.seconds = time.perf_counter() - start
    return report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-ops", type=int, default=14)
    ap.add_argument("--advise-every", type=int, default=0, help="run npuir-advise on every Nth")
    ap.add_argument("--seeds", help="comma-separated seeds to check (instead of a range)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--progress", type=int, default=0, help="a status line every N programs")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else None
    report = run(args.programs, args.seed, args.advise_every, args.max_ops, seeds, args.progress)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(
            f"{report.programs} programs, {report.runs} runs in {report.seconds:.0f} s; "
            f"ranks {dict(sorted(report.ranks.items()))}, {report.collectives} collectives"
        )
        for outcome, count in sorted(report.outcomes.items()):
            print(f"  {outcome:17} {count}")
        for f in report.findings[:20]:
            first = f.detail.strip().splitlines()[-1] if f.detail.strip() else ""
            print(f"  seed {f.seed} {f.mode}: {f.outcome} {first[:200]}")
    return 1 if report.faults else 0


if __name__ == "__main__":
    sys.exit(main())
