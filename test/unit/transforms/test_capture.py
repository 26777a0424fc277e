"""The capture-mode target: `npu-capture` forks and joins every side stream, and
`capture-verify` refuses, with the runtime's 107025 wording, a program whose join is gone."""

from __future__ import annotations

from pathlib import Path

import pytest
from randgraph import random_annotated_graph
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp

import npuir
from npuir.analysis.happens_before import HappensBefore
from npuir.analysis.program import build_program, module_streams, scheduled_functions
from npuir.diagnostics import DiagnosticError
from npuir.dialects import stream, sync
from npuir.transforms.capture_close import unforked, unjoined
from npuir.transforms.capture_verify import UNFORKED, UNJOINED

ROOT = Path(__file__).resolve().parents[3]


def _lower(text: str, pipeline: str = "npu-capture") -> tuple[npuir.NpuirContext, ModuleOp]:
    ctx = npuir.make_context(collect_diagnostics=True)
    module = npuir.parse_text(ctx, text)
    with ctx.diagnostics.collect():
        npuir.run_passes(ctx, module, npuir.build_pipeline(pipeline))
    return ctx, module


def _open_ends(module: ModuleOp) -> int:
    """Side streams the capture rules would refuse, over every function."""
    streams = module_streams(module)
    count = 0
    for func in scheduled_functions(module):
        prog = build_program(func, streams)
        count += len(unforked(prog)) + len(unjoined(prog, HappensBefore(prog).run()))
    return count


@pytest.mark.parametrize("seed", range(6))
def test_every_side_stream_is_forked_and_joined(seed: int) -> None:
    """On random annotated programs (several streams, waits), npu-capture leaves no side
    stream unforked or unjoined, and adds nothing npu-default's output does not need."""
    text = random_annotated_graph(seed, 14, num_tags=3)
    _, captured = _lower(text)
    assert _open_ends(captured) == 0
    _, graph_mode = _lower(text, "npu-default")
    side = [d for d in module_streams(graph_mode) if d.tag != stream.MAIN_TAG]
    records = sum(isinstance(op, sync.RecordOp) for op in captured.walk())
    plain = sum(isinstance(op, sync.RecordOp) for op in graph_mode.walk())
    # At most one fork record per function, and one join per side stream.
    assert plain <= records <= plain + 1 + len(side)


def _drop_join(module: ModuleOp) -> None:
    """Erase the waits right before the return: the capture stream's joins."""
    func = next(f for f in module.ops if isinstance(f, FuncOp))
    ret = func.body.block.last_op
    assert isinstance(ret, ReturnOp)
    while isinstance(ret.prev_op, sync.WaitOp):
        func.body.block.erase_op(ret.prev_op)


def _verify(module: ModuleOp) -> DiagnosticError:
    ctx = npuir.make_context(collect_diagnostics=True)
    with pytest.raises(DiagnosticError) as info:
        npuir.run_passes(ctx, module, npuir.build_pipeline("capture-verify"))
    return info.value


def test_removing_the_join_is_the_runtimes_107025() -> None:
    text = (ROOT / "examples" / "seed_multistream.mlir").read_text()
    _, module = _lower(text)
    _drop_join(module)
    problem = _verify(module)
    assert problem.diagnostic.kind == UNJOINED.code
    assert "not joined to the original stream" in str(problem)
    assert "107025" in str(problem)


def test_a_side_stream_issued_before_its_fork_is_refused() -> None:
    text = """
    stream.decl @s0 "<main>" priority 0
    stream.decl @s1 "1" priority 0
    func.func @f(%x: tensor<8xf16>) -> tensor<8xf16> {
      %b = npu.exp %x {stream.on = @s1} : (tensor<8xf16>) -> tensor<8xf16>
      %e = sync.record on @s1 {event_id = 0 : i64}
      sync.wait %e on @s0
      func.return %b : tensor<8xf16>
    }
    """
    module = npuir.parse_text(npuir.make_context(), text)
    assert _verify(module).diagnostic.kind == UNFORKED.code
    # capture-close repairs exactly that: afterwards the check passes.
    ctx = npuir.make_context()
    npuir.run_passes(ctx, module, npuir.build_pipeline("capture-close,capture-verify"))
    assert _open_ends(module) == 0
