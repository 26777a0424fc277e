"""Roofline cost model: how many integer nanoseconds one op takes on a `Hardware`.

The model sees an op only through `OpWork` (engine, FLOPs, HBM bytes, dtype, independent
tiles, and for collectives the kind, group size and bytes per rank), so its formulas do not
depend on the IR; `op_work` (at the end of this module) is the one place that reads an `npu`
op into an `OpWork`, for the simulator, the schedule layer and the benchmarks alike.

Compute ops
-----------
An op granted ``c`` cores of its engine takes::

    compute = flops / (c * flops_per_core(engine, dtype))
    memory  = bytes / (hbm_bandwidth * hbm_share)
    duration_ns = max(1, ceil(max(compute, memory)))        # in ns

`parallelism` says how many cores an op can use: ``min(tiles, cores of its engine)``, where
tiles count independent output blocks (`matmul_tiles`) or UB-sized chunks (`vector_tiles`).
Launch overhead is not included; the simulator adds ``hw.launch_ns`` itself.

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

import math
from dataclasses import dataclass
from fractions import Fraction

from xdsl.dialects.builtin import TensorType

from npuir.backends.npu.hardware import CUBE_DTYPES, VECTOR_DTYPES, Hardware
from npuir.dialects.npu import (
    DYN,
    ENGINES,
    CollectiveOp,
    CommMode,
    Conv2dOp,
    NpuOp,
    OpaqueOp,
    ReshapeOp,
    dtype_name,
    shape_of,
    tensor_bytes,
)

__all__ = [
    "COLLECTIVES",
    "COMM_MODES",
    "NO_TASK_GE_TYPES",
    "WORK_ENGINES",
    "OpWork",
    "collective_ns",
    "duration_ns",
    "matmul_tiles",
    "op_work",
    "parallelism",
    "runs_without_task",
    "solo_duration_ns",
    "static_hbm_share",
    "vector_tiles",
]

NS_PER_S = 1_000_000_000

# "comm" is an engine here but not a core pool: collectives run on the link.
WORK_ENGINES: tuple[str, ...] = ENGINES
COLLECTIVES: tuple[str, ...] = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all")
COMM_MODES: tuple[str, ...] = tuple(CommMode)

# A bandwidth share is turned into an exact fraction so that 0.1 means 1/10, not the binary
# float just above it, which could push a ceil up by one nanosecond.
_SHARE_DENOMINATOR = 1_000_000


@dataclass(frozen=True)
class OpWork:
    """What one op asks of the device, independent of the IR that produced it.

    For compute engines `flops` and `bytes` feed the roofline and `tiles` bounds parallelism;
    for ``engine == "comm"`` only `collective`, `group_size`, `comm_bytes` and `mode` matter.
    """

    engine: str
    """"cube", "vector", "aicpu" or "comm"."""
    flops: int = 0
    """Floating-point (or integer) operations; a multiply-add counts as 2."""
    bytes: int = 0
    """Bytes read from and written to HBM."""
    dtype: str = "f16"
    """Element type that sets the throughput: f16, bf16, f32, i8, i32, i64 or i1."""
    tiles: int = 1
    """Independent work units at the device's tile size (see `matmul_tiles`, `vector_tiles`)."""
    collective: str | None = None
    """For comm ops: all_reduce, reduce_scatter, all_gather or all_to_all."""
    group_size: int = 1
    """For comm ops: ranks in the group."""
    comm_bytes: int = 0
    """For comm ops: bytes of the input tensor on each rank."""
    mode: str = "sdma"
    """For comm ops: "sdma" (DMA engines, no cores) or "aiv" (driven by vector cores)."""

    def __post_init__(self) -> None:
        if self.engine not in WORK_ENGINES:
            raise ValueError(
                f"unknown engine {self.engine!r}; expected one of {', '.join(WORK_ENGINES)}"
            )
        for field, minimum in (
            ("flops", 0),
            ("bytes", 0),
            ("tiles", 1),
            ("group_size", 1),
            ("comm_bytes", 0),
        ):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ValueError(f"OpWork.{field} must be an integer >= {minimum}, got {value!r}")
        if self.dtype not in VECTOR_DTYPES:
            raise ValueError(
                f"unknown dtype {self.dtype!r}; expected one of {', '.join(sorted(VECTOR_DTYPES))}"
            )
        if self.mode not in COMM_MODES:
            raise ValueError(
                f"unknown comm mode {self.mode!r}; expected one of {', '.join(COMM_MODES)}"
            )
        if self.engine == "comm":
            if self.collective not in COLLECTIVES:
                raise ValueError(
                    f"comm op needs a collective in {', '.join(COLLECTIVES)}, "
                    f"got {self.collective!r}"
                )
        elif self.collective is not None:
            raise ValueError(f"{self.engine} op cannot carry collective {self.collective!r}")


def matmul_tiles(hw: Hardware, m: int, n: int, batch: int = 1) -> int:
    """Output blocks of a (batched) ``m x n`` matmul result at the cube tile size."""
    if m < 1 or n < 1 or batch < 1:
        raise ValueError(f"matmul extents must be positive, got m={m}, n={n}, batch={batch}")
    return batch * _ceil_div(m, hw.cube_tile_m) * _ceil_div(n, hw.cube_tile_n)


def vector_tiles(hw: Hardware, nbytes: int) -> int:
    """UB-sized chunks in `nbytes` of vector work; at least 1 so every op has a unit."""
    if nbytes < 0:
        raise ValueError(f"byte count must be non-negative, got {nbytes}")
    return max(1, _ceil_div(nbytes, hw.vector_tile_bytes))


def parallelism(hw: Hardware, work: OpWork) -> int:
    """Cores of its engine that `work` can use at once.

    Compute ops: ``min(tiles, cores of the engine)``. Collectives: 0 in sdma mode (they hold
    no compute cores); every vector core in aiv mode (the caller applies any limit).
    """
    if work.engine == "comm":
        return hw.vector_cores if work.mode == CommMode.AIV else 0
    return min(work.tiles, hw.cores(work.engine))


def static_hbm_share(hw: Hardware, engine: str, cores: int) -> float:
    """Fraction of HBM bandwidth an op holding `cores` of `engine`'s cores is granted.

    ``cores / cores of the engine``, capped at 1; see the module docstring for why. Collectives
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
        assert work.collective is not None  # guaranteed by OpWork validation
        return collective_ns(hw, work.collective, work.group_size, work.comm_bytes)

    available = hw.cores(work.engine)
    if not 1 <= cores <= available:
        raise ValueError(f"{work.engine} op needs 1..{available} cores on {hw.name}, got {cores}")
    if not 0.0 < hbm_share <= 1.0:
        raise ValueError(f"hbm_share must be in (0, 1], got {hbm_share}")

    rate = hw.flops_per_core(work.engine, work.dtype)
    compute = Fraction(work.flops * NS_PER_S, cores * rate)
    share = Fraction(hbm_share).limit_denominator(_SHARE_DENOMINATOR)
    memory = Fraction(work.bytes * NS_PER_S) / (hw.hbm_bandwidth * share)
    return max(1, math.ceil(max(compute, memory)))


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


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


NO_TASK_GE_TYPES: frozenset[str] = frozenset(
    {
        "Reshape",
        "Bitcast",
        "Flatten",
        "FlattenV2",
        "ExpandDims",
        "ReFormat",
        "Squeeze",
        "SqueezeV2",
        "SqueezeV3",
        "Unsqueeze",
        "UnsqueezeV2",
        "UnsqueezeV3",
        "PhonyConcat",
        "PhonySplit",
    }
)
"""GE operator types that run without a device task: GE's local engine registers them with
its ``NoOp`` creator, whose task generation emits nothing (hicann/ge,
``engines/local_engine/ops_kernel_store/op/no_op.cc``; control-flow and data ops of that
list are left out, npuir has no such ops).  They only change a tensor's metadata."""


def runs_without_task(op: NpuOp) -> bool:
    """Whether GE runs `op` without a device task (a metadata-only view): `npu.reshape`, or
    an `npu.opaque` of a type in `NO_TASK_GE_TYPES`.  Such an op costs no launch, holds no
    core and takes no time; the simulator and the bound both use this test."""
    if isinstance(op, ReshapeOp):
        return True
    return isinstance(op, OpaqueOp) and op.ge_type.data in NO_TASK_GE_TYPES


# ---------------------------------------------------------------------------------------------
# Reading an op
# ---------------------------------------------------------------------------------------------


def _dtype(ty: object, allowed: frozenset[str]) -> str:
    if not isinstance(ty, TensorType):
        return "f16"
    name = dtype_name(ty.element_type)  # pyright: ignore[reportUnknownMemberType]
    # An element type the throughput tables do not list (e.g. i16) is costed as f32, the
    # slowest common floating type, rather than refused: the simulator must run any valid IR.
    return name if name in allowed else "f32"


def op_work(op: NpuOp, hw: Hardware) -> OpWork:
    """What `op` asks of the device, for the cost model.

    dtype is the first operand's element type.  Tiles: for the cube, the result's last two
    dims (M, N) and the product of the leading ones (batch) through `matmul_tiles`; for the
    vector unit, the largest tensor the op reads or writes through `vector_tiles` (the output
    for elementwise ops, the input for reductions).  Collectives carry their kind, group size,
    mode and the bytes of their input tensor.  Dynamic dims count as 1, as in the `npu` ops.
    """
    engine = op.engine.value
    first = op.operands[0].type if op.operands else op.results[0].type
    if engine == "comm":
        assert isinstance(op, CollectiveOp)
        return OpWork(
            engine="comm",
            flops=op.flops(),
            bytes=op.bytes_moved(),
            dtype=_dtype(first, VECTOR_DTYPES),
            collective=op.name.removeprefix("npu."),
            group_size=op.group_size,
            comm_bytes=tensor_bytes(op.input.type),
            mode=op.mode,
        )
    if engine == "cube":
        if isinstance(op, Conv2dOp):
            # A convolution runs as an implicit GEMM: output pixels x output channels.
            m, n, _ = op.gemm_extent()
            tiles = matmul_tiles(hw, m, n)
        else:
            out = op.results[0].type if op.results else first
            shape = tuple(1 if d == DYN else d for d in shape_of(out))
            m, n = (shape[-2], shape[-1]) if len(shape) >= 2 else (1, shape[0] if shape else 1)
            tiles = matmul_tiles(hw, m, n, math.prod(shape[:-2]))
        dtype = _dtype(first, CUBE_DTYPES)
    elif engine == "vector":
        tensors = [v.type for v in op.operands] + [r.type for r in op.results]
        largest = max((tensor_bytes(t) for t in tensors if isinstance(t, TensorType)), default=0)
        tiles = vector_tiles(hw, largest)
        dtype = _dtype(first, VECTOR_DTYPES)
    else:
        tiles = 1
        dtype = _dtype(first, VECTOR_DTYPES)
    return OpWork(engine=engine, flops=op.flops(), bytes=op.bytes_moved(), dtype=dtype, tiles=tiles)
