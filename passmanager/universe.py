"""Publishes npuir's dialects and passes to a stock `xdsl-opt` (entry point
`xdsl.universe`), through the same registries npuir-opt uses."""

from __future__ import annotations

from xdsl.universe import Universe

from npuir.dialects import DIALECTS
from npuir.transforms import PASSES

NPUIR_UNIVERSE = Universe(all_dialects=dict(DIALECTS), all_passes=dict(PASSES))
