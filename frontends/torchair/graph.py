"""The graph builder behind `npuir.torchair`: `Graph`, `Program`, `Tensor`.

A `Graph` is one `func.func` under construction.  Ops are created detached,
in program order, each remembered with the scope it was created in (a tree of
`_Scope`s mirroring the user's `with` blocks); the nested `stream.switch` /
`coreset.limit` ops are materialised once, when the module is first asked
for.  Only then is it known which values leave a scope, so each scope yields
exactly the values used after it, and those uses are redirected to its
results.  Nothing is printed or parsed: building costs what creating the
xDSL objects costs, plus one verification of the finished module.

Every op gets the `FileLineColLoc` of the user's Python line that created it
(the first frame outside this package), and a mistake — a shape that does not
infer, a bad argument — raises `TorchairError`, a located `DiagnosticError`
whose message starts with that line.
"""

from __future__ import annotations

import math
import re
import warnings
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    ComplexType,
    DictionaryAttr,
    FileLineColLoc,
    Float16Type,
    Float32Type,
    Float64Type,
    FunctionType,
    IntAttr,
    IntegerType,
    LocationAttr,
    ModuleOp,
    Signedness,
    StringAttr,
    TensorType,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import VerifyException

from npuir.backends.npu.hardware import known_device
from npuir.diagnostics import DiagnosticError, Kind, SourceLocation
from npuir.dialects import coreset, gear, npu, stream, validation
from npuir.dialects.npu import DYN, OP_NAME, TARGET, NpuOp, dtype_name
from npuir.verifier import verify

from .configs.compiler_config import CompilerConfig
from .errors import FORCED, TorchairError, fail, refused, user_location

# Building a graph the wrong way: `torchair.graph.<what>` (values as Python writes them).
BAD_DTYPE = Kind("torchair.graph.dtype", "unsupported dtype {dtype} (choose from: {choices})")
"""A dtype npuir has no element type for; arguments: `dtype`, `choices`."""
BAD_SHAPE = Kind("torchair.graph.shape", "shape must be a sequence of dims, got {value}")
"""A shape that is no sequence; argument: `value`."""
BAD_DIM = Kind(
    "torchair.graph.dim",
    "dim {dim} in shape {shape} is not a size >= 0 or None (dynamic)",
)
"""A dim that is neither a size nor dynamic; arguments: `dim`, `shape`."""
NO_GRAPH = Kind(
    "torchair.graph.none-open", "no graph is being built; create one with torchair.Graph(name)"
)
"""An op built outside every graph."""
BAD_NAME = Kind("torchair.graph.name", "graph name must be a non-empty string, got {value}")
"""A graph name that is not a non-empty string; argument: `value`."""
FINISHED = Kind(
    "torchair.graph.finished",
    "graph '{graph}' is finished (its module was built); build a new one",
)
"""A graph changed after its module was built; argument: `graph`."""
BAD_CONSTANT = Kind("torchair.graph.constant", "a constant is a finite Python number, got {value}")
"""A constant that is not a finite number; argument: `value`."""
OUTPUTS_TWICE = Kind("torchair.graph.outputs-twice", "graph '{graph}' already has outputs")
"""`output` called twice; argument: `graph`."""
NOT_ITS_TENSOR = Kind(
    "torchair.graph.not-a-tensor", "{what}: expected a Tensor of graph '{graph}', got {value}"
)
"""An operand that is no tensor; arguments: `what`, `graph`, `value`."""
OTHER_GRAPH = Kind(
    "torchair.graph.other-graph",
    "{what}: the tensor belongs to graph '{owner}', not to '{graph}' (the current graph; "
    "`with g:` selects another)",
)
"""A tensor of another graph; arguments: `what`, `owner`, `graph`."""
ILL_TYPED = Kind("torchair.graph.ill-typed", "'{op_name}': {reason}")
"""An op whose operand types its type rule refuses; arguments: `op_name`, `reason` (the
rule's message)."""
UNOPENED_SCOPE = Kind("torchair.graph.scope-not-open", "a scope is closed that was never opened")
"""A scope closed twice."""
GEARS_NOT_AN_INPUT = Kind(
    "torchair.bad-gears.not-an-input",
    "set_dim_gears applies to an input of the current graph (g.input(...))",
)
"""`set_dim_gears` on a builder tensor that is no input."""
GEAR_DIM = Kind("torchair.bad-gears.dim", "dim index {dim} in dim_gears must be in [0, {last}]")
"""A dim index outside the tensor's rank; arguments: `dim`, `last`."""
GEARS_NOT_INTS = Kind(
    "torchair.bad-gears.not-ints",
    "gears for dim {dim} must be a list or tuple of ints, got {gears}",
)
"""A dim's gears that are not a list of ints; arguments: `dim`, `gears`."""
STATIC_USED = Kind(
    "torchair.bad-gears.static-used",
    "dim {dim} of input {index} is static and the input is already used; call set_dim_gears "
    "before using it, or declare the dim None",
)
"""Gears on a static dim of an input already used; arguments: `dim`, `index`."""
OPEN_SCOPE = Kind("torchair.graph.open-scope", "graph '{graph}' still has an open scope")
"""A graph built with a scope open; argument: `graph`."""
NO_OUTPUTS = Kind("torchair.graph.no-outputs", "graph '{graph}' has no outputs; call g.output(...)")
"""A graph built without outputs; argument: `graph`."""
PROGRAM_FINISHED = Kind(
    "torchair.graph.program-finished", "the program is finished (its module was built)"
)
"""A graph added to a program whose module was built."""
DUPLICATE_GRAPH = Kind(
    "torchair.graph.duplicate", "the program already has a graph named '{graph}'"
)
"""Two graphs of one program with one name; argument: `graph`."""
NO_GRAPHS = Kind(
    "torchair.graph.empty-program", "the program has no graphs; add one with p.graph(name)"
)
"""A program built without graphs."""

_FILE_ATTRS: dict[str, StringAttr] = {}


def to_loc(where: SourceLocation | None) -> LocationAttr | None:
    if where is None:
        return None
    name = _FILE_ATTRS.get(where.filename)
    if name is None:
        name = _FILE_ATTRS[where.filename] = StringAttr(where.filename)
    return FileLineColLoc(name, IntAttr(where.line), IntAttr(where.column))


# --------------------------------------------------------------------------
# Element types and shapes
# --------------------------------------------------------------------------

_DTYPES: dict[str, Attribute] = {
    "f16": Float16Type(),
    "bf16": BFloat16Type(),
    "f32": Float32Type(),
    "f64": Float64Type(),
    "i1": IntegerType(1),
    "i8": IntegerType(8),
    "ui8": IntegerType(8, Signedness.UNSIGNED),
    "i32": IntegerType(32),
    "i64": IntegerType(64),
    "c64": ComplexType(Float32Type()),
    "c128": ComplexType(Float64Type()),
}

# torch's spellings, so `torch.float16` or "float16" work as well as "f16".
_DTYPE_ALIASES = {
    "float16": "f16",
    "half": "f16",
    "bfloat16": "bf16",
    "float32": "f32",
    "float": "f32",
    "float64": "f64",
    "double": "f64",
    "int8": "i8",
    "uint8": "ui8",
    "bool": "i1",
    "int32": "i32",
    "int": "i32",
    "int64": "i64",
    "long": "i64",
    "complex64": "c64",
    "cfloat": "c64",
    "complex128": "c128",
    "cdouble": "c128",
}


def element_type(dtype: object) -> Attribute:
    """The xDSL element type for an npuir name ("f16"), a torch name or a torch dtype."""
    name = str(dtype).removeprefix("torch.")
    name = _DTYPE_ALIASES.get(name, name)
    ty = _DTYPES.get(name)
    if ty is None:
        raise fail(BAD_DTYPE, dtype=repr(dtype), choices=", ".join(_DTYPES))
    return ty


def tensor_type(shape: Sequence[int | str | None], dtype: object) -> TensorType[Attribute]:
    """`tensor<...>` for a shape whose dynamic dims are None, -1 or "?"."""
    if isinstance(shape, int) or not isinstance(shape, Sequence) or isinstance(shape, str):
        raise fail(BAD_SHAPE, value=repr(shape))
    dims: list[int] = []
    for d in shape:
        if d is None or d == "?" or d == -1:
            dims.append(DYN)
        elif isinstance(d, int) and not isinstance(d, bool) and d >= 0:
            dims.append(d)
        else:
            raise fail(BAD_DIM, dim=repr(d), shape=str(tuple(shape)))
    return TensorType(element_type(dtype), dims)


# --------------------------------------------------------------------------
# Tensors
# --------------------------------------------------------------------------


def argument_name(name: str) -> str:
    """The name a function argument named `name` is printed with, and read back by.

    xDSL drops a trailing `_<digits>` from a value's name (it is the suffix it adds to
    tell equal names apart), so torch's `c_lifted_tensor_0` would print as
    `%c_lifted_tensor` and an `.npz` keyed by torch's name would miss it.  Such a name
    keeps its digits behind a dot instead (`%c_lifted_tensor.0`), which MLIR's value
    names allow and nothing strips."""
    return re.sub(r"_(\d+)$", r".\1", name)


class Tensor:
    """A value of a graph under construction, as torch code holds a tensor.

    Arithmetic operators build ops (`a + b` is `ops.add(a, b)`, `a @ b` is
    `ops.matmul(a, b)`).
    """

    __slots__ = ("graph", "value")

    def __init__(self, graph: Graph, value: SSAValue) -> None:
        self.graph = graph
        self.value = value

    @property
    def type(self) -> TensorType[Attribute]:
        ty = self.value.type
        assert isinstance(ty, TensorType)
        return ty

    @property
    def shape(self) -> tuple[int | None, ...]:
        """The dims, None for a dynamic one."""
        return tuple(None if d == DYN else d for d in self.type.get_shape())

    @property
    def dtype(self) -> str:
        """The element type's short name: f16, bf16, f32, i1, i32, i64."""
        return dtype_name(self.type.element_type)

    def dim(self) -> int:
        return len(self.type.get_shape())

    def __repr__(self) -> str:
        return f"Tensor({self.type}, graph={self.graph.name!r})"

    def __add__(self, other: Tensor) -> Tensor:
        from . import ops

        return ops.add(self, other)

    def __sub__(self, other: Tensor) -> Tensor:
        from . import ops

        return ops.sub(self, other)

    def __mul__(self, other: Tensor) -> Tensor:
        from . import ops

        return ops.mul(self, other)

    def __truediv__(self, other: Tensor) -> Tensor:
        from . import ops

        return ops.div(self, other)

    def __matmul__(self, other: Tensor) -> Tensor:
        from . import ops

        return ops.matmul(self, other)

    def __neg__(self) -> Tensor:
        from . import ops

        return ops.neg(self)


# --------------------------------------------------------------------------
# Scopes
# --------------------------------------------------------------------------


class _Scope:
    """One open or closed `with` block: a `stream.switch` or a `coreset.limit`
    to be, or the function body itself (the root)."""

    __slots__ = ("aliases", "counts", "items", "location", "parent", "priority", "tag")

    def __init__(
        self,
        parent: _Scope | None,
        location: LocationAttr | None = None,
        tag: str | None = None,
        priority: int = 0,
        counts: tuple[int | None, int | None] | None = None,
    ) -> None:
        self.parent = parent
        self.location = location
        self.tag = tag
        self.priority = priority
        self.counts = counts
        self.items: list[Operation | _Scope] = []
        # npu_wait_tensor(self, dep) inside this scope: later uses of `self`
        # here or in nested scopes read the wait's result (TorchAir's meaning).
        self.aliases: dict[SSAValue, SSAValue] = {}


def _resolve(scope: _Scope, value: SSAValue) -> SSAValue:
    node: _Scope | None = scope
    while node is not None:
        alias = node.aliases.get(value)
        if alias is not None:
            return alias
        node = node.parent
    return value


# --------------------------------------------------------------------------
# Graphs
# --------------------------------------------------------------------------

_ENTERED: list[Graph] = []
"""Graphs made current by `with g:`, innermost last."""

_LATEST: list[Graph] = []
"""The graph created last (at most one, so that finished graphs are not kept alive)."""


def building() -> bool:
    """Whether a graph is being built: one entered with `with g:`, or the one created
    last while it is still open (the builder's scopes then build IR)."""
    return bool(_ENTERED) or (bool(_LATEST) and _LATEST[0]._func is None)


@contextmanager
def detached() -> Iterator[None]:
    """Leave the current graph as it was after the block: what an importer uses, so
    the graphs it builds never become the user's current graph."""
    saved = list(_LATEST)
    try:
        yield
    finally:
        _LATEST[:] = saved


def current_graph() -> Graph:
    """The graph that ops, scopes and `set_dim_gears` apply to: the innermost one
    entered with `with g:`, else the one created last."""
    if _ENTERED:
        return _ENTERED[-1]
    if not _LATEST:
        raise fail(NO_GRAPH)
    return _LATEST[0]


class _Built(ABC):
    """What a graph and a program both offer once built: their config, module and text."""

    config: CompilerConfig

    @property
    @abstractmethod
    def module(self) -> ModuleOp:
        """The finished, verified module."""

    def text(self) -> str:
        """The module as `.mlir` text."""
        from npuir.api import print_ir

        return print_ir(self.module)


class Graph(_Built):
    """One function under construction: `torchair.Graph(name, target, config)`.

    ```python
    g = torchair.Graph("forward")
    x = g.input((4, 8), "f16")
    g.output(ops.relu(x))
    module = g.module
    ```

    Creating a graph makes it current (scopes and `set_dim_gears` apply to
    the current graph); `with g:` makes it current again for a block.
    """

    DEFAULT_TARGET: ClassVar[str] = "910b2"

    def __init__(
        self,
        name: str = "forward",
        target: str = DEFAULT_TARGET,
        config: CompilerConfig | None = None,
        *,
        _program: Program | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise fail(BAD_NAME, value=repr(name))
        self.name = name
        self.target = target
        self.config = config if config is not None else CompilerConfig()
        self._program = _program
        self._location = to_loc(user_location())
        self._block = Block()
        self._root = _Scope(None)
        self._open: list[_Scope] = [self._root]
        self._scope_of: dict[Operation, _Scope] = {}
        self._limit_now: dict[str, tuple[tuple[int | None, int | None], Operation]] = {}
        """Each stream tag's limit now (`set_stream_limit` ... `reset_stream_limit`), with the
        `coreset.stream_limit` op that says it."""
        self._limited_ops: dict[str, list[tuple[Operation, Operation | None, set[str]]]] = {}
        """Per stream tag, each op issued on it: the limit op current when it was issued (None:
        unlimited) and the engines its enclosing `limit_core_num` scopes already bound."""
        self._limit_history: dict[str, list[Operation]] = {}
        """Per stream tag, every `coreset.stream_limit` set for it, in order."""
        self._constants: dict[tuple[float, str], Tensor] = {}
        self._gears: dict[int, dict[int, list[int]]] = {}
        self._arg_attrs: dict[int, dict[str, Attribute]] = {}
        self.attributes: dict[str, Attribute] = {}
        """Extra attributes of the function (an importer's records)."""
        self._outputs: list[SSAValue] | None = None
        self._func: FuncOp | None = None
        self._module: ModuleOp | None = None
        self._op_name: str | None = None  # set by `source()`
        self._last_on: dict[str, SSAValue] = {}
        """Per stream tag, the first result of the last npu op issued on it (`record`)."""
        self._pending: dict[str, list[SSAValue]] = {}
        """Per stream tag, what a `wait_recorded` made its next npu op wait for."""
        _LATEST[:] = [self]

    # -- context --------------------------------------------------------

    def __enter__(self) -> Graph:
        _ENTERED.append(self)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        _ENTERED.pop()

    @contextmanager
    def source(
        self, filename: str, line: int, column: int = 0, op_name: str | None = None
    ) -> Iterator[None]:
        """Give the ops built inside this block this location (and `npu.op_name`),
        instead of the caller's line, errors included: what an importer uses."""
        saved = self._op_name
        FORCED.append(SourceLocation(filename, line, column))
        self._op_name = op_name
        try:
            yield
        finally:
            FORCED.pop()
            self._op_name = saved

    # -- building -------------------------------------------------------

    def _check_open(self) -> None:
        if self._func is not None:
            raise fail(FINISHED, graph=self.name)

    def input(
        self,
        shape: Sequence[int | str | None],
        dtype: object = "f16",
        name: str | None = None,
        attributes: dict[str, Attribute] | None = None,
    ) -> Tensor:
        """A new function argument of `shape` (None, -1 or "?" for a dynamic dim),
        with `attributes` as its argument attributes."""
        self._check_open()
        index = len(self._block.args)
        arg = self._block.insert_arg(tensor_type(shape, dtype), index)
        if name is not None and name.isidentifier():
            arg.name_hint = argument_name(name)
        if attributes:
            self._arg_attrs[index] = dict(attributes)
        return Tensor(self, arg)

    def constant(self, value: float, dtype: object = "f16") -> Tensor:
        """A rank-0 `npu.constant` of `value` (a scalar the model captured), made once per
        value and dtype; it stands at the top of the function, outside every scope."""
        self._check_open()
        if not isinstance(value, int | float) or not math.isfinite(value):
            raise fail(BAD_CONSTANT, value=repr(value))
        elem = element_type(dtype)
        key = (float(value), dtype_name(elem))
        made = self._constants.get(key)
        if made is None:
            op = npu.ConstantOp.scalar(float(value), elem)
            op.location = self.location()
            self._scope_of[op] = self._root
            made = self._constants[key] = Tensor(self, op.result)
        return made

    def output(self, *values: Tensor) -> None:
        """The function's results, in order (`func.return`)."""
        self._check_open()
        if self._outputs is not None:
            raise fail(OUTPUTS_TWICE, graph=self.name)
        self._outputs = [self.value_of(v, "output") for v in values]

    def value_of(self, tensor: object, what: str) -> SSAValue:
        """The SSA value a user's tensor stands for here, after any wait on it."""
        if not isinstance(tensor, Tensor):
            raise fail(NOT_ITS_TENSOR, what=what, graph=self.name, value=repr(tensor))
        if tensor.graph is not self:
            raise fail(OTHER_GRAPH, what=what, owner=tensor.graph.name, graph=self.name)
        return _resolve(self._open[-1], tensor.value)

    def location(self) -> LocationAttr | None:
        return to_loc(user_location())

    def add_op(
        self,
        op_type: type[Operation],
        operands: Sequence[SSAValue],
        attributes: dict[str, Attribute] | None = None,
        result_types: Sequence[Attribute] | None = None,
        num_results: int = 1,
    ) -> Operation:
        """Create an op in the innermost open scope.

        For an `npu` op the result types come from the dialect's own inference
        (`result_types`, when given, is the declared type that reshape and cast
        read); an inference failure becomes a `TorchairError` at the user's line.
        """
        self._check_open()
        if issubclass(op_type, NpuOp) and operands:
            operands = self._after_pending(operands)
        attrs = dict(attributes or {})
        if self._op_name is not None:
            attrs[OP_NAME] = StringAttr(self._op_name)
        placeholder = list(result_types) if result_types else [operands[0].type] * num_results
        op = op_type.create(
            operands=operands, result_types=placeholder, attributes=attrs, location=self.location()
        )
        if isinstance(op, NpuOp):
            try:
                inferred = op.infer_result_types([v.type for v in operands])
            except VerifyException as exc:
                op.drop_all_references()
                raise fail(ILL_TYPED, op_name=op.name, reason=str(exc)) from None
            for result, ty in zip(list(op.results), inferred):
                if result.type != ty:
                    Rewriter.replace_value_with_new_type(result, ty)
        scope = self._open[-1]
        scope.items.append(op)
        self._scope_of[op] = scope
        if isinstance(op, NpuOp) and self._limit_history:
            self._note_stream_limit(op)
        if isinstance(op, NpuOp) and op.results:
            self._last_on[self._stream_tag()] = op.results[0]
        return op

    def recorded(self) -> Tensor | None:
        """npugraph_ex's `record()`: the point after the last npu op issued so far on the
        current stream, as that op's result (None: nothing issued there yet)."""
        value = self._last_on.get(self._stream_tag())
        return None if value is None else Tensor(self, value)

    def wait_recorded(self, points: Sequence[Tensor | None]) -> None:
        """npugraph_ex's `wait([record, ...])`: the current stream runs nothing more until the
        recorded points have run.  Streams run in issue order, so ordering the next npu op
        issued on it is enough: its first operand goes through a `stream.wait_tensor` after
        each point (which also orders the later uses of that operand after them)."""
        pending = self._pending.setdefault(self._stream_tag(), [])
        pending += [p.value for p in points if p is not None]

    def _after_pending(self, operands: Sequence[SSAValue]) -> Sequence[SSAValue]:
        deps = self._pending.pop(self._stream_tag(), None)
        if not deps:
            return operands
        first = operands[0]
        for dep in deps:
            first = self.wait_tensor(Tensor(self, first), Tensor(self, dep)).value
        return [first, *operands[1:]]

    def _stream_tag(self) -> str:
        """The stream tag ops built now go to: the innermost stream scope's, else main."""
        for scope in reversed(self._open):
            if scope.tag is not None:
                return scope.tag
        return stream.MAIN_TAG

    def _note_stream_limit(self, op: Operation) -> None:
        """Remember which stream limit `op` was issued under (it limits the ops issued after
        the call on that stream only), and which engines its own scopes already bound."""
        tag = self._stream_tag()
        if tag not in self._limit_history:
            return
        now = self._limit_now.get(tag)
        bound = {
            engine
            for scope in self._open
            if scope.counts is not None
            for engine, count in zip(("cube", "vector"), scope.counts)
            if count is not None
        }
        self._limited_ops.setdefault(tag, []).append((op, None if now is None else now[1], bound))

    def wait_tensor(self, tensor: Tensor, dependency: Tensor) -> Tensor:
        """`stream.wait_tensor`: see `torchair.scope.npu_wait_tensor`."""
        original = tensor.value
        op = self.add_op(
            stream.WaitTensorOp,
            [
                self.value_of(tensor, "npu_wait_tensor"),
                self.value_of(dependency, "npu_wait_tensor"),
            ],
        )
        if original is not dependency.value:
            self._open[-1].aliases[original] = op.results[0]
        return Tensor(self, op.results[0])

    def open_scope(
        self,
        tag: str | None = None,
        priority: int = 0,
        counts: tuple[int | None, int | None] | None = None,
    ) -> None:
        self._check_open()
        scope = _Scope(self._open[-1], self.location(), tag, priority, counts)
        self._open[-1].items.append(scope)
        self._open.append(scope)

    def close_scope(self) -> None:
        if len(self._open) == 1:
            raise fail(UNOPENED_SCOPE)
        self._open.pop()

    def set_stream_limit(self, stream_tag: str, cube_num: int = -1, vector_num: int = -1) -> None:
        """Bound the cores of the ops issued on the stream `stream_tag` from now on.

        torch_npu's `set_stream_limit(stream, cube_num=-1, vector_num=-1)`: -1 leaves that
        count unlimited; a later call for the stream replaces the limit (both counts), and
        ops issued on the stream before the call keep the limit they were issued under.
        When every op on the stream has one limit, the function gets one
        `coreset.stream_limit`; otherwise each limited op gets a `coreset.limit` of its own.
        """
        self._check_open()
        try:
            if stream_tag != stream.MAIN_TAG:  # the main stream may be limited too
                validation.stream_tag(stream_tag)
            counts = [
                validation.core_count(name, c, no_limit=True)
                for c, name in ((cube_num, "cube_num"), (vector_num, "vector_num"))
            ]
        except validation.ValidationError as exc:
            raise refused(exc) from None
        history = self._history(stream_tag)
        if counts == [None, None]:
            self._limit_now.pop(stream_tag, None)
            return
        op = coreset.StreamLimitOp(stream_tag, counts[0], counts[1])
        op.location = self.location()
        self._scope_of[op] = self._root
        history.append(op)
        self._limit_now[stream_tag] = ((counts[0], counts[1]), op)

    def reset_stream_limit(self, stream_tag: str) -> None:
        """Ops issued on `stream_tag` from now on are not limited by a stream limit
        (torch_npu's `reset_stream_limit(stream)`)."""
        self._check_open()
        try:
            if stream_tag != stream.MAIN_TAG:
                validation.stream_tag(stream_tag)
        except validation.ValidationError as exc:
            raise refused(exc) from None
        self._history(stream_tag)
        self._limit_now.pop(stream_tag, None)

    def _history(self, tag: str) -> list[Operation]:
        """The stream limits set for `tag`; on the first, the ops already issued on it are
        noted as unlimited (ops are noted per stream only once a limit concerns it)."""
        history = self._limit_history.get(tag)
        if history is None:
            history = self._limit_history[tag] = []
            issued = self._limited_ops.setdefault(tag, [])

            def walk(scope: _Scope, current: str, bound: frozenset[str]) -> None:
                if scope.tag is not None:
                    current = scope.tag
                if scope.counts is not None:
                    bound = bound | {
                        e for e, c in zip(("cube", "vector"), scope.counts) if c is not None
                    }
                for item in scope.items:
                    if isinstance(item, _Scope):
                        walk(item, current, bound)
                    elif isinstance(item, NpuOp) and current == tag:
                        issued.append((item, None, set(bound)))

            walk(self._root, stream.MAIN_TAG, frozenset())
        return history

    def get_stream_limit(self, stream_tag: str) -> dict[str, int]:
        """The cores an op issued on `stream_tag` now may take, per engine, as torch_npu's
        `get_stream_limit(stream)` gives them: the stream's limit, else the config's
        `ge_config.aicore_num`, else the device's cores."""
        try:
            if stream_tag != stream.MAIN_TAG:
                validation.stream_tag(stream_tag)
        except validation.ValidationError as exc:
            raise refused(exc) from None
        hw = known_device(self.target)
        now = self._limit_now.get(stream_tag)
        given = now[0] if now is not None else (None, None)
        base = self._global_cores() or (None, None)
        out: dict[str, int] = {}
        for key, engine, count, fallback in (
            ("cube_core_num", "cube", given[0], base[0]),
            ("vector_core_num", "vector", given[1], base[1]),
        ):
            value = count if count is not None else fallback
            if value is None and hw is not None:
                value = hw.cores(engine)
            out[key] = -1 if value is None else value
        return out

    def _stream_limit_ops(self) -> list[Operation]:
        """The function-wide `coreset.stream_limit`s: one per stream whose ops all run under
        one limit; the ops of a stream whose limit changed get their own `coreset.limit`
        (`_limit_each`) instead."""
        whole: list[Operation] = []
        for tag in self._limit_history:
            issued = self._limited_ops.get(tag, [])
            if not issued:  # nothing on the stream: the last limit stays (a pass warns)
                now = self._limit_now.get(tag)
                if now is not None:
                    whole.append(now[1])
                continue
            # the same counts set again (a loop over layers) are still one limit
            under = {_counts_of(limit) for _, limit, _ in issued}
            if len(under) == 1 and issued[0][1] is not None:
                whole.append(issued[0][1])
        return whole

    def _limit_each(self, whole: list[Operation]) -> None:
        """Put each op of a stream whose limit changed in a `coreset.limit` giving the counts
        it was issued under (those its own `limit_core_num` scopes do not already give)."""
        for issued in self._limited_ops.values():
            if any(limit in whole for _, limit, _ in issued):
                continue
            for op, limit, bound in issued:
                if not isinstance(limit, coreset.StreamLimitOp):
                    continue
                cube, vector = (
                    None if engine in bound else limit.limit(engine)
                    for engine in ("cube", "vector")
                )
                if cube is not None or vector is not None:
                    _limit_op(op, cube, vector)

    def set_gears(self, tensor: Tensor, dim_gears: dict[int, Sequence[int]]) -> None:
        """`gear.dims` on an input: see `torchair.inference.set_dim_gears`."""
        self._check_open()
        value = tensor.value if isinstance(tensor, Tensor) else None
        if value is None or tensor.graph is not self or value not in self._block.args:
            raise fail(GEARS_NOT_AN_INPUT)
        index = self._block.args.index(value)
        shape = list(tensor.type.get_shape())
        checked: dict[int, list[int]] = {}
        try:
            for dim, gears in dim_gears.items():
                if not isinstance(dim, int) or not 0 <= dim < len(shape):
                    raise fail(GEAR_DIM, dim=repr(dim), last=len(shape) - 1)
                if not isinstance(gears, list | tuple):
                    raise fail(GEARS_NOT_INTS, dim=dim, gears=repr(gears))
                checked[dim] = validation.gear_list(dim, gears)
            validation.gears_once(f"input {index}", self._gears.get(index), checked)
            # Dims without gears must be static: a `?` one would have no size in any version.
            validation.ungeared_dims_static(
                f"input {index}", shape, list(checked), str(tensor.type), DYN
            )
        except validation.ValidationError as exc:
            raise refused(exc) from None
        static = [d for d in checked if shape[d] != DYN]
        if static:
            # As TorchAir's mark_dynamic: the annotated dims become dynamic,
            # which is only sound before anything has used the input.
            if value.uses:
                raise fail(STATIC_USED, dim=static[0], index=index)
            for d in static:
                shape[d] = DYN
            tensor.value = Rewriter.replace_value_with_new_type(
                value, TensorType(tensor.type.element_type, shape)
            )
        self._gears[index] = checked

    # -- finishing ------------------------------------------------------

    def build_function(self) -> FuncOp:
        """The finished `func.func` (built once; the graph is closed afterwards)."""
        if self._func is not None:
            return self._func
        if len(self._open) > 1:
            raise fail(OPEN_SCOPE, graph=self.name)
        if self._outputs is None:
            raise fail(NO_OUTPUTS, graph=self.name)
        ret = ReturnOp(*self._outputs)
        self._scope_of[ret] = self._root
        constants = [t.value.owner for t in self._constants.values()]
        stream_limits = self._stream_limit_ops()
        body = [
            *stream_limits,
            *(op for op in constants if isinstance(op, Operation)),
            *self._materialise(self._root),
            ret,
        ]
        self._block.add_ops(body)
        self._limit_each(stream_limits)
        arg_types = [a.type for a in self._block.args]
        arg_attrs = None
        if self._gears or self._arg_attrs:
            per_arg = [dict(self._arg_attrs.get(i, {})) for i in range(len(arg_types))]
            for i, dims in self._gears.items():
                per_arg[i][gear.DIMS] = gear.DimsAttr(dims)
            arg_attrs = ArrayAttr([DictionaryAttr(attrs) for attrs in per_arg])
        func = FuncOp(
            self.name,
            FunctionType.from_lists(arg_types, [v.type for v in self._outputs]),
            Region(self._block),
            arg_attrs=arg_attrs,
        )
        if self._gears:
            func.attributes[gear.POLICY] = StringAttr(
                self.config.inference_config.dynamic_gears_merge_policy
            )
        func.attributes.update(self.attributes)
        if self._location is not None:
            func.location = self._location
        self._func = func
        self._scope_of.clear()
        return func

    def _materialise(self, scope: _Scope) -> list[Operation]:
        return [self._close(item) if isinstance(item, _Scope) else item for item in scope.items]

    def _inside(self, op: Operation, scope: _Scope) -> bool:
        node: _Scope | None = self._scope_of[op]
        while node is not None:
            if node is scope:
                return True
            node = node.parent
        return False

    def _close(self, scope: _Scope) -> Operation:
        """The scope op for a closed `with` block, yielding what is used after it."""
        body = self._materialise(scope)
        escaping = [
            r
            for op in body
            for r in op.results
            if any(not self._inside(use.operation, scope) for use in r.uses)
        ]
        scope_op: Operation
        term: Operation
        if scope.tag is not None:
            term = stream.YieldOp(*escaping)
            scope_op = stream.SwitchOp(
                scope.tag, Region(Block([*body, term])), [r.type for r in escaping], scope.priority
            )
        else:
            assert scope.counts is not None
            term = coreset.YieldOp(*escaping)
            scope_op = coreset.LimitOp(
                *scope.counts, Region(Block([*body, term])), [r.type for r in escaping]
            )
        if scope.location is not None:
            scope_op.location = scope.location
        self._scope_of[term] = scope
        self._scope_of[scope_op] = scope.parent  # type: ignore[assignment]
        for inner, outer in zip(escaping, scope_op.results):
            inner.replace_uses_with_if(
                outer,
                lambda use: use.operation is not term and not self._inside(use.operation, scope),
            )
        return scope_op

    def _global_cores(self) -> tuple[int | None, int | None] | None:
        """GE's `aicore_num`, which sets nothing in capture mode (GE compiles no graph)."""
        return None if self.config.capture() else self.config.ge_config.global_cores()

    def _module_attributes(self) -> dict[str, Attribute]:
        attrs: dict[str, Attribute] = {TARGET: StringAttr(self.target)}
        cores = self._global_cores()
        if cores is not None:
            attrs[coreset.GLOBAL] = coreset.CoresAttr(*cores)
        return attrs

    @property
    def module(self) -> ModuleOp:
        """The finished, verified module holding this graph (or its program's)."""
        if self._program is not None:
            return self._program.module
        if self._module is None:
            module = ModuleOp([self.build_function()])
            module.attributes.update(self._module_attributes())
            verify_built(module, self.config)
            self._module = module
        return self._module


def _counts_of(limit: Operation | None) -> tuple[int | None, int | None] | None:
    """A `coreset.stream_limit`'s (cube, vector) limits, or None for no stream limit."""
    if not isinstance(limit, coreset.StreamLimitOp):
        return None
    return limit.limit("cube"), limit.limit("vector")


def _limit_op(op: Operation, cube: int | None, vector: int | None) -> None:
    """Put `op` alone in a `coreset.limit` scope of these counts, in its place (its results'
    uses read the scope's)."""
    block = op.parent_block()
    assert block is not None
    body = Block()
    limit = coreset.LimitOp(cube, vector, Region(body), [r.type for r in op.results])
    limit.location = op.location
    block.insert_op_before(limit, op)
    for result, new in zip(op.results, limit.results):
        result.replace_all_uses_with(new)
    op.detach()
    body.add_op(op)
    body.add_op(coreset.YieldOp(*op.results))


def verify_built(module: ModuleOp, config: CompilerConfig | None = None) -> None:
    """Verify a finished module, and check it against `config` (`check_mode`); a failure
    is located at the user's line of the op."""
    try:
        verify(module)
    except DiagnosticError as exc:
        raise TorchairError(exc.diagnostic) from None
    if config is not None:
        check_mode(module, config)


def check_mode(module: ModuleOp, config: CompilerConfig) -> None:
    """`config.mode`'s rules for a module, the same for the builder, the converter and
    `get_npu_backend`.  Both modes take stream scopes and core limits (npugraph_ex's
    multi_stream.md and limit_cores.md); under `"reduce-overhead"` the options that may not
    take effect there, gears included, are one warning in TorchAir's words
    (`CompilerConfig.capture_warning`)."""
    gears = any(
        isinstance(op, FuncOp)
        and op.arg_attrs is not None
        and any(gear.DIMS in attrs.data for attrs in op.arg_attrs.data)
        for op in module.ops
    )
    message = config.capture_warning(gears=gears)
    if message is not None and message not in _CAPTURE_WARNED:
        _CAPTURE_WARNED.add(message)
        warnings.warn(message, UserWarning, stacklevel=3)


_CAPTURE_WARNED: set[str] = set()
"""Each capture-mode warning once per process, as TorchAir's `warnings.filterwarnings("once")`."""


class Program(_Built):
    """Several graphs in one module, one function per rank (MPMD).

    ```python
    p = torchair.Program()
    g0 = p.graph("rank0")   # becomes the current graph
    ...
    g1 = p.graph("rank1")
    ...
    module = p.module
    ```
    """

    DEFAULT_TARGET: ClassVar[str] = "910b2"

    def __init__(self, target: str = DEFAULT_TARGET, config: CompilerConfig | None = None) -> None:
        self.target = target
        self.config = config if config is not None else CompilerConfig()
        self.graphs: list[Graph] = []
        self._module: ModuleOp | None = None

    def graph(self, name: str) -> Graph:
        """A new function of this program, made the current graph."""
        if self._module is not None:
            raise fail(PROGRAM_FINISHED)
        if any(g.name == name for g in self.graphs):
            raise fail(DUPLICATE_GRAPH, graph=name)
        g = Graph(name, self.target, self.config, _program=self)
        self.graphs.append(g)
        return g

    @property
    def module(self) -> ModuleOp:
        """The finished, verified module: one function per graph, in creation order."""
        if self._module is None:
            if not self.graphs:
                raise fail(NO_GRAPHS)
            module = ModuleOp([g.build_function() for g in self.graphs])
            module.attributes.update(self.graphs[0]._module_attributes())
            verify_built(module, self.config)
            self._module = module
        return self._module
