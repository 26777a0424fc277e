"""`stream.bind_later_uses` binds later uses of a waited value, not a later wait's `dep`.

A program with `%w6 = stream.wait_tensor %r2 after %r5` and, later,
`%w9 = stream.wait_tensor %r4 after %r2`: the graph orders the users of `%w9` after
`%r2`'s producer alone.  When the second wait's `dep` was rebound to `%w6`, it inherited
`%r5` too, and `auto` (which reissues ops by the graph) placed a user of `%w9` before
`%r5` was computed: a valid program refused with "used before it is computed" (found by
`test_auto_beats_baselines_on_random_graphs_within_the_cap`, seed 1031, 15 ops, cap 4).
"""

from __future__ import annotations

import pytest
from randgraph import random_annotated_graph

import npuir
from npuir.dialects import stream


def test_a_later_waits_dep_is_not_rebound() -> None:
    text = """
    func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
      %x = npu.exp %a : (tensor<4xf32>) -> tensor<4xf32>
      %y = npu.neg %b : (tensor<4xf32>) -> tensor<4xf32>
      %w1 = stream.wait_tensor %x after %y : tensor<4xf32>, tensor<4xf32>
      %w2 = stream.wait_tensor %b after %x : tensor<4xf32>, tensor<4xf32>
      %z = npu.add %x, %w2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      func.return %z : tensor<4xf32>
    }
    """
    module = npuir.parse_text(npuir.make_context(), text)
    func = next(iter(module.ops))
    stream.bind_later_uses(func)
    w1, w2 = [op for op in func.walk() if isinstance(op, stream.WaitTensorOp)]
    add = next(op for op in func.walk() if op.name == "npu.add")
    assert add.operands[0] is w1.result  # a later use: bound
    assert w2.dep.owner.name == "npu.exp"  # a later wait's dep: kept


@pytest.mark.parametrize("mode", ["auto", "opara", "minidag", "nimble", "ge"])
def test_every_mode_lowers_the_program_that_was_refused(mode: str) -> None:
    text = random_annotated_graph(1031, 15, num_tags=2, wait_tensor_rate=0.2)
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, text)
    spec = (
        f"stream-partition{{mode={mode} ignore-tags=true max-streams=4}},"
        "coreset-lower,insert-events,sync-verify"
    )
    npuir.run_passes(ctx, module, npuir.build_pipeline(spec))
