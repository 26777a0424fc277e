"""The torch.compile backend on what npuir cannot take: the graph is split at the op (it runs
eagerly between npuir parts, each scheduled and reported); float64, int8 and uint8 end to
end; `dynamic=True` compiles one program for every shape; and the report line of ops costed
by estimate that `npuir-run`, `npuir-advise` and the backend share."""

from __future__ import annotations

import runpy
import warnings
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import npuir.torchair as tng  # noqa: E402
from npuir.diagnostics import DiagnosticError  # noqa: E402
from npuir.driver.advise import AdviseConfig, advise  # noqa: E402
from npuir.driver.run import RunConfig, run_program  # noqa: E402
from npuir.frontends.torch import import_exported_program  # noqa: E402

pytestmark = [pytest.mark.torch]

ROOT = Path(__file__).resolve().parents[3]


def _compile(model: Any, **kwargs: Any) -> tuple[Any, Any]:
    torch._dynamo.reset()
    backend = tng.get_npu_backend()
    return torch.compile(model, backend=backend, fullgraph=True, **kwargs), backend


def _split_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if "the graph is split there" in str(w.message)]


def test_one_unsupported_op_splits_the_graph_there_and_the_rest_is_scheduled() -> None:
    class BesselI0(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            y = torch.relu(x) * 2
            return torch.special.i0(y) + y

    compiled, backend = _compile(BesselI0())
    x = torch.randn(4, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = compiled(x)
    assert torch.equal(got, BesselI0()(x))
    said = _split_warnings(caught)
    assert len(said) == 1 and "aten.special_i0.default" in said[0]
    assert f"{Path(__file__).name}:" in said[0]  # the model's line
    # Three parts: npuir before the i0, the i0 eagerly, npuir after it.
    [parts] = backend.splits
    assert [kind for kind, _ in parts] == ["npuir", "eager", "npuir"]
    assert parts[1][1] == ["aten.special_i0.default"]
    reports = tng.reports(compiled)
    assert [r.part for r in reports] == [(1, 2), (2, 2)]
    for report in reports:
        assert report.makespans_ns["as annotated"] is not None
        assert report.fallback_ops == ["aten.special_i0.default"]
        assert "split there" in report.render()
    # A second call reuses the parts: no recompile, no second warning.
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        assert torch.equal(compiled(x + 1), BesselI0()(x + 1))
    assert backend.compiles == 1 and not _split_warnings(again)


def test_a_split_inside_a_stream_scope_keeps_the_scope_on_both_sides() -> None:
    class Scoped(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            with tng.scope.npu_stream_switch("side"):
                y = torch.relu(x)
                z = torch.special.i0(y)
                w = z * 2
            return w + x

    compiled, backend = _compile(Scoped())
    x = torch.randn(4, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.equal(compiled(x), Scoped()(x))
    assert [kind for kind, _ in backend.splits[0]] == ["npuir", "eager", "npuir"]
    for module in backend.imported:
        # Each npuir part opens the user's scope around its ops in it.
        assert any(op.name == "stream.switch" for op in module.walk())


def test_complex64_intermediates_run_eagerly_in_a_split_graph() -> None:
    class Spectrum(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            return torch.fft.fft(x * 2).abs() + 1

    compiled, backend = _compile(Spectrum())
    x = torch.randn(4, 8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = compiled(x)
    assert torch.equal(got, Spectrum()(x))
    said = _split_warnings(caught)
    assert len(said) == 1 and "complex64" in said[0] and "aten.fft_fft.default" in said[0]
    kinds = [kind for kind, _ in backend.splits[0]]
    assert kinds.count("npuir") == 2 and "eager" in kinds


@pytest.mark.parametrize("dtype", [torch.float64, torch.int8, torch.uint8])
def test_float64_int8_and_uint8_inputs_run_on_npuir_as_eager_computes_them(dtype: Any) -> None:
    class Affine(torch.nn.Module):
        def forward(self, x: Any, y: Any) -> Any:
            return x * 3 + y

    if dtype.is_floating_point:
        x, y = torch.randn(4, 5, dtype=dtype), torch.randn(4, 5, dtype=dtype)
    else:  # values that overflow, which torch wraps
        info = torch.iinfo(dtype)
        x = torch.randint(info.min, info.max, (4, 5), dtype=dtype)
        y = torch.randint(info.min, info.max, (4, 5), dtype=dtype)
    compiled, backend = _compile(Affine())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = compiled(x, y)
    assert got.dtype == dtype
    assert torch.equal(got, Affine()(x, y))
    assert not _split_warnings(caught) and not backend.splits
    assert len(backend.modules) == 1  # the whole graph ran on npuir


def test_an_input_npuir_cannot_take_is_refused_at_no_line_of_npuir() -> None:
    class Real(torch.nn.Module):
        def forward(self, z: Any) -> Any:
            return torch.view_as_real(z) * 2

    # complex32: a dtype npuir has no element type for (complex64 it has, for the FFTs)
    ep = torch.export.export(Real(), (torch.randn(3, dtype=torch.complex64).to(torch.complex32),))
    with pytest.raises(DiagnosticError) as caught:
        import_exported_program(ep)
    message = caught.value.diagnostic.render()
    assert "input 'z'" in message and "complex32" in message
    location = caught.value.diagnostic.location
    assert location is None or location.filename == __file__  # never npuir's own source


@pytest.mark.slow
def test_a_tiny_llama_compiles_whole_with_npuir_and_matches_eager(
    tiny_config: dict[str, int],
) -> None:
    """The model the split was first made for (its rotary tables and mask ran eagerly):
    every op has an npu op now, so nothing is split and one npuir program runs it."""
    pytest.importorskip("transformers")
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**tiny_config)).eval()
    ids = torch.randint(0, tiny_config["vocab_size"], (1, 6))
    with torch.no_grad():
        want = model(input_ids=ids, use_cache=False).logits
    compiled, backend = _compile(model)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = compiled(input_ids=ids, use_cache=False).logits
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert not _split_warnings(caught)
    assert not backend.splits
    reports = tng.reports(compiled)
    assert reports and all(r.makespans_ns["as annotated"] is not None for r in reports)


def test_seed_004_compiles_once_with_dynamic_true_for_both_gear_shapes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    backends: list[Any] = []
    graphs: list[Any] = []
    original = tng.get_npu_backend

    def counting(**kwargs: Any) -> Any:
        backend = original(**kwargs)
        backends.append(backend)

        def invoke(gm: Any, example_inputs: Any) -> Any:
            graphs.append(gm)
            return backend(gm, example_inputs)

        return invoke

    source = (ROOT / "examples" / "torchair" / "seed004_gears.py").read_text()
    source = source.replace("fullgraph=True,", "fullgraph=True, dynamic=True,")
    assert "dynamic=True" in source
    script = tmp_path / "seed004_dynamic.py"
    script.write_text(source)
    torch._dynamo.reset()
    monkeypatch.setattr(tng, "get_npu_backend", counting)
    namespace = runpy.run_path(str(script), run_name="__main__")
    assert len(graphs) == 1  # dynamo handed the backend one graph for both gear shapes
    assert backends[0].compiles == 1  # and it compiled one program for both
    assert len(backends[0].modules) == 1
    assert namespace["npu_input0"].shape == (4, 2)


def test_dynamic_true_without_gears_is_one_program_for_every_shape() -> None:
    class Mix(torch.nn.Module):
        def forward(self, x: Any, y: Any) -> Any:
            return torch.softmax(x @ y.t(), -1) * 2

    compiled, backend = _compile(Mix(), dynamic=True)
    for n in (2, 3, 5):
        x, y = torch.randn(n, 8), torch.randn(n, 8)
        torch.testing.assert_close(compiled(x, y), Mix()(x, y), rtol=1e-6, atol=1e-6)
    assert backend.compiles == 1
    [module] = backend.modules
    assert "?" in str(module)  # a dynamic program
    # One stream by default (TorchAir's rule for dynamic shapes).
    assert sum(1 for op in module.walk() if op.name == "stream.decl") == 1


OPAQUE = """\
!t = tensor<64x64xf16>
func.func @f(%x: !t) -> !t {
  %a = npu.opaque %x {ge_type = "Where", engine = "aicpu"} : (!t) -> !t
  %b = npu.relu %a : (!t) -> !t
  %c = npu.relu %x : (!t) -> !t
  %d = npu.add %b, %c : (!t, !t) -> !t
  func.return %d : !t
}
"""


def test_every_report_lists_the_ops_costed_by_estimate(tmp_path: Path) -> None:
    path = tmp_path / "opaque.mlir"
    path.write_text(OPAQUE)
    outcome = run_program(RunConfig(path=str(path), source=OPAQUE, timing_only=True))
    estimated = outcome.report["estimated_ops"]
    assert estimated["kinds"] == {"Where": 1}
    assert 0 < estimated["share"] < 1  # the relu beside it runs while the estimate does not
    [line] = [w for w in outcome.report["why"] if "costed by estimate" in w]
    assert "Where" in line
    advice = advise(AdviseConfig(path=str(path)))
    assert any("costed by estimate" in r and "Where" in r for r in advice.reasons)
    # Nothing estimated: no line.
    plain = OPAQUE.replace('npu.opaque %x {ge_type = "Where", engine = "aicpu"}', "npu.exp %x")
    outcome = run_program(RunConfig(path=str(path), source=plain, timing_only=True))
    assert outcome.report["estimated_ops"] is None


def test_the_dynamic_multi_stream_default_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from npuir.transforms.stream_partition import StreamPartitionPass

    monkeypatch.delenv("ENABLE_DYNAMIC_SHAPE_MULTI_STREAM", raising=False)
    assert StreamPartitionPass().dynamic_multi_stream is False
    monkeypatch.setenv("ENABLE_DYNAMIC_SHAPE_MULTI_STREAM", "1")
    assert StreamPartitionPass().dynamic_multi_stream is True
    assert StreamPartitionPass(dynamic_multi_stream=False).dynamic_multi_stream is False


def test_an_op_on_complex64_is_refused_at_the_models_line_on_the_export_route() -> None:
    class Spectrum(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            return torch.fft.fft(x).abs()

    # The FFT itself (aten._fft_r2c once decomposed) npuir takes; `abs` of its complex64
    # result it refuses (its kernels compute in real arithmetic), which a strict import
    # reports at the model's line.
    ep = torch.export.export(Spectrum(), (torch.randn(4, 8),)).run_decompositions()
    with pytest.raises(DiagnosticError) as caught:
        import_exported_program(ep, strict=True)
    diagnostic = caught.value.diagnostic
    assert "complex64" in diagnostic.render()
    assert diagnostic.location is not None and diagnostic.location.filename == __file__
