"""The timing rules: what every task costs on a `Hardware`, and when it may start.

This module is the one owner of time in npuir's device model.  The simulator
(`npuir.backends.npu.simulator`) applies these rules; the planners that estimate a schedule
(the list scheduler, auto's estimates, minidag, the exact oracle), the lower bound
(`npuir.schedule.bounds`, which cites the rule each of its terms relies on), calibration,
explanations and advice ask them.  None of them reads a timing field of `Hardware`
(``launch_ns``, ``event_record_ns``, ``event_wait_ns``, ``hbm_bandwidth``, ``link_*``,
``*_flops``) itself, so changing what a task costs -- say, an event wait that also pays a
launch -- is an edit here (and to the bound's proof of the terms that use the rule).

Tasks and when they run
-----------------------
Every node of a lowered program is a task on one FIFO stream; a stream starts its head
task once the task before it has ended.  On top of that:

- **Launch** (`launch_cost`).  A task with a device kernel (an ordinary op, a hold-and-wait
  op, a collective) pays one launch at its start; its blocks compute only once it is
  over.  An op GE runs without a device task
  (`cost.runs_without_task`) pays none and takes no time.
- **Record** (`record_cost`).  A `sync.record` holds its stream for `record_cost`; its event
  has fired when it ends (`record_end`: issued right after its producer, at the producer's
  end plus `record_cost`).
- **Wait** (`wait_cost`).  A `sync.wait` may start once its stream is free and the record it
  is bound to has ended; it then holds its stream for `wait_cost` (`wait_end`).  So a
  consumer on another stream than its producer starts at least `event_cost` (a record and a
  wait) after the producer's end.
- **A core grant.**  An op granted ``c`` of its engine's ``C`` cores computes with ``c``
  cores and ``c / C`` of the HBM bandwidth (`static_hbm_share`).  An *ordinary* op of ``B``
  blocks (its blockDim) runs each block to completion on one core in `block_ns` (the
  roofline on ``B`` cores with a ``B / C`` share, so an op granted all its blocks' cores at
  its start takes exactly the roofline's time on ``B`` cores); blocks dispatched during its
  launch wait for it, later ones start at once, and the op ends with its last block.  A
  *hold-and-wait* op (``full_core_sync``, an aiv collective) granted ``g`` cores holds them
  all from its start to its end and runs `held_ns`: a launch plus the roofline on
  ``min(g, parallelism)`` cores with a ``g / C`` share.  A *collective* runs
  `collective_task_ns`: a launch plus its ring time, whatever cores it holds.

The roofline
------------
An op granted ``c`` cores of its engine takes::

    compute = flops / (c * flops_per_core(engine, dtype))
    memory  = bytes / (hbm_bandwidth * hbm_share)
    duration_ns = max(1, ceil(max(compute, memory)))        # in ns

with ``c`` at most `cost.parallelism` (the cores its tiles can use).  Launch overhead is not
included: `task_ns`, `held_ns` and `collective_task_ns` add it, and an ordinary op pays it
once before its blocks (`block_ns` leaves it out).

Mixed kernels
-------------
A fused kernel with work on both AI Core engines (fused attention: `OpWork.vector_flops`
beside its cube `flops`) holds cube cores, and each of them drives its paired vector cores
(`paired_vector_cores`); FlashAttention pipelines the two, the cube multiplying one block
while the vectors take the softmax of the last, so the compute term is the longer of the
two::

    compute = max(flops / (c * cube rate), vector_flops / (c * pair * vector rate))

HBM sharing
-----------
HBM bandwidth is shared by a static partition so the simulator needs no bandwidth events: an
op holding ``c`` of its engine's ``C`` cores gets ``c / C`` of the device bandwidth
(`static_hbm_share`). One op on every core of its engine can saturate HBM, as a full-width
vector kernel does on the real part, and ops splitting an engine's cores split its bandwidth
fairly. The price of this simplicity: cube and vector ops running at the same time may
together be granted up to twice the real bandwidth. Matmuls are usually compute-bound, so
the error stays small in practice; callers wanting a stricter split pass their own
``hbm_share`` to `duration_ns`.

Collectives
-----------
Collectives use a ring over one link per step (``B`` = `OpWork.comm_bytes`, the bytes of the
op's input tensor on each rank; ``G`` = group size; ``bw`` = ``hw.link_bandwidth``; ``lat`` =
``hw.link_latency_ns``)::

    all_reduce      2(G-1)/G * B / bw + 2(G-1) * lat
    reduce_scatter   (G-1)/G * B / bw +  (G-1) * lat     input B, output B/G per rank
    all_gather        (G-1) * B / bw +  (G-1) * lat     input B, output G*B per rank
    all_to_all       (G-1)/G * B / bw +  (G-1) * lat     B/G to each peer

(all_gather is the usual ``(G-1)/G * S`` with ``S = G*B`` its output.) ``G == 1`` costs 1 ns.
Mode ``"sdma"`` moves data with the DMA engines and holds no compute cores; mode ``"aiv"``
drives the copy from vector cores, which it holds for the whole op. Assumption: both modes
see the same link time, since the link, not the issuing engine, is the bottleneck.

An MC2 kernel (`npu.matmul_all_reduce`) fuses a matmul with its collective and overlaps
the two tile by tile: it takes the longer of its ring time and its matmul (`comm_ns`).

Hand calculations on the ``tiny`` preset
----------------------------------------
``tiny`` has 2 cube and 4 vector cores, 1 FLOP/ns per core for f16 (cube and vector), HBM and
link at 1 byte/ns, 32x32 cube tiles, 1 KiB vector tiles, 100 ns per link step:

- f16 matmul 64x64x64: flops = 2*64^3 = 524288, bytes = 3 * 64*64 * 2 = 24576,
  `matmul_tiles` = 2*2 = 4, `parallelism` = min(4, 2) = 2.
  On 1 core, share 1.0: max(524288, 24576) = **524288 ns** (compute-bound).
  On 2 cores, share 1.0: max(262144, 24576) = **262144 ns**.
- f16 matmul 64x64x1 (outer product): flops = 8192, bytes = (64 + 64 + 4096) * 2 = 8448.
  On 2 cores, share 1.0: max(4096, 8448) = **8448 ns** (memory-bound).
- f16 elementwise add of 1024 elements: flops = 1024, bytes = 3*1024*2 = 6144.
  `vector_tiles(tiny, 2048)` (output bytes) = 2. On 1 core, share 1.0: max(1024, 6144) =
  **6144 ns**; on 2 cores with `static_hbm_share` = 2/4 = 0.5: max(512, 12288) = **12288 ns**;
  on 4 cores, share 1.0: max(256, 6144) = **6144 ns**.
- f32 on the cube runs at 1 FLOP per 4 ns: 1000 FLOP, 0 bytes, 1 core = **4000 ns**.
- Collectives with B = 1024 bytes:
  all_reduce G=2: 1024 + 200 = **1224 ns**; G=4: 1536 + 600 = **2136 ns**.
  reduce_scatter G=2: 512 + 100 = **612 ns**; G=4: 768 + 300 = **1068 ns**.
  all_gather G=2: 1024 + 100 = **1124 ns**; G=4: 3072 + 300 = **3372 ns**.
  all_to_all G=2: 512 + 100 = **612 ns**; G=4: 768 + 300 = **1068 ns**.
  Any collective with G=1: **1 ns**.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from npuir.backends.npu.hardware import Hardware
from npuir.dialects.npu import CommMode

from .cost import COLLECTIVES, OpWork, parallelism

__all__ = [
    "NS_PER_S",
    "arithmetic_ns",
    "block_ns",
    "collective_ns",
    "collective_task_ns",
    "comm_ns",
    "compute_bound",
    "duration_ns",
    "event_cost",
    "fitted_hardware",
    "held_ns",
    "launch_cost",
    "ns_per_byte",
    "ns_per_flop",
    "paired_vector_cores",
    "record_cost",
    "record_end",
    "solo_duration_ns",
    "solo_task_ns",
    "static_hbm_share",
    "task_ns",
    "wait_cost",
    "wait_end",
]

NS_PER_S = 1_000_000_000

# A bandwidth share is turned into an exact fraction so that 0.1 means 1/10, not the binary
# float just above it, which could push a ceil up by one nanosecond.
_SHARE_DENOMINATOR = 1_000_000


# ---------------------------------------------------------------------------------------------
# Launch and events
# ---------------------------------------------------------------------------------------------


def launch_cost(hw: Hardware) -> int:
    """The launch a task with a device kernel pays once, at its start."""
    return hw.launch_ns


def record_cost(hw: Hardware) -> int:
    """How long a `sync.record` holds its stream."""
    return hw.event_record_ns


def wait_cost(hw: Hardware) -> int:
    """How long a `sync.wait` holds its stream once its record has ended."""
    return hw.event_wait_ns


def event_cost(hw: Hardware) -> int:
    """The least a dependence across streams adds between the producer's end and the
    consumer's start: the record after the producer, then the wait before the consumer."""
    return record_cost(hw) + wait_cost(hw)


def record_end(hw: Hardware, free_at: int) -> int:
    """When a record that its stream reaches at `free_at` (e.g. its producer's end) has
    executed, so that waits bound to it may start."""
    return free_at + record_cost(hw)


def wait_end(hw: Hardware, free_at: int, released: int) -> int:
    """When a wait ends that its stream reaches at `free_at`, bound to a record that ends at
    `released`: it starts at the later of the two and holds the stream `wait_cost`."""
    return (free_at if free_at > released else released) + wait_cost(hw)


# ---------------------------------------------------------------------------------------------
# Tasks on a core grant
# ---------------------------------------------------------------------------------------------


def block_ns(hw: Hardware, work: OpWork, blocks: int) -> int:
    """One block's time of an ordinary op of `blocks` blocks: the roofline on `blocks`
    cores with their share of HBM (each block runs on one core with ``1/C`` of it)."""
    return duration_ns(hw, work, blocks, static_hbm_share(hw, work.engine, blocks))


def held_ns(hw: Hardware, work: OpWork, granted: int, par: int) -> int:
    """A hold-and-wait op's run on `granted` cores, launch included: it computes on at most
    `par` of them (its parallelism; 0: on all) with the HBM share of all it holds."""
    used = min(granted, par) if par else granted
    share = static_hbm_share(hw, work.engine, granted)
    return launch_cost(hw) + duration_ns(hw, work, used, share)


def task_ns(hw: Hardware, work: OpWork, cores: int, hbm_share: float = 1.0) -> int:
    """A task's run on `cores` cores with `hbm_share` of HBM, launch included."""
    return launch_cost(hw) + duration_ns(hw, work, cores, hbm_share)


def collective_task_ns(hw: Hardware, work: OpWork) -> int:
    """A collective's run, launch included: its ring time, whatever cores it holds."""
    assert work.collective is not None, "collective_task_ns needs a comm op's work"
    return launch_cost(hw) + comm_ns(hw, work)


def solo_task_ns(hw: Hardware, work: OpWork) -> int:
    """`solo_duration_ns` plus the launch: the task alone on the device."""
    return launch_cost(hw) + solo_duration_ns(hw, work)


def arithmetic_ns(hw: Hardware, work: OpWork) -> float:
    """The op's arithmetic at one core's rate: the least core-time its FLOPs occupy, however
    many cores or blocks it runs on (memory and launch left out)."""
    return work.flops * NS_PER_S / hw.flops_per_core(work.engine, work.dtype)


def compute_bound(hw: Hardware, work: OpWork) -> bool:
    """Whether `work`, alone on all the cores it can use, is limited by arithmetic rather
    than by HBM bandwidth (the roofline's compute term is at least its memory term)."""
    rate = hw.flops_per_core(work.engine, work.dtype) * max(1, parallelism(hw, work))
    return work.flops * hw.hbm_bandwidth >= work.bytes * rate


# ---------------------------------------------------------------------------------------------
# The roofline
# ---------------------------------------------------------------------------------------------


def static_hbm_share(hw: Hardware, engine: str, cores: int) -> float:
    """Fraction of HBM bandwidth an op holding `cores` of `engine`'s cores is granted.

    ``cores / cores of the engine``, capped at 1; see *HBM sharing* above for why. Collectives
    do not draw on this budget (their cost is link time), so ``"comm"`` returns 1.0.
    """
    if engine == "comm":
        return 1.0
    total = hw.cores(engine)
    if cores < 1:
        raise ValueError(f"{engine} op needs at least 1 core, got {cores}")
    return min(1.0, cores / total)


def duration_ns(hw: Hardware, work: OpWork, cores: int, hbm_share: float = 1.0) -> int:
    """Integer nanoseconds `work` takes on `cores` cores with `hbm_share` of HBM bandwidth.

    Roofline ``max(compute, memory)`` rounded up, at least 1 ns; collectives use the ring
    model (see `collective_ns`). Launch overhead is not included.

    Raises `ValueError` if a compute op gets fewer than 1 or more than the device's cores of
    its engine, if an aiv collective gets no vector core, or if `hbm_share` is not in (0, 1].
    """
    if work.engine == "comm":
        if work.mode == CommMode.AIV and not 1 <= cores <= hw.vector_cores:
            raise ValueError(f"aiv collective needs 1..{hw.vector_cores} vector cores, got {cores}")
        if cores < 0:
            raise ValueError(f"core count must be non-negative, got {cores}")
        return comm_ns(hw, work)

    available = hw.cores(work.engine)
    if not 1 <= cores <= available:
        raise ValueError(f"{work.engine} op needs 1..{available} cores on {hw.name}, got {cores}")
    if not 0.0 < hbm_share <= 1.0:
        raise ValueError(f"hbm_share must be in (0, 1], got {hbm_share}")

    rate = hw.flops_per_core(work.engine, work.dtype)
    compute = Fraction(work.flops * NS_PER_S, cores * rate)
    if work.vector_flops:
        compute = max(compute, _paired_vector_ns(hw, work, cores))
    share = Fraction(hbm_share).limit_denominator(_SHARE_DENOMINATOR)
    memory = Fraction(work.bytes * NS_PER_S) / (hw.hbm_bandwidth * share)
    return max(1, math.ceil(max(compute, memory)))


def paired_vector_cores(hw: Hardware) -> int:
    """Vector cores working beside each cube core in a mixed kernel: the AIV half of an
    AI Core has two vector cores per cube core on the 910B (1:2, `Hardware.vector_cores`),
    so the device's ratio, at least one."""
    return max(1, hw.vector_cores // hw.cube_cores)


def _paired_vector_ns(hw: Hardware, work: OpWork, cube_cores: int) -> Fraction:
    vector_cores = cube_cores * paired_vector_cores(hw)
    rate = hw.flops_per_core("vector", work.dtype)
    return Fraction(work.vector_flops * NS_PER_S, vector_cores * rate)


def comm_ns(hw: Hardware, work: OpWork) -> int:
    """A collective's time without its launch: its ring time (`collective_ns`), or for an MC2
    kernel (`OpWork.cube_flops`) the longer of that and its matmul, which it overlaps tile
    by tile.  The matmul runs on every cube core with all of HBM (assumption: the MC2 kernel
    is launched on every AI Core; the simulator holds no cube core for it, as for any
    collective, so a cube op beside it is not slowed)."""
    assert work.collective is not None  # guaranteed by OpWork validation
    ring = collective_ns(hw, work.collective, work.group_size, work.comm_bytes)
    if not work.cube_flops:
        return ring
    rate = hw.flops_per_core("cube", work.dtype if work.dtype in hw.cube_flops else "f32")
    compute = Fraction(work.cube_flops * NS_PER_S, hw.cube_cores * rate)
    memory = Fraction(work.bytes * NS_PER_S, hw.hbm_bandwidth)
    return max(ring, math.ceil(max(compute, memory)))


def collective_ns(hw: Hardware, collective: str, group_size: int, comm_bytes: int) -> int:
    """Ring-model nanoseconds of `collective` over `group_size` ranks, `comm_bytes` per rank.

    `comm_bytes` is the input tensor's size on each rank; formulas are in the module docstring.
    A group of one costs 1 ns (the op still occupies its stream slot).
    """
    if group_size < 1:
        raise ValueError(f"group size must be positive, got {group_size}")
    if comm_bytes < 0:
        raise ValueError(f"comm bytes must be non-negative, got {comm_bytes}")
    g = group_size
    if g == 1:
        return 1
    if collective == "all_reduce":
        volume = Fraction(2 * (g - 1), g) * comm_bytes
        hops = 2 * (g - 1)
    elif collective in ("reduce_scatter", "all_to_all"):
        volume = Fraction(g - 1, g) * comm_bytes
        hops = g - 1
    elif collective == "all_gather":
        volume = Fraction((g - 1) * comm_bytes)
        hops = g - 1
    else:
        raise ValueError(
            f"unknown collective {collective!r}; expected one of {', '.join(COLLECTIVES)}"
        )
    link = volume * NS_PER_S / hw.link_bandwidth
    return max(1, math.ceil(link + hops * hw.link_latency_ns))


def solo_duration_ns(hw: Hardware, work: OpWork) -> int:
    """Duration of `work` alone on the device, on every core it can use.

    Uses `parallelism` and `static_hbm_share`; handy for estimates and for passes that rank
    ops before any schedule exists.
    """
    cores = parallelism(hw, work)
    if work.engine == "comm":
        return duration_ns(hw, work, cores)
    return duration_ns(hw, work, cores, static_hbm_share(hw, work.engine, cores))


# ---------------------------------------------------------------------------------------------
# Calibration: the roofline's rates as unknowns
# ---------------------------------------------------------------------------------------------


def ns_per_flop(hw: Hardware, engine: str, dtype: str) -> float:
    """Nanoseconds one core of `engine` takes per FLOP on `dtype` (the roofline's ``u``)."""
    return NS_PER_S / hw.flops_per_core(engine, dtype)


def ns_per_byte(hw: Hardware) -> float:
    """Nanoseconds per byte at the full HBM bandwidth (the roofline's ``v``)."""
    return NS_PER_S / hw.hbm_bandwidth


def fitted_hardware(
    base: Hardware,
    launch: float,
    per_flop: Mapping[tuple[str, str], float],
    per_byte: float | None,
) -> tuple[Hardware, tuple[str, ...]]:
    """`base` with the launch, the per-core rates of `per_flop` (ns per FLOP by engine and
    dtype) and, if given, the HBM bandwidth of `per_byte` (ns per byte) replaced: the
    device whose roofline has those unknowns, and the names of the fields set.  Raises
    `HardwareError` if they do not make a valid device."""
    changes: dict[str, Any] = {"launch_ns": round(launch), "name": f"{base.name}-fitted"}
    fitted = ["launch_ns"]
    tables = {"cube": dict(base.cube_flops), "vector": dict(base.vector_flops)}
    for engine, dtype in sorted(per_flop):
        rate = round(NS_PER_S / per_flop[(engine, dtype)])
        if engine == "aicpu":
            changes["aicpu_flops"] = rate
            fitted.append("aicpu_flops")
        else:
            tables[engine][dtype] = rate
            fitted.append(f"{engine}_flops.{dtype}")
    changes["cube_flops"] = tables["cube"]
    changes["vector_flops"] = tables["vector"]
    if per_byte is not None:
        changes["hbm_bandwidth"] = round(NS_PER_S / per_byte)
        fitted.append("hbm_bandwidth")
    return dataclasses.replace(base, **changes), tuple(fitted)
