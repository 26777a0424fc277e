"""Shared pytest set-up: make the helpers in test/unit importable."""

import os
import sys
from pathlib import Path

from hypothesis import settings

sys.path.insert(0, str(Path(__file__).parent))

# The passes are tested with the IR verified after every one of them.
os.environ.setdefault("NPUIR_VERIFY_EACH", "1")

# Hypothesis: the property tests draw the same examples on every run (the "ci" profile,
# the default: a test run is deterministic, and a failure prints the blob that reproduces
# it); `pytest --hypothesis-profile=random` draws fresh examples each run, to hunt bugs.
settings.register_profile("ci", derandomize=True, print_blob=True, database=None)
settings.register_profile("random", derandomize=False, print_blob=True)
settings.load_profile("ci")
