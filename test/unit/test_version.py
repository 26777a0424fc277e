"""`npuir.__version__` is the one version: the installed metadata and pyproject take it."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import npuir

ROOT = Path(__file__).resolve().parents[2]


def test_the_version_is_a_release_number() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", npuir.__version__), npuir.__version__


def test_pyproject_takes_its_version_from_the_package() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in config["project"]
    assert "version" in config["project"]["dynamic"]
    assert config["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "npuir.__version__"}


def test_the_installed_distribution_has_the_packages_version() -> None:
    assert importlib.metadata.version("npuir") == npuir.__version__
