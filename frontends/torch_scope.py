"""TorchAir's `air::` scope ops for torch, so a TorchAir model runs without TorchAir.

TorchAir registers three ops in the `air` namespace and its `torchair.scope`
context managers call them (the schemas below are TorchAir's):

    air::scope_enter(str[] keys, str[] values, bool need_execute=False) -> None
    air::scope_exit(bool need_execute=False) -> None
    air::wait_tensor(Tensor self, Tensor dependency) -> Tensor

`register()` defines them when they are not defined yet (TorchAir itself,
when installed, defines them first and is left alone), with one kernel for
every backend that does nothing but return `self` (so a model also runs
eagerly, on any device).  All three are marked
side-effecting (`torch.fx.node.has_side_effect`): otherwise `torch.export`
removes a `wait_tensor` whose result is unused, which is exactly how the seed
model writes it, and the scope markers, which have no result at all.

`npu_stream_switch`, `npu_wait_tensor` and `limit_core_num` have TorchAir's
signatures and attribute keys, so a model written for TorchAir runs here with
one changed import: `from npuir.frontends import torch_scope as scope`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from types import TracebackType

import torch
from torch.fx.node import has_side_effect

from npuir.diagnostics import SourceLocation
from npuir.dialects import validation
from npuir.dialects.validation import ValidationError
from npuir.torchair._errors import refused

STREAM_LABEL = "_user_stream_label"
STREAM_PRIORITY = "_user_stream_priority"
INNER_PARALLEL = "_enable_inner_parallel"
AICORE_NUM = "_op_aicore_num"
VECTORCORE_NUM = "_op_vectorcore_num"

_LIBRARY: list[torch.library.Library] = []


def _scope_enter(keys: Sequence[str], values: Sequence[str], need_execute: bool = False) -> None:
    return None


def _scope_exit(need_execute: bool = False) -> None:
    return None


def _wait_tensor(self: torch.Tensor, dependency: torch.Tensor) -> torch.Tensor:
    return self


def register() -> None:
    """Define `air::scope_enter`, `air::scope_exit` and `air::wait_tensor` if
    nobody has (idempotent; TorchAir's own definitions win)."""
    namespace = torch.ops.air
    missing = [
        name
        for name in ("scope_enter", "scope_exit", "wait_tensor")
        if not hasattr(namespace, name)
    ]
    if not missing:
        return
    lib = torch.library.Library("air", "FRAGMENT")
    _LIBRARY.append(lib)  # a Library unregisters its ops when collected
    schemas = {
        "scope_enter": (
            "scope_enter(str[] keys, str[] values, bool need_execute=False) -> None",
            _scope_enter,
        ),
        "scope_exit": ("scope_exit(bool need_execute=False) -> None", _scope_exit),
        "wait_tensor": ("wait_tensor(Tensor self, Tensor dependency) -> Tensor", _wait_tensor),
    }
    for name in missing:
        schema, kernel = schemas[name]
        lib.define(schema)
        # One kernel for every backend: the scope markers take no tensor, so no
        # tensor's device could pick a backend kernel for them in eager runs.
        lib.impl(name, kernel, "CompositeExplicitAutograd")
        has_side_effect(getattr(namespace, name).default)


class _Scope:
    """A `with` block that calls `air::scope_enter` and `air::scope_exit`."""

    def __init__(self, attrs: list[tuple[str, str]]) -> None:
        self.keys = [k for k, _ in attrs]
        self.values = [v for _, v in attrs]

    def __enter__(self) -> None:
        register()
        torch.ops.air.scope_enter(self.keys, self.values)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        torch.ops.air.scope_exit()


def _checked(rule: Callable[[], object]) -> None:
    """Apply a shared rule (`npuir.dialects.validation`) at the user's call: a value it
    refuses is a `TorchairError` of the rule's kind, located at the model's line that
    called into this module (two frames up: the public function's caller)."""
    try:
        rule()
    except ValidationError as exc:
        frame = sys._getframe(2)
        where = SourceLocation(frame.f_code.co_filename, frame.f_lineno, 0)
        raise refused(exc, where) from None


def npu_stream_switch(
    stream_tag: str, stream_priority: int = 0, enable_inner_parallel: bool = True
) -> _Scope:
    """Ops of the block run on the stream `stream_tag` (TorchAir's signature)."""
    _checked(
        lambda: (validation.stream_tag(stream_tag), validation.stream_priority(stream_priority))
    )
    return _Scope(
        [
            (STREAM_LABEL, stream_tag),
            (STREAM_PRIORITY, str(stream_priority)),
            (INNER_PARALLEL, str(enable_inner_parallel)),
        ]
    )


def limit_core_num(op_aicore_num: int, op_vectorcore_num: int) -> _Scope:
    """Ops of the block take at most these cube / vector cores (TorchAir's signature);
    the device's counts are checked on import, where the target is known."""
    _checked(
        lambda: (
            validation.core_count("op_aicore_num", op_aicore_num),
            validation.core_count("op_vectorcore_num", op_vectorcore_num),
        )
    )
    return _Scope([(AICORE_NUM, str(op_aicore_num)), (VECTORCORE_NUM, str(op_vectorcore_num))])


def npu_wait_tensor(self: torch.Tensor, dependency: torch.Tensor) -> torch.Tensor:
    """Later users of `self` start after `dependency` is computed (TorchAir's signature)."""
    register()
    result: torch.Tensor = torch.ops.air.wait_tensor(self, dependency)
    return result
