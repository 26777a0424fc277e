"""The ops importers need: conv2d, pool2d, layout_transform, leaky_relu, opaque.

Their kernels against direct loops, their costs, and opaque's missing kernel.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import IntegerType, Signedness, TensorType

import npuir
from npuir.backends.npu.cost import matmul_tiles, op_work
from npuir.backends.npu.hardware import PRESETS
from npuir.backends.npu.kernels import MissingKernelError, kernel_for, numpy_dtype
from npuir.dialects.npu import Conv2dOp, Engine, NpuOp, OpaqueOp, dtype_name, element_bytes


def _ops(text: str) -> list[NpuOp]:
    module = npuir.parse_text(npuir.make_context(), text)
    return [op for op in module.walk() if isinstance(op, NpuOp)]


def test_unsigned_element_types_have_names_sizes_and_numpy_dtypes() -> None:
    ui64 = IntegerType(64, Signedness.UNSIGNED)
    assert dtype_name(ui64) == "ui64" and element_bytes(ui64) == 8
    assert dtype_name(IntegerType(8)) == "i8" and element_bytes(IntegerType(8)) == 1
    assert numpy_dtype("ui8") == np.dtype(np.uint8)
    assert numpy_dtype("i8") == np.dtype(np.int8)


def _direct_conv(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ho, wo = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, ho, wo))
    for i in range(ho):
        for j in range(wo):
            patch = xp[:, :, i * stride : i * stride + kh, j * stride : j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out


def test_conv2d_kernel_matches_the_direct_loops() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 9, 7)).astype(np.float32)
    w = rng.standard_normal((5, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    (y,) = kernel_for("npu.conv2d")([x, w, b], {"strides": (2, 2), "pads": (1, 1, 1, 1)})
    want = _direct_conv(x, w, 2, 1) + b.reshape(1, 5, 1, 1)
    assert y.shape == (2, 5, 5, 4)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_conv2d_int8_accumulates_into_the_result_type() -> None:
    x = np.full((1, 2, 2, 2), 100, np.int8)
    w = np.full((1, 2, 2, 2), 100, np.int8)
    (y,) = kernel_for("npu.conv2d")([x, w], {"result_dtypes": ("i32",)})
    assert y.dtype == np.int32 and int(y[0, 0, 0, 0]) == 8 * 100 * 100


def test_pool2d_max_with_ceil_mode_and_global_average() -> None:
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    (m,) = kernel_for("npu.pool2d")(
        [x], {"kind": "max", "window": (2, 2), "strides": (2, 2), "ceil_mode": True}
    )
    # Ceil mode keeps the last, partial window: rows/cols 4 alone.
    assert m[0, 0].tolist() == [[6, 8, 9], [16, 18, 19], [21, 23, 24]]
    (a,) = kernel_for("npu.pool2d")([x], {"kind": "avg", "window": (5, 5)})
    assert a.shape == (1, 1, 1, 1) and a[0, 0, 0, 0] == pytest.approx(12.0)


def test_leaky_relu_and_layout_transform_kernels() -> None:
    x = np.array([-2.0, 3.0], np.float32)
    (y,) = kernel_for("npu.leaky_relu")([x], {"negative_slope": 0.5})
    assert y.tolist() == [-1.0, 3.0]
    (z,) = kernel_for("npu.layout_transform")([x], {})
    assert z.tolist() == x.tolist() and z is not x


def test_opaque_has_no_kernel() -> None:
    with pytest.raises(MissingKernelError):
        kernel_for("npu.opaque")


_IR = """
func.func @f(%x: tensor<1x64x56x56xf16>, %w: tensor<64x64x3x3xf16>, %s: tensor<64xui64>) {
  %y = npu.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x56x56xf16>, tensor<64x64x3x3xf16>) -> tensor<1x64x56x56xf16>
  %q = npu.opaque %y, %s {ge_type = "AscendQuant", engine = "vector"} : (tensor<1x64x56x56xf16>, tensor<64xui64>) -> tensor<1x64x56x56xi8>
  %h = npu.opaque %s {ge_type = "RequantHostCpuOp", engine = "aicpu"} : (tensor<64xui64>) -> tensor<64xf32>
  func.return
}
"""


def test_conv2d_costs_real_flops_as_an_implicit_gemm() -> None:
    conv, _, _ = _ops(_IR)
    assert isinstance(conv, Conv2dOp) and conv.engine is Engine.CUBE
    assert conv.flops() == 2 * (56 * 56) * 64 * (64 * 9)
    work = op_work(conv, PRESETS["910b2"])
    # M = 56*56 output pixels by N = 64 output channels, not the NCHW result's last dims.
    assert work.engine == "cube" and work.tiles == matmul_tiles(PRESETS["910b2"], 3136, 64)
    assert work.flops == conv.flops()


def test_opaque_engine_and_cost_come_from_its_attributes_and_tensors() -> None:
    _, quant, host = _ops(_IR)
    assert isinstance(quant, OpaqueOp) and quant.engine is Engine.VECTOR
    assert host.engine is Engine.AICPU
    out = quant.results[0].type
    assert isinstance(out, TensorType)
    assert quant.flops() == 64 * 56 * 56
    assert quant.bytes_moved() == 64 * 56 * 56 * (2 + 1) + 64 * 8
    assert op_work(host, PRESETS["910b2"]).engine == "aicpu"
