"""What an op asks of the device: `OpWork`, read from an `npu` op by `op_work`.

The timing model (`npuir.backends.npu.timing`) sees an op only through `OpWork` (engine,
FLOPs, HBM bytes, dtype, independent tiles, and for collectives the kind, group size and
bytes per rank), so its formulas do not depend on the IR; `op_work` (at the end of this
module) is the one place that reads an `npu` op into an `OpWork`, for the simulator, the
schedule layer and the benchmarks alike.  This module says how much work there is and how
many cores it can use (`parallelism`); how long it takes is `timing`'s to say.

`parallelism` says how many cores an op can use: ``min(tiles, cores of its engine)``, where
tiles count independent output blocks (`matmul_tiles`) or UB-sized chunks (`vector_tiles`).
Collectives use no compute core in mode ``"sdma"`` (the DMA engines move the data) and
every vector core in mode ``"aiv"`` (the copy is driven from vector cores).
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
    Engine,
    NpuOp,
    OpaqueOp,
    ReshapeOp,
    dtype_name,
    shape_of,
    tensor_bytes,
)
from npuir.dialects.npu_fused import FusionAttentionOp, MatmulAllReduceOp, attention_pairs

__all__ = [
    "ATTENTION_Q_ROWS",
    "COLLECTIVES",
    "COMM_MODES",
    "NO_TASK_GE_TYPES",
    "WORK_ENGINES",
    "OpWork",
    "attention_work",
    "matmul_tiles",
    "mc2_work",
    "op_work",
    "parallelism",
    "runs_without_task",
    "vector_tiles",
]

# "comm" is an engine here but not a core pool: collectives run on the link.
WORK_ENGINES: tuple[str, ...] = ENGINES
COLLECTIVES: tuple[str, ...] = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all")
COMM_MODES: tuple[str, ...] = tuple(CommMode)


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
    cube_flops: int = 0
    """For an MC2 collective (a matmul fused with its collective): the matmul's FLOPs, run on
    the cube and overlapped with the communication (`timing.comm_ns`)."""
    vector_flops: int = 0
    """For a mixed kernel on the cube (fused attention): its vector work, which runs on the
    vector cores paired with its cube cores, overlapped with the cube's (`timing`)."""

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
            ("vector_flops", 0),
            ("cube_flops", 0),
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
        if self.cube_flops and self.engine != "comm":
            raise ValueError(f"only a collective fuses a matmul (MC2), not a {self.engine} op")
        if self.vector_flops and self.engine != "cube":
            raise ValueError(f"only a cube op has vector work of its own, not a {self.engine} op")


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
    if isinstance(op, FusionAttentionOp) and op.engine is Engine.CUBE:
        return attention_work(op, hw)
    if isinstance(op, MatmulAllReduceOp):
        return mc2_work(op)
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


# ---------------------------------------------------------------------------------------------
# Fused kernels
# ---------------------------------------------------------------------------------------------

ATTENTION_Q_ROWS = 128
"""Query rows one fused-attention block holds on chip while it streams the keys and values
past them, and keys per step of that stream: the 128-row basic block of CANN's
FlashAttentionScore tiling (cann-ops-adv, ``flash_attention_score_tiling_general.cpp``:
``HIGH_PERF_SUPPORT_S2_BASIC = 128``; assumption: the S1 block is as large as the S2 one)."""


def attention_work(op: FusionAttentionOp, hw: Hardware) -> OpWork:
    """What a fused attention asks of the device, costed as FlashAttention tiles it.

    Engine: the AI Core in mixed mode, the cube for ``Q K^T`` and ``P V`` (`OpWork.flops`)
    and the vector cores paired with it for the softmax and masking
    (`OpWork.vector_flops`); the scores never leave the chip.  Tiles: one per (batch,
    key/value head, block of `ATTENTION_Q_ROWS` query rows, block of as many keys), the
    units the kernel can spread over cores: the query heads that share a key/value head
    (grouped-query attention) form their blocks together, and a few query rows (decode)
    still fill the cores by splitting the keys (flash decoding; cann-ops-adv's
    ``flash_attention_score_s1s2_bn2gs1.h`` loops over S2 blocks within a core, its
    incremental variant splits S2 across cores).  Bytes: the queries, the mask and the output move once; the
    keys and values of a head stream past its blocks once per wave of blocks running at
    the same time, one per cube core (assumption: the cores of one wave read the same
    key/value tiles together and the L2 cache serves all but the first read; the tiling
    hands out blocks head by head, cann-ops-adv's ``flash_attention_score_s1s2_bn2gs1.h``
    orders them B, N2, G, S1).  Under causal masking a block skips the key tiles its rows
    never see, so the keys shrink as the scores do.  A `repeat_kv` copy would have each
    query head read a key/value copy of its own: grouped heads read theirs once.
    """
    b, nq, nkv, sq, skv, _, _ = op.dims()
    blocks = _ceil_div((nq // max(1, nkv)) * sq, ATTENTION_Q_ROWS)
    waves = _ceil_div(blocks, hw.cube_cores)
    kept = Fraction(attention_pairs(sq, skv, op.causal is not None), sq * skv)
    kv_bytes = tensor_bytes(op.key.type) + tensor_bytes(op.value.type)
    once = tensor_bytes(op.query.type) + tensor_bytes(op.result.type)
    if op.mask is not None:
        once += tensor_bytes(op.mask.type)
    return OpWork(
        engine="cube",
        flops=op.flops(),
        bytes=once + math.ceil(waves * kv_bytes * kept),
        dtype=_dtype(op.query.type, CUBE_DTYPES),
        tiles=b * nkv * blocks * _ceil_div(skv, ATTENTION_Q_ROWS),
        vector_flops=op.vector_flops(),
    )


def mc2_work(op: MatmulAllReduceOp) -> OpWork:
    """What an MC2 matmul + all-reduce asks of the device: a collective (its ring time on the
    link, in its mode, over the result's bytes on each rank) fused with a matmul on the cube
    (`OpWork.cube_flops`, its operands and result moved once), the two overlapped tile by
    tile (`timing.comm_ns`)."""
    first = op.input.type
    return OpWork(
        engine="comm",
        bytes=op.bytes_moved(),
        dtype=_dtype(first, CUBE_DTYPES),
        collective=op.COLLECTIVE,
        group_size=op.group_size,
        comm_bytes=tensor_bytes(op.result.type),
        mode=op.mode,
        cube_flops=op.flops(),
    )
