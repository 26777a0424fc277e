"""Capture mode from torch: npugraph_ex's documented custom-pass example (its own
scope_enter / scope_exit / record / wait ops) compiles under `reduce-overhead` with the
side stream it asks for, the ordering its wait asks for, and the fork and join capture
needs."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

import npuir.torchair as tng  # noqa: E402
from npuir.analysis.happens_before import HappensBefore  # noqa: E402
from npuir.analysis.program import build_program, module_streams  # noqa: E402
from npuir.dialects import npu, stream  # noqa: E402
from npuir.frontends.torchair import npugraph_ex_ops  # noqa: E402
from npuir.schedule.capture_rules import unforked, unjoined  # noqa: E402

pytestmark = [pytest.mark.torch]


class Model(torch.nn.Module):
    """The model of npugraph_ex's post_grad_custom_pass.md."""

    def forward(self, x: Any) -> Any:
        mm = torch.mm(x, x)
        abs_res = torch.abs(mm)
        add = torch.add(abs_res, 1)
        sub = torch.sub(x, mm)
        return add, sub


def _custom_pre_pass(gm: Any, example_inputs: Any, config: Any) -> None:
    """The documented pass: mm and abs on stream "stream_1", sub after abs."""
    ops = torch.ops.npugraph_ex
    graph = gm.graph
    record_node = None
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target == torch.ops.aten.mm.default:
            with graph.inserting_before(node):
                graph.call_function(ops.scope_enter.default, (["_user_stream_label"], ["stream_1"]))
        if node.op == "call_function" and node.target == torch.ops.aten.abs.default:
            with graph.inserting_after(node):
                record_node = graph.call_function(ops.record.default, ())
            with graph.inserting_after(record_node):
                graph.call_function(ops.scope_exit.default, ())
        if node.op == "call_function" and node.target == torch.ops.aten.sub.Tensor:
            with graph.inserting_before(node):
                graph.call_function(ops.wait.default, ([record_node],))
    gm.recompile()


def test_npugraph_ex_custom_pass_example_in_capture_mode() -> None:
    npugraph_ex_ops.register()
    torch._dynamo.reset()
    config = tng.CompilerConfig()
    config.mode = "reduce-overhead"
    config.post_grad_custom_pre_pass = _custom_pre_pass
    backend = tng.get_npu_backend(compiler_config=config)
    model = torch.compile(Model(), backend=backend, fullgraph=True, dynamic=False)
    x = torch.randn(16, 16)
    for got, want in zip(model(x), Model()(x), strict=True):
        assert torch.allclose(got, want, atol=1e-4)
    (module,) = backend.modules
    streams = module_streams(module)
    func = next(f for f in module.ops if f.name == "func.func")
    prog = build_program(func, streams)
    hb = HappensBefore(prog).run()
    on = {
        type(op).__name__: prog.streams[prog.stream[n]].tag
        for n, op in enumerate(prog.ops)
        if isinstance(op, npu.NpuOp)
    }
    assert on["MatmulOp"] == on["AbsOp"] == "stream_1"
    assert on["SubOp"] == stream.MAIN_TAG
    index = prog.index
    abs_op = next(op for op in prog.ops if type(op).__name__ == "AbsOp")
    sub_op = next(op for op in prog.ops if type(op).__name__ == "SubOp")
    assert hb.ordered(index[abs_op], index[sub_op])  # the wait's ordering, through events
    assert not unforked(prog) and not unjoined(prog, hb)


NPUGRAPH_EX_SOURCES = {
    # op names, as `str(node.target)`
    "npugraph_ex.scope_enter.default": "npugraph_ex/npugraph_ex/scope/_scope.py",
    "npugraph_ex.scope_exit.default": "npugraph_ex/npugraph_ex/scope/_scope.py",
    "npugraph_ex.record.default": "npugraph_ex/npugraph_ex/ops/_record_wait.py",
    "npugraph_ex.wait.default": "npugraph_ex/npugraph_ex/ops/_record_wait.py",
    # scope keys, as npugraph_ex's passes read them
    "_user_stream_label": "npugraph_ex/npugraph_ex/_acl_concrete_graph/graph_pass.py",
    "_user_stream_priority": "npugraph_ex/npugraph_ex/_acl_concrete_graph/graph_pass.py",
    "_op_aicore_num": "npugraph_ex/npugraph_ex/scope/__init__.py",
    "_op_vectorcore_num": "npugraph_ex/npugraph_ex/scope/__init__.py",
}
"""Every op name and scope key the capture variant writes, and the file of Ascend/torchair
(commit fced8842) that defines or reads it."""


class Branches(torch.nn.Module):
    """Two independent matmul chains joined at the end: room for a side stream."""

    def forward(self, a: Any, b: Any, c: Any) -> Any:
        x = torch.relu(torch.mm(a, b))
        y = torch.sigmoid(torch.mm(c, b))
        return torch.add(x, y)


def test_auto_streams_in_capture_mode_writes_npugraph_ex_ops() -> None:
    from npuir.frontends.torchair.auto_streams_capture import WRITTEN

    assert WRITTEN.keys() == NPUGRAPH_EX_SOURCES.keys()
    assert all(WRITTEN[k].startswith(path) for k, path in NPUGRAPH_EX_SOURCES.items())
    torch._dynamo.reset()
    config = tng.CompilerConfig()
    config.mode = "reduce-overhead"
    auto = tng.auto_streams()
    seen: list[set[str]] = []

    def spy(gm: Any, example_inputs: Any, cfg: Any) -> None:
        auto(gm, example_inputs, cfg)
        seen.append({str(n.target) for n in gm.graph.nodes if n.op == "call_function"})

    config.post_grad_custom_pre_pass = spy
    backend = tng.get_npu_backend(compiler_config=config)
    model = torch.compile(Branches(), backend=backend, fullgraph=True, dynamic=False)
    inputs = [torch.randn(256, 256) for _ in range(3)]
    assert torch.allclose(model(*inputs), Branches()(*inputs), atol=1e-3)
    report = auto.reports[-1]
    assert report.changed, report.reason
    written = {t for t in seen[-1] if not t.startswith("aten.")}
    assert written and written <= NPUGRAPH_EX_SOURCES.keys()
    assert not any(t.startswith("air.") for t in seen[-1])
    (module,) = backend.modules
    prog = build_program(
        next(f for f in module.ops if f.name == "func.func"), module_streams(module)
    )
    hb = HappensBefore(prog).run()
    assert len(prog.streams) >= 2 and not unforked(prog) and not unjoined(prog, hb)
