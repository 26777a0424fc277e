"""`npuir.torchair.auto_streams`: npuir's `auto` schedule as a TorchAir custom FX pass, GE's
automatic multi-stream as a config option, and streams as a device budget."""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import random
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import npuir.torchair as tng  # noqa: E402
from npuir.api import print_ir  # noqa: E402
from npuir.backends.npu.hardware import load_hardware  # noqa: E402
from npuir.driver.run import RunConfig, run_program  # noqa: E402
from npuir.driver.torch_backend import VARIANTS, stream_budget  # noqa: E402
from npuir.frontends.torch import import_fx_graph  # noqa: E402
from npuir.frontends.torchair.auto_streams import WRITTEN, AutoStreams  # noqa: E402
from npuir.torchair import TorchairError  # noqa: E402

pytestmark = [pytest.mark.torch]  # torch's import and compiles: the slow tier

HERE = __file__
ROOT = Path(__file__).resolve().parents[3]

TORCHAIR_SOURCES = {
    # op names, as `str(node.target)`
    "air.scope_enter.default": "python/torchair/scope/_scope.py",
    "air.scope_exit.default": "python/torchair/scope/_scope.py",
    "air.wait_tensor.default": "python/torchair/scope/_wait_tensor.py",
    # scope keys: `npu_stream_switch`'s and `limit_core_num`'s
    "_user_stream_label": "python/torchair/scope/__init__.py",
    "_user_stream_priority": "python/torchair/scope/__init__.py",
    "_op_aicore_num": "python/torchair/scope/__init__.py",
    "_op_vectorcore_num": "python/torchair/scope/__init__.py",
}
"""Every op name and scope key the pass writes, and the file of Ascend/torchair (commit
fced8842) that defines it: `lib.define("scope_enter(...)")` and `scope_exit` in
`scope/_scope.py`, `wait_tensor` in `scope/_wait_tensor.py`; the keys in
`scope/__init__.py`'s `npu_stream_switch` and `limit_core_num`."""


def _example(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _seed_inputs(n: int = 256) -> list[Any]:
    torch.manual_seed(0)
    return [torch.randn(n, n, dtype=torch.float16) for _ in range(4)]


def _compile(model: Any, inputs: list[Any], config: Any) -> tuple[Any, Any]:
    torch._dynamo.reset()
    backend = tng.get_npu_backend(compiler_config=config)
    compiled = torch.compile(model, backend=backend, dynamic=False)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        compiled(*inputs)
    return backend, compiled


def _rewritten_copy(gm: Any) -> Any:
    """A copy of `gm` to run the pass on (a fixture's graph stays as it is)."""
    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    return torch.fx.GraphModule(gm, graph)


def _timed(module: Any, pipeline: str | None = None) -> int:
    config = RunConfig(path="<test>", source=print_ir(module), timing_only=True)
    if pipeline is not None:
        config = dataclasses.replace(config, pipeline=pipeline)
    outcome = run_program(config)
    assert outcome.result is not None
    return int(outcome.result.makespan_ns)


def _labels(graph: Any) -> list[tuple[str, Any]]:
    """Each call node with the `_user_stream_label` of the scope around it ("" outside)."""
    out: list[tuple[str, Any]] = []
    stack: list[str] = []
    for node in graph.nodes:
        target = str(node.target)
        if target == "air.scope_enter.default":
            keys, values = node.args[0], node.args[1]
            inherited = stack[-1] if stack else ""
            label = "_user_stream_label"
            stack.append(values[keys.index(label)] if label in keys else inherited)
        elif target == "air.scope_exit.default":
            stack.pop()
        elif node.op == "call_function":
            out.append((stack[-1] if stack else "", node))
    return out


# ---------------------------------------------------------------------------------------------
# The pass on the backend
# ---------------------------------------------------------------------------------------------


def test_the_seed_compiled_with_the_pass_runs_autos_schedule() -> None:
    seed = _example("seed_multistream").Seed()
    xs = _seed_inputs()
    plain, _ = _compile(seed, xs, tng.CompilerConfig())
    config = tng.CompilerConfig()
    config.post_grad_custom_pre_pass = tng.auto_streams()  # TorchAir's attribute
    backend, compiled = _compile(seed, xs, config)
    before, after = plain.reports[0].makespans_ns, tng.reports(compiled)[0].makespans_ns
    assert before["auto"] < before["as annotated"]  # the pass has something to do
    assert after["as annotated"] == before["auto"]
    assert "applied auto's schedule" in tng.reports(compiled)[0].render()
    # --check: the rewritten program computes what the program as written does
    outcome = run_program(
        RunConfig(path="<seed>", source=print_ir(backend.imported[-1]), check=True)
    )
    assert outcome.status == 0


def test_the_pass_writes_only_torchairs_ops_and_keys() -> None:
    assert WRITTEN.keys() == TORCHAIR_SOURCES.keys()
    assert all(WRITTEN[k].startswith(path) for k, path in TORCHAIR_SOURCES.items())
    ep = _example("seed_multistream").export()
    auto = tng.auto_streams()
    auto(ep.graph_module, [], None)
    assert auto.reports[-1].changed
    written = {str(n.target) for n in ep.graph.nodes if str(n.target).startswith("air.")}
    keys = {
        k for n in ep.graph.nodes if str(n.target) == "air.scope_enter.default" for k in n.args[0]
    }
    assert written <= TORCHAIR_SOURCES.keys() and keys <= TORCHAIR_SOURCES.keys()
    assert "_user_stream_label" in keys


def test_llama_compiled_with_the_pass_reproduces_each_parts_schedule() -> None:
    """The pass runs on each graph npuir compiles (the tiny Llama is one now that every op
    has an npu op; a split model gives one per part), and each then runs exactly what the
    pass's report says."""
    from conftest import TINY, _models

    torch.manual_seed(0)
    model = _models()["llama"].eval()
    ids = torch.randint(0, TINY["vocab_size"], (1, 8))
    config = tng.CompilerConfig()
    auto = tng.auto_streams()
    config.post_grad_custom_post_pass = auto
    backend, compiled = _compile(lambda i: model(i, use_cache=False).logits, [ids], config)
    reports = backend.reports
    assert len(reports) == len(auto.reports) >= 1
    assert any(r.changed for r in auto.reports)
    for report, applied in zip(reports, auto.reports):
        annotated = report.makespans_ns["as annotated"]
        assert annotated == (applied.applied_ns if applied.changed else applied.written_ns)
        if applied.changed and not applied.split:
            assert annotated == applied.auto_ns
        assert report.custom_pass == [applied.render()]
    with torch.no_grad():
        torch.testing.assert_close(compiled(ids), model(ids, use_cache=False).logits)
    assert backend.compiles == 1


@pytest.mark.parametrize("name", ["llama", "qwen2-moe"])
def test_the_whole_model_as_torchair_gives_it(
    exports: dict[str, tuple[Path, Any]], name: str
) -> None:
    """On TorchAir the pass sees the whole graph (GE takes every op): the graph it writes,
    imported, runs `auto`'s makespan, or what it reports when a node had to stay whole."""
    _, ep = exports[name]
    gm = _rewritten_copy(ep.graph_module)
    auto = tng.auto_streams()
    auto(gm, [], None)
    report = auto.reports[-1]
    assert report.changed and report.applied_ns is not None and report.auto_ns is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        original = import_fx_graph(ep.graph)
        rewritten = import_fx_graph(gm.graph)
    assert _timed(original, VARIANTS["auto"]) == report.auto_ns
    assert _timed(rewritten) == report.applied_ns < report.written_ns
    if not report.split:
        assert report.applied_ns == report.auto_ns


def test_a_memory_budget_is_kept_with_torchairs_waits() -> None:
    """Four wide branches: within the budget, `auto` orders one branch after another, and
    the pass says so with `air.wait_tensor`, read by the op it orders."""

    class Branches(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ws = torch.nn.ParameterList(
                [torch.nn.Parameter(torch.randn(256, 2048)) for _ in range(4)]
            )

        def forward(self, x: Any) -> Any:
            branches = [torch.relu(x @ w).sum(-1) for w in self.ws]
            return sum(branches)

    budget = 24 << 20
    ep = torch.export.export(Branches().eval(), (torch.randn(512, 256),))
    auto = tng.auto_streams(memory_budget="24MiB")
    auto(ep.graph_module, [], None)
    report = auto.reports[-1]
    assert report.changed and report.waits
    waits = [n for n in ep.graph.nodes if str(n.target) == "air.wait_tensor.default"]
    assert [(next(iter(w.users)).name, w.args[1].name) for w in waits] == report.waits
    outcome = run_program(
        RunConfig(path="<branches>", source=print_ir(import_fx_graph(ep.graph)), timing_only=True)
    )
    assert outcome.result is not None and outcome.result.makespan_ns == report.applied_ns
    assert outcome.report["memory"]["peak_bytes"] <= budget
    assert report.applied_ns == report.auto_ns < report.written_ns  # type: ignore[operator]


class _Branches(torch.nn.Module):
    """Four wide branches summed; the weights are inputs (a geared test exports the same)."""

    def forward(self, x: Any, *ws: Any) -> Any:
        return sum(torch.relu(x @ w).sum(-1) for w in ws)


def test_a_chain_of_orderings_on_one_operand_is_a_chain_of_waits() -> None:
    """Within a tighter budget `auto` orders one op after several others, a chain of
    `stream.wait_tensor`s on one operand: each is an `air.wait_tensor` on the one before,
    the last read by the op it orders, and the graph runs `auto`'s makespan."""
    torch.manual_seed(0)
    xs = [torch.randn(1024, 256)] + [torch.randn(256, 2048) for _ in range(4)]
    ep = torch.export.export(_Branches(), tuple(xs))
    auto = tng.auto_streams(memory_budget="40MiB")
    auto(ep.graph_module, xs, None)
    report = auto.reports[-1]
    assert report.changed, report.reason
    waits = [n for n in ep.graph.nodes if str(n.target) == "air.wait_tensor.default"]
    assert len(waits) == len(report.waits)
    chained = [w for w in waits if str(w.args[0].target) == "air.wait_tensor.default"]
    assert chained and all(len(w.users) == 1 for w in waits)
    assert _timed(import_fx_graph(ep.graph)) == report.applied_ns == report.auto_ns
    ep.graph_module.recompile()
    torch.testing.assert_close(ep.module()(*xs), _Branches()(*xs))


def test_a_pass_with_nothing_to_gain_leaves_the_graph() -> None:
    class Chain(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            return torch.relu(x + 1)

    ep = torch.export.export(Chain(), (torch.randn(64, 64),))
    code = ep.graph_module.code
    auto = tng.auto_streams()
    auto(ep.graph_module, [], None)
    assert ep.graph_module.code == code
    report = auto.reports[-1]
    assert not report.changed and "not faster" in report.reason
    assert report.render().startswith("auto_streams: graph left as written")


def test_core_limits_are_written_as_limit_core_num_writes_them() -> None:
    """A core limit of the schedule (here the model's own, which `auto` keeps) is an
    `air.scope_enter` with `limit_core_num`'s keys around its op, inside the op's stream."""

    class Limited(torch.nn.Module):
        def forward(self, x: Any, y: Any) -> Any:
            a = torch.mm(x, x)
            with tng.scope.limit_core_num(6, 12):
                b = torch.add(y, y)
            return a, b, torch.mm(y, y)

    xs = [torch.randn(512, 512, dtype=torch.float16) for _ in range(2)]
    ep = torch.export.export(Limited(), tuple(xs))
    auto = tng.auto_streams()
    auto(ep.graph_module, [], None)
    report = auto.reports[-1]
    assert report.changed and report.limits == {"add": (6, 12)}
    nodes = list(ep.graph.nodes)
    add = next(n for n in nodes if n.name == "add")
    enter = nodes[nodes.index(add) - 1]
    assert str(enter.target) == "air.scope_enter.default"
    assert enter.args == (["_op_aicore_num", "_op_vectorcore_num"], ["6", "12"])
    assert _timed(import_fx_graph(ep.graph)) == report.applied_ns == report.auto_ns


def test_configs_without_in_graph_streams_leave_the_graph() -> None:
    ep = _example("seed_multistream").export()
    code = ep.graph_module.code
    auto = tng.auto_streams()
    config = tng.CompilerConfig()
    config.ge_config.enable_single_stream = True
    auto(ep.graph_module, [], config)
    assert not auto.reports[-1].changed and ep.graph_module.code == code
    assert "one stream" in auto.reports[0].reason
    # TorchAir's own config, as TorchAir passes it: options are `OptionValue`s.  (Capture
    # mode is the capture variant's: test_capture_npugraph_ex.py.)
    option = types.SimpleNamespace
    torchair_config = option(
        mode=option(value="max-autotune"), ge_config=option(enable_single_stream=True)
    )
    auto(ep.graph_module, [], torchair_config)
    assert not auto.reports[-1].changed and ep.graph_module.code == code
    torchair_config.ge_config.enable_single_stream = False
    auto(ep.graph_module, [], torchair_config)
    assert auto.reports[-1].changed


def test_two_layers_reuse_the_streams_of_one() -> None:
    """A stream per layer is a known trap: the second layer's side work joins the first
    layer's side stream instead of opening one of its own."""

    class Layer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = torch.nn.Linear(256, 256, bias=False)
            self.b = torch.nn.Linear(256, 256, bias=False)

        def forward(self, x: Any) -> Any:
            return torch.relu(self.a(x)) + torch.sigmoid(self.b(x))

    def streams(layers: int) -> tuple[set[str], dict[str, set[str]]]:
        torch.manual_seed(0)
        model = torch.nn.Sequential(*(Layer() for _ in range(layers))).eval()
        ep = torch.export.export(model, (torch.randn(256, 256),))
        auto = tng.auto_streams()
        auto(ep.graph_module, [], None)
        assert auto.reports[-1].changed
        by_layer: dict[str, set[str]] = {}
        for label, node in _labels(ep.graph):
            stack = node.meta.get("nn_module_stack", {})
            layer = next((path for path, _ in stack.values() if path.isdigit()), "")
            if label and layer:
                by_layer.setdefault(layer, set()).add(label)
        return {label for label, _ in _labels(ep.graph) if label}, by_layer

    one, _ = streams(1)
    two, by_layer = streams(2)
    assert one and len(two) <= len(one)
    assert by_layer["0"] & by_layer["1"]  # a side stream serves both layers


# ---------------------------------------------------------------------------------------------
# GE's automatic multi-stream
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "partition"),
    [
        ("LoadBalance:4", "mode=minidag variant=loadbalance max-streams=4"),
        ("MainStream:4", "mode=minidag variant=mainstream max-streams=4"),
        ("cv", "mode=engine"),
    ],
)
def test_ge_automatic_multi_stream_is_honoured(mode: str, partition: str) -> None:
    config = tng.CompilerConfig()
    config.ge_config.auto_multistream_parallel_mode = mode
    seed = _example("seed_multistream").Seed()
    backend, _ = _compile(seed, _seed_inputs(), config)
    report = backend.reports[0]
    assert report.options["ge.autoMultistreamParallelMode"] == mode
    tail = "coreset-lower,insert-events,coreset-check,sync-verify"
    pipeline = f"gear-multiversion,stream-partition{{{partition}}},{tail}"
    assert report.makespans_ns["as annotated"] == _timed(backend.imported[-1], pipeline)


def test_single_stream_wins_over_automatic_multi_stream() -> None:
    config = tng.CompilerConfig()
    config.ge_config.auto_multistream_parallel_mode = "LoadBalance"
    assert config.pass_options()["stream-partition"]["max-streams"] == "8"
    config.ge_config.enable_single_stream = True
    assert config.pass_options() == {"stream-partition": {"mode": "single"}}


# ---------------------------------------------------------------------------------------------
# Streams as a device budget
# ---------------------------------------------------------------------------------------------


def test_reports_count_streams_and_warn_past_the_budget() -> None:
    seed = _example("seed_multistream").Seed()
    backend, _ = _compile(seed, _seed_inputs(), tng.CompilerConfig())
    report = backend.reports[0]
    assert report.streams == 3 and report.gears == 1 and not report.warnings  # "1", "2", main
    assert "streams: 3 per graph" in report.render()
    small = dataclasses.replace(load_hardware("910b2"), max_streams=8)
    assert stream_budget(0, 4, 2, small) is None
    warning = stream_budget(0, 3, 3, small)
    assert warning is not None and warning.kind == "torchair.stream-budget"
    assert warning.args["total"] == 9 and warning.severity == "warning"


# ---------------------------------------------------------------------------------------------
# Mistakes: located at the user's line, with a kind
# ---------------------------------------------------------------------------------------------


def _line() -> int:
    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    return frame.f_back.f_lineno


@pytest.mark.parametrize(
    "value", ["LoadBalance:0", "LoadBalance:65", "loadbalance:4", "MainStream", "cv:2", 4, ""]
)
def test_a_bad_automatic_multi_stream_mode_is_located(value: object) -> None:
    config = tng.CompilerConfig()
    with pytest.raises(TorchairError) as caught:
        line = _line() + 1
        config.ge_config.auto_multistream_parallel_mode = value
    assert caught.value.diagnostic.kind == "torchair.bad-option.auto-multistream"
    assert str(caught.value).startswith(f"{HERE}:{line}:")


def test_a_custom_pass_that_is_not_callable_is_located() -> None:
    config = tng.CompilerConfig()
    with pytest.raises(TorchairError) as caught:
        line = _line() + 1
        config.post_grad_custom_pre_pass = "auto_streams"
    assert caught.value.diagnostic.kind == "torchair.bad-option.custom-pass"
    assert str(caught.value).startswith(f"{HERE}:{line}:")
    config.post_grad_custom_post_pass = None  # None switches it off, as in TorchAir


@pytest.mark.parametrize(
    ("argument", "value"),
    [("memory_budget", "lots"), ("memory_budget", 1.5), ("max_streams", 0), ("hw", "910z")],
)
def test_bad_auto_streams_arguments_are_located(argument: str, value: object) -> None:
    with pytest.raises(TorchairError) as caught:
        line = _line() + 1
        tng.auto_streams(**{argument: value})
    assert caught.value.diagnostic.kind == "torchair.bad-argument.auto-streams"
    assert caught.value.diagnostic.args["name"] == argument
    assert str(caught.value).startswith(f"{HERE}:{line}:")
    assert isinstance(tng.auto_streams(memory_budget="2GiB", max_streams=4), AutoStreams)


def test_fuzzed_option_values_parse_or_are_located_errors() -> None:
    """What the two new options parse, fuzzed: a value is taken or refused with its kind,
    never a traceback."""
    rng = random.Random(36)
    alphabet = "LoadBalnceMainStrmcv:0123456789 -GiBk"
    texts = ["".join(rng.choices(alphabet, k=rng.randint(0, 14))) for _ in range(400)]
    texts += ["LoadBalance:64", "MainStream:1", "cv", "LoadBalance", "hbm", "64MiB", "-1"]
    taken = 0
    for text in texts:
        config = tng.CompilerConfig()
        try:
            config.ge_config.auto_multistream_parallel_mode = text
        except TorchairError as exc:
            assert exc.diagnostic.kind == "torchair.bad-option.auto-multistream"
        else:
            taken += 1
            assert config.pass_options()["stream-partition"]["mode"] in ("minidag", "engine")
        try:
            tng.auto_streams(memory_budget=text)
        except TorchairError as exc:
            assert exc.diagnostic.kind == "torchair.bad-argument.auto-streams"
    assert taken >= 4
