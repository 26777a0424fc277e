"""`simulate_span` is `simulate` measured for a search: on every example, lowered in several
modes (one rank and all ranks, finishing and deadlocking), it gives the same makespan, the
same verdict on deadlock and the same critical path."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.func import FuncOp

import npuir
from npuir.analysis.program import Program, build_program, module_streams, scheduled_functions
from npuir.backends.npu.hardware import PRESETS, Hardware
from npuir.backends.npu.simulator import simulate, simulate_span
from npuir.passmanager.pipeline import build_pipeline, run_passes
from npuir.schedule.device import device_of

EXAMPLES = sorted((Path(__file__).parents[3] / "examples").glob("*.mlir"))
MODES = ("user", "single", "nimble", "minidag")
TINY = PRESETS["tiny"]
T = "tensor<1024xf16>"
BIN = f"({T}, {T}) -> {T}"
NZT = "(tensor<1024xi1>) -> tensor<?x1xi64>"
# Two full-core-sync ops, each left holding half the vector cores (test_simulator's case).
DEADLOCK = f"""module {{
  stream.decl @s0 "<main>" priority 0
  stream.decl @s1 "1" priority 1
  stream.decl @s2 "2" priority 0
  stream.decl @s3 "3" priority 0
  func.func @f(%a: {T}, %z: tensor<1024xi1>) {{
    %x = npu.add %a, %a {{stream.on = @s0}} : {BIN}
    %na = npu.nonzero %z {{stream.on = @s1}} : {NZT}
    %e = sync.record on @s1
    %d = sync.record on @s2
    %nb = npu.nonzero %z {{stream.on = @s2}} : {NZT}
    sync.wait %e on @s3
    %y = npu.add %a, %a {{stream.on = @s3}} : {BIN}
    func.return
  }}
}}"""


def _lowered(path: Path, mode: str) -> list[Program] | None:
    ctx = npuir.make_context(collect_diagnostics=True)
    module = npuir.parse_text(ctx, path.read_text())
    spec = (
        "stream-partition"
        if mode == "user"
        else f"stream-partition{{mode={mode} ignore-tags=true}}"
    )
    try:
        run_passes(
            ctx, module, build_pipeline(f"gear-multiversion,{spec},coreset-lower,insert-events")
        )
    except npuir.DiagnosticError:
        return None
    streams = module_streams(module)
    return [build_program(f, streams) for f in scheduled_functions(module)]


def _same(programs: list[Program], hw: Hardware, mirror: bool) -> bool:
    """Whether both measure the run alike; True when the run deadlocked."""
    try:
        full = simulate(programs, hw, mirror_peers=mirror)
    except ValueError as exc:
        with pytest.raises(ValueError, match=str(exc)[:40]):
            simulate_span(programs, hw, mirror_peers=mirror)
        return False
    span = simulate_span(programs, hw, mirror_peers=mirror)
    assert span.deadlocked == (full.deadlock is not None)
    assert span.critical_path == full.critical_path
    if full.deadlock is None:
        assert span.makespan_ns == full.makespan_ns
    else:
        assert span.makespan_ns <= full.makespan_ns
    return span.deadlocked


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_the_span_is_the_simulations_on_every_example(path: Path) -> None:
    simulated = 0
    for mode in MODES:
        lowered = _lowered(path, mode)
        if lowered is None:
            continue
        hw = device_of(lowered[0].func.get_toplevel_object(), None)
        for prog in lowered:
            try:
                _same([prog], hw, True)
            except ValueError:
                continue
            simulated += 1
        _same(lowered, hw, True)  # every function as a rank
    assert simulated > 0


def test_a_deadlock_is_a_deadlock_with_the_same_path() -> None:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, DEADLOCK)
    func = next(f for f in module.ops if isinstance(f, FuncOp))
    prog = build_program(func, module_streams(module))
    assert _same([prog], TINY, False)
