"""`npuir.torchair.get_npu_backend`: the seed scripts through `torch.compile`.

Needs the `npuir[torch]` extra; without torch every case here is skipped.
"""

from __future__ import annotations

import logging
import os
import re
import runpy
import subprocess
import sys
import warnings
from functools import partial
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

import numpy as np  # noqa: E402
from xdsl.dialects.builtin import ModuleOp  # noqa: E402
from xdsl.dialects.func import FuncOp  # noqa: E402

import npuir  # noqa: E402
import npuir.torchair as tng  # noqa: E402
from npuir.analysis.happens_before import HappensBefore  # noqa: E402
from npuir.analysis.program import (  # noqa: E402
    build_program,
    module_streams,
    scheduled_functions,
)
from npuir.dialects import stream  # noqa: E402
from npuir.dialects.npu import NpuOp  # noqa: E402
from npuir.frontends.torch import import_exported_program  # noqa: E402
from npuir.schedule.capture_rules import unforked, unjoined  # noqa: E402
from npuir.torchair import TorchairError  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "examples" / "torchair").glob("*.py"))
HERE = str(Path(__file__).resolve())


class Seed(torch.nn.Module):
    """Seed 000's model, with the seed's statement idiom for npu_wait_tensor."""

    def forward(self, in1: Any, in2: Any, in3: Any, in4: Any) -> Any:
        add_result = torch.add(in1, in2)
        with tng.scope.npu_stream_switch("1"):
            tng.scope.npu_wait_tensor(in4, add_result)
            mm_result = torch.mm(in3, in4)
        mm1 = torch.mm(in3, in4)
        with tng.scope.npu_stream_switch("2"):
            tng.scope.npu_wait_tensor(in4, mm_result)
            add2 = torch.add(in3, in4)
        return add_result, mm_result, mm1, add2


_SCOPE_LINE = Seed.forward.__code__.co_firstlineno + 2


def _open_capture_ends(module: Any) -> int:
    """Side streams npuir's capture rules refuse (unforked or unjoined), over the module."""
    streams = module_streams(module)
    count = 0
    for func in scheduled_functions(module):
        prog = build_program(func, streams)
        count += len(unforked(prog)) + len(unjoined(prog, HappensBefore(prog).run()))
    return count


def _inputs(n: int = 4, size: int = 64) -> list[Any]:
    torch.manual_seed(0)
    return [torch.randn(size, size, dtype=torch.float16) for _ in range(n)]


def _air_sequence(graph: Any) -> list[str]:
    return [
        str(n.target).split(".")[1]
        for n in graph.nodes
        if n.op == "call_function" and str(n.target).startswith("air.")
    ]


def _within_one_ulp(got: Any, want: Any, slack: float = 0.0) -> None:
    """Equal within one fp16 ulp of the element, plus ``slack`` (absolute)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    got, want = got.float().numpy(), want.float().numpy()
    top = np.maximum(np.abs(got), np.abs(want)).astype(np.float16)
    ulp = np.spacing(top).astype(np.float32)
    assert np.all(np.abs(got - want) <= ulp + slack)


def _close(got: Any, want: Any) -> None:
    """Within one fp16 ulp of the element or of the output's largest element.

    The interpreter adds a matmul's f32 products in eager PyTorch's CPU order for
    contiguous operands, but a model with transposed weights, softmax or norms also
    sums in orders of its own: an intermediate may round one ulp apart, and a later
    sum that cancels carries that difference into an element smaller than the
    intermediates were (a norm-wise ulp)."""
    top = float(np.spacing(np.float16(want.float().abs().max())))
    _within_one_ulp(got, want, top)


def test_scope_ops_survive_dynamo_aot_and_export_in_order() -> None:
    from torch._functorch.aot_autograd import aot_module_simplified

    seen: dict[str, list[str]] = {}

    def backend(gm: Any, inputs: Any) -> Any:
        seen["dynamo"] = _air_sequence(gm.graph)

        def forward(g: Any, _: Any) -> Any:
            seen["aot"] = _air_sequence(g.graph)
            return g

        return aot_module_simplified(gm, inputs, fw_compiler=forward)

    xs = _inputs()
    torch.compile(Seed(), backend=backend, fullgraph=True, dynamic=False)(*xs)
    seen["export"] = _air_sequence(torch.export.export(Seed(), tuple(xs)).graph)
    order = ["scope_enter", "wait_tensor", "scope_exit"] * 2
    assert seen == {"dynamo": order, "aot": order, "export": order}


def test_the_air_ops_exist_whichever_module_is_imported_first() -> None:
    """`import npuir.torchair` before `import torch` defines the `air::` ops when torch
    arrives, so a trace (a user's own backend, `torch.export`) finds them: in a fresh
    process, export the seed's model with nothing else run first."""
    code = (
        "import npuir.torchair as tng, sys\n"
        "assert 'torch' not in sys.modules\n"
        "import torch\n"
        "assert all(hasattr(torch.ops.air, n) for n in ('scope_enter', 'scope_exit', "
        "'wait_tensor'))\n"
        "class M(torch.nn.Module):\n"
        "    def forward(self, x, y):\n"
        "        with tng.scope.npu_stream_switch('1'):\n"
        "            z = torch.add(x, y)\n"
        "        return z\n"
        "ep = torch.export.export(M(), (torch.ones(2), torch.ones(2)))\n"
        "print(sum(1 for n in ep.graph.nodes if 'air' in str(n.target)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2"]  # scope_enter and scope_exit


def test_an_annotated_model_runs_eagerly() -> None:
    xs = _inputs()
    for got, want in zip(Seed()(*xs), (xs[0] + xs[1], xs[2] @ xs[3], xs[2] @ xs[3])):
        assert torch.equal(got, want)


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_seed_script_prints_the_uncompiled_models_results(
    script: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # graph dumps land here
    torch.manual_seed(0)
    torch._dynamo.reset()
    scope = runpy.run_path(str(script), run_name="__main__")
    model = scope.get("model") if "opt_model" not in scope else scope["opt_model"]
    eager = model._orig_mod
    if "result" in scope:
        args = [scope[k] for k in ("in1", "in2", "in3", "in4")]
        for got, want in zip(scope["result"], eager(*args)):
            _within_one_ulp(got, want)
    elif "x" in scope:  # seed 003 calls the uncompiled model; call the compiled one too
        for got, want in zip(model(scope["x"]), eager(scope["x"])):
            _within_one_ulp(got, want)
    else:  # seed 004: the last call's inputs
        _within_one_ulp(
            model(scope["npu_input0"], scope["npu_input1"]),
            eager(scope["npu_input0"], scope["npu_input1"]),
        )


_SEED_EDITS_NOT_IMPORTS = {
    # seed 003's own bug (fails under any PyTorch), and the product variant of seed 004
    ("seed003_limit_core_num.py", "-        super.__init__()"),
    ("seed003_limit_core_num.py", "+        super().__init__()"),
    ("seed004_gears_product.py", '-# config.inference_config.dynamic_gears_merge_policy = "zip"'),
    ("seed004_gears_product.py", "+# The seed's commented alternative, taken: the product policy"),
    ("seed004_gears_product.py", '+config.inference_config.dynamic_gears_merge_policy = "product"'),
}


def _is_import(line: str) -> bool:
    return line.startswith("import ") or (line.startswith("from ") and " import " in line)


def test_seed_scripts_differ_from_the_seeds_only_in_imports() -> None:
    """docs/torchair.md gives each seed script's whole difference from its seed: those
    diffs must be the checked-in scripts' (each added line where the hunk puts it) and
    change import lines only, but for the two documented exceptions."""
    text = (ROOT / "docs" / "torchair.md").read_text()
    section = text.split("## TorchAir's seed scripts", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"`(seed[\w]+\.py)` \([^\n]*\):\n\n```diff\n(.*?)```", section, re.S)
    assert sorted(name for name, _ in blocks) == [p.name for p in EXAMPLES]
    for name, diff in blocks:
        script = (ROOT / "examples" / "torchair" / name).read_text().splitlines()
        assert not any("torch_npu" in line for line in script)
        line_no = 0
        for line in diff.splitlines():
            hunk = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@", line)
            if hunk:
                line_no = int(hunk.group(1))
                continue
            assert _is_import(line[1:]) or (name, line) in _SEED_EDITS_NOT_IMPORTS, (name, line)
            if line.startswith("+"):
                assert script[line_no - 1] == line[1:], (name, line_no)
                line_no += 1
    # the seeds' `.npu()` calls stay in the scripts: the stand-in runs them
    assert all(".npu()" in p.read_text() for p in EXAMPLES if not p.name.startswith("seed003"))


@pytest.mark.torch
def test_npu_is_a_no_op_on_the_cpu_stand_in() -> None:
    x = torch.ones(2)
    lin = torch.nn.Linear(2, 2)
    assert x.npu() is x and x.npu(0) is x
    assert lin.npu() is lin


@pytest.mark.torch
@pytest.mark.slow
def test_the_stand_in_never_shadows_a_real_torch_npu(tmp_path: Path) -> None:
    (tmp_path / "torch_npu").mkdir()
    (tmp_path / "torch_npu" / "__init__.py").write_text("")  # importable, never imported
    code = (
        "import npuir.torchair, torch\n"
        "print(hasattr(torch.Tensor, 'npu'), hasattr(torch.nn.Module, 'npu'))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]
    done = subprocess.run(  # and without it, importing npuir.torchair before torch installs it
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path.parent
    )
    assert done.stdout.split() == ["True", "True"], done.stderr


def test_seed_004_compiles_once_for_both_gears() -> None:
    torch._dynamo.reset()
    backend = tng.get_npu_backend(compiler_config=tng.CompilerConfig())

    class Add(torch.nn.Module):
        def forward(self, x1: Any, x2: Any) -> Any:
            return x1 + x2

    model = torch.compile(Add(), fullgraph=True, backend=backend)
    a, b = torch.ones([2, 2]), torch.ones([2, 2])
    tng.inference.set_dim_gears(a, {0: [2, 4]})
    tng.inference.set_dim_gears(b, {0: [2, 4]})
    assert torch.equal(model(a, b), a + b)
    c, d = torch.ones([4, 2]), torch.ones([4, 2])
    assert torch.equal(model(c, d), c + d)
    assert backend.compiles == 1
    with pytest.raises(TorchairError, match=r"\[2, 4\]") as caught:  # the gears are named
        model(torch.ones([3, 2]), torch.ones([3, 2]))
    assert caught.value.diagnostic.kind == "torchair.gear-mismatch"


@pytest.mark.torch
@pytest.mark.slow
def test_gears_without_dynamic_true_warn_at_the_set_dim_gears_line() -> None:
    from npuir.frontends.torchair.errors import TorchairWarning

    class Add(torch.nn.Module):
        def forward(self, x1: Any, x2: Any) -> Any:
            return x1 + x2

    for dynamic in (False, True):
        torch._dynamo.reset()
        model = torch.compile(Add(), fullgraph=True, backend=tng.get_npu_backend(), dynamic=dynamic)
        a, b = torch.ones([2, 2]), torch.ones([2, 2])
        line = _line_of_next_statement()
        tng.inference.set_dim_gears(a, {0: [2, 4]})
        tng.inference.set_dim_gears(b, {0: [2, 4]})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert torch.equal(model(a, b), a + b)
        found = [w.message for w in caught if isinstance(w.message, TorchairWarning)]
        if dynamic:
            assert found == []
            continue
        assert [w.diagnostic.kind for w in found] == ["torchair.gears-without-dynamic"] * 2
        assert [w.diagnostic.location.line for w in found] == [line, line + 1]  # type: ignore[union-attr]
        assert all(w.diagnostic.location.filename == HERE for w in found)  # type: ignore[union-attr]
        assert "dynamic=True" in str(found[0])


def _line_of_next_statement() -> int:
    frame = sys._getframe(1)
    return frame.f_lineno + 1


def test_a_bad_scope_argument_under_compile_is_located_at_the_users_line() -> None:
    torch._dynamo.reset()

    class Bad(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            with tng.scope.npu_stream_switch(1):  # type: ignore[arg-type]
                y = x + x
            return y

    line = Bad.forward.__code__.co_firstlineno + 1
    model = torch.compile(Bad(), backend=tng.get_npu_backend(), fullgraph=True, dynamic=False)
    for run in (model, Bad()):
        with pytest.raises(TorchairError, match=rf"^{HERE}:{line}(:\d+)?: error") as caught:
            run(torch.ones(4, 4))
        assert caught.value.diagnostic.kind == "stream.tag-type"  # npuir.dialects.validation


@pytest.mark.parametrize(
    ("call", "kind"),
    [
        (lambda: tng.scope.npu_stream_switch(""), "stream.tag-empty"),
        (lambda: tng.scope.npu_stream_switch("1", "hi"), "stream.priority-type"),  # type: ignore[arg-type]
        (lambda: tng.scope.limit_core_num(6.5, 12), "core.count-type"),  # type: ignore[arg-type]
    ],
)
def test_bad_scope_arguments_on_torch_are_torchair_errors(call: Any, kind: str) -> None:
    with pytest.raises(TorchairError, match=rf"^{HERE}:\d+:\d+: error") as caught:
        call()
    assert caught.value.diagnostic.kind == kind  # the kinds of npuir.dialects.validation


def test_reduce_overhead_captures_the_seeds_streams_and_keeps_core_limits() -> None:
    """Capture mode takes the seed's stream scopes (npugraph_ex's multi_stream.md): the
    numbers are eager's, and the lowered program forks and joins both side streams."""
    torch._dynamo.reset()
    config = tng.CompilerConfig()
    config.mode = "reduce-overhead"
    backend = tng.get_npu_backend(compiler_config=config)
    model = torch.compile(Seed(), backend=backend, fullgraph=True, dynamic=False)
    inputs = _inputs()
    for got, want in zip(model(*inputs), Seed()(*inputs), strict=True):
        assert torch.allclose(got.float(), want.float(), atol=1e-2)
    (module,) = backend.modules
    side = {d.sym_name.data for d in module.ops if isinstance(d, stream.DeclOp)} - {"s0"}
    assert len(side) == 2
    assert _open_capture_ends(module) == 0

    class Limited(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            with tng.scope.limit_core_num(6, 12):
                y = torch.add(x, x)
            return y

    torch._dynamo.reset()
    x = _inputs(1)[0]
    limited = torch.compile(
        Limited(), backend=tng.get_npu_backend(compiler_config=config), fullgraph=True
    )
    assert torch.equal(limited(x), x + x)


def test_config_options_are_checked_at_torchairs_paths() -> None:
    config = tng.CompilerConfig()
    assert config.mode == "max-autotune" and config.debug.graph_dump.path == "."
    with pytest.raises(TorchairError, match=r"'ge_config\.no_such_option'") as caught:
        config.ge_config.no_such_option = 1  # the option is named
    assert caught.value.diagnostic.kind == "torchair.bad-option.unknown"
    with pytest.raises(TorchairError) as caught:
        config.mode = "fast"
    assert caught.value.diagnostic.kind == "torchair.bad-option.mode"
    assert caught.value.diagnostic.args["value"] == "'fast'"
    with pytest.warns(UserWarning, match="experimental_config.frozen_parameter"):
        config.experimental_config.frozen_parameter = True
    from npuir.torchair.configs.compiler_config import CompilerConfig

    assert CompilerConfig is tng.CompilerConfig


def test_dynamic_multi_stream_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENABLE_DYNAMIC_SHAPE_MULTI_STREAM", "1")
    assert tng.CompilerConfig().pass_options() == {
        "stream-partition": {"dynamic-multi-stream": "true"}
    }
    monkeypatch.setenv("ENABLE_DYNAMIC_SHAPE_MULTI_STREAM", "0")
    assert tng.CompilerConfig().pass_options() == {}


def test_info_log_has_the_options_and_the_report(caplog: pytest.LogCaptureFixture) -> None:
    from npuir.torchair.core.utils import logger

    torch._dynamo.reset()
    logger.propagate = True
    logger.setLevel(logging.INFO)
    try:
        with caplog.at_level(logging.INFO, logger="npuir.torchair"):
            backend = tng.get_npu_backend()
            compiled = torch.compile(Seed(), backend=backend, fullgraph=True, dynamic=False)
            compiled(*_inputs())
    finally:
        logger.propagate = False
        logger.setLevel(logging.ERROR)
    text = caplog.text
    assert "Compiling concrete graph" in text and "schedule of concrete graph" in text
    report = tng.reports(backend)[0]
    assert tng.reports(compiled) == [report]  # found from the compiled model too
    assert set(report.makespans_ns) == {"as annotated", "one stream", "ge (GE default)", "auto"}
    assert report.lower_bound_ns is not None
    assert all(ns is None or ns >= report.lower_bound_ns for ns in report.makespans_ns.values())
    # The scopes as written: each tag with the ops it holds (the seed's mm and add).
    assert report.scopes == {"1": 1, "2": 1}
    assert "scopes as written: '1' (1 op(s)), '2' (1 op(s))" in report.render()


def test_tng_log_level_sets_the_logger() -> None:
    code = "from npuir.torchair.core.utils import logger; print(logger.level)"
    for value, level in (("0", logging.DEBUG), ("3", logging.ERROR), ("4", 35)):
        out = subprocess.run(
            [sys.executable, "-c", code],
            env={"TNG_LOG_LEVEL": value, "PATH": ""},
            capture_output=True,
            text=True,
            check=True,
        )
        assert int(out.stdout) == level


@pytest.mark.torch
@pytest.mark.slow
def test_an_invalid_tng_log_level_is_refused_with_the_valid_values(tmp_path: Path) -> None:
    script = tmp_path / "model.py"
    script.write_text("import npuir.torchair as tng\nbackend = tng.get_npu_backend()\n")
    for value in ("debug", "5", ""):
        done = subprocess.run(
            [sys.executable, str(script)],
            env={"TNG_LOG_LEVEL": value, "PATH": ""},
            capture_output=True,
            text=True,
        )
        assert done.returncode != 0
        last = done.stderr.strip().splitlines()[-1]
        # located at the user's line that needed the logger, naming every valid value
        assert f"{script}:2: error: TNG_LOG_LEVEL={value!r}" in last, done.stderr
        assert all(f"{n} (" in last for n in range(5))


class StreamLimited(torch.nn.Module):
    """A stream limit set between two ops on stream "1", read back, and reset."""

    def forward(self, x: Any) -> Any:
        with tng.scope.npu_stream_switch("1"):
            before = torch.mm(x, x)
        tng.scope.set_stream_limit("1", 3, 8)
        cube = tng.scope.get_stream_limit("1")["cube_core_num"]
        with tng.scope.npu_stream_switch("1"):
            after = torch.relu(x) * cube
        tng.scope.reset_stream_limit("1")
        with tng.scope.npu_stream_switch("1"):
            reset = torch.neg(x)
        return before, after, reset


@pytest.mark.torch
def test_stream_limits_on_torch_limit_the_ops_issued_after_them() -> None:
    from npuir.analysis.core_limits import CoreLimits
    from npuir.backends.npu.hardware import load_hardware

    def limits(module: ModuleOp) -> dict[str, dict[str, int]]:
        found = CoreLimits(module, load_hardware("910b2")).run()
        return {op.name: found.of(op) for op in module.walk() if isinstance(op, NpuOp)}

    x = torch.randn(8, 8)
    _, after, _ = StreamLimited()(x)  # eager: the limit is read back as set
    torch.testing.assert_close(after, torch.relu(x) * 3)
    assert tng.scope.get_stream_limit("1") == {"cube_core_num": 24, "vector_core_num": 48}
    want = {
        "npu.matmul": {"cube": 24, "vector": 48},
        "npu.relu": {"cube": 3, "vector": 8},
        "npu.mul": {"cube": 3, "vector": 8},
        "npu.neg": {"cube": 24, "vector": 48},
    }
    exported = import_exported_program(torch.export.export(StreamLimited(), (x,)))
    assert limits(exported) == want
    torch._dynamo.reset()
    backend = tng.get_npu_backend()
    compiled = torch.compile(StreamLimited(), backend=backend, fullgraph=True, dynamic=False)
    for got, eager in zip(compiled(x), StreamLimited()(x)):
        torch.testing.assert_close(got, eager)
    assert limits(backend.imported[0]) == want


def _summary(module: ModuleOp) -> list[tuple[str, str]]:
    """Each op in program order with its stream tag: what two routes must agree on."""
    tags = {op.symbol: op.tag.data for op in module.ops if isinstance(op, stream.DeclOp)}
    return [
        (op.name, tags.get(stream.stream_of(op) or "", "default"))
        for op in module.walk()
        if isinstance(op, NpuOp | stream.WaitTensorOp) or op.name.startswith("sync.")
    ]


def _lowered(module: ModuleOp) -> ModuleOp:
    npuir.run_passes(npuir.make_context(), module, npuir.build_pipeline("npu-default"))
    return module


def _compiled_module(model: Any, xs: list[Any]) -> ModuleOp:
    torch._dynamo.reset()
    backend = tng.get_npu_backend()
    compiled = torch.compile(model, backend=backend, fullgraph=True, dynamic=False)
    compiled(*xs)
    return backend.modules[-1]  # type: ignore[no-any-return]


def test_graph_dump_round_trips_through_npuir_import(tmp_path: Path) -> None:
    for kind in ("txt", "pbtxt"):
        torch._dynamo.reset()
        config = tng.CompilerConfig()
        config.debug.graph_dump.type = kind
        config.debug.graph_dump.path = str(tmp_path / kind)
        backend = tng.get_npu_backend(compiler_config=config)
        xs = _inputs()
        torch.compile(Seed(), backend=backend, fullgraph=True, dynamic=False)(*xs)
        (dump,) = (tmp_path / kind).glob(f"dynamo_original_graph_*_rank_0_pid_*_ts_*.{kind}")
        imported = npuir.load(str(dump)) if hasattr(npuir, "load") else None
        if imported is None:
            from npuir.frontends.ge import parse_path

            imported = parse_path(npuir.make_context(), str(dump))
        assert _summary(_lowered(imported)) == _summary(backend.modules[-1])


def _plain(module: ModuleOp) -> str:
    """The module's text without locations or op names: what a rebuild must reproduce."""
    for op in module.walk():
        op.attributes.pop("npu.op_name", None)
    return npuir.print_ir(module)


def test_py_graph_dump_rebuilds_the_graph(tmp_path: Path) -> None:
    torch.manual_seed(0)
    layer, xs = torch_decoder.DecoderLayer(), torch_decoder.inputs()
    config = tng.CompilerConfig()
    config.debug.graph_dump.type = "py"
    config.debug.graph_dump.path = str(tmp_path)
    backend = tng.get_npu_backend(compiler_config=config)
    with torch.no_grad():
        torch._dynamo.reset()
        torch.compile(layer, backend=backend, fullgraph=True)(*xs)
    (script,) = tmp_path.glob("dynamo_original_graph_*_rank_0_pid_*_ts_*.py")
    rebuilt = runpy.run_path(str(script))["module"]
    assert _plain(rebuilt) == _plain(backend.imported[-1])


def test_routes_agree_on_the_seed_model() -> None:
    xs = _inputs()
    compiled = _compiled_module(Seed(), xs)
    exported = _lowered(import_exported_program(torch.export.export(Seed(), tuple(xs))))
    g = tng.Graph("forward")
    a, b, c, d = (g.input((64, 64), "f16") for _ in range(4))
    s = tng.ops.add(a, b)
    with tng.scope.npu_stream_switch("1"):
        tng.scope.npu_wait_tensor(d, s)
        m = tng.ops.mm(c, d)
    m1 = tng.ops.mm(c, d)
    with tng.scope.npu_stream_switch("2"):
        tng.scope.npu_wait_tensor(d, m)
        a2 = tng.ops.add(c, d)
    g.output(s, m, m1, a2)
    built = _lowered(g.module)
    assert _summary(compiled) == _summary(exported) == _summary(built)


sys.path.insert(0, str(ROOT / "bench"))
from workloads import torch_decoder  # noqa: E402


def _makespan(module: ModuleOp) -> int:
    """The simulated makespan of an unlowered module through npuir-run's default pipeline."""
    from npuir.driver.run import RunConfig, run_program

    outcome = run_program(RunConfig("<route>", source=npuir.print_ir(module), timing_only=True))
    assert outcome.result is not None
    return outcome.result.makespan_ns


def test_routes_agree_on_a_decoder_layer_with_a_kv_cache() -> None:
    torch.manual_seed(0)
    layer, xs = torch_decoder.DecoderLayer(), torch_decoder.inputs()
    with torch.no_grad():
        torch._dynamo.reset()
        backend = tng.get_npu_backend()
        out = torch.compile(layer, backend=backend, fullgraph=True, dynamic=False)(*xs)
        for got, want in zip(out, layer(*xs)):
            _close(got, want)
        exported = import_exported_program(torch.export.export(layer, xs))
    g = tng.Graph("forward")
    torch_decoder.build(g)
    compiled_ns = backend.reports[-1].makespans_ns["as annotated"]
    assert compiled_ns == _makespan(exported) == _makespan(g.module)
    summaries = [_summary(backend.modules[-1]), _summary(_lowered(exported))]
    summaries.append(_summary(_lowered(g.module)))
    assert summaries[0] == summaries[1] == summaries[2]
    assert ("npu.matmul", "1") in summaries[0]  # k/v projections on the user's stream


def test_parameters_that_require_grad_run_the_backward_eagerly() -> None:
    torch.manual_seed(0)
    layer = torch_decoder.DecoderLayer().float()
    xs = [x.float() for x in torch_decoder.inputs()]
    torch._dynamo.reset()
    compiled = torch.compile(layer, backend=tng.get_npu_backend(), fullgraph=True, dynamic=False)
    with pytest.warns(UserWarning, match="backward runs eagerly"):
        out = compiled(*xs)
    out[0].sum().backward()
    got = layer.wq.grad.clone()  # type: ignore[union-attr]
    layer.zero_grad()
    want = layer(*xs)
    want[0].sum().backward()
    assert torch.allclose(out[0], want[0], atol=1e-4)
    assert torch.allclose(got, layer.wq.grad, atol=1e-4)  # type: ignore[arg-type]


def test_an_op_without_an_npu_kernel_runs_eagerly_with_one_warning() -> None:
    class BesselI0(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            return torch.special.i0(x) + 1

    torch._dynamo.reset()
    compiled = torch.compile(BesselI0(), backend=tng.get_npu_backend(), fullgraph=True)
    x = torch.randn(4, 4)
    with pytest.warns(UserWarning, match=r"npuir cannot take aten\.special_i0\.default") as caught:
        assert torch.equal(compiled(x), BesselI0()(x))
    assert len([w for w in caught if "cannot take" in str(w.message)]) == 1


def test_a_graph_break_is_dynamos_own_error() -> None:
    class Break(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            torch._dynamo.graph_break()
            return x + 1

    torch._dynamo.reset()
    compiled = torch.compile(Break(), backend=tng.get_npu_backend(), fullgraph=True)
    with pytest.raises(torch._dynamo.exc.Unsupported):
        compiled(torch.ones(2))


def test_gear_options_are_logged_as_seed_004_shows_them(caplog: pytest.LogCaptureFixture) -> None:
    from npuir.torchair.core.utils import logger

    class Add(torch.nn.Module):
        def forward(self, x1: Any, x2: Any) -> Any:
            return x1 + x2

    torch._dynamo.reset()
    a, b = torch.ones([2, 2]), torch.ones([2, 2])
    tng.inference.set_dim_gears(a, {0: [2, 4]})
    tng.inference.set_dim_gears(b, {0: [2, 4]})
    logger.propagate = True
    try:
        with caplog.at_level(logging.INFO, logger="npuir.torchair"):
            torch.compile(Add(), backend=tng.get_npu_backend(), fullgraph=True)(a, b)
    finally:
        logger.propagate = False
    # caplog sees each record through the package logger and the root (dropped here).
    lines = list(dict.fromkeys(r.getMessage() for r in caplog.records))
    start = next(i for i, m in enumerate(lines) if m.startswith("Compiling concrete graph"))
    options = [m.strip() for m in lines[start + 1 : start + 4]]
    assert options == [
        "ge.dynamicDims = 2,2;4,4",
        "ge.dynamicNodeType = 1",
        "ge.inputShape = arg1_1:-1,2;arg2_1:-1,2",
    ]


def test_product_gears_with_equal_sizes_on_two_dims_compile_once() -> None:
    class Scale(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            return x * 2

    torch._dynamo.reset()
    config = tng.CompilerConfig()
    config.inference_config.dynamic_gears_merge_policy = "product"
    backend = tng.get_npu_backend(compiler_config=config)
    compiled = torch.compile(Scale(), backend=backend, fullgraph=True, dynamic=True)
    x = torch.ones([4, 4, 3])  # both geared dims are 4 on the first call
    tng.inference.set_dim_gears(x, {0: [2, 4], 1: [4, 8]})
    assert torch.equal(compiled(x), x * 2)
    for shape in ([2, 8, 3], [4, 8, 3], [2, 4, 3]):
        y = torch.ones(shape)
        assert torch.equal(compiled(y), y * 2)
    assert backend.compiles == 1
    with pytest.raises(TorchairError, match=r"\{0: \[2, 4\], 1: \[4, 8\]\}") as caught:
        compiled(torch.ones([8, 8, 3]))  # the first call's gears are named
    assert caught.value.diagnostic.kind == "torchair.gear-mismatch"


def test_dims_without_gears_are_specialised_to_the_sizes_of_each_call() -> None:
    """As TorchAir's guard_gears_shape: an ungeared dim keeps the size it was compiled for
    and another size gets a program of its own, while every gear shares one program; a
    `reshape(x.shape[0], -1)` follows the gear (it is not baked to the first call's size)."""

    class Flatten(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            return x.reshape(x.shape[0], -1) * 2

    torch._dynamo.reset()
    backend = tng.get_npu_backend(compiler_config=tng.CompilerConfig())
    compiled = torch.compile(Flatten(), backend=backend, fullgraph=True, dynamic=True)
    x = torch.arange(12, dtype=torch.float32).reshape(2, 3, 2)
    tng.inference.set_dim_gears(x, {0: [2, 4]})
    shapes = [(2, 3, 2), (4, 3, 2), (4, 3, 2), (2, 5, 2), (2, 5, 2), (4, 5, 2), (2, 3, 2)]
    compiles = []
    for i, shape in enumerate(shapes):
        t = x if i == 0 else torch.arange(np.prod(shape), dtype=torch.float32).reshape(shape)
        assert torch.equal(compiled(t), t.reshape(shape[0], -1) * 2)
        compiles.append(backend.compiles)
    assert compiles[:3] == [1, 1, 1]  # both gears, one program
    assert compiles[3] == 2 and compiles[4] == 2  # dim 1 changed: compiled once for 5
    for module in backend.modules:  # each program: dim 0 geared, the other dims static
        funcs = [op for op in module.walk() if isinstance(op, FuncOp)]
        assert any(str(op.function_type).startswith("(tensor<?x") for op in funcs)
        for op in funcs:
            (arg,) = op.function_type.inputs
            assert arg.get_shape()[1:] in ((3, 2), (5, 2))


@pytest.mark.parametrize(
    ("gears", "match", "kind"),
    [
        ({0: [2]}, "between 2 and 100", "count"),
        ({0: [1, 4]}, "must be >= 2", "too-small"),
        ({3: [2, 4]}, r"must be in \[0, 1\]", "dim"),
        ({0: [2.0, 4]}, "list or tuple of ints", "not-ints"),
        ([2, 4], "must be a dict", "not-a-dict"),
    ],
)
def test_bad_gears_on_torch_tensors_are_located_errors(gears: Any, match: str, kind: str) -> None:
    with pytest.raises(TorchairError, match=rf"^{HERE}:\d+:\d+: error: .*{match}") as caught:
        tng.inference.set_dim_gears(torch.ones(2, 2), gears)
    assert caught.value.diagnostic.kind == f"torchair.bad-gears.{kind}"


def test_a_tensor_gets_one_set_of_gears() -> None:
    t = torch.ones(2, 2)
    tng.inference.set_dim_gears(t, {0: [2, 4]})
    tng.inference.set_dim_gears(t, {0: [2, 4]})  # the same again is fine
    with pytest.raises(TorchairError) as caught:
        tng.inference.set_dim_gears(t, {0: [2, 8]})
    assert caught.value.diagnostic.kind == "torchair.bad-gears.already-set"


_ODD = [None, -1, 0, 1, 2, 1.5, "", "x", "1|2", "|", "3|", [], {}, True, 10**30, float("nan")]


@pytest.mark.parametrize("value", _ODD, ids=repr)
def test_odd_values_are_accepted_or_located_errors(value: Any) -> None:
    """Every option and scope argument: success or a located TorchairError, nothing else."""
    setters = [
        lambda c: setattr(c, "mode", value),
        lambda c: setattr(c.debug.graph_dump, "type", value),
        lambda c: setattr(c.debug.graph_dump, "path", value),
        lambda c: setattr(c.ge_config, "enable_single_stream", value),
        lambda c: setattr(c.ge_config, "aicore_num", value),
        lambda c: setattr(c.inference_config, "dynamic_gears_merge_policy", value),
        lambda c: setattr(c.debug, "graph_dump", value),
        lambda c: setattr(c, "ge_config", value),
    ]
    calls = [
        lambda: tng.scope.npu_stream_switch(value),
        lambda: tng.scope.npu_stream_switch("1", value),
        lambda: tng.scope.npu_stream_switch("1", 0, value),
        lambda: tng.scope.limit_core_num(value, 4),
        lambda: tng.scope.limit_core_num(4, value),
        lambda: tng.scope.npu_wait_tensor(torch.ones(2), value),
        lambda: tng.inference.set_dim_gears(torch.ones(4, 4), value),
        lambda: tng.inference.set_dim_gears(torch.ones(4, 4), {0: value}),
        lambda: tng.get_npu_backend(compiler_config=value),
    ]
    actions = [partial(s, tng.CompilerConfig()) for s in setters] + calls
    for action in actions:
        try:
            action()
        except TorchairError as exc:
            assert exc.diagnostic.location is not None
            assert exc.diagnostic.location.filename == HERE


def test_custom_decompositions_replace_an_op_before_it_is_imported() -> None:
    def gelu_as_sigmoid(x: Any, approximate: str = "none") -> Any:
        return x * torch.sigmoid(x * 1.702)

    class Gelu(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            with tng.scope.npu_stream_switch("1"):
                y = torch.nn.functional.gelu(x)
            return y

    torch._dynamo.reset()
    backend = tng.get_npu_backend(
        custom_decompositions={torch.ops.aten.gelu.default: gelu_as_sigmoid}
    )
    x = torch.randn(8, 8)
    out = torch.compile(Gelu(), backend=backend, fullgraph=True, dynamic=False)(x)
    assert torch.allclose(out, gelu_as_sigmoid(x), atol=1e-6)
    names = [op.name for op in backend.imported[-1].walk()]
    assert "npu.gelu" not in names and "npu.sigmoid" in names
    assert [n for n in _summary(backend.modules[-1]) if n[0] == "npu.sigmoid"] == [
        ("npu.sigmoid", "1")  # the decomposed ops stay in the user's scope
    ]
