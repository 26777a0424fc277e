"""npugraph_ex's own FX ops, for torch graphs compiled in capture mode.

torch_npu's `npugraph_ex` backend (the continuation of TorchAir's `reduce-overhead` mode)
reads four ops in the `npugraph_ex` namespace; a custom FX pass writes them
(`Ascend/torchair/docs/zh/npugraph_ex/advanced/post_grad_custom_pass.md`, whose example is
a multi-stream pass).  Their schemas are npugraph_ex's:

    npugraph_ex::scope_enter(str[] keys, str[] values, bool need_execute=False) -> None
    npugraph_ex::scope_exit(bool need_execute=False) -> None
        (`Ascend/torchair/npugraph_ex/npugraph_ex/scope/_scope.py`)
    npugraph_ex::record(*, Device? device=None) -> Tensor
    npugraph_ex::wait(Tensor[] x) -> ()
        (`Ascend/torchair/npugraph_ex/npugraph_ex/ops/_record_wait.py`)

`scope_enter` takes the keys TorchAir's `air::scope_enter` takes (`_user_stream_label`,
`_user_stream_priority`, `_op_aicore_num`, `_op_vectorcore_num`), and npuir reads it the
same way.  `record()` marks the point after the ops issued so far on the current stream;
`wait([r, ...])` holds the current stream until those points have run
(`Graph.recorded`, `Graph.wait_recorded`).

`register()` defines the ops when nobody has (npugraph_ex itself, when installed, defines
them first and is left alone), with no-op kernels for every backend key
(`CompositeExplicitAutograd`), side-effecting so that dead-code elimination keeps them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from npuir.frontends.torchair.graph import Graph, Tensor

# torch is imported where it is used (the ops' kernels and `register`): the importer takes
# `handlers` for every program, `.pt2` archives read without torch among them.

NAMESPACE = "npugraph_ex"

_LIBRARY: list[Any] = []
"""The `torch.library.Library` that defined the ops, kept alive (once defined)."""


def _scope_enter(keys: Sequence[str], values: Sequence[str], need_execute: bool = False) -> None:
    return None


def _scope_exit(need_execute: bool = False) -> None:
    return None


def _record(*, device: Any = None) -> torch.Tensor:
    import torch

    return torch.empty(0, device=device)


def _wait(x: Sequence[torch.Tensor]) -> None:
    return None


_SCHEMAS: dict[str, tuple[str, Any]] = {
    "scope_enter": (
        "scope_enter(str[] keys, str[] values, bool need_execute=False) -> ()",
        _scope_enter,
    ),
    "scope_exit": ("scope_exit(bool need_execute=False) -> ()", _scope_exit),
    "record": ("record(*, Device? device=None) -> Tensor", _record),
    "wait": ("wait(Tensor[] x) -> ()", _wait),
}


def register() -> None:
    """Define `npugraph_ex::scope_enter`, `scope_exit`, `record` and `wait` if nobody has
    (idempotent)."""
    if _LIBRARY:
        return
    # Here, not at the top: the importer takes this module's handlers without torch.
    from npuir.frontends.torchair.air_ops import define_missing

    define_missing(NAMESPACE, _SCHEMAS, _LIBRARY)


def handlers(
    graph: Callable[[], Graph],
    scope_enter: Callable[..., None],
    scope_exit: Callable[..., None],
) -> dict[str, Callable[..., Any]]:
    """The importer's handlers for the four ops, by target name: `scope_enter` and
    `scope_exit` are the importer's own (`air::` ones take the same keys); `graph()` is the
    graph being built."""

    def record(*_: Any, **__: Any) -> Tensor | None:
        return graph().recorded()

    def wait(points: Sequence[Tensor | None], *_: Any) -> None:
        graph().wait_recorded(list(points))

    return {
        f"{NAMESPACE}.scope_enter.default": scope_enter,
        f"{NAMESPACE}.scope_exit.default": scope_exit,
        f"{NAMESPACE}.record.default": record,
        f"{NAMESPACE}.wait.default": wait,
    }
