"""The run report: what a simulated (and checked) run measured, as JSON and as a table.

`build_report` turns a `SimResult` into one JSON-able dict — the shape
`npuir-run --json` prints and tests match on — and `render_report` writes
the same facts as a readable table.  Warnings are in the dict (as
`npuir.diagnostics.diagnostic_json` objects) but not in the table: a tool
prints them to stderr with their source lines, as every diagnostic is printed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from npuir.analysis.program import Program
from npuir.backends.npu.groups import ranks_text
from npuir.backends.npu.hardware import Hardware
from npuir.backends.npu.simulator import SimResult
from npuir.diagnostics import Diagnostic, Kind, diagnostic_json

MEMORY_EXCEEDS_HBM = Kind(
    "run.memory-exceeds-hbm", "peak live memory {peak} bytes exceeds {device}'s HBM ({hbm} bytes)"
)
"""The run's peak live memory does not fit the device's HBM; arguments: `peak`, `device`,
`hbm`."""


OVERLAP_THREADS: tuple[str, ...] = (
    "Computing",
    "Communication",
    "Communication(Not Overlapped)",
    "Free",
)
"""The threads of torch_npu's "Overlap Analysis" process in `trace_view.json`, whose slices
its `step_trace_time.csv` adds up."""

STEP_TRACE_COLUMNS: tuple[str, ...] = (
    "Device_id",
    "Step",
    "Computing",
    "Communication(Not Overlapped)",
    "Overlapped",
    "Communication",
    "Free",
    "Stage",
    "Bubble",
    "Communication(Not Overlapped and Exclude Receive)",
    "Preparing",
)
"""torch_npu's `step_trace_time.csv` header (`TraceStepTimeParser.title`), times in µs."""

_COMPUTE_ENGINES = frozenset({"cube", "vector", "aicpu"})


def _union(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if end <= start:
            continue
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _minus(
    spans: Sequence[tuple[int, int]], cut: Sequence[tuple[int, int]]
) -> list[tuple[int, int]]:
    """`spans` less `cut`; both sorted and disjoint."""
    out: list[tuple[int, int]] = []
    j = 0
    for start, end in spans:
        while j < len(cut) and cut[j][1] <= start:
            j += 1
        k, at = j, start
        while k < len(cut) and cut[k][0] < end:
            if cut[k][0] > at:
                out.append((at, cut[k][0]))
            at = max(at, cut[k][1])
            k += 1
        if at < end:
            out.append((at, end))
    return out


def overlap_intervals(result: SimResult) -> list[dict[str, list[tuple[int, int]]]]:
    """Per rank, the slices of the profiler's "Overlap Analysis" threads (`OVERLAP_THREADS`)
    as (start, end) ns: Computing is the union of the compute ops' runs (cube, vector, AI
    CPU), Communication the union of the collectives', Communication(Not Overlapped) the
    part of it no compute op covers, and Free what neither covers between the first such op's
    start and the end of the run (events, launches of nothing, idle)."""
    end = max(result.makespan_ns, result.deadlock.time_ns if result.deadlock else 0)
    out: list[dict[str, list[tuple[int, int]]]] = []
    for r in range(result.ranks):
        ops = result.ops_of(r)
        compute = _union([(o.start, o.end) for o in ops if o.engine in _COMPUTE_ENGINES])
        comm = _union([(o.start, o.end) for o in ops if o.engine == "comm"])
        busy = _union([*compute, *comm])
        first = busy[0][0] if busy else end
        out.append(
            {
                "Computing": compute,
                "Communication": comm,
                "Communication(Not Overlapped)": _minus(comm, compute),
                "Free": _minus([(first, end)] if first < end else [], busy),
            }
        )
    return out


def _total_us(spans: Sequence[tuple[int, int]]) -> float:
    return sum(end - start for start, end in spans) / 1000


def step_trace_time(result: SimResult) -> list[dict[str, Any]]:
    """One `step_trace_time.csv` row per rank (`STEP_TRACE_COLUMNS`, µs), computed from the
    simulation as torch_npu computes it from the Overlap Analysis slices
    (`overlap_intervals`), the run being one step that starts at 0:

    - Computing, Communication, Communication(Not Overlapped), Free: the total length of
      that thread's slices;
    - Overlapped: Communication less Communication(Not Overlapped);
    - Bubble: time in receive ops (hcom_receive): npuir has no point-to-point receive, so 0;
    - Stage: the step's end-to-end time (first compute or communication op's start to the
      end of the run) less Bubble;
    - Communication(Not Overlapped and Exclude Receive): Communication(Not Overlapped) less
      Bubble, at least 0;
    - Preparing: from the step's start to the first compute or communication op's start.

    So Preparing + Computing + Communication(Not Overlapped) + Free is the makespan.
    """
    rows: list[dict[str, Any]] = []
    end = max(result.makespan_ns, result.deadlock.time_ns if result.deadlock else 0)
    for r, threads in enumerate(overlap_intervals(result)):
        busy = _union([*threads["Computing"], *threads["Communication"]])
        first = busy[0][0] if busy else end
        comm = _total_us(threads["Communication"])
        not_overlapped = _total_us(threads["Communication(Not Overlapped)"])
        bubble = 0.0
        values = (
            r,
            None,
            _total_us(threads["Computing"]),
            not_overlapped,
            comm - not_overlapped,
            comm,
            _total_us(threads["Free"]),
            (end - first) / 1000 - bubble,
            bubble,
            max(not_overlapped - bubble, 0.0),
            first / 1000,
        )
        rows.append(
            {
                name: round(v, 3) if isinstance(v, float) else v
                for name, v in zip(STEP_TRACE_COLUMNS, values, strict=True)
            }
        )
    return rows


def _where(programs: Sequence[Program], rank: int, stream: int) -> dict[str, Any]:
    """A stream named as in the report's "streams" list: its user tag and its symbol."""
    info = programs[rank].streams[stream]
    return {"rank": rank, "stream": info.tag, "symbol": info.symbol}


def _deadlock(result: SimResult, programs: Sequence[Program]) -> dict[str, Any] | None:
    dl = result.deadlock
    if dl is None:
        return None
    return {
        "time_ns": dl.time_ns,
        "description": dl.describe(),
        "blocked": [
            {
                **_where(programs, b.rank, b.stream),
                "op": b.op,
                "reason": b.reason,
                "pool": b.pool or None,
                "holds": b.holds,
                "wants": b.wants,
                "waits_for": b.detail,
            }
            for b in dl.blocked
        ],
        "cycle": [
            {**_where(programs, r, programs[r].stream[n]), "op": programs[r].describe(n)}
            for r, n in dl.cycle
        ],
    }


def memory_warning(result: SimResult, hw: Hardware) -> list[Diagnostic]:
    """A warning when the run's peak live memory does not fit the device's HBM."""
    peak = result.peak_memory_bytes
    if peak <= hw.hbm_bytes:
        return []
    return [
        Diagnostic.of("warning", MEMORY_EXCEEDS_HBM, peak=peak, device=hw.name, hbm=hw.hbm_bytes)
    ]


def build_report(
    result: SimResult,
    programs: Sequence[Program],
    hw: Hardware,
    *,
    single_stream_ns: int | None,
    single_stream_deadlocks: bool = False,
    gears: Sequence[str | None],
    entries: Sequence[str],
    check: dict[str, Any] | None,
    mirrored: list[dict[str, Any]] | None = None,
    profile: dict[str, Any] | None = None,
    warnings: Sequence[Diagnostic] = (),
) -> dict[str, Any]:
    """Everything a run measured, JSON-able; times in integer nanoseconds.

    `mirrored` is None unless the run was asked to mirror missing peers; then it lists every
    partial group (`PartialGroup.to_json`), empty when every group was whole.  `profile`
    (None without one) says which profile costed the run and how many ops came from it.
    `warnings` are the ones lowering gave; the report adds its own (`memory_warning`).
    A run that deadlocked has no makespan: `makespan_ns` is null.
    """
    streams = []
    for (rank, s), busy in sorted(result.stream_busy_ns.items()):
        info = programs[rank].streams[s]
        streams.append({"rank": rank, "stream": info.tag, "symbol": info.symbol, "busy_ns": busy})
    makespan = result.makespan_ns
    ratio = (
        round(single_stream_ns / makespan, 4)
        if single_stream_ns is not None and makespan > 0 and result.deadlock is None
        else None
    )
    peak = result.peak_memory_bytes
    own = memory_warning(result, hw)
    return {
        "device": hw.name,
        "ranks": result.ranks,
        "entries": list(entries),
        "mirror_peers": mirrored is not None,
        "mirrored_peers": mirrored,
        "profile": profile,
        "gears": list(gears),
        "makespan_ns": makespan if result.deadlock is None else None,
        "single_stream_ns": single_stream_ns,
        "single_stream_deadlocks": single_stream_deadlocks,
        "speedup_over_single_stream": ratio,
        "streams": streams,
        "utilisation": {k: round(v, 4) for k, v in sorted(result.utilisation.items())},
        "critical_path": [
            {"rank": r, "op": programs[r].describe(n)} for r, n in result.critical_path
        ],
        "waits_executed": result.waits_executed,
        "records_executed": result.records_executed,
        "events_used": result.events_used,
        "peak_memory_bytes": peak,
        "warnings": [diagnostic_json(w) for w in (*warnings, *own)],
        "races": [race.describe() for race in result.races],
        "check": check,
        "deadlock": _deadlock(result, programs),
        "step_trace_time": step_trace_time(result),
    }


def _memory_lines(memory: dict[str, Any]) -> list[str]:
    """The planned memory: the plan's peak, its two lower bounds, the one-stream peak."""
    bound = memory["bound_bytes"]
    lines = [
        f"planned memory   {memory['peak_bytes']} bytes ({memory['buffers']} buffers, "
        f"{memory['algo']}); bounds: antichain {bound if bound is not None else 'n/a'}, "
        f"timeline {memory['timeline_peak_bytes']}"
    ]
    single = memory.get("single_stream_peak_bytes")
    if single is not None:
        cost = memory.get("cost_of_parallelism")
        lines.append(
            f"one stream       {single} bytes planned (memory cost of parallelism "
            f"{f'{cost}x' if cost is not None else 'n/a: nothing planned on one stream'})"
        )
    for r, rank in enumerate(memory.get("by_rank") or []):
        lines.append(
            f"  rank {r} planned {rank['peak_bytes']}, antichain {rank['bound_bytes']}, "
            f"timeline {rank['timeline_peak_bytes']}, one stream {rank['single_stream_peak_bytes']}"
        )
    if "log" in memory:
        lines.append(f"memory log       {memory['log']}")
    return lines


def _step_trace_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The step_trace_time rows, one line per rank, in the profiler's column order."""
    if not rows:
        return []
    lines = ["step trace (µs)  as torch_npu's step_trace_time.csv"]
    for row in rows:
        cells = ", ".join(
            f"{name} {row[name]}" for name in STEP_TRACE_COLUMNS[2:] if row[name] is not None
        )
        lines.append(f"  rank {row['Device_id']} {cells}")
    return lines


def render_report(report: dict[str, Any]) -> str:
    """The report as a table for people."""
    lines = [f"device           {report['device']}, {report['ranks']} rank(s)"]
    for rank, (entry, gear) in enumerate(zip(report["entries"], report["gears"])):
        ran = f" -> {gear}" if gear else ""
        lines.append(f"rank {rank:<11} @{entry}{ran}")
    mirrored = report.get("mirrored_peers")
    if mirrored is not None:
        if not mirrored:
            lines.append("mirrored peers   none: every collective's group ran whole")
        for group in mirrored:
            lines.append(
                f"mirrored peers   {group['op']} group_size {group['group_size']}: rank(s) "
                f"{ranks_text(group['mirrored_ranks'])} are copies of rank(s) "
                f"{ranks_text(group['ranks_present'])}, not simulated"
            )
    if report["deadlock"] is not None:
        lines.append(report["deadlock"]["description"])
        return "\n".join(lines) + "\n"
    profile = report.get("profile")
    if profile is not None:
        lines.append(
            f"profile          {profile['ops_from_profile']} of {profile['ops']} ops costed "
            f"from {profile['path']} ({profile['rows']} rows); the rest by the cost model"
        )
    lines.append(f"makespan         {report['makespan_ns']} ns")
    single = report["single_stream_ns"]
    if report.get("single_stream_deadlocks"):
        lines.append("single stream    deadlocks: on one stream per rank the program cannot finish")
    if single is not None:
        lines.append(
            f"single stream    {single} ns  (speedup {report['speedup_over_single_stream']}x)"
        )
    for why in report.get("why") or []:
        lines.append(f"why              {why}")
    lines.append("streams          busy ns")
    for s in report["streams"]:
        lines.append(f"  rank {s['rank']} {s['stream']:<10} {s['busy_ns']}")
    lines.append(
        "utilisation      "
        + ", ".join(f"{engine} {share:.1%}" for engine, share in report["utilisation"].items())
    )
    path = report["critical_path"]
    lines.append(f"critical path    {len(path)} ops")
    for step in path[:12]:
        lines.append(f"  rank {step['rank']} {step['op']}")
    if len(path) > 12:
        lines.append(f"  ... {len(path) - 12} more")
    lines.append(
        f"events           {report['waits_executed']} waits, {report['records_executed']} "
        f"records, {report['events_used']} event ids"
    )
    lines.append(f"peak memory      {report['peak_memory_bytes']} bytes")
    memory = report.get("memory")
    if memory:
        lines.extend(_memory_lines(memory))
    lines.extend(_step_trace_lines(report.get("step_trace_time") or []))
    for race in report["races"]:
        lines.append(f"race: {race}")
    check = report["check"]
    if check is not None:
        verdict = "passed" if check["passed"] else "FAILED: " + ", ".join(check["mismatches"])
        lines.append(f"check            {verdict}")
    return "\n".join(lines) + "\n"
