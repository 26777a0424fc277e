"""`torchair.inference`: dynamic-shape gears, as TorchAir's `set_dim_gears`."""

from __future__ import annotations

from collections.abc import Sequence

from ._errors import fail
from ._graph import Tensor


def set_dim_gears(t: Tensor, dim_gears: dict[int, Sequence[int]]) -> None:
    """Give the dims of a graph input the values (gears) they may take.

    `set_dim_gears(x, {0: [2, 4]})` puts `gear.dims = #gear.dims<0: [2, 4]>` on
    the input; the graph's `gear.policy` comes from the config's
    `inference_config.dynamic_gears_merge_policy`.  As TorchAir's call marks
    the dims dynamic, a static dim becomes `?` (before the input is used).
    TorchAir's checks apply: dims in range, 2 to 100 int gears per dim, no 0
    (npuir also refuses 1), one annotation per tensor.
    """
    if not isinstance(t, Tensor):
        raise fail(f"set_dim_gears takes a graph input, got {t!r}")
    if not isinstance(dim_gears, dict):
        raise fail(f"dim_gears must be a dict {{dim: [gears]}}, got {dim_gears!r}")
    t.graph.set_gears(t, dim_gears)
