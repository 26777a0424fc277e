"""Shared pytest set-up: make the helpers in test/unit importable."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

# The passes are tested with the IR verified after every one of them.
os.environ.setdefault("NPUIR_VERIFY_EACH", "1")
