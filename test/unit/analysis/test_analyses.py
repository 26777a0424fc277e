"""The analyses' Python API, as a pass author uses it."""

from __future__ import annotations

import pytest
from xdsl.dialects.func import FuncOp

import npuir
from npuir.analysis.dependence import DependenceGraph
from npuir.analysis.happens_before import HappensBefore
from npuir.analysis.program import DepKind, NodeKind, build_program, module_streams

T = "tensor<4x4xf16>"

SEED = f"""
func.func @seed(%in1: {T}, %in2: {T}, %in3: {T}, %in4: {T}) -> ({T}, {T}, {T}) {{
  %add = npu.add %in1, %in2 : ({T}, {T}) -> {T}
  %mm = stream.switch "1" -> {T} {{
    %w = stream.wait_tensor %in4 after %add : {T}, {T}
    %m = npu.matmul %in3, %w : ({T}, {T}) -> {T}
    stream.yield %m : {T}
  }}
  %mm1 = npu.matmul %in3, %in4 : ({T}, {T}) -> {T}
  %add2 = npu.add %mm, %mm1 : ({T}, {T}) -> {T}
  func.return %add, %mm, %add2 : {T}, {T}, {T}
}}
"""


def _func(text: str) -> tuple[npuir.NpuirContext, FuncOp]:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, text)
    return ctx, next(op for op in module.ops if isinstance(op, FuncOp))


def test_dependence_graph_traces_scopes_and_wait_tensor() -> None:
    _, func = _func(SEED)
    graph = DependenceGraph(func).run()
    names = [graph.prog.describe(n) for n in range(len(graph.prog))]
    assert names == [
        "'npu.add' (%add)",
        "'npu.matmul' (%m)",
        "'npu.matmul' (%mm1)",
        "'npu.add' (%add2)",
        "'func.return'",
    ]
    assert graph.predecessors(1) == [(0, DepKind.CONTROL)]
    # %mm1 uses %in4 after the wait, outside its scope: it waits for %add too.
    assert graph.predecessors(2) == [(0, DepKind.CONTROL)]
    assert graph.predecessors(3) == [(1, DepKind.DATA), (2, DepKind.DATA)]
    assert sorted(graph.successors(0)) == [1, 2, 4]
    assert graph.reachable(0, 3)
    assert not graph.reachable(2, 1)
    assert not graph.reachable(3, 0)
    order = graph.topological_order()
    assert sorted(order) == list(range(5))
    pos = {n: i for i, n in enumerate(order)}
    for n in range(5):
        for p, _ in graph.predecessors(n):
            assert pos[p] < pos[n]


def test_happens_before_needs_events_not_issue_order() -> None:
    ctx, func = _func(SEED)
    module = func.parent_op()
    assert module is not None
    npuir.run_passes(ctx, module, npuir.build_pipeline("stream-partition"))  # type: ignore[arg-type]
    prog = build_program(func, module_streams(module))  # type: ignore[arg-type]
    hb = HappensBefore(prog).run()
    assert not hb.ordered(0, 1)  # add (default) -> matmul (stream "1"): issue order alone
    assert hb.ordered(0, 2)  # same stream
    assert [m.producer for m in hb.missing(1)] == [0]
    assert hb.unjoined() == [(4, 1)]
    npuir.run_passes(ctx, module, npuir.build_pipeline("insert-events"))  # type: ignore[arg-type]
    prog = build_program(func, module_streams(module))  # type: ignore[arg-type]
    hb = HappensBefore(prog).run()
    assert all(not hb.missing(n) for n in range(len(prog)))
    assert hb.unjoined() == []
    kinds = [k for k in prog.kind]
    assert kinds.count(NodeKind.WAIT) == 2 and kinds.count(NodeKind.RECORD) == 2


def test_event_id_binds_to_latest_record_of_that_id() -> None:
    text = f"""
    stream.decl @s0 "<main>" priority 0
    stream.decl @s1 "1" priority 0
    stream.decl @s2 "2" priority 0
    func.func @f(%x: {T}) -> {T} {{
      %a = npu.relu %x {{stream.on = @s1}} : ({T}) -> {T}
      %e0 = sync.record on @s1 {{event_id = 7 : i64}}
      %e1 = sync.record on @s2 {{event_id = 7 : i64}}
      sync.wait %e0 on @s0
      %b = npu.exp %a {{stream.on = @s0}} : ({T}) -> {T}
      %e2 = sync.record on @s0
      sync.wait %e2 on @s1
      sync.wait %e2 on @s2
      func.return %b : {T}
    }}
    """
    _, func = _func(text)
    module = func.parent_op()
    prog = build_program(func, module_streams(module))  # type: ignore[arg-type]
    hb = HappensBefore(prog).run()
    wait = next(n for n in range(len(prog)) if prog.kind[n] is NodeKind.WAIT)
    assert hb.bound_record[wait] == 2  # the newer record with id 7, on @s2
    exp = next(n for n in range(len(prog)) if prog.describe(n) == "'npu.exp' (%b)")
    assert [m.producer for m in hb.missing(exp)] == [0]


def test_use_before_definition_is_a_located_error() -> None:
    ctx = npuir.make_context()
    text = f"""func.func @f(%x: {T}) -> {T} {{
  %w = stream.wait_tensor %x after %b : {T}, {T}
  %b = npu.exp %w : ({T}) -> {T}
  func.return %b : {T}
}}
"""
    with pytest.raises(npuir.DiagnosticError) as info:
        npuir.parse_text(ctx, text, "cycle.mlir")
    loc = info.value.diagnostic.location
    assert loc is not None and (loc.line, loc.column) == (2, 3)
    assert "before it is defined" in info.value.diagnostic.message
