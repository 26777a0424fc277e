"""Property tests: insert-events makes any annotated graph race-free, with no
wait to spare.

After insert-events the `stream.wait_tensor` orderings live only in the
events (the ops are erased), so "every wait is needed" is checked against the
dependencies read *before* insert-events — data and wait_tensor control edges
alike — with happens-before computed on the lowered IR.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from randgraph import random_annotated_graph
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation

import npuir
from npuir.analysis.happens_before import HappensBefore
from npuir.analysis.program import build_program, module_streams
from npuir.dialects import sync

Orderings = list[tuple[Operation, Operation]]


def _func(module: ModuleOp) -> FuncOp:
    return next(op for op in module.ops if isinstance(op, FuncOp))


def _partition(text: str) -> tuple[npuir.NpuirContext, ModuleOp, Orderings]:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, text)
    npuir.run_passes(ctx, module, npuir.build_pipeline("stream-partition"))
    prog = build_program(_func(module), module_streams(module))
    needed = [(prog.ops[p], prog.ops[n]) for n, deps in enumerate(prog.deps) for p, _ in deps]
    return ctx, module, needed


def _violations(module: ModuleOp, needed: Orderings) -> int:
    prog = build_program(_func(module), module_streams(module))
    hb = HappensBefore(prog).run()
    index = prog.index
    unordered = sum(1 for p, n in needed if not hb.ordered(index[p], index[n]))
    return unordered + len(hb.unjoined())


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**31), num_ops=st.integers(1, 30), num_tags=st.integers(1, 4))
def test_events_order_everything_and_every_wait_is_needed(
    seed: int, num_ops: int, num_tags: int
) -> None:
    ctx, module, needed = _partition(random_annotated_graph(seed, num_ops, num_tags))
    npuir.run_passes(ctx, module, npuir.build_pipeline("insert-events,sync-verify"))
    assert _violations(module, needed) == 0
    num_waits = sum(1 for op in module.walk() if isinstance(op, sync.WaitOp))
    for index in range(num_waits):
        clone = module.clone()
        mapping = dict(zip(module.walk(), clone.walk()))
        victim = [op for op in clone.walk() if isinstance(op, sync.WaitOp)][index]
        block = victim.parent_block()
        assert block is not None
        block.erase_op(victim)
        moved = [(mapping[p], mapping[n]) for p, n in needed]
        assert _violations(clone, moved) > 0, f"wait #{index} is not needed"


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), num_ops=st.integers(1, 30))
def test_without_wait_tensor_sync_verify_alone_catches_each_removed_wait(
    seed: int, num_ops: int
) -> None:
    text = random_annotated_graph(seed, num_ops, wait_tensor_rate=0.0)
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, text)
    npuir.run_passes(ctx, module, npuir.build_pipeline("npu-default"))
    verify = npuir.build_pipeline("sync-verify")
    num_waits = sum(1 for op in module.walk() if isinstance(op, sync.WaitOp))
    for index in range(num_waits):
        clone = module.clone()
        victim = [op for op in clone.walk() if isinstance(op, sync.WaitOp)][index]
        block = victim.parent_block()
        assert block is not None
        block.erase_op(victim)
        try:
            npuir.run_passes(ctx, clone, verify)
        except npuir.DiagnosticError as exc:
            assert "race" in str(exc.diagnostic.message)
        else:
            raise AssertionError(f"sync-verify accepted the IR without wait #{index}")


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), num_ops=st.integers(1, 30))
def test_insert_events_is_idempotent(seed: int, num_ops: int) -> None:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, random_annotated_graph(seed, num_ops))
    npuir.run_passes(ctx, module, npuir.build_pipeline("npu-default"))
    before = npuir.print_ir(module)
    npuir.run_passes(ctx, module, npuir.build_pipeline("insert-events,sync-verify"))
    assert npuir.print_ir(module) == before
