"""`auto` does work only where an assignment can change the schedule: a chain is put on
one stream without a search, and a candidate that coincides with one judged already is
not simulated again (but still counts as a trial, so the search takes the same steps)."""

from __future__ import annotations

import pytest
from xdsl.dialects.func import FuncOp

import npuir
import npuir.schedule.auto as auto
from npuir.analysis.partition import Assignment, Mode, assign
from npuir.analysis.program import Program, build_program
from npuir.backends.npu.cost import OpWork
from npuir.backends.npu.hardware import Hardware, load_hardware
from npuir.backends.npu.simulator import Prepared

TINY = load_hardware("tiny")


def _program(body: str) -> Program:
    text = (
        f"func.func @f(%x: tensor<64x64xf16>, %w: tensor<64x64xf16>) {{\n{body}\n  func.return\n}}"
    )
    module = npuir.parse_text(npuir.make_context(), text)
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    return build_program(func)


T = "(tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>"
CHAIN = f"""\
  %a = npu.matmul %x, %w : {T}
  %b = npu.add %a, %x : {T}
  %c = npu.matmul %b, %w : {T}"""
BRANCHES = f"""\
  %a = npu.matmul %x, %w : {T}
  %b = npu.add %x, %w : {T}
  %c = npu.add %a, %b : {T}"""


def test_a_chain_has_no_parallelism_and_branches_have() -> None:
    assert not auto.has_parallelism(_program(CHAIN))
    assert auto.has_parallelism(_program(BRANCHES))


def test_a_chain_is_put_on_one_stream_without_simulating(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> object:
        raise AssertionError("a chain needs no simulated candidates")

    monkeypatch.setattr(auto, "span_task", refuse)
    prog = _program(CHAIN)
    none: list[str | None] = [None] * len(prog)
    result = auto.assign_auto(prog, none, {}, 8, TINY)
    assert result == assign(Mode.SINGLE, prog, none, {}, 8)


def test_a_repeated_candidate_is_simulated_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    original = auto.span_task

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(auto, "span_task", counting)
    prog = _program(BRANCHES)
    judge = auto.Judge(prog, TINY, None)
    none: list[str | None] = [None] * len(prog)
    single = assign(Mode.SINGLE, prog, none, {}, 8)
    first = judge("single", single)
    again = judge("again", Assignment(list(single.streams), list(single.stream_of)))
    assert len(calls) == 1 and judge.trials == 2
    assert again.key() == first.key() and again.name == "again"
    judge("nimble", assign(Mode.NIMBLE, prog, none, {}, 8))
    assert len(calls) == 2


def test_argument_readers_are_read_once_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every candidate's simulation needs the readers of each argument; they come from
    # the IR once per `auto` call (the cache its simulations share), not once per
    # candidate.
    import npuir.backends.npu.simulator.inputs as sim_inputs

    read: list[object] = []
    original = sim_inputs._value_readers
    simulated: list[int] = []
    simulate = auto.span_task

    def counting(value: object) -> object:
        read.append(value)
        return original(value)

    def counting_simulate(*args: object, **kwargs: object) -> object:
        simulated.append(1)
        return simulate(*args, **kwargs)

    monkeypatch.setattr(sim_inputs, "_value_readers", counting)
    monkeypatch.setattr(auto, "span_task", counting_simulate)
    prog = _program(BRANCHES)
    none: list[str | None] = [None] * len(prog)
    auto.assign_auto(prog, none, {}, 8, TINY)
    assert len(simulated) > 1
    args = prog.func.body.block.args
    assert len(read) == len(args)
    assert set(map(id, read)) == set(map(id, args))


@pytest.mark.parametrize("size", [1, 2, 5, 8, 40, 200, 375, 1000, 2500])
def test_small_programs_keep_each_phases_own_trials(size: int) -> None:
    # Below the shared budget each phase searches as much as its own count allows.
    trials = max(auto._MIN_TRIALS, min(auto._MAX_TRIALS, auto._SEARCH_OPS // size))
    moves = max(auto._MIN_TRIALS, min(trials, auto._REORDER_OPS // size))
    assert auto._phase_trials(size) == (trials, moves)


@pytest.mark.parametrize("size", [10_000, 30_000, 100_000, 1_000_000])
def test_large_programs_share_one_budget_of_simulated_ops(size: int) -> None:
    refine, reorder = auto._phase_trials(size)
    whole = max(auto._MIN_SIMS, auto._PHASE_OPS // size)
    assert refine + reorder == whole  # the budget, spent in whole-program simulations
    assert reorder >= 2 and refine >= 1  # the reordering's start and one move; one move
    assert (refine + reorder) * size <= max(auto._PHASE_OPS, auto._MIN_SIMS * size)


def test_the_reordering_does_not_simulate_the_refinements_winner_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Judges of one search share their judgements by issue order: the reordering starts
    # from the refined winner, judged already, and an order it comes back to costs nothing.
    # (A schedule is its order, streams and the streams' priorities: the kicks try one
    # assignment at two priority levels.)
    seen: list[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]] = []
    original = auto.span_task

    def recording(hw: Hardware, works: list[OpWork], prep: Prepared) -> object:
        lowered = prep.prog
        priorities = tuple(info.priority for info in lowered.streams)
        seen.append((tuple(map(id, lowered.ops)), tuple(lowered.stream), priorities))
        return original(hw, works, prep)

    monkeypatch.setattr(auto, "span_task", recording)
    body = "\n".join(
        f"  %m{i} = npu.matmul %x, %w : {T}\n  %a{i} = npu.add %m{i}, %x : {T}" for i in range(3)
    )
    prog = _program(body)
    none: list[str | None] = [None] * len(prog)
    auto.assign_auto(prog, none, {}, 8, TINY)
    assert len(seen) > 10
    assert len(set(seen)) == len(seen)
