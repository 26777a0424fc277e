"""Device description of an Ascend-style NPU: core counts, throughputs, bandwidths and limits.

A `Hardware` is a frozen record of the numbers the cost model and the simulator need:
cube (matrix) and vector core counts, per-core throughput by element type, HBM size and
bandwidth, the inter-chip link used by collectives, task-launch and event overheads, and the
runtime's stream and event limits.

Presets live in `PRESETS`:

- ``910b2``: Ascend 910B2 (Atlas 800T A2), 24 cube / 48 vector cores, 64 GiB HBM.
- ``910b4``: Ascend 910B4 (Atlas 800I A2 32 GB), 20 cube / 40 vector cores, 32 GiB HBM.
- ``a3``: one die of an Ascend 910C package (Atlas A3); the package holds two such dies.
- ``tiny``: round numbers for hand-checkable tests (see its comments and `timing.py`).

Every number sits next to a comment naming its public source or saying ``assumption:``.
The most-used source is CANN's per-SoC platform description, ``platform_config/<SoC>.ini``,
which CANN ships and which is public in the ``hicann/runtime`` repository
(``src/platform/platform_config/``); it gives core counts, the cube clock, the cube fractal
shape, the Unified Buffer size and the stream count, from which per-core peaks follow.

`load_hardware` turns a preset name or a TOML file into a `Hardware`; a TOML file names an
optional ``base`` preset and overrides fields by name::

    base = "910b2"
    hbm_bandwidth = 1.2e12
    [cube_flops]
    f32 = 7.3e12

Every failure raises `HardwareError` with a message that says what to fix.

This is the device *description* only -- pure data, no cost model -- kept beside the timing
model (`npuir.backends.npu.timing`, the one module that reads its timing fields) and the
simulator that applies it.  It imports nothing of the
backend (only the engine names of `npuir.dialects.npu`), so an importer that checks a
`limit_core_num` against a device's core counts loads this module and no cost model.
"""

from __future__ import annotations

import dataclasses
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from npuir.dialects.npu import CORE_ENGINES
from npuir.nesting import MAX_DATA_DEPTH, bracket_depth

__all__ = [
    "CUBE_DTYPES",
    "DEFAULT_HARDWARE",
    "ENGINES",
    "PRESETS",
    "VECTOR_DTYPES",
    "Hardware",
    "HardwareError",
    "known_device",
    "load_hardware",
]

# Engines that own a pool of cores on one device. Collectives ("comm") are not listed: they
# run on the link (SDMA) or borrow vector cores (AIV), which `cost.py` decides.
ENGINES: tuple[str, ...] = CORE_ENGINES

# Element types the cube unit multiplies; the 910B mmad intrinsic accepts f16/bf16, f32
# (plain or hf32) and int8 operands (platform_config Ascend910B2.ini, Intrinsic_mmad).
CUBE_DTYPES: frozenset[str] = frozenset({"f16", "bf16", "f32", "i8"})

# Element types vector kernels run on. i1 is a boolean mask stored one byte per element.
VECTOR_DTYPES: frozenset[str] = frozenset({"f16", "bf16", "f32", "i8", "i32", "i64", "i1"})

# Preset that passes use when the caller gives no `hw=` (their `hw` option, docs/passes.md).
DEFAULT_HARDWARE = "910b2"


class HardwareError(ValueError):
    """A hardware description could not be found, read, parsed or validated."""


# Fields that count something or size something: must be a positive int.
_POSITIVE_INT_FIELDS: tuple[str, ...] = (
    "cube_cores",
    "vector_cores",
    "aicpu_cores",
    "hbm_bytes",
    "cube_m",
    "cube_n",
    "cube_k",
    "cube_tile_m",
    "cube_tile_n",
    "vector_tile_bytes",
    "max_streams",
    "max_events",
)
# Rates: positive; TOML writes big rates as floats (1.6e12), so floats with an integral value
# are accepted and stored as int, which keeps the cost model's arithmetic exact.
_RATE_FIELDS: tuple[str, ...] = ("hbm_bandwidth", "aicpu_flops", "link_bandwidth")
# Overheads in nanoseconds: zero is allowed so a TOML file can model an ideal device.
_OVERHEAD_FIELDS: tuple[str, ...] = (
    "link_latency_ns",
    "launch_ns",
    "event_record_ns",
    "event_wait_ns",
)
_DTYPE_RATE_FIELDS: dict[str, frozenset[str]] = {
    "cube_flops": CUBE_DTYPES,
    "vector_flops": VECTOR_DTYPES,
}


@dataclass(frozen=True)
class Hardware:
    """One NPU device (one die) as the cost model and the simulator see it.

    Rates are per core and per second; sizes are in bytes; overheads are in nanoseconds.
    Construction validates every field and raises `HardwareError` on a bad one, so a
    `Hardware` that exists is usable.
    """

    name: str
    """Preset or file name, shown in reports."""
    cube_cores: int
    """Cube (matrix) cores, the AIC half of each AI Core."""
    vector_cores: int
    """Vector cores, the AIV half of each AI Core (two per cube core on 910B)."""
    aicpu_cores: int
    """AI CPU cores that run ops with no AI Core kernel."""
    hbm_bytes: int
    """Device memory capacity."""
    hbm_bandwidth: int
    """Device memory bandwidth shared by all engines, bytes/s."""
    cube_flops: Mapping[str, int]
    """Peak FLOP/s of one cube core by operand dtype (a multiply-add counts as 2 FLOP)."""
    vector_flops: Mapping[str, int]
    """Peak element operations/s of one vector core by dtype (one op per lane per cycle)."""
    aicpu_flops: int
    """FLOP/s of one AI CPU core, whatever the dtype."""
    cube_m: int
    """Rows of the fractal block one cube instruction multiplies."""
    cube_n: int
    """Columns of that fractal block."""
    cube_k: int
    """Reduction depth of that fractal block."""
    cube_tile_m: int
    """Rows of the output block a cube core owns when a matmul is split across cores."""
    cube_tile_n: int
    """Columns of that output block."""
    vector_tile_bytes: int
    """Bytes one vector core processes per work unit (a UB-sized chunk)."""
    link_bandwidth: int
    """Bandwidth of one inter-chip link in one direction, bytes/s."""
    link_latency_ns: int
    """Fixed cost of one collective step (one ring hop)."""
    launch_ns: int
    """Task launch overhead per op on a stream."""
    event_record_ns: int
    """Cost of an event record task on a stream."""
    event_wait_ns: int
    """Cost of an event wait task on a stream once the event has fired."""
    max_streams: int
    """Streams the runtime can create on the device: its stream budget, shared by every
    graph a process loads (each gear of a geared graph, each graph captured in capture mode,
    is a graph with its own streams), the default stream and the runtime's own included.
    CANN's `aclrtCreateStream` reference gives 1,984 for Atlas A2 and Atlas A3 products
    (CANN 8.1.RC1, 8.3.RC1 and 8.5.0 alike, aclcppdevg_03_0065 / _0066); its 2,048 is for
    the first-generation "Atlas training products" (Ascend 910), which the CANN 7.0 / 8.0
    pages, listing no A2 row, gave to every training part.  `platform_config`'s
    `normal_stream_num=2048` counts the hardware's streams, some of which the runtime keeps
    (2,048 - 1,984 = 64), so the presets use the reference's 1,984."""
    max_events: int
    """Events the runtime can hold at once."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise HardwareError("hardware field 'name' must be a non-empty string")
        for field in _POSITIVE_INT_FIELDS:
            _check_int(field, getattr(self, field), minimum=1)
        for field in _OVERHEAD_FIELDS:
            _check_int(field, getattr(self, field), minimum=0)
        for field in _RATE_FIELDS:
            object.__setattr__(self, field, _as_rate(field, getattr(self, field)))
        for field, allowed in _DTYPE_RATE_FIELDS.items():
            rates = _as_dtype_rates(field, getattr(self, field), allowed)
            # A read-only view keeps the frozen promise for the nested tables too.
            object.__setattr__(self, field, MappingProxyType(rates))

    def __hash__(self) -> int:
        # The generated hash would fail on the mapping fields; hash their sorted items.
        values = tuple(
            tuple(sorted(value.items())) if isinstance(value, Mapping) else value
            for value in (getattr(self, f.name) for f in dataclasses.fields(self))
        )
        return hash(values)

    def __reduce__(self) -> tuple[type[Hardware], tuple[Any, ...]]:
        # Pickled (a search's tasks go to worker processes) with its tables as plain dicts:
        # a mapping proxy does not pickle; construction makes them proxies again.
        values = (getattr(self, f.name) for f in dataclasses.fields(self))
        return (Hardware, tuple(dict(v) if isinstance(v, Mapping) else v for v in values))

    def cores(self, engine: str) -> int:
        """Number of cores of `engine` ("cube", "vector" or "aicpu") on the device."""
        if engine == "cube":
            return self.cube_cores
        if engine == "vector":
            return self.vector_cores
        if engine == "aicpu":
            return self.aicpu_cores
        raise ValueError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")

    def flops_per_core(self, engine: str, dtype: str) -> int:
        """Peak FLOP/s one core of `engine` sustains on `dtype` operands."""
        if engine == "aicpu":
            return self.aicpu_flops
        if engine == "cube":
            table = self.cube_flops
        elif engine == "vector":
            table = self.vector_flops
        else:
            raise ValueError(
                f"engine {engine!r} has no compute throughput; expected one of {', '.join(ENGINES)}"
            )
        if dtype not in table:
            raise ValueError(
                f"{engine} cores have no throughput for dtype {dtype!r}; "
                f"known: {', '.join(sorted(table))}"
            )
        return table[dtype]

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (nested tables as dicts), e.g. for reports or TOML round trips."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out[f.name] = dict(value) if isinstance(value, Mapping) else value
        return out


def _check_int(field: str, value: object, *, minimum: int) -> None:
    # bool is an int subclass; `cube_cores = true` in TOML is a mistake, not 1.
    if isinstance(value, bool) or not isinstance(value, int):
        raise HardwareError(
            f"hardware field {field!r} must be an integer, got {type(value).__name__} {value!r}"
        )
    if value < minimum:
        relation = "positive" if minimum == 1 else "non-negative"
        raise HardwareError(f"hardware field {field!r} must be {relation}, got {value}")


def _as_rate(field: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise HardwareError(
            f"hardware field {field!r} must be a number, got {type(value).__name__} {value!r}"
        )
    if isinstance(value, float):
        if not math.isfinite(value) or value != math.floor(value):
            raise HardwareError(
                f"hardware field {field!r} must be a whole number per second, got {value!r}"
            )
        value = int(value)
    if value <= 0:
        raise HardwareError(f"hardware field {field!r} must be positive, got {value}")
    return value


def _as_dtype_rates(field: str, value: object, allowed: frozenset[str]) -> dict[str, int]:
    if not isinstance(value, Mapping):
        raise HardwareError(
            f"hardware field {field!r} must be a table of dtype = rate, got {type(value).__name__}"
        )
    rates: dict[str, int] = {}
    for dtype, rate in value.items():  # pyright: ignore[reportUnknownVariableType]
        if dtype not in allowed:
            raise HardwareError(
                f"hardware field {field!r} has unknown dtype {dtype!r}; "
                f"valid: {', '.join(sorted(allowed))}"
            )
        rates[dtype] = _as_rate(f"{field}.{dtype}", rate)
    if not rates:
        raise HardwareError(f"hardware field {field!r} must name at least one dtype")
    return rates


# ---------------------------------------------------------------------------------------------
# Presets
# ---------------------------------------------------------------------------------------------

_GIB = 1 << 30
_KIB = 1 << 10

# Cube fractal on every 910B-class part: one mmad instruction multiplies a 16x16 by 16x16
# block per cycle (platform_config Ascend910B2/B4/910_9391.ini: cube_m_size = cube_n_size =
# cube_k_size = 16, [DtypeMKN] Default=16,16,16).
_FRACTAL = 16  # platform_config *.ini [AICoreSpec] cube_{m,n,k}_size=16
# int8 doubles the N extent of the fractal (platform_config *.ini [DtypeMKN] DT_INT8=16,32,16).
_I8_N = 32  # platform_config *.ini [DtypeMKN] DT_INT8=16,32,16
# FLOP per multiply-add, the usual convention behind vendor TFLOPS figures.
_FLOP_PER_MAC = 2  # convention: 1 MAC = 2 FLOP
# Vector lanes per cycle for f16: the vector unit processes 128 f16 elements (256 bytes) per
# instruction (platform_config *.ini [AICoreSpec] vec_calc_size=128).
_VEC_F16_LANES = 128  # platform_config *.ini [AICoreSpec] vec_calc_size=128
# Unified Buffer per vector core (platform_config *.ini [AICoreSpec] ub_size=196608).
_UB_BYTES = 196_608  # platform_config *.ini [AICoreSpec] ub_size=196608 (192 KiB)
# assumption: an elementwise binary kernel double-buffers two inputs and one output, i.e. six
# equal buffers, so one work unit is a sixth of the UB: 192 KiB / 6 = 32 KiB.
_VECTOR_TILE = _UB_BYTES // 6  # assumption: 6 UB buffers per kernel -> 32 KiB


def _cube_rates(freq_hz: int) -> dict[str, int]:
    """Per-core cube FLOP/s by dtype for a 16x16x16 fractal issued once per cycle."""
    f16 = _FLOP_PER_MAC * _FRACTAL * _FRACTAL * _FRACTAL * freq_hz
    return {
        "f16": f16,
        # bf16 uses the same Default fractal as f16 (platform_config [DtypeMKN] Default).
        "bf16": f16,
        # assumption: full-precision f32 at a quarter of f16: the 512-byte fractal halves K to
        # 8 for 4-byte operands and we assume a further 2x for full-precision passes (hf32
        # would be about 1/2). No public per-dtype figure was found.
        "f32": f16 // 4,
        "i8": _FLOP_PER_MAC * _FRACTAL * _I8_N * _FRACTAL * freq_hz,
    }


def _vector_rates(freq_hz: int) -> dict[str, int]:
    """Per-core vector element-ops/s by dtype for a 256-byte-wide vector unit."""
    f16 = _VEC_F16_LANES * freq_hz
    return {
        "f16": f16,
        # The 910B vector intrinsics do arithmetic on float16/float32/int16/int32 only; bf16
        # and int8 appear only in conversions (platform_config [VectorCoreintrinsicDtypeMap]).
        # assumption: bf16 is computed through f32, int8 and i1 masks through f16.
        "bf16": f16 // 2,
        "f32": f16 // 2,  # 64 four-byte lanes in 256 bytes
        "i8": f16,
        "i32": f16 // 2,  # 64 four-byte lanes in 256 bytes (vadd lists int32)
        # assumption: int64 has no vector arithmetic intrinsic; emulation costs about two i32
        # ops per element.
        "i64": f16 // 4,
        "i1": f16,
    }


# --- Ascend 910B2 (Atlas 800T A2) ---------------------------------------------------------------
_910B2_HZ = 1_800_000_000  # platform_config Ascend910B2.ini [AICoreSpec] cube_freq=1800 (MHz)

_910B2 = Hardware(
    name="910b2",
    cube_cores=24,  # platform_config Ascend910B2.ini [SoCInfo] cube_core_cnt=24
    vector_cores=48,  # platform_config Ascend910B2.ini [SoCInfo] vector_core_cnt=48
    aicpu_cores=6,  # platform_config Ascend910B2.ini [SoCInfo] ai_cpu_cnt=6
    hbm_bytes=64 * _GIB,  # platform_config Ascend910B2.ini [SoCInfo] memory_size=68719476736
    # Public spec tables for the 910B list 64 GB HBM2e at 1.6 TB/s; no Huawei datasheet with
    # this figure was found, so treat it as approximate.
    hbm_bandwidth=1_600_000_000_000,  # third-party 910B spec tables: 1.6 TB/s (approximate)
    # 2 * 16^3 * 1.8 GHz = 14.7456 TFLOP/s per core; x24 = 353.9 TFLOP/s, close to the
    # ~354-376 TFLOPS FP16 quoted for the 910B2.
    cube_flops=_cube_rates(_910B2_HZ),  # derived from the ini's cube_freq and fractal
    # assumption: vector cores run at the cube clock (the ini gives only cube_freq).
    vector_flops=_vector_rates(_910B2_HZ),  # derived from the ini's vec_calc_size
    aicpu_flops=2_000_000_000,  # assumption: ~2 GFLOP/s per ARM AI CPU core, scalar code
    cube_m=_FRACTAL,  # platform_config Ascend910B2.ini cube_m_size=16
    cube_n=_FRACTAL,  # platform_config Ascend910B2.ini cube_n_size=16
    cube_k=_FRACTAL,  # platform_config Ascend910B2.ini cube_k_size=16
    cube_tile_m=128,  # assumption: 128x128 output block per cube core, a common matmul base
    cube_tile_n=128,  # assumption: see cube_tile_m
    vector_tile_bytes=_VECTOR_TILE,  # assumption: ub_size / 6, see _VECTOR_TILE
    # 910B spec tables: HCCS 56 GB/s one-to-one, 392 GB/s aggregate = 7 links in the 8-NPU
    # full mesh of an Atlas 800T A2; a ring step uses one link.
    link_bandwidth=56_000_000_000,  # third-party 910B spec tables: HCCS 56 GB/s per link
    link_latency_ns=2_000,  # assumption: ~2 us per HCCL ring step over HCCS
    launch_ns=2_000,  # assumption: ~2 us to dispatch one kernel task on a stream
    event_record_ns=500,  # assumption
    event_wait_ns=1_000,  # assumption: the wait also covers the cross-stream notify
    max_streams=1984,  # CANN 8.5.0 aclrtCreateStream: 1,984 on Atlas A2/A3 (see field doc)
    max_events=4096,  # CANN GE runtime event_allocator.h: EventAllocator::kMaxEventNum = 4096
)

# --- Ascend 910B4 (Atlas 800I A2, 32 GB) ------------------------------------------------------
_910B4_HZ = 1_500_000_000  # platform_config Ascend910B4.ini [AICoreSpec] cube_freq=1500 (MHz)

# Fields not listed are the 910b2 values and carry the sources given there.
_910B4 = dataclasses.replace(
    _910B2,
    name="910b4",
    cube_cores=20,  # platform_config Ascend910B4.ini [SoCInfo] cube_core_cnt=20
    vector_cores=40,  # platform_config Ascend910B4.ini [SoCInfo] vector_core_cnt=40
    aicpu_cores=6,  # platform_config Ascend910B4.ini [SoCInfo] ai_cpu_cnt=6
    hbm_bytes=32 * _GIB,  # platform_config Ascend910B4.ini [SoCInfo] memory_size=34359738368
    # Third-party summary of the Atlas 800I A2 (32 GB HCCS) product page: 910B4, 32 GB HBM
    # at 800 GB/s, 280 TFLOPS FP16, HCCS full mesh 392 GB/s.
    hbm_bandwidth=800_000_000_000,  # third-party Atlas 800I A2 32GB summary: 800 GB/s
    # 2 * 16^3 * 1.5 GHz = 12.288 TFLOP/s per core; x20 = 245.8 TFLOP/s.
    cube_flops=_cube_rates(_910B4_HZ),  # derived from the ini's cube_freq and fractal
    vector_flops=_vector_rates(_910B4_HZ),  # assumption: vector at cube clock, as for 910b2
    link_bandwidth=56_000_000_000,  # 392 GB/s full mesh / 7 links (Atlas 800I A2 summary)
    max_streams=1984,  # CANN 8.5.0 aclrtCreateStream: 1,984 on Atlas A2/A3 (see field doc)
)

# --- Ascend 910C die (Atlas A3) ---------------------------------------------------------------
# A 910C package is two dies joined by SIO; each die is one device to the runtime (sglang's
# Ascend reference: A3 = 8 cards x 2 dies x 64 GB). CANN describes the die as SoC
# Ascend910_9391 (Short_SoC_version=Ascend910_93).
_A3_HZ = 1_850_000_000  # platform_config Ascend910_9391.ini [AICoreSpec] cube_freq=1850 (MHz)

# Fields not listed are the 910b2 values and carry the sources given there.
_A3 = dataclasses.replace(
    _910B2,
    name="a3",
    cube_cores=24,  # platform_config Ascend910_9391.ini [SoCInfo] cube_core_cnt=24
    vector_cores=48,  # platform_config Ascend910_9391.ini [SoCInfo] vector_core_cnt=48
    aicpu_cores=6,  # platform_config Ascend910_9391.ini [SoCInfo] ai_cpu_cnt=6
    hbm_bytes=64 * _GIB,  # platform_config Ascend910_9391.ini [SoCInfo] memory_size=68719476736
    # CloudMatrix384 paper (Huawei, arXiv:2506.12708) as summarised publicly: a 910C package
    # has 128 GB HBM at 3.2 TB/s and ~752 TFLOPS BF16 over two dies -> 1.6 TB/s per die.
    hbm_bandwidth=1_600_000_000_000,  # CloudMatrix384 paper: 3.2 TB/s per package / 2 dies
    # 2 * 16^3 * 1.85 GHz = 15.155 TFLOP/s per core; x24 = 363.7 TFLOP/s (paper: ~376/die).
    cube_flops=_cube_rates(_A3_HZ),  # derived from the ini's cube_freq and fractal
    vector_flops=_vector_rates(_A3_HZ),  # assumption: vector at cube clock, as for 910b2
    # CloudMatrix384 paper: 392 GB/s unidirectional UB bandwidth per 910C package.
    # assumption: each die gets half, and a ring peer is reachable at that full rate through
    # the UB switches.
    link_bandwidth=196_000_000_000,  # CloudMatrix384 paper 392 GB/s per package / 2 dies
    link_latency_ns=1_000,  # assumption: ~1 us per ring step over the UB fabric
    max_streams=1984,  # CANN 8.5.0 aclrtCreateStream: 1,984 on Atlas A2/A3 (see field doc)
)

# --- tiny: hand-checkable test device ---------------------------------------------------------
# Every rate is 1 unit per nanosecond or a simple multiple, so durations are exact integers:
#   cube f16/bf16: 1 FLOP/ns per core, f32 1 FLOP per 4 ns, i8 2 FLOP/ns;
#   vector f16: 1 op/ns per core (f32 1 op per 2 ns); HBM 1 byte/ns; link 1 byte/ns.
# Worked examples are in `timing.py`'s module docstring.
_TINY = Hardware(
    name="tiny",
    cube_cores=2,  # assumption: test device
    vector_cores=4,  # assumption: test device (2 vector per cube, as on 910B)
    aicpu_cores=1,  # assumption: test device
    hbm_bytes=1 * _GIB,  # assumption: test device
    hbm_bandwidth=1_000_000_000,  # assumption: 1 byte/ns
    cube_flops={
        "f16": 1_000_000_000,  # assumption: 1 FLOP/ns
        "bf16": 1_000_000_000,  # assumption: 1 FLOP/ns
        "f32": 250_000_000,  # assumption: 1 FLOP per 4 ns, the f16/4 ratio used above
        "i8": 2_000_000_000,  # assumption: 2 FLOP/ns, the i8/f16 ratio used above
    },
    vector_flops={
        "f16": 1_000_000_000,  # assumption: 1 op/ns
        "bf16": 500_000_000,  # assumption: 1 op per 2 ns (through f32, as above)
        "f32": 500_000_000,  # assumption: 1 op per 2 ns
        "i8": 1_000_000_000,  # assumption: 1 op/ns (through f16, as above)
        "i32": 500_000_000,  # assumption: 1 op per 2 ns
        "i64": 250_000_000,  # assumption: 1 op per 4 ns
        "i1": 1_000_000_000,  # assumption: 1 op/ns
    },
    aicpu_flops=100_000_000,  # assumption: 1 FLOP per 10 ns
    cube_m=16,  # assumption: same fractal as the real parts
    cube_n=16,  # assumption: same fractal as the real parts
    cube_k=16,  # assumption: same fractal as the real parts
    cube_tile_m=32,  # assumption: small so a 64x64 output is 4 tiles
    cube_tile_n=32,  # assumption: small so a 64x64 output is 4 tiles
    vector_tile_bytes=1 * _KIB,  # assumption: 1 KiB work units
    link_bandwidth=1_000_000_000,  # assumption: 1 byte/ns
    link_latency_ns=100,  # assumption: round
    launch_ns=100,  # assumption: round
    event_record_ns=10,  # assumption: round, distinct from wait
    event_wait_ns=20,  # assumption: round, distinct from record
    max_streams=4,  # assumption: small so tests can hit the limit
    max_events=16,  # assumption: small so tests can hit the limit
)

PRESETS: dict[str, Hardware] = {hw.name: hw for hw in (_910B2, _910B4, _A3, _TINY)}
"""Built-in devices by name."""


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------

_FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Hardware))


def load_hardware(spec: str | os.PathLike[str]) -> Hardware:
    """Return the preset named `spec`, or the device described by the TOML file at `spec`.

    A TOML file may set ``base`` (a preset name, default ``"910b2"``) and then any `Hardware`
    field by name; ``cube_flops`` and ``vector_flops`` are tables whose keys override the base
    table's entries one by one. ``name`` defaults to the file's stem.

    Raises `HardwareError` for an unknown preset, an unreadable file, bad TOML (the message
    carries tomllib's line and column), an unknown field, or a value of the wrong type or sign.
    """
    text = os.fspath(spec)
    if text in PRESETS:
        return PRESETS[text]
    path = Path(text)
    # Anything that looks like a file is treated as one, so a typo in a path reports the path
    # rather than "unknown preset".
    if path.suffix == ".toml" or path.exists() or os.sep in text or "/" in text:
        return _load_toml(path)
    raise HardwareError(
        f"unknown hardware preset {text!r}; valid presets: {', '.join(PRESETS)} "
        "(or give the path of a .toml file)"
    )


def known_device(spec: str | os.PathLike[str]) -> Hardware | None:
    """The device `spec` names, or None when it names none npuir can load: what an importer
    checks a `limit_core_num` against while it builds IR (an unknown target is reported
    by `coreset-lower`, which checks the counts against the device the pipeline is given)."""
    try:
        return load_hardware(spec)
    except HardwareError:
        return None


MAX_HARDWARE_FILE = 1 << 20
"""The largest hardware TOML file read (a real one is under 2 KB)."""


def _load_toml(path: Path) -> Hardware:
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_HARDWARE_FILE + 1)
    except OSError as err:
        raise HardwareError(
            f"cannot read hardware file {str(path)!r}: {err.strerror or err}"
        ) from err
    if len(data) > MAX_HARDWARE_FILE:
        raise HardwareError(f"{path}: a hardware file is at most {MAX_HARDWARE_FILE} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise HardwareError(
            f"{path}:{line}: invalid TOML: not UTF-8 ({err.reason} at byte {err.start})"
        ) from None
    depth, where = bracket_depth(text, MAX_DATA_DEPTH)
    if depth > MAX_DATA_DEPTH:
        line = text.count("\n", 0, where) + 1
        column = where - (text.rfind("\n", 0, where) + 1) + 1
        raise HardwareError(
            f"{path}:{line}:{column}: invalid TOML: nested more than {MAX_DATA_DEPTH} levels deep"
        )
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        # tomllib's message already ends in "(at line L, column C)".
        raise HardwareError(f"{path}: invalid TOML: {err}") from err

    base_name = table.pop("base", DEFAULT_HARDWARE)
    if not isinstance(base_name, str) or base_name not in PRESETS:
        raise HardwareError(
            f"{path}: 'base' must be one of {', '.join(PRESETS)}, got {base_name!r}"
        )
    base = PRESETS[base_name]

    overrides: dict[str, Any] = {"name": path.stem}
    for key, value in table.items():
        if key not in _FIELD_NAMES:
            raise HardwareError(
                f"{path}: unknown hardware field {key!r}; valid fields: base, "
                + ", ".join(_FIELD_NAMES)
            )
        if key in _DTYPE_RATE_FIELDS:
            if not isinstance(value, dict):
                raise HardwareError(
                    f"{path}: hardware field {key!r} must be a table of dtype = rate, "
                    f"got {type(value).__name__}"
                )
            # Merge so a file can retune one dtype without restating the rest.
            merged = dict(getattr(base, key))
            merged.update(value)  # pyright: ignore[reportUnknownArgumentType]
            value = merged
        overrides[key] = value

    try:
        return dataclasses.replace(base, **overrides)
    except HardwareError as err:
        raise HardwareError(f"{path}: {err}") from err
