"""The runner's helpers: bitwise output comparison and random inputs that keep every op defined."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.func import FuncOp

import npuir
from npuir.backends.npu.numerics import NumericsError, run_ranks
from npuir.diagnostics import DiagnosticError, UsageError
from npuir.driver.run import RunConfig, make_inputs, run_program, same_bits

Array = np.ndarray[Any, Any]
BF16 = np.dtype(ml_dtypes.bfloat16)


# --------------------------------------------------------------------------
# same_bits
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float16, np.float32, BF16], ids=["f16", "f32", "bf16"])
def test_nan_at_the_same_place_is_equal(dtype: Any) -> None:
    a = np.array([1.0, np.nan, -2.5], dtype=dtype)
    assert same_bits(a, a.copy())


@pytest.mark.parametrize("dtype", [np.float16, np.float32, BF16], ids=["f16", "f32", "bf16"])
def test_nan_at_another_place_differs(dtype: Any) -> None:
    a = np.array([1.0, np.nan, 3.0], dtype=dtype)
    b = np.array([np.nan, 2.0, 3.0], dtype=dtype)
    assert not same_bits(a, b)
    assert not same_bits(a, np.array([1.0, 2.0, 3.0], dtype=dtype))


def test_nans_with_different_payloads_are_equal() -> None:
    quiet = np.array([0x7E00], dtype=np.uint16).view(np.float16)
    other = np.array([0xFE01], dtype=np.uint16).view(np.float16)  # negative, other payload
    assert np.isnan(quiet[0]) and np.isnan(other[0])
    assert same_bits(quiet, other)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, BF16], ids=["f16", "f32", "bf16"])
def test_negative_zero_differs_from_zero(dtype: Any) -> None:
    zero = np.array([0.0, 1.0], dtype=dtype)
    negative = np.array([-0.0, 1.0], dtype=dtype)
    assert bool(np.all(zero == negative))  # numerically equal ...
    assert not same_bits(zero, negative)  # ... but not the same bits


def test_bf16_compares_bits_not_rounded_values() -> None:
    a = np.array([1.0], dtype=BF16)
    b = a.view(np.uint16) + np.uint16(1)  # the next bf16 after 1.0
    assert not same_bits(a, b.view(BF16))
    assert same_bits(a, np.array([1.0], dtype=BF16))


def test_dtype_and_shape_must_match() -> None:
    a = np.zeros((2, 3), dtype=np.float16)
    assert not same_bits(a, a.astype(np.float32))
    assert not same_bits(a, a.astype(BF16))
    assert not same_bits(a, a.reshape(3, 2))
    assert same_bits(np.zeros((0, 3), np.float16), np.zeros((0, 3), np.float16))


def test_integers_and_booleans() -> None:
    i = np.array([1, -2, 3], dtype=np.int64)
    assert same_bits(i, i.copy())
    assert not same_bits(i, i + 1)
    assert not same_bits(i, i.astype(np.int32))
    mask = np.array([True, False])
    assert same_bits(mask, mask.copy())
    assert not same_bits(mask, ~mask)


# --------------------------------------------------------------------------
# make_inputs
# --------------------------------------------------------------------------


def parse_func(text: str) -> FuncOp:
    module = npuir.parse_text(npuir.make_context(), text)
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    return func


def test_positive_inputs_where_an_op_needs_them() -> None:
    func = parse_func(
        """func.func @f(%x: tensor<64xf32>, %y: tensor<64xf16>) -> (tensor<64xf32>, tensor<64xf16>) {
  %s = npu.sqrt %x : (tensor<64xf32>) -> tensor<64xf32>
  %r = npu.rsqrt %y : (tensor<64xf16>) -> tensor<64xf16>
  func.return %s, %r : tensor<64xf32>, tensor<64xf16>
}
"""
    )
    for seed in range(4):
        x, y = make_inputs(func, [(64,), (64,)], seed, rank=0)
        assert x.dtype == np.float32 and y.dtype == np.float16
        assert bool(np.all(x > 0)) and bool(np.all(y > 0))


def test_inputs_may_be_negative_without_such_an_op() -> None:
    func = parse_func(
        """func.func @f(%x: tensor<256xf32>) -> tensor<256xf32> {
  %r = npu.relu %x : (tensor<256xf32>) -> tensor<256xf32>
  func.return %r : tensor<256xf32>
}
"""
    )
    (x,) = make_inputs(func, [(256,)], 0, rank=0)
    assert bool(np.any(x < 0))


def test_inputs_differ_by_seed_and_rank() -> None:
    func = parse_func(
        """func.func @f(%x: tensor<16xf32>) -> tensor<16xf32> {
  %r = npu.relu %x : (tensor<16xf32>) -> tensor<16xf32>
  func.return %r : tensor<16xf32>
}
"""
    )

    def draw(seed: int, rank: int) -> Array:
        return make_inputs(func, [(16,)], seed, rank)[0]

    np.testing.assert_array_equal(draw(0, 0), draw(0, 0))
    assert not np.array_equal(draw(0, 0), draw(1, 0))
    assert not np.array_equal(draw(0, 0), draw(0, 1))


@pytest.mark.parametrize(
    ("axis", "size"),
    [("", 3), ("{axis = 0 : i64}", 3), ("{axis = 1 : i64}", 5), ("{axis = -1 : i64}", 5)],
)
def test_gather_indices_stay_in_the_gathered_dim(axis: str, size: int) -> None:
    out = "64x5xf16" if size == 3 else "3x64xf16"
    func = parse_func(
        f"""func.func @f(%d: tensor<3x5xf16>, %i: tensor<64xi64>) -> tensor<{out}> {{
  %g = npu.gather %d, %i {axis} : (tensor<3x5xf16>, tensor<64xi64>) -> tensor<{out}>
  func.return %g : tensor<{out}>
}}
"""
    )
    for seed in range(4):
        _, idx = make_inputs(func, [(3, 5), (64,)], seed, rank=0)
        assert idx.dtype == np.int64
        assert 0 <= int(idx.min()) and int(idx.max()) < size
        assert int(idx.max()) == size - 1  # the whole range is drawn, not a sliver of it


def test_gather_indices_through_wait_tensor_and_a_dynamic_table() -> None:
    func = parse_func(
        """func.func @f(%d: tensor<?x4xf16>, %i: tensor<32xi32>, %x: tensor<4xf16>) -> tensor<32x4xf16> {
  %y = npu.relu %x : (tensor<4xf16>) -> tensor<4xf16>
  %g = stream.switch "1" -> tensor<32x4xf16> {
    %iw = stream.wait_tensor %i after %y : tensor<32xi32>, tensor<4xf16>
    %g0 = npu.gather %d, %iw : (tensor<?x4xf16>, tensor<32xi32>) -> tensor<32x4xf16>
    stream.yield %g0 : tensor<32x4xf16>
  }
  func.return %g : tensor<32x4xf16>
}
"""
    )
    for seed in range(4):
        _, idx, _ = make_inputs(func, [(2, 4), (32,), (4,)], seed, rank=0)
        assert idx.dtype == np.int32
        assert set(np.unique(idx).tolist()) <= {0, 1}


def test_gather_on_an_empty_axis_is_an_error() -> None:
    func = parse_func(
        """func.func @f(%d: tensor<?x4xf16>, %i: tensor<2xi64>) -> tensor<2x4xf16> {
  %g = npu.gather %d, %i : (tensor<?x4xf16>, tensor<2xi64>) -> tensor<2x4xf16>
  func.return %g : tensor<2x4xf16>
}
"""
    )
    with pytest.raises(DiagnosticError, match="indexes an empty axis"):
        make_inputs(func, [(0, 4), (2,)], 0, rank=0)


GEARED = """module attributes {npu.target = "tiny"} {
  func.func @f(%d: tensor<?x4xf16> {gear.dims = #gear.dims<0: [3, 5]>}, %i: tensor<16xi64>,
               %x: tensor<?x4xf32> {gear.dims = #gear.dims<0: [3, 5]>})
      -> (tensor<16x4xf16>, tensor<?x4xf32>) attributes {gear.policy = "zip"} {
    %g = npu.gather %d, %i : (tensor<?x4xf16>, tensor<16xi64>) -> tensor<16x4xf16>
    %s = npu.sqrt %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
    func.return %g, %s : tensor<16x4xf16>, tensor<?x4xf32>
  }
}
"""


def test_run_draws_inputs_from_the_program_as_written(tmp_path: Any) -> None:
    """After gear-multiversion the entry is a dispatcher whose body no longer shows the
    gather or the sqrt; the inputs still respect both."""
    path = tmp_path / "geared.mlir"
    path.write_text(GEARED)
    for seed in range(3):
        config = RunConfig(path=str(path), shapes={"0": (3, 4), "2": (3, 4)}, seed=seed, check=True)
        outcome = run_program(config)
        assert outcome.status == 0
        assert outcome.report["gears"] == ["@f_g0 (gear 0)"]
        _, idx, x = outcome.inputs[0]
        assert int(idx.max()) < 3
        assert bool(np.all(x > 0))
        assert not np.isnan(outcome.outputs[0][1]).any()


# --------------------------------------------------------------------------
# Collectives over real ranks
# --------------------------------------------------------------------------

COLLECTIVES = """module attributes {npu.target = "tiny"} {
  func.func @spmd(%x: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<2x3xf32>, tensor<8x3xf32>,
                                          tensor<4x3xf32>) {
    %ar = npu.all_reduce %x {group_size = 2 : i64, group = "ar"} : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %rs = npu.reduce_scatter %x {group_size = 2 : i64, group = "rs"} : (tensor<4x3xf32>) -> tensor<2x3xf32>
    %ag = npu.all_gather %x {group_size = 2 : i64, group = "ag"} : (tensor<4x3xf32>) -> tensor<8x3xf32>
    %aa = npu.all_to_all %x {group_size = 2 : i64, group = "aa"} : (tensor<4x3xf32>) -> tensor<4x3xf32>
    func.return %ar, %rs, %ag, %aa : tensor<4x3xf32>, tensor<2x3xf32>, tensor<8x3xf32>, tensor<4x3xf32>
  }
}
"""


def test_collectives_reduce_over_the_real_peers_inputs(tmp_path: Any) -> None:
    """Four real ranks in two groups of two, each rank with its own input: every result is
    numpy's reduction over the inputs of the ranks of its own group."""
    path = tmp_path / "coll.mlir"
    path.write_text(COLLECTIVES)
    outcome = run_program(RunConfig(path=str(path), ranks=4, seed=3))
    x = [inputs[0] for inputs in outcome.inputs]
    assert len(x) == 4 and not np.array_equal(x[0], x[1]) and not np.array_equal(x[2], x[3])
    for rank, (ar, rs, ag, aa) in enumerate(outcome.outputs):
        first = rank - rank % 2
        peers = x[first : first + 2]
        position = rank - first
        np.testing.assert_array_equal(ar, peers[0] + peers[1])
        np.testing.assert_array_equal(rs, (peers[0] + peers[1])[2 * position : 2 * position + 2])
        np.testing.assert_array_equal(ag, np.concatenate(peers))
        # all_to_all: chunk `position` of every peer, in peer order.
        np.testing.assert_array_equal(
            aa, np.concatenate([p[2 * position : 2 * position + 2] for p in peers])
        )
    assert outcome.report["mirrored_peers"] is None


def test_a_partial_group_is_refused_not_copied(tmp_path: Any) -> None:
    """Three ranks leave rank 2 alone in the group of ranks 2-3: today's main returned twice
    rank 2's input from its all_reduce; now it is a located error, and with mirroring the
    report lists the mirrored peer."""
    path = tmp_path / "coll.mlir"
    path.write_text(COLLECTIVES)
    with pytest.raises(DiagnosticError) as info:
        run_program(RunConfig(path=str(path), ranks=3))
    message = info.value.diagnostic.message
    assert "'npu.all_reduce' (%ar) has group_size = 2 (ranks 2-3)" in message
    assert "only rank(s) 2 of its group run" in message
    mirrored = run_program(RunConfig(path=str(path), ranks=3, mirror_peers=True))
    assert [g["op"] for g in mirrored.report["mirrored_peers"]] == [
        "'npu.all_reduce' (%ar)",
        "'npu.reduce_scatter' (%rs)",
        "'npu.all_gather' (%ag)",
        "'npu.all_to_all' (%aa)",
    ]
    assert {tuple(g["mirrored_ranks"]) for g in mirrored.report["mirrored_peers"]} == {(3,)}


def test_entries_and_ranks_must_agree(tmp_path: Any) -> None:
    path = tmp_path / "coll.mlir"
    path.write_text(COLLECTIVES)
    with pytest.raises(UsageError, match="--entries names 2 function"):
        run_program(RunConfig(path=str(path), entries=["spmd", "spmd"], ranks=4))
    agreed = run_program(RunConfig(path=str(path), entries=["spmd", "spmd"], ranks=2))
    assert agreed.report["ranks"] == 2


def test_run_ranks_refuses_a_partial_group_unless_mirrored() -> None:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, COLLECTIVES)
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    with pytest.raises(NumericsError, match="only rank\\(s\\) 0 of its group run") as info:
        run_ranks(module, [func], [[x]])
    assert info.value.op is not None and info.value.op.name == "npu.all_reduce"
    ((ar, _, ag, _),) = run_ranks(module, [func], [[x]], mirror_peers=True)
    np.testing.assert_array_equal(ar, 2 * x)
    np.testing.assert_array_equal(ag, np.concatenate([x, x]))
