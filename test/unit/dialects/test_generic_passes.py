"""Stock xDSL passes keep a lowered program's meaning (issue 19, item 4).

Lowered IR keeps its order in block position.  `npu` ops are pure in the graph but
report an effect on their stream once they carry `stream.on`, and the sync ops and
`stream.wait_tensor` always do, so xDSL's `canonicalize`, `cse` and `dce` may neither
merge, move nor drop them: after those passes every example and every lit input that
lowers still passes `sync-verify` and simulates to the same makespan as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.traits import is_side_effect_free, is_speculatable
from xdsl.transforms.canonicalize import CanonicalizePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination
from xdsl.transforms.dead_code_elimination import DeadCodeElimination

import npuir
from npuir.analysis.program import build_program, module_streams, scheduled_functions
from npuir.backends.npu.simulator import simulate
from npuir.diagnostics import DiagnosticError
from npuir.dialects import npu, stream, sync
from npuir.driver.run import RUN_PIPELINE
from npuir.schedule.device import device_of

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "examples").glob("*.mlir"))
LIT_INPUTS = sorted([*(ROOT / "test").rglob("*.mlir"), *(ROOT / "docs").rglob("*.mlir")])
STOCK: tuple[ModulePass, ...] = (
    CanonicalizePass(),
    CommonSubexpressionElimination(),
    DeadCodeElimination(),
)


def _makespans(module: ModuleOp) -> list[int]:
    hw = device_of(module, None)
    streams = module_streams(module)
    return [
        simulate([build_program(f, streams)], hw, mirror_peers=True).makespan_ns
        for f in scheduled_functions(module)
    ]


def _lowered_cases(path: Path) -> list[tuple[str, ModuleOp, npuir.NpuirContext]]:
    """Each `// -----` case of `path` that parses and lowers as `npuir-run` lowers it
    (npu-default with seed 003's pair rule as a warning; the others are error tests)."""
    found = []
    for i, text in enumerate(path.read_text().split("\n// -----")):
        ctx = npuir.make_context()
        name = f"{path.name}#{i}"
        try:
            with ctx.diagnostics.collect():
                module = npuir.parse_text(ctx, text, name)
                npuir.run_passes(ctx, module, npuir.build_pipeline(RUN_PIPELINE))
        except DiagnosticError:
            continue
        found.append((name, module, ctx))
    return found


def _scheduled_ops(module: ModuleOp) -> int:
    """Ops that run or order something: everything but `npu.constant`, a pure value with no
    stream (DCE may drop an unused one, CSE merge two equal ones; nothing runs either way)."""
    return sum(1 for op in module.walk() if not isinstance(op, npu.ConstantOp))


def _check_stock_passes_keep_meaning(path: Path) -> int:
    cases = _lowered_cases(path)
    for name, module, ctx in cases:
        before = _makespans(module)
        ops_before = _scheduled_ops(module)
        for p in STOCK:
            p.apply(ctx, module)
        with ctx.diagnostics.collect():
            npuir.run_passes(ctx, module, npuir.build_pipeline("sync-verify"))
        assert _makespans(module) == before, name
        assert _scheduled_ops(module) == ops_before, name
    return len(cases)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_stock_passes_keep_every_example(path: Path) -> None:
    cases = len(path.read_text().split("\n// -----"))
    assert _check_stock_passes_keep_meaning(path) == cases


@pytest.mark.slow
def test_stock_passes_keep_every_lit_input() -> None:
    lowered = sum(_check_stock_passes_keep_meaning(p) for p in LIT_INPUTS)
    # Most lit cases are error tests; the rest must still be a real sample.
    assert lowered >= 40


T = "tensor<8x8xf16>"
GRAPH = f"""func.func @f(%x: {T}) -> ({T}, {T}) {{
  %a = npu.relu %x : ({T}) -> {T}
  %b = npu.relu %x : ({T}) -> {T}
  %dead = npu.exp %x : ({T}) -> {T}
  func.return %a, %b : {T}, {T}
}}
"""


def test_the_unlowered_graph_still_cses_and_dces() -> None:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, GRAPH)
    CommonSubexpressionElimination().apply(ctx, module)
    DeadCodeElimination().apply(ctx, module)
    names = [op.name for op in module.walk() if isinstance(op, npu.NpuOp)]
    assert names == ["npu.relu"]


LOWERED = f"""stream.decl @s0 "default" priority 0
func.func @f(%x: {T}) -> ({T}, {T}) {{
  %a = npu.relu %x {{stream.on = @s0}} : ({T}) -> {T}
  %b = npu.relu %x {{stream.on = @s0}} : ({T}) -> {T}
  %dead = npu.exp %x {{stream.on = @s0}} : ({T}) -> {T}
  %e = sync.record on @s0
  %w = stream.wait_tensor %x after %a {{stream.on = @s0}} : {T}, {T}
  func.return %a, %b : {T}, {T}
}}
"""


def test_scheduled_ops_are_neither_merged_nor_dropped() -> None:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, LOWERED)
    ops = [op.name for op in module.walk()]
    for p in STOCK:
        p.apply(ctx, module)
    assert [op.name for op in module.walk()] == ops


def test_effects_follow_stream_on() -> None:
    ctx = npuir.make_context()
    graph = npuir.parse_text(ctx, GRAPH)
    lowered = npuir.parse_text(ctx, LOWERED)
    for op in graph.walk():
        if isinstance(op, npu.NpuOp):
            assert is_side_effect_free(op) and is_speculatable(op)
    for op in lowered.walk():
        if isinstance(op, npu.NpuOp | sync.RecordOp | stream.WaitTensorOp):
            assert not is_side_effect_free(op) and not is_speculatable(op), op.name
