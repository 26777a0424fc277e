"""core-deadlock-check: the library function's diagnostics, its windowed search against the
pairwise definition, and every program `stream-partition{mode=auto}` writes passing it."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp

import npuir
from npuir.analysis.core_limits import CoreLimits
from npuir.analysis.manager import AnalysisManager, LoweredFunction
from npuir.analysis.overlap import StreamWindows
from npuir.analysis.program import NodeKind, module_streams, scheduled_functions
from npuir.backends.npu.hardware import PRESETS
from npuir.diagnostics import DiagnosticError
from npuir.dialects.npu import NpuOp
from npuir.schedule.capture_rules import DEFAULT_CAPTURE_LIMIT
from npuir.transforms.core_deadlock_check import (
    BAD_CAPTURE_LIMIT,
    CAPTURE_STREAM_BUDGET,
    CORE_DEADLOCK,
    CORE_DEADLOCK_FOUND,
    CORE_DEADLOCK_PEER,
    captured_streams,
    check_capture_stream_budget,
    check_core_deadlock,
    find_conflicts,
    holds_cores,
)

LOWERING = "coreset-lower,insert-events"
T = "tensor<8x8xf16>"

PAIR = """
!t = tensor<64x1024xbf16>
module attributes {npu.target = "910b2"} {
  func.func @pair(%x: !t, %y: !t) -> (tensor<128x1024xbf16>, !t) {
    %g = stream.switch "ag" -> tensor<128x1024xbf16> {
      %g0 = coreset.limit vector 32 -> tensor<128x1024xbf16> {
        %ag = npu.all_gather %x {group_size = 2 : i64, mode = "aiv"} : (!t) -> tensor<128x1024xbf16>
        coreset.yield %ag : tensor<128x1024xbf16>
      }
      stream.yield %g0 : tensor<128x1024xbf16>
    }
    %d = stream.switch "moe" -> !t {
      %d0 = coreset.limit vector 24 -> !t {
        %md = npu.all_to_all %y {group_size = 2 : i64, mode = "aiv", group = "ep"} : (!t) -> !t
        coreset.yield %md : !t
      }
      stream.yield %d0 : !t
    }
    func.return %g, %d : tensor<128x1024xbf16>, !t
  }
}
"""


def _lowered(text: str, partition: str = "stream-partition") -> tuple[npuir.NpuirContext, ModuleOp]:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, text, "case.mlir")
    npuir.run_passes(ctx, module, npuir.build_pipeline(f"{partition},{LOWERING}"))
    return ctx, module


def test_the_collective_pair_is_an_error_at_one_op_and_a_note_at_the_other() -> None:
    _, module = _lowered(PAIR)
    found = check_core_deadlock(module, PRESETS["910b2"])
    assert [(d.severity, d.kind) for d in found] == [
        ("error", CORE_DEADLOCK.code),
        ("note", CORE_DEADLOCK_PEER.code),
    ]
    error, note = found
    args = error.args
    assert {args["demand"], args["other_demand"]} == {32, 24}
    assert args["total"] == 56 and args["device_cores"] == 48 and args["engine"] == "vector"
    assert "%md" in args["op"] and "%ag" in args["other"]
    assert args["stream"] != args["other_stream"]
    # Located at both ops: the later-issued collective, then the other one.
    assert error.location is not None and note.location is not None
    assert error.location.line > note.location.line
    # The limit the message names removes the pair.
    limited = PAIR.replace("coreset.limit vector 24", f"coreset.limit vector {args['room']}")
    _, module = _lowered(limited)
    assert check_core_deadlock(module, PRESETS["910b2"]) == []


def test_the_pass_refuses_with_a_count_and_reports_each_pair_first() -> None:
    ctx = npuir.make_context(collect_diagnostics=True)
    module = npuir.parse_text(ctx, PAIR, "case.mlir")
    pipeline = npuir.build_pipeline(f"stream-partition,{LOWERING},core-deadlock-check")
    with pytest.raises(DiagnosticError) as caught:
        npuir.run_passes(ctx, module, pipeline)
    assert caught.value.diagnostic.kind == CORE_DEADLOCK_FOUND.code
    assert caught.value.diagnostic.args["count"] == 1
    assert caught.value.diagnostic.location is not None
    emitted = [d.kind for d in ctx.diagnostics.drain()]
    assert emitted == [CORE_DEADLOCK.code, CORE_DEADLOCK_PEER.code]


def test_an_unpartitioned_module_is_a_located_error() -> None:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, PAIR, "case.mlir")
    with pytest.raises(DiagnosticError) as caught:
        check_core_deadlock(module, PRESETS["910b2"])
    assert caught.value.diagnostic.kind == "stream.not-partitioned"
    assert caught.value.diagnostic.location is not None


# ---------------------------------------------------------------------------------------------
# Generated programs
# ---------------------------------------------------------------------------------------------


def holder_program(seed: int, num_ops: int, num_tags: int) -> str:
    """A function for `tiny` (4 vector cores) mixing vector ops, AIV all_reduces (some under
    a `coreset.limit`) and nonzeros (SyncAll), each on the default stream or in one of
    `num_tags` stream scopes (0: none, the written program is one stream)."""
    rng = random.Random(seed)
    lines: list[str] = []
    values = ["%a0", "%a1"]
    extra: list[str] = []
    for i in range(num_ops):
        tag = rng.randrange(num_tags + 1) if num_tags else 0
        indent = "      " if tag else "    "
        x, y = rng.choice(values[-6:]), rng.choice(values)
        roll = rng.random()
        body: list[str] = []
        if roll < 0.3:
            op = f'npu.all_reduce {x} {{group_size = 2 : i64, mode = "aiv", group = "g{i % 3}"}}'
            limit = rng.choice([None, 1, 2, 3])
            if limit is None:
                body.append(f"{indent}%v{i} = {op} : ({T}) -> {T}")
            else:
                body += [
                    f"{indent}%v{i} = coreset.limit vector {limit} -> {T} {{",
                    f"{indent}  %c{i} = {op} : ({T}) -> {T}",
                    f"{indent}  coreset.yield %c{i} : {T}",
                    f"{indent}}}",
                ]
        elif roll < 0.4:
            body.append(f"{indent}%n{i} = npu.nonzero {x} : ({T}) -> tensor<?x2xi64>")
        else:
            body.append(f"{indent}%v{i} = npu.add {x}, {y} : ({T}, {T}) -> {T}")
        made = f"%n{i}" if roll >= 0.3 and roll < 0.4 else f"%v{i}"
        kind = "tensor<?x2xi64>" if made.startswith("%n") else T
        if tag:
            lines.append(f'    %r{i} = stream.switch "t{tag}" -> {kind} {{')
            lines += body
            lines.append(f"      stream.yield {made} : {kind}")
            lines.append("    }")
            made = f"%r{i}"
        else:
            lines += body
        (extra if kind != T else values).append(made)
    results = [values[-1], *extra]
    types = [T] + ["tensor<?x2xi64>"] * len(extra)
    head = f"  func.func @g(%a0: {T}, %a1: {T}) -> ({', '.join(types)}) {{"
    tail = f"    func.return {', '.join(results)} : {', '.join(types)}"
    return "\n".join(
        ['module attributes {npu.target = "tiny"} {', head, *lines, tail, "  }", "}", ""]
    )


def _pairwise(module: ModuleOp) -> set[tuple[int, int]]:
    """The conflicting pairs by definition: every two holders, ordered or not."""
    hw = PRESETS["tiny"]
    (func,) = scheduled_functions(module)
    lowered = AnalysisManager().get(LoweredFunction, func, tuple(module_streams(module)))
    prog, hb = lowered.prog, lowered.happens_before
    limits = CoreLimits(module, hw).run()
    holders = [
        n for n in range(len(prog)) if prog.kind[n] is NodeKind.COMPUTE and holds_cores(prog.ops[n])
    ]
    out: set[tuple[int, int]] = set()
    for i, a in enumerate(holders):
        for b in holders[i + 1 :]:
            if prog.stream[a] == prog.stream[b] or hb.ordered(a, b) or hb.ordered(b, a):
                continue
            op_a, op_b = prog.ops[a], prog.ops[b]
            assert isinstance(op_a, NpuOp) and isinstance(op_b, NpuOp)
            if limits.of(op_a)["vector"] + limits.of(op_b)["vector"] > hw.vector_cores:
                out.add((a, b))
    return out


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), num_ops=st.integers(2, 14), num_tags=st.integers(1, 3))
def test_windows_find_every_conflicting_op_the_pairwise_definition_does(
    seed: int, num_ops: int, num_tags: int
) -> None:
    _, module = _lowered(holder_program(seed, num_ops, num_tags))
    pairwise = _pairwise(module)
    hw = PRESETS["tiny"]
    (func,) = scheduled_functions(module)
    lowered = AnalysisManager().get(LoweredFunction, func, tuple(module_streams(module)))
    prog, hb = lowered.prog, lowered.happens_before
    limits = CoreLimits(module, hw).run()
    holders = [n for n in range(len(prog)) if prog.kind[n] is NodeKind.COMPUTE]
    holders = [n for n in holders if holds_cores(prog.ops[n])]
    demand = {}
    for n in holders:
        op = prog.ops[n]
        assert isinstance(op, NpuOp)
        demand[(n, "vector")] = limits.of(op)["vector"]
    windows = StreamWindows(hb, holders)
    # Each window is exactly the holders of that stream happens-before leaves unordered.
    for b in holders:
        for s in windows.streams():
            if s == prog.stream[b]:
                continue
            lo, hi = windows.window(b, s)
            inside = set(windows.on(s)[lo:hi])
            unordered = {a for a in windows.on(s) if not hb.ordered(a, b) and not hb.ordered(b, a)}
            assert inside == unordered
    found = find_conflicts(windows, demand, hw)
    reported = {(min(c.op, c.other), max(c.op, c.other)) for c in found}
    # Every reported pair is a real one, and every op in a real pair is reported.
    assert reported <= pairwise
    assert {n for p in reported for n in p} == {n for p in pairwise for n in p}


@pytest.mark.slow
@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    num_ops=st.integers(2, 16),
    capture=st.booleans(),
)
def test_every_program_auto_writes_passes_the_check(seed: int, num_ops: int, capture: bool) -> None:
    """In GE graph mode and in capture mode (where capture-close forks and joins every side
    stream and lifts TBE kernels' limits), whatever `auto` writes passes the check."""
    # Written on one stream (no scopes): what auto writes is its own choice of streams.
    partition = "stream-partition{mode=auto}"
    if capture:
        ctx = npuir.make_context()
        module = npuir.parse_text(ctx, holder_program(seed, num_ops, 0), "case.mlir")
        npuir.run_passes(ctx, module, npuir.build_pipeline(f"{partition},{LOWERING},capture-close"))
    else:
        _, module = _lowered(holder_program(seed, num_ops, 0), partition)
    assert check_core_deadlock(module, PRESETS["tiny"]) == []


# ---------------------------------------------------------------------------------------------
# The stream budget under capture
# ---------------------------------------------------------------------------------------------

TWO_STREAMS = """
module attributes {npu.target = "tiny"} {
  func.func @two(%x: tensor<8x8xf16>) -> (tensor<8x8xf16>, tensor<8x8xf16>) {
    %a = stream.switch "side" -> tensor<8x8xf16> {
      %e = npu.exp %x : (tensor<8x8xf16>) -> tensor<8x8xf16>
      stream.yield %e : tensor<8x8xf16>
    }
    %b = npu.relu %x : (tensor<8x8xf16>) -> tensor<8x8xf16>
    func.return %a, %b : tensor<8x8xf16>, tensor<8x8xf16>
  }
}
"""


def test_captured_graphs_stop_at_the_capture_limit() -> None:
    assert captured_streams(3) == (DEFAULT_CAPTURE_LIMIT, 3 * DEFAULT_CAPTURE_LIMIT)
    assert captured_streams(3, captures=5) == (5, 15)
    assert captured_streams(3, captures=500, capture_limit=10) == (10, 30)


def test_the_stream_budget_counts_streams_times_captures() -> None:
    _, module = _lowered(TWO_STREAMS)
    hw = PRESETS["tiny"]
    (unknown,) = check_capture_stream_budget(module, hw)
    assert (unknown.kind, unknown.severity) == (CAPTURE_STREAM_BUDGET.code, "warning")
    assert unknown.args["streams"] == 2 and unknown.args["total"] == 2 * DEFAULT_CAPTURE_LIMIT
    assert unknown.location is not None
    # Budget-sized: fits exactly; one more capture is over, and known captures are an error.
    fits = hw.max_streams // 2
    assert check_capture_stream_budget(module, hw, captures=fits) == []
    (over,) = check_capture_stream_budget(module, hw, captures=fits + 1)
    assert over.severity == "error" and over.args["total"] > over.args["budget"]
    # Shapes past the capture limit run eagerly and take no streams.
    assert check_capture_stream_budget(module, hw, captures=1000, capture_limit=fits) == []
    with pytest.raises(DiagnosticError) as caught:
        check_capture_stream_budget(module, hw, capture_limit=0)
    assert caught.value.diagnostic.kind == BAD_CAPTURE_LIMIT.code
    assert caught.value.diagnostic.location is not None
