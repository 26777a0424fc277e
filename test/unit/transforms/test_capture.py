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
from npuir.backends.npu.memory import gear_pool_bytes
from npuir.diagnostics import Diagnostic, DiagnosticError
from npuir.dialects import mem, stream, sync
from npuir.schedule.capture_rules import unforked, unjoined
from npuir.transforms.capture_close import CAPTURE_LIMIT
from npuir.transforms.capture_verify import UNFORKED, UNJOINED

ROOT = Path(__file__).resolve().parents[3]


def _lower(text: str, pipeline: str = "npu-capture") -> tuple[list[Diagnostic], ModuleOp]:
    ctx = npuir.make_context(collect_diagnostics=True)
    module = npuir.parse_text(ctx, text)
    with ctx.diagnostics.collect() as found:
        npuir.run_passes(ctx, module, npuir.build_pipeline(pipeline))
    return found, module


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


GEARED = """
func.func @forward(%x: tensor<?x64xf32> {gear.dims = #gear.dims<0: [8, 32, 64]>}) -> tensor<?x64xf32> {
  %a = npu.relu %x : (tensor<?x64xf32>) -> tensor<?x64xf32>
  %b = npu.exp %a : (tensor<?x64xf32>) -> tensor<?x64xf32>
  func.return %b : tensor<?x64xf32>
}
"""


def test_captured_gears_share_one_pool() -> None:
    """npugraph_ex's graphs of one FX graph share a pool: the gears need the largest of
    their plans, not the sum graph mode's separate pools add up to."""
    _, module = _lower(GEARED)
    pools = [
        mem.pool_size(f)
        for f in module.ops
        if isinstance(f, FuncOp) and f.sym_name.data.startswith("forward_g")
    ]
    assert len(pools) == 3 and all(p is not None and p > 0 for p in pools)
    planned = [p for p in pools if p is not None]
    assert gear_pool_bytes(module, capture=True) == max(planned)
    assert gear_pool_bytes(module, capture=False) == sum(planned)


def test_more_gears_than_capture_limit_is_a_warning() -> None:
    found, _ = _lower(GEARED, "gear-multiversion,stream-partition,coreset-lower,capture-close")
    assert not [d for d in found if d.kind == CAPTURE_LIMIT.code]
    found, _ = _lower(
        GEARED, "gear-multiversion,stream-partition,coreset-lower,capture-close{capture-limit=2}"
    )
    (warning,) = [d for d in found if d.kind == CAPTURE_LIMIT.code]
    assert warning.severity == "warning" and "3 gears" in warning.message
