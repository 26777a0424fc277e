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
  `module`, `text()`; `npuir.passmanager.pipeline.configured_pipeline("npu-default",
  config.pass_options())` is the lowering its config asks for.
- `Program(target, config)`: one function per rank (`p.graph("rank0")`), one module.
- `scope`: `npu_stream_switch`, `npu_wait_tensor`, `limit_core_num`, `set_stream_limit`,
  `get_stream_limit`, `reset_stream_limit`.
- `inference.set_dim_gears`; `CompilerConfig` (`ge_config.aicore_num`,
  `ge_config.enable_single_stream`, `inference_config.dynamic_gears_merge_policy`).
- `ops`: torch-named functions for every `npu` op.

For torch users, `import npuir.torchair as tng` is what `import torchair`
is: the same `scope` functions act on torch tensors (TorchAir's `air::` ops,
eager, `torch.compile`, `torch.export`), `inference.set_dim_gears` takes torch
tensors, and `get_npu_backend(compiler_config=...)` is a `torch.compile`
backend whose compiled model runs npuir's lowered program (`reports(model)`
gives each compile's schedule report), `auto_streams()` is npuir's schedule as a
TorchAir custom FX pass (`config.post_grad_custom_pre_pass = auto_streams()`);
`configs.compiler_config.CompilerConfig`
and `core.utils.logger` are at TorchAir's import paths.  Without `torch_npu`,
importing this package gives torch tensors and modules a `.npu()` that does nothing
(`npuir.frontends.torchair.npu_standin`; a real `torch_npu` is never shadowed), so a
TorchAir script runs with only its import lines changed.

IR objects are built directly (no text, no parser); each op carries the
location of the user's Python line that created it, and mistakes raise
`TorchairError` located there.

This package (folder `torchair/`) is a thin public facade, the top of npuir's
layers beside the tools: the IR-building parts live in `npuir.frontends.torchair`
(just above the IR layers, below the passes), `get_npu_backend` and `reports` in
`npuir.driver.torch_backend`, and this package re-exports both, so the import
contract sees every dependency.  Its submodules (`scope`, `inference`, `ops`,
`configs.compiler_config`, `core.utils`) are real modules at TorchAir's import
paths, so `from npuir.torchair.scope import npu_stream_switch` works as it does
in TorchAir.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if __name__ != "npuir.torchair":
    # This folder is installed as npuir.torchair (pyproject's package-dir), but with a clone's
    # root on sys.path (`python -m ...`, `python -c` there) Python also finds it as a
    # top-level `torchair`, the name of TorchAir itself.  Refuse to pose as TorchAir: code
    # that tries `import torchair` and falls back on ImportError (the seeds) gets npuir's.
    raise ImportError(
        f"{__file__} is npuir.torchair, not TorchAir: import npuir.torchair", name=__name__
    )

from npuir.frontends.torchair import (
    OP_NAME,
    CompilerConfig,
    Graph,
    Program,
    Tensor,
    TorchairError,
    after_torch,
    current_graph,
)
from npuir.frontends.torchair import npu_standin as _npu_standin

from . import configs, core, inference, ops, scope

# TorchAir scripts call `.npu()` on tensors and modules; without torch_npu it does nothing
# here (never in place of a real torch_npu), so the scripts run with their imports changed.
after_torch(_npu_standin.install)

if TYPE_CHECKING:
    from npuir.driver.torch_backend import get_npu_backend, reports
    from npuir.frontends.torchair.auto_streams import auto_streams


def __getattr__(name: str) -> object:
    """`get_npu_backend` and `reports`, from `npuir.driver.torch_backend`, and
    `auto_streams`, from `npuir.frontends.torchair.auto_streams`.

    The backend needs torch, and the builder API does not: the driver's module is
    imported when one of its names is first used, so `from npuir import torchair`
    works without torch.  The import below is an ordinary one (inside a function),
    so the import contract sees this package above the driver.
    """
    if name in ("get_npu_backend", "reports"):
        from npuir.driver import torch_backend

        return getattr(torch_backend, name)
    if name == "auto_streams":  # a TorchAir custom FX pass: needs torch too
        from npuir.frontends.torchair.auto_streams import auto_streams

        return auto_streams
    raise AttributeError(f"module 'npuir.torchair' has no attribute '{name}'")


__all__ = [
    "OP_NAME",
    "CompilerConfig",
    "Graph",
    "Program",
    "Tensor",
    "TorchairError",
    "auto_streams",
    "configs",
    "core",
    "current_graph",
    "get_npu_backend",
    "inference",
    "ops",
    "reports",
    "scope",
]
