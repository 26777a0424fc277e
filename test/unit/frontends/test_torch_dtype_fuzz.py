"""Dtypes x ops through `torch.compile` with npuir's backend (issue 37, item 6).

The policy (the torch backend's module docstring): an op or a dtype npuir cannot take
(complex64, the fft's intermediates) splits the graph there and runs eagerly; float64,
int8 and uint8 are element types and run on npuir.  Each case is a small function of a
generated set -- elementwise ops with a tensor or a scalar, a matmul, reductions, casts,
an fft, operands of two dtypes -- on inputs of one dtype; it must match eager (bit for bit
on integers and bool, to the dtype's rounding on floats) with eager's dtype and shape,
run on npuir unless it holds a dtype npuir lacks, and never raise a diagnostic located in
npuir's own source.  The set is seeded: every op and every dtype appear.

Found by it and fixed: bfloat16 inputs raised numpy's TypeError in the backend; mixed
operands (f64 + f32, a bool tensor times 3) were refused or raised xDSL's range error; an
int8/uint8/bool `sum(dim)` summed in the narrow type and wrapped.
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import npuir  # noqa: E402
import npuir.torchair as tng  # noqa: E402
from npuir.diagnostics import DiagnosticError  # noqa: E402
from npuir.frontends.torch import dtype_supported  # noqa: E402

pytestmark = [pytest.mark.torch]

NPUIR_SOURCE = Path(npuir.__file__).resolve().parents[1]
DTYPES = [
    torch.float32,
    torch.float16,
    torch.bfloat16,
    torch.float64,
    torch.int8,
    torch.uint8,
    torch.int32,
    torch.int64,
    torch.bool,
]
Fn = Callable[[Any, Any], Any]


def _numeric(x: Any) -> Any:
    """`x` as a type every op takes (bool tensors do not negate or multiply by a matrix)."""
    return x.to(torch.int32) if x.dtype == torch.bool else x


OPS: dict[str, Fn] = {
    "add": lambda x, y: x + y,
    "scalar": lambda x, y: x * 3 + 1,
    "sub_neg": lambda x, y: _numeric(x) - _numeric(y),
    "relu": lambda x, y: torch.relu(_numeric(x)),
    "exp": lambda x, y: torch.exp(x if x.is_floating_point() else x.to(torch.float32)),
    "matmul": lambda x, y: _numeric(x) @ _numeric(y).transpose(0, 1),
    "sum_dim": lambda x, y: x.sum(0),
    "amax": lambda x, y: _numeric(x).amax(1),
    "to_f32": lambda x, y: x.to(torch.float32) * 2,
    "to_i8": lambda x, y: x.to(torch.int8) + 1,
    "fft": lambda x, y: torch.fft.fft(x.to(torch.float32)).abs() + 1,
    "mixed": lambda x, y: x.to(torch.float64) + y.to(torch.float32),
}


def _cases(seed: int = 37, count: int = 30) -> list[tuple[str, Any]]:
    """`count` (op, dtype) pairs, every op and every dtype at least once, the rest drawn."""
    rng = random.Random(seed)
    ops, dtypes = list(OPS), list(DTYPES)
    rng.shuffle(ops)
    rng.shuffle(dtypes)
    cases = {(op, dtypes[i % len(dtypes)]) for i, op in enumerate(ops)}
    cases |= {(ops[i % len(ops)], dt) for i, dt in enumerate(dtypes)}
    while len(cases) < count:
        cases.add((rng.choice(ops), rng.choice(dtypes)))
    return sorted(cases, key=lambda c: (c[0], str(c[1])))


def _inputs(dtype: Any) -> tuple[Any, Any]:
    gen = torch.Generator().manual_seed(0)
    if dtype == torch.bool:
        return torch.rand(4, 5, generator=gen) > 0.5, torch.rand(4, 5, generator=gen) > 0.5
    if dtype.is_floating_point:
        return (
            torch.randn(4, 5, generator=gen).to(dtype),
            torch.randn(4, 5, generator=gen).to(dtype),
        )
    info = torch.iinfo(dtype)
    # Values that overflow the narrow types when summed, as torch computes them.
    low, high = max(info.min, -120), min(info.max, 120)
    return (
        torch.randint(low, high, (4, 5), dtype=dtype, generator=gen),
        torch.randint(low, high, (4, 5), dtype=dtype, generator=gen),
    )


def _close(got: Any, want: Any) -> bool:
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if not want.is_floating_point():
        return bool(torch.equal(got, want))
    eps = torch.finfo(want.dtype).eps
    return bool(torch.allclose(got.double(), want.double(), rtol=64 * eps, atol=64 * eps))


@pytest.mark.parametrize(("name", "dtype"), _cases(), ids=lambda v: str(v).replace("torch.", ""))
def test_dtype_and_op_follow_the_policy(name: str, dtype: Any) -> None:
    fn = OPS[name]
    x, y = _inputs(dtype)
    want = fn(x, y)
    torch._dynamo.reset()
    backend = tng.get_npu_backend()
    compiled = torch.compile(lambda a, b: fn(a, b), backend=backend, fullgraph=True)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = compiled(x, y)
    except DiagnosticError as exc:  # TorchairError is one
        location = exc.diagnostic.location
        assert location is None or not Path(location.filename).resolve().is_relative_to(
            NPUIR_SOURCE
        ), exc.diagnostic.render()
        raise
    assert _close(got, want), (got, want)
    split = [str(w.message) for w in caught if "the graph is split there" in str(w.message)]
    # Only a dtype npuir lacks (the fft's complex64) may send ops to eager here: every
    # other op of the set has an npu op.
    lacking = name == "fft" or not dtype_supported(dtype)
    assert bool(split) == bool(backend.splits) == lacking, split
    if lacking:
        assert any("complex64" in s for s in split)
    assert backend.modules, "no part ran on npuir"


def test_sum_of_every_dim_of_int8_matches_eager() -> None:
    def fn(x: Any) -> Any:
        return x.sum() + 1

    x = torch.full((4, 5), 100, dtype=torch.int8)
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=tng.get_npu_backend(), fullgraph=True)
    assert _close(compiled(x), fn(x))
