"""Check npuir's import contracts (`[tool.importlinter]` in pyproject.toml).

import-linter reads packages from the file system, and an editable install maps
`npuir.dialects` to `dialects/` (pyproject's `package-dir`) through an import hook
it cannot see.  So this script lays the package out as an install would -- each
`package-dir` folder's Python files copied under `npuir/` in a scratch directory --
and runs `lint-imports` there.  Usage: `python dev/lint_imports.py` (make test runs it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def lay_out(target: Path) -> None:
    """Copy every package of pyproject's `package-dir` to where an install puts it."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for package, folder in config["tool"]["setuptools"]["package-dir"].items():
        dest = target.joinpath(*package.split("."))
        dest.mkdir(parents=True, exist_ok=True)
        for source in (ROOT / folder).glob("*.py"):
            shutil.copy2(source, dest / source.name)


def main() -> int:
    lint = Path(sys.executable).with_name("lint-imports")
    with tempfile.TemporaryDirectory(prefix="npuir-imports-") as scratch:
        lay_out(Path(scratch))
        env = {**os.environ, "PYTHONPATH": scratch}
        config = str(ROOT / "pyproject.toml")
        return subprocess.run([str(lint), config, "--no-cache"], cwd=scratch, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
