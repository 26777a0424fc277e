"""A search prepares its program's simulator inputs once and views them per schedule
(`Prepared.view`): every view holds what preparing the lowered schedule from the IR holds,
and simulates to the same span, with written limits and with a policy's limits on some
nodes read again."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp

import npuir
from npuir.analysis.events import lowered_program
from npuir.analysis.partition import Mode, assign, with_collective_chain
from npuir.analysis.program import NodeKind, Program, build_program, scheduled_functions
from npuir.backends.npu.simulator import Prepared, SimCache, simulate_span
from npuir.schedule.auto import Judge, judge_batch
from npuir.schedule.device import device_of

EXAMPLES = Path(__file__).parents[3] / "examples"
MODES = (Mode.SINGLE, Mode.GE, Mode.ENGINE, Mode.NIMBLE)
COLUMNS = (*Prepared._GATHERED, "kind", "stream", "bound", "stream_nodes", "prev_on_stream")


def _program(name: str) -> tuple[Program, ModuleOp]:
    module = npuir.parse_text(npuir.make_context(), (EXAMPLES / name).read_text(), name)
    (func,) = scheduled_functions(module)
    return build_program(func), module


def _halved(prog: Program) -> dict[int, int]:
    """A made-up limit per compute node: every third one capped at 3 cores."""
    return {n: 3 for n, k in enumerate(prog.kind) if k is NodeKind.COMPUTE and n % 3 == 0}


@pytest.mark.parametrize("example", ["moe_decode.mlir", "multi_branch.mlir"])
@pytest.mark.parametrize("policy", [False, True])
def test_a_view_is_what_preparing_the_schedule_reads(example: str, policy: bool) -> None:
    prog, module = _program(example)
    hw = device_of(module, None)
    chained = with_collective_chain(prog)
    cache = SimCache(hw)
    chosen = _halved(chained) if policy else {}
    assert not policy or chosen

    def written(_p: Program, n: int, engine: str) -> int | None:
        return 6 if n % 5 == 0 else None

    base = Prepared.unscheduled(chained, hw, written, cache)
    views = 0
    for mode in MODES:
        assignment = assign(mode, prog, [None] * len(prog), {}, 8)
        lowered, origin = lowered_program(chained, assignment)

        def limit(_p: Program, n: int, engine: str, origin: list[int] = origin) -> int | None:
            node = origin[n]
            if node in chosen:
                return chosen[node]
            return 6 if node % 5 == 0 else None

        direct = Prepared(lowered, hw, limit, cache, memory=False)
        view = base.view(lowered, origin, limit, chosen)
        for column in COLUMNS:
            assert getattr(view, column) == getattr(direct, column), column
        assert view.deps == direct.deps
        assert view.coll_by_key == direct.coll_by_key
        assert (view.compute_ops, view.profiled) == (direct.compute_ops, direct.profiled)
        span = simulate_span([lowered], hw, limits=limit, cache=cache, mirror_peers=True)
        viewed = simulate_span(
            [lowered], hw, limits=limit, cache=cache, mirror_peers=True, inputs=[view]
        )
        assert viewed == span
        views += len(lowered) > len(prog)  # some schedules add records and waits
    assert views


def test_inputs_must_match_the_programs() -> None:
    prog, module = _program("multi_branch.mlir")
    hw = device_of(module, None)
    lowered, origin = lowered_program(prog, assign(Mode.SINGLE, prog, [None] * len(prog), {}, 8))
    base = Prepared.unscheduled(prog, hw, lambda _p, _n, _e: None, SimCache(hw))
    view = base.view(lowered, origin, lambda _p, _n, _e: None)
    with pytest.raises(ValueError, match="prepared inputs"):
        simulate_span([lowered, lowered], hw, mirror_peers=True, inputs=[view])


T = "tensor<1024xf16>"
HOLDERS = f"""module {{
  func.func @f(%a: {T}, %z: tensor<1024xi1>) {{
    %x = npu.add %a, %a : ({T}, {T}) -> {T}
    %n = npu.nonzero %z : (tensor<1024xi1>) -> tensor<?x1xi64>
    %y = npu.mul %x, %a : ({T}, {T}) -> {T}
    func.return
  }}
}}"""


def test_a_batch_judges_as_one_candidate_at_a_time_does_from_a_fresh_cache() -> None:
    """The first batch of a judge reads its ops (and their work table) while it builds the
    views: its tasks must carry the table as it is after that (a hold-and-wait op's run is
    read from it)."""
    module = npuir.parse_text(npuir.make_context(), HOLDERS, "holders.mlir")
    (func,) = scheduled_functions(module)
    prog = build_program(func)
    hw = device_of(module, None)
    named = [(str(m), assign(m, prog, [None] * len(prog), {}, 8)) for m in MODES]
    batch = judge_batch(Judge(prog, hw, None, cache=SimCache(hw)), named)
    one = Judge(prog, hw, None, cache=SimCache(hw))
    alone = [one(name, assignment) for name, assignment in named]
    assert [(j.makespan, j.waits, j.critical) for j in batch.values()] == [
        (j.makespan, j.waits, j.critical) for j in alone
    ]
    assert list(batch) == [("f", i) for i in range(len(named))]
