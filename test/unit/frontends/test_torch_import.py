"""`npuir.frontends.torch`: small PyTorch models through `torch.export` into npuir.

Needs the `npuir[torch]` extra; without torch every case here is skipped.
Each model is exported, imported, and run the way `npuir-run --check` runs a
file (the driver's `run_program`: lower with `npu-default`, simulate, and
compare the numbers with the unscheduled program).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from torch_run import run_exported

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp, StringAttr  # noqa: E402
from xdsl.dialects.func import FuncOp  # noqa: E402

import npuir  # noqa: E402
from npuir.diagnostics import DiagnosticEngine, DiagnosticError  # noqa: E402
from npuir.dialects import stream, sync  # noqa: E402
from npuir.dialects.npu import (  # noqa: E402
    ConstantOp,
    NpuOp,
    OpaqueOp,
)
from npuir.driver.run import (  # noqa: E402
    RunConfig,
    run_program,
)
from npuir.frontends import torch as torch_frontend  # noqa: E402
from npuir.frontends import torch_scope as scope  # noqa: E402
from npuir.frontends.torch import (  # noqa: E402
    DIM_RANGES,
    import_exported_program,
    import_pt2,
)
from npuir.torchair import OP_NAME  # noqa: E402

HERE = str(Path(__file__).resolve())
ROOT = Path(__file__).resolve().parents[3]


def _import(model: nn.Module, *args: Any, **kwargs: Any) -> ModuleOp:
    ep = torch.export.export(model, args, **kwargs)
    return import_exported_program(ep)


def _lowered(module: ModuleOp) -> ModuleOp:
    npuir.run_passes(npuir.make_context(), module, npuir.build_pipeline("npu-default"))
    return module


def _check(module: ModuleOp, tmp_path: Path) -> dict[str, Any]:
    """`npuir-run FILE --check` on the imported module; returns its report."""
    path = tmp_path / "model.mlir"
    path.write_text(npuir.print_ir(module))
    outcome = run_program(RunConfig(str(path), check=True))
    assert outcome.status == 0, outcome.report
    return outcome.report


def _against_eager(
    model: nn.Module, args: tuple[Any, ...], tmp_path: Path, tol: float = 1e-4
) -> list[str]:
    """`npuir-run FILE --inputs IN.npz --check` on the imported model, with IN.npz holding
    the model's own parameters and `args` keyed by input name; returns the outputs that
    differ from eager PyTorch on the same inputs (the scheduled run must pass --check)."""
    _, got, want = run_exported(model, args, tmp_path)
    assert len(got) == len(want)
    return [
        f"out{i}"
        for i, w in enumerate(want)
        if not np.allclose(got[i], w.numpy(), rtol=tol, atol=tol)
    ]


def _count(module: ModuleOp, kind: type) -> int:
    return sum(isinstance(op, kind) for op in module.walk())


def _stream_ops(module: ModuleOp) -> dict[str, list[str]]:
    tags = {op.symbol: op.tag.data for op in module.ops if isinstance(op, stream.DeclOp)}
    per: dict[str, list[str]] = {}
    for op in module.walk():
        if isinstance(op, NpuOp):
            per.setdefault(tags[stream.stream_of(op) or ""], []).append(op.name)
    return per


class Seed(nn.Module):
    """The seed model, written for TorchAir with npuir's stand-in for `torchair.scope`."""

    def forward(self, in1: Any, in2: Any, in3: Any, in4: Any) -> Any:
        add_result = torch.add(in1, in2)
        with scope.npu_stream_switch("1"):
            scope.npu_wait_tensor(in4, add_result)
            mm_result = torch.mm(in3, in4)
        mm1 = torch.mm(in3, in4)
        with scope.npu_stream_switch("2"):
            scope.npu_wait_tensor(in4, mm_result)
            add2 = torch.add(in3, in4)
        return add_result, mm_result, mm1, add2


def test_seed_model_imports_to_the_seeds_streams_and_waits(tmp_path: Path) -> None:
    xs = [torch.randn(1000, 1000, dtype=torch.float16) for _ in range(4)]
    module = _lowered(_import(Seed(), *xs))
    example = npuir.parse_file(npuir.make_context(), ROOT / "examples" / "seed_multistream.mlir")
    expected = _lowered(example)
    assert _count(module, stream.DeclOp) == 3
    assert _count(module, sync.WaitOp) == _count(expected, sync.WaitOp) == 3
    assert _stream_ops(module) == _stream_ops(expected)


def test_ops_carry_the_fx_name_and_the_models_line() -> None:
    xs = [torch.randn(8, 8) for _ in range(4)]
    module = _import(Seed(), *xs)
    mm = next(op for op in module.walk() if op.name == "npu.matmul")
    assert mm.attributes[OP_NAME] == StringAttr("mm")
    assert isinstance(mm.location, FileLineColLoc)
    assert mm.location.filename.data == HERE
    line = Seed.forward.__code__.co_firstlineno + 4  # mm_result = torch.mm(in3, in4)
    assert mm.location.line.data == line


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 32)

    def forward(self, x: Any) -> Any:
        return self.fc2(F.gelu(self.fc1(x)))


def test_mlp_imports_with_parameters_as_arguments_and_runs_checked(tmp_path: Path) -> None:
    module = _import(MLP(), torch.randn(16, 64))
    func = module.body.block.first_op
    assert isinstance(func, FuncOp)
    names = [a.name_hint for a in func.args]
    assert names == ["p_fc1_weight", "p_fc1_bias", "p_fc2_weight", "p_fc2_bias", "x"]
    assert [op.name for op in module.walk() if isinstance(op, NpuOp)] == [
        "npu.matmul",
        "npu.add",
        "npu.gelu",
        "npu.matmul",
        "npu.add",
    ]
    _check(module, tmp_path)


class Attention(nn.Module):
    """One decode step of multi-head attention appending to a KV cache."""

    def __init__(self, hidden: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.heads, self.dim = heads, hidden // heads
        self.norm = nn.RMSNorm(hidden, eps=1e-6)
        self.q = nn.Linear(hidden, hidden, bias=False)
        self.k = nn.Linear(hidden, hidden, bias=False)
        self.v = nn.Linear(hidden, hidden, bias=False)
        self.o = nn.Linear(hidden, hidden, bias=False)

    def forward(self, x: Any, k_cache: Any, v_cache: Any) -> Any:
        t = x.shape[0]
        h = self.norm(x)
        q = self.q(h).view(t, self.heads, self.dim).transpose(0, 1)
        k = self.k(h).view(t, self.heads, self.dim).transpose(0, 1)
        v = self.v(h).view(t, self.heads, self.dim).transpose(0, 1)
        k_all = torch.cat([k_cache, k], dim=1)
        v_all = torch.cat([v_cache, v], dim=1)
        scores = torch.matmul(q, k_all.transpose(1, 2)) * (self.dim**-0.5)
        out = torch.matmul(torch.softmax(scores, dim=-1), v_all)
        out = out.transpose(0, 1).reshape(t, self.heads * self.dim)
        return x + self.o(out), k_all, v_all


def test_attention_with_a_kv_cache_runs_checked(tmp_path: Path) -> None:
    module = _import(
        Attention(), torch.randn(4, 64), torch.randn(4, 12, 16), torch.randn(4, 12, 16)
    )
    func = module.body.block.first_op
    assert isinstance(func, FuncOp)
    assert func.function_type.outputs.data[1].get_shape() == (4, 16, 16)
    assert len(func.args) == 8  # five weights, x and two caches: the scale is no input
    assert _count(module, ConstantOp) == 1  # the score scale
    _check(module, tmp_path)


def test_attention_with_a_kv_cache_computes_what_eager_computes(tmp_path: Path) -> None:
    torch.manual_seed(0)
    args = (torch.randn(4, 64), torch.randn(4, 12, 16), torch.randn(4, 12, 16))
    assert _against_eager(Attention(), args, tmp_path) == []


class MoE(nn.Module):
    """Top-k routed experts (weights gathered per token slot) and a shared expert on its
    own stream, as DeepSeek-style MoE layers run it."""

    def __init__(self, hidden: int = 32, inter: int = 64, experts: int = 4, k: int = 2) -> None:
        super().__init__()
        self.k = k
        self.gate = nn.Linear(hidden, experts, bias=False)
        self.w13 = nn.Parameter(torch.randn(experts, hidden, 2 * inter) * 0.05)
        self.w2 = nn.Parameter(torch.randn(experts, inter, hidden) * 0.05)
        self.shared_up = nn.Linear(hidden, 2 * inter, bias=False)
        self.shared_down = nn.Linear(inter, hidden, bias=False)
        self.register_buffer("slot_token", torch.arange(8).repeat_interleave(k))

    def forward(self, x: Any) -> Any:
        t, hidden = x.shape
        with scope.npu_stream_switch("shared"):
            a, b = self.shared_up(x).chunk(2, dim=-1)
            shared = self.shared_down(F.silu(a) * b)
        probs = torch.softmax(self.gate(x), dim=-1)
        weights, ids = torch.topk(probs, self.k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        slots = torch.index_select(x, 0, self.slot_token).unsqueeze(1)
        expert = ids.reshape(-1)
        up = torch.bmm(slots, torch.index_select(self.w13, 0, expert))
        a, b = up.chunk(2, dim=-1)
        down = torch.bmm(F.silu(a) * b, torch.index_select(self.w2, 0, expert))
        routed = (down.reshape(t, self.k, hidden) * weights.unsqueeze(-1)).sum(dim=1)
        return routed + shared


def test_moe_block_with_a_shared_expert_runs_checked(tmp_path: Path) -> None:
    module = _import(MoE(), torch.randn(8, 32))
    per_stream = _stream_ops(_lowered(module.clone()))
    shared = ["npu.matmul", "npu.slice", "npu.slice", "npu.silu", "npu.mul", "npu.matmul"]
    assert per_stream["shared"] == shared
    assert "npu.topk" in per_stream[stream.MAIN_TAG]
    _check(module, tmp_path)


def test_moe_block_computes_what_eager_computes(tmp_path: Path) -> None:
    torch.manual_seed(0)
    assert _against_eager(MoE(), (torch.randn(8, 32),), tmp_path) == []


class Scalars(nn.Module):
    """Python scalars everywhere: a scale, an offset, a divisor, a reversed subtraction."""

    def forward(self, x: Any, y: Any) -> Any:
        h = (x * 0.5 + 3) / 4.0
        return 1.0 - torch.sigmoid(h) * y, h.mean(dim=-1)


def test_scalars_become_constants_not_inputs() -> None:
    module = _import(Scalars(), torch.randn(8, 16), torch.randn(8, 16))
    func = module.body.block.first_op
    assert isinstance(func, FuncOp)
    assert [a.name_hint for a in func.args] == ["x", "y"]
    values = sorted(
        float(op.value.get_values()[0]) for op in module.walk() if isinstance(op, ConstantOp)
    )
    assert values == [0.5, 1.0, 3.0, 4.0, 16.0]


def test_a_model_with_scalars_computes_what_eager_computes(tmp_path: Path) -> None:
    torch.manual_seed(0)
    args = (torch.randn(8, 16), torch.randn(8, 16))
    assert _against_eager(Scalars(), args, tmp_path) == []


def test_a_wrong_frontend_mapping_passes_check_but_not_the_eager_comparison(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--check` compares the scheduled program with the unscheduled one, so it cannot see a
    frontend that maps an op wrongly; comparing with eager does."""
    real = torch_frontend._Importer.handlers

    def broken(self: Any) -> dict[Any, Any]:
        table = real(self)
        table["aten.sigmoid.default"] = torch_frontend.ops.relu  # the mistake
        return table

    monkeypatch.setattr(torch_frontend._Importer, "handlers", broken)
    torch.manual_seed(0)
    args = (torch.randn(8, 16), torch.randn(8, 16))
    assert _against_eager(Scalars(), args, tmp_path) == ["out0"]


class Dynamic(nn.Module):
    def forward(self, x: Any, w: Any) -> Any:
        return torch.relu(torch.mm(x, w))


def test_symbolic_dims_become_dynamic_with_their_range() -> None:
    batch = torch.export.Dim("batch", min=2, max=64)
    module = _import(
        Dynamic(), torch.randn(8, 16), torch.randn(16, 4), dynamic_shapes=({0: batch}, None)
    )
    func = module.body.block.first_op
    assert isinstance(func, FuncOp)
    assert str(func.function_type.inputs.data[0]) == "tensor<?x16xf32>"
    (sym,) = func.attributes[DIM_RANGES].data.items()  # type: ignore[attr-defined]
    assert [int(v) for v in sym[1].get_values()] == [2, 64]


class LimitedAndNested(nn.Module):
    def forward(self, x: Any) -> Any:
        with scope.npu_stream_switch("1", 1):
            with scope.limit_core_num(8, 16):
                y = torch.relu(x)
            z = torch.exp(y)
        return z + x


def test_limit_core_num_and_priority_become_scopes() -> None:
    text = npuir.print_ir(_import(LimitedAndNested(), torch.randn(4, 4)))
    assert 'stream.switch "1" priority 1' in text
    assert "coreset.limit cube 8 vector 16" in text


class Unsupported(nn.Module):
    def forward(self, x: Any) -> Any:
        return torch.special.i0(x) + torch.special.i0(x.t())


def test_an_op_without_an_npu_op_becomes_opaque_with_one_warning() -> None:
    engine = DiagnosticEngine()
    ep = torch.export.export(Unsupported(), (torch.randn(4, 4),))
    module = import_exported_program(ep, diagnostics=engine)
    opaque = [op for op in module.walk() if isinstance(op, OpaqueOp)]
    assert [op.attributes["ge_type"] for op in opaque] == [
        StringAttr("aten.special_i0.default")
    ] * 2
    (warning,) = engine.emitted
    assert "'aten.special_i0.default' has no npu op: 2 op(s)" in warning.message
    assert warning.location is not None and warning.location.filename == HERE
    assert warning.location.line == Unsupported.forward.__code__.co_firstlineno + 1


def test_a_strict_import_refuses_an_op_without_an_npu_op() -> None:
    ep = torch.export.export(Unsupported(), (torch.randn(4, 4),))
    with pytest.raises(DiagnosticError) as info:
        import_exported_program(ep, strict=True)
    diag = info.value.diagnostic
    assert "aten.special_i0" in diag.message and "strict" in diag.message
    assert diag.location is not None and diag.location.filename == HERE
    assert diag.location.line == Unsupported.forward.__code__.co_firstlineno + 1


def test_a_saved_archive_imports(tmp_path: Path) -> None:
    xs = [torch.randn(8, 8) for _ in range(4)]
    path = tmp_path / "seed.pt2"
    torch.export.save(torch.export.export(Seed(), tuple(xs)), str(path))
    module = _lowered(import_pt2(path))
    assert _count(module, sync.WaitOp) == 3
    # npuir-advise takes the archive itself, and answers in the model's own lines.
    from npuir.driver.advise import AdviseConfig, advise

    advice = advise(AdviseConfig(path=str(path)))
    assert advice.edits and all(e.file == HERE for e in advice.edits)


def test_a_missing_archive_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DiagnosticError, match="cannot load"):
        import_pt2(tmp_path / "missing.pt2")


def test_the_scope_ops_have_torchairs_schemas() -> None:
    scope.register()
    schemas = {
        name: str(getattr(torch.ops.air, name).default._schema)
        for name in ("scope_enter", "scope_exit", "wait_tensor")
    }
    assert schemas == {
        "scope_enter": "air::scope_enter(str[] keys, str[] values, bool need_execute=False) -> NoneType",
        "scope_exit": "air::scope_exit(bool need_execute=False) -> NoneType",
        "wait_tensor": "air::wait_tensor(Tensor self, Tensor dependency) -> Tensor",
    }
    x = torch.ones(2)
    waited = scope.npu_wait_tensor(x, torch.zeros(2))
    # The schema declares no aliasing, so the kernel returns a copy (not `x` itself).
    assert torch.equal(waited, x) and waited.data_ptr() != x.data_ptr()


def test_the_readme_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    text = (ROOT / "docs" / "torchair.md").read_text()
    section = text.split("## PyTorch in (npuir.frontends.torch", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "README.md", "exec"), {})
    assert 'stream.switch "1"' in capsys.readouterr().out


class Complex32(nn.Module):
    def forward(self, x: Any) -> Any:
        return x.to(torch.complex32)  # complex64 and complex128 npuir has (the FFTs')


def test_a_builder_error_is_located_at_the_models_line() -> None:
    with pytest.raises(DiagnosticError) as info:
        _import(Complex32(), torch.randn(4, 4))
    diag = info.value.diagnostic
    assert "complex32, which npuir has no element type for" in diag.message
    assert diag.location is not None and diag.location.filename == HERE
    assert diag.location.line == Complex32.forward.__code__.co_firstlineno + 1


class DecoderLayer(nn.Module):
    """A Llama-style decoder layer: attention with a KV cache, then a SwiGLU MLP."""

    def __init__(self, hidden: int = 64, inter: int = 128) -> None:
        super().__init__()
        self.attn = Attention(hidden)
        self.norm = nn.RMSNorm(hidden, eps=1e-6)
        self.up = nn.Linear(hidden, 2 * inter, bias=False)
        self.down = nn.Linear(inter, hidden, bias=False)

    def forward(self, x: Any, k_cache: Any, v_cache: Any) -> Any:
        h, k_all, v_all = self.attn(x, k_cache, v_cache)
        a, b = self.up(self.norm(h)).chunk(2, dim=-1)
        return h + self.down(F.silu(a) * b), k_all, v_all


@pytest.mark.parametrize("name", ["decoder", "moe"])
def test_advice_on_an_imported_model_reproduces_its_makespan(tmp_path: Path, name: str) -> None:
    """npuir-advise on the imported model: its --emit-mlir source form, run as written,
    takes exactly the advised makespan, computes what the model computes, and is never
    slower than the model as annotated."""
    from npuir.driver.advise import AdviseConfig, advise

    if name == "decoder":
        module = _import(
            DecoderLayer(), torch.randn(4, 64), torch.randn(4, 12, 16), torch.randn(4, 12, 16)
        )
    else:
        module = _import(MoE(), torch.randn(8, 32))
    path = tmp_path / f"{name}.mlir"
    # As npuir-import writes it: every op keeps its model line (loc(...)).
    path.write_text(npuir.print_ir(module, debuginfo=True))
    out = tmp_path / "advised.mlir"
    advice = advise(AdviseConfig(path=str(path), emit_mlir=str(out)))
    by_name = {v.name: v for v in advice.variants}
    best = by_name[advice.best]
    assert best.makespan_ns is not None
    assert best.makespan_ns <= (by_name["as written"].makespan_ns or 0)
    # The edits are in the user's terms: lines of the model's own source file.
    assert advice.keep or advice.edits
    assert all(e.file == HERE for e in advice.edits)
    rerun = run_program(RunConfig(str(out), check=True))
    assert rerun.status == 0 and rerun.result is not None
    assert rerun.result.makespan_ns == best.makespan_ns
