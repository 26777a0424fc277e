"""MPMD at scale: entry functions that are copies of each other are lowered once
(`npuir.driver.identical`), every rank still simulated, and the run reports what the SPMD
form of the same program reports."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.func import FuncOp

import npuir
from npuir.driver.advise import AdviseConfig, advise
from npuir.driver.identical import share_identical
from npuir.driver.run import RunConfig, run_program

BODY = """(%x: tensor<64x64xf16>, %w: tensor<64x64xf16>) -> tensor<64x64xf16> {
    %a = npu.matmul %x, %w : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
    %b = npu.all_reduce %a {group_size = 4 : i64, group = "tp"} : (tensor<64x64xf16>) -> tensor<64x64xf16>
    %c = npu.add %b, %x : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
    func.return %c : tensor<64x64xf16>
  }"""
OTHER = BODY.replace("npu.add %b, %x", "npu.mul %b, %x")


def _module(bodies: dict[str, str]) -> str:
    funcs = "\n".join(f"  func.func @{name}{body}" for name, body in bodies.items())
    return f'module attributes {{npu.target = "910b2"}} {{\n{funcs}\n}}\n'


def _names(text: str, entries: list[str]) -> tuple[list[str], list[str]]:
    module = npuir.parse_text(npuir.make_context(), text, "m.mlir")
    shared = share_identical(module, entries)
    left = [f.sym_name.data for f in module.ops if isinstance(f, FuncOp)]
    return shared, left


def test_copies_share_the_first_and_differing_functions_stay() -> None:
    text = _module({"r0": BODY, "r1": BODY, "r2": OTHER, "r3": BODY})
    shared, left = _names(text, ["r0", "r1", "r2", "r3"])
    assert shared == ["r0", "r0", "r2", "r0"]
    assert left == ["r0", "r2"]


def test_a_module_that_names_a_symbol_is_left_alone() -> None:
    caller = """(%x: tensor<64x64xf16>, %w: tensor<64x64xf16>) -> tensor<64x64xf16> {
    %c = func.call @r0(%x, %w) : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
    func.return %c : tensor<64x64xf16>
  }"""
    text = _module({"r0": BODY, "r1": BODY, "main": caller})
    shared, left = _names(text, ["r0", "r1"])
    assert shared == ["r0", "r1"] and left == ["r0", "r1", "main"]


@pytest.mark.slow
def test_an_mpmd_copy_reports_what_its_spmd_form_reports(tmp_path: Path) -> None:
    spmd = tmp_path / "spmd.mlir"
    spmd.write_text(_module({"r0": BODY}))
    mpmd = tmp_path / "mpmd.mlir"
    mpmd.write_text(_module({f"r{i}": BODY for i in range(4)}))
    entries = [f"r{i}" for i in range(4)]
    one = run_program(RunConfig(path=str(spmd), ranks=4, timing_only=True)).report
    many = run_program(RunConfig(path=str(mpmd), entries=entries, timing_only=True)).report
    assert many["entries"] == entries
    for key in ("makespan_ns", "single_stream_ns", "streams", "critical_path", "why"):
        assert many[key] == one[key], key


@pytest.mark.slow
def test_advise_searches_copies_once_and_emits_every_function(tmp_path: Path) -> None:
    spmd = tmp_path / "spmd.mlir"
    spmd.write_text(_module({"r0": BODY}))
    mpmd = tmp_path / "mpmd.mlir"
    mpmd.write_text(_module({"r0": BODY, "r1": BODY, "r2": BODY, "r3": BODY}))
    emitted = tmp_path / "advised.mlir"
    one = advise(AdviseConfig(path=str(spmd), ranks=4))
    many = advise(
        AdviseConfig(path=str(mpmd), entries=["r0", "r1", "r2", "r3"], emit_mlir=str(emitted))
    )
    rows = [(v.name, v.case, v.makespan_ns) for v in one.variants]
    assert [(v.name, v.case, v.makespan_ns) for v in many.variants] == rows
    assert any("copies of @r0" in r for r in many.reasons)
    module = npuir.parse_text(npuir.make_context(), emitted.read_text(), "advised.mlir")
    assert [f.sym_name.data for f in module.ops if isinstance(f, FuncOp)] == [
        "r0",
        "r1",
        "r2",
        "r3",
    ]
