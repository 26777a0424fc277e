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
from npuir.analysis.program import Program, build_program, module_streams, scheduled_functions
from npuir.parsing import split_input
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


@dataclass(frozen=True)
class _MayChange(ModulePass):
    """Changes nothing, but declares nothing preserved (as any pass that rewrites IR)."""

    name = "test-may-change"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pass


def test_a_pass_that_may_change_the_ir_drops_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    ctx, module = _lowered()
    runs = _count_happens_before(monkeypatch)
    check = build_pipeline("sync-verify")
    run_passes(ctx, module, [*check, _MayChange(), *check])
    assert len(runs) == 2  # the pass declares nothing preserved


def test_coreset_lower_keeps_the_graph_it_does_not_change(monkeypatch: pytest.MonkeyPatch) -> None:
    """coreset-lower changes the IR, but not a function's program graph unless it rebinds
    a wait its scopes hid: the seed's graph survives it."""
    ctx, module = _lowered()
    runs = _count_happens_before(monkeypatch)
    run_passes(ctx, module, build_pipeline("sync-verify,coreset-lower,sync-verify"))
    assert len(runs) == 1


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


LOWERED_INPUTS = sorted(
    [
        *(ROOT / "examples").glob("*.mlir"),
        *(ROOT / "test" / "runner").glob("*.mlir"),
        *(ROOT / "test" / "transforms").glob("*.mlir"),
    ]
)


def _same_graph(got: Program, want: Program) -> None:
    assert len(got) == len(want)
    assert all(a is b for a, b in zip(got.ops, want.ops))
    assert got.kind == want.kind and got.stream == want.stream and got.deps == want.deps
    assert got.event_of == want.event_of and got.event_id == want.event_id
    assert got.streams == want.streams and got.index == want.index and got.pinned == want.pinned
    assert got.wait_tensors == want.wait_tensors and got.wait_positions == want.wait_positions


@pytest.mark.parametrize("path", LOWERED_INPUTS, ids=lambda p: p.name)
def test_insert_events_hands_on_the_graph_of_what_it_wrote(path: Path) -> None:
    """The lowered graph insert-events provides is the one `build_program` reads from the
    IR it wrote, node for node; the checks after it use it without reading the IR."""
    compared: list[str] = []
    for chunk in split_input(path.read_text(), True):
        ctx = npuir.make_context(collect_diagnostics=True)
        try:
            module = npuir.parse_text(ctx, chunk.text, str(path))
        except npuir.DiagnosticError:
            continue

        def after(p: ModulePass, module: ModuleOp, ctx: npuir.NpuirContext = ctx) -> None:
            if p.name != "insert-events":
                return
            streams = tuple(module_streams(module))
            manager = analyses(ctx)
            for func in scheduled_functions(module):
                before = manager.computed
                provided = manager.get(LoweredFunction, func, streams).prog
                assert manager.computed == before  # handed on, not read again
                _same_graph(provided, build_program(func, list(streams)))
                compared.append(func.sym_name.data)

        try:
            run_passes(ctx, module, build_pipeline("npu-default"), after)
        except npuir.DiagnosticError:
            continue
    if path.parent.name == "examples":
        assert compared  # the examples lower (else this would compare nothing)


def test_one_run_of_the_seed_reads_no_lowered_function_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One `npuir-run` of the seed lowers it three times; each lowering reads the
    function's graph from the IR once (as written, for stream-partition) and never after:
    insert-events takes the partitioned graph stream-partition handed on (coreset-lower
    keeps it), and the checks, the simulation and the report share the lowered graph
    insert-events handed on."""
    from npuir.analysis import program
    from npuir.tools.run import run

    reads: list[str] = []
    lowerings: list[int] = []
    flatten, apply = program._flatten, run_passes

    def counted_flatten(block: object, prog: Program) -> None:
        reads.append(prog.func.sym_name.data)
        flatten(block, prog)  # type: ignore[arg-type]

    def counted_run(ctx: object, module: ModuleOp, passes: list[ModulePass], *a: object) -> None:
        if any(p.name == "stream-partition" for p in passes):
            lowerings.append(len(passes))
        apply(ctx, module, passes, *a)  # type: ignore[arg-type]

    monkeypatch.setattr(program, "_flatten", counted_flatten)
    monkeypatch.setattr("npuir.driver.run.run_passes", counted_run)
    assert run([str(SEED), "--timing-only"]) == 0
    functions = len([f for f in npuir.load(SEED).ops if isinstance(f, FuncOp)])
    assert len(lowerings) == 3
    assert len(reads) == functions * len(lowerings) == 3


def test_lowered_program_indexes_each_op_at_its_own_node() -> None:
    """`lowered_program` (what auto's judge simulates) fills `Program.index`: each op of the
    unlowered program maps to its own node, not to the record or wait placed beside it (the
    simulator finds a tensor's readers through it, for peak memory)."""
    from npuir.analysis.events import lowered_program
    from npuir.analysis.partition import assign
    from npuir.backends.npu.hardware import PRESETS
    from npuir.backends.npu.simulator import simulate

    ctx = npuir.make_context()
    module = npuir.parse_file(ctx, ROOT / "examples" / "multi_branch.mlir")
    run_passes(ctx, module, build_pipeline("gear-multiversion"))
    func = scheduled_functions(module)[0]
    prog = build_program(func)
    pinned = [None] * len(prog)
    lowered, origin = lowered_program(prog, assign("engine", prog, pinned, {}, 8))
    assert any(o < 0 for o in origin)  # it has records and waits (else nothing to check)
    for n, o in enumerate(origin):
        if o >= 0:
            assert lowered.index[prog.ops[o]] == n
    assert set(lowered.index) == set(prog.ops)
    # What the passes write and what the judge simulates hold the same memory at the peak.
    hw = PRESETS["910b2"]
    written = npuir.parse_file(ctx, ROOT / "examples" / "multi_branch.mlir")
    run_passes(ctx, written, build_pipeline("stream-partition{mode=engine},insert-events"))
    read = build_program(scheduled_functions(written)[0], list(module_streams(written)))
    judged = simulate([lowered], hw).peak_memory_bytes
    assert judged == simulate([read], hw).peak_memory_bytes > 0
