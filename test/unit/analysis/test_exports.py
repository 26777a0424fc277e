"""`npuir.analysis` exports what the README and the pass author's guide promise, lazily."""

from __future__ import annotations

import subprocess
import sys

import pytest

import npuir.analysis


def test_the_pass_authors_analyses_import_from_the_package() -> None:
    from npuir.analysis import CoreLimits, DependenceGraph, HappensBefore, build_program
    from npuir.analysis.core_limits import CoreLimits as CoreLimitsDefined
    from npuir.analysis.dependence import DependenceGraph as DependenceGraphDefined
    from npuir.analysis.happens_before import HappensBefore as HappensBeforeDefined
    from npuir.analysis.program import build_program as build_program_defined

    assert CoreLimits is CoreLimitsDefined
    assert DependenceGraph is DependenceGraphDefined
    assert HappensBefore is HappensBeforeDefined
    assert build_program is build_program_defined


@pytest.mark.parametrize("name", npuir.analysis.__all__)
def test_every_export_resolves(name: str) -> None:
    assert getattr(npuir.analysis, name) is not None


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        _ = npuir.analysis.Nothing  # type: ignore[attr-defined]


def test_importing_the_package_loads_no_analysis() -> None:
    code = (
        "import sys, npuir.analysis\n"
        "print(sorted(m for m in sys.modules if m.startswith('npuir.analysis.')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
