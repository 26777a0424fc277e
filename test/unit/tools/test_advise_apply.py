"""Every row of npuir-advise's table, applied as the row says, reproduces the row's makespan.

On two zoo models (a dense one and an MoE one, tiny, prefill), a user's own file subclasses
the model's feed-forward block and opens an `npu_stream_switch` in its `forward`, as TorchAir
users do.  The advice on that file's export is then applied row by row, each time to a new
export of the model: the config switches and the pass as npuir's `torch.compile` backend
applies them (the pass run on the graph, the import and pipeline the config sets), the
source edits to the user's file, exported again and advised (its "as written" row)."""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import npuir.torchair as tng  # noqa: E402
from npuir.api import print_ir  # noqa: E402
from npuir.driver.advise import (  # noqa: E402
    OPTIONS,
    Advice,
    AdviseConfig,
    advise,
    apply_edits,
    owned_file,
)
from npuir.driver.run import RunConfig, run_program  # noqa: E402
from npuir.frontends.torch import import_fx_graph  # noqa: E402
from npuir.passmanager.pipeline import configured_pipeline  # noqa: E402

pytestmark = [pytest.mark.torch]  # torch, transformers and compiles: the slow tier

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
import zoo  # noqa: E402

USER_FILE = '''\
"""The user's serving code: the zoo's {name}, its feed-forward block on a stream of its own."""
import torch
import zoo
import npuir.torchair as torchair
from {module} import {block} as Block


class MyBlock(Block):
    def forward(self, *args, **kwargs):
        with torchair.scope.npu_stream_switch("ffn"):
            return super().forward(*args, **kwargs)


def build(scoped=True):
    model = zoo.build("{name}")
    if scoped:
        for m in model.modules():
            if type(m) is Block:
                m.__class__ = MyBlock
    return zoo.wrapped("{name}", model), model


NAME = "{name}"


def export():
    module, model = build()
    with torch.no_grad():
        return torch.export.export(module, zoo.inputs("{name}", "prefill", model))
'''

MODELS = {
    "llama": ("transformers.models.llama.modeling_llama", "LlamaMLP"),
    "qwen2-moe": ("transformers.models.qwen2_moe.modeling_qwen2_moe", "Qwen2MoeSparseMoeBlock"),
}


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"user_{path.parent.name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dynamo imports the module of the code it traces
    spec.loader.exec_module(module)
    return module


def _advise(user: ModuleType, archive: Path) -> Advice:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.export.save(user.export(), str(archive))
        return advise(AdviseConfig(path=str(archive)))


def _compiled(user: ModuleType, config: Any, scoped: bool) -> int | None:
    """The makespan of the user's model (with or without the user's scope) exported again
    and compiled as npuir's backend compiles a graph under `config`: its custom pass run on
    the graph, the graph imported with the config, lowered by the config's pipeline."""
    module, model = user.build(scoped)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        ep = torch.export.export(module, zoo.inputs(user.NAME, "prefill", model))
        custom = config.post_grad_custom_pre_pass
        if custom is not None:
            custom(ep.graph_module, [], config)
        imported = import_fx_graph(ep.graph, config=config)
    pipeline = configured_pipeline("npu-default", config.pass_options())
    outcome = run_program(
        RunConfig(path="<model>", source=print_ir(imported), pipeline=pipeline, timing_only=True)
    )
    assert outcome.result is not None
    return int(outcome.result.makespan_ns)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MODELS))
def test_every_row_applied_reproduces_its_makespan(tmp_path: Path, name: str) -> None:
    folder = tmp_path / name.replace("-", "_")
    folder.mkdir()
    module, block = MODELS[name]
    path = folder / "serve.py"
    path.write_text(USER_FILE.format(name=name, module=module, block=block))
    user = _load(path)
    advice = _advise(user, folder / "model.pt2")
    rows = {v.option: v for v in advice.variants}
    assert set(rows) == set(OPTIONS)
    want = {option: v.makespan_ns for option, v in rows.items()}

    def config(**ge: Any) -> Any:
        out = tng.CompilerConfig()
        for key, value in ge.items():
            setattr(out.ge_config, key, value)
        return out

    got: dict[str, int | None] = {}
    got["keep"] = _compiled(user, config(), scoped=True)
    got["remove"] = _compiled(user, config(), scoped=False)
    got["single-stream"] = _compiled(user, config(enable_single_stream=True), scoped=False)
    got["ge-auto"] = _compiled(
        user, config(auto_multistream_parallel_mode="LoadBalance"), scoped=False
    )
    with_pass = config()
    with_pass.post_grad_custom_pre_pass = tng.auto_streams()
    got["pass"] = _compiled(user, with_pass, scoped=True)
    # The edits, applied to the user's file: they name no installed file.
    assert all(owned_file(e.file) for e in advice.edits)
    assert all(Path(e.file).resolve() == path.resolve() for e in advice.edits if e.file)
    edited_folder = tmp_path / f"{folder.name}_edited"
    edited_folder.mkdir()
    edited = edited_folder / "serve.py"
    edited.write_text(apply_edits(path.read_text(), advice.edits))
    again = _advise(_load(edited), edited_folder / "model.pt2")
    (as_written,) = [v for v in again.variants if v.option == "keep"]
    got["edits"] = as_written.makespan_ns
    assert got == want
    # The recommendation is the fastest row, and says what it costs in peak memory.
    rec = advice.recommendation
    assert rec is not None
    assert rec.weighted_ns == min(ns for ns in want.values() if ns is not None)
    assert "peak memory" in rec.memory() and rec.written_peak_bytes is not None


class _Three(torch.nn.Module):
    """Three branches, one of fixed size: for 16 rows the fixed `y @ v` is the long one, for
    8192 rows `x @ w` is, so each gear's `auto` puts them otherwise."""

    def forward(self, x: Any, y: Any, w: Any, v: Any) -> Any:
        return torch.exp(x @ w), torch.exp(y @ v), torch.exp(torch.relu(x))


class _Branches(torch.nn.Module):
    """Four wide branches summed: within 24 MiB, the 512-row gear's `auto` schedule runs its
    branches side by side, which the 1024-row gear cannot afford (48 MiB)."""

    def forward(self, x: Any, w0: Any, w1: Any, w2: Any, w3: Any) -> Any:
        return sum(torch.relu(x @ w).sum(-1) for w in (w0, w1, w2, w3))


GEARED = {
    "three": (
        _Three,
        [(16, 1024), (2048, 1024), (1024, 1024), (1024, 1024)],
        [16, 8192],
        None,
        torch.float16,
    ),
    "branches-within-24MiB": (
        _Branches,
        [(512, 256), *[(256, 2048)] * 4],
        [512, 1024],
        "24MiB",
        torch.float32,
    ),
}


@pytest.mark.parametrize("case", list(GEARED))
def test_a_geared_programs_pass_row_is_the_one_schedule_the_pass_writes(
    tmp_path: Path, case: str
) -> None:
    """TorchAir compiles one FX graph for every gear, so the pass writes one schedule: the
    pass row gives, per gear, what the graph the pass wrote runs in that gear (imported
    with its gears and compiled per gear, as the backend does), within the memory budget
    in every gear when one is given; each gear's own `auto` stays in the per-gear advice,
    and the recommendation is no slower than any row that fits."""
    from npuir.frontends.torchair.auto_streams import _gears
    from npuir.torchair.inference import set_dim_gears

    model, shapes, gears_of_x, budget, dtype = GEARED[case]
    torch.manual_seed(0)
    xs = [torch.randn(*shape, dtype=dtype) for shape in shapes]
    rows = torch.export.Dim("rows", min=2, max=8192)
    dynamic = ({0: rows}, *[None] * (len(xs) - 1))
    ep = torch.export.export(model(), tuple(xs), dynamic_shapes=dynamic)
    set_dim_gears(xs[0], {0: gears_of_x})
    gears = _gears(ep.graph, xs)
    program = tmp_path / "geared.mlir"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program.write_text(print_ir(import_fx_graph(ep.graph, gears=gears), debuginfo=True))
    advice = advise(AdviseConfig(path=str(program), mem_budget=budget))
    auto = tng.auto_streams(memory_budget=budget)
    auto(ep.graph_module, xs, None)
    report = auto.reports[-1]
    assert report.changed and report.chosen, report.reason
    # The graph the pass wrote, compiled per gear: the pass row's figures.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        written = print_ir(import_fx_graph(ep.graph, gears=gears))
    labels = [f"gear arg0={n}x{shapes[0][1]}" for n in gears_of_x]
    assert report.gears == labels
    compiled: dict[str | None, int] = {}
    peaks: list[int] = []
    for label, n in zip(labels, gears_of_x):
        outcome = run_program(
            RunConfig(
                path="<pass>", source=written, timing_only=True, shapes={"0": (n, shapes[0][1])}
            )
        )
        assert outcome.result is not None
        compiled[label] = outcome.result.makespan_ns
        peaks.append(outcome.report["memory"]["peak_bytes"])
    row = {v.case: v.makespan_ns for v in advice.variants if v.option == "pass"}
    assert row == compiled == dict(zip(report.gears, report.gear_applied_ns))
    if budget is not None:
        assert max(peaks) <= 24 << 20
    # The row names the gear whose schedule the pass chose, as the pass does.
    assert all(
        f"{report.chosen}'s auto" in v.torchair for v in advice.variants if v.option == "pass"
    )
    # One schedule costs a gear more than its own auto: the per-gear advice says so.
    own = dict(zip(report.gears, report.gear_auto_ns))
    slower = [g for g in own if row[g] != own[g]]
    assert slower and row[report.chosen] == own[report.chosen]
    rec = advice.recommendation
    assert rec is not None
    assert rec.per_case[slower[0]] == ("auto (the gear's own)", own[slower[0]])
    per_row: dict[str, list[Any]] = {}
    for v in advice.variants:
        per_row.setdefault(v.name, []).append(v)
    fitting = [
        sum(advice.weights[v.case] * v.makespan_ns for v in vs)
        for vs in per_row.values()
        if all(
            v.makespan_ns is not None
            and not v.deadlock
            and (budget is None or (v.peak_bytes or 0) <= 24 << 20)
            for v in vs
        )
    ]
    assert rec.weighted_ns == min(fitting)
    assert "one schedule for every gear" in advice.render()
