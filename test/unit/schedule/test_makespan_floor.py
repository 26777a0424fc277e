"""A judge skips simulating a schedule only when its makespan floor proves it too slow.

`Judge.within` lets a search that keeps only improvements skip the simulation of a
candidate whose longest stream-and-event path, every node at its shortest, is already
longer than the makespan to beat.  These tests hold it to that: it never refuses a
schedule whose simulated makespan is within the bound (so the search takes the same
steps), it does refuse when the bound is below every possible run, and `auto` finds the
same schedules with it as without it.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.func import FuncOp

import npuir
from npuir.analysis.partition import Assignment
from npuir.analysis.program import NodeKind, Program, StreamInfo, build_program
from npuir.backends.npu.hardware import PRESETS, Hardware, load_hardware
from npuir.dialects.npu import NpuOp
from npuir.schedule import auto
from npuir.schedule.auto import Judge, LimitFn, assign_auto

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from workloads import DagConfig, random_dag

HW = load_hardware("910b2")
TINY = PRESETS["tiny"]
"""2 cube and 4 vector cores: written limits and core contention bite on every graph."""


def _prog(text: str) -> Program:
    module = npuir.parse_text(npuir.make_context(), text)
    return build_program(next(op for op in module.ops if isinstance(op, FuncOp)))


def _graph(seed: int, ops: int, aiv: bool, sync: float) -> Program:
    cfg = DagConfig(
        ops=ops,
        rows=256,
        cols=512,
        comm_rate=0.3,
        comm_mode="aiv" if aiv else "sdma",
        sync_rate=sync,
    )
    return _prog(random_dag(seed, cfg))


def _written(prog: Program, rng: random.Random, hw: Hardware) -> LimitFn:
    """Core limits on about a third of the ops, as scopes would write them."""
    chosen: dict[tuple[int, str], int] = {}
    for n, op in enumerate(prog.ops):
        if isinstance(op, NpuOp) and rng.random() < 0.35:
            for engine in ("cube", "vector"):
                chosen[(n, engine)] = rng.randint(1, hw.cores(engine))

    def limits(_: Program, n: int, engine: str) -> int | None:
        return chosen.get((n, engine))

    return limits


def _random_assignment(prog: Program, rng: random.Random, streams: int) -> Assignment:
    infos = [StreamInfo(f"s{i}", f"t{i}", 0) for i in range(streams)]
    stream_of = [
        0 if prog.kind[n] is NodeKind.RETURN else rng.randrange(streams) for n in range(len(prog))
    ]
    return Assignment(infos, stream_of)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 2**31),
    ops=st.integers(2, 14),
    aiv=st.booleans(),
    sync=st.sampled_from((0.0, 0.3)),
    streams=st.integers(1, 4),
    limited=st.booleans(),
    tiny=st.booleans(),
)
def test_a_judge_never_refuses_a_schedule_within_the_makespan_it_must_beat(
    seed: int, ops: int, aiv: bool, sync: float, streams: int, limited: bool, tiny: bool
) -> None:
    """Random graphs (sdma or aiv collectives, full_core_sync ops), random written limits,
    random stream assignments: `within(most=m)` is never None when the simulated makespan
    is at most `m` -- the floor never exceeds the simulation."""
    hw = TINY if tiny else HW
    prog = _graph(seed, ops, aiv, sync)
    rng = random.Random(seed)
    limits = _written(prog, rng, hw) if limited else None
    for _ in range(4):
        assignment = _random_assignment(prog, rng, streams)
        full = Judge(prog, hw, limits)("full", assignment)
        fresh = Judge(prog, hw, limits)
        judged = fresh.within("floored", assignment, full.makespan)
        assert judged is not None, (seed, assignment.stream_of)
        assert judged.makespan == full.makespan


def test_a_judge_skips_a_schedule_every_run_of_which_is_too_slow() -> None:
    """Below its floor a schedule is not simulated, and not remembered either: a plain
    call afterwards still simulates it (and counts a trial each time)."""
    prog = _graph(3, 8, aiv=False, sync=0.0)
    assignment = _random_assignment(prog, random.Random(3), 2)
    judge = Judge(prog, HW, None)
    assert judge.within("too slow", assignment, 0) is None
    assert judge.judged == {} and judge.trials == 1
    judged = judge("plain", assignment)
    assert judged.makespan > 0 and judge.trials == 2
    assert judge.within("again", assignment, 0) is not None  # now known: no floor needed


@pytest.mark.slow
@pytest.mark.parametrize(
    ("seed", "ops", "aiv", "sync"),
    [(1, 10, False, 0.0), (2, 14, True, 0.0), (5, 12, True, 0.3), (7, 16, False, 0.3)],
)
def test_auto_finds_the_same_schedule_with_and_without_the_floor(
    monkeypatch: pytest.MonkeyPatch, seed: int, ops: int, aiv: bool, sync: float
) -> None:
    """The floor only skips simulations the search would have rejected: with it switched
    off (every candidate simulated) auto returns the same streams, order and limits."""
    prog = _graph(seed, ops, aiv, sync)

    def search() -> tuple[list[int], list[int] | None, object]:
        found = assign_auto(prog, [None] * len(prog), {}, 8, HW, search_limits=True)
        return list(found.stream_of), found.order, found.limits

    with_floor = search()
    skipped = 0
    floor = auto._makespan_floor

    def counted(*args: object) -> int:
        nonlocal skipped
        skipped += 1
        return floor(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(auto, "_makespan_floor", counted)
    assert search() == with_floor
    assert skipped > 0  # not vacuous: the floor was consulted
    monkeypatch.setattr(auto, "_makespan_floor", lambda *_: 0)
    assert search() == with_floor
