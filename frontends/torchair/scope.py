"""`torchair.scope`: TorchAir's stream and core-limit scopes, on torch and in the builder.

The names and signatures are TorchAir's (`torchair/scope/__init__.py`).  One
set of functions serves two worlds:

- in a torch model (eager, `torch.compile`, `torch.export`) the scopes call
  TorchAir's `air::scope_enter` / `air::scope_exit` and `npu_wait_tensor`
  calls `air::wait_tensor` (see `air_ops`), exactly as TorchAir's do, so the
  traced graph carries them to the converter;
- while an npuir `Graph` is being built, they build IR:

```python
with torchair.scope.npu_stream_switch("1"):           # stream.switch "1" { ... }
    torchair.scope.npu_wait_tensor(in4, add_result)   # stream.wait_tensor %in4 after %add_result
    mm = ops.mm(in3, in4)                             # reads the wait's result
with torchair.scope.limit_core_num(8, 16):            # coreset.limit cube 8 vector 16 { ... }
    y = ops.relu(x)
```

Scopes nest; values made inside a scope and used after it leave it through
the scope's yield.  `set_stream_limit`, `get_stream_limit` and `reset_stream_limit` are
torch_npu's stream limits, by stream tag: a limit holds for the ops issued on its stream
after the call (on torch, an `air::scope_enter` / `scope_exit` pair marks the call's
place among the model's ops).  The arguments are checked by the same functions on both
paths, and a mistake is a `TorchairError` at the user's line.  While dynamo
or `torch.export` traces the model, an exception would surface as the
tracer's own error, so the message is carried in the graph instead and the
converter raises it, located at the same line.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any

from npuir.backends.npu.hardware import known_device
from npuir.diagnostics import Kind
from npuir.dialects import validation

from .errors import fail
from .graph import Graph, Tensor, building, current_graph
from .scope_keys import STREAM_LIMIT, STREAM_LIMIT_CUBE, STREAM_LIMIT_VECTOR

INNER_PARALLEL = Kind(
    "torchair.bad-scope-argument.inner-parallel",
    "enable_inner_parallel must be True or False, got {value}",
)
"""A non-bool `enable_inner_parallel`; argument: `value` (as Python writes it)."""
WAIT_ARGUMENTS = Kind(
    "torchair.bad-scope-argument.wait-tensor",
    "npu_wait_tensor(self, dependency) takes two {what}",
)
"""`npu_wait_tensor` given something other than two tensors; argument: `what` ("torch
Tensors" on torch, "Tensors" on a builder graph).  (The scope arguments the shared rules
check have those rules' kinds, `npuir.dialects.validation`.)"""


def _torch_traced() -> bool:
    """True while dynamo or `torch.export` traces a torch model (torch imported)."""
    if "torch" not in sys.modules:
        return False
    from . import air_ops

    return air_ops.compiling()


def _on_torch() -> bool:
    """Whether the scopes act on torch (the `air::` ops) rather than on a builder graph."""
    if _torch_traced():
        return True
    return not building() and "torch" in sys.modules


def _report(problem: validation.Problem) -> None:
    """Raise a mistake (a kind and its arguments: a shared rule's verdict,
    `npuir.dialects.validation`, or this module's) at the user's line; while a torch trace
    runs, carry it in the graph.  The rules are asked for a verdict, never to raise: dynamo
    traces this code."""
    kind, args = problem
    if _torch_traced():
        from . import air_ops

        air_ops.deferred_error(kind.render(args), kind.code, args)
        return
    raise fail(kind, **args)


def stream_switch_error(
    stream_tag: object, stream_priority: object, inner: object
) -> validation.Problem | None:
    """What is wrong with `npu_stream_switch`'s arguments, or None."""
    problem = validation.stream_tag_problem(stream_tag) or validation.stream_priority_problem(
        stream_priority
    )
    if problem is not None:
        return problem
    if not isinstance(inner, bool):
        return INNER_PARALLEL, {"value": repr(inner)}
    return None


def core_num_error(
    op_aicore_num: object, op_vectorcore_num: object, target: str | None = None
) -> validation.Problem | None:
    """What is wrong with `limit_core_num`'s arguments, or None; with `target`, the
    counts must also fit that device (on torch the importer checks them, knowing it)."""
    hw = None if target is None else known_device(target)
    for name, value, engine in (
        ("op_aicore_num", op_aicore_num, "cube"),
        ("op_vectorcore_num", op_vectorcore_num, "vector"),
    ):
        problem = validation.core_count_problem(
            name,
            value,
            engine=engine,
            most=None if hw is None else hw.cores(engine),
            device="" if hw is None else hw.name,
        )
        if problem is not None:
            return problem
    return None


class _Scope:
    """A `with` block: a `stream.switch` / `coreset.limit` scope in the builder, or
    `air::scope_enter(keys, values)` ... `air::scope_exit()` on torch."""

    def __init__(
        self,
        keys: list[str],
        values: list[str],
        tag: str | None = None,
        priority: int = 0,
        counts: tuple[int | None, int | None] | None = None,
    ) -> None:
        self._keys = keys
        self._values = values
        self._tag = tag
        self._priority = priority
        self._counts = counts
        self._graph: Graph | None = None
        self._torch = False

    def __enter__(self) -> None:
        if not self._keys:  # a mistake already carried into the trace
            return
        if _on_torch():
            from . import air_ops

            self._torch = True
            air_ops.scope_enter(self._keys, self._values)
            return
        self._graph = current_graph()
        self._graph.open_scope(self._tag, self._priority, self._counts)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._torch:
            from . import air_ops

            air_ops.scope_exit()
        elif self._graph is not None:
            self._graph.close_scope()


def npu_stream_switch(
    stream_tag: str, stream_priority: int = 0, enable_inner_parallel: bool = True
) -> _Scope:
    """Run the ops of the `with` block on the stream named `stream_tag`.

    The same tag is the same stream; the innermost scope wins; lower
    priority numbers are served first.  `enable_inner_parallel` is accepted
    because TorchAir's signature has it; npuir has nothing it would switch.
    On torch the scope is `air::scope_enter` with TorchAir's keys
    `_user_stream_label`, `_user_stream_priority`, `_enable_inner_parallel`.
    """
    message = stream_switch_error(stream_tag, stream_priority, enable_inner_parallel)
    if message is not None:
        _report(message)
        return _Scope([], [])
    return _Scope(
        ["_user_stream_label", "_user_stream_priority", "_enable_inner_parallel"],
        [stream_tag, str(stream_priority), str(enable_inner_parallel)],
        tag=stream_tag,
        priority=stream_priority,
    )


def limit_core_num(op_aicore_num: int, op_vectorcore_num: int) -> _Scope:
    """Bound the cube (`op_aicore_num`) and vector cores each op of the block may take.

    On torch the scope is `air::scope_enter` with TorchAir's keys
    `_op_aicore_num` and `_op_vectorcore_num`.
    """
    target = None if _on_torch() else current_graph().target
    message = core_num_error(op_aicore_num, op_vectorcore_num, target)
    if message is not None:
        _report(message)
        return _Scope([], [])
    return _Scope(
        ["_op_aicore_num", "_op_vectorcore_num"],
        [str(op_aicore_num), str(op_vectorcore_num)],
        counts=(op_aicore_num, op_vectorcore_num),
    )


def npu_wait_tensor(self: Any, dependency: Any) -> Any:
    """Order every later use of `self` after `dependency` is computed.

    As in TorchAir, the call is a statement: every later use of `self`, in
    this scope, nested in it or after it closes, on any stream, is ordered after
    `dependency`'s producer (docs/ir.md; the program graph orders them).  On
    torch tensors it is `air::wait_tensor`.
    The result is `self` (after the wait), for code that uses it.
    """
    if "torch" in sys.modules:
        from . import air_ops

        if air_ops.is_tensor(self) and air_ops.is_tensor(dependency):
            return air_ops.wait_tensor(self, dependency)
        if air_ops.is_tensor(self) or air_ops.is_tensor(dependency) or _torch_traced():
            _report((WAIT_ARGUMENTS, {"what": "torch Tensors"}))
            return self
    if not isinstance(self, Tensor) or not isinstance(dependency, Tensor):
        raise fail(WAIT_ARGUMENTS, what="Tensors")
    return current_graph().wait_tensor(self, dependency)


_TORCH_LIMITS: dict[str, tuple[int, int]] = {}
"""On torch (no graph is being built): each stream tag's limit, as `get_stream_limit` reads
it; the compiled graph gets the same limits from the `air::` ops that carry them."""


def stream_limit_error(
    stream_tag: object, cube_num: object, vector_num: object
) -> validation.Problem | None:
    """What is wrong with `set_stream_limit`'s arguments, or None (-1: no limit)."""
    if stream_tag != validation.MAIN_STREAM:  # the main stream may be limited too
        problem = validation.stream_tag_problem(stream_tag)
        if problem is not None:
            return problem
    for name, value in (("cube_num", cube_num), ("vector_num", vector_num)):
        problem = validation.core_count_problem(name, value, no_limit=True)
        if problem is not None:
            return problem
    return None


def _torch_stream_limit(stream_tag: str, cube_num: int, vector_num: int) -> None:
    """`set_stream_limit` on torch: remembered for `get_stream_limit`, and carried to the
    converter by an `air::scope_enter` / `scope_exit` pair at this point of the model."""
    from . import air_ops

    if cube_num == -1 and vector_num == -1:
        _TORCH_LIMITS.pop(stream_tag, None)
    else:
        _TORCH_LIMITS[stream_tag] = (cube_num, vector_num)
    air_ops.scope_enter(
        [STREAM_LIMIT, STREAM_LIMIT_CUBE, STREAM_LIMIT_VECTOR],
        [stream_tag, str(cube_num), str(vector_num)],
    )
    air_ops.scope_exit()


def set_stream_limit(stream_tag: str, cube_num: int = -1, vector_num: int = -1) -> None:
    """Bound the cores of the ops issued on the stream `stream_tag` after this call.

    torch_npu's `set_stream_limit(stream, cube_num=-1, vector_num=-1)`, with a stream tag
    for the stream (`"<main>"` for the main one): -1 leaves that count unlimited; a later
    call replaces the stream's limit; ops issued on the stream before the call are not
    limited by it.  In a graph being built it builds IR (`Graph.set_stream_limit`); on
    torch (eager, `torch.compile`, `torch.export`) an `air::` op carries it to the
    converter, at its place among the model's ops.
    """
    problem = stream_limit_error(stream_tag, cube_num, vector_num)
    if _on_torch():
        if problem is not None:
            _report(problem)
            return
        _torch_stream_limit(stream_tag, cube_num, vector_num)
        return
    if problem is not None:
        raise fail(problem[0], **problem[1])
    current_graph().set_stream_limit(stream_tag, cube_num, vector_num)


def reset_stream_limit(stream_tag: str) -> None:
    """Ops issued on `stream_tag` after this call have no stream limit (torch_npu's
    `reset_stream_limit(stream)`); ops issued before keep theirs."""
    problem = stream_limit_error(stream_tag, -1, -1)
    if _on_torch():
        if problem is not None:
            _report(problem)
            return
        _torch_stream_limit(stream_tag, -1, -1)
        return
    if problem is not None:
        raise fail(problem[0], **problem[1])
    current_graph().reset_stream_limit(stream_tag)


def get_stream_limit(stream_tag: str) -> dict[str, int]:
    """The cores an op issued on `stream_tag` now may take: torch_npu's
    `get_stream_limit(stream)`, `{"cube_core_num": c, "vector_core_num": v}`.

    Without a stream limit a count is the config's `ge_config.aicore_num`, else the
    device's (in a graph being built: its target; on torch: npuir's default device, 910b2,
    the one `get_npu_backend` compiles for).
    """
    problem = stream_limit_error(stream_tag, -1, -1)
    if problem is not None:
        _report(problem)  # raises, except under a trace (the converter raises it then)
    if not _on_torch():
        return current_graph().get_stream_limit(stream_tag)
    hw = known_device(Graph.DEFAULT_TARGET)
    cube, vector = _TORCH_LIMITS.get(stream_tag, (-1, -1))
    if hw is not None:
        cube = hw.cube_cores if cube == -1 else cube
        vector = hw.vector_cores if vector == -1 else vector
    return {"cube_core_num": cube, "vector_core_num": vector}


def stream_limit(graph: Graph, attrs: dict[str, str]) -> None:
    """Build what an `air::scope_enter` carrying `set_stream_limit` says (the converter's
    half of `_torch_stream_limit`), at the graph's current point."""
    tag = attrs[STREAM_LIMIT]
    texts = (attrs.get(STREAM_LIMIT_CUBE, "-1"), attrs.get(STREAM_LIMIT_VECTOR, "-1"))
    cube, vector = (int(t) if t.lstrip("-").isdigit() else t for t in texts)
    problem = stream_limit_error(tag, cube, vector)
    if problem is not None:
        raise fail(problem[0], **problem[1])
    assert isinstance(cube, int) and isinstance(vector, int)  # checked just above
    if cube == -1 and vector == -1:
        graph.reset_stream_limit(tag)
    else:
        graph.set_stream_limit(tag, cube, vector)
