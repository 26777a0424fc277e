"""`npuir.frontends.torchair`: the IR-building half of `npuir.torchair`.

TorchAir's names (`Graph`, `Program`, `scope`, `inference`, `ops`, `CompilerConfig`)
as a Python API that builds npuir IR directly (no text, no parser), each op located at
the user's line that created it.  It depends only on the IR layers (dialects, the
verifier, the device description `npuir.hardware`), so the importers (`npuir.frontends.torch`)
and the driver build on it.  Users import the public facade `npuir.torchair`, which
re-exports these names and adds `get_npu_backend` / `reports` from the driver; see its
docstring for the API.
"""

from __future__ import annotations

import sys

from npuir.dialects.npu import OP_NAME

from . import inference, ops, scope
from ._errors import TorchairError
from ._graph import Graph, Program, Tensor, current_graph
from .configs.compiler_config import CompilerConfig

if "torch" in sys.modules:  # a torch user: define the air:: ops before any trace needs them
    from . import _air

    _air.register()


__all__ = [
    "OP_NAME",
    "CompilerConfig",
    "Graph",
    "Program",
    "Tensor",
    "TorchairError",
    "current_graph",
    "inference",
    "ops",
    "scope",
]
