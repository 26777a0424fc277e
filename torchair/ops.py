"""`torchair.ops`: the torch-named builder functions for every `npu` op
(`npuir.frontends.torchair.ops`)."""

from __future__ import annotations

from npuir.frontends.torchair.ops import *  # noqa: F403  (every name of its __all__)
from npuir.frontends.torchair.ops import __all__ as __all__
