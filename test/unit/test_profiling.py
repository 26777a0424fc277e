"""Profiling works: under cProfile the tools' work runs on the thread the profiler
watches (`npuir.deep_stack`), and the profile holds it; otherwise, and under other
`sys.setprofile` hooks, it runs on the deep-stack thread."""

from __future__ import annotations

import cProfile
import pstats
import subprocess
import sys
import threading
from pathlib import Path

from npuir.deep_stack import on_deep_stack


def _thread_name() -> str:
    return threading.current_thread().name


def test_cprofile_sees_the_work() -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        name = on_deep_stack(_thread_name)
    finally:
        profiler.disable()
    assert name == threading.current_thread().name
    functions = {func for _, _, func in pstats.Stats(profiler).stats}  # type: ignore[attr-defined]
    assert "_thread_name" in functions


def test_without_cprofile_the_work_runs_on_the_deep_stack() -> None:
    assert on_deep_stack(_thread_name) == "npuir-deep-stack"
    sys.setprofile(lambda *args: None)
    try:
        assert on_deep_stack(_thread_name) == "npuir-deep-stack"
    finally:
        sys.setprofile(None)


def test_python_m_cprofile_sees_the_work(tmp_path: Path) -> None:
    # `python -m cProfile` runs cProfile as `__main__`: its profiler is `__main__.Profile`.
    script = tmp_path / "where.py"
    script.write_text(
        "import threading\n"
        "from npuir.deep_stack import on_deep_stack\n"
        "print('ran on', on_deep_stack(lambda: threading.current_thread().name))\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "cProfile", str(script)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "ran on MainThread" in done.stdout
