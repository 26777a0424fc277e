"""`torchair.inference`: `set_dim_gears` (and `gears_of`, npuir's reader of them), at
TorchAir's import path (`npuir.frontends.torchair.inference`)."""

from __future__ import annotations

from npuir.frontends.torchair.inference import gears_of, set_dim_gears

__all__ = ["gears_of", "set_dim_gears"]
