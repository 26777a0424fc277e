"""Every report lists the ops costed by estimate and their share of the makespan."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from npuir.backends.npu.estimates import DATA_DEPENDENT, OPAQUE
from npuir.driver.advise import AdviseConfig, advise
from npuir.driver.run import RunConfig, run_program

SCHEMA = Path(__file__).resolve().parents[3] / "docs" / "json-schema" / "npuir-run.schema.json"

MIXED = """
!t = tensor<256x256xf16>
func.func @f(%x: !t, %m: tensor<16x16xi1>) -> (!t, tensor<?x2xi64>) {
  %a = npu.opaque %x {ge_type = "Where", engine = "aicpu"} : (!t) -> !t
  %b = npu.opaque %a {ge_type = "Where", engine = "aicpu"} : (!t) -> !t
  %c = npu.opaque %x {ge_type = "Cumsum", engine = "vector"} : (!t) -> !t
  %d = npu.add %b, %c : (!t, !t) -> !t
  %nz = npu.nonzero %m : (tensor<16x16xi1>) -> tensor<?x2xi64>
  %e = npu.add %nz, %nz : (tensor<?x2xi64>, tensor<?x2xi64>) -> tensor<?x2xi64>
  func.return %d, %e : !t, tensor<?x2xi64>
}
"""

FUSED = """
func.func @f(%q: tensor<1x8x128x64xf16>, %k: tensor<1x2x128x64xf16>, %x: tensor<64x32xf16>,
             %w: tensor<4x32x64xf16>, %offs: tensor<4xi32>) -> (tensor<1x8x128x64xf16>, tensor<64x64xf16>) {
  %o = npu.fusion_attention %q, %k, %k {causal} : (tensor<1x8x128x64xf16>, tensor<1x2x128x64xf16>, tensor<1x2x128x64xf16>) -> tensor<1x8x128x64xf16>
  %y = npu.grouped_matmul %x, %w, %offs : (tensor<64x32xf16>, tensor<4x32x64xf16>, tensor<4xi32>) -> tensor<64x64xf16>
  func.return %o, %y : tensor<1x8x128x64xf16>, tensor<64x64xf16>
}
"""


def _run(tmp_path: Path, text: str) -> dict[str, object]:
    path = tmp_path / "program.mlir"
    path.write_text(text)
    outcome = run_program(RunConfig(path=str(path), source=text, timing_only=True))
    assert outcome.status == 0
    return outcome.report


def test_the_run_report_lists_each_kind_with_its_reason_and_share(tmp_path: Path) -> None:
    report = _run(tmp_path, MIXED)
    estimated = report["estimated_ops"]
    assert isinstance(estimated, dict)
    assert estimated["kinds"] == {"Where": 2, "Cumsum": 1, "npu.nonzero": 1}
    by_kind = {o["kind"]: o for o in estimated["ops"]}
    assert by_kind["Where"]["reason"] == by_kind["Cumsum"]["reason"] == OPAQUE
    assert by_kind["npu.nonzero"]["reason"] == DATA_DEPENDENT
    shares = [o["share"] for o in estimated["ops"]]
    assert shares == sorted(shares, reverse=True)  # the largest first
    # Each kind's share is within the union's, and the union is within the makespan and no
    # more than the kinds' shares added up (estimates side by side count once).
    assert all(0 < s <= estimated["share"] for s in shares)
    assert estimated["share"] <= min(1.0, sum(shares) + 1e-12)
    # As `npuir-run --json` prints it: the report, after the schema version.
    printed = {"schema": 1, **json.loads(json.dumps(report))}
    jsonschema.validate(printed, json.loads(SCHEMA.read_text()))
    [line] = [w for w in report["why"] if "costed by estimate" in w]
    assert "Where x2" in line and "Cumsum" in line and f"{estimated['share']:.1%}" in line


def test_advice_lists_them_too(tmp_path: Path) -> None:
    path = tmp_path / "program.mlir"
    path.write_text(MIXED)
    advice = advise(AdviseConfig(path=str(path)))
    assert any("costed by estimate" in r and "Cumsum" in r for r in advice.reasons)


def test_the_fused_kernels_have_cost_rules_so_nothing_is_estimated(tmp_path: Path) -> None:
    report = _run(tmp_path, FUSED)
    assert report["estimated_ops"] is None
    assert not [w for w in report["why"] if "costed by estimate" in w]
