"""A CPU stand-in for `torch_npu`'s `Tensor.npu()` and `Module.npu()`.

TorchAir scripts move their inputs and models to the NPU with `.npu()`, a method
`torch_npu` adds to torch.  npuir runs the compiled program on the host, so here
`.npu()` does nothing: it returns the tensor or the module itself, as `.cuda()` does
for a tensor already on its device.  With it a seed script needs only its import lines
changed (`import torch_npu` dropped, `torchair` read as `npuir.torchair`).

`install()` is called when `npuir.torchair` is imported (once torch is imported too).
It never shadows the real thing: when `torch_npu` can be imported, or torch already has
`.npu()`, it does nothing.
"""

from __future__ import annotations

import importlib.util
from typing import Any

METHOD = "npu"
"""The method torch_npu adds to tensors and modules."""
NPU_ATTR = "_npuir_npu_standin"
"""Set on each stand-in method, so that tests and users can tell it from torch_npu's."""


def _tensor_npu(self: Any, device: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    """`Tensor.npu()` on the CPU stand-in: the tensor itself (npuir runs on the host)."""
    return self


def _module_npu(self: Any, device: Any = None) -> Any:
    """`Module.npu()` on the CPU stand-in: the module itself (npuir runs on the host)."""
    return self


def torch_npu_available() -> bool:
    """Whether the real `torch_npu` can be imported here."""
    try:
        return importlib.util.find_spec("torch_npu") is not None
    except (ImportError, ValueError):  # a broken or half-initialised torch_npu still counts
        return True


def install() -> bool:
    """Give `torch.Tensor` and `torch.nn.Module` a no-op `.npu()`, unless `torch_npu` is
    importable or torch already has one; True when the stand-in is (now) in place."""
    import torch

    if torch_npu_available():
        return False
    installed = False
    for cls, method in ((torch.Tensor, _tensor_npu), (torch.nn.Module, _module_npu)):
        current = getattr(cls, METHOD, None)
        if current is None:
            setattr(method, NPU_ATTR, True)
            setattr(cls, METHOD, method)  # torch has no `.npu` of its own to type
            installed = True
        elif getattr(current, NPU_ATTR, False):
            installed = True
    return installed
