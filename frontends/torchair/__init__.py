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
from collections.abc import Callable, Sequence
from types import ModuleType

from npuir.dialects.npu import OP_NAME

from . import inference, ops, scope
from .configs.compiler_config import CompilerConfig
from .errors import TorchairError
from .graph import Graph, Program, Tensor, current_graph

_AFTER_TORCH: list[Callable[[], object]] = []
"""What runs once torch is imported (see `after_torch`)."""


def _run_after_torch() -> None:
    for callback in _AFTER_TORCH:
        callback()


class _RegisterAfterTorch(importlib.abc.MetaPathFinder):
    """Runs the `after_torch` callbacks (the `air::` ops first) as soon as torch is
    imported, when `npuir.torchair` was imported first: a trace (dynamo, `torch.export`)
    cannot define ops, so they must exist before the first one, whichever of the two
    modules the user imported first."""

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
            _run_after_torch()

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _register_air_ops() -> None:
    loading = sys.modules.get(f"{__name__}.air_ops")
    if loading is not None and not hasattr(loading, "register"):
        return  # `air_ops` itself is importing torch: it defines the ops on first use
    from . import air_ops

    air_ops.register()


def after_torch(callback: Callable[[], object]) -> None:
    """Run `callback` now if torch is imported, else right after torch is (once each)."""
    if callback in _AFTER_TORCH:
        return
    _AFTER_TORCH.append(callback)
    if "torch" in sys.modules:
        callback()
    elif not any(isinstance(f, _RegisterAfterTorch) for f in sys.meta_path):
        sys.meta_path.insert(0, _RegisterAfterTorch())


after_torch(_register_air_ops)  # a torch user: the air:: ops exist before any trace needs them


__all__ = [
    "OP_NAME",
    "CompilerConfig",
    "Graph",
    "Program",
    "Tensor",
    "TorchairError",
    "after_torch",
    "current_graph",
    "inference",
    "ops",
    "scope",
]
