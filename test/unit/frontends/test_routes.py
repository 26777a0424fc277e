"""Every route into npuir means the same program: the seed model written as `.mlir`,
built with `npuir.torchair`, dumped by GE as txt and as pbtxt, and exported from torch
gives the same dependences, the same waits and the same makespan.

The seed (docs/ir.md) writes `npu_wait_tensor(in4, ...)` as a statement and keeps
using `in4`, also after the wait's scope closes (`mm1` on the main stream): every
route must order that use after the add.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

import npuir
from npuir.analysis.program import DepKind, build_program, module_streams
from npuir.dialects import stream, sync
from npuir.dialects.npu import NpuOp
from npuir.driver.run import RunConfig, run_program

ROOT = Path(__file__).resolve().parents[3]
INPUTS = ROOT / "test" / "frontends" / "Inputs"
N = 1000


def _from_text(tmp_path: Path) -> Path:
    return ROOT / "examples" / "seed_multistream.mlir"


def _from_ge_txt(tmp_path: Path) -> Path:
    return INPUTS / "seed_multistream.txt"


def _from_pbtxt(tmp_path: Path) -> Path:
    return INPUTS / "seed_multistream.pbtxt"


def _from_builder(tmp_path: Path) -> Path:
    from npuir import torchair
    from npuir.torchair import ops

    g = torchair.Graph("forward")
    in1, in2, in3, in4 = (g.input((N, N), "f16") for _ in range(4))
    add_result = ops.add(in1, in2)
    with torchair.scope.npu_stream_switch("1"):
        torchair.scope.npu_wait_tensor(in4, add_result)
        mm_result = ops.mm(in3, in4)
    mm1 = ops.mm(in3, in4)
    with torchair.scope.npu_stream_switch("2"):
        torchair.scope.npu_wait_tensor(in4, mm_result)
        add2 = ops.add(in3, in4)
    g.output(add_result, mm_result, mm1, add2)
    return _written(g.module, tmp_path)


def _from_torch(tmp_path: Path) -> Path:
    torch = pytest.importorskip("torch")
    from npuir.frontends import torch_scope as scope

    scope.register()  # torch came after npuir.torchair here; a trace cannot register ops
    from npuir.frontends.torch import import_exported_program

    class Seed(torch.nn.Module):  # type: ignore[misc, name-defined]
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

    xs = tuple(torch.randn(N, N, dtype=torch.float16) for _ in range(4))
    return _written(import_exported_program(torch.export.export(Seed(), xs)), tmp_path)


def _written(module: ModuleOp, tmp_path: Path) -> Path:
    path = tmp_path / "seed.mlir"
    path.write_text(npuir.print_ir(module))
    return path


ROUTES: dict[str, Callable[[Path], Path]] = {
    "mlir": _from_text,
    "builder": _from_builder,
    "ge-txt": _from_ge_txt,
    "pbtxt": _from_pbtxt,
    "torch": _from_torch,
}


def _load(path: Path) -> ModuleOp:
    from npuir.frontends.load import load

    return load(path, npuir.make_context())


def _function(module: ModuleOp) -> FuncOp:
    return next(op for op in module.ops if isinstance(op, FuncOp))


def _dependences(module: ModuleOp) -> list[tuple[str, tuple[tuple[int, DepKind], ...]]]:
    """Each node of the unlowered program: its op and what it depends on, and why."""
    prog = build_program(_function(module))
    return [(op.name, tuple(sorted(deps))) for op, deps in zip(prog.ops, prog.deps)]


def _lowered(module: ModuleOp) -> list[tuple[str, str]]:
    """The lowered function in issue order: each op or wait with its stream's label."""
    npuir.run_passes(npuir.make_context(), module, npuir.build_pipeline("npu-default"))
    tags = {info.symbol: info.tag for info in module_streams(module)}
    out: list[tuple[str, str]] = []
    for op in _function(module).body.block.ops:
        if isinstance(op, NpuOp | stream.WaitTensorOp):
            out.append((op.name, tags[stream.stream_of(op) or ""]))
        elif isinstance(op, sync.WaitOp | sync.RecordOp):
            out.append((op.name, tags[op.stream_name]))
    return out


@pytest.fixture(scope="module")
def reference() -> tuple[Any, ...]:
    path = _from_text(Path())
    outcome = run_program(RunConfig(str(path), timing_only=True))
    return _dependences(_load(path)), _lowered(_load(path)), outcome.report["makespan_ns"]


@pytest.mark.parametrize(
    "route",
    [pytest.param(r, marks=pytest.mark.torch) if r == "torch" else r for r in sorted(ROUTES)],
)
def test_every_route_gives_the_seed_the_same_meaning(
    route: str, tmp_path: Path, reference: tuple[Any, ...]
) -> None:
    path = ROUTES[route](tmp_path)
    dependences, lowered, makespan = reference
    assert _dependences(_load(path)) == dependences
    assert _lowered(_load(path)) == lowered
    outcome = run_program(RunConfig(str(path), timing_only=True))
    assert outcome.report["makespan_ns"] == makespan


def test_the_use_after_the_scope_waits_for_the_add() -> None:
    """The seed's `mm1` (main stream, after stream "1"'s scope closed) reads `in4`: it is
    ordered after the add, as the seed's "all nodes that use self" says."""
    deps = _dependences(_load(_from_text(Path())))
    names = [name for name, _ in deps]
    mm1 = names.index("npu.matmul", names.index("npu.matmul") + 1)
    assert (names.index("npu.add"), DepKind.CONTROL) in deps[mm1][1]
