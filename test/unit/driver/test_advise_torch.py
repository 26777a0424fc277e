"""npuir-advise on torch models: every edit applies literally to the model's Python source,
and the edited model, exported again, runs at exactly the advised makespan."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from types import ModuleType

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from npuir.api import print_ir  # noqa: E402
from npuir.driver.advise import AdviseConfig, advise, apply_edits  # noqa: E402
from npuir.driver.run import RunConfig, time_program  # noqa: E402
from npuir.frontends.torch import import_exported_program  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]


def _module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _makespan(model_source: Path) -> int:
    ep = _module(model_source).export()
    text = print_ir(import_exported_program(ep), debuginfo=True)
    timed = time_program(RunConfig(path=str(model_source), source=text, timing_only=True))
    assert timed.result.deadlock is None
    return timed.result.makespan_ns


@pytest.mark.parametrize(
    "example",
    ["seed_multistream.py", "moe_decoder.py"],
)
def test_the_edits_apply_to_the_source_and_reproduce_the_advice(
    tmp_path: Path, example: str
) -> None:
    copy = tmp_path / example
    shutil.copy(ROOT / "examples" / example, copy)
    archive = tmp_path / "model.pt2"
    torch.export.save(_module(copy).export(), str(archive))
    advice = advise(AdviseConfig(path=str(archive)))
    spans = {v.name: v.makespan_ns for v in advice.variants}
    advised = advice.advised_ns[None]
    assert advised is not None and spans["as written"] is not None
    assert not advice.keep and advice.edits
    assert advised < spans["as written"]
    # Every edit names the model's own file, by whole statements.
    assert all(e.file == str(copy) for e in advice.edits)
    edited = tmp_path / "edited" / example
    edited.parent.mkdir()
    edited.write_text(apply_edits(copy.read_text(), advice.edits))
    assert _makespan(edited) == advised


def test_a_removed_scope_names_its_with_line(tmp_path: Path) -> None:
    copy = tmp_path / "seed_multistream.py"
    shutil.copy(ROOT / "examples" / "seed_multistream.py", copy)
    archive = tmp_path / "seed.pt2"
    torch.export.save(_module(copy).export(), str(archive))
    advice = advise(AdviseConfig(path=str(archive)))
    lines = copy.read_text().splitlines()
    for edit in advice.edits:
        if edit.kind in ("remove-scope", "retag-scope"):
            assert lines[edit.first_line - 1].strip().startswith("with torchair.scope")


def test_an_archive_and_its_imported_ir_get_the_same_advice(tmp_path: Path) -> None:
    from npuir.tools.import_dump import run as import_tool

    copy = tmp_path / "moe_decoder.py"
    shutil.copy(ROOT / "examples" / "moe_decoder.py", copy)
    archive = tmp_path / "model.pt2"
    torch.export.save(_module(copy).export(), str(archive))
    imported = tmp_path / "model.mlir"
    assert import_tool([str(archive), "-o", str(imported)]) == 0
    from_archive = advise(AdviseConfig(path=str(archive)))
    from_ir = advise(AdviseConfig(path=str(imported)))
    assert from_ir.advised_ns == from_archive.advised_ns
    assert [str(e) for e in from_ir.edits] == [str(e) for e in from_archive.edits]


def test_the_seeds_archive_dump_and_ir_get_the_same_advice(tmp_path: Path) -> None:
    copy = tmp_path / "seed_multistream.py"
    shutil.copy(ROOT / "examples" / "seed_multistream.py", copy)
    archive = tmp_path / "seed.pt2"
    torch.export.save(_module(copy).export(), str(archive))
    answers = [
        advise(AdviseConfig(path=path))
        for path in (
            str(archive),
            str(ROOT / "examples" / "seed_multistream.mlir"),
            str(ROOT / "test" / "frontends" / "Inputs" / "seed_multistream.pbtxt"),
        )
    ]
    rows = [{v.name: v.makespan_ns for v in a.variants} for a in answers]
    assert rows[0] == rows[1] == rows[2]
    # The same changes, each said in its source's terms.
    kinds = [sorted((e.kind, e.tag) for e in a.edits) for a in answers]
    assert kinds[0] == kinds[1] == kinds[2]
    assert [{e.source for e in a.edits} for a in answers] == [{"python"}, {"mlir"}, {"dump"}]
