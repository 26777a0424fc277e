"""The torch.compile route draws the schedule as npuir-run does: each `reports(...)` entry
writes the trace and the HTML page, and `config.debug.schedule_report.path` writes both for
every compiled graph."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import npuir.torchair as tng  # noqa: E402
from npuir.torchair import TorchairError  # noqa: E402

pytestmark = [pytest.mark.torch]  # torch's import and compiles: the slow tier


class TwoStreams(torch.nn.Module):
    def forward(self, a: Any, b: Any) -> Any:
        x = torch.add(a, b)
        with tng.scope.npu_stream_switch("1"):
            y = torch.mm(a, b)
        return x, y


def _compile(config: Any) -> Any:
    torch._dynamo.reset()
    backend = tng.get_npu_backend(compiler_config=config)
    xs = [torch.randn(64, 64) for _ in range(2)]
    torch.compile(TwoStreams(), backend=backend, fullgraph=True, dynamic=False)(*xs)
    return backend


def test_a_report_entry_writes_the_trace_and_the_page(tmp_path: Path) -> None:
    config = tng.CompilerConfig()
    config.debug.schedule_report.path = str(tmp_path / "pictures")
    backend = _compile(config)
    (report,) = tng.reports(backend)
    report.trace(str(tmp_path / "t.json"))
    report.html(str(tmp_path / "r.html"))
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    threads = {e["args"]["name"] for e in events if e["name"] == "thread_name" and e["pid"] == 0}
    assert {"<main>", "1"} <= threads
    page = (tmp_path / "r.html").read_text()
    assert page.count("class='lane'") == 2
    # The debug option wrote the same two files for the graph.
    written = sorted(p.name for p in (tmp_path / "pictures").iterdir())
    assert written == [
        f"schedule_graph_{report.graph_id}.html",
        f"schedule_graph_{report.graph_id}.trace.json",
    ]


def test_a_bad_schedule_report_path_is_an_error_at_the_users_line() -> None:
    config = tng.CompilerConfig()
    with pytest.raises(TorchairError) as info:
        config.debug.schedule_report.path = 3
    assert info.value.diagnostic.kind == "torchair.bad-option.report-path"
    assert Path(__file__).name in info.value.diagnostic.render()
