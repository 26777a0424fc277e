"""The trace as Perfetto reads it: the JSON rules its importer enforces, on real programs.

Perfetto drops a JSON slice that overlaps another on its thread without nesting in it, and
draws a flow only when each end lies on a slice of its thread.  `perfetto_problems` checks
both, and that every thread with slices is named; the seed, the MoE example and a 2-rank
collective example must have none.  The step_trace_time summary is checked against the
Overlap Analysis slices it is computed from.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest
from report_cases import CASES, EXAMPLES

from npuir.backends.npu.report import OVERLAP_THREADS, STEP_TRACE_COLUMNS
from npuir.backends.npu.trace import trace_events
from npuir.driver.run import RunConfig, RunOutcome, run_program


def _ns(us: float) -> int:
    # Perfetto reads JSON microseconds into integer nanoseconds.
    return round(us * 1000)


def perfetto_problems(trace: dict[str, Any]) -> list[str]:
    """What Perfetto's JSON importer would drop or misdraw in `trace` (empty: nothing)."""
    events = trace["traceEvents"]
    problems: list[str] = []
    tracks: dict[tuple[int, int], list[tuple[int, int, str]]] = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            start = _ns(e["ts"])
            tracks[(e["pid"], e["tid"])].append((start, start + _ns(e["dur"]), e["name"]))
    for key, slices in tracks.items():
        slices.sort()
        for (_, end, a), (start, _, b) in itertools.pairwise(slices):
            if start < end:
                problems.append(f"{key}: '{b}' starts before '{a}' ends")
    named = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    problems += [f"{key}: thread has slices but no name" for key in tracks if key not in named]
    ends: dict[Any, list[str]] = defaultdict(list)
    for e in events:
        if e["ph"] in ("s", "f"):
            ends[e["id"]].append(e["ph"])
            on = tracks.get((e["pid"], e["tid"]), [])
            if not any(start <= _ns(e["ts"]) <= end for start, end, _ in on):
                problems.append(f"flow {e['id']} {e['ph']} at {e['ts']} is on no slice")
    problems += [
        f"flow {i} has ends {sorted(p)}" for i, p in ends.items() if sorted(p) != ["f", "s"]
    ]
    return problems


@pytest.fixture(scope="module", params=sorted(CASES))
def outcome(request: pytest.FixtureRequest) -> Iterator[RunOutcome]:
    yield run_program(CASES[request.param])


def test_the_trace_follows_perfettos_json_rules(outcome: RunOutcome) -> None:
    assert outcome.result is not None
    trace = trace_events(outcome.result, outcome.programs, hw=outcome.hw)
    assert perfetto_problems(trace) == []
    events = trace["traceEvents"]
    flows = [e for e in events if e["ph"] == "s"]
    assert len(flows) == len(outcome.result.event_edges) > 0
    # Every op is a slice on its rank's hardware process, with its cores as "Block Num".
    ops = [e for e in events if e["ph"] == "X" and e["pid"] < outcome.result.ranks]
    assert all("Block Num" in e["args"] for e in ops if e["args"]["engine"] in ("cube", "vector"))
    path = [e for e in ops if e["cat"] == "critical_path"]
    assert len(path) == len(outcome.result.critical_path)
    limits = {e["args"]["cores"] for e in events if e["name"] == "cube core limit"}
    assert limits == {outcome.hw.cube_cores} if outcome.hw else False


def test_the_step_summary_adds_up_to_the_makespan(outcome: RunOutcome) -> None:
    """Preparing + Computing + Communication(Not Overlapped) + Free cover the run once; the
    columns are the profiler's, and each total is its Overlap Analysis thread's."""
    assert outcome.result is not None
    rows = outcome.report["step_trace_time"]
    assert [list(row) for row in rows] == [list(STEP_TRACE_COLUMNS)] * outcome.result.ranks
    events = trace_events(outcome.result, outcome.programs)["traceEvents"]
    for row in rows:
        parts = ("Preparing", "Computing", "Communication(Not Overlapped)", "Free")
        assert sum(row[p] for p in parts) == pytest.approx(outcome.result.makespan_ns / 1000)
        assert row["Overlapped"] + row["Communication(Not Overlapped)"] == pytest.approx(
            row["Communication"]
        )
        pid = outcome.result.ranks + row["Device_id"]
        for tid, name in enumerate(OVERLAP_THREADS):
            total = sum(
                e["dur"] for e in events if (e["ph"], e["pid"], e.get("tid")) == ("X", pid, tid)
            )
            assert total == pytest.approx(row[name])
    if outcome.result.ranks > 1:
        assert all(row["Communication"] > 0 for row in rows)


def test_ops_that_overlap_on_a_stream_get_a_thread_of_their_own() -> None:
    """Two ops of one stream whose runs overlap (a simulation never makes them, a hand-made
    result can): the second goes to a named extra thread, so Perfetto keeps both."""
    result = run_program(CASES["seed"]).result
    assert result is not None
    ops = list(result.ops)
    result.critical_path = []  # the moved op would overlap on that track too
    o = next(o for o in ops if o.engine and o.end - o.start > 2)
    # Another op moved onto o's stream, to start while o runs.
    i = next(i for i, m in enumerate(ops) if m.engine and m.node != o.node)
    m = ops[i]
    ops[i] = m._replace(stream=o.stream, start=o.start + 1, end=o.end + 1, held_from=o.start + 1)
    result._ops = ops  # the test's hand-made overlap
    trace = trace_events(result, run_program(CASES["seed"]).programs)
    assert perfetto_problems(trace) == []
    names = [e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"]
    assert any(n.endswith("(overlapping)") for n in names)


def test_a_deadlocked_run_follows_the_rules_too() -> None:
    """Two ranks that deadlock: the ops that ran, the blocked ops' instants and the cores
    they hold for ever still make a trace Perfetto takes whole."""
    outcome = run_program(
        RunConfig(
            path=str(EXAMPLES / "core_limit_deadlock.mlir"),
            entries=["rank0", "rank1"],
            timing_only=True,
        )
    )
    assert outcome.result is not None and outcome.result.deadlock is not None
    trace = trace_events(outcome.result, outcome.programs, hw=outcome.hw)
    assert perfetto_problems(trace) == []
    blocked = [e for e in trace["traceEvents"] if e.get("cat") == "deadlock"]
    assert len(blocked) == len(outcome.result.deadlock.blocked)
