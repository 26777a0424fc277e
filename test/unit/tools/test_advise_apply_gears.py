"""npuir-advise on a geared program says which gear gets which option, and what one
annotation shared by every gear costs each of them (text and `--json`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from npuir.driver.advise import AdviseConfig, advise
from npuir.tools.advise import run as advise_tool

GEARED = """\
module attributes {npu.target = "910b2"} {
  func.func @forward(%x: tensor<?x1024xf16> {gear.dims = #gear.dims<0: [2, 4096]>},
                     %w: tensor<1024x1024xf16>, %v: tensor<1024x1024xf16>)
      -> (tensor<?x1024xf16>, tensor<?x1024xf16>) {
    %a = npu.matmul %x, %w : (tensor<?x1024xf16>, tensor<1024x1024xf16>) -> tensor<?x1024xf16> loc("serve.py":10:8)
    %s = stream.switch "side" -> tensor<?x1024xf16> {
      %b = npu.matmul %x, %v : (tensor<?x1024xf16>, tensor<1024x1024xf16>) -> tensor<?x1024xf16> loc("serve.py":12:12)
      %c = npu.exp %b : (tensor<?x1024xf16>) -> tensor<?x1024xf16> loc("serve.py":13:12)
      stream.yield %c : tensor<?x1024xf16>
    } loc("serve.py":11:8)
    %d = npu.exp %a : (tensor<?x1024xf16>) -> tensor<?x1024xf16> loc("serve.py":14:8)
    func.return %d, %s : tensor<?x1024xf16>, tensor<?x1024xf16>
  }
}
"""
"""A decode-sized gear (2 tokens) and a prefill-sized one (4096) of one function with a side
stream: the gears' best options need not be the same."""


@pytest.mark.slow
def test_each_gear_gets_its_best_and_the_shared_annotations_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "geared.mlir"
    path.write_text(GEARED)
    advice = advise(AdviseConfig(path=str(path)))
    rec = advice.recommendation
    assert rec is not None and len(advice.cases) == 2
    assert set(rec.per_case) == set(advice.cases) == set(rec.shared_per_case)
    for case in advice.cases:
        rows = {v.name: v.makespan_ns for v in advice.variants if v.case == case}
        best, ns = rec.per_case[case]
        # Each gear's best row is the fastest of that gear's rows ...
        assert ns == rows[best] == min(n for n in rows.values() if n is not None)
        # ... and the shared annotation is that gear's makespan of the edits row.
        assert rec.shared_per_case[case] == rows[advice.best] >= ns
    assert rec.shared_ns == sum(advice.weights[c] * rec.shared_per_case[c] for c in advice.cases)
    text = advice.render()
    for case in advice.cases:
        assert any(
            line.strip().startswith(f"{case}:") and "shared" in line for line in text.split("\n")
        )
    assert advise_tool([str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["recommendation"]
    assert {(p["case"], p["shared_ns"]) for p in out["per_case"]} == set(
        rec.shared_per_case.items()
    )
