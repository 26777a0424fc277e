"""`npuir.torchair`: TorchAir's names as a Python API that builds npuir IR.

A model engineer who knows TorchAir writes the same calls and gets a module:

```python
from npuir import torchair
from npuir.torchair import ops

g = torchair.Graph("forward")                      # one func.func
a, b = g.input((1000, 1000), "f16"), g.input((1000, 1000), "f16")
s = ops.add(a, b)
with torchair.scope.npu_stream_switch("1"):
    torchair.scope.npu_wait_tensor(b, s)
    m = ops.mm(a, b)
g.output(s, m)
module = g.module                                  # an xDSL ModuleOp, verified
```

- `Graph(name, target="910b2", config=None)`: one function; `input`, `output`,
  `module`, `text()`, `pipeline` (the lowering the config asks for).
- `Program(target, config)`: one function per rank (`p.graph("rank0")`), one module.
- `scope`: `npu_stream_switch`, `npu_wait_tensor`, `limit_core_num`, `set_stream_limit`.
- `inference.set_dim_gears`; `CompilerConfig` (`ge_config.aicore_num`,
  `ge_config.enable_single_stream`, `inference_config.dynamic_gears_merge_policy`).
- `ops`: torch-named functions for every `npu` op.

For torch users, `import npuir.torchair as tng` is what `import torchair`
is: the same `scope` functions act on torch tensors (TorchAir's `air::` ops,
eager, `torch.compile`, `torch.export`), `inference.set_dim_gears` takes torch
tensors, and `get_npu_backend(compiler_config=...)` is a `torch.compile`
backend whose compiled model runs npuir's lowered program (`reports(model)`
gives each compile's schedule report); `configs.compiler_config.CompilerConfig`
and `core.utils.logger` are at TorchAir's import paths.

IR objects are built directly (no text, no parser); each op carries the
location of the user's Python line that created it, and mistakes raise
`TorchairError` located there.

This package lives in `frontends/torchair/` and is installed as
`npuir.torchair` (not `npuir.frontends.torchair`): TorchAir users import
`torchair.scope`, `torchair.inference` and `torchair.ops` as submodules, and
real submodules make `from npuir.torchair.scope import npu_stream_switch`
work as it does in TorchAir.
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


def __getattr__(name: str) -> object:
    """`get_npu_backend` and `reports`, from `npuir.driver.torch_backend` (torch needed).

    The backend runs the importer and the runner, which sit above this package in
    npuir's layers, so it is looked up by name on first use rather than imported here.
    """
    if name in ("get_npu_backend", "reports"):
        import importlib

        return getattr(importlib.import_module("npuir.driver.torch_backend"), name)
    raise AttributeError(f"module 'npuir.torchair' has no attribute '{name}'")


__all__ = [
    "OP_NAME",
    "CompilerConfig",
    "Graph",
    "Program",
    "Tensor",
    "TorchairError",
    "current_graph",
    "get_npu_backend",
    "inference",
    "ops",
    "reports",
    "scope",
]
