"""Tests for the NPU hardware model: presets, validation and TOML loading."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from npuir.backends.npu.hardware import (
    CUBE_DTYPES,
    DEFAULT_HARDWARE,
    PRESETS,
    VECTOR_DTYPES,
    Hardware,
    HardwareError,
    load_hardware,
)

GIB = 1 << 30


def write_toml(tmp_path: Path, text: str, name: str = "board.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# -- presets -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "cube", "vector", "hbm"),
    [
        ("910b2", 24, 48, 64 * GIB),
        ("910b4", 20, 40, 32 * GIB),
        ("a3", 24, 48, 64 * GIB),
        ("tiny", 2, 4, 1 * GIB),
    ],
)
def test_preset_core_counts_and_memory(name: str, cube: int, vector: int, hbm: int) -> None:
    hw = PRESETS[name]
    assert hw.name == name
    assert hw.cores("cube") == hw.cube_cores == cube
    assert hw.cores("vector") == hw.vector_cores == vector
    assert hw.hbm_bytes == hbm


def test_preset_names() -> None:
    assert set(PRESETS) == {"910b2", "910b4", "a3", "tiny"}
    assert DEFAULT_HARDWARE == "910b2"


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_field_is_positive(name: str) -> None:
    hw = PRESETS[name]
    for field in dataclasses.fields(hw):
        value = getattr(hw, field.name)
        if field.name == "name":
            assert isinstance(value, str) and value
        elif isinstance(value, Mapping):
            assert value, field.name
            for dtype, rate in value.items():
                assert isinstance(rate, int) and rate > 0, (field.name, dtype)
        else:
            assert isinstance(value, int) and not isinstance(value, bool), field.name
            assert value > 0, field.name


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_cover_the_dtypes_the_cost_model_uses(name: str) -> None:
    hw = PRESETS[name]
    assert set(hw.cube_flops) == CUBE_DTYPES
    assert set(hw.vector_flops) == VECTOR_DTYPES


def test_910b2_cube_peak_follows_from_the_cann_platform_config() -> None:
    # 16x16x16 fractal, 2 FLOP per MAC, 1.8 GHz cube clock (Ascend910B2.ini).
    per_core = 2 * 16**3 * 1_800_000_000
    hw = PRESETS["910b2"]
    assert hw.cube_flops["f16"] == per_core
    assert hw.cube_flops["bf16"] == per_core
    assert hw.cube_flops["i8"] == 2 * per_core
    assert hw.cube_flops["f32"] < per_core
    assert (hw.cube_m, hw.cube_n, hw.cube_k) == (16, 16, 16)
    assert hw.max_events == 4096
    assert hw.max_streams == 1984  # CANN 8.5.0 aclrtCreateStream, Atlas A2


def test_910b4_is_slower_than_910b2() -> None:
    b2, b4 = PRESETS["910b2"], PRESETS["910b4"]
    assert b4.cube_flops["f16"] < b2.cube_flops["f16"]
    assert b4.hbm_bandwidth < b2.hbm_bandwidth


def test_tiny_is_round() -> None:
    hw = PRESETS["tiny"]
    assert hw.cube_flops["f16"] == 1_000_000_000  # 1 FLOP/ns
    assert hw.vector_flops["f16"] == 1_000_000_000
    assert hw.hbm_bandwidth == 1_000_000_000  # 1 byte/ns
    assert hw.link_bandwidth == 1_000_000_000
    assert hw.link_latency_ns == 100
    assert (hw.launch_ns, hw.event_record_ns, hw.event_wait_ns) == (100, 10, 20)


def test_cores_and_throughput_lookups() -> None:
    hw = PRESETS["tiny"]
    assert hw.cores("aicpu") == 1
    assert hw.flops_per_core("cube", "f32") == 250_000_000
    assert hw.flops_per_core("vector", "i64") == 250_000_000
    assert hw.flops_per_core("aicpu", "f16") == hw.aicpu_flops
    with pytest.raises(ValueError, match="unknown engine 'npu'"):
        hw.cores("npu")
    with pytest.raises(ValueError, match="no throughput for dtype 'i32'"):
        hw.flops_per_core("cube", "i32")
    with pytest.raises(ValueError, match="no compute throughput"):
        hw.flops_per_core("comm", "f16")


def test_hardware_is_immutable_and_hashable() -> None:
    hw = PRESETS["910b2"]
    field = "cube_cores"
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(hw, field, 1)
    rates: Any = hw.cube_flops  # Any: the point is that writing fails at run time
    with pytest.raises(TypeError):
        rates["f16"] = 1
    same = dataclasses.replace(hw)
    assert same == hw and hash(same) == hash(hw)
    assert {hw: 1}[same] == 1
    assert dataclasses.replace(hw, cube_cores=23) != hw


def test_to_dict_round_trips() -> None:
    hw = PRESETS["a3"]
    data = hw.to_dict()
    assert data["cube_flops"] == dict(hw.cube_flops)
    assert Hardware(**data) == hw


def test_construction_validates() -> None:
    hw = PRESETS["tiny"]
    with pytest.raises(HardwareError, match="'vector_cores' must be positive, got 0"):
        dataclasses.replace(hw, vector_cores=0)
    with pytest.raises(HardwareError, match="'launch_ns' must be non-negative"):
        dataclasses.replace(hw, launch_ns=-1)
    # Zero overheads are allowed: an ideal device is a useful test fixture.
    assert dataclasses.replace(hw, launch_ns=0).launch_ns == 0


# -- load_hardware: presets and TOML -------------------------------------------------------------


def test_load_preset_by_name() -> None:
    for name, hw in PRESETS.items():
        assert load_hardware(name) is hw


def test_toml_overrides_one_field(tmp_path: Path) -> None:
    path = write_toml(tmp_path, 'base = "910b2"\ncube_cores = 20\n', name="cut.toml")
    hw = load_hardware(str(path))
    base = PRESETS["910b2"]
    assert hw.cube_cores == 20
    assert hw.name == "cut"
    assert dataclasses.replace(hw, cube_cores=base.cube_cores, name=base.name) == base


def test_toml_base_defaults_to_910b2(tmp_path: Path) -> None:
    path = write_toml(tmp_path, "launch_ns = 0\n")
    hw = load_hardware(path)
    assert hw.launch_ns == 0
    assert hw.vector_cores == PRESETS["910b2"].vector_cores


def test_toml_dtype_table_merges_with_base(tmp_path: Path) -> None:
    text = 'base = "tiny"\nhbm_bandwidth = 2e9\n[cube_flops]\nf32 = 5e8\n'
    hw = load_hardware(write_toml(tmp_path, text))
    assert hw.cube_flops["f32"] == 500_000_000
    assert hw.cube_flops["f16"] == PRESETS["tiny"].cube_flops["f16"]
    assert hw.hbm_bandwidth == 2_000_000_000
    assert isinstance(hw.hbm_bandwidth, int)


def test_toml_can_set_name(tmp_path: Path) -> None:
    hw = load_hardware(write_toml(tmp_path, 'name = "lab-board"\n'))
    assert hw.name == "lab-board"


# -- load_hardware: errors ---------------------------------------------------------------------


def test_error_is_a_value_error() -> None:
    assert issubclass(HardwareError, ValueError)


def test_unknown_preset_lists_valid_names() -> None:
    with pytest.raises(HardwareError) as info:
        load_hardware("910b9")
    message = str(info.value)
    assert "unknown hardware preset '910b9'" in message
    for name in PRESETS:
        assert name in message


def test_unreadable_file(tmp_path: Path) -> None:
    missing = tmp_path / "absent.toml"
    with pytest.raises(HardwareError, match=r"cannot read hardware file .*absent\.toml"):
        load_hardware(str(missing))


def test_bad_toml_reports_line_and_column(tmp_path: Path) -> None:
    path = write_toml(tmp_path, 'base = "910b2"\ncube_cores = = 3\n')
    with pytest.raises(HardwareError, match=r"invalid TOML: .*line 2, column"):
        load_hardware(path)


def test_unknown_field_names_valid_ones(tmp_path: Path) -> None:
    path = write_toml(tmp_path, "cube_count = 3\n")
    with pytest.raises(HardwareError) as info:
        load_hardware(path)
    message = str(info.value)
    assert "unknown hardware field 'cube_count'" in message
    assert "cube_cores" in message and "hbm_bandwidth" in message and "base" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('cube_cores = "many"\n', "'cube_cores' must be an integer, got str"),
        ("cube_cores = true\n", "'cube_cores' must be an integer, got bool"),
        ("cube_cores = 2.5\n", "'cube_cores' must be an integer, got float"),
        ("cube_cores = 0\n", "'cube_cores' must be positive, got 0"),
        ("max_events = -4\n", "'max_events' must be positive, got -4"),
        ("event_wait_ns = -1\n", "'event_wait_ns' must be non-negative, got -1"),
        ("hbm_bandwidth = 0\n", "'hbm_bandwidth' must be positive, got 0"),
        ("hbm_bandwidth = 1.5\n", "'hbm_bandwidth' must be a whole number"),
        ('hbm_bandwidth = "fast"\n', "'hbm_bandwidth' must be a number, got str"),
        ("[cube_flops]\nf16 = -1\n", "'cube_flops.f16' must be positive, got -1"),
        ("[cube_flops]\ni32 = 1\n", "'cube_flops' has unknown dtype 'i32'"),
        ("cube_flops = 3\n", "'cube_flops' must be a table"),
        ('base = "h100"\n', "'base' must be one of 910b2, 910b4, a3, tiny, got 'h100'"),
        ('name = ""\n', "'name' must be a non-empty string"),
    ],
)
def test_bad_values_are_rejected(tmp_path: Path, text: str, expected: str) -> None:
    path = write_toml(tmp_path, text)
    with pytest.raises(HardwareError) as info:
        load_hardware(path)
    assert expected in str(info.value)
    assert str(path) in str(info.value)
