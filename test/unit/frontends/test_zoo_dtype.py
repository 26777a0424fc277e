"""The model zoo in f16 and bf16 (`bench/zoo.py --dtype`): the comparison rule, and one MoE
model's decode step through both torch routes.

The whole table (every model and phase, both dtypes and routes) is a bench command, its
result in docs/benchmarks.md; here the rule is checked on small tensors, and one case that
has every part the rule is for (an MoE's routing, a decode step's cache read back) runs
through `torch.compile` with npuir's backend and through `torch.export` + `npuir-advise` +
`npuir-run`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import zoo  # noqa: E402  (bench/zoo.py)

pytestmark = [pytest.mark.torch]

F16_TOL = 2 * torch.finfo(torch.float16).eps


def _never() -> list[Any]:
    raise AssertionError("the f64 run is only for outputs over the tolerance")


def test_tolerance_is_the_kernel_tests_twice_epsilon() -> None:
    """test_kernels.py compares an f16/bf16 kernel at `rtol=2 * eps` of its dtype."""
    assert zoo.tolerance("float16") == F16_TOL
    assert zoo.tolerance("bfloat16") == 2 * torch.finfo(torch.bfloat16).eps


def test_each_output_is_judged_at_its_own_scale() -> None:
    """An error of one unit in the last place of large logits passes; the same absolute
    error in an output of small values (a layer's cache) is far over that output's
    tolerance, whatever the other outputs' magnitudes (the rule this replaced judged every
    output at the largest magnitude of all, and at no less than 1)."""
    logits = torch.tensor([3.0, -2.5, 0.75], dtype=torch.float16)
    ulp = float(torch.finfo(torch.float16).eps) * 2  # one ulp at 3.0 (in [2, 4))
    cache = torch.tensor([0.01, -0.02, 0.005], dtype=torch.float16)
    near = [logits + torch.tensor([ulp, 0.0, 0.0], dtype=torch.float16), cache.clone()]
    (a, b) = zoo.compare(near, [logits, cache], "float16", _never)
    assert a.rel_err <= F16_TOL and b.rel_err == 0.0
    off = 0.0015  # under 2 eps absolutely, but 7.5% of the cache's largest value
    far = [logits.clone(), cache + torch.tensor([off, 0.0, 0.0], dtype=torch.float16)]
    outputs = zoo.compare(far, [logits, cache], "float16", lambda: [logits, cache])
    assert outputs[0].passed(F16_TOL)
    assert outputs[1].rel_err > 10 * F16_TOL and not outputs[1].passed(F16_TOL)


def test_over_the_tolerance_passes_only_if_no_less_accurate_than_eager() -> None:
    """Where npuir and eager differ by more than the tolerance, both are measured against
    the f64 result: npuir passes where it is the nearer (eager rounded a routing the other
    way), fails where eager is."""
    exact = torch.tensor([1.0, 0.5, -0.25], dtype=torch.float64)
    eager = torch.tensor([1.0, 0.5, -0.3], dtype=torch.float16)
    close = torch.tensor([1.0, 0.5, -0.25], dtype=torch.float16)
    (better,) = zoo.compare([close], [eager], "float16", lambda: [exact])
    assert better.rel_err > F16_TOL and better.f64 is not None
    assert better.f64[0] < better.f64[1] and better.passed(F16_TOL)
    worse = torch.tensor([1.0, 0.5, -0.2], dtype=torch.float16)
    eager_close = torch.tensor([1.0, 0.5, -0.26], dtype=torch.float16)
    (bad,) = zoo.compare([worse], [eager_close], "float16", lambda: [exact])
    assert bad.f64 is not None and bad.f64[0] > bad.f64[1] and not bad.passed(F16_TOL)


def test_a_nan_or_a_shape_eager_does_not_have_fails() -> None:
    want = torch.tensor([1.0, float("nan")], dtype=torch.bfloat16)
    assert zoo.relative_error(want.clone(), want) == 0.0  # NaN where eager has NaN agrees
    assert zoo.relative_error(torch.tensor([float("nan"), 1.0]), want) == math.inf
    assert zoo.relative_error(torch.zeros(3), torch.zeros(2)) == math.inf
    (out,) = zoo.compare([torch.zeros(3)], [torch.ones(2)], "bfloat16", lambda: [torch.ones(2)])
    assert not out.passed(zoo.tolerance("bfloat16"))


def test_the_f64_reference_computes_on_the_inputs_eager_takes() -> None:
    """A decode step's f64 run reads the cache the low-precision model filled (rounded,
    then widened), so its grown cache starts with exactly those values: its error against
    eager is eager's rounding, not another prefill's."""
    kind = torch.bfloat16
    model = zoo.build("llama").to(kind)
    _, *cache = zoo.inputs("llama", "decode", model)
    exact = zoo.f64_outputs("llama", "decode", "bfloat16")
    assert all(t.dtype == torch.float64 for t in exact)
    for given, grown in zip(cache, exact[1:], strict=True):
        assert given.dtype == kind
        assert torch.equal(grown[..., : zoo.SEQ, :], given.double())


@pytest.mark.parametrize("route", ["compile", "export"])
def test_moe_decode_step_in_bf16_matches_eager(route: str, tmp_path: Path) -> None:
    """Qwen2-MoE's decode step in bf16: its cache read back and grown, its experts routed
    by top-k, all in npuir (no eager part; through the export, npuir-advise exits 0 with
    its table before npuir-run computes)."""
    if route == "compile":
        r = zoo.numerics("qwen2-moe", "decode", "bfloat16")
    else:
        r = zoo.export_numerics("qwen2-moe", "decode", "bfloat16", tmp_path)
    assert not r.error and r.eager_parts == 0
    # The logits and each layer's grown keys and values.
    assert len(r.outputs) == 1 + 2 * 2
    assert r.passed, zoo.numerics_row(r)
