"""`stream-partition` hands on the program graph of what it wrote, and it is the graph
read back from the IR: node for node, stream for stream, the same dependencies (listed
canonically), the same `stream.wait_tensor` positions -- under every mode, on every
`.mlir` input of the test suites, the examples and the benchmark workloads (quick sizes).
insert-events then takes it from the analysis cache instead of reading the IR again."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

import npuir
from npuir.analysis.manager import LoweredFunction, analyses
from npuir.analysis.program import (
    Program,
    build_program,
    is_lowered,
    module_streams,
    scheduled_functions,
)
from npuir.dialects.sync import RecordOp, WaitOp
from npuir.parsing import split_input
from npuir.passmanager.pipeline import build_pipeline, run_passes
from npuir.transforms.stream_partition import StreamPartitionPass

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench"))

from workloads import QUICK_WORKLOADS  # noqa: E402

INPUTS = sorted([*(ROOT / "test").glob("**/*.mlir"), *(ROOT / "examples").glob("*.mlir")])
SETTINGS = [f"mode={m}" for m in StreamPartitionPass.MODES if m != "ios"] + [
    "mode=auto limits=false",
    "mode=auto mem-budget=1KiB favor=min-peak-memory",
    "mode=user ignore-tags=true",
]
"""Every mode, and the options that change what is written: auto without core limits, a
memory budget that adds orderings, scopes ignored.  Not `ios`, the baseline: its stage
search takes 20 CPU-s on these inputs, and what it writes is handed on by the same code as
every other placing mode's (test_ios.py checks its schedules)."""


def _chunks() -> Iterator[tuple[str, str]]:
    for path in INPUTS:
        for chunk in split_input(path.read_text(encoding="utf-8", errors="replace"), True):
            yield str(path.relative_to(ROOT)), chunk.text
    for name, make in QUICK_WORKLOADS.items():
        yield f"workload:{name}", make()


CHUNKS = list(_chunks())


def _same_graph(got: Program, want: Program) -> None:
    assert len(got) == len(want)
    assert all(a is b for a, b in zip(got.ops, want.ops))
    assert got.kind == want.kind and got.stream == want.stream
    assert got.deps == want.deps
    assert got.event_of == want.event_of and got.event_id == want.event_id
    assert got.streams == want.streams and got.index == want.index and got.pinned == want.pinned
    assert got.wait_tensors == want.wait_tensors and got.wait_positions == want.wait_positions


def _compare(name: str, text: str, setting: str) -> int:
    """How many functions' handed-on graphs were compared (0 when the input does not lower)."""
    compared = 0
    ctx = npuir.make_context(collect_diagnostics=True)
    try:
        module = npuir.parse_text(ctx, text, name)
    except npuir.DiagnosticError:
        return 0

    try:
        run_passes(ctx, module, build_pipeline("gear-multiversion"))
    except (npuir.DiagnosticError, npuir.UsageError):
        return 0
    # What stream-partition partitions: the functions not partitioned yet; one that already
    # has sync ops is left to be read back (`partitioned_program`).
    partitioned = [
        f
        for f in scheduled_functions(module)
        if not is_lowered(f) and not any(isinstance(op, RecordOp | WaitOp) for op in f.walk())
    ]

    def after(p: ModulePass, module: ModuleOp) -> None:
        nonlocal compared
        streams = tuple(module_streams(module))
        manager = analyses(ctx)
        for func in partitioned:
            before = manager.computed
            provided = manager.get(LoweredFunction, func, streams).prog
            assert manager.computed == before, (name, setting)  # handed on, not read again
            _same_graph(provided, build_program(func, list(streams)))
            compared += 1

    try:
        passes = build_pipeline(f"stream-partition{{{setting}}}")
        run_passes(ctx, module, passes, after)
    except (npuir.DiagnosticError, npuir.UsageError):
        pass
    return compared


@pytest.mark.slow
@pytest.mark.parametrize("setting", SETTINGS)
def test_stream_partition_hands_on_the_graph_of_what_it_wrote(setting: str) -> None:
    compared = sum(_compare(name, text, setting) for name, text in CHUNKS)
    assert compared >= 50  # most inputs lower (else this would compare nothing)


@pytest.mark.slow
def test_the_graph_includes_a_memory_budget_orderings(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a budget between one stream's plan and auto's, auto orders ops at the peak
    (`write_orderings`): the graph handed on has those orderings too."""
    import mem_mutations

    from npuir.dialects import mem
    from npuir.transforms import stream_partition

    written: list[int] = []
    original = stream_partition.write_orderings

    def counted(*args: object) -> object:
        out = original(*args)  # type: ignore[arg-type]
        written.append(len(out))
        return out

    monkeypatch.setattr(stream_partition, "write_orderings", counted)
    compared = 0
    for seed in range(300, 304):
        text = mem_mutations.random_program(seed, 24)
        pools = []
        for extra in ("", " max-streams=1"):
            ctx = npuir.make_context()
            module = npuir.parse_text(ctx, text)
            spec = f"stream-partition{{mode=auto ignore-tags=true{extra}}},coreset-lower,"
            npuir.run_passes(ctx, module, build_pipeline(spec + "insert-events,mem-plan"))
            pools.append(mem.pool_size(scheduled_functions(module)[0]) or 0)
        budget = sum(pools) // 2
        setting = f"mode=auto ignore-tags=true mem-budget={budget}"
        compared += _compare(f"random_program({seed})", text, setting)
    assert compared == 4 and sum(written) > 0
