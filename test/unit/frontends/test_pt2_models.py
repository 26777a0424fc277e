"""Real models through the `.pt2` route: transformers' `LlamaForCausalLM` and
`Qwen2MoeForCausalLM`, built from the smallest configs that still have attention (grouped
query heads), rotary embeddings, RMSNorm and (Qwen2-MoE) routed and shared experts, with
random weights (nothing downloaded), exported with `torch.export` and saved with
`torch.export.save` as a user would; `npuir-import` and `npuir-advise` take the archives.
Also: constant inputs on the in-memory route, gears set before export, the broadcasting
`expand` the attention's `repeat_kv` needs (numerics against eager)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import npuir  # noqa: E402
from npuir.diagnostics import DiagnosticEngine  # noqa: E402
from npuir.driver.run import RunConfig, output_arrays, run_program  # noqa: E402
from npuir.frontends.torch import (  # noqa: E402
    example_inputs,
    import_exported_program,
    import_pt2,
)
from npuir.torchair.inference import set_dim_gears  # noqa: E402

BIN = Path(sys.executable).parent
SCHEMAS = Path(__file__).resolve().parents[3] / "docs" / "json-schema"

pytestmark = [pytest.mark.torch]

MODELS = ["llama", "qwen2-moe"]


def _tool(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / tool), *args], capture_output=True, text=True, timeout=600)


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_npuir_import_takes_the_model(
    exports: dict[str, tuple[Path, Any]], name: str, tmp_path: Path
) -> None:
    path, _ = exports[name]
    out = tmp_path / "model.mlir"
    done = _tool("npuir-import", str(path), "-o", str(out), "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    jsonschema.validate(summary, json.loads((SCHEMAS / "npuir-import.schema.json").read_text()))
    types = summary["types"]
    # The ops this exercises, and what they became: a mask's dunder op (Core ATen's
    # bitwise and, npuir.frontends.aten_core), the projections, the norms.
    assert types["aten.__and__.Tensor"]["became"] == {
        "npu.bitwise_and": types["aten.__and__.Tensor"]["count"]
    }
    assert set(types["aten.linear.default"]["became"]) <= {"npu.matmul", "npu.add", "npu.reshape"}
    assert "npu.rsqrt" in types["aten.rsqrt.default"]["became"]
    # Every unmapped op is named once, at the model's line.
    opaque = {w["args"]["aten_op"] for w in summary["warnings"]}
    # Attention is Ascend's fused kernel, grouped-query heads and all (no repeat_kv).
    sdpa = types["aten.scaled_dot_product_attention.default"]
    assert sdpa["became"] == {"npu.fusion_attention": sdpa["count"]}
    assert "aten.scaled_dot_product_attention.default" not in opaque
    assert all(w["location"] and w["location"]["line"] > 0 for w in summary["warnings"])
    text = out.read_text()
    assert "func.func @forward(" in text and "%input_ids: tensor<1x8xi64>" in text
    assert "use_cache" not in text  # a constant: no argument
    if name == "qwen2-moe":  # the experts' GEMMs: one grouped matmul per expert layer
        gmm = types["transformers.grouped_mm_fallback.default"]
        assert gmm["became"] == {"npu.grouped_matmul": gmm["count"]}


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_npuir_advise_takes_the_model(exports: dict[str, tuple[Path, Any]], name: str) -> None:
    path, _ = exports[name]
    done = _tool("npuir-advise", str(path), "--json")
    assert done.returncode == 0, done.stderr
    advice = json.loads(done.stdout)
    jsonschema.validate(advice, json.loads((SCHEMAS / "npuir-advise.schema.json").read_text()))
    makespans = {v["name"]: v["makespan_ns"] for v in advice["variants"]}
    assert makespans["auto (per op)"] <= makespans["single stream"]
    assert advice["lower_bound_ns"] <= makespans["auto (per op)"]
    # Every op of these models has an npu op now (attention as the fused kernel): no import
    # warning names an op costed by estimate.
    assert not [w for w in advice["warnings"] if w["kind"].startswith("torch.")]


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_both_routes_give_one_module(exports: dict[str, tuple[Path, Any]], name: str) -> None:
    """The archive read without torch and the `ExportedProgram` in memory (a constant
    input on both) import to the same IR."""
    path, ep = exports[name]
    quiet = DiagnosticEngine()
    in_memory = npuir.print_ir(import_exported_program(ep, diagnostics=quiet))
    from_archive = npuir.print_ir(import_pt2(path, diagnostics=DiagnosticEngine()))
    assert in_memory == from_archive
    assert not quiet.emitted  # every op has an npu op: nothing imported as npu.opaque


def test_the_aten_dunder_operators_are_those_the_reader_takes() -> None:
    from test_pt2_inputs import ATEN_DUNDERS

    from npuir.frontends.pt2 import _target_problem

    registered = {
        n.split("::")[1].split(".")[0]
        for n in torch._C._dispatch_get_all_op_names()
        if n.startswith("aten::__")
    }
    assert registered == set(ATEN_DUNDERS)
    assert all(_target_problem(f"torch.ops.aten.{n}.Tensor") is None for n in registered)


class _Constants(torch.nn.Module):
    def forward(self, x: Any, n: int, f: float, s: str, o: Any, flag: bool) -> Any:
        y = x * f + n
        if flag and o is None and s == "a":
            y = y * 2
        return y


def test_constant_inputs_on_the_in_memory_route(tmp_path: Path) -> None:
    """int, float, str, None and bool arguments: placeholders torch fixed at export."""
    ep = torch.export.export(_Constants(), (torch.ones(2, 3), 3, 0.5, "a", None, True))
    text = npuir.print_ir(import_exported_program(ep))
    assert "func.func @forward(%x: tensor<2x3xf32>)" in text
    path = tmp_path / "c.pt2"
    torch.export.save(ep, path)
    assert npuir.print_ir(import_pt2(path)) == text


class _Double(torch.nn.Module):
    def forward(self, x: Any) -> Any:
        return x * 2


def test_gears_set_before_export_survive_the_in_memory_route() -> None:
    x = torch.randn(4, 3)
    set_dim_gears(x, {0: [2, 4]})
    ep = torch.export.export(_Double(), (x,))
    text = npuir.print_ir(import_exported_program(ep))
    assert "gear.dims = #gear.dims<0: [2, 4]>" in text


def test_gears_set_before_export_are_a_located_warning_on_the_archive(tmp_path: Path) -> None:
    """A `.pt2` keeps the gears only in its sample inputs (a pickle npuir never loads)."""
    x = torch.randn(4, 3)
    set_dim_gears(x, {0: [2, 4]})
    path = tmp_path / "g.pt2"
    torch.export.save(torch.export.export(_Double(), (x,)), path)
    engine = DiagnosticEngine()
    text = npuir.print_ir(import_pt2(path, diagnostics=engine))
    assert "tensor<?x3xf32>" in text and "gear.dims" not in text
    (warning,) = [d for d in engine.emitted if d.kind == "pt2.gears-dropped"]
    assert warning.location is not None
    assert warning.location.filename == f"{path}/g/data/sample_inputs/model.pt"
    assert "x dim 0" in warning.message and "--shape" in warning.message
    # No gears, no warning.
    plain = tmp_path / "p.pt2"
    torch.export.save(torch.export.export(_Double(), (torch.randn(4, 3),)), plain)
    quiet = DiagnosticEngine()
    import_pt2(plain, diagnostics=quiet)
    assert not quiet.emitted


class _RepeatKV(torch.nn.Module):
    """transformers' `repeat_kv`: one key/value head expanded to two query heads."""

    def forward(self, kv: Any, q: Any) -> Any:
        b, h, s, d = kv.shape
        wide = kv[:, :, None, :, :].expand(b, h, 2, s, d).reshape(b, h * 2, s, d)
        return q * wide + kv[:, :, :1, :].expand(b, 2, s, d)


def test_a_broadcasting_expand_computes_what_eager_does(tmp_path: Path) -> None:
    model = _RepeatKV()
    args = (torch.randn(1, 1, 3, 4), torch.randn(1, 2, 3, 4))
    ep = torch.export.export(model, args)
    path, inputs = tmp_path / "m.mlir", tmp_path / "in.npz"
    path.write_text(npuir.print_ir(import_exported_program(ep)))
    np.savez(inputs, **example_inputs(ep, *args))
    outcome = run_program(RunConfig(str(path), inputs=str(inputs), check=True))
    assert outcome.status == 0, outcome.report
    got = output_arrays(outcome)["out0"]
    np.testing.assert_allclose(got, model(*args).numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.slow
def test_a_dynamic_sequence_length_is_a_dynamic_dim(
    dynamic_llama: tuple[Path, Any], tmp_path: Path
) -> None:
    path, ep = dynamic_llama
    engine = DiagnosticEngine()
    text = npuir.print_ir(import_pt2(path, diagnostics=engine))
    assert "%input_ids: tensor<1x?xi64>" in text
    (symbol,) = {str(s) for s in ep.range_constraints}
    assert f'torch.sym_dims = ["", "{symbol}"]' in text
    assert f"{symbol} = array<i64: 2, 32>" in text
    # The slices of the dynamic mask and positions are costed by size, and said so.
    forms = [d for d in engine.emitted if d.kind == "torch.unmapped-form"]
    assert forms and all("dynamic dim" in d.message for d in forms)
    assert npuir.print_ir(import_exported_program(ep, diagnostics=DiagnosticEngine())) == text
    done = _tool("npuir-advise", str(path), "--shape", "input_ids=1x8", "--json")
    assert done.returncode == 0, done.stderr
    # Without a shape: a usage error naming the input and the flag, as JSON on stdout.
    refused = _tool("npuir-advise", str(path), "--json")
    assert refused.returncode == 2
    error = json.loads(refused.stdout)["error"]
    assert "%input_ids" in error["message"] and "--shape" in error["message"]


class _Unbatched(torch.nn.Module):
    def forward(self, x: Any, w: Any) -> Any:
        return torch.nn.functional.conv2d(x, w) + x.sum()  # one CHW image, no batch dim


def test_a_form_the_converter_does_not_map_is_opaque_and_named() -> None:
    """`conv2d` maps for NCHW batches: an unbatched image is costed by size, with one
    warning saying why; a strict import refuses it at the model's line."""
    ep = torch.export.export(_Unbatched(), (torch.randn(2, 4, 4), torch.randn(3, 2, 3, 3)))
    engine = DiagnosticEngine()
    text = npuir.print_ir(import_exported_program(ep, diagnostics=engine))
    assert 'ge_type = "aten.conv2d.default"' in text and "npu.add" in text
    (warning,) = engine.emitted
    assert warning.kind == "torch.unmapped-form" and "not NCHW" in warning.message
    assert warning.location is not None and warning.location.filename == __file__
    with pytest.raises(npuir.DiagnosticError, match="not NCHW"):
        import_exported_program(ep, strict=True)


class _Transposed(torch.nn.Module):
    def forward(self, x: Any, w: Any) -> Any:
        transposed = True  # conv_transpose2d's own aten op, as a decomposition leaves it
        return (
            torch.ops.aten.convolution(x, w, None, [1, 1], [0, 0], [1, 1], transposed, [0, 0], 1)
            + 1
        )


def test_a_transposed_convolution_is_opaque_and_named() -> None:
    """`convolution` maps to npu.conv2d unless transposed: a transposed one is costed by
    size, with one warning saying why; a strict import refuses it at the model's line."""
    ep = torch.export.export(_Transposed(), (torch.randn(1, 2, 4, 4), torch.randn(2, 3, 3, 3)))
    engine = DiagnosticEngine()
    text = npuir.print_ir(import_exported_program(ep, diagnostics=engine))
    assert 'ge_type = "aten.convolution.default"' in text and "npu.add" in text
    (warning,) = engine.emitted
    assert warning.kind == "torch.unmapped-form" and "transposed" in warning.message
    assert warning.location is not None and warning.location.filename == __file__
    with pytest.raises(npuir.DiagnosticError, match="transposed"):
        import_exported_program(ep, strict=True)
