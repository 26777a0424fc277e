"""`torch.export` programs in: an `ExportedProgram` (or a `.pt2`) to an npuir module.

One converter for both torch routes: `torch.export` / `.pt2` files come here
directly, and `torch.compile(backend=npuir.torchair.get_npu_backend())`
(`npuir.driver.torch_backend`) re-traces dynamo's graph with `torch.export`
and imports it here too, so both routes give the same IR for the same model.

The optional extra `npuir[torch]`.  The importer walks the FX graph once and
builds every op through `npuir.torchair` — the same builder the Python API
uses, so shapes are inferred by the dialect and scopes are made the same way:

- placeholders (parameters, buffers, lifted constants and user inputs) become
  function arguments, in the graph's order; a parameter, buffer or constant's
  argument names its state entry in `torch.state` (a run of the `.pt2` takes its
  value from the archive, not as an input); a symbolic dim becomes `?`, its
  symbol is kept in the argument's `torch.sym_dims` and its `torch.export.Dim`
  range in the function's `torch.dim_ranges = {s0 = array<i64: lo, hi>}`
  (hi = -1: unbounded);
- a Python scalar operand (`x * 0.125`, a mean's divisor) becomes a rank-0
  `npu.constant` of the other operand's dtype (not an input: runs use its value);
- TorchAir's `air::scope_enter` / `air::scope_exit` open and close
  `stream.switch` (keys `_user_stream_label`, `_user_stream_priority`) and
  `coreset.limit` (`_op_aicore_num`, `_op_vectorcore_num`) scopes, nesting as
  written; `air::wait_tensor` is `stream.wait_tensor`;
- every op is located at the user's source line from the FX node's stack
  trace and carries the FX node name in `npu.op_name`.

The export is imported as traced, without `run_decompositions()`: torch's
decomposition re-trace refuses ops without a result value (the scope
markers), and the traced ATen ops (`linear`, `matmul`, `softmax`,
`rms_norm`, ...) map to npu ops directly.  An ATen op with no npu op is a
`npu.opaque` op (`ge_type = "aten.cumsum.default"`, engine vector, costed
from its tensor sizes) with one warning per kind; so is a mapped op in a form
its mapping does not take (a slice of a tensor with dynamic dims, an unbatched `conv2d`),
its warning (`torch.unmapped-form`) giving the reason; `strict=True` refuses both.
A constant input (`use_cache=False`, an int or float argument torch fixed at
export) is no argument: an op taking it as an operand gets an `npu.constant`.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import math
import re
import warnings as pywarnings
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute

from npuir.backends.npu.hardware import known_device
from npuir.diagnostics import (
    Diagnostic,
    DiagnosticEngine,
    DiagnosticError,
    Kind,
    SourceLocation,
    kinds,
)
from npuir.dialects import npu, validation
from npuir.dialects.npu import dtype_name
from npuir.frontends import aten_fused, aten_models
from npuir.frontends.pt2 import STATE_ATTR, Pt2Archive, read_pt2
from npuir.frontends.pt2_graph import Graph as Pt2Graph
from npuir.frontends.pt2_graph import Node as Pt2Node
from npuir.frontends.pt2_graph import Pt2GraphError, graph_of
from npuir.frontends.torchair import (
    CompilerConfig,
    Graph,
    Tensor,
    TorchairError,
    npugraph_ex_ops,
    ops,
    scope_keys,
)
from npuir.frontends.torchair.errors import fail, refused
from npuir.frontends.torchair.graph import argument_name, detached, element_type, tensor_type
from npuir.frontends.torchair.inference import GEARS_ATTR
from npuir.frontends.torchair.scope import stream_limit

TORCH_IMPORT_WARNING = Kind(
    "torch.import-warning",
    "aten op '{aten_op}' has no npu op: {count} op(s) imported as npu.opaque (engine vector, "
    "costed from its tensor sizes; no numeric kernel)",
)
"""An aten op the torch importer could not keep as an npu op; arguments: `aten_op`,
`count` (how many of the model's ops)."""
TORCH_UNMAPPED_FORM = Kind(
    "torch.unmapped-form",
    "aten op '{aten_op}' is mapped, but not in this form ({reason}): {count} op(s) imported "
    "as npu.opaque (engine vector, costed from its tensor sizes; no numeric kernel)",
)
"""An aten op whose npu mapping does not take these arguments (a slice of a dynamic tensor);
arguments: `aten_op`, `reason` (the first op's), `count`."""
PT2_UNREADABLE_PROGRAM = Kind(
    "pt2.unreadable-program", "the archive's program cannot be read: {reason}"
)
"""A `.pt2` whose serialized program the torch-free reader cannot follow."""
PT2_GEARS_DROPPED = Kind(
    "pt2.gears-dropped",
    "the sample inputs were given gears with set_dim_gears before torch.export, which "
    "keeps a geared dim only as a dynamic one ({dims}); the archive's program has no "
    "gears and npuir never loads the sample inputs (a pickle), so the dims are imported as "
    "'?' without gears: import the ExportedProgram itself (import_exported_program reads "
    "its example inputs' gears), or give npuir-run / npuir-advise each gear with --shape",
)
"""A `.pt2` whose sample inputs carry `set_dim_gears` marks that its program lost; argument:
`dims` (the dynamic dims of its user inputs)."""
UNBALANCED_SCOPE = Kind("torch.unbalanced-scope", "air::scope_enter without a scope_exit")
"""An `air::scope_enter` without its `scope_exit`."""
UNSUPPORTED_NODE = Kind("torch.unsupported-node", "cannot import '{node}' ({target}): {reason}")
"""An FX node the importer cannot map; arguments: `node`, `target`, `reason`."""

SYM_DIMS = "torch.sym_dims"
STATE = STATE_ATTR
"""Argument attribute: the symbol of each dim ("" for a static one)."""

DIM_RANGES = "torch.dim_ranges"
"""Function attribute: each symbol's `torch.export.Dim` range, `array<i64: lo, hi>`."""

CALL_SITES = "torch.call_sites"
"""Module attribute: the model's lines that call code whose ops are located elsewhere
(`call_sites`), as `"file:line"` strings; `npuir-advise` never wraps them in a scope."""

if TYPE_CHECKING:
    import torch

_TORCHAIR_DIR = str(Path(scope_keys.__file__).resolve().parent)
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
_F32_EPS = 2.0**-23
"""`torch.finfo(torch.float32).eps`: rms_norm's default epsilon."""


@cache
def _torch_dir() -> str:
    """Where torch is installed (found without importing it): its frames are not the
    model's."""
    spec = importlib.util.find_spec("torch")
    origin = spec.origin if spec is not None else None
    return str(Path(origin).resolve().parent) if origin else "\0"


def _target_name(target: Any) -> str:
    """An FX node's target as the handler table names it: `aten.add.Tensor` (an op
    overload, or a `.pt2` node's target), `_operator.getitem` (a Python function)."""
    if isinstance(target, str):
        return target
    if callable(target) and not hasattr(target, "_schema"):
        return f"{getattr(target, '__module__', '')}.{getattr(target, '__name__', target)}"
    return str(target)


def _is_node(value: Any) -> bool:
    if isinstance(value, Pt2Node):
        return True
    import sys

    fx = sys.modules.get("torch.fx")
    return fx is not None and isinstance(value, fx.Node)


def _is_tensor(value: Any) -> bool:
    """A tensor value (`meta["val"]`): a torch tensor, or a `.pt2` tensor's metadata."""
    return hasattr(value, "shape") and hasattr(value, "dtype")


class UnsupportedOp(Exception):
    """An FX node the importer has no npu op for."""


_INSTALLED = frozenset({"site-packages", "dist-packages"})
_LIBRARIES = frozenset({"torch", "npuir"})


def library_frame(path: str) -> bool:
    """Whether a stack-trace frame at `path` is torch's (or npuir.torchair's) code rather
    than the model's: under this environment's torch or npuir.torchair, or under an
    installed `torch` / `npuir` package of any environment.  An archive keeps the paths of
    the environment that exported it, which need not be this one (another venv or
    machine, or a reader without torch at all)."""
    if path.startswith(_torch_dir()) or path.startswith(_TORCHAIR_DIR):
        return True
    parts = re.split(r"[\\/]", path)
    return any(parts[i] in _INSTALLED and parts[i + 1] in _LIBRARIES for i in range(len(parts) - 1))


def _user_frames(node: torch.fx.Node) -> list[tuple[str, int]]:
    """The frames of the node's stack trace outside torch (and npuir.torchair), outermost
    first: the model's lines."""
    trace = node.meta.get("stack_trace")
    if not trace or not isinstance(trace, str):
        return []
    return [(f, int(n)) for f, n in _FRAME.findall(trace) if not library_frame(f)]


def _user_line(node: torch.fx.Node) -> tuple[str, int] | None:
    """The innermost frame of the node's stack trace outside torch: the model's line."""
    frames = _user_frames(node)
    return frames[-1] if frames else None


def node_location(node: Any) -> SourceLocation | None:
    """Where the model wrote an FX node: its stack trace's innermost frame outside torch."""
    where = _user_line(node)
    return SourceLocation(where[0], where[1], 0) if where else None


def call_sites(graph: torch.fx.Graph) -> set[tuple[str, int]]:
    """The model's lines that call code whose ops are located elsewhere (every frame of a
    node's stack trace outside torch but the innermost): a `with` there covers the
    callee's ops too."""
    return {site for node in graph.nodes for site in _user_frames(node)[:-1]}


def _unsupported(node: Any, where: tuple[str, int] | None, reason: str) -> TorchairError:
    """The error for a node the importer cannot turn into an npu op, at the model's line."""
    loc = SourceLocation(where[0], where[1], 0) if where else None
    return TorchairError(
        Diagnostic.of(
            "error", UNSUPPORTED_NODE, loc, node=node.name, target=str(node.target), reason=reason
        )
    )


class _DynamicSize:
    """A size known only at run time (`aten.sym_size.int` of a `?` dim)."""

    def __repr__(self) -> str:
        return "?"


_DYNAMIC = _DynamicSize()


_SYMBOLIC_SCALARS = frozenset({"SymInt", "SymFloat", "SymBool", "SymSize"})
"""Types of a scalar whose value is known only at run time (torch's, a `.pt2`'s)."""


def _constant(value: Any) -> bool:
    """A Python value torch fixed at export: bool, int, float, str, None or a list of them
    (a list may hold symbolic sizes)."""
    if value is None or isinstance(value, bool | int | float | str):
        return True
    if isinstance(value, list | tuple):
        return all(_constant(v) or type(v).__name__ in _SYMBOLIC_SCALARS for v in value)
    return False


def _dynamic_sizes(value: Any) -> Any:
    """A constant as the handlers take it: a symbolic size in a list is a `?` size."""
    if isinstance(value, list | tuple):
        return type(value)(_DYNAMIC if type(v).__name__ in _SYMBOLIC_SCALARS else v for v in value)
    return value


def dtype_supported(dtype: Any) -> bool:
    """Whether npuir has an element type for a torch dtype (complex32 and float8 it has not)."""
    return _dtype_refusal(dtype) is None


def _dtype_refusal(dtype: Any) -> str | None:
    """None for a dtype npuir takes, else the element types it does take (the builder's
    list, from its refusal)."""
    try:
        element_type(dtype)
    except TorchairError as exc:
        return str(exc.diagnostic.args.get("choices", ""))
    return None


def _unsupported_dtypes(node: Any) -> list[str]:
    """The dtypes npuir cannot take among a node's tensor results and tensor operands."""
    values: list[Any] = []

    def collect(value: Any) -> None:
        if _is_node(value):
            collect(value.meta.get("val"))
        elif _is_tensor(value):
            values.append(value)
        elif isinstance(value, list | tuple):
            for v in value:
                collect(v)

    collect(node.meta.get("val"))
    collect(list(node.args))
    collect(list(node.kwargs.values()))
    return sorted(
        {str(v.dtype).removeprefix("torch.") for v in values if not dtype_supported(v.dtype)}
    )


def _static(x: Tensor, what: str) -> None:
    """npu.slice needs every size of the sliced tensor (the builder refuses a `?`)."""
    if any(d is None for d in x.shape):
        raise UnsupportedOp(f"{what} of a tensor with dynamic dims")


class _Importer:
    """One walk over an exported graph, building into one `Graph`."""

    def __init__(
        self,
        fx_graph: torch.fx.Graph,
        range_constraints: Mapping[Any, Any],
        name: str,
        target: str,
        strict: bool,
        config: CompilerConfig | None = None,
        gears: Mapping[int, Mapping[int, Sequence[int]]] | None = None,
        decompositions: Mapping[Any, Callable[..., Any]] | None = None,
        state: Mapping[str, str] | None = None,
        eager: dict[str, str] | None = None,
    ) -> None:
        self.fx_graph = fx_graph
        self.eager = eager
        """When given, the walk classifies instead of refusing: every op npuir cannot take
        (no npu op, a form its mapping refuses, a dtype without an element type) is put
        here by node name, with the reason, and stands in as an `npu.opaque`."""
        self.state = dict(state or {})
        self.decompositions = dict(decompositions or {})
        self.range_constraints = range_constraints
        self.strict = strict
        self.gears = dict(gears or {})
        self.opaque: dict[str, list[SourceLocation | None]] = {}
        self.unmapped_forms: dict[str, str] = {}  # op kind -> why its handler refused it
        self.warnings: list[Diagnostic] = []
        with detached():
            self.graph = Graph(name, target, config)
        self.inputs = 0  # tensor placeholders seen (function arguments made)
        self.env: dict[torch.fx.Node, Any] = {}
        self.scopes: list[int] = []  # scopes each open scope_enter opened
        self.node: torch.fx.Node | None = None

    # -- values ---------------------------------------------------------

    def arg(self, value: Any) -> Any:
        """An FX argument with nodes replaced by what they built."""
        if _is_node(value):
            return self.env[value]
        if isinstance(value, list | tuple):
            return type(value)(self.arg(v) for v in value)
        return value

    def tensor(self, value: Any, like: Tensor) -> Tensor:
        """`value` as a tensor: a scalar becomes an `npu.constant` of `like`'s dtype."""
        if isinstance(value, Tensor):
            return value
        if isinstance(value, bool | int | float):
            if not math.isfinite(value):
                raise UnsupportedOp(f"the scalar {value} is not a finite number")
            return self.graph.constant(value, like.dtype)
        raise UnsupportedOp(f"operand {value!r} is neither a tensor nor a number")

    def traced_dtype(self) -> Any | None:
        """The dtype torch traced for the node being built (None when it has no tensor)."""
        val: Any = self.node.meta.get("val") if self.node is not None else None
        return val.dtype if _is_tensor(val) else None

    def binary(self, fn: Callable[[Tensor, Tensor], Tensor]) -> Callable[..., Tensor]:
        def build(a: Any, b: Any, *rest: Any, **kwargs: Any) -> Tensor:
            if rest or kwargs.get("alpha", 1) != 1:
                raise UnsupportedOp("alpha != 1")
            # Torch promotes mixed operands (f64 + f32, a bool tensor times 3, an int
            # divided) to the result's dtype before computing; npu ops take one element
            # type, so the operands are cast to it first.
            promoted = self.traced_dtype()
            if promoted is not None and dtype_supported(promoted):
                a = self.cast(a, promoted) if isinstance(a, Tensor) else a
                b = self.cast(b, promoted) if isinstance(b, Tensor) else b
            if not isinstance(a, Tensor):
                return fn(self.tensor(a, b), b)
            return fn(a, self.tensor(b, a))

        return build

    # -- placeholders ---------------------------------------------------

    def placeholder(self, node: torch.fx.Node) -> Any:
        val: Any = node.meta.get("val")
        if type(val).__name__ in _SYMBOLIC_SCALARS:
            return None  # a symbolic size (dynamo's, or a `Dim` int): the tensors carry it
        if _constant(val):
            # A value torch fixed at export (`use_cache=False`, an int or float argument,
            # a static size dynamo passes): no function argument; an op taking it as an
            # operand makes an `npu.constant`, one needing a Python value reads it as is.
            return _dynamic_sizes(val)
        if _is_tensor(val) and not dtype_supported(val.dtype):
            if self.eager is not None:
                return self.stand_in(node)  # its consumers run eagerly (their dtype check)
            raise UnsupportedOp(
                f"input '{node.name}' has dtype {val.dtype}, which npuir cannot take (it takes "
                f"{_dtype_refusal(val.dtype)}); cast it before the graph, or compile with "
                "torch.compile(backend=npuir.torchair.get_npu_backend()), which runs the ops "
                "on it eagerly"
            )
        if not _is_tensor(val):
            raise UnsupportedOp(
                f"input '{node.name}' is a {type(val).__name__}, which npuir cannot take (it "
                "takes tensors, symbolic ints and constants: bool, int, float, str, None and "
                "lists of them); pass it as a tensor, or fix its value before exporting"
            )
        shape: list[int | None] = []
        syms: list[str] = []
        for d in val.shape:
            if isinstance(d, int):
                shape.append(int(d))
                syms.append("")
            else:  # a symbolic size (torch's SymInt, a .pt2's symbol)
                shape.append(None)
                syms.append(str(d))
        attrs: dict[str, Attribute] = {}
        if any(syms):
            attrs[SYM_DIMS] = ArrayAttr([StringAttr(s) for s in syms])
        if node.name in self.state:
            attrs[STATE] = StringAttr(self.state[node.name])
        tensor = self.graph.input(shape, val.dtype, node.name, attrs)
        gears = self.gears.get(self.inputs)
        self.inputs += 1
        if gears:
            self.graph.set_gears(tensor, {d: list(g) for d, g in gears.items()})
        return tensor

    def dim_ranges(self) -> None:
        ranges = {}
        for sym, vr in self.range_constraints.items():
            try:
                top = int(vr.upper)
            except (TypeError, OverflowError, ValueError, AttributeError):
                top = -1  # unbounded (torch's int_oo; sympy's int() of it fails in many ways)
            ranges[str(sym)] = DenseArrayBase.from_list(i64, [int(vr.lower), top])
        if ranges:
            self.graph.attributes[DIM_RANGES] = DictionaryAttr(ranges)

    # -- scopes ---------------------------------------------------------

    def scope_enter(self, keys: Sequence[str], values: Sequence[str], *_: Any) -> None:
        attrs = dict(zip(keys, values))
        if scope_keys.ERROR in attrs:
            # a mistake the trace carried (see torchair.scope), with its rule's kind
            kind = kinds().get(attrs.get(scope_keys.ERROR_KIND, ""))
            args = {
                k[len(scope_keys.ERROR_ARG) :]: v
                for k, v in attrs.items()
                if k.startswith(scope_keys.ERROR_ARG)
            }
            if kind is not None and kind.fields <= args.keys():
                raise fail(kind, **args)
            raise fail(attrs[scope_keys.ERROR])  # no kind this process knows: the text alone
        if scope_keys.STREAM_LIMIT in attrs:  # set_stream_limit / reset_stream_limit
            stream_limit(self.graph, attrs)
            self.scopes.append(0)
            return
        opened = 0
        try:
            if scope_keys.STREAM_LABEL in attrs:
                tag = validation.stream_tag(attrs[scope_keys.STREAM_LABEL])
                priority = validation.stream_priority(
                    _scope_number(attrs.get(scope_keys.STREAM_PRIORITY, "0"))
                )
                self.graph.open_scope(tag=tag, priority=priority)
                opened += 1
            if scope_keys.AICORE_NUM in attrs or scope_keys.VECTORCORE_NUM in attrs:
                hw = known_device(self.graph.target)
                counts = tuple(
                    validation.core_count(
                        key,
                        _scope_number(attrs[key]),
                        engine=engine,
                        most=None if hw is None else hw.cores(engine),
                        device="" if hw is None else hw.name,
                    )
                    if key in attrs
                    else None
                    for key, engine in (
                        (scope_keys.AICORE_NUM, "cube"),
                        (scope_keys.VECTORCORE_NUM, "vector"),
                    )
                )
                self.graph.open_scope(counts=(counts[0], counts[1]))
                opened += 1
        except validation.ValidationError as exc:
            raise refused(exc) from None
        self.scopes.append(opened)

    def scope_exit(self, *args: Any) -> None:
        if not self.scopes:
            raise UnsupportedOp("air::scope_exit without a scope_enter")
        for _level in range(self.scopes.pop()):
            self.graph.close_scope()

    # -- the walk -------------------------------------------------------

    def run(self) -> ModuleOp:
        with detached(), self.graph:
            return self._run()

    def _run(self) -> ModuleOp:
        handlers = self.handlers()
        for node in self.fx_graph.nodes:
            self.node = node
            where = _user_line(node)
            location = self.graph.source(where[0], where[1], 0, node.name) if where else None
            try:
                if location is not None:
                    with location:
                        self.visit(node, handlers)
                else:
                    self.visit(node, handlers)
            except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
                if not isinstance(node, Pt2Node):
                    raise  # torch checked the graph: a bug of the importer's
                # A `.pt2` node whose arguments are not what its operator takes.
                reason = f"its arguments are not what the operator takes ({type(exc).__name__})"
                raise _unsupported(node, where, reason) from None
            except UnsupportedOp as exc:
                raise _unsupported(node, where, str(exc)) from None
        if self.scopes:
            raise TorchairError(Diagnostic.of("error", UNBALANCED_SCOPE))
        for kind, places in self.opaque.items():
            form = self.unmapped_forms.get(kind)
            self.warnings.append(
                Diagnostic.of(
                    "warning", TORCH_IMPORT_WARNING, places[0], aten_op=kind, count=len(places)
                )
                if form is None
                else Diagnostic.of(
                    "warning",
                    TORCH_UNMAPPED_FORM,
                    places[0],
                    aten_op=kind,
                    reason=form,
                    count=len(places),
                )
            )
        self.dim_ranges()
        return self.graph.module

    def visit(self, node: torch.fx.Node, handlers: dict[str, Callable[..., Any]]) -> None:
        if node.op == "placeholder":
            self.env[node] = self.placeholder(node)
        elif node.op == "output":
            outs = node.args[0]
            results = [r for r in self.arg(outs if isinstance(outs, list | tuple) else [outs])]
            results = [r for r in results if isinstance(r, Tensor)]
            self.graph.output(*results)
        elif node.op == "call_function":
            handler = handlers.get(_target_name(node.target))
            bad = _unsupported_dtypes(node)
            if bad and self.eager is not None:
                self.eager[node.name] = "dtype " + ", ".join(bad)
                self.env[node] = self.stand_in(node)
            elif bad:
                raise UnsupportedOp(
                    f"it computes on {', '.join(bad)}, which npuir has no element type for "
                    f"(it takes {_dtype_refusal(bad[0])}); torch.compile with "
                    "npuir.torchair.get_npu_backend() runs such ops eagerly"
                )
            elif node.target in self.decompositions:
                self.env[node] = self.decompose(node, handlers)
            elif handler is None:
                self.env[node] = self.opaque_op(node)
            elif self.strict or not _target_name(node.target).startswith(aten_fused.OPERATORS):
                self.env[node] = handler(*self.arg(node.args), **self.arg(node.kwargs))
            else:
                try:
                    self.env[node] = handler(*self.arg(node.args), **self.arg(node.kwargs))
                except UnsupportedOp as exc:
                    if self.eager is not None:
                        self.eager[node.name] = str(exc)
                        self.env[node] = self.stand_in(node)
                        return
                    # A form of a mapped op the converter does not map (a dynamic slice, a
                    # pow by 1.5): like an op without a mapping, an `npu.opaque` costed from
                    # its tensor sizes, named once per op kind with the reason.
                    self.unmapped_forms.setdefault(str(node.target), str(exc))
                    self.env[node] = self.opaque_op(node)
        else:
            raise UnsupportedOp(f"FX '{node.op}' nodes are not supported")

    def handlers(self) -> dict[str, Callable[..., Any]]:
        """By target name (`_target_name`): an op overload and a `.pt2` node name it alike."""
        identity: Callable[..., Any] = lambda x, *_, **__: x  # noqa: E731
        table: dict[str, Callable[..., Any]] = {
            "air.scope_enter.default": self.scope_enter,
            "air.scope_exit.default": self.scope_exit,
            "air.wait_tensor.default": self.wait_tensor,
            "aten.add.Tensor": self.binary(ops.add),
            "aten.add.Scalar": self.binary(ops.add),
            "aten.sub.Tensor": self.binary(ops.sub),
            "aten.sub.Scalar": self.binary(ops.sub),
            "aten.rsub.Scalar": lambda a, b, *r: self.binary(ops.sub)(b, a),
            "aten.mul.Tensor": self.binary(ops.mul),
            "aten.mul.Scalar": self.binary(ops.mul),
            "aten.div.Tensor": self.binary(ops.div),
            "aten.div.Scalar": self.binary(ops.div),
            "aten.maximum.default": ops.maximum,
            "aten.neg.default": ops.neg,
            "aten.exp.default": ops.exp,
            "aten.sqrt.default": ops.sqrt,
            "aten.rsqrt.default": ops.rsqrt,
            "aten.relu.default": ops.relu,
            "aten.gelu.default": lambda x, approximate="none": ops.gelu(x, approximate),
            "aten.silu.default": ops.silu,
            "aten.sigmoid.default": ops.sigmoid,
            "aten.pow.Tensor_Scalar": self.pow,
            "aten.mm.default": ops.mm,
            "aten.bmm.default": ops.bmm,
            "aten.matmul.default": ops.matmul,
            "aten.linear.default": ops.linear,
            "aten.addmm.default": self.addmm,
            "aten.softmax.int": lambda x, dim, dtype=None: ops.softmax(self.cast(x, dtype), dim),
            "aten._softmax.default": lambda x, dim, half_to_float: ops.softmax(x, dim),
            "aten.rms_norm.default": self.rms_norm,
            "aten.sum.dim_IntList": self.sum,
            "aten.sum.default": lambda x, dtype=None: self.sum(x, None, False, dtype),
            "aten.mean.dim": self.mean,
            "aten.amax.default": lambda x, dim=(), keepdim=False: ops.amax(x, dim, keepdim),
            "aten.t.default": lambda x: ops.transpose(x, 0, 1),
            "aten.transpose.int": ops.transpose,
            "aten.permute.default": ops.permute,
            "aten.view.default": self.view,
            "aten.reshape.default": self.view,
            "aten._unsafe_view.default": self.view,
            "aten.unsqueeze.default": self.unsqueeze,
            "aten.squeeze.dim": self.squeeze,
            "aten.cat.default": lambda xs, dim=0: ops.cat(xs, dim),
            "aten.slice.Tensor": self.slice,
            "aten.narrow.default": self.narrow,
            "aten.select.int": self.select,
            "aten.chunk.default": self.chunk,
            "aten.split.Tensor": self.split,
            "aten.index_select.default": ops.index_select,
            "aten.embedding.default": lambda w, ids, *r: ops.embedding(ids, w),
            "aten.topk.default": lambda x, k, dim=-1, largest=True, sorted=True: self.topk(
                x, k, dim, largest
            ),
            "aten.nonzero.default": ops.nonzero,
            "aten._to_copy.default": lambda x, dtype=None, **_: self.cast(x, dtype),
            "aten.to.dtype": lambda x, dtype, *r, **k: self.cast(x, dtype),
            "aten.type_as.default": lambda x, other: self.cast(x, other.dtype),
            # `.to()` leaves a metadata assertion in the graph; it computes nothing.
            "aten._assert_tensor_metadata.default": lambda *args, **kwargs: None,
            "aten.clone.default": identity,
            "aten.contiguous.default": identity,
            "aten.alias.default": identity,
            "aten.detach.default": identity,
            "aten.expand.default": self.expand,
            "_operator.getitem": lambda seq, i: seq[i],
            # A dynamic size read from a tensor (`x.shape[0]` under dynamic shapes): it
            # only feeds shape arguments, where it is a `?` dim of the result.
            "aten.sym_size.int": lambda x, dim: (
                x.shape[dim] if x.shape[dim] is not None else _DYNAMIC
            ),
        }
        table.update(importlib.import_module("npuir.frontends.aten_core").handlers(self))
        table.update(aten_fused.handlers(self, UnsupportedOp))
        table.update(aten_models.handlers(self))  # transformers' forms (aten_models.py)
        table.update(
            npugraph_ex_ops.handlers(lambda: self.graph, self.scope_enter, self.scope_exit)
        )
        return importlib.import_module("npuir.frontends.aten_core").complex_guarded(self, table)

    def opaque_op(self, node: torch.fx.Node) -> Tensor | list[Tensor]:
        """`npu.opaque` for an ATen op with no npu op: its tensor operands in, its results out."""
        kind = str(node.target)
        if self.eager is not None:
            self.eager[node.name] = "no npu op maps it"
            return self.stand_in(node)
        if self.strict:
            raise UnsupportedOp("no npu op maps it, and a strict import refuses npu.opaque")
        val = node.meta.get("val")
        outs = list(val) if isinstance(val, list | tuple) else [val]
        vals: list[Any] = [v for v in outs if _is_tensor(v)]
        if not vals or len(vals) != len(outs):
            raise UnsupportedOp("no npu op maps it, and its result is not a tensor")
        operands: list[Tensor] = []

        def collect(value: Any) -> None:
            if isinstance(value, Tensor):
                operands.append(value)
            elif isinstance(value, list | tuple):
                for v in value:
                    collect(v)

        collect(self.arg(node.args))
        collect(list(self.arg(node.kwargs).values()))
        types = [
            tensor_type([d if isinstance(d, int) else None for d in v.shape], v.dtype) for v in vals
        ]
        op = self.graph.add_op(
            npu.OpaqueOp,
            [self.graph.value_of(t, kind) for t in operands],
            {npu.GE_TYPE: StringAttr(kind), npu.ENGINE_ATTR: StringAttr(npu.Engine.VECTOR.value)},
            types,
        )
        where = _user_line(node)
        self.opaque.setdefault(kind, []).append(
            SourceLocation(where[0], where[1], 0) if where else None
        )
        results = [Tensor(self.graph, r) for r in op.results]
        return results if isinstance(val, list | tuple) else results[0]

    def stand_in(self, node: Any) -> Any:
        """An operand-less `npu.opaque` of the node's result shapes (f32 for a dtype npuir has
        no element type for): what the classifying walk (`eager`) gives an op that runs
        eagerly, so the ops after it are classified too.  A result that is not a tensor
        stands in as a dynamic size."""
        val = node.meta.get("val")
        outs = list(val) if isinstance(val, list | tuple) else [val]
        if not outs or not all(_is_tensor(v) for v in outs):
            return _DYNAMIC if not isinstance(val, list | tuple) else [_DYNAMIC for _ in outs]
        types = [
            tensor_type(
                [d if isinstance(d, int) else None for d in v.shape],
                v.dtype if dtype_supported(v.dtype) else "f32",
            )
            for v in outs
        ]
        op = self.graph.add_op(
            npu.OpaqueOp,
            [],
            {npu.GE_TYPE: StringAttr(str(node.target)), npu.ENGINE_ATTR: StringAttr("vector")},
            types,
        )
        results = [Tensor(self.graph, r) for r in op.results]
        return results if isinstance(val, list | tuple) else results[0]

    # -- aten ops that take more than one npu op or a check -------------

    def decompose(self, node: torch.fx.Node, handlers: dict[str, Callable[..., Any]]) -> Any:
        """A user decomposition (`get_npu_backend(custom_decompositions=...)`): traced to
        ATen on meta tensors of the node's operand shapes, each ATen op imported in place."""
        import torch
        from torch.fx.experimental.proxy_tensor import make_fx

        operands: list[torch.fx.Node] = []

        def to_meta(value: Any) -> Any:
            if isinstance(value, torch.fx.Node):
                val = value.meta.get("val")
                if not isinstance(val, torch.Tensor) or not all(
                    isinstance(d, int) for d in val.shape
                ):
                    raise UnsupportedOp("a decomposition needs tensor operands of static shape")
                operands.append(value)
                return torch.empty(val.shape, dtype=val.dtype, device="meta")
            if isinstance(value, list | tuple):
                return type(value)(to_meta(v) for v in value)
            return value

        args, kwargs = to_meta(node.args), to_meta(node.kwargs)
        metas = [m for m in _flatten_tensors((args, kwargs))]

        def call(*tensors: torch.Tensor) -> Any:
            it = iter(tensors)

            def put(value: Any) -> Any:
                if isinstance(value, torch.Tensor):
                    return next(it)
                if isinstance(value, list | tuple):
                    return type(value)(put(v) for v in value)
                return value

            return self.decompositions[node.target](*put(args), **put(kwargs))

        try:
            traced = make_fx(call)(*metas)
        except Exception as exc:  # the user's decomposition failed: say so, at the node
            raise UnsupportedOp(f"the custom decomposition failed: {exc}") from None
        inputs = iter(operands)
        result: Any = None
        for sub in traced.graph.nodes:
            if sub.op == "placeholder":
                self.env[sub] = self.env[next(inputs)]
            elif sub.op == "output":
                result = self.arg(sub.args[0])
            else:
                # the handlers read the node they import (a view's traced shape)
                outer, self.node = self.node, sub
                try:
                    self.visit(sub, handlers)
                finally:
                    self.node = outer
        if (
            isinstance(result, list | tuple)
            and len(result) == 1
            and not isinstance(node.meta.get("val"), list | tuple)
        ):
            return result[0]
        return result

    def wait_tensor(self, tensor: Any, dependency: Any) -> Tensor:
        if not isinstance(tensor, Tensor) or not isinstance(dependency, Tensor):
            raise UnsupportedOp("npu_wait_tensor(self, dependency) takes two tensors")
        return self.graph.wait_tensor(tensor, dependency)

    def cast(self, x: Tensor, dtype: Any) -> Tensor:
        if dtype is None or dtype_name(element_type(dtype)) == x.dtype:
            return x
        return ops.to(x, dtype)

    def pow(self, x: Tensor, exponent: Any) -> Tensor:
        if exponent == 2:
            return ops.mul(x, x)
        if exponent == 0.5:
            return ops.sqrt(x)
        if exponent == -0.5:
            return ops.rsqrt(x)
        raise UnsupportedOp(f"pow with exponent {exponent} (only 2, 0.5 and -0.5)")

    def addmm(self, bias: Tensor, a: Tensor, b: Tensor, beta: Any = 1, alpha: Any = 1) -> Tensor:
        if beta != 1 or alpha != 1:
            raise UnsupportedOp("addmm with beta or alpha != 1")
        return ops.add(ops.mm(a, b), bias)

    def rms_norm(
        self, x: Tensor, shape: Sequence[int], weight: Tensor | None = None, eps: Any = None
    ) -> Tensor:
        if weight is None or len(shape) != 1:
            raise UnsupportedOp("rms_norm needs a weight and one normalised dim")
        epsilon = float(eps) if eps is not None else _F32_EPS
        return ops.rms_norm(x, weight, epsilon)

    def sum(self, x: Tensor, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
        # Torch sums bool and integer tensors in int64 (its traced dtype): summing in int8
        # and casting after would wrap.
        return ops.sum(
            self.cast(x, dtype if dtype is not None else self.traced_dtype()), dim, keepdim
        )

    def mean(self, x: Tensor, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
        x = self.cast(x, dtype)
        shape = x.shape
        dims = range(len(shape)) if not dim else [d % len(shape) for d in dim]
        count = 1
        for d in dims:
            if shape[d] is None:
                raise UnsupportedOp("mean over a dynamic dim")
            count *= shape[d]
        return ops.div(ops.sum(x, dim, keepdim), self.tensor(count, x))

    def reshape(self, x: Tensor, shape: Sequence[Any]) -> Tensor:
        return ops.reshape(x, [d if isinstance(d, int) else None for d in shape])

    def view(self, x: Tensor, shape: Sequence[Any]) -> Tensor:
        """A reshape/view node: its result's static dims from the node's traced shape, so a
        `reshape(s0, -1)` of a `?x2x3` tensor is `?x6`, not two unknowns."""
        traced: Any = self.node.meta.get("val") if self.node is not None else None
        if _is_tensor(traced) and len(traced.shape) == len(shape):
            shape = [
                d if isinstance(d, int) and d >= 0 else (t if isinstance(t, int) else None)
                for d, t in zip(shape, traced.shape)
            ]
        return self.reshape(x, shape)

    def unsqueeze(self, x: Tensor, dim: int) -> Tensor:
        shape = list(x.shape)
        shape.insert(dim % (len(shape) + 1), 1)
        return self.reshape(x, shape)

    def squeeze(self, x: Tensor, dim: int) -> Tensor:
        shape = list(x.shape)
        d = dim % len(shape)
        if shape[d] != 1:
            return x
        return self.reshape(x, shape[:d] + shape[d + 1 :])

    def slice(
        self, x: Tensor, dim: int = 0, start: Any = None, end: Any = None, step: int = 1
    ) -> Tensor:
        size = x.shape[dim]
        whole = end is None or end >= 2**62 or (size is not None and end >= size)
        if whole and (start or 0) == 0 and step == 1:
            return x  # `x[:, :]`: torch keeps these no-op slices in the graph
        _static(x, "slice")
        return ops.slice(x, dim, start, end if end is None or end < 2**62 else None, step)

    def narrow(self, x: Tensor, dim: int, start: int, length: int) -> Tensor:
        _static(x, "narrow")
        return ops.narrow(x, dim, start, length)

    def select(self, x: Tensor, dim: int, index: int) -> Tensor:
        _static(x, "select")
        picked = ops.slice(x, dim, index, index + 1 if index != -1 else None)
        shape = list(picked.shape)
        del shape[dim % len(shape)]
        return self.reshape(picked, shape)

    def chunk(self, x: Tensor, chunks: int, dim: int = 0) -> list[Tensor]:
        size = x.shape[dim]
        if size is None:
            raise UnsupportedOp("chunk of a dynamic dim")
        step = -(-size // chunks)
        return self.split(x, step, dim)

    def split(self, x: Tensor, split_size: int, dim: int = 0) -> list[Tensor]:
        _static(x, "split")
        size = x.shape[dim]
        if size is None or not isinstance(split_size, int):
            raise UnsupportedOp("split of a dynamic dim or with a list of sizes")
        return [ops.slice(x, dim, s, min(s + split_size, size)) for s in range(0, size, split_size)]

    def topk(self, x: Tensor, k: int, dim: int, largest: bool) -> tuple[Tensor, Tensor]:
        if not largest:
            raise UnsupportedOp("topk with largest=False")
        return ops.topk(x, k, dim)

    def expand(self, x: Tensor, size: Sequence[Any], *_: Any) -> Tensor:
        """`x.expand(size)`: new leading dims of 1 by a reshape, then each dim of size 1
        that grows to `n` as `n` copies concatenated along it (what the expand's consumer
        reads; torch's view is materialised by the reshape or copy that follows it)."""
        extra = len(size) - len(x.shape)
        if extra < 0:
            raise UnsupportedOp("expand to fewer dims than the tensor has")
        if extra:
            x = self.reshape(x, [1] * extra + list(x.shape))
        for dim, (want, have) in enumerate(zip(size, x.shape)):
            if not isinstance(want, int) or want == -1 or want == have:
                if have == 1 and not isinstance(want, int):
                    raise UnsupportedOp("expand of a dim of size 1 to a dynamic size")
                continue
            if have != 1:
                raise UnsupportedOp(f"expand of dim {dim} from {have} to {want}")
            # Zero copies is an empty slice (a concat of none has no operand to type it).
            x = ops.slice(x, dim, 0, 0) if want == 0 else ops.cat([x] * want, dim)
        return x


def import_exported_program(
    ep: torch.export.ExportedProgram,
    *,
    target: str = "910b2",
    name: str = "forward",
    strict: bool = False,
    diagnostics: DiagnosticEngine | None = None,
    config: CompilerConfig | None = None,
    gears: Mapping[int, Mapping[int, Sequence[int]]] | None = None,
    decompositions: Mapping[Any, Callable[..., Any]] | None = None,
) -> ModuleOp:
    """The module of one `ExportedProgram`: one function `name` (see the module docstring).

    A mistake in the program (shapes that do not infer, an op the importer
    cannot represent, with `strict` any op without an npu op) raises a
    `DiagnosticError` located at the model's source line.  Warnings (one per
    ATen op kind imported as `npu.opaque`) go to `diagnostics`, or through
    Python's `warnings` when none is given.
    """
    from torch.export.graph_signature import InputKind

    # Parameters, buffers and lifted constants: their values are the program's own.
    state = {
        spec.arg.name: spec.target
        for spec in ep.graph_signature.input_specs
        if spec.kind is not InputKind.USER_INPUT
        and isinstance(getattr(spec.arg, "name", None), str)
        and isinstance(spec.target, str)
    }
    if gears is None:
        gears = _example_gears(ep)
    try:
        return import_fx_graph(
            ep.graph,
            state=state,
            range_constraints=ep.range_constraints,
            target=target,
            name=name,
            strict=strict,
            diagnostics=diagnostics,
            config=config,
            gears=gears,
            decompositions=decompositions,
        )
    except TorchairError as exc:
        raise DiagnosticError(exc.diagnostic) from None


def _example_gears(ep: torch.export.ExportedProgram) -> dict[int, dict[int, list[int]]]:
    """The gears `set_dim_gears` put on the tensors `ep` was exported with, keyed as
    `import_fx_graph` takes them (by tensor placeholder): `torch.export` keeps a geared dim
    only as a dynamic one, and its example inputs keep the tensors themselves."""
    import torch
    from torch.export.graph_signature import InputKind, TensorArgument

    from npuir.frontends.torchair.inference import gears_of

    if ep.example_inputs is None:
        return {}
    leaves = iter(torch.utils._pytree.tree_leaves(ep.example_inputs))
    gears: dict[int, dict[int, list[int]]] = {}
    tensors = 0
    for spec in ep.graph_signature.input_specs:
        leaf = next(leaves, None) if spec.kind is InputKind.USER_INPUT else None
        if not isinstance(spec.arg, TensorArgument):
            continue
        found = gears_of(leaf) if isinstance(leaf, torch.Tensor) else None
        if found:
            gears[tensors] = found
        tensors += 1
    return gears


def import_fx_graph(
    graph: torch.fx.Graph,
    *,
    range_constraints: Mapping[Any, Any] | None = None,
    target: str = "910b2",
    name: str = "forward",
    strict: bool = False,
    config: CompilerConfig | None = None,
    gears: Mapping[int, Mapping[int, Sequence[int]]] | None = None,
    diagnostics: DiagnosticEngine | None = None,
    decompositions: Mapping[Any, Callable[..., Any]] | None = None,
    state: Mapping[str, str] | None = None,
    eager: dict[str, str] | None = None,
) -> ModuleOp:
    """The module of one ATen-level FX graph: the converter both routes share.

    `torch.export` gives it the exported program's graph (`import_exported_program`);
    `torch.compile` with `npuir.torchair.get_npu_backend` gives it the forward graph AOT
    autograd traced.  Size placeholders (dynamo's `s0` inputs) are skipped: the
    tensors' shapes carry them.  `gears` puts `set_dim_gears` on the n-th tensor input;
    `config` gives the graph its gear policy and global core limit.  A mistake raises
    a `TorchairError` located at the model's line.  `decompositions` maps ATen ops to
    functions that compute them from other ATen ops (a decomposition table): such an
    op is traced through its function and imported op by op.  `state` maps the
    placeholders that are the program's state (by name) to their state entries
    (`torch.state` on their arguments).  `eager`, when given, makes the walk classify
    rather than refuse: each op npuir cannot take (no npu op, a form its mapping refuses,
    a dtype npuir has no element type for) is added to it (node name to reason) and no
    warning is emitted; the module is then only good for that classification (the backend
    splits the graph at those ops, `npuir.driver.torch_backend`).
    """
    from npuir.frontends import torch_scope

    torch_scope.register()
    return _import_graph(
        graph,
        range_constraints=range_constraints,
        target=target,
        name=name,
        strict=strict,
        config=config,
        gears=gears,
        diagnostics=diagnostics,
        decompositions=decompositions,
        state=state,
        eager=eager,
    )


def _import_graph(
    graph: torch.fx.Graph | Pt2Graph,
    *,
    range_constraints: Mapping[Any, Any] | None,
    target: str,
    name: str,
    strict: bool,
    config: CompilerConfig | None = None,
    gears: Mapping[int, Mapping[int, Sequence[int]]] | None = None,
    diagnostics: DiagnosticEngine | None = None,
    decompositions: Mapping[Any, Callable[..., Any]] | None = None,
    state: Mapping[str, str] | None = None,
    eager: dict[str, str] | None = None,
) -> ModuleOp:
    """`import_fx_graph` of an FX graph or a `.pt2`'s (which needs no torch)."""
    importer = _Importer(
        graph,
        range_constraints or {},
        name,
        target,
        strict,
        config,
        gears,
        decompositions,
        state,
        eager,
    )
    module = importer.run()
    calls = sorted(call_sites(graph))
    if calls:
        module.attributes[CALL_SITES] = ArrayAttr([StringAttr(f"{f}:{n}") for f, n in calls])
    if diagnostics is not None:
        diagnostics.emitted.extend(importer.warnings)
    else:
        for warning in importer.warnings:
            pywarnings.warn(warning.render(), stacklevel=3)
    return module


def _flatten_tensors(value: Any) -> list[torch.Tensor]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _flatten_tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _flatten_tensors(v)]
    return []


def _scope_number(text: str) -> object:
    """A scope value as TorchAir writes it (a string): the number it spells, else the text."""
    for parse in (int, float):
        try:
            return parse(text)
        except ValueError:
            pass
    return text


def example_inputs(ep: torch.export.ExportedProgram, *args: Any) -> dict[str, Any]:
    """The arrays `npuir-run --inputs` takes for `ep`'s module on the user inputs `args`.

    Keyed by the function arguments' names, which are the program's placeholder names
    (`p_gate_weight` for a parameter, `b_slot_token` for a buffer, `x` for a user
    input; a trailing `_0` printed `.0`, as `argument_name` says): parameters, buffers and lifted constants from the program's own state, the
    user inputs from `args` in the order `forward` takes them.  `np.savez(path,
    **example_inputs(ep, x))` writes a file that `npuir-run --inputs` reads, so a run
    computes on exactly what eager PyTorch computes on.
    """
    from torch.export.graph_signature import InputKind

    user = _flatten_tensors(args)
    arrays: dict[str, Any] = {}
    taken = 0
    for spec in ep.graph_signature.input_specs:
        name = getattr(spec.arg, "name", None)
        if name is None:
            continue
        if spec.kind is InputKind.USER_INPUT:
            if taken >= len(user):
                raise ValueError(f"input '{name}' has no tensor among the {len(user)} given")
            value = user[taken]
            taken += 1
        elif spec.target in ep.state_dict:
            value = ep.state_dict[spec.target]
        else:
            value = ep.constants[spec.target]
        arrays[argument_name(name)] = _numpy(value)
    return arrays


def _numpy(t: torch.Tensor) -> Any:
    """`t` as a numpy array of the same element type (bfloat16 as `ml_dtypes.bfloat16`)."""
    import torch

    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


_STATE_SPECS = {
    "parameter": "parameter_name",
    "buffer": "buffer_name",
    "tensor_constant": "tensor_constant_name",
}
"""The serialized input specs that are the program's state, and the field naming the entry."""


def _pt2_state(program: Mapping[str, Any]) -> dict[str, str]:
    """A `.pt2` program's state placeholders (parameters, buffers, lifted constants) by name,
    to their entries: what `import_exported_program` reads from `ep.graph_signature`."""
    signature = program.get("graph_module", {}).get("signature", {})
    state: dict[str, str] = {}
    for spec in signature.get("input_specs", []) if isinstance(signature, dict) else []:
        for kind, field_name in _STATE_SPECS.items():
            entry = spec.get(kind) if isinstance(spec, dict) else None
            if isinstance(entry, dict):
                name = (
                    entry.get("arg", {}).get("name") if isinstance(entry.get("arg"), dict) else None
                )
                target = entry.get(field_name)
                if isinstance(name, str) and isinstance(target, str):
                    state[name] = target
    return state


def import_pt2(
    path: str | Path | Pt2Archive,
    *,
    target: str = "910b2",
    strict: bool = False,
    diagnostics: DiagnosticEngine | None = None,
) -> ModuleOp:
    """The module of a `torch.export.save` archive, without torch.

    The archive is read as data by `npuir.frontends.pt2` (never unpickled, never
    evaluated; `torch.export.load` would do both) and its program walked as
    `npuir.frontends.pt2_graph` reads it: the same importer, on the nodes torch's
    deserializer would make, so the module is the one `import_exported_program` makes of
    the program torch loads (`exported_program`).  A refused archive, or a program the
    importer cannot read, raises a located `DiagnosticError`."""
    archive = path if isinstance(path, Pt2Archive) else read_pt2(path)
    where = archive.locate()
    try:
        graph = graph_of(archive.program)
    except (Pt2GraphError, KeyError, TypeError, AttributeError, ValueError) as exc:
        reason = str(exc) if isinstance(exc, Pt2GraphError) else f"{type(exc).__name__}: {exc}"
        if isinstance(exc, Pt2GraphError):
            where = archive.locate(exc.needle)
        raise DiagnosticError(
            Diagnostic.of("error", PT2_UNREADABLE_PROGRAM, where, reason=reason[:400])
        ) from None
    state = _pt2_state(archive.program)
    try:
        module = _import_graph(
            graph,
            range_constraints=graph.range_constraints,
            target=target,
            name="forward",
            strict=strict,
            diagnostics=diagnostics,
            state=state,
        )
    except TorchairError as exc:
        diagnostic = exc.diagnostic
        if diagnostic.location is None:
            # A node without the model's line (an input, a node without a stack trace):
            # located at its name in the program entry.
            node = diagnostic.args.get("node")
            needle = json.dumps(node) if isinstance(node, str) else None
            diagnostic = dataclasses.replace(diagnostic, location=archive.locate(needle))
        raise DiagnosticError(diagnostic) from None
    if GEARS_ATTR.encode() in archive.sample_inputs:
        warning = _gears_dropped(archive, graph, state)
        if diagnostics is not None:
            diagnostics.emitted.append(warning)
        else:
            pywarnings.warn(warning.render(), stacklevel=2)
    return module


def _gears_dropped(archive: Pt2Archive, graph: Pt2Graph, state: Mapping[str, str]) -> Diagnostic:
    """The warning that the gears on an archive's sample inputs did not survive the export,
    located at the sample-inputs entry."""
    dims = [
        f"{node.name} dim {d} ({size})"
        for node in graph.nodes
        if node.op == "placeholder" and node.name not in state and _is_tensor(node.meta["val"])
        for d, size in enumerate(node.meta["val"].shape)
        if not isinstance(size, int)
    ]
    root = archive.entry.removesuffix(f"models/{archive.model}.json")
    if not archive.entry:
        root = f"{archive.path}/"
    where = SourceLocation(f"{root}data/sample_inputs/{archive.model}.pt", 1, 0)
    return Diagnostic.of(
        "warning", PT2_GEARS_DROPPED, where, dims=", ".join(dims) or "none left dynamic"
    )
