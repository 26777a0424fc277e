"""npuir-run's memory: the plan's peak against its bounds, and the numerics on the plan's layout.

Properties, not numbers: the simulated timeline's live bytes never exceed the
antichain bound, which never exceeds the planned peak; the peak is the plan the
IR carries; an unsafe plan run with `--check-memory` corrupts an output that
`--check` catches, and a safe one passes on every example.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from xdsl.dialects.func import FuncOp

import npuir
from npuir.backends.npu.trace import trace_events
from npuir.diagnostics import DiagnosticError
from npuir.dialects import mem
from npuir.driver.run import EXIT_CHECK, EXIT_OK, RunConfig, run_program

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench"))

import mem_mutations  # noqa: E402

EXAMPLES = ROOT / "examples"


def _lowered_text(name: str, pipeline: str = "npu-default") -> tuple[str, npuir.ModuleOp]:  # type: ignore[name-defined]
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, (EXAMPLES / name).read_text())
    npuir.run_passes(ctx, module, npuir.build_pipeline(pipeline))
    return npuir.print_ir(module), module


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "extra"),
    [
        ("seed_multistream.mlir", {}),
        ("multi_branch.mlir", {}),
        ("tp_decoder_decode.mlir", {"mirror_peers": True}),
        ("moe_decode.mlir", {"mirror_peers": True}),
        ("core_limit_fixed.mlir", {"entries": ["rank0", "rank1"]}),
        ("tp_decoder_prefill.mlir", {"mirror_peers": True}),
        ("gears.mlir", {"shapes": {"0": (4, 2), "1": (4, 2)}}),
    ],
)
def test_bounds_are_ordered_and_the_plan_checks(name: str, extra: dict[str, object]) -> None:
    path = str(EXAMPLES / name)
    outcome = run_program(RunConfig(path=path, check=True, check_memory=True, **extra))  # type: ignore[arg-type]
    assert outcome.status == EXIT_OK
    assert outcome.report["check"]["passed"]
    memory = outcome.report["memory"]
    ranks = memory.get("by_rank") or [memory]
    for rank in ranks:
        assert rank["timeline_peak_bytes"] <= rank["bound_bytes"] <= rank["peak_bytes"]
        assert rank["single_stream_peak_bytes"] is not None
        assert rank["peak_bytes"] <= rank["no_reuse_bytes"]
    assert memory["log"].startswith("[IMAS]AfterAssignMemory")
    assert outcome.result is not None
    pools = {mem.pool_size(p.func) for p in outcome.programs}
    assert {r["peak_bytes"] for r in ranks} == pools
    counters = [
        e
        for e in trace_events(outcome.result, outcome.programs)["traceEvents"]
        if e.get("name") == "planned bytes live"
    ]
    assert max(e["args"]["bytes"] for e in counters) == max(r["timeline_peak_bytes"] for r in ranks)


@pytest.mark.slow
def test_an_unsafe_plan_corrupts_an_output_that_check_catches() -> None:
    _, module = _lowered_text("multi_branch.mlir")
    rng = random.Random(3)
    caught = tried = 0
    # Three mutations: each run computes multi_branch's f16 matmuls twice in their fixed
    # summation order (the kernel's), about 4 CPU-s a run.
    while tried < 3:
        copy = module.clone()
        func = next(op for op in copy.ops if isinstance(op, FuncOp))
        kind = mem_mutations.mutate(func, rng)
        if kind == "shrink" or not mem_mutations.oracle_unsafe(func):
            continue
        tried += 1
        text = npuir.print_ir(copy)
        outcome = run_program(RunConfig(path="x.mlir", source=text, check=True, check_memory=True))
        caught += outcome.status == EXIT_CHECK
        if tried == 1:
            # Without the pool the numerics never see the plan: the same program passes.
            plain = run_program(RunConfig(path="x.mlir", source=text, check=True))
            assert plain.status == EXIT_OK
    assert caught == tried


@pytest.mark.slow
def test_check_memory_needs_a_plan() -> None:
    text, _ = _lowered_text(
        "multi_branch.mlir",
        "gear-multiversion,stream-partition,coreset-lower,insert-events,sync-verify",
    )
    with pytest.raises(DiagnosticError) as info:
        run_program(RunConfig(path="x.mlir", source=text, check_memory=True))
    assert info.value.diagnostic.kind == "run.no-memory-plan"


@pytest.mark.slow
def test_mem_budget_picks_a_schedule_that_fits_or_names_the_peak() -> None:
    path = str(EXAMPLES / "multi_branch.mlir")
    free = run_program(RunConfig(path=path, timing_only=True, mem_budget="hbm"))
    assert free.status == EXIT_OK
    fitted = run_program(RunConfig(path=path, timing_only=True, mem_budget="9MiB"))
    assert fitted.report["memory"]["peak_bytes"] <= 9 << 20
    with pytest.raises(DiagnosticError) as info:
        run_program(RunConfig(path=path, timing_only=True, mem_budget="1MiB"))
    assert info.value.diagnostic.kind == "stream.over-memory-budget"


def test_mem_budget_does_not_go_with_a_pipeline() -> None:
    from npuir.diagnostics import UsageError

    with pytest.raises(UsageError, match="--mem-budget"):
        run_program(
            RunConfig(
                path=str(EXAMPLES / "multi_branch.mlir"),
                timing_only=True,
                mem_budget="1GiB",
                pipeline="npu-default",
            )
        )


def test_check_memory_is_refused_when_the_host_cannot_hold_the_pools(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import npuir.driver.run as runner

    monkeypatch.setattr(runner, "host_bytes_available", lambda: 1024)
    with pytest.raises(DiagnosticError) as info:
        run_program(RunConfig(path=str(EXAMPLES / "multi_branch.mlir"), check_memory=True))
    assert info.value.diagnostic.kind == "run.host-memory"


@pytest.mark.parametrize(
    "spec", ["mem-plan{budget=lots}", "stream-partition{mode=auto mem-budget=-1}"]
)
def test_a_bad_budget_is_a_usage_error(spec: str) -> None:
    from npuir.diagnostics import UsageError

    with pytest.raises(UsageError, match="memory budget"):
        npuir.build_pipeline(spec)


@pytest.mark.slow
def test_favor_min_peak_memory_keeps_a_smaller_plan_and_needs_a_budget() -> None:
    """`--favor min-peak-memory` keeps a plan no larger than the default's (which is no
    slower); `--favor` alone is a usage error."""
    from npuir.diagnostics import UsageError

    path = str(EXAMPLES / "multi_branch.mlir")
    fast = run_program(RunConfig(path=path, timing_only=True, mem_budget="hbm"))
    small = run_program(
        RunConfig(path=path, timing_only=True, mem_budget="hbm", favor="min-peak-memory")
    )
    assert small.report["memory"]["peak_bytes"] <= fast.report["memory"]["peak_bytes"]
    assert fast.report["makespan_ns"] <= small.report["makespan_ns"]
    with pytest.raises(UsageError, match="--favor"):
        run_program(RunConfig(path=path, timing_only=True, favor="min-peak-memory"))
