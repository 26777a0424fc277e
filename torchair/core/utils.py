"""`torchair.core.utils.logger`, at TorchAir's import path
(`npuir.frontends.torchair.core.utils`)."""

from __future__ import annotations

from npuir.frontends.torchair.core.utils import logger

__all__ = ["logger"]
