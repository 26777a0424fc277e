"""`auto_streams` on a geared graph: TorchAir compiles one FX graph for every gear of
`set_dim_gears`, so the pass writes one schedule, the gear's `auto` schedule with the least
sum of the gears' makespans, and reports each gear's cost under it against its own `auto`."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import npuir.torchair as tng  # noqa: E402
from npuir.torchair.inference import set_dim_gears  # noqa: E402

pytestmark = [pytest.mark.torch]  # torch's import and compiles: the slow tier


def _two_branches() -> Any:
    class Two(torch.nn.Module):
        def forward(self, x: Any, w: Any, v: Any) -> Any:
            return torch.exp(x @ w), torch.exp(x @ v)

    return Two()


def _inputs(rows: int) -> list[Any]:
    torch.manual_seed(0)
    return [
        torch.randn(rows, 1024, dtype=torch.float16),
        torch.randn(1024, 1024, dtype=torch.float16),
        torch.randn(1024, 1024, dtype=torch.float16),
    ]


def test_one_schedule_for_all_gears_the_least_sum() -> None:
    xs = _inputs(2)
    n = torch.export.Dim("n", min=2, max=4096)
    ep = torch.export.export(_two_branches(), tuple(xs), dynamic_shapes=({0: n}, None, None))
    set_dim_gears(xs[0], {0: [2, 4096]})
    auto = tng.auto_streams()
    auto(ep.graph_module, xs, None)
    report = auto.reports[-1]
    assert report.changed and len(report.gears) == 2 and report.chosen in report.gears
    chosen = report.gears.index(report.chosen)
    applied, own, written = report.gear_applied_ns, report.gear_auto_ns, report.gear_written_ns
    assert all(isinstance(n, int) for n in (*applied, *own, *written))
    # The chosen gear runs its own auto schedule; the sum is below the graph as written's.
    assert applied[chosen] == own[chosen]
    assert sum(a or 0 for a in applied) < sum(w or 0 for w in written)
    text = report.render()
    assert all(label in text for label in report.gears) and "its own auto" in text
    # The graph now carries TorchAir's stream scopes.
    assert any(str(n.target) == "air.scope_enter.default" for n in ep.graph.nodes)


def test_the_backend_runs_the_pass_on_a_geared_graph() -> None:
    xs = _inputs(2)
    set_dim_gears(xs[0], {0: [2, 4096]})
    config = tng.CompilerConfig()
    auto = tng.auto_streams()
    config.post_grad_custom_pre_pass = auto
    torch._dynamo.reset()
    model = _two_branches()
    compiled = torch.compile(
        model, backend=tng.get_npu_backend(compiler_config=config), dynamic=True
    )
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        got = compiled(*xs)
        want = model(*xs)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    assert auto.reports and auto.reports[-1].gears, auto.reports[-1].reason
