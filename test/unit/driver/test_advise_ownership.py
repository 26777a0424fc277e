"""npuir-advise's edits name only files the user owns: ops made in an installed package are
reached through the line of the user's file that calls into it, and the edited file,
exported again, runs at the advised makespan."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

# torch before npuir.torchair, which registers TorchAir's ops with torch when it is there.
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from npuir.driver.advise import (  # noqa: E402
    IMPORT,
    AdviseConfig,
    advise,
    apply_edits,
    owned_file,
)

LIBRARY = '''\
import torch


class PreTrained(torch.nn.Module):
    """A transformers-like base class."""

    def post_init(self) -> None:
        self.initialized = True


class Mlp(torch.nn.Module):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.up = torch.nn.Parameter(torch.randn(n, n))
        self.down = torch.nn.Parameter(torch.randn(n, n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(x @ self.up)
        return h @ self.down


class Gate(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(torch.sigmoid(x) * x, dim=-1)
'''

MODEL = """\
import torch
from fakeformers.modeling import Gate, Mlp, PreTrained


class Model(PreTrained):
    def __init__(self) -> None:
        super().__init__()
        self.mlp = Mlp(512)
        self.gate = Gate()
        self.post_init()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        a = self.mlp(x)
        b = self.gate(y)
        return a + b


def export() -> torch.export.ExportedProgram:
    torch.manual_seed(0)
    return torch.export.export(Model(), (torch.randn(512, 512), torch.randn(512, 512)))
"""
"""The user's model: it subclasses the package's base class and calls two of its modules,
which make every op but the last add; its lines 13 and 14 are the calls."""


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A user's model file beside a `site-packages` holding the package it builds on."""
    package = tmp_path / "site-packages" / "fakeformers"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "modeling.py").write_text(LIBRARY)
    monkeypatch.syspath_prepend(str(tmp_path / "site-packages"))
    (tmp_path / "model.py").write_text(MODEL)
    yield tmp_path
    for name in [m for m in sys.modules if m == "fakeformers" or m.startswith("fakeformers.")]:
        del sys.modules[name]


def test_library_ops_are_edited_through_the_users_call(project: Path) -> None:
    archive = project / "model.pt2"
    torch.export.save(_load(project / "model.py").export(), str(archive))
    advice = advise(AdviseConfig(path=str(archive)))
    assert advice.edits
    assert all(owned_file(e.file) for e in advice.edits)
    assert not any("site-packages" in e.file for e in advice.edits)
    lines = MODEL.splitlines()
    wraps = [e for e in advice.edits if e.kind == "add-stream-scope"]
    # The library's ops move with the user's line that calls the library's module.
    assert wraps and all("self." in lines[e.first_line - 1] for e in wraps)
    # The file does not import torchair: the advice says to add it, once, before its edits.
    (added,) = [e for e in advice.edits if e.kind == "add-import"]
    assert added.write == IMPORT and added.first_line < min(e.first_line for e in wraps)
    # Applied as it says, the edited model, exported again, runs at the advised makespan.
    edited = project / "edited" / "model.py"
    edited.parent.mkdir()
    edited.write_text(apply_edits(MODEL, advice.edits))
    again = project / "edited.pt2"
    torch.export.save(_load(edited).export(), str(again))
    rerun = advise(AdviseConfig(path=str(again)))
    assert {v.makespan_ns for v in rerun.variants if v.name == "as written"} == set(
        advice.advised_ns.values()
    )
    # --edit-files narrowed to the package: the edits name its file only.
    narrowed = advise(AdviseConfig(path=str(archive), edit_files=["*/fakeformers/*"]))
    assert narrowed.edits and all(e.file.endswith("modeling.py") for e in narrowed.edits)
