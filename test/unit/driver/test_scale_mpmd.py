"""MPMD at scale: entry functions that are copies of each other are parsed and lowered once
(`npuir.driver.identical`), every rank still simulated, and the run reports what the SPMD
form of the same program reports, and what parsing every copy reports, errors included."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.func import FuncOp

import npuir
import npuir.driver.run as run_module
from npuir.diagnostics import op_location
from npuir.driver.advise import AdviseConfig, advise
from npuir.driver.identical import share_identical, text_copies
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


def test_copies_are_blanked_from_the_text_with_every_offset_kept() -> None:
    text = _module({"r0": BODY, "r1": BODY, "r2": OTHER, "r3": BODY})
    blanked, copied = text_copies(text, ["r1", "r0", "r2", "r3"])
    # The first copy in the entries' order is kept, as `share_identical` keeps it.
    assert copied == {"r0": "r1", "r3": "r1"}
    assert len(blanked) == len(text)
    assert [i for i, c in enumerate(blanked) if c == "\n"] == [
        i for i, c in enumerate(text) if c == "\n"
    ]
    module = npuir.parse_text(npuir.make_context(), blanked, "m.mlir")
    assert [f.sym_name.data for f in module.ops if isinstance(f, FuncOp)] == ["r1", "r2"]
    # The kept function is where it was in the whole text.
    kept = next(f for f in module.ops if isinstance(f, FuncOp))
    assert text.splitlines()[op_location(kept).line - 1].lstrip().startswith("func.func @r1")


@pytest.mark.parametrize(
    "bodies",
    [
        {"r0": BODY, "r1": OTHER},  # different bodies
        {"r0": BODY, "r1": BODY.replace("%b, %x", "%b,  %x")},  # different text
    ],
)
def test_functions_whose_text_differs_are_all_parsed(bodies: dict[str, str]) -> None:
    text = _module(bodies)
    assert text_copies(text, list(bodies)) == (text, {})


def test_a_declaration_or_one_entry_is_not_blanked() -> None:
    decl = "(tensor<64x64xf16>) -> tensor<64x64xf16>"
    text = _module({"r0": BODY, "r1": BODY}).replace(
        "  func.func @r1",
        f"  func.func private @d0{decl}\n  func.func private @d1{decl}\n" + "  func.func @r1",
    )
    assert text_copies(text, ["d0", "d1"]) == (text, {})
    assert text_copies(text, ["r0", "r0"]) == (text, {})
    assert text_copies(text, ["r0", "r1"])[1] == {"r1": "r0"}


def _run(path: Path, entries: list[str]) -> dict[str, object]:
    return run_program(RunConfig(path=str(path), entries=entries, timing_only=True)).report


def test_a_run_of_text_copies_reports_what_parsing_every_copy_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "mpmd.mlir"
    path.write_text(_module({"r0": BODY, "r1": OTHER, "r2": BODY, "r3": BODY}))
    entries = ["r0", "r1", "r2", "r3"]
    assert text_copies(path.read_text(), entries)[1] == {"r2": "r0", "r3": "r0"}
    shared = _run(path, entries)
    monkeypatch.setattr(run_module, "text_copies", lambda text, names: (text, {}))
    assert _run(path, entries) == shared


@pytest.mark.parametrize(
    "bad",
    [
        BODY.replace("group_size = 4", "group_size = 0"),  # the verifier's
        BODY.replace("npu.add %b, %x", "npu.add %b, %b, %x"),  # the parser's
    ],
)
def test_an_error_in_a_copied_function_is_said_where_the_whole_text_says_it(
    tmp_path: Path, bad: str
) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(_module({"r0": BODY, "r1": bad, "r2": bad}))
    with pytest.raises(npuir.DiagnosticError) as shared:
        _run(path, ["r0", "r1", "r2"])
    with pytest.raises(npuir.DiagnosticError) as whole:
        npuir.parse_text(npuir.make_context(), path.read_text(), str(path))
    said, expected = shared.value.diagnostic, whole.value.diagnostic
    assert (said.kind, said.location, said.message) == (
        expected.kind,
        expected.location,
        expected.message,
    )
