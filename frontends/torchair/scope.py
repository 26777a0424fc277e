"""`torchair.scope`: TorchAir's stream and core-limit scopes, building IR.

The names and signatures are TorchAir's (`torchair/scope/__init__.py`):

```python
with torchair.scope.npu_stream_switch("1"):           # stream.switch "1" { ... }
    torchair.scope.npu_wait_tensor(in4, add_result)   # stream.wait_tensor %in4 after %add_result
    mm = ops.mm(in3, in4)                             # reads the wait's result
with torchair.scope.limit_core_num(8, 16):            # coreset.limit cube 8 vector 16 { ... }
    y = ops.relu(x)
```

Scopes nest; values made inside a scope and used after it leave it through
the scope's yield.  Each applies to the current graph.
"""

from __future__ import annotations

from types import TracebackType

from npuir.backends.npu.hardware import Hardware, HardwareError, load_hardware
from npuir.dialects import validation

from ._errors import fail, refused
from ._graph import Graph, Tensor, current_graph


class _Scope:
    """A `with` block that opens a `stream.switch` or a `coreset.limit` scope."""

    def __init__(
        self,
        tag: str | None = None,
        priority: int = 0,
        counts: tuple[int | None, int | None] | None = None,
    ) -> None:
        self._tag = tag
        self._priority = priority
        self._counts = counts
        self._graph: Graph | None = None

    def __enter__(self) -> None:
        self._graph = current_graph()
        self._graph.open_scope(self._tag, self._priority, self._counts)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._graph is not None
        self._graph.close_scope()


def npu_stream_switch(
    stream_tag: str, stream_priority: int = 0, enable_inner_parallel: bool = True
) -> _Scope:
    """Run the ops of the `with` block on the stream named `stream_tag`.

    The same tag is the same stream; the innermost scope wins; lower
    priority numbers are served first.  `enable_inner_parallel` is accepted
    because TorchAir's signature has it; npuir has nothing it would switch.
    """
    try:
        validation.stream_tag(stream_tag)
        validation.stream_priority(stream_priority)
    except validation.ValidationError as exc:
        raise refused(exc) from None
    if not isinstance(enable_inner_parallel, bool):
        raise fail(f"enable_inner_parallel must be True or False, got {enable_inner_parallel!r}")
    return _Scope(tag=stream_tag, priority=stream_priority)


def limit_core_num(op_aicore_num: int, op_vectorcore_num: int) -> _Scope:
    """Bound the cube (`op_aicore_num`) and vector cores each op of the block may take."""
    try:
        hw: Hardware | None = load_hardware(current_graph().target)
    except HardwareError:
        hw = None  # an unknown target: coreset-lower checks the counts against the device
    counts: list[int | None] = []
    for name, value, engine in (
        ("op_aicore_num", op_aicore_num, "cube"),
        ("op_vectorcore_num", op_vectorcore_num, "vector"),
    ):
        try:
            counts.append(
                validation.core_count(
                    name,
                    value,
                    engine=engine,
                    most=None if hw is None else hw.cores(engine),
                    device="" if hw is None else hw.name,
                )
            )
        except validation.ValidationError as exc:
            raise refused(exc) from None
    return _Scope(counts=(counts[0], counts[1]))


def npu_wait_tensor(self: Tensor, dependency: Tensor) -> Tensor:
    """Order every later use of `self` after `dependency` is computed.

    As in TorchAir, the call is a statement: every later use of `self`, in
    this scope, nested in it or after it closes, on any stream, is ordered
    after `dependency`'s producer (DESIGN §2.2; the program graph orders them).
    The result is `self`, for code that uses it.
    """
    graph = current_graph()
    if not isinstance(self, Tensor) or not isinstance(dependency, Tensor):
        raise fail("npu_wait_tensor(self, dependency) takes two Tensors")
    return graph.wait_tensor(self, dependency)


def set_stream_limit(stream_tag: str, cube_num: int = -1, vector_num: int = -1) -> None:
    """Bound the cores of every op on the stream `stream_tag` of the current graph.

    torch_npu's `set_stream_limit(stream, cube_num=-1, vector_num=-1)`, with a
    stream tag for the stream (-1: that count is unlimited).
    """
    current_graph().set_stream_limit(stream_tag, cube_num, vector_num)
