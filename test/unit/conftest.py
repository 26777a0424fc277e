"""Shared pytest set-up: make the helpers in test/unit importable."""

import os
import sys
from pathlib import Path

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


def pytest_collection_modifyitems(config: object, items: list[object]) -> None:
    """Run the torch.compile tests last.

    Observed with torch 2.13: after some of them (a dynamo graph break under
    fullgraph=True; set_dim_gears and located errors in the same run), the
    deep-nesting parser test (`test_parsing.py::test_nesting_past_the_bound_*`,
    5000 levels on npuir's deep-stack thread, error path) dies with SIGSEGV in the
    same process.  Each test passes alone; the cause is not found (the recursion
    limits and dynamo's frame callback are back to normal, and plain deep recursion
    still works).  Running the compile tests after every other test avoids it.
    """
    late = [i for i in items if "test_torch_compile" in str(getattr(i, "fspath", ""))]
    items[:] = [i for i in items if i not in late] + late
