"""Tests for the roofline cost model, checked by hand on the ``tiny`` preset."""

from __future__ import annotations

import math
from typing import Any

import pytest

from npuir.backends.npu.cost import OpWork, matmul_tiles, parallelism, vector_tiles
from npuir.backends.npu.hardware import PRESETS
from npuir.backends.npu.timing import (
    collective_ns,
    duration_ns,
    solo_duration_ns,
    static_hbm_share,
)

TINY = PRESETS["tiny"]
B2 = PRESETS["910b2"]


def matmul(m: int, n: int, k: int, dtype: str = "f16", esize: int = 2) -> OpWork:
    return OpWork(
        engine="cube",
        flops=2 * m * n * k,
        bytes=(m * k + k * n + m * n) * esize,
        dtype=dtype,
        tiles=matmul_tiles(TINY, m, n),
    )


def vector_add(elements: int) -> OpWork:
    return OpWork(
        engine="vector",
        flops=elements,
        bytes=3 * elements * 2,
        tiles=vector_tiles(TINY, elements * 2),
    )


def comm(collective: str, group: int, nbytes: int, mode: str = "sdma") -> OpWork:
    return OpWork(
        engine="comm", collective=collective, group_size=group, comm_bytes=nbytes, mode=mode
    )


# -- tiles and parallelism ---------------------------------------------------------------------


def test_matmul_tiles_ceil_divide_the_output() -> None:
    assert matmul_tiles(TINY, 64, 64) == 4  # 32x32 tiles
    assert matmul_tiles(TINY, 65, 64) == 6
    assert matmul_tiles(TINY, 1, 1) == 1
    assert matmul_tiles(TINY, 64, 64, batch=3) == 12
    assert matmul_tiles(B2, 4096, 4096) == 32 * 32  # 128x128 tiles
    with pytest.raises(ValueError, match="must be positive"):
        matmul_tiles(TINY, 0, 4)


def test_vector_tiles_ceil_divide_and_never_zero() -> None:
    assert vector_tiles(TINY, 2048) == 2  # 1 KiB tiles
    assert vector_tiles(TINY, 2049) == 3
    assert vector_tiles(TINY, 1) == 1
    assert vector_tiles(TINY, 0) == 1
    assert vector_tiles(B2, 32 * 1024) == 1  # 32 KiB tiles
    with pytest.raises(ValueError, match="non-negative"):
        vector_tiles(TINY, -1)


def test_parallelism_capped_by_cores() -> None:
    assert parallelism(TINY, matmul(64, 64, 64)) == 2  # 4 tiles, 2 cube cores
    assert parallelism(TINY, vector_add(8192)) == 4  # 16 tiles, 4 vector cores
    assert parallelism(B2, OpWork("cube", flops=1, tiles=1000)) == 24


def test_parallelism_capped_by_tiles() -> None:
    assert parallelism(TINY, matmul(32, 32, 64)) == 1  # one tile
    assert parallelism(TINY, vector_add(1024)) == 2  # 2 tiles, 4 cores
    assert parallelism(B2, OpWork("vector", flops=1, tiles=5)) == 5


def test_parallelism_of_collectives() -> None:
    assert parallelism(TINY, comm("all_reduce", 4, 1024)) == 0
    assert parallelism(TINY, comm("all_reduce", 4, 1024, mode="aiv")) == TINY.vector_cores


def test_static_hbm_share_is_core_fraction() -> None:
    assert static_hbm_share(TINY, "vector", 1) == 0.25
    assert static_hbm_share(TINY, "vector", 4) == 1.0
    assert static_hbm_share(TINY, "cube", 1) == 0.5
    assert static_hbm_share(TINY, "comm", 0) == 1.0
    with pytest.raises(ValueError, match="at least 1 core"):
        static_hbm_share(TINY, "cube", 0)


# -- roofline on tiny --------------------------------------------------------------------------


def test_tiny_matmul_64_cube() -> None:
    op = matmul(64, 64, 64)
    assert (op.flops, op.bytes) == (524288, 24576)
    assert duration_ns(TINY, op, cores=1) == 524288
    assert duration_ns(TINY, op, cores=2) == 262144
    assert solo_duration_ns(TINY, op) == 262144


def test_tiny_outer_product_is_memory_bound() -> None:
    op = matmul(64, 64, 1)
    assert (op.flops, op.bytes) == (8192, 8448)
    assert duration_ns(TINY, op, cores=2) == 8448


def test_tiny_vector_add() -> None:
    op = vector_add(1024)
    assert duration_ns(TINY, op, cores=1) == 6144
    assert duration_ns(TINY, op, cores=2, hbm_share=0.5) == 12288
    assert duration_ns(TINY, op, cores=4) == 6144
    assert solo_duration_ns(TINY, op) == 12288  # 2 tiles -> 2 cores -> half the bandwidth


def test_tiny_dtype_rates() -> None:
    assert duration_ns(TINY, OpWork("cube", flops=1000, dtype="f32"), cores=1) == 4000
    assert duration_ns(TINY, OpWork("cube", flops=1000, dtype="i8"), cores=1) == 500
    assert duration_ns(TINY, OpWork("vector", flops=1000, dtype="f32"), cores=1) == 2000
    assert duration_ns(TINY, OpWork("aicpu", flops=10, dtype="i64"), cores=1) == 100


def test_roofline_switches_from_memory_to_compute_bound() -> None:
    # 4096 bytes is 4096 ns of HBM time on tiny; compute is flops / 2 on two cube cores.
    durations = [
        duration_ns(TINY, OpWork("cube", flops=flops, bytes=4096), cores=2)
        for flops in (2048, 8192, 8194, 16384)
    ]
    assert durations == [4096, 4096, 4097, 8192]


def test_hbm_share_scales_memory_time_only() -> None:
    memory_bound = OpWork("vector", flops=10, bytes=1000)
    assert duration_ns(TINY, memory_bound, cores=1, hbm_share=1.0) == 1000
    assert duration_ns(TINY, memory_bound, cores=1, hbm_share=0.25) == 4000
    assert duration_ns(TINY, memory_bound, cores=1, hbm_share=0.1) == 10000
    compute_bound = OpWork("vector", flops=1000, bytes=10)
    assert duration_ns(TINY, compute_bound, cores=1, hbm_share=0.5) == 1000


def test_rounds_up_and_never_returns_zero() -> None:
    assert duration_ns(TINY, OpWork("vector", flops=3), cores=2) == 2  # 1.5 ns
    assert duration_ns(TINY, OpWork("vector"), cores=1) == 1


def test_910b2_matmul_matches_the_platform_peak() -> None:
    op = OpWork("cube", flops=2 * 4096**3, bytes=3 * 4096 * 4096 * 2, tiles=1024)
    per_core = 2 * 16**3 * 1_800_000_000
    expected = math.ceil(2 * 4096**3 * 10**9 / (24 * per_core))
    assert solo_duration_ns(B2, op) == expected == 388362


# -- collectives -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("collective", "group", "expected"),
    [
        ("all_reduce", 2, 1024 + 2 * 100),  # 2*1/2*1024 bytes, 2 hops
        ("all_reduce", 4, 1536 + 6 * 100),  # 2*3/4*1024 bytes, 6 hops
        ("reduce_scatter", 2, 512 + 100),
        ("reduce_scatter", 4, 768 + 300),
        ("all_gather", 2, 1024 + 100),  # (G-1) * input bytes
        ("all_gather", 4, 3072 + 300),
        ("all_to_all", 2, 512 + 100),
        ("all_to_all", 4, 768 + 300),
    ],
)
def test_ring_formulas_on_tiny(collective: str, group: int, expected: int) -> None:
    assert collective_ns(TINY, collective, group, 1024) == expected
    assert duration_ns(TINY, comm(collective, group, 1024), cores=0) == expected
    assert solo_duration_ns(TINY, comm(collective, group, 1024)) == expected


@pytest.mark.parametrize("collective", ["all_reduce", "reduce_scatter", "all_gather", "all_to_all"])
def test_group_of_one_is_one_ns(collective: str) -> None:
    assert duration_ns(TINY, comm(collective, 1, 1 << 20), cores=0) == 1


def test_aiv_mode_has_the_link_time_but_needs_vector_cores() -> None:
    aiv = comm("all_reduce", 4, 1024, mode="aiv")
    assert duration_ns(TINY, aiv, cores=4) == 2136
    assert duration_ns(TINY, aiv, cores=1) == 2136
    with pytest.raises(ValueError, match=r"aiv collective needs 1\.\.4 vector cores"):
        duration_ns(TINY, aiv, cores=0)


def test_910b2_all_reduce_uses_hccs_link() -> None:
    nbytes = 64 << 20
    link_ns = 2 * 7 * nbytes * 10**9 / (8 * 56_000_000_000)
    expected = math.ceil(link_ns + 14 * 2_000)
    assert collective_ns(B2, "all_reduce", 8, nbytes) == expected


# -- errors ------------------------------------------------------------------------------------


def test_compute_ops_need_cores() -> None:
    op = matmul(64, 64, 64)
    with pytest.raises(ValueError, match=r"cube op needs 1\.\.2 cores on tiny, got 0"):
        duration_ns(TINY, op, cores=0)
    with pytest.raises(ValueError, match="got 3"):
        duration_ns(TINY, op, cores=3)


def test_hbm_share_must_be_a_fraction() -> None:
    op = vector_add(1024)
    for share in (0.0, -0.5, 1.5):
        with pytest.raises(ValueError, match="hbm_share must be in"):
            duration_ns(TINY, op, cores=1, hbm_share=share)


def test_cube_rejects_dtypes_it_cannot_multiply() -> None:
    with pytest.raises(ValueError, match="cube cores have no throughput for dtype 'i32'"):
        duration_ns(TINY, OpWork("cube", flops=1, dtype="i32"), cores=1)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"engine": "gpu"}, "unknown engine 'gpu'"),
        ({"engine": "cube", "flops": -1}, "OpWork.flops must be an integer >= 0"),
        ({"engine": "cube", "tiles": 0}, "OpWork.tiles must be an integer >= 1"),
        ({"engine": "cube", "dtype": "f8"}, "unknown dtype 'f8'"),
        ({"engine": "comm"}, "comm op needs a collective"),
        ({"engine": "comm", "collective": "broadcast"}, "comm op needs a collective"),
        ({"engine": "vector", "collective": "all_reduce"}, "cannot carry collective"),
        (
            {"engine": "comm", "collective": "all_reduce", "mode": "rdma"},
            "unknown comm mode 'rdma'",
        ),
        (
            {"engine": "comm", "collective": "all_reduce", "group_size": 0},
            "OpWork.group_size must be an integer >= 1",
        ),
    ],
)
def test_opwork_validation(kwargs: dict[str, Any], expected: str) -> None:
    with pytest.raises(ValueError, match=expected):
        OpWork(**kwargs)


def test_unknown_collective_name() -> None:
    with pytest.raises(ValueError, match="unknown collective 'gather'"):
        collective_ns(TINY, "gather", 2, 8)
