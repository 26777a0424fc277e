"""Schedule quality: simulated makespan of every workload under every stream-partition mode.

For each workload and mode the module goes through

    gear-multiversion,stream-partition{mode=M ignore-tags=T},coreset-lower,insert-events,sync-verify

(`ignore-tags=true` for every mode but `user`, so the baselines and `auto` see an unannotated
program) and is simulated on all its ranks: the SPMD workloads (tensor-parallel decoder, MoE)
run their entry on as many real ranks as their collectives' groups need (the least common
multiple of their group sizes; 1 without collectives), each rank a device of its own.  The
JSON says how many ranks ran (`ranks`).  The planners inside `auto` still judge a schedule on
one rank; only the measurement runs them all.
A mode the pass does not implement yet (a usage error or an ImportError when the pipeline is
built or run) is reported as "n/a", never guessed.

The lower bound of a workload is `npuir.schedule.bounds.lower_bound` (its docstring proves
each term): the critical path with every op at its shortest, each engine's arithmetic over
its cores and its window (earliest start + arithmetic over cores + shortest tail) -- together
the *arithmetic* bound, npuir's bound before the core-time terms -- and the core-time
window, moldable trade-off and energetic terms that count launch and memory time on the
cores an op holds.  The report gives `auto` against the arithmetic bound and the full one,
from the same run, and the plain bound (critical path and arithmetic, no window) in the JSON.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from workloads import QUICK_WORKLOADS, WORKLOADS, is_annotated
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

import npuir
from npuir.analysis.program import NodeKind, build_program, module_streams, scheduled_functions
from npuir.backends.npu.groups import collectives
from npuir.backends.npu.hardware import Hardware, load_hardware
from npuir.backends.npu.simulator import simulate
from npuir.diagnostics import DiagnosticError, UsageError
from npuir.dialects.npu import NpuOp
from npuir.schedule.bounds import LowerBound
from npuir.schedule.bounds import lower_bound as schedule_bound

MODES: tuple[str, ...] = (
    "single",
    "user",
    "ge",
    "engine",
    "nimble",
    "minidag",
    "opara",
    "auto",
    "auto-nolimits",
)
"""`auto` is the pass's default, `limits=true` (core limits chosen with the streams);
`auto-nolimits` is `limits=false`; the summary lists the workloads where they differ."""
BASELINES: tuple[str, ...] = ("single", "user", "ge", "engine", "nimble", "minidag", "opara")
HW = "910b2"


def pipeline(mode: str) -> str:
    ignore = "false" if mode == "user" else "true"
    flags = f"mode={mode} ignore-tags={ignore}"
    if mode == "auto-nolimits":
        flags = "mode=auto ignore-tags=true limits=false"
    return f"gear-multiversion,stream-partition{{{flags}}},coreset-lower,insert-events,sync-verify"


def lower_bound(func: FuncOp, hw: Hardware) -> LowerBound:
    """`npuir.schedule.bounds.lower_bound` of one unlowered (or lowered) function."""
    return schedule_bound(func, hw)


@dataclass
class ModeResult:
    status: str
    """"ok", "n/a" (mode not implemented), "error" (the pipeline refused), "deadlock"."""
    makespan_ns: int | None = None
    waits: int | None = None
    streams: int | None = None
    races: int | None = None
    compile_s: float | None = None
    compile_cpu_s: float | None = None
    """The same in CPU seconds of this process (steadier on a shared machine)."""
    ranks: int | None = None
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status}
        keys = ("ranks", "makespan_ns", "waits", "streams", "races", "compile_s", "compile_cpu_s")
        for key in keys:
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass
class WorkloadResult:
    name: str
    ranks: int
    ops: int
    annotated: bool
    bound: LowerBound
    modes: dict[str, ModeResult] = field(default_factory=dict[str, ModeResult])

    def to_json(self) -> dict[str, Any]:
        return {
            "ranks": self.ranks,
            "ops": self.ops,
            "annotated": self.annotated,
            "lower_bound_ns": round(self.bound.ns),
            "arithmetic_lower_bound_ns": round(self.bound.arithmetic_ns),
            "plain_lower_bound_ns": round(self.bound.plain_ns),
            "critical_path_ns": self.bound.critical_path_ns,
            "engine_bound_ns": {e: round(v) for e, v in self.bound.engine_ns.items()},
            "window_bound_ns": {e: round(v) for e, v in self.bound.window_ns.items()},
            "core_window_bound_ns": self.bound.core_window_ns,
            "moldable_bound_ns": self.bound.moldable_ns,
            "energetic_bound_ns": self.bound.energetic_ns,
            "joins_bound_ns": self.bound.joins_ns,
            "last_op_bound_ns": self.bound.last_op_ns,
            "structure_bound_ns": self.bound.structure_ns,
            "full_width_bound_ns": self.bound.full_width_ns,
            "modes": {m: r.to_json() for m, r in self.modes.items()},
        }


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def spmd_ranks(func: FuncOp) -> int:
    """The ranks an SPMD run of `func` needs for every collective's group to be whole."""
    return math.lcm(1, *(op.group_size for op in collectives(func)))


def run_mode(module: ModuleOp, mode: str, hw: Hardware) -> ModeResult:
    """Lower a clone of `module` with `mode` and simulate its entry on all its ranks."""
    lowered = module.clone()
    ctx = npuir.make_context(collect_diagnostics=True)
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        passes = npuir.build_pipeline(pipeline(mode))
        npuir.run_passes(ctx, lowered, passes, verify_each=False)
    except (UsageError, ImportError, NotImplementedError) as exc:
        return ModeResult("n/a", reason=_first_line(exc))
    except DiagnosticError as exc:
        return ModeResult("error", reason=_first_line(exc))
    compile_s = time.perf_counter() - t0
    compile_cpu_s = time.process_time() - c0
    ctx.diagnostics.drain()
    streams = module_streams(lowered)
    funcs = scheduled_functions(lowered)
    entry = funcs[0]
    prog = build_program(entry, streams)
    ranks = spmd_ranks(entry)
    result = simulate([prog] * ranks, hw)
    used = {prog.stream[n] for n in range(len(prog)) if prog.kind[n] is NodeKind.COMPUTE}
    status = "ok" if result.deadlock is None else "deadlock"
    return ModeResult(
        status,
        makespan_ns=result.makespan_ns if result.deadlock is None else None,
        waits=result.waits_executed,
        streams=len(used),
        races=len(result.races),
        compile_s=round(compile_s, 4),
        compile_cpu_s=round(compile_cpu_s, 4),
        ranks=ranks,
        reason=result.deadlock.describe().splitlines()[0] if result.deadlock else "",
    )


def run_workload(name: str, text: str, hw: Hardware, modes: Sequence[str]) -> WorkloadResult:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, text, f"{name}.mlir")
    funcs = scheduled_functions(module)
    entry = funcs[0]
    ops = sum(1 for op in entry.walk() if isinstance(op, NpuOp))
    annotated = is_annotated(text)
    out = WorkloadResult(name, spmd_ranks(entry), ops, annotated, lower_bound(entry, hw))
    for mode in modes:
        if mode == "user" and not annotated:
            continue
        out.modes[mode] = run_mode(module, mode, hw)
    return out


def _geomean(values: Sequence[float]) -> float | None:
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _makespan(w: WorkloadResult, mode: str) -> int | None:
    r = w.modes.get(mode)
    return r.makespan_ns if r is not None and r.status == "ok" else None


def summarise(results: Sequence[WorkloadResult]) -> dict[str, Any]:
    """Geomean speedups over `single`, `auto` against the bound, and where `auto` loses."""
    speedup: dict[str, float | None] = {}
    for mode in MODES:
        if mode == "single":
            continue
        ratios = [
            s / m for w in results if (s := _makespan(w, "single")) and (m := _makespan(w, mode))
        ]
        speedup[mode] = round(g, 4) if (g := _geomean(ratios)) is not None else None
    over_bound: dict[str, float | None] = {}
    over_arithmetic: dict[str, float | None] = {}
    over_plain: dict[str, float | None] = {}
    for mode in MODES:
        ratios = [m / w.bound.ns for w in results if (m := _makespan(w, mode)) and w.bound.ns]
        over_bound[mode] = round(g, 4) if (g := _geomean(ratios)) is not None else None
        arithmetic = [
            m / w.bound.arithmetic_ns
            for w in results
            if (m := _makespan(w, mode)) and w.bound.arithmetic_ns
        ]
        over_arithmetic[mode] = round(g, 4) if (g := _geomean(arithmetic)) is not None else None
        plain = [
            m / w.bound.plain_ns for w in results if (m := _makespan(w, mode)) and w.bound.plain_ns
        ]
        over_plain[mode] = round(g, 4) if (g := _geomean(plain)) is not None else None
    # auto against minidag where minidag is more than 10% above the bound
    loose = [
        (d, a)
        for w in results
        if (a := _makespan(w, "auto")) and (d := _makespan(w, "minidag")) and d > 1.1 * w.bound.ns
    ]
    losses: list[dict[str, Any]] = []
    for w in results:
        auto = _makespan(w, "auto")
        if auto is None:
            continue
        beaten = {b: m for b in BASELINES if (m := _makespan(w, b)) is not None and m < auto}
        if beaten:
            losses.append({"workload": w.name, "auto_ns": auto, "beaten_by": beaten})
    auto_available = any(_makespan(w, "auto") is not None for w in results)
    limits_lose = [
        {"workload": w.name, "auto_nolimits_ns": a, "auto_limits_ns": m}
        for w in results
        if (a := _makespan(w, "auto-nolimits")) and (m := _makespan(w, "auto")) and m > a
    ]
    limits_gain = [
        {"workload": w.name, "auto_nolimits_ns": a, "auto_limits_ns": m}
        for w in results
        if (a := _makespan(w, "auto-nolimits")) and (m := _makespan(w, "auto")) and m < a
    ]
    return {
        "geomean_speedup_over_single": speedup,
        "geomean_makespan_over_lower_bound": over_bound,
        "auto_available": auto_available,
        "auto_speedup_over_single": speedup.get("auto"),
        "auto_over_lower_bound": over_bound.get("auto"),
        "geomean_makespan_over_arithmetic_lower_bound": over_arithmetic,
        "auto_over_arithmetic_lower_bound": over_arithmetic.get("auto"),
        "geomean_makespan_over_plain_lower_bound": over_plain,
        "auto_over_plain_lower_bound": over_plain.get("auto"),
        "auto_speedup_over_minidag_where_minidag_over_1_1_bound": (
            round(g, 4) if (g := _geomean([d / a for d, a in loose])) is not None else None
        ),
        "workloads_where_minidag_over_1_1_bound": len(loose),
        "auto_loses_to_a_baseline": losses,
        "auto_limits_slower_than_without": limits_lose,
        "auto_limits_faster_than_without": limits_gain,
    }


def select(names: str | None, quick: bool) -> dict[str, Callable[[], str]]:
    registry = QUICK_WORKLOADS if quick else WORKLOADS
    if not names:
        return dict(registry)
    chosen: dict[str, Callable[[], str]] = {}
    for name in names.split(","):
        name = name.strip()
        matches = [n for n in registry if n == name or n.startswith(name)]
        if not matches:
            raise SystemExit(
                f"bench/run.py: unknown workload '{name}' (choose from: {', '.join(registry)})"
            )
        for n in matches:
            chosen[n] = registry[n]
    return chosen


def run_schedule(
    names: str | None = None, quick: bool = False, modes: Sequence[str] = MODES
) -> dict[str, Any]:
    hw = load_hardware(HW)
    results = [run_workload(name, gen(), hw, modes) for name, gen in select(names, quick).items()]
    return {
        "hw": HW,
        "quick": quick,
        "pipeline": pipeline("M").replace("ignore-tags=true", "ignore-tags=T"),
        "ignore_tags": "T = false for mode user, true for every other mode",
        "workloads": {w.name: w.to_json() for w in results},
        "summary": summarise(results),
    }


def _fmt_us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1000:.1f}"


def _fmt_ratio(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def print_schedule(result: dict[str, Any]) -> None:
    print(f"device {result['hw']}, every rank a workload's collectives need")
    print(f"pipeline {result['pipeline']}; {result['ignore_tags']}")
    for name, w in result["workloads"].items():
        engines = ", ".join(f"{e} {_fmt_us(v)}" for e, v in w["engine_bound_ns"].items())
        print()
        print(
            f"{name}: {w['ops']} ops{' (annotated)' if w['annotated'] else ''} on "
            f"{w['ranks']} rank(s); lower bound "
            f"{_fmt_us(w['lower_bound_ns'])} us (arithmetic bound "
            f"{_fmt_us(w['arithmetic_lower_bound_ns'])}; critical path "
            f"{_fmt_us(w['critical_path_ns'])}; {engines})"
        )
        single = w["modes"].get("single", {}).get("makespan_ns")
        print(
            f"  {'mode':<13} {'makespan us':>12} {'x single':>9} {'/ bound':>8} "
            f"{'waits':>6} {'streams':>8} {'compile s':>10} {'cpu s':>7}"
        )
        for mode, r in w["modes"].items():
            if r["status"] != "ok":
                print(f"  {mode:<13} {r['status']:>12}  {r.get('reason', '')}")
                continue
            m = r["makespan_ns"]
            speed = f"{single / m:.3f}" if single else "-"
            print(
                f"  {mode:<13} {_fmt_us(m):>12} {speed:>9} {m / w['lower_bound_ns']:>8.3f} "
                f"{r['waits']:>6} {r['streams']:>8} {r['compile_s']:>10.3f} "
                f"{r['compile_cpu_s']:>7.3f}"
            )
    s = result["summary"]
    print()
    print(
        "geomean speedup over single: "
        + ", ".join(f"{m} {_fmt_ratio(v)}" for m, v in s["geomean_speedup_over_single"].items())
    )
    print(
        "geomean makespan / lower bound: "
        + ", ".join(
            f"{m} {_fmt_ratio(v)}" for m, v in s["geomean_makespan_over_lower_bound"].items()
        )
    )
    if not s["auto_available"]:
        print("auto: n/a (stream-partition has no mode=auto yet)")
    else:
        print(f"auto speedup over single (geomean): {_fmt_ratio(s['auto_speedup_over_single'])}")
        print(
            f"auto / lower bound (geomean): {_fmt_ratio(s['auto_over_lower_bound'])}; "
            f"/ arithmetic bound (npuir's bound before the core-time terms): "
            f"{_fmt_ratio(s['auto_over_arithmetic_lower_bound'])}; / plain bound (no window): "
            f"{_fmt_ratio(s['auto_over_plain_lower_bound'])}"
        )
        print(
            f"auto speedup over minidag where minidag > 1.1 x bound "
            f"({s['workloads_where_minidag_over_1_1_bound']} workloads, geomean): "
            f"{_fmt_ratio(s['auto_speedup_over_minidag_where_minidag_over_1_1_bound'])}"
        )
        losses = s["auto_loses_to_a_baseline"]
        if not losses:
            print("auto loses to no baseline")
        for loss in losses:
            beaten = ", ".join(f"{b} {_fmt_us(v)} us" for b, v in loss["beaten_by"].items())
            print(f"auto loses on {loss['workload']}: {_fmt_us(loss['auto_ns'])} us vs {beaten}")
        for key, word in (
            ("auto_limits_slower_than_without", "slower"),
            ("auto_limits_faster_than_without", "faster"),
        ):
            rows = s[key]
            listed = ", ".join(
                f"{r['workload']} {_fmt_us(r['auto_limits_ns'])} vs "
                f"{_fmt_us(r['auto_nolimits_ns'])} us"
                for r in rows
            )
            print(
                f"auto limits=true {word} than without on {len(rows)} workload(s)"
                + (f": {listed}" if rows else "")
            )
