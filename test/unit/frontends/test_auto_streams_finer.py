"""`auto_streams`' finer nodes: a node whose npu ops `auto` puts apart is rewritten as ATen
nodes that npuir imports to the same npu ops, so that the graph can say `auto`'s schedule;
the graph, rewritten, computes what it did."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from npuir.dialects.npu import NpuOp  # noqa: E402
from npuir.dialects.scope import walk_nested  # noqa: E402
from npuir.frontends.torch import import_fx_graph  # noqa: E402
from npuir.frontends.torchair.auto_streams import _finer  # noqa: E402

pytestmark = [pytest.mark.torch]  # torch's import and export: the slow tier


class Parts(torch.nn.Module):
    """One of each node the pass makes finer."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(16, 32)  # a biased linear on a rank-3 input

    def forward(self, x: Any) -> Any:
        h = self.proj(x)
        a, b = h.chunk(2, dim=-1)
        c, d = torch.split(h, [8, 24], dim=-1)
        m = h.mean(-1, keepdim=True)
        e = torch.empty_like(a).fill_(0.0) + torch.ones_like(b)
        f = h.new_ones((2, 4))
        return a * b + m, c.sum() + d.sum(), e, f


def _ops(graph: Any) -> list[tuple[str, str]]:
    """The npu ops `graph` imports to, in order: name and result types (what costs them)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = import_fx_graph(graph)
    return [
        (op.name, ", ".join(str(r.type) for r in op.results))
        for op in walk_nested(module)
        if isinstance(op, NpuOp)
    ]


def test_finer_nodes_import_to_the_same_npu_ops() -> None:
    torch.manual_seed(0)
    model = Parts().eval()
    x = torch.randn(2, 4, 16)
    ep = torch.export.export(model, (x,))
    before = _ops(ep.graph)
    targets = {n.name: str(n.target) for n in ep.graph.nodes}
    finer = [
        name
        for name, target in targets.items()
        if target.startswith("aten.")
        and target.split(".")[1]
        in {"linear", "chunk", "split_with_sizes", "mean", "empty_like", "ones_like", "new_ones"}
    ]
    assert len(finer) >= 6
    for name in finer:
        node = next(n for n in ep.graph.nodes if n.name == name)
        assert _finer(ep.graph, node), name
    ep.graph.lint()
    remaining = {str(n.target) for n in ep.graph.nodes}
    assert not any(".chunk." in t or ".mean." in t or "_like" in t for t in remaining)
    # The same npu ops, in the same order: auto's schedule of one is a schedule of the other.
    assert _ops(ep.graph) == before
    # And the graph computes what it did.
    ep.graph_module.recompile()
    with torch.no_grad():
        got, want = ep.module()(x), model(x)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


def test_histc_is_the_ops_npuir_builds_it_from() -> None:
    """MoE routing's `histc`: one ATen node per npu op npuir builds it from (the device
    subtraction of its two bounds included)."""

    class Hist(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            return torch.histc(x.float(), bins=4, min=0, max=3) * 2

    x = torch.randint(0, 4, (8, 2))
    ep = torch.export.export(Hist(), (x,))
    before = _ops(ep.graph)
    (histc,) = [n for n in ep.graph.nodes if str(n.target) == "aten.histc.default"]
    assert _finer(ep.graph, histc)
    assert _ops(ep.graph) == before
    ep.graph_module.recompile()
    torch.testing.assert_close(ep.module()(x), Hist()(x))


def test_a_node_without_a_finer_form_is_left() -> None:
    class Hist(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            # histc over the data's own range; a mean with a dtype
            return torch.histc(x, bins=4), x.mean(-1, dtype=torch.float64)

    ep = torch.export.export(Hist(), (torch.rand(8, 3) * 3,))
    code = ep.graph_module.code
    for node in list(ep.graph.nodes):
        if node.op == "call_function":
            assert not _finer(ep.graph, node), node.name  # histc; a mean with a dtype
    ep.graph_module.recompile()
    assert ep.graph_module.code == code
