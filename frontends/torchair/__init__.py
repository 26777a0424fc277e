"""`npuir.frontends.torchair`: the IR-building half of `npuir.torchair`.

TorchAir's names (`Graph`, `Program`, `scope`, `inference`, `ops`, `CompilerConfig`)
as a Python API that builds npuir IR directly (no text, no parser), each op located at
the user's line that created it.  It depends only on the IR layers (dialects, the
verifier) and the device description `npuir.backends.npu.hardware`, so the importers
(`npuir.frontends.torch`) and the driver build on it.  Users import the public facade
`npuir.torchair` (folder `torchair/`), which re-exports these names and adds
`get_npu_backend` / `reports` from the driver; see its docstring for the API.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType

from npuir.dialects.npu import OP_NAME

from . import inference, ops, scope
from .configs.compiler_config import CompilerConfig
from .errors import TorchairError
from .graph import Graph, Program, Tensor, current_graph


class _RegisterAfterTorch(importlib.abc.MetaPathFinder):
    """Defines the `air::` ops as soon as torch is imported, when `npuir.torchair` was
    imported first: a trace (dynamo, `torch.export`) cannot define ops, so they must exist
    before the first one, whichever of the two modules the user imported first."""

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name != "torch":
            return None
        sys.meta_path.remove(self)  # once; and the lookup below must not find this finder
        spec = importlib.util.find_spec(name)
        loader = spec.loader if spec is not None else None
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            if f"{__name__}.air_ops" in sys.modules:
                return  # `air_ops` itself imports torch: it defines the ops on first use
            from . import air_ops

            air_ops.register()

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if "torch" in sys.modules:  # a torch user: define the air:: ops before any trace needs them
    from . import air_ops

    air_ops.register()
elif not any(isinstance(f, _RegisterAfterTorch) for f in sys.meta_path):
    sys.meta_path.insert(0, _RegisterAfterTorch())


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
