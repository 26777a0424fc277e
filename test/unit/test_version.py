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


def test_version_is_answered_without_importing_the_compiler() -> None:
    """`--version` must not pay for xDSL and every pass (the entry point answers it)."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "sys.argv = ['npuir-opt', '--version']\n"
        "import npuir.tools.entry as entry\n"
        "try:\n"
        "    entry.opt()\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'xdsl'))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [f"npuir-opt {npuir.__version__}", "[]"]
