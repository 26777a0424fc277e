"""Shared pytest set-up: make the helpers in test/unit importable; the tiers' markers."""

import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

sys.path.insert(0, str(Path(__file__).parent))
# bench/ holds test support that is not part of the npuir package: the exact oracle
# (`import oracle`) and the workload generators (`import workloads`).
sys.path.insert(1, str(Path(__file__).resolve().parents[2] / "bench"))

# The passes are tested with the IR verified after every one of them.
os.environ.setdefault("NPUIR_VERIFY_EACH", "1")

# Hypothesis: the property tests draw the same examples on every run (the "ci" profile,
# the default: a test run is deterministic, and a failure prints the blob that reproduces
# it); `pytest --hypothesis-profile=random` draws fresh examples each run, to hunt bugs.
settings.register_profile("ci", derandomize=True, print_blob=True, database=None)
settings.register_profile("random", derandomize=False, print_blob=True)
settings.load_profile("ci")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """An exact-optimum comparison and a torch test are slow-tier tests (`make check`
    runs `-m "not slow"`): the first runs a search, the second pays torch's import
    and dynamo's compile."""
    for item in items:
        if item.get_closest_marker("oracle") or item.get_closest_marker("torch"):
            item.add_marker(pytest.mark.slow)


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    """Say which random order ran (pytest-randomly's header line is hidden by -q), so that
    a failure that depends on the order can be repeated."""
    seed = getattr(config.option, "randomly_seed", None)
    if seed is not None:
        terminalreporter.write_line(f"test order: --randomly-seed={seed} repeats it")
