"""The analysis cache: computed once per IR, shared by passes, dropped when a pass may change the IR."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass

import npuir
from npuir.analysis.happens_before import HappensBefore
from npuir.analysis.manager import ALL, AnalysisManager, LoweredFunction, analyses
from npuir.analysis.program import module_streams
from npuir.passmanager.pipeline import build_pipeline, run_passes

ROOT = Path(__file__).resolve().parents[3]
SEED = ROOT / "examples" / "seed_multistream.mlir"


def _lowered() -> tuple[npuir.NpuirContext, ModuleOp]:
    ctx = npuir.make_context()
    module = npuir.parse_file(ctx, SEED)
    run_passes(ctx, module, build_pipeline("stream-partition,coreset-lower,insert-events"))
    return ctx, module


def _count_happens_before(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    runs: list[int] = []
    original = HappensBefore.run

    def counted(self: HappensBefore) -> HappensBefore:
        runs.append(1)
        return original(self)

    monkeypatch.setattr(HappensBefore, "run", counted)
    return runs


def test_check_passes_share_one_happens_before(monkeypatch: pytest.MonkeyPatch) -> None:
    ctx, module = _lowered()
    runs = _count_happens_before(monkeypatch)
    run_passes(ctx, module, build_pipeline("coreset-check,sync-verify"))
    functions = [f for f in module.ops if isinstance(f, FuncOp)]
    assert len(runs) == len(functions) == 1


def test_a_pass_that_may_change_the_ir_drops_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    ctx, module = _lowered()
    runs = _count_happens_before(monkeypatch)
    run_passes(ctx, module, build_pipeline("sync-verify,coreset-lower,sync-verify"))
    assert len(runs) == 2  # coreset-lower declares nothing preserved


def test_manager_keys_on_the_ir_and_keeps_what_is_preserved() -> None:
    _, module = _lowered()
    func = next(f for f in module.ops if isinstance(f, FuncOp))
    streams = tuple(module_streams(module))
    manager = AnalysisManager()
    first = manager.get(LoweredFunction, func, streams)
    assert manager.get(LoweredFunction, func, streams) is first
    assert manager.computed == 1
    manager.invalidate(ALL)
    assert manager.get(LoweredFunction, func, streams) is first
    manager.invalidate((LoweredFunction,))
    assert manager.get(LoweredFunction, func, streams) is first
    manager.invalidate()
    assert manager.get(LoweredFunction, func, streams) is not first
    assert manager.computed == 2


def test_a_plain_context_gets_a_fresh_cache_each_time() -> None:
    ctx = Context()
    assert analyses(ctx) is not analyses(ctx)


@dataclass(frozen=True)
class _BreakTheIR(ModulePass):
    """Gives the first function a body that no longer matches its signature."""

    name = "test-break-the-ir"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        func = next(f for f in op.ops if isinstance(f, FuncOp))
        ret = func.body.block.last_op
        assert ret is not None
        ret.operands = ()


def test_verification_runs_after_the_last_pass_and_after_each_when_asked() -> None:
    ctx = npuir.make_context()
    seen: list[str] = []
    module = npuir.parse_file(ctx, SEED)
    passes = [_BreakTheIR(), *build_pipeline("coreset-lower")]
    with pytest.raises(npuir.DiagnosticError, match=r"func\.return"):
        run_passes(ctx, module, passes, lambda p, _: seen.append(p.name), verify_each=False)
    assert seen == ["test-break-the-ir", "coreset-lower"]  # caught at the end
    seen.clear()
    module = npuir.parse_file(ctx, SEED)
    with pytest.raises(npuir.DiagnosticError, match=r"func\.return"):
        run_passes(ctx, module, passes, lambda p, _: seen.append(p.name), verify_each=True)
    assert seen == []  # caught right after the pass that broke it
