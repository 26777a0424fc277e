"""The model zoo (`bench/zoo.py`) through both torch routes, as a TorchAir user takes them.

Each tiny `transformers` model (random weights, nothing downloaded), in each phase (a prefill
that fills the KV cache, one decode step on it, or an encoder's pass):

- `torch.compile` with npuir's backend, the model carrying a user's `npu_stream_switch`
  (added by subclassing its first layer's feed-forward block): the whole graph runs as one
  npuir program (no split, nothing run eagerly), its outputs (logits and the cache) match
  eager's, the report gives the makespans and shows the user's scope;
- `torch.export` of the model, saved as a `.pt2`, and `npuir-advise` on the archive: exit 0
  and the table of variants.

`make test` runs the models issue 35 names (`zoo.CORE`, 14 cases; advise on the 8 first phases: its CPU budget);
`NPUIR_ZOO=all` runs every model of the zoo, the cheap extras too (24 cases):
`NPUIR_ZOO=all .venv/bin/python -m pytest -q test/unit/frontends/test_zoo.py`.

A case whose graph still needs an op another part of issue 35 adds (Core ATen ops in
`frontends/aten_core.py`; attention, grouped matmul and MoE routing in
`frontends/aten_fused.py`) is `xfail(strict=True)` naming those ops, so it turns into a
failure the day they land and the mark must go.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import zoo  # noqa: E402  (bench/zoo.py)

import npuir.torchair as tng  # noqa: E402

pytestmark = [pytest.mark.torch]

RTOL = 1e-4
"""f32 against eager: relative to each output's largest magnitude (a logit near zero is
compared at the scale of the others, as a relative tolerance means for a tensor)."""

MISSING: dict[str, str] = {}
"""Model -> the ops (not aten_models.py's to add) its compiled graph still runs eagerly
(`bench/zoo.py --missing` lists them): none since aten_core and aten_fused."""


CASES = [
    (name, phase)
    for name, phase in zoo.CASES
    if name in zoo.CORE or os.environ.get("NPUIR_ZOO") == "all"
]
"""The cases this run checks (`NPUIR_ZOO=all`: every one)."""


def _cases() -> list[Any]:
    out = []
    for name, phase in CASES:
        marks = []
        if name in MISSING:
            marks.append(pytest.mark.xfail(strict=True, reason="missing: " + MISSING[name]))
        out.append(pytest.param(name, phase, id=f"{name}-{phase}", marks=marks))
    return out


def _flat(value: Any) -> list[Any]:
    if isinstance(value, torch.Tensor):
        return [value]
    return [t for v in value for t in _flat(v)]


@pytest.mark.parametrize(("name", "phase"), _cases())
def test_torch_compile_runs_the_model_on_npuir(name: str, phase: str) -> None:
    model = zoo.scoped(name, zoo.build(name))
    module = zoo.wrapped(name, model)
    xs = zoo.inputs(name, phase, model)
    backend = tng.get_npu_backend()
    torch._dynamo.reset()
    with torch.no_grad():
        want = _flat(module(*xs))
        got = _flat(torch.compile(module, backend=backend, fullgraph=True, dynamic=False)(*xs))
    # One npuir program, nothing eager: no split, no op left to torch.
    eager = sorted({op for r in backend.reports for op in r.fallback_ops})
    assert not backend.splits and not eager, f"runs eagerly: {eager}"
    (report,) = backend.reports
    assert report.part is None and len(backend.modules) == 1
    # The numbers are npuir's and match eager's.
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        scale = float(w.abs().max()) or 1.0
        torch.testing.assert_close(g, w, rtol=RTOL, atol=RTOL * scale)
    # A makespan for every variant, none below the bound.
    spans = report.makespans_ns
    assert set(spans) == {"as annotated", "one stream", "ge (GE default)", "auto"}
    assert all(ns is not None and ns > 0 for ns in spans.values()), spans
    assert report.lower_bound_ns is not None
    assert all(report.lower_bound_ns <= ns for ns in spans.values() if ns is not None)
    # The user's scope, with the ops of the block it wraps.
    assert report.scopes.get(zoo.SCOPE_TAG, 0) > 0, report.scopes
    assert f"'{zoo.SCOPE_TAG}' (" in report.render()


ADVISE_CASES = [
    (name, phase)
    for name, phase in CASES
    if os.environ.get("NPUIR_ZOO") == "all" or phase == zoo.ZOO[name].phases[0]
]
"""The exports advise runs on: each model's first phase (prefill, or its encoder pass);
`NPUIR_ZOO=all` adds the decode steps (the same graph with a cache read, which the compile
test above checks in every phase; left out of `make test` for its time budget)."""


@pytest.mark.parametrize(
    ("name", "phase"), [pytest.param(*c, id="-".join(c)) for c in ADVISE_CASES]
)
def test_npuir_advise_takes_the_export(
    name: str, phase: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`npuir-advise model.pt2`, run in this process (its `main`, as the console script
    runs it, without a second interpreter's start-up: test_pt2_models runs the script)."""
    from npuir.tools.advise import main

    model = zoo.build(name)
    module = zoo.wrapped(name, model)
    with torch.no_grad():
        ep = torch.export.export(module, zoo.inputs(name, phase, model))
    path = tmp_path / f"{name}-{phase}.pt2"
    torch.export.save(ep, path)
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        main([str(path)])
    out, err = capsys.readouterr()
    assert done.value.code == 0, err
    rows = [line.split()[0:2] for line in out.splitlines() if line.strip()]
    for row in (["as", "written"], ["single", "stream"], ["auto", "(per"], ["lower", "bound"]):
        assert row in rows, out


def test_scoped_subclasses_only_the_first_block() -> None:
    """The scope wraps one block: its class is a subclass of the model's, the other layers'
    blocks keep theirs, and the numbers are unchanged outside a trace."""
    from transformers.models.llama.modeling_llama import LlamaMLP

    name = "llama"
    plain = zoo.build(name)
    model = zoo.scoped(name, zoo.build(name))
    blocks = [m for m in model.modules() if isinstance(m, LlamaMLP)]
    assert [type(b).__name__ for b in blocks] == ["ScopedLlamaMLP", "LlamaMLP"]
    xs = zoo.inputs(name, "prefill", model)
    with torch.no_grad():
        for a, b in zip(zoo.wrapped(name, model)(*xs), zoo.wrapped(name, plain)(*xs)):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
