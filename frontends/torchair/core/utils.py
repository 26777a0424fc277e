"""`torchair.core.utils.logger`: the standard `logging.Logger` npuir's TorchAir backend logs to.

`TNG_LOG_LEVEL` sets its level on TorchAir's scale: 0 DEBUG, 1 INFO, 2 WARNING, 3 ERROR,
4 EVENT (TorchAir's event records and errors; npuir writes no event records), default 3
as TorchAir's.  Any other value, the empty one included, is refused when the logger is
first imported (`from npuir.torchair.core.utils import logger`, or the first
`get_npu_backend`): a `TorchairError` of kind `torchair.bad-log-level`, located at the
user's line that imported it, naming the valid values -- a typo would otherwise silence
the logs the user asked for.  Records read as in TorchAir's logs (seed 004):

    [INFO] TORCHAIR [backend.py:123] Compiling concrete graph 0 with options:
    [INFO] TORCHAIR [backend.py:125]     ge.dynamicDims = 2,2;4,4

`logger.setLevel(logging.DEBUG)` (seed 000) works as on any logger.
"""

from __future__ import annotations

import logging
import os
import sys
from types import FrameType

from npuir.diagnostics import Diagnostic, Kind, SourceLocation

from ..errors import TorchairError

EVENT = 35
"""TorchAir's EVENT level, between WARNING and ERROR (its Python logger's number)."""

LEVELS = {
    "0": logging.DEBUG,
    "1": logging.INFO,
    "2": logging.WARNING,
    "3": logging.ERROR,
    "4": EVENT,
}
"""TorchAir's `TNG_LOG_LEVEL` values."""

VALID = "0 (DEBUG), 1 (INFO), 2 (WARNING), 3 (ERROR) or 4 (EVENT)"

BAD_LOG_LEVEL = Kind(
    "torchair.bad-log-level",
    "TNG_LOG_LEVEL={value} is not a TorchAir log level; set it to {valid}, or unset it (default 3)",
)
"""An invalid `TNG_LOG_LEVEL`; arguments: `value` (as Python writes it), `valid`."""

FORMAT = "[%(levelname)s] TORCHAIR [%(filename)s:%(lineno)d] %(message)s"


def _importer() -> SourceLocation | None:
    """The user's line that (through npuir and the import system) imported this module."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        internal = module == "npuir" or module.startswith("npuir.")
        if not internal and not frame.f_code.co_filename.startswith("<frozen"):
            return SourceLocation(frame.f_code.co_filename, frame.f_lineno, 0)
        frame = frame.f_back
    return None


def level_of(value: str | None) -> int:
    """The logging level `TNG_LOG_LEVEL=value` asks for (None: unset, the default 3); an
    invalid value is a `TorchairError` at the importing line."""
    if value is None:
        return logging.ERROR
    level = LEVELS.get(value.strip())
    if level is None:
        raise TorchairError(
            Diagnostic.of("error", BAD_LOG_LEVEL, _importer(), value=repr(value), valid=VALID)
        )
    return level


def _make_logger() -> logging.Logger:
    level = level_of(os.environ.get("TNG_LOG_LEVEL"))
    logging.addLevelName(EVENT, "EVENT")
    log = logging.getLogger("npuir.torchair")
    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(FORMAT))
        log.addHandler(handler)
    log.propagate = False
    log.setLevel(level)
    return log


logger = _make_logger()
"""npuir's TorchAir logger (`logging.getLogger("npuir.torchair")`)."""
