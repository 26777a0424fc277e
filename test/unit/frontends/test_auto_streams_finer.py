"""`auto_streams`' finer nodes: a node whose npu ops `auto` puts apart is rewritten as ATen
nodes that npuir imports to the same npu ops, so that the graph can say `auto`'s schedule;
the graph, rewritten, computes what it did."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
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


class Writes(torch.nn.Module):
    """DeepSeek-V3's in-place writes: a `new_empty` key filled part by part through `slice`
    views (`k[..., :4] = a`, `k[..., 4:] = b`), and a `zeros_like` mask marked by `scatter_`."""

    def forward(self, x: Any, index: Any) -> Any:
        a, b = torch.relu(x), torch.exp(x[..., :2])
        k = x.new_empty(2, 3, 6)
        k[..., :4] = a
        k[..., 4:] = b
        mask = torch.zeros_like(x[:, :, 0]).scatter_(1, index, 1.0)
        return k * 2, mask.unsqueeze(-1) * x


def test_writes_into_a_fresh_tensor_go_functional() -> None:
    """Every write into the tensor goes functional (the `copy_`s as the kept parts and a
    `cat`, the `scatter_` as a `full` and a `scatter`), in the npu ops npuir imported the
    writes to, and the graph computes what it did."""
    torch.manual_seed(0)
    x, index = torch.randn(2, 3, 4), torch.tensor([[0], [2]])
    ep = torch.export.export(Writes(), (x, index))
    before = _ops(ep.graph)
    writes = [
        n for n in ep.graph.nodes if str(n.target).startswith(("aten.copy_", "aten.scatter_"))
    ]
    assert len(writes) == 3
    # The last `copy_` rewrites its group (the first one too): the first name is gone then.
    assert _finer(ep.graph, writes[1]) and _finer(ep.graph, writes[2])
    ep.graph.lint()
    targets = {str(n.target) for n in ep.graph.nodes}
    assert not any("copy_" in t or "scatter_" in t for t in targets), targets
    assert {"aten.cat.default", "aten.scatter.src", "aten.full.default"} <= targets
    assert _ops(ep.graph) == before
    ep.graph_module.recompile()
    for got, want in zip(ep.module()(x, index), Writes()(x, index)):
        torch.testing.assert_close(got, want)


def test_a_write_seen_through_an_earlier_view_is_left() -> None:
    """A view of the tensor taken before the write and read after it sees the write in
    torch (a value would not): that write stays in place."""

    class Seen(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            k = x.new_zeros(4, 6)
            seen = k.t()
            k[:, :4] = x
            return seen + 1

    ep = torch.export.export(Seen(), (torch.randn(4, 4),))
    (copy,) = [n for n in ep.graph.nodes if str(n.target) == "aten.copy_.default"]
    code = ep.graph_module.code
    assert not _finer(ep.graph, copy)
    ep.graph_module.recompile()
    assert ep.graph_module.code == code


@pytest.mark.slow
@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_deepseek_v3_rewritten_runs_autos_makespan(phase: str) -> None:
    """DeepSeek-V3 (the zoo's, with the user's scope), whose attention and routing write in
    place: no node is kept whole, and the graph the pass writes, imported as npuir's
    backend imports it, runs `auto`'s makespan exactly."""
    pytest.importorskip("transformers")
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
    import zoo

    from npuir.api import print_ir
    from npuir.driver.run import RunConfig, run_program
    from npuir.driver.torch_backend import VARIANTS
    from npuir.torchair import auto_streams

    def timed(graph: Any, pipeline: str | None = None) -> int:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            text = print_ir(import_fx_graph(graph))
        config = RunConfig(path="<deepseek-v3>", source=text, pipeline=pipeline, timing_only=True)
        outcome = run_program(config)
        assert outcome.result is not None
        return int(outcome.result.makespan_ns)

    name = "deepseek-v3"
    model = zoo.scoped(name, zoo.build(name))
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        ep = torch.export.export(zoo.wrapped(name, model), zoo.inputs(name, phase, model))
    auto_ns = timed(ep.graph, VARIANTS["auto"])
    written = {str(n.target) for n in ep.graph.nodes}
    assert {"aten.copy_.default", "aten.scatter_.value"} <= written  # what this is about
    rewrite = auto_streams()
    rewrite(ep.graph_module, [], None)
    report = rewrite.reports[-1]
    assert report.changed and report.split == [], report.render()
    assert report.applied_ns == report.auto_ns == auto_ns < (report.written_ns or 0)
    assert timed(ep.graph) == auto_ns
