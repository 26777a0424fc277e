"""TorchAir's `air::` ops for torch: what `torchair.scope` calls on torch tensors.

TorchAir registers three ops in the `air` namespace and its scope context
managers call them (the schemas are TorchAir's):

    air::scope_enter(str[] keys, str[] values, bool need_execute=False) -> None
    air::scope_exit(bool need_execute=False) -> None
    air::wait_tensor(Tensor self, Tensor dependency) -> Tensor

`register()` defines them when nobody has (TorchAir itself, when installed,
defines them first and is left alone).  Each has one kernel, registered for
`CompositeExplicitAutograd`, so every backend key (CPU, Meta, fake tensors,
functionalization, autograd) reaches it: an annotated model runs eagerly, and
dynamo, AOT autograd and `torch.export` all trace the three ops in order.
The scope kernels do nothing; `wait_tensor` returns a copy of `self`, so its
schema declares no aliasing (PyTorch warns that kernels returning an input
from a non-aliasing schema are deprecated).  The ordering a wait stands for
is not carried by aliasing: the converter gives the wait npuir's own meaning
(every later use of `self` is ordered after `dependency`).

All three are side-effecting (`torch.fx.node.has_side_effect`), so dead-code
elimination keeps a `wait_tensor` whose result is unused -- the seed's
statement idiom `npu_wait_tensor(in4, add_result)` -- and the scope markers,
which have no result at all.

This module imports torch: `npuir.torchair` imports it only when a torch
tensor or a torch trace is in play, so the builder works without torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch.fx.node import has_side_effect

from .scope_keys import (
    AICORE_NUM,
    ERROR,
    ERROR_ARG,
    ERROR_KIND,
    INNER_PARALLEL,
    STREAM_LABEL,
    STREAM_PRIORITY,
    VECTORCORE_NUM,
)

__all__ = [
    "AICORE_NUM",
    "ERROR",
    "ERROR_ARG",
    "ERROR_KIND",
    "INNER_PARALLEL",
    "STREAM_LABEL",
    "STREAM_PRIORITY",
    "VECTORCORE_NUM",
    "define_missing",
]

_LIBRARY: list[torch.library.Library] = []


def _scope_enter(keys: Sequence[str], values: Sequence[str], need_execute: bool = False) -> None:
    return None


def _scope_exit(need_execute: bool = False) -> None:
    return None


def _wait_tensor(self: torch.Tensor, dependency: torch.Tensor) -> torch.Tensor:
    return self.clone()


_SCHEMAS: dict[str, tuple[str, Any]] = {
    "scope_enter": (
        "scope_enter(str[] keys, str[] values, bool need_execute=False) -> None",
        _scope_enter,
    ),
    "scope_exit": ("scope_exit(bool need_execute=False) -> None", _scope_exit),
    "wait_tensor": ("wait_tensor(Tensor self, Tensor dependency) -> Tensor", _wait_tensor),
}


def register() -> None:
    """Define `air::scope_enter`, `air::scope_exit` and `air::wait_tensor` if nobody
    has (idempotent; TorchAir's own definitions win)."""
    if not _LIBRARY:
        define_missing("air", _SCHEMAS, _LIBRARY)


def define_missing(
    namespace: str, schemas: dict[str, tuple[str, Any]], libraries: list[Any]
) -> None:
    """Define each of `schemas` (name -> schema, CPU kernel) that `torch.ops.<namespace>`
    lacks, and mark all of them side-effecting so that dynamo and FX keep them.  The
    `Library` goes into `libraries`: it unregisters its ops when collected."""
    ops = getattr(torch.ops, namespace)
    missing = [name for name in schemas if not hasattr(ops, name)]
    lib = torch.library.Library(namespace, "FRAGMENT")
    libraries.append(lib)
    for name in missing:
        schema, kernel = schemas[name]
        lib.define(schema)
        lib.impl(name, kernel, "CompositeExplicitAutograd")
    for name in schemas:
        has_side_effect(getattr(ops, name).default)


def compiling() -> bool:
    """True while dynamo or `torch.export` traces the model."""
    return bool(torch.compiler.is_compiling())


def scope_enter(keys: list[str], values: list[str]) -> None:
    """Call `air::scope_enter` (registered by `import npuir.torchair` after torch, or by
    the first eager call: a trace cannot register ops)."""
    if not _LIBRARY and not compiling():
        register()
    torch.ops.air.scope_enter(keys, values)


def scope_exit() -> None:
    """Call `air::scope_exit`."""
    torch.ops.air.scope_exit()


def wait_tensor(self: torch.Tensor, dependency: torch.Tensor) -> torch.Tensor:
    """Call `air::wait_tensor`."""
    if not _LIBRARY and not compiling():
        register()
    result: torch.Tensor = torch.ops.air.wait_tensor(self, dependency)
    return result


def deferred_error(message: str, kind: str = "", args: dict[str, Any] | None = None) -> None:
    """Carry a mistake found during a trace, its kind and its arguments (as text, one
    `ERROR_ARG` key each) to the converter (see `ERROR`)."""
    keys, values = [ERROR, ERROR_KIND], [message, kind]
    for name, value in (args or {}).items():
        keys.append(ERROR_ARG + name)
        values.append(str(value))
    torch.ops.air.scope_enter(keys, values)
    torch.ops.air.scope_exit()


def is_tensor(value: object) -> bool:
    """Whether `value` is a torch tensor."""
    return isinstance(value, torch.Tensor)
