"""The Core ATen lowerings (npuir.frontends.aten_core) and their numerics against PyTorch."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

# torch's OpInfo database imports expecttest (the `test` extra installs it): no skip here.
import expecttest  # noqa: E402, F401
import torch  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402
from xdsl.dialects.func import FuncOp  # noqa: E402

from npuir.backends.npu.numerics import run_ranks  # noqa: E402
from npuir.diagnostics import DiagnosticEngine  # noqa: E402
from npuir.dialects.npu import NPU_OPS, OpaqueOp  # noqa: E402
from npuir.dialects.npu_math import MATH_OP_CLASSES, MATH_OPS  # noqa: E402
from npuir.frontends import aten_core  # noqa: E402
from npuir.frontends.torch import TORCH_UNMAPPED_FORM, import_fx_graph  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench"))

import aten_opinfo  # noqa: E402


def _installed_core() -> list[str]:
    # Every registered schema: `dir(torch.ops.aten)` lists only the packets loaded so far.
    found = set()
    for schema in torch._C._jit_get_all_schemas():
        namespace, _, name = schema.name.partition("::")
        if namespace != "aten" or name.endswith("_backward"):
            continue
        overload = schema.overload_name or "default"
        try:
            op = getattr(getattr(torch.ops.aten, name), overload)
        except (AttributeError, RuntimeError):  # a schema without a Python overload
            continue
        if torch.Tag.core in op.tags and torch.Tag.nondeterministic_seeded not in op.tags:
            found.add(f"{name}.{overload}")
    return sorted(found)


def test_the_core_list_is_the_installed_torchs() -> None:
    assert list(aten_core.CORE_ATEN) == _installed_core()


def test_every_core_op_is_lowered_or_says_why_not() -> None:
    rows = aten_core.coverage()
    assert [op for op, *_ in rows] == [f"aten.{name}" for name in aten_core.CORE_ATEN]
    for op, lowering, engine, kernel in rows:
        if lowering.startswith("not covered"):
            assert op.removeprefix("aten.") in aten_core.UNCOVERED, op
            assert engine == kernel == "-"
        else:
            assert lowering and engine.split()[0] in ("cube", "vector"), op
            assert kernel.startswith("numpy"), op
    assert set(aten_core.UNCOVERED) <= set(aten_core.CORE_ATEN)


def test_the_table_made_ops_are_npu_ops_with_a_kernel_and_a_cost() -> None:
    from npuir.backends.npu.kernels import KERNELS

    assert set(MATH_OP_CLASSES) <= set(NPU_OPS)
    for row, cls in zip(MATH_OPS, MATH_OP_CLASSES, strict=True):
        assert cls.name == f"npu.{row.name}" and cls.name in KERNELS
        assert cls.ENGINE is row.engine


def _run(fn: Any, *xs: Any, strict: bool = True) -> tuple[Any, list[Any]]:
    graph = make_fx(fn)(*xs).graph
    module = import_fx_graph(graph, strict=strict)
    func = next(op for op in module.walk() if isinstance(op, FuncOp))
    (outputs,) = run_ranks(module, [func], [[x.numpy() for x in xs]])
    return module, outputs


def test_what_transformers_models_emit_imports_as_npu_ops_and_matches_eager() -> None:
    def rotary_and_masks(x: Any, ids: Any) -> Any:
        position = torch.arange(x.shape[-1])
        angles = torch.cos(x) * torch.sin(x) + position
        mask = (ids != 0) & (ids < 5)
        picked = torch.where(mask[:, None], angles, torch.zeros_like(angles))
        order, index = torch.sort(ids, descending=True)
        counts = torch.cumsum(ids, 0) // 2
        return picked, order, index, counts, x[ids % 4], torch.clamp(x, -0.5, 0.5)

    x, ids = torch.randn(4, 8), torch.tensor([3, 0, 7, 1])
    module, outputs = _run(rotary_and_masks, x, ids)
    assert not [op for op in module.walk() if isinstance(op, OpaqueOp)]
    for got, want in zip(outputs, rotary_and_masks(x, ids), strict=True):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-6, atol=1e-6)


def test_a_decomposed_op_imports_through_torchs_decomposition() -> None:
    def norm(x: Any) -> Any:
        return torch.nn.functional.layer_norm(x, (8,)), torch.var(x, 1)

    x = torch.randn(4, 8)
    module, outputs = _run(norm, x)
    names = {op.name for op in module.walk()}
    assert "npu.opaque" not in names and "npu.reduce_sum" in names
    for got, want in zip(outputs, norm(x), strict=True):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)


def test_a_decomposition_is_traced_once_per_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch.fx.experimental.proxy_tensor as proxy_tensor

    traced = proxy_tensor.make_fx
    calls = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0])
        return traced(*args, **kwargs)

    def elus(x: Any, y: Any) -> Any:  # the same layer twice, then another shape
        elu = torch.nn.functional.elu
        return elu(elu(x) * x), elu(y)

    x, y = torch.randn(4, 8), torch.randn(3, 5)
    graph = make_fx(elus)(x, y).graph
    aten_core._TRACES.clear()
    monkeypatch.setattr(proxy_tensor, "make_fx", counting)
    first = str(import_fx_graph(graph, strict=True))
    assert len(calls) == 2  # (4, 8) twice, (3, 5) once
    assert str(import_fx_graph(graph, strict=True)) == first and len(calls) == 2
    # a key tells apart what hashes alike
    assert aten_core._signature(0.0) != aten_core._signature(-0.0)
    assert aten_core._signature(1) != aten_core._signature(True)
    assert aten_core._signature([torch.empty(2)]) != aten_core._signature([torch.empty(2, 1)])
    assert aten_core._signature([{"k": [1, 2]}]) is not None
    assert aten_core._signature([[1, 2], {1, 2}]) is None  # a set is not hashable


class _Masked(torch.nn.Module):
    def forward(self, x: Any, keep: Any) -> Any:
        return x.index_put((keep,), torch.zeros(())) + 1  # a boolean mask: npuir refuses it


def test_a_form_npuir_does_not_take_is_one_warning_at_the_models_line() -> None:
    from npuir.frontends.torch import import_exported_program

    ep = torch.export.export(_Masked(), (torch.randn(4), torch.tensor([True, False] * 2)))
    engine = DiagnosticEngine()
    module = import_exported_program(ep, diagnostics=engine)
    (warning,) = engine.emitted
    assert warning.kind == TORCH_UNMAPPED_FORM.code
    assert warning.args["aten_op"] == "aten.index_put.default"
    assert warning.location is not None and warning.location.filename == __file__
    assert warning.location.line == _Masked.forward.__code__.co_firstlineno + 1
    assert [op.ge_type.data for op in module.walk() if isinstance(op, OpaqueOp)] == [
        "aten.index_put.default"
    ]


def test_promotion_follows_torch() -> None:
    pairs = [("f16", "bf16"), ("i1", "i64"), ("i8", "ui8"), ("f32", "i64"), ("f16", "f32")]
    names = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "i1": "bool"}
    names |= {"i64": "int64", "i8": "int8", "ui8": "uint8", "i32": "int32"}
    for a, b in pairs:
        want = torch.promote_types(getattr(torch, names[a]), getattr(torch, names[b]))
        got = aten_core.promote(a, b)
        if (a, b) == ("i8", "ui8"):
            assert want == torch.int16 and got == "i32"  # npuir has no i16
        else:
            assert getattr(torch, names[got]) == want


FAST_DTYPES = ("float32", "float16", "int64", "bool")
"""The suite's dtypes, one sample each (`python bench/aten_opinfo.py` sweeps every dtype and
sample: docs/aten-opinfo.md)."""


def test_every_covered_op_matches_eager_on_its_opinfo_samples() -> None:
    rows = aten_opinfo.sweep([], FAST_DTYPES, 1)
    failed = {key: row.failures for key, row in rows.items() if aten_opinfo.status(row) == "fail"}
    assert not failed
    assert {op for op, _ in rows} == set(aten_opinfo.covered_ops())
    assert any(aten_opinfo.status(row) == "pass" for row in rows.values())
    # Not a quiet skip: the ops no sample reaches are named in the test's output.
    reached = {op for (op, _), row in rows.items() if row.samples}
    unreached = sorted(set(aten_opinfo.covered_ops()) - reached)
    if unreached:
        warnings.warn(
            f"{len(unreached)} covered Core ATen ops have no OpInfo sample in "
            f"{', '.join(FAST_DTYPES)}: {', '.join(unreached)}",
            stacklevel=1,
        )


def test_a_traced_constant_is_passed_as_an_input() -> None:
    # A masked op builds its fill value as a tensor the trace holds as a module attribute
    # (a `get_attr` node, which the importer does not take); the sweep lifts it to an input,
    # as torch.export and AOT autograd do.  The empty mask also expands a size-1 dim to 0.
    from torch.testing._internal.common_methods_invocations import op_db

    info = next(i for i in op_db if i.name == "masked.cumsum")
    samples = list(info.sample_inputs("cpu", torch.float32, requires_grad=False))
    masked = [s for s in samples if s.kwargs.get("mask") is not None]
    # one of each: a mask of the input's shape, and empty ones that broadcast
    chosen = masked[:1] + [
        s for s in masked if 0 in s.input.shape and s.kwargs["mask"].shape != s.input.shape
    ]
    assert len(chosen) >= 3
    for sample in chosen:
        called, outcome, reason, _ = aten_opinfo.run_sample(info, sample)
        assert outcome == aten_opinfo.PASS, reason
        assert "aten.where.self" in called


def test_a_rerun_replaces_what_earlier_parts_said_of_its_ops() -> None:
    cos, sin = ("aten.cos.default", "float32"), ("aten.sin.default", "float32")
    row = aten_opinfo.Row
    shard = {cos: row(cos[0], samples=2, passed=1, failures=["a"]), sin: row(sin[0], 3, 3)}
    rerun = {cos: row(cos[0], samples=2, passed=2)}
    commands = ["aten_opinfo.py --shard 0/9", "aten_opinfo.py --ops cos --json r.json"]
    own, _ = aten_opinfo.merge([(shard, {}), (rerun, {})], commands)
    assert (own[cos].samples, own[cos].passed, own[sin].samples) == (2, 2, 3)
    # a merged file's command: every --ops run in it
    merged = "a --shard 0/9; then b --ops cos sin --json x; then c --ops tan"
    assert aten_opinfo.ops_of(merged) == {"cos", "sin", "tan"}
    assert aten_opinfo.ops_of("a --shard 1/9 --json s1.json") == set()
