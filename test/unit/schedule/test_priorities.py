"""Stream priorities chosen by `auto` (its one background stream) and searched by the oracle.

Properties, not figures: a background stream `auto` returns pays (the same schedule with
every stream at priority 0 is slower), the kicks that choose it never make `auto` slower
than the search without them, `stream-partition` writes the priority it chose, and the
oracle's optimum over priorities is never above its optimum without them."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
from oracle import exact_schedule
from xdsl.dialects.func import FuncOp

import npuir
import npuir.schedule.auto as auto
from npuir.analysis.partition import Assignment, permuted
from npuir.analysis.program import Program, StreamInfo, build_program
from npuir.backends.npu.hardware import load_hardware
from npuir.dialects.stream import MAIN_TAG

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from workloads import BranchConfig, DagConfig, multi_branch, random_dag

HW = load_hardware("910b2")


def _prog(text: str) -> Program:
    module = npuir.parse_text(npuir.make_context(), text)
    return build_program(next(op for op in module.ops if isinstance(op, FuncOp)))


def _span(prog: Program, assignment: Assignment) -> int:
    order = assignment.order if assignment.order is not None else list(range(len(prog)))
    moved = Assignment(assignment.streams, [assignment.stream_of[n] for n in order])
    issued = prog if assignment.order is None else permuted(prog, order)
    return auto.Judge(issued, HW, None, refuse_hazards=True)("t", moved).makespan


def _level(assignment: Assignment) -> Assignment:
    """`assignment` with every stream at priority 0."""
    streams = [dataclasses.replace(info, priority=0) for info in assignment.streams]
    return dataclasses.replace(assignment, streams=streams)


def _auto(prog: Program) -> Assignment:
    return auto.assign_auto(prog, [None] * len(prog), {}, 8, HW)


def _streams(count: int, background: int | None = None) -> list[StreamInfo]:
    return [
        StreamInfo(f"s{s}", MAIN_TAG if s == 0 else f"t{s}", auto.BACKGROUND * (s == background))
        for s in range(count)
    ]


def test_with_levels_makes_one_background_stream_never_the_default_nor_a_pinned_one() -> None:
    plain = Assignment(_streams(3), [0, 1, 2, 0])
    variants = list(auto._with_levels(plain, 2, [None] * 4))
    assert variants[0] is plain
    assert [info.priority for info in variants[1].streams] == [0, 0, auto.BACKGROUND]
    # Another stream made the background one: the first is back at 0 (one at most).
    moved = list(auto._with_levels(variants[1], 1, [None] * 4))[1]
    assert [info.priority for info in moved.streams] == [0, auto.BACKGROUND, 0]
    # The background stream again: none left.
    back = list(auto._with_levels(variants[1], 2, [None] * 4))[1]
    assert [info.priority for info in back.streams] == [0, 0, 0]
    assert list(auto._with_levels(plain, 0, [None] * 4)) == [plain]
    assert list(auto._with_levels(plain, 1, [None, "user", None, None])) == [plain]


@pytest.fixture(scope="module")
def branches() -> Program:
    return _prog(multi_branch(BranchConfig()))


def test_auto_on_multi_branch_keeps_a_background_stream_that_pays(branches: Program) -> None:
    # Why it pays there: the low-rank branch's second matmul starts on the cube cores the
    # deep chain leaves; when its first blocks end, the MLP's wide matmul (issued before it)
    # takes every freed core unless its stream is behind, and the low-rank branch's last
    # blocks would wait for the whole wide matmul.
    found = _auto(branches)
    background = [s for s, info in enumerate(found.streams) if info.priority == auto.BACKGROUND]
    assert len(background) == 1 and background[0] != 0
    assert _span(branches, found) < _span(branches, _level(found))


@pytest.mark.slow
def test_kicks_make_auto_faster_on_multi_branch_and_never_slower_elsewhere(
    branches: Program, monkeypatch: pytest.MonkeyPatch
) -> None:
    graphs = [branches] + [
        _prog(random_dag(seed, DagConfig(ops=ops, rows=256, cols=2048, cube_rate=0.5)))
        for ops, seed in ((6, 0), (8, 1), (12, 2), (16, 3))
    ]
    kicked = [_span(p, _auto(p)) for p in graphs]
    monkeypatch.setattr(auto, "_KICK_MIN", 10**9)
    plain = [_span(p, _auto(p)) for p in graphs]
    assert all(k <= p for k, p in zip(kicked, plain))
    assert kicked[0] < plain[0]


@pytest.mark.slow
def test_background_streams_auto_chooses_on_other_multi_branch_sizes_pay() -> None:
    # Not on every size (on some no tie is worth it), but the move must keep acting, and
    # wherever it acts, the same schedule with every stream at 0 is slower.
    sizes = [(256, 4096, 64), (512, 1024, 128), (512, 2048, 128)]
    chosen = 0
    for tokens, hidden, rank in sizes:
        prog = _prog(multi_branch(BranchConfig(tokens=tokens, hidden=hidden, rank=rank)))
        found = _auto(prog)
        if any(info.priority == auto.BACKGROUND for info in found.streams):
            chosen += 1
            assert _span(prog, found) < _span(prog, _level(found))
    assert chosen >= 2


@pytest.mark.slow
def test_stream_partition_writes_the_background_stream_it_chose(branches: Program) -> None:
    found = _auto(branches)
    chosen = {info.priority for info in found.streams}
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, multi_branch(BranchConfig()))
    npuir.run_passes(ctx, module, npuir.build_pipeline("stream-partition{mode=auto}"))
    text = str(module)
    decls = [line.strip() for line in text.splitlines() if "stream.decl" in line]
    assert len(decls) == len(found.streams)
    assert {int(line.rsplit("priority", 1)[1]) for line in decls} == chosen
    assert any(line.endswith(f"priority {auto.BACKGROUND}") for line in decls)


@pytest.mark.oracle
@pytest.mark.parametrize("seed", range(4))
def test_the_optimum_over_priorities_is_a_schedule_never_above_the_one_without(
    seed: int,
) -> None:
    prog = _prog(random_dag(seed, DagConfig(ops=5, rows=256, cols=2048, cube_rate=0.5)))
    with_levels = exact_schedule(prog, HW)
    without = exact_schedule(prog, HW, priorities=False)
    assert with_levels.makespan <= without.makespan
    assert all(info.priority == 0 for info in without.assignment.streams)
    # The optimum, priorities and all, simulated again gives its makespan; auto reaches it.
    assert _span(prog, with_levels.assignment) == with_levels.makespan
    assert _span(prog, _auto(prog)) == with_levels.makespan
