"""A tool's `main` freezes what its run built before the collector resumes
(`run_tool(..., exiting=True)`), so the process does not walk the whole IR once more only
to free it on the way out; `run_tool` called as a library function freezes nothing."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from npuir.tools import opt
from npuir.tools.cli import run_tool

SEED = Path(__file__).resolve().parents[3] / "examples" / "seed_multistream.mlir"


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_main_freezes_the_run_and_resumes_the_collector(
    unfrozen: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gc.isenabled()
    with pytest.raises(SystemExit) as exited:
        opt.main([str(SEED), "-p", "npu-default"])
    assert exited.value.code == 0
    assert gc.get_freeze_count() > 0
    assert gc.isenabled()


def test_library_call_freezes_nothing(unfrozen: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_tool("npuir-opt", opt.run, [str(SEED)]) == 0
    assert gc.get_freeze_count() == 0
    assert gc.isenabled()
    capsys.readouterr()
