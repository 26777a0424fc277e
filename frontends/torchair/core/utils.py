"""`torchair.core.utils.logger`: the standard `logging.Logger` npuir's TorchAir backend logs to.

`TNG_LOG_LEVEL` sets its level on TorchAir's scale: 0 DEBUG, 1 INFO, 2 WARNING,
3 ERROR (default 3, as TorchAir's; anything else is WARNING with a warning).
Records read as in TorchAir's logs (seed 004):

    [INFO] TORCHAIR [backend.py:123] Compiling concrete graph 0 with options:
    [INFO] TORCHAIR [backend.py:125]     ge.dynamicDims = 2,2;4,4

`logger.setLevel(logging.DEBUG)` (seed 000) works as on any logger.
"""

from __future__ import annotations

import logging
import os

LEVELS = {"0": logging.DEBUG, "1": logging.INFO, "2": logging.WARNING, "3": logging.ERROR}
"""TorchAir's `TNG_LOG_LEVEL` values."""

FORMAT = "[%(levelname)s] TORCHAIR [%(filename)s:%(lineno)d] %(message)s"


def _make_logger() -> logging.Logger:
    log = logging.getLogger("npuir.torchair")
    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(FORMAT))
        log.addHandler(handler)
    log.propagate = False
    value = os.environ.get("TNG_LOG_LEVEL", "3").strip()
    log.setLevel(LEVELS.get(value, logging.WARNING))
    if value not in LEVELS:
        log.warning("TNG_LOG_LEVEL=%r is not one of 0 (DEBUG) .. 3 (ERROR); using WARNING", value)
    return log


logger = _make_logger()
"""npuir's TorchAir logger (`logging.getLogger("npuir.torchair")`)."""
