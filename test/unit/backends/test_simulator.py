"""Tests for the discrete-event simulator, with every time computed by hand on ``tiny``.

``tiny`` (see `hardware.py` and the `timing.py` docstring): 2 cube and 4 vector cores at
1 FLOP/ns (f16, i1), HBM and link at 1 byte/ns, 32x32 cube tiles, 1 KiB vector tiles,
launch 100 ns, record 10 ns, wait 20 ns, 100 ns per link step.  The ops used below:

- ``ADD``: f16 add of 1024 elements: 2 vector tiles, so 2 cores; HBM share 2/4;
  max(1024/2, 6144/0.5) = 12288, plus launch = **12388 ns**.
- ``ADD512``: f16 add of 512 elements: 1 tile, 1 core, share 1/4;
  max(512, 3072*4) = 12288, plus launch = **12388 ns**.
- ``MM``: f16 matmul 64x64x64: 4 tiles, 2 cube cores (all), share 1;
  max(524288/2, 24576) = 262144, plus launch = **262244 ns**.
- ``NZ``: nonzero of 1024 i1: flops 1024, bytes 1024 + 1024*8 = 9216, 1 tile, so
  1 working core; holding all 4 cores gives share 1: max(1024, 9216) + 100 = **9316 ns**;
  holding 2 (limit 2) gives share 1/2: 18432 + 100 = **18532 ns**.
- ``AR``: all_reduce of 1024 bytes over 2 ranks: 1024 + 2*100 = 1224, plus launch =
  **1324 ns**.
"""

from __future__ import annotations

import dataclasses

import pytest
from xdsl.dialects.func import FuncOp

import npuir
from npuir.analysis.happens_before import HappensBefore
from npuir.analysis.program import DepKind, NodeKind, Program, build_program, module_streams
from npuir.backends.npu.cost import OpWork, op_work
from npuir.backends.npu.hardware import PRESETS
from npuir.backends.npu.simulator import OpRecord, SimCache, SimResult, simulate
from npuir.dialects import stream
from npuir.dialects.npu import NpuOp

TINY = PRESETS["tiny"]

ADD = 12388
ADD512 = 12388
MM = 262244
NZ = 9316
NZ_ON_2 = 18532
AR = 1324
REC = 10
WAIT = 20

T = "tensor<1024xf16>"
BIN = f"({T}, {T}) -> {T}"
M = "tensor<64x64xf16>"
MMT = f"({M}, {M}) -> {M}"
NZT = "(tensor<1024xi1>) -> tensor<?x1xi64>"


def programs(text: str) -> list[Program]:
    """One `Program` per function of a lowered module, in order."""
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, text)
    streams = module_streams(module)
    return [build_program(f, streams) for f in module.ops if isinstance(f, FuncOp)]


def program(text: str) -> Program:
    (prog,) = programs(text)
    return prog


def decls(*priorities: int) -> str:
    names = [stream.MAIN_TAG, *(str(i) for i in range(1, len(priorities)))]
    return "\n".join(
        f'  stream.decl @s{i} "{name}" priority {p}'
        for i, (name, p) in enumerate(zip(names, priorities, strict=True))
    )


def record(result: SimResult, node: int, rank: int = 0) -> OpRecord:
    rec = result.op(rank, node)
    assert rec is not None, f"node {node} did not run on rank {rank}"
    return rec


def span(result: SimResult, node: int, rank: int = 0) -> tuple[int, int]:
    rec = record(result, node, rank)
    return rec.start, rec.end


# -- per-op inputs ----------------------------------------------------------------------------


def test_op_work_matches_the_cost_model_examples() -> None:
    prog = program(
        f"""module {{
{decls(0)}
  func.func @f(%a: {T}, %m: {M}, %z: tensor<1024xi1>) {{
    %x = npu.add %a, %a {{stream.on = @s0}} : {BIN}
    %y = npu.matmul %m, %m {{stream.on = @s0}} : {MMT}
    %n = npu.nonzero %z {{stream.on = @s0}} : {NZT}
    func.return
  }}
}}"""
    )
    works = [op_work(op, TINY) for op in prog.ops if isinstance(op, NpuOp)]
    assert works == [
        OpWork(engine="vector", flops=1024, bytes=6144, dtype="f16", tiles=2),
        OpWork(engine="cube", flops=524288, bytes=24576, dtype="f16", tiles=4),
        OpWork(engine="vector", flops=1024, bytes=9216, dtype="i1", tiles=1),
    ]


# -- streams and events -----------------------------------------------------------------------


def test_independent_ops_on_two_streams_overlap() -> None:
    prog = program(
        f"""module {{
{decls(0, 0)}
  func.func @f(%a: {T}, %m: {M}) -> ({M}, {T}) {{
    %mm = npu.matmul %m, %m {{stream.on = @s0}} : {MMT}
    %x = npu.add %a, %a {{stream.on = @s1}} : {BIN}
    %e = sync.record on @s1
    sync.wait %e on @s0
    func.return %mm, %x : {M}, {T}
  }}
}}"""
    )
    result = simulate([prog], TINY)
    assert span(result, 0) == (0, MM)
    assert span(result, 1) == (0, ADD)  # runs beside the matmul
    assert span(result, 2) == (ADD, ADD + REC)
    assert span(result, 3) == (MM, MM + WAIT)  # the record fired long ago
    assert span(result, 4) == (MM + WAIT, MM + WAIT)
    assert result.makespan_ns == MM + WAIT == 262264
    assert record(result, 0).cores == 2 and record(result, 1).cores == 2
    assert result.stream_busy_ns == {(0, 0): MM + WAIT, (0, 1): ADD + REC}
    assert result.utilisation["cube"] == pytest.approx(2 * MM / (2 * 262264))
    assert result.utilisation["vector"] == pytest.approx(2 * ADD / (4 * 262264))
    assert result.races == [] and result.deadlock is None
    assert (result.waits_executed, result.records_executed, result.events_used) == (1, 1, 1)


def test_a_wait_delays_its_stream() -> None:
    prog = program(
        f"""module {{
{decls(0, 0)}
  func.func @f(%a: {T}, %b: {T}) -> {T} {{
    %x = npu.add %a, %b {{stream.on = @s0}} : {BIN}
    %e = sync.record on @s0
    sync.wait %e on @s1
    %y = npu.add %x, %b {{stream.on = @s1}} : {BIN}
    %f = sync.record on @s1
    sync.wait %f on @s0
    func.return %y : {T}
  }}
}}"""
    )
    result = simulate([prog], TINY)
    assert span(result, 0) == (0, 12388)
    assert span(result, 1) == (12388, 12398)
    assert span(result, 2) == (12398, 12418)  # s1 was free from 0 but had to wait
    assert span(result, 3) == (12418, 24806)
    assert span(result, 4) == (24806, 24816)
    assert span(result, 5) == (24816, 24836)
    assert result.makespan_ns == 24836
    # Every node is on the chain.
    assert result.critical_path == [(0, n) for n in range(7)]
    assert result.event_edges == [(0, 1, 2), (0, 4, 5)]
    # %a lives [0, 12388), %b [0, 24806), %x [0, 24806), %y [12418, 24836): 3 x 2048 bytes
    # at any time once %a is freed and %y born, and at t=0.
    assert result.peak_memory_bytes == 3 * 2048


def test_physical_event_id_binds_a_wait_to_the_latest_record() -> None:
    prog = program(
        f"""module {{
{decls(0, 0, 0)}
  func.func @f(%a: {T}) {{
    %e0 = sync.record on @s0 {{event_id = 0 : i64}}
    %x = npu.add %a, %a {{stream.on = @s1}} : {BIN}
    %e1 = sync.record on @s1 {{event_id = 0 : i64}}
    sync.wait %e0 on @s2
    func.return
  }}
}}"""
    )
    result = simulate([prog], TINY)
    # The wait names %e0 (done at 10 ns) but id 0 was re-recorded by %e1 on s1 after the add.
    assert HappensBefore(prog).run().bound_record == {3: 2}
    assert span(result, 2) == (ADD, ADD + REC)
    assert span(result, 3) == (ADD + REC, ADD + REC + WAIT)
    assert result.event_ids == [0] and result.events_used == 1


# -- cores --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("default_priority", "first", "second"),
    [(1, 2, 1), (0, 1, 2)],
    ids=["priority-wins", "issue-order-on-ties"],
)
def test_stream_priority_wins_contended_cores(
    default_priority: int, first: int, second: int
) -> None:
    prog = program(
        f"""module {{
{decls(default_priority, 0, 0)}
  func.func @f(%m: {M}) {{
    %m0 = npu.matmul %m, %m {{stream.on = @s2}} : {MMT}
    %m1 = npu.matmul %m, %m {{stream.on = @s0}} : {MMT}
    %m2 = npu.matmul %m, %m {{stream.on = @s1}} : {MMT}
    func.return
  }}
}}"""
    )
    result = simulate([prog], TINY)
    # %m0 takes both cube cores at 0; %m1 (s0) and %m2 (s1) queue for them.  With s0 at
    # priority 1, %m2 goes first although issued later; at equal priority, issue order.
    assert span(result, 0) == (0, MM)
    assert span(result, first) == (MM, 2 * MM)
    assert span(result, second) == (2 * MM, 3 * MM)
    assert result.makespan_ns == 3 * MM == 786732
    assert result.utilisation["cube"] == pytest.approx(1.0)
    # The critical path follows the cores from one matmul to the next.
    assert result.critical_path[:3] == [(0, 0), (0, first), (0, second)]


FCS = f"""module {{
{decls(0, 0, 0)}
  func.func @f(%a: {T}, %z: tensor<1024xi1>) {{
    %x = npu.add %a, %a {{stream.on = @s0}} : {BIN}
    %nz = npu.nonzero %z {{stream.on = @s1}} : {NZT}
    %w = npu.add %a, %a {{stream.on = @s2}} : {BIN}
    func.return
  }}
}}"""


def test_full_core_sync_op_holds_cores_while_waiting() -> None:
    result = simulate([program(FCS)], TINY)
    # t=0: %x takes 2 vector cores, %nz the other 2 and holds them; %w (issued after %nz,
    # same priority) gets nothing although 2 cores sit idle under %nz.
    assert span(result, 0) == (0, ADD)
    nz = record(result, 1)
    assert (nz.held_from, nz.start, nz.end, nz.cores) == (0, ADD, ADD + NZ, 4)
    assert span(result, 2) == (ADD + NZ, ADD + NZ + ADD) == (21704, 34092)
    assert result.deadlock is None


def test_core_limits_from_the_attribute_and_from_a_callback() -> None:
    limited = FCS.replace(
        "{stream.on = @s1}", "{stream.on = @s1, coreset.cores = #coreset.cores<vector 2>}"
    )
    result = simulate([program(limited)], TINY)
    # Limited to 2 cores, %nz asks for 2 and gets the 2 free ones at once.
    nz = record(result, 1)
    assert (nz.held_from, nz.start, nz.end, nz.cores) == (0, 0, NZ_ON_2, 2)
    # %w gets cores when %x frees them.
    assert span(result, 2) == (ADD, 2 * ADD)

    seen: list[tuple[int, str]] = []

    def two_vector(prog: Program, node: int, engine: str) -> int | None:
        seen.append((node, engine))
        return 2 if engine == "vector" else None

    again = simulate([program(FCS)], TINY, limits=two_vector)
    assert span(again, 1) == (0, NZ_ON_2)
    assert (1, "vector") in seen


def test_node_costs_charge_what_the_simulator_charges() -> None:
    """`NodeCosts` (for planners) reads the ops as the simulator does: engine pool, cores
    asked for (the callback's limit included), hold-and-wait, and the duration on any
    number of cores -- here the hand-computed figures of this module's docstring."""
    from npuir.backends.npu.simulator import POOL_ENGINES, NodeCosts

    def two_vector(prog: Program, node: int, engine: str) -> int | None:
        return 2 if engine == "vector" else None

    prog = program(FCS)
    costs = NodeCosts(prog, TINY)
    vector = POOL_ENGINES.index("vector")
    assert costs.pool[:3] == [vector] * 3
    assert costs.want[:3] == [2, 4, 2]
    assert costs.holds_and_waits[:3] == [False, True, False]
    assert (costs.duration_ns(0, 2), costs.duration_ns(1, 4)) == (ADD, NZ)
    limited = NodeCosts(prog, TINY, limits=two_vector)
    assert (limited.want[1], limited.duration_ns(1, 2)) == (2, NZ_ON_2)
    mm = program(
        f"""module {{
{decls(0)}
  func.func @f(%m: {M}) {{
    %y = npu.matmul %m, %m {{stream.on = @s0}} : {MMT}
    func.return
  }}
}}"""
    )
    mm_costs = NodeCosts(mm, TINY)
    assert (mm_costs.pool[0], mm_costs.want[0]) == (POOL_ENGINES.index("cube"), 2)
    assert (mm_costs.duration_ns(0, 2), mm_costs.duration_ns(0, 1)) == (MM, 524288 + 100)


# -- block dispatch -----------------------------------------------------------------------------

# A device declared here so the timeline below follows from its numbers alone: 4 vector
# cores at 1 FLOP/ns for f16, 1 KiB vector tiles, launch 100 ns, and HBM so fast that every
# block is compute-bound.
SPREAD_CORES = 4
SPREAD_LAUNCH = 100
SPREAD_FLOP_PER_NS = 1
SPREAD_TILE = 1024
SPREAD_HW = dataclasses.replace(
    TINY,
    name="spread",
    vector_cores=SPREAD_CORES,
    vector_flops={**TINY.vector_flops, "f16": SPREAD_FLOP_PER_NS * 10**9},
    vector_tile_bytes=SPREAD_TILE,
    hbm_bandwidth=10**18,
    launch_ns=SPREAD_LAUNCH,
)


def _add_blocks(elements: int) -> tuple[int, int]:
    """(blockDim, one block's ns) of an f16 add of `elements` on `SPREAD_HW`: one FLOP per
    element, one block per 1 KiB tile of the output, at most one block per core."""
    blocks = min(-(-elements * 2 // SPREAD_TILE), SPREAD_CORES)
    return blocks, -(-elements // blocks) // SPREAD_FLOP_PER_NS


def test_an_op_spreads_onto_cores_that_free_up_mid_run() -> None:
    """CANN's common scheduling mode: an op starts on one free core and its remaining
    blocks take cores as they free up, rather than running on that one core to the end."""
    small, big = 1536, 4096
    prog = program(
        f"""module {{
{decls(1, 0)}
  func.func @f(%a: tensor<{small}xf16>, %b: tensor<{big}xf16>) {{
    %y = npu.add %a, %a {{stream.on = @s1}} : (tensor<{small}xf16>, tensor<{small}xf16>) -> tensor<{small}xf16>
    %x = npu.add %b, %b {{stream.on = @s0}} : (tensor<{big}xf16>, tensor<{big}xf16>) -> tensor<{big}xf16>
    func.return
  }}
}}"""
    )
    result = simulate([prog], SPREAD_HW)
    y_blocks, y_block = _add_blocks(small)
    x_blocks, x_block = _add_blocks(big)
    assert (y_blocks, x_blocks) == (3, 4)
    # t=0: %y (priority 0) takes 3 cores for its 3 blocks, %x starts on the 4th core.
    y = record(result, 0)
    assert (y.start, y.end, y.cores) == (0, SPREAD_LAUNCH + y_block, y_blocks)
    x = record(result, 1)
    assert x.start == 0
    # %x's first block waits out the launch and runs to its end; when %y's cores free up,
    # its 3 other blocks take them at once (the launch is paid once, at the start).
    y_end = SPREAD_LAUNCH + y_block
    first_end = SPREAD_LAUNCH + x_block
    assert y_end < first_end
    rest_end = y_end + x_block
    assert x.end == max(first_end, rest_end) == result.makespan_ns
    assert x.core_steps == ((0, 1), (y_end, 4), (first_end, 3), (rest_end, 0))
    assert x.cores == SPREAD_CORES
    # On the core it started on alone, it would have run its 4 blocks one after another.
    assert x.end < SPREAD_LAUNCH + x_blocks * x_block
    assert result.utilisation["vector"] == pytest.approx(
        (y_blocks * y_end + first_end + 3 * x_block) / (SPREAD_CORES * x.end)
    )


def test_a_started_op_whose_cores_are_taken_is_blocked_in_a_deadlock() -> None:
    """A freed core goes to the higher-priority request, even against an op that has
    started: here an aiv collective collects every core, then waits for a peer that never
    issues it, and the started add is left with blocks and no core."""
    small, big = 1536, 4096
    p0, p1 = programs(
        f"""module {{
{decls(0, 1, 2, 0)}
  func.func @rank0(%a: tensor<{small}xf16>, %b: tensor<{big}xf16>, %c: tensor<512xf16>) {{
    %y = npu.add %a, %a {{stream.on = @s0}} : (tensor<{small}xf16>, tensor<{small}xf16>) -> tensor<{small}xf16>
    %v = npu.reshape %c {{stream.on = @s3}} : (tensor<512xf16>) -> tensor<2x256xf16>
    %e = sync.record on @s3
    sync.wait %e on @s1
    %r = npu.all_reduce %c {{group_size = 2 : i64, mode = "aiv", group = "tp", stream.on = @s1}} : (tensor<512xf16>) -> tensor<512xf16>
    %x = npu.add %b, %b {{stream.on = @s2}} : (tensor<{big}xf16>, tensor<{big}xf16>) -> tensor<{big}xf16>
    func.return
  }}
  func.func @rank1(%a: tensor<{small}xf16>, %b: tensor<{big}xf16>, %c: tensor<512xf16>) {{
    func.return
  }}
}}"""
    )
    result = simulate([p0, p1], SPREAD_HW)
    _, y_block = _add_blocks(small)
    x_blocks, x_block = _add_blocks(big)
    # %x starts at 0 on the core %y leaves; the all_reduce queues at record + wait (the
    # reshape before the record takes no time); %y's 3 cores and then %x's first go to it
    # (priority 1 before 2), and it holds all 4 from %x's first block's end on.
    assert TINY.event_record_ns + TINY.event_wait_ns < SPREAD_LAUNCH + y_block
    first_end = SPREAD_LAUNCH + x_block
    assert SPREAD_LAUNCH + y_block < first_end
    dl = result.deadlock
    assert dl is not None and dl.time_ns == first_end
    x = {(b.rank, b.node): b for b in dl.blocked}[(0, 5)]
    assert (x.reason, x.holds, x.core_holders) == ("cores", 0, ((0, 4, SPREAD_CORES),))
    assert f"has run 1 of its {x_blocks} blocks" in x.detail
    rec = record(result, 5)
    assert (rec.start, rec.end) == (0, first_end)
    assert rec.core_steps == ((0, 1), (first_end, 0))


def test_a_core_limit_caps_the_blocks_and_how_many_run_at_once() -> None:
    big = 4096
    prog = program(
        f"""module {{
{decls(0)}
  func.func @f(%b: tensor<{big}xf16>) {{
    %x = npu.add %b, %b {{stream.on = @s0, coreset.cores = #coreset.cores<vector 2>}} : (tensor<{big}xf16>, tensor<{big}xf16>) -> tensor<{big}xf16>
    func.return
  }}
}}"""
    )
    x = record(simulate([prog], SPREAD_HW), 0)
    # blockDim = min(parallelism, limit) = 2, each block half the op's FLOPs.
    assert (x.start, x.end, x.cores) == (0, SPREAD_LAUNCH + big // 2, 2)


def test_metadata_only_ops_cost_no_launch_and_no_core() -> None:
    prog = program(
        f"""module {{
{decls(0)}
  func.func @f(%a: {T}) -> tensor<32x32xf16> {{
    %r = npu.reshape %a {{stream.on = @s0}} : ({T}) -> tensor<32x32xf16>
    func.return %r : tensor<32x32xf16>
  }}
}}"""
    )
    result = simulate([prog], TINY)
    r = record(result, 0)
    assert (r.start, r.end, r.cores, r.pool) == (0, 0, 0, "")
    assert result.makespan_ns == 0


@pytest.mark.parametrize(
    ("ge_type", "free"), [("Squeeze", True), ("ExpandDims", True), ("Cast", False)]
)
def test_opaque_ops_of_ges_no_task_types_are_free(ge_type: str, free: bool) -> None:
    prog = program(
        f"""module {{
{decls(0)}
  func.func @f(%a: {T}) -> tensor<1x1024xf16> {{
    %r = npu.opaque %a {{ge_type = "{ge_type}", engine = "vector", stream.on = @s0}} : ({T}) -> tensor<1x1024xf16>
    func.return %r : tensor<1x1024xf16>
  }}
}}"""
    )
    r = record(simulate([prog], TINY), 0)
    assert (r.end - r.start == 0) == free and (r.cores == 0) == free
    if not free:
        assert r.end - r.start > TINY.launch_ns


# -- collectives --------------------------------------------------------------------------------

RENDEZVOUS = f"""module {{
{decls(0)}
  func.func @rank0(%x: {T.replace("1024", "512")}) -> tensor<512xf16> {{
    %r = npu.all_reduce %x {{group_size = 2 : i64, MODE stream.on = @s0}} : (tensor<512xf16>) -> tensor<512xf16>
    func.return %r : tensor<512xf16>
  }}
  func.func @rank1(%x: tensor<512xf16>) -> tensor<512xf16> {{
    %y = npu.add %x, %x {{stream.on = @s0}} : (tensor<512xf16>, tensor<512xf16>) -> tensor<512xf16>
    %r = npu.all_reduce %y {{group_size = 2 : i64, MODE stream.on = @s0}} : (tensor<512xf16>) -> tensor<512xf16>
    func.return %r : tensor<512xf16>
  }}
}}"""


def test_two_rank_collective_rendezvous() -> None:
    p0, p1 = programs(RENDEZVOUS.replace("MODE ", ""))
    result = simulate([p0, p1], TINY)
    # Rank 1's add ends at 12388; rank 0's all_reduce waits at the head of its stream.
    assert span(result, 1, rank=1) == (ADD512, ADD512 + AR)
    assert span(result, 0, rank=0) == (ADD512, ADD512 + AR)
    assert result.makespan_ns == 13712
    assert record(result, 0).cores == 0  # sdma: no cores
    assert result.critical_path == [(1, 0), (1, 1), (1, 2)]
    # Ranks swapped: the path ends on the rank that waited and crosses to the late peer.
    swapped = simulate([p1, p0], TINY)
    assert swapped.critical_path == [(0, 0), (1, 0), (1, 1)]

    # Alone, rank 0's group is partial: refused, unless its missing peer is mirrored (it
    # then arrives at the same moment).
    with pytest.raises(ValueError, match=r"group_size = 2 \(ranks 0-1\), but only rank\(s\) 0"):
        simulate([p0], TINY)
    assert span(simulate([p0], TINY, mirror_peers=True), 0) == (0, AR)
    # SPMD: the same program on both ranks.
    spmd = simulate([p1, p1], TINY)
    assert span(spmd, 1, rank=0) == span(spmd, 1, rank=1) == (ADD512, ADD512 + AR)


def test_aiv_collective_holds_vector_cores_while_it_waits_for_peers() -> None:
    p0, p1 = programs(RENDEZVOUS.replace("MODE", 'mode = "aiv",'))
    result = simulate([p0, p1], TINY)
    coll = record(result, 0)
    assert (coll.held_from, coll.start, coll.end, coll.cores) == (0, ADD512, ADD512 + AR, 4)
    assert coll.pool == "vector" and coll.engine == "comm"


# -- deadlock and races -------------------------------------------------------------------------


def test_deadlock_two_full_core_sync_ops_each_holding_half_the_cores() -> None:
    prog = program(
        f"""module {{
{decls(0, 1, 0, 0)}
  func.func @f(%a: {T}, %z: tensor<1024xi1>) {{
    %x = npu.add %a, %a {{stream.on = @s0}} : {BIN}
    %na = npu.nonzero %z {{stream.on = @s1}} : {NZT}
    %e = sync.record on @s1
    %d = sync.record on @s2
    %nb = npu.nonzero %z {{stream.on = @s2}} : {NZT}
    sync.wait %e on @s3
    %y = npu.add %a, %a {{stream.on = @s3}} : {BIN}
    func.return
  }}
}}"""
    )
    result = simulate([prog], TINY)
    # t=0: %x takes 2 vector cores, %na (s1, priority 1) holds the other 2.  t=10: %nb
    # (s2, priority 0) queues.  t=12388: %x frees 2 cores; %nb outranks %na and holds them.
    # Each nonzero now holds 2 of the 4 cores it needs.
    dl = result.deadlock
    assert dl is not None
    assert dl.time_ns == ADD
    assert [(b.node, b.reason) for b in dl.blocked] == [(1, "cores"), (4, "cores"), (5, "event")]
    na, nb, wait = dl.blocked
    assert (na.holds, na.wants, na.pool, na.core_holders) == (2, 4, "vector", ((0, 4, 2),))
    assert (nb.holds, nb.wants, nb.core_holders) == (2, 4, ((0, 1, 2),))
    assert wait.record == 2 and wait.blocked_by == ((0, 1),)
    assert dl.cycle == ((0, 1), (0, 4))
    text = dl.describe()
    assert "'npu.nonzero' (%na)" in text and "holds 2 and waits for 2 more" in text
    assert "wait-for cycle: rank 0 'npu.nonzero' (%na) -> rank 0 'npu.nonzero' (%nb)" in text
    assert "waits for 'sync.record'" in text
    # What ran before the deadlock is still measured.
    assert span(result, 0) == (0, ADD) and result.op(0, 6) is None


def test_deadlock_aiv_collectives_issued_in_opposite_order_on_two_ranks() -> None:
    coll = (
        'npu.all_reduce %x {{group_size = 2 : i64, mode = "aiv", group = "{g}", stream.on = @{s}}}'
    )
    ty = ": (tensor<512xf16>) -> tensor<512xf16>"
    p0, p1 = programs(
        f"""module {{
{decls(0, 0)}
  func.func @rank0(%x: tensor<512xf16>) {{
    %tp = {coll.format(g="tp", s="s0")} {ty}
    %dp = {coll.format(g="dp", s="s1")} {ty}
    func.return
  }}
  func.func @rank1(%x: tensor<512xf16>) {{
    %dp = {coll.format(g="dp", s="s1")} {ty}
    %tp = {coll.format(g="tp", s="s0")} {ty}
    func.return
  }}
}}"""
    )
    result = simulate([p0, p1], TINY)
    dl = result.deadlock
    assert dl is not None and dl.time_ns == 0
    # Each rank's first collective holds all 4 vector cores and waits for its peer, whose
    # copy waits for the cores held by that rank's other collective.
    by_key = {(b.rank, b.node): b for b in dl.blocked}
    assert by_key[(0, 0)].reason == "peers" and by_key[(0, 0)].missing_peers == (1,)
    assert by_key[(0, 0)].holds == 4
    assert by_key[(0, 1)].reason == "cores" and by_key[(0, 1)].core_holders == ((0, 0, 4),)
    assert dl.cycle == ((0, 0), (1, 1), (1, 0), (0, 1))
    assert "waits for collective #0 of group 'tp' on rank(s) 1" in dl.describe()
    # Without the cross-over (same order on both ranks) the program completes.
    ok = simulate([p0, p0], TINY)
    assert ok.deadlock is None and ok.makespan_ns == 2 * AR


RACY = f"""module {{
{decls(0, 0)}
  func.func @f(%a: {T}) -> {T} {{
    %x = npu.add %a, %a {{stream.on = @s0}} : {BIN}
WAIT
    %y = npu.add %x, %a {{stream.on = @s1}} : {BIN}
    %e = sync.record on @s1
    sync.wait %e on @s0
    func.return %y : {T}
  }}
}}"""


def test_race_is_detected_dynamically() -> None:
    racy = program(RACY.replace("WAIT\n", ""))
    result = simulate([racy], TINY)
    # Nothing orders %y after %x: s1 is free at 0 and 2 cores are left, so %y starts at once.
    assert span(result, 1) == (0, ADD)
    assert len(result.races) == 1
    race = result.races[0]
    assert (race.rank, race.consumer, race.producer, race.kind) == (0, 1, 0, DepKind.DATA)
    assert (race.at_ns, race.producer_end) == (0, ADD)
    assert "'npu.add' (%y)" in race.describe() and "'npu.add' (%x)" in race.describe()

    fixed = program(RACY.replace("WAIT", "    %ex = sync.record on @s0\n    sync.wait %ex on @s1"))
    ok = simulate([fixed], TINY)
    assert ok.races == []
    assert span(ok, 3) == (ADD + REC + WAIT, 2 * ADD + REC + WAIT)


def test_unjoined_return_is_a_race() -> None:
    prog = program(
        f"""module {{
{decls(0, 0)}
  func.func @f(%a: {T}) -> {T} {{
    %y = npu.add %a, %a {{stream.on = @s1}} : {BIN}
    func.return %y : {T}
  }}
}}"""
    )
    result = simulate([prog], TINY)
    assert [(r.consumer, r.producer, r.producer_end) for r in result.races] == [(1, 0, ADD)]
    assert prog.kind[1] is NodeKind.RETURN


def test_simulation_is_deterministic_and_rejects_unlowered_programs() -> None:
    prog = program(FCS)
    a, b = simulate([prog], TINY), simulate([prog], TINY)
    assert a.ops == b.ops and a.critical_path == b.critical_path
    with pytest.raises(ValueError, match="at least one program"):
        simulate([], TINY)
    ctx = npuir.make_context()
    module = npuir.parse_text(
        ctx,
        f"""func.func @f(%a: {T}) -> {T} {{
  %x = npu.add %a, %a : {BIN}
  func.return %x : {T}
}}""",
    )
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    with pytest.raises(ValueError, match="run stream-partition first"):
        simulate([build_program(func)], TINY)


def test_deadlock_on_a_collective_the_peer_never_issues() -> None:
    p0, _ = programs(RENDEZVOUS.replace("MODE ", ""))
    lonely = programs(
        f"""module {{
{decls(0)}
  func.func @rank1(%x: tensor<512xf16>) {{
    %y = npu.add %x, %x {{stream.on = @s0}} : (tensor<512xf16>, tensor<512xf16>) -> tensor<512xf16>
    func.return
  }}
}}"""
    )[0]
    result = simulate([p0, lonely], TINY)
    dl = result.deadlock
    assert dl is not None and dl.time_ns == ADD512  # when rank 1 ran out of work
    (blocked,) = dl.blocked
    assert (blocked.rank, blocked.node, blocked.reason) == (0, 0, "peers")
    assert blocked.missing_peers == (1,) and blocked.blocked_by == ()
    assert dl.cycle == ()
    assert "rank 1 never issues it" in dl.describe()


def test_a_cache_reuses_what_was_read_from_the_ir() -> None:
    prog = program(FCS)
    cache = SimCache(TINY)
    first = simulate([prog], TINY, cache=cache)
    assert len(cache.ops) == 3 and len(cache.works) == 2  # the two adds share one OpWork
    again = simulate([prog], TINY, cache=cache)
    assert again.ops == first.ops
    with pytest.raises(ValueError, match="made for tiny, not 910b2"):
        simulate([prog], PRESETS["910b2"], cache=cache)


def test_the_simulator_refuses_unlowered_core_limits_instead_of_ignoring_them() -> None:
    """A `coreset.limit` scope that `coreset-lower` has not resolved would silently be no
    limit at all; the simulator refuses it unless the caller resolves limits itself."""
    from npuir.analysis.core_limits import CoreLimits, limit_fn
    from npuir.backends.npu.simulator import UnloweredScopes

    text = f"""
    stream.decl @s0 "default" priority 0
    func.func @f(%a: {T}) -> {T} {{
      %r = coreset.limit vector 1 -> {T} {{
        %x = npu.exp %a {{stream.on = @s0}} : ({T}) -> {T}
        coreset.yield %x : {T}
      }}
      func.return %r : {T}
    }}
    """
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, text)
    (func,) = [f for f in module.ops if isinstance(f, FuncOp)]
    prog = build_program(func, module_streams(module))
    with pytest.raises(UnloweredScopes, match="coreset-lower"):
        simulate([prog], TINY)
    # Resolved by the caller, the limit acts: one vector core is slower than all of them.
    limited = simulate([prog], TINY, limits=limit_fn(CoreLimits(module, TINY).run()))
    unlimited = simulate([prog], TINY, limits=lambda p, n, e: None)
    assert limited.makespan_ns > unlimited.makespan_ns
    npuir.run_passes(ctx, module, npuir.build_pipeline("coreset-lower"))
    lowered = simulate([build_program(func, module_streams(module))], TINY)
    assert limited.makespan_ns == lowered.makespan_ns
