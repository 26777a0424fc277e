"""Stage three of the GE importer: GE / TorchAir graph dumps into npuir IR.

Reads the three shapes in which a GE graph is dumped as text:

- TorchAir `graph_dump.type = "txt"`: a GE GraphDef, top-level `name:` and
  `op { name type input attr input_desc output_desc }` blocks;
- GE `DUMP_GE_GRAPH` files (`ge_proto_NNNNN_<stage>.txt`): a ModelDef holding
  one or more `graph { name op { ... } }` (pick one with `graph=`);
- TorchAir `graph_dump.type = "pbtxt"`: TensorBoard-style `node { name op
  input attr }` blocks whose attribute values are the GE text of the attribute
  (tensor descriptors under keys `[i]x` / `[o]y`) in one escaped string, parsed
  again with the same grammar.

Stage one (`protobuf_text`) gives located messages, stage two (`ge_graph`) the
graphs' nodes and edges; this module builds IR with xDSL ops directly.  Each GE op becomes what `ge_ops.toml` says (data, not
code): `Data` / `PlaceHolder` / `Const` become function arguments (constants
marked `ge.const`), `NetOutput` / `End` the `func.return`; an `Identity` with a
control input (`"dep:-1"` or `"^dep"`, TorchAir's `npu_wait_tensor`) becomes
`stream.wait_tensor`, and a control input on any other op waits its first
operand on the producer.  Program order is the order the dump lists its ops
(kept wherever the edges allow: the earliest-listed ready op comes first;
TorchAir lists them in the model's FX order), so an `Identity` wait means what
`npu_wait_tensor` means on every route (docs/ir.md): every op listed after
it that reads the Identity's data input -- directly, as TorchAir's later
statements do, or through the Identity's output -- is ordered after the control
producer, wherever its stream label puts it.  `_user_stream_label` / `_user_stream_priority` become
`stream.switch` scopes and `_op_aicore_num` / `_op_vectorcore_num`
`coreset.limit` scopes, one per run of consecutive ops with the same values.
Types come from `output_desc` (the origin shape when the stored layout is a
fractal one).  Every op carries the location of its `op {` / `node {` block
and its GE name in `npu.op_name`.  A type the table does not know, or an op
whose attributes its npu op cannot express, becomes `npu.opaque` with a
warning; the `ImportSummary` accounts for every op.
"""

from __future__ import annotations

import heapq
import itertools
import re
import tomllib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, TypeVar

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FileLineColLoc,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Signedness,
    StringAttr,
    TensorType,
    UnitAttr,
    bf16,
    f16,
    f32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from npuir.context import NpuirContext
from npuir.diagnostics import Diagnostic, DiagnosticError, Kind, SourceLocation
from npuir.dialects import coreset, npu, stream, validation
from npuir.frontends.ge_graph import (
    I64_MAX,
    I64_MIN,
    OUT_OF_I64,
    Edge,
    Graph,
    Node,
    read_graphs,
)
from npuir.frontends.ge_graph import attr_map as _attr_map
from npuir.frontends.ge_graph import fail as _fail
from npuir.frontends.ge_graph import loc as _loc
from npuir.frontends.protobuf_text import Message
from npuir.gc_pause import without_collector
from npuir.verifier import verify

# What the importer refuses (`ge.invalid-dump.<what>`, as in `npuir.frontends.ge_graph`).
NO_DTYPE = Kind("ge.invalid-dump.no-dtype", "output {index} of '{node}' has no dtype")
"""An output descriptor without a dtype; arguments: `index`, `node`."""
UNKNOWN_DTYPE = Kind(
    "ge.invalid-dump.unknown-dtype",
    "unsupported element type {dtype} in output {index} of '{node}' (npuir knows {known})",
)
"""A dtype npuir has no element type for; arguments: `dtype`, `index`, `node`, `known`."""
UNKNOWN_RANK = Kind(
    "ge.invalid-dump.unknown-rank",
    "output {index} of '{node}' has dim {dim}; npuir needs a known rank",
)
"""A dim of -2, GE's mark of an unknown rank; arguments: `index`, `node`, `dim`."""
DIM_RANGE = Kind(
    "ge.invalid-dump.dim-out-of-range",
    "output {index} of '{node}' has dim {dim}, outside -1 (dynamic) .. {limit}",
)
"""A dim that is not an integer in -1 .. 2**63-1 (other than -2, an unknown rank);
arguments: `index`, `node`, `dim` (shortened), `limit`."""
UNNAMED_OP = Kind("ge.invalid-dump.unnamed-op", "a '{type}' op has no name")
"""An op without a name; argument: `type` ("untyped" when it has none either)."""
UNTYPED_OP = Kind("ge.invalid-dump.untyped-op", "op '{node}' has no type")
"""An op without a type; argument: `node`."""
DUPLICATE_NAME = Kind(
    "ge.invalid-dump.duplicate-name", "a second op is named '{node}' (the first is at {first})"
)
"""Two ops with one name; arguments: `node`, `first` (the first one's location)."""
UNKNOWN_SOURCE = Kind(
    "ge.invalid-dump.unknown-source", "{edge} '{source}' of '{node}' names no op in the graph"
)
"""An input naming no op; arguments: `edge` ("input" or "control input"), `source`, `node`."""
NO_SUCH_OUTPUT = Kind(
    "ge.invalid-dump.no-such-output",
    "input '{source}:{index}' of '{node}': '{source}' has {outputs} output descriptor(s)",
)
"""An input naming an output its op does not describe; arguments: `source`, `index`,
`node`, `outputs`."""
CYCLE = Kind("ge.invalid-dump.cycle", "op '{node}' is on a cycle of inputs")
"""The inputs form a cycle; argument: `node` (the first op on it in file order)."""
NO_DESCRIPTOR = Kind("ge.invalid-dump.no-descriptor", "'{node}' has no output descriptor #{index}")
"""A value read from an output the op does not describe; arguments: `node`, `index`."""
STRICT_UNKNOWN = Kind(
    "ge.invalid-dump.unknown-type", "GE type '{type}' is not in the op table; --strict refuses it"
)
"""Under `--strict`, the one GE type not in the op table; argument: `type`."""
STRICT_UNKNOWNS = Kind(
    "ge.invalid-dump.unknown-types",
    "GE type '{type}' is not in the op table (unknown types: {types}); --strict refuses it",
)
"""Under `--strict`, several GE types not in the op table; arguments: `type` (the first
met), `types` (all, sorted, comma-separated)."""
NO_VALUE = Kind(
    "ge.invalid-dump.no-value",
    "input '{source}:{index}' of '{node}' is not produced ('{source_type}' gives no value there)",
)
"""An input reading an output its op gives no value at; arguments: `source`, `index`,
`node`, `source_type`."""
BAD_CORE_COUNT = Kind(
    "ge.invalid-dump.core-count",
    "'{node}' asks for {cube} cube / {vector} vector cores; counts must be >= 1",
)
"""A core-count attribute below 1; arguments: `node`, `cube`, `vector` (None when unset)."""
UNREPRESENTABLE = Kind("ge.invalid-dump.unrepresentable", "cannot import '{node}': {reason}")
"""A value no IR attribute can hold (e.g. a priority beyond i64); arguments: `node`,
`reason` (the IR's verifier's message)."""
IDENTITY_WITHOUT_INPUT = Kind(
    "ge.invalid-dump.identity-without-input", "Identity '{node}' has no data input"
)
"""An Identity op with nothing to forward; argument: `node`."""
NO_SUCH_GRAPH = Kind(
    "ge.invalid-dump.no-such-graph", "no graph named '{graph}' in the dump (it has {names})"
)
"""`--graph` names no graph of the dump; arguments: `graph`, `names`."""

# What the importer could not keep (`ge.import-warning.<what>`).
SEVERAL_GRAPHS = Kind(
    "ge.import-warning.several-graphs",
    "the dump holds {count} graphs; imported '{graph}' (others: {others}; pick one with --graph)",
)
"""A dump with several graphs and no `--graph`; arguments: `count`, `graph` (the one
imported), `others`."""
ARGUMENT_CONTROL = Kind(
    "ge.import-warning.argument-control",
    "control input '{source}' of '{node}' is dropped: a function argument is ready before any "
    "op runs",
)
"""A control input on a graph input; arguments: `source`, `node`."""
RETURN_CONTROL = Kind(
    "ge.import-warning.return-control",
    "control input '{source}' of output '{node}' orders nothing in a function return",
)
"""A control input on a NetOutput; arguments: `source`, `node`."""
NO_OUTPUT = Kind(
    "ge.import-warning.no-output",
    "graph '{graph}' has no NetOutput or End: the function returns nothing",
)
"""A graph without outputs; argument: `graph`."""
UNKNOWN_TYPE = Kind(
    "ge.import-warning.unknown-type",
    "GE type '{type}' is not in the op table: {count} op(s) imported as npu.opaque "
    "(engine {engine})",
)
"""A GE type not in the op table; arguments: `type`, `count`, `engine`."""
FALLBACK_WARNING = Kind(
    "ge.import-warning.fallback",
    "{count} '{type}' op(s) imported as npu.opaque because their attributes do not fit "
    "{target} (first: '{node}': {reason})",
)
"""Ops of a known type whose attributes the npu op cannot take; arguments: `count`, `type`,
`target` (the npu op), `node`, `reason` (the first one's)."""
NO_VALUE_TO_WAIT = Kind(
    "ge.import-warning.control-without-value",
    "control input '{source}' of '{node}' is dropped: '{source}' produces no value to wait on",
)
"""A control input from an op without a value; arguments: `source`, `node`."""
NOTHING_TO_WAIT = Kind(
    "ge.import-warning.control-without-input",
    "control input '{source}' of '{node}' is dropped: '{node}' has no data input to wait",
)
"""A control input on an op without data inputs; arguments: `source`, `node`."""

CONST_ATTR = "ge.const"
"""Argument attribute marking a function argument that was a GE constant."""

STREAM_LABEL = "_user_stream_label"
STREAM_PRIORITY = "_user_stream_priority"
AICORE_NUM = "_op_aicore_num"
VECTORCORE_NUM = "_op_vectorcore_num"
_ENGINE_HINT_ATTRS = ("_ge_attr_op_kernel_lib_name", "_kernel_lib_name", "_coretype")

# What the summary says a GE type became, besides npu op names.
ARGUMENT = "function argument"
CONSTANT = "function argument (ge.const)"
RETURN = "func.return"
WAIT = "stream.wait_tensor"
FORWARDED = "forwarded (no op)"
OPAQUE = "npu.opaque"
FALLBACK = "npu.opaque (fallback)"


# --------------------------------------------------------------------------
# The op table
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """How one GE type is imported (a `[types.T]` entry of ge_ops.toml)."""

    op: str | None = None
    builder: str | None = None
    inputs: int | None = None
    outputs: int = 1
    unit: dict[str, str] = field(default_factory=dict[str, str])
    int: dict[str, str] = field(default_factory=dict[str, str])
    float: dict[str, str] = field(default_factory=dict[str, str])
    string: dict[str, str] = field(default_factory=dict[str, str])
    array: dict[str, str] = field(default_factory=dict[str, str])


@dataclass(frozen=True)
class OpTable:
    """ge_ops.toml, read once."""

    rules: dict[str, Rule]
    arguments: frozenset[str]
    constants: frozenset[str]
    outputs: frozenset[str]
    dtypes: dict[str, str]
    dtype_numbers: dict[int, str]
    engine_hints: tuple[tuple[str, npu.Engine], ...]
    fractal_prefixes: tuple[str, ...]


@cache
def _core_count_rule(key: str) -> Callable[[object], Any]:
    """The core-count rule for the GE attribute `key`."""
    return lambda value: validation.core_count(key, value)


def _number_or_text(text: str) -> float | str:
    """`text` as a float when it spells one (a fractional count), else as it is."""
    try:
        return float(text)
    except ValueError:
        return text


@cache
def op_table() -> OpTable:
    """The GE op table shipped with npuir (`frontends/ge_ops.toml`), read once per
    process (it was read again for every tensor descriptor: 40% of an import)."""
    with (Path(__file__).parent / "ge_ops.toml").open("rb") as f:
        data: dict[str, Any] = tomllib.load(f)
    roles = data["roles"]
    return OpTable(
        rules={name: Rule(**entry) for name, entry in data["types"].items()},
        arguments=frozenset(roles["arguments"]),
        constants=frozenset(roles["constants"]),
        outputs=frozenset(roles["outputs"]),
        dtypes={name: ty for name, (_, ty) in data["dtypes"].items()},
        dtype_numbers={num: ty for num, ty in data["dtypes"].values()},
        engine_hints=tuple((hint, npu.Engine(e)) for hint, e in data["engines"]["hints"]),
        fractal_prefixes=tuple(data["layouts"]["fractal_prefixes"]),
    )


_ELEMENT_TYPES: dict[str, Attribute] = {
    "f16": f16,
    "bf16": bf16,
    "f32": f32,
    "i1": IntegerType(1),
    "i8": IntegerType(8),
    "i16": IntegerType(16),
    "i32": IntegerType(32),
    "i64": IntegerType(64),
    "ui8": IntegerType(8, Signedness.UNSIGNED),
    "ui16": IntegerType(16, Signedness.UNSIGNED),
    "ui32": IntegerType(32, Signedness.UNSIGNED),
    "ui64": IntegerType(64, Signedness.UNSIGNED),
}


# --------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------


def _desc_attrs(desc: Message) -> dict[str, Message]:
    return _attr_map(desc)


@dataclass(frozen=True)
class TensorInfo:
    """An output's IR type and logical layout name (e.g. NCHW)."""

    type: TensorType[Attribute]
    format: str


def tensor_info(desc: Message, owner: Node, index: int) -> TensorInfo:
    """The IR type of one output descriptor; fractal layouts use origin_shape."""
    where = _loc(owner.filename, desc.line, desc.column)
    table = op_table()
    dtype = desc.get("dtype")
    if dtype is None:
        raise _fail(where, NO_DTYPE, index=index, node=owner.name)
    if isinstance(dtype, int):
        name = table.dtype_numbers.get(dtype)
    else:
        name = table.dtypes.get(str(dtype))
    if name is None:
        known = ", ".join(sorted(table.dtypes))
        at = desc.entries("dtype")[-1]
        raise _fail(
            _loc(owner.filename, at.line, at.column),
            UNKNOWN_DTYPE,
            dtype=dtype,
            index=index,
            node=owner.name,
            known=known,
        )
    layout = desc.get("layout")
    layout = layout if isinstance(layout, str) else "ND"
    attrs = _desc_attrs(desc)
    shape_msg = desc.get("shape")
    dims: list[Any] = shape_msg.all("dim") if isinstance(shape_msg, Message) else []
    fmt = layout
    if layout.startswith(table.fractal_prefixes):
        origin = attrs.get("origin_shape")
        origin_list = origin.get("list") if origin is not None else None
        if isinstance(origin_list, Message):
            dims = origin_list.all("i")
        origin_format = attrs.get("origin_format")
        if origin_format is not None and isinstance(origin_format.get("s"), str):
            fmt = origin_format.get("s")
    shape: list[int] = []
    for d in dims:
        if d == -2:
            raise _fail(where, UNKNOWN_RANK, index=index, node=owner.name, dim=d)
        if not isinstance(d, int) or not -1 <= d <= I64_MAX:
            shown = str(d) if len(str(d)) <= 40 else str(d)[:37] + "..."
            raise _fail(where, DIM_RANGE, index=index, node=owner.name, dim=shown, limit=I64_MAX)
        shape.append(npu.DYN if d == -1 else d)
    return TensorInfo(_tensor_type(name, tuple(shape)), fmt)


@lru_cache(maxsize=4096)
def _tensor_type(element: str, shape: tuple[int, ...]) -> TensorType[Attribute]:
    """The tensor type of `shape` and the element type named `element`, made once: a
    dump repeats a few types, and building one (with its checks) costs as much as the
    rest of a small op's import."""
    return TensorType(_ELEMENT_TYPES[element], list(shape))


# --------------------------------------------------------------------------
# The import summary
# --------------------------------------------------------------------------


@dataclass
class ImportSummary:
    """What every GE op became: ops per GE type, and per type what they became."""

    graph: str
    ops: int = 0
    by_type: dict[str, Counter[str]] = field(default_factory=dict[str, Counter[str]])

    def record(self, ge_type: str, became: str) -> None:
        self.by_type.setdefault(ge_type, Counter())[became] += 1

    def count(self, ge_type: str) -> int:
        return sum(self.by_type.get(ge_type, Counter()).values())

    def to_json(self) -> dict[str, Any]:
        return {
            "graph": self.graph,
            "ops": self.ops,
            "types": {
                t: {"count": sum(c.values()), "became": dict(sorted(c.items()))}
                for t, c in sorted(self.by_type.items())
            },
        }

    def render(self) -> str:
        lines = [f"imported graph '{self.graph}': {self.ops} GE ops"]
        width = max((len(t) for t in self.by_type), default=0)
        for t, c in sorted(self.by_type.items()):
            became = ", ".join(f"{n} {what}" if n > 1 else what for what, n in sorted(c.items()))
            lines.append(f"  {t:<{width}} {sum(c.values()):>5}  -> {became}")
        return "\n".join(lines) + "\n"


@dataclass
class ImportResult:
    module: ModuleOp
    summary: ImportSummary
    warnings: list[Diagnostic]


# --------------------------------------------------------------------------
# Builders: one GE op into npu ops
# --------------------------------------------------------------------------


class _Fallback(Exception):
    """The op's attributes do not fit its npu op: import it as npu.opaque instead."""


@dataclass
class _OpBuild:
    """What a builder sees: the node, its rule, operands and declared result types."""

    node: Node
    rule: Rule
    operands: list[SSAValue]
    types: list[TensorType[Attribute]]
    formats: list[str]
    emit: Callable[[Operation], Operation]
    retyped: dict[tuple[object, ...], tuple[list[Attribute], object]]
    """The importer's memo of the result types `make` builds ops with (and the types
    their key names by identity)."""
    signatures: dict[int, tuple[object, ...]]
    """The `retyped` key of each op `make` built, by the op's identity."""

    def op_class(self) -> type[npu.NpuOp]:
        assert self.rule.op is not None
        return _NPU_OPS[self.rule.op]

    def make(
        self,
        name: str | None = None,
        operands: Sequence[SSAValue] | None = None,
        types: Sequence[Attribute] | None = None,
        attrs: Mapping[str, Attribute] | None = None,
    ) -> Operation:
        cls = _NPU_OPS[name] if name is not None else self.op_class()
        args = list(self.operands if operands is None else operands)
        declared = list(self.types[: self.rule.outputs] if types is None else types)
        attributes = dict(attrs or {})
        # A dump may declare an output element type the op does not compute (a precision
        # change GE applies at a later stage): build the op as it computes, cast afterwards.
        # What the op computes depends on its class, operand types, declared types (reshape
        # reads them) and attributes only: worked out once per such signature.
        # Types by identity (hashing one by value walks its shape), kept alive by the memo so
        # that no other type takes the identity.
        arg_types = [v.type for v in args]
        key = (cls, *map(id, arg_types), None, *map(id, declared), None, *attributes.items())
        known = _memo_get(self.retyped, key)
        if known is not None:
            retyped = known[0]
        else:
            op = cls.create(operands=args, result_types=declared, attributes=attributes)
            inferred = op.infer_result_types(arg_types)
            retyped = [_with_element(d, i) for d, i in zip(declared, inferred)]
            _memo_put(self.retyped, key, (retyped, (arg_types, declared)))
            if retyped == declared:
                self.signatures[id(op)] = key
                return self.emit(op)
        op = cls.create(operands=args, result_types=retyped, attributes=attributes)
        # The key fixes the op's signature (its result types follow from it): what the
        # importer's verification memo looks up.
        self.signatures[id(op)] = key
        return self.emit(op)

    def translated_attrs(self) -> dict[str, Attribute]:
        out: dict[str, Attribute] = {}
        for ge, ir in self.rule.unit.items():
            if self.node.attr_bool(ge):
                out[ir] = UnitAttr()
        for ge, ir in self.rule.int.items():
            if (v := self.node.attr_int(ge)) is not None:
                out[ir] = IntegerAttr(v, i64)
        for ge, ir in self.rule.float.items():
            if (f := self.node.attr_float(ge)) is not None:
                out[ir] = FloatAttr(f, f32)
        for ge, ir in self.rule.string.items():
            if (s := self.node.attr_str(ge)) is not None:
                out[ir] = StringAttr(s)
        for ge, ir in self.rule.array.items():
            if (lst := self.node.attr_list(ge, "i")) is not None:
                out[ir] = DenseArrayBase.from_list(i64, lst)
        return out


_NPU_OPS: dict[str, type[npu.NpuOp]] = {op.name: op for op in npu.NPU_OPS}


def _with_element(declared: Attribute, inferred: Attribute) -> Attribute:
    """`declared` with the element type of `inferred`, when only the element types differ."""
    if (
        isinstance(declared, TensorType)
        and isinstance(inferred, TensorType)
        and declared.element_type != inferred.element_type
        and npu.compatible(TensorType(inferred.element_type, declared.get_shape()), inferred)
    ):
        return TensorType(inferred.element_type, declared.get_shape())
    return declared


_T = TypeVar("_T")


def _memo_get(memo: dict[tuple[object, ...], _T], key: tuple[object, ...]) -> _T | None:
    """`memo[key]`, None when absent or when `key` holds an unhashable attribute."""
    try:
        return memo.get(key)
    except TypeError:
        return None


def _memo_put(memo: dict[tuple[object, ...], _T], key: tuple[object, ...], value: _T) -> None:
    try:
        memo[key] = value
    except TypeError:
        pass  # an unhashable attribute: worked out every time


Builder = Callable[[_OpBuild], list[SSAValue]]


def _generic(b: _OpBuild) -> list[SSAValue]:
    return list(b.make(attrs=b.translated_attrs()).results)


def _array(values: Iterable[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


def _matmul(b: _OpBuild) -> list[SSAValue]:
    """MatMul with an optional third input, a bias added to the product."""
    main = b.make(operands=b.operands[:2], attrs=b.translated_attrs())
    if len(b.operands) < 3:
        return list(main.results)
    return list(b.make("npu.add", [main.results[0], b.operands[2]]).results)


def _softmax(b: _OpBuild) -> list[SSAValue]:
    axes = b.node.attr_list("axes", "i")
    attrs: dict[str, Attribute] = {}
    if axes:
        if len(axes) != 1:
            raise _Fallback(f"softmax over {len(axes)} axes")
        attrs["axis"] = IntegerAttr(axes[0], i64)
    return list(b.make(operands=b.operands[:1], attrs=attrs).results)


def _shape(ty: Attribute) -> tuple[int, ...]:
    return npu.shape_of(ty)


def _reduce(b: _OpBuild) -> list[SSAValue]:
    """Axes from the `axes` attribute, else from comparing input and output shapes."""
    keep = bool(b.node.attr_bool("keep_dims"))
    axes = b.node.attr_list("axes", "i")
    src, dst = _shape(b.operands[0].type), _shape(b.types[0])
    if axes is None:
        if keep:
            axes = [i for i, (s, d) in enumerate(zip(src, dst)) if s != d]
        elif len(dst) < len(src):
            axes, j = [], 0
            for i, s in enumerate(src):
                if j < len(dst) and dst[j] == s and len(src) - i > len(dst) - j - 1:
                    j += 1
                else:
                    axes.append(i)
        else:
            axes = []
        if not axes and src != dst:
            raise _Fallback("the reduced axes are not in the dump")
    attrs: dict[str, Attribute] = {"axes": _array(axes)}
    if keep:
        attrs["keepdims"] = UnitAttr()
    return list(b.make(operands=b.operands[:1], attrs=attrs).results)


def _transpose(b: _OpBuild) -> list[SSAValue]:
    """`perm` from the attribute, else the one permutation the shapes allow."""
    perm = b.node.attr_list("perm", "i")
    if perm is None:
        src, dst = _shape(b.operands[0].type), _shape(b.types[0])
        fits = (
            [
                p
                for p in itertools.permutations(range(len(src)))
                if all(dst[i] == src[p[i]] for i in range(len(src)))
            ]
            if len(src) <= 6
            else []
        )
        if len(fits) != 1:
            raise _Fallback("the permutation is not in the dump and the shapes do not fix it")
        perm = list(fits[0])
    return list(b.make(operands=b.operands[:1], attrs={"perm": _array(perm)}).results)


def _concat(b: _OpBuild) -> list[SSAValue]:
    """ConcatV2's last input is the axis (a constant); ConcatV2D has `concat_dim`."""
    axis = b.node.attr_int("concat_dim")
    tensors = b.operands if axis is not None else b.operands[:-1]
    if axis is None:
        first, out = _shape(tensors[0].type), _shape(b.types[0])
        diffs = [i for i, (s, d) in enumerate(zip(first, out)) if s != d]
        axis = diffs[0] if len(diffs) == 1 else 0
    return list(b.make(operands=tensors, attrs={"axis": IntegerAttr(axis, i64)}).results)


def _strided_slice(b: _OpBuild) -> list[SSAValue]:
    begin = b.node.attr_list("begin", "i")
    end = b.node.attr_list("end", "i")
    strides = b.node.attr_list("strides", "i")
    masks = [
        b.node.attr_int(m) or 0
        for m in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
    ]
    if begin is None or end is None or any(masks):
        raise _Fallback("begin/end come from tensors or masks are set")
    src = _shape(b.operands[0].type)
    strides = strides or [1] * len(begin)
    offsets = [x % d if x < 0 and d != npu.DYN else x for x, d in zip(begin, src)]
    stops = [min(e % d if e < 0 else e, d) if d != npu.DYN else e for e, d in zip(end, src)]
    sizes = [max(0, e - o) for o, e in zip(offsets, stops)]
    attrs = {"offsets": _array(offsets), "sizes": _array(sizes), "strides": _array(strides)}
    return list(b.make(operands=b.operands[:1], attrs=attrs).results)


def _gather(b: _OpBuild) -> list[SSAValue]:
    axis = b.node.attr_int("axis")
    attrs = {"axis": IntegerAttr(axis, i64)} if axis is not None else {}
    return list(b.make(operands=b.operands[:2], attrs=attrs).results)


def _topk(b: _OpBuild) -> list[SSAValue]:
    k = b.node.attr_int("k")
    if k is None:
        k = _shape(b.types[0])[-1]
    axis = b.node.attr_int("dim")
    attrs: dict[str, Attribute] = {"k": IntegerAttr(k, i64)}
    if axis is not None:
        attrs["axis"] = IntegerAttr(axis, i64)
    return list(b.make(operands=b.operands[:1], attrs=attrs).results)


def _collective(b: _OpBuild) -> list[SSAValue]:
    """Group size from `rank_size`, else from how the collective changes dim 0."""
    size = b.node.attr_int("rank_size")
    src, dst = _shape(b.operands[0].type), _shape(b.types[0])
    if size is None and src and dst and npu.DYN not in (src[0], dst[0]):
        if b.rule.op == "npu.all_gather" and src[0]:
            size = dst[0] // src[0]
        elif b.rule.op == "npu.reduce_scatter" and dst[0]:
            size = src[0] // dst[0]
    attrs: dict[str, Attribute] = {}
    if size is not None:
        attrs["group_size"] = IntegerAttr(size, i64)
    if (group := b.node.attr_str("group")) is not None:
        attrs["group"] = StringAttr(group)
    return list(b.make(operands=b.operands[:1], attrs=attrs).results)


def _hw(b: _OpBuild, values: list[int] | None, what: str, count: int = 2) -> list[int] | None:
    """The H and W entries of a 4-value NCHW attribute (or a 2-value one as is)."""
    if values is None:
        return None
    if len(values) == count:
        return values
    if len(values) == 4 and count == 2:
        return values[2:]
    raise _Fallback(f"'{what}' has {len(values)} values")


def _check_nchw(b: _OpBuild, *indices: int) -> None:
    for i in indices:
        if i < len(b.formats) and b.formats[i] not in ("NCHW", "ND"):
            raise _Fallback(f"operand {i} is in layout {b.formats[i]}; npu ops take NCHW")


def _conv2d(b: _OpBuild) -> list[SSAValue]:
    _check_nchw(b, 0, 1)
    attrs: dict[str, Attribute] = {}
    if (strides := _hw(b, b.node.attr_list("strides", "i"), "strides")) is not None:
        attrs["strides"] = _array(strides)
    if (pads := b.node.attr_list("pads", "i")) is not None:
        if len(pads) != 4:
            raise _Fallback(f"'pads' has {len(pads)} values")
        attrs["pads"] = _array(pads)
    if (dil := _hw(b, b.node.attr_list("dilations", "i"), "dilations")) is not None:
        attrs["dilations"] = _array(dil)
    if (groups := b.node.attr_int("groups")) is not None:
        attrs["groups"] = IntegerAttr(groups, i64)
    return list(b.make(operands=b.operands[:3], attrs=attrs).results)


def _fully_connection(b: _OpBuild) -> list[SSAValue]:
    """A 4-D FullyConnection is a convolution whose window is the whole image."""
    x, w = b.operands[0].type, b.operands[1].type
    assert isinstance(x, TensorType) and isinstance(w, TensorType)
    if x.get_num_dims() == 4 and w.get_num_dims() == 4:
        _check_nchw(b, 0, 1)
        return list(b.make(operands=b.operands[:3]).results)
    if w.get_num_dims() != 2 or x.get_num_dims() < 2 or b.node.attr_bool("transpose"):
        raise _Fallback(f"input of rank {x.get_num_dims()} and weights of rank {w.get_num_dims()}")
    # Weights [O, K] and the input flattened to [N, K]: a 1x1 convolution over [N, K, 1, 1]
    # (which also gives the cube's int8 -> i32 accumulation).
    (n, *_), (o, k) = _shape(x), _shape(w)
    x4 = b.make("npu.reshape", [b.operands[0]], [TensorType(x.element_type, [n, k, 1, 1])])
    w4 = b.make("npu.reshape", [b.operands[1]], [TensorType(w.element_type, [o, k, 1, 1])])
    out = b.types[0]
    conv = b.make(
        "npu.conv2d",
        [x4.results[0], w4.results[0], *b.operands[2:3]],
        [TensorType(out.element_type, [n, o, 1, 1])],
    )
    y = conv.results[0]
    if _shape(out) == (n, o, 1, 1):
        return [y]
    assert isinstance(y.type, TensorType)
    return list(b.make("npu.reshape", [y], [TensorType(y.type.element_type, _shape(out))]).results)


def _pooling(b: _OpBuild) -> list[SSAValue]:
    """Caffe-style Pooling: mode 0 max, 1 average; `ceil_mode` 0 rounds up (Caffe's rule).

    The ceiling rule is what the shared ResNet-50 dump shows: pool1 takes
    112x112 to 56x56 with a 3x3 window, stride 2, no padding, `ceil_mode: 0`.
    """
    _check_nchw(b, 0)
    mode = b.node.attr_int("mode") or 0
    if mode not in (0, 1):
        raise _Fallback(f"pooling mode {mode}")
    x = _shape(b.operands[0].type)
    if len(x) != 4:
        raise _Fallback(f"input of rank {len(x)}")
    if b.node.attr_bool("global_pooling"):
        window = [x[2], x[3]]
        strides, pads = [1, 1], [0, 0, 0, 0]
    else:
        window = _hw(b, b.node.attr_list("window", "i"), "window") or [1, 1]
        strides = _hw(b, b.node.attr_list("stride", "i"), "stride") or [1, 1]
        pads = b.node.attr_list("pad", "i") or [0, 0, 0, 0]
    attrs: dict[str, Attribute] = {
        "kind": StringAttr("max" if mode == 0 else "avg"),
        "window": _array(window),
        "strides": _array(strides),
        "pads": _array(pads),
    }
    if (b.node.attr_int("ceil_mode") or 0) == 0:
        attrs["ceil_mode"] = UnitAttr()
    return list(b.make(operands=b.operands[:1], attrs=attrs).results)


_ELTWISE_OPS = {0: "npu.mul", 1: "npu.add", 2: "npu.maximum"}


def _eltwise(b: _OpBuild) -> list[SSAValue]:
    """Caffe-style Eltwise (mode 0 product, 1 sum, 2 max) as a chain of binary ops."""
    mode = b.node.attr_int("mode")
    name = _ELTWISE_OPS.get(1 if mode is None else mode)
    coeff = b.node.attr_list("coeff", "f") or []
    if name is None:
        raise _Fallback(f"eltwise mode {mode}")
    if any(c != 1 for c in coeff):
        raise _Fallback("eltwise coefficients other than 1")
    if len(b.operands) < 2:
        raise _Fallback("eltwise of fewer than two inputs")
    acc = b.operands[0]
    for x in b.operands[1:]:
        acc = b.make(name, [acc, x], b.types[:1]).results[0]
    return [acc]


def _layout(b: _OpBuild) -> list[SSAValue]:
    src = b.node.attr_str("src_format") or (b.formats[0] if b.formats else "ND")
    dst = b.node.attr_str("dst_format") or "ND"
    attrs = {"src_format": StringAttr(src), "dst_format": StringAttr(dst)}
    return list(b.make(operands=b.operands[:1], attrs=attrs).results)


BUILDERS: dict[str, Builder] = {
    "matmul": _matmul,
    "softmax": _softmax,
    "reduce": _reduce,
    "transpose": _transpose,
    "concat": _concat,
    "strided_slice": _strided_slice,
    "gather": _gather,
    "topk": _topk,
    "collective": _collective,
    "conv2d": _conv2d,
    "fully_connection": _fully_connection,
    "pooling": _pooling,
    "eltwise": _eltwise,
    "layout": _layout,
}


# --------------------------------------------------------------------------
# The graph into a function
# --------------------------------------------------------------------------

_ScopeKey = tuple[str | None, int, int | None, int | None]


class _Importer:
    def __init__(self, graph: Graph, filename: str, strict: bool) -> None:
        self.graph = graph
        self.filename = filename
        self.strict = strict
        self.table = op_table()
        self.summary = ImportSummary(graph.name, len(graph.nodes))
        self.warnings: list[Diagnostic] = []
        self.by_name: dict[str, Node] = {}
        self.values: dict[tuple[str, int], SSAValue] = {}
        self.formats: dict[tuple[str, int], str] = {}
        self.infos: dict[tuple[str, int], TensorInfo] = {}
        self.types: dict[TensorType[Attribute], TensorType[Attribute]] = {}
        self.desc_infos: dict[int, tuple[object, TensorInfo]] = {}
        self.retyped: dict[tuple[object, ...], tuple[list[Attribute], object]] = {}
        self.verified: dict[tuple[object, ...], object] = {}
        self.signatures: dict[int, tuple[object, ...]] = {}
        self.verified_made: dict[tuple[object, ...], bool] = {}
        self.filename_attr = StringAttr(filename)
        self.columns: dict[int, IntAttr] = {}
        self.fallbacks: dict[str, list[tuple[Node, str]]] = defaultdict(list)

    # -- checks and ordering -------------------------------------------------

    def index_nodes(self) -> None:
        for node in self.graph.nodes:
            if not node.name:
                raise _fail(node.location, UNNAMED_OP, type=node.type or "untyped")
            if not node.type:
                raise _fail(node.location, UNTYPED_OP, node=node.name)
            if node.name in self.by_name:
                first = self.by_name[node.name].location
                raise _fail(node.location, DUPLICATE_NAME, node=node.name, first=str(first))
            self.by_name[node.name] = node
        for node in self.graph.nodes:
            for edge in [*node.inputs, *node.controls]:
                src = self.by_name.get(edge.source)
                if src is None:
                    kind = "control input" if edge.control else "input"
                    raise _fail(
                        edge.location, UNKNOWN_SOURCE, edge=kind, source=edge.source, node=node.name
                    )
                forwards = (
                    src.type in self.table.rules
                    and self.table.rules[src.type].builder == "identity"
                )
                if (
                    not edge.control
                    and edge.index >= len(src.outputs)
                    and not (forwards and edge.index == 0)
                ):
                    raise _fail(
                        edge.location,
                        NO_SUCH_OUTPUT,
                        source=edge.source,
                        index=edge.index,
                        node=node.name,
                        outputs=len(src.outputs),
                    )

    def topological(self) -> list[Node]:
        """Nodes in dependence order, file order among the ready ones."""
        indeg: dict[str, int] = {n.name: 0 for n in self.graph.nodes}
        users: dict[str, list[Node]] = defaultdict(list)
        for node in self.graph.nodes:
            for edge in [*node.inputs, *node.controls]:
                indeg[node.name] += 1
                users[edge.source].append(node)
        ready = [(n.order, n.name) for n in self.graph.nodes if indeg[n.name] == 0]
        heapq.heapify(ready)
        out: list[Node] = []
        while ready:
            _, name = heapq.heappop(ready)
            node = self.by_name[name]
            out.append(node)
            for user in users[name]:
                indeg[user.name] -= 1
                if indeg[user.name] == 0:
                    heapq.heappush(ready, (user.order, user.name))
        if len(out) != len(self.graph.nodes):
            stuck = min((n for n in self.graph.nodes if indeg[n.name] > 0), key=lambda n: n.order)
            raise _fail(stuck.location, CYCLE, node=stuck.name)
        return out

    def info(self, node: Node, index: int) -> TensorInfo:
        key = (node.name, index)
        if key not in self.infos:
            if index >= len(node.outputs):
                raise _fail(node.location, NO_DESCRIPTOR, node=node.name, index=index)
            desc = node.outputs[index]
            # A descriptor whose text repeats one read before gives the same type (an error
            # is worked out again, to be located at this one).
            same = desc.text_key()
            known = self.desc_infos.get(id(same)) if same is not None else None
            if known is not None:
                self.infos[key] = known[1]
                return known[1]
            info = tensor_info(desc, node, index)
            # One object per type: the verifier's and the printer's caches are keyed by
            # identity, and a dump repeats a few types over and over.
            shared = self.types.setdefault(info.type, info.type)
            if shared is not info.type:
                info = TensorInfo(shared, info.format)
            self.infos[key] = info
            if same is not None:
                self.desc_infos[id(same)] = (same, info)
        return self.infos[key]

    def warn(self, location: SourceLocation | None, kind: Kind, /, **args: Any) -> None:
        self.warnings.append(Diagnostic.of("warning", kind, location, **args))

    # -- scopes ----------------------------------------------------------------

    def scope_key(self, node: Node) -> _ScopeKey:
        """The scope an op's attributes put it in, each value checked by the rules every
        route applies (`npuir.dialects.validation`), located at the attribute."""
        label = self.checked(node, STREAM_LABEL, validation.stream_tag)
        priority = self.checked(node, STREAM_PRIORITY, validation.stream_priority)
        counts = [
            self.checked(node, key, _core_count_rule(key)) for key in (AICORE_NUM, VECTORCORE_NUM)
        ]
        return (label, priority or 0, counts[0], counts[1])

    @staticmethod
    def checked(node: Node, key: str, rule: Callable[[object], Any]) -> Any:
        """Attribute `key` of `node` through `rule` (None when absent); GE writes TorchAir's
        scope values as strings, so a whole number in a string is read as that number."""
        value = node.attr(key)
        if value is None:
            return None
        raw = value.get("s", value.get("i", value.get("f")))
        if key != STREAM_LABEL and isinstance(raw, str):
            text = raw.strip()
            raw = int(text) if re.fullmatch(r"-?\d+", text) else _number_or_text(text)
        where = _loc(node.filename, value.line, value.column)
        if isinstance(raw, int) and not I64_MIN <= raw <= I64_MAX:
            raise _fail(where, OUT_OF_I64, key=key, node=node.name, value=raw)
        try:
            return rule(raw)
        except validation.ValidationError as exc:
            raise DiagnosticError(
                Diagnostic(
                    "error", f"'{node.name}': {exc}", where, kind=exc.kind.code, args=exc.args_
                )
            ) from None

    # -- building ---------------------------------------------------------------

    def location(self, node: Node) -> FileLineColLoc:
        name = self.filename_attr
        if name.data != node.filename:
            name = StringAttr(node.filename)
        # Blocks open at a few columns: one IntAttr each.
        column = self.columns.get(node.column)
        if column is None:
            column = self.columns[node.column] = IntAttr(node.column)
        # Built as npuir's .mlir parser builds its locations: from parts verified already
        # (FileLineColLoc's checked constructor was a sixth of a 10^6-op import's build).
        loc = FileLineColLoc.__new__(FileLineColLoc)
        object.__setattr__(loc, "filename", name)
        object.__setattr__(loc, "line", IntAttr(node.line))
        object.__setattr__(loc, "column", column)
        return loc

    def run(self) -> ModuleOp:
        self.index_nodes()
        order = self.topological()
        args = [
            n for n in order if n.type in self.table.arguments or n.type in self.table.constants
        ]
        args.sort(key=lambda n: n.order)
        outputs = [n for n in self.graph.nodes if n.type in self.table.outputs]
        taken = {id(n) for n in args}  # by identity: comparing nodes compares every field
        body = [n for n in order if id(n) not in taken and n.type not in self.table.outputs]
        self.check_unknown(body)

        arg_types: list[Attribute] = []
        arg_attrs: list[DictionaryAttr] = []
        for n in args:
            info = self.info(n, 0)
            arg_types.append(info.type)
            attrs: dict[str, Attribute] = {npu.OP_NAME: StringAttr(n.name)}
            if n.type in self.table.constants:
                attrs[CONST_ATTR] = UnitAttr()
                self.summary.record(n.type, CONSTANT)
            else:
                self.summary.record(n.type, ARGUMENT)
            arg_attrs.append(DictionaryAttr(attrs))
        for n in args:
            for e in n.controls:
                self.warn(e.location, ARGUMENT_CONTROL, source=e.source, node=n.name)
        block = Block(arg_types=arg_types)
        for n, arg in zip(args, block.args):
            self.values[(n.name, 0)] = arg
            self.set_format((n.name, 0), self.info(n, 0).format)

        # Which GE values are used by which op (data and control), to yield across scopes:
        # the one user's name, or a list of them (a list per value of a 10^6-op dump cost
        # a hundred MB).
        users: dict[tuple[str, int], str | list[str]] = {}
        for n in self.graph.nodes:
            for e in [*n.inputs, *n.controls]:
                k = (e.source, 0 if e.control else e.index)
                known = users.get(k)
                if known is None:
                    users[k] = n.name
                elif isinstance(known, str):
                    users[k] = [known, n.name]
                else:
                    known.append(n.name)
        self.users = users

        groups: list[tuple[_ScopeKey, list[Node]]] = []
        for n in body:
            key = self.scope_key(n)
            if groups and groups[-1][0] == key:
                groups[-1][1].append(n)
            else:
                groups.append((key, [n]))
        for key, nodes in groups:
            self.build_group(block, key, nodes)

        returned: list[SSAValue] = []
        for out in outputs:
            for e in out.inputs:
                returned.append(self.value(e, out))
            self.summary.record(out.type, RETURN)
            for e in out.controls:
                self.warn(e.location, RETURN_CONTROL, source=e.source, node=out.name)
        if not outputs:
            self.warn(_loc(self.filename, 1, 1), NO_OUTPUT, graph=self.graph.name)
        ret = func.ReturnOp(*returned)
        if outputs:
            ret.location = self.location(outputs[0])
        block.add_op(ret)
        fn = func.FuncOp(
            self.graph.name,
            (arg_types, [v.type for v in returned]),
            Region(block),
            arg_attrs=ArrayAttr(arg_attrs),
        )
        fn.location = FileLineColLoc(StringAttr(self.filename), IntAttr(1), IntAttr(1))
        self.report_fallbacks()
        return ModuleOp([fn])

    def check_unknown(self, body: list[Node]) -> None:
        unknown: dict[str, list[Node]] = defaultdict(list)
        for n in body:
            if n.type not in self.table.rules:
                unknown[n.type].append(n)
        for t, nodes in unknown.items():
            engine = self.engine_of(nodes[0])
            if self.strict and len(unknown) == 1:
                raise _fail(nodes[0].location, STRICT_UNKNOWN, type=t)
            if self.strict:
                types = ", ".join(sorted(unknown))
                raise _fail(nodes[0].location, STRICT_UNKNOWNS, type=t, types=types)
            self.warn(
                nodes[0].location, UNKNOWN_TYPE, type=t, count=len(nodes), engine=engine.value
            )

    def report_fallbacks(self) -> None:
        for t, cases in self.fallbacks.items():
            node, reason = cases[0]
            self.warn(
                node.location,
                FALLBACK_WARNING,
                count=len(cases),
                type=t,
                target=self.table.rules[t].op or "the npu ops",
                node=node.name,
                reason=reason,
            )

    @staticmethod
    def kernel_of(node: Node) -> str | None:
        """The kernel kind GE's kernel library names (`npu.kernel`), for known op types too:
        an AI CPU library (`aicpu_ascend_kernel`, `aicpu_tf_kernel`, host CPU) runs the op
        on the AI CPU, where core limits do not act; a TBE or ATB library gives those kinds;
        anything else (AI Core's AscendC) is the default, None."""
        if not node.attrs:
            return None
        for key in _ENGINE_HINT_ATTRS[:2]:
            lib = (node.attr_str(key) or "").lower()
            if any(h in lib for h in ("aicpu", "host_cpu", "hostcpu")):
                return "aicpu"
            if "tbe" in lib:
                return "tbe"
            if "atb" in lib:
                return "atb"
        return None

    def engine_of(self, node: Node) -> npu.Engine:
        texts = [node.attr_str(a) or "" for a in _ENGINE_HINT_ATTRS] + [node.type]
        for text in texts:
            lowered = text.lower()
            for hint, engine in self.table.engine_hints:
                if hint in lowered:
                    return engine
        return npu.Engine.VECTOR

    def value(self, edge: Edge, user: Node) -> SSAValue:
        key = (edge.source, edge.index)
        if key not in self.values:
            src = self.by_name[edge.source]
            raise _fail(
                edge.location,
                NO_VALUE,
                source=edge.source,
                index=edge.index,
                node=user.name,
                source_type=src.type,
            )
        return self.values[key]

    def build_group(self, block: Block, key: _ScopeKey, nodes: list[Node]) -> None:
        label, priority, cube, vector = key
        limited = cube is not None or vector is not None
        if label is None and not limited:
            for n in nodes:
                self.build_node(n, block)
            return
        inner = Block()
        for n in nodes:
            self.build_node(n, inner)
        names = {n.name for n in nodes}
        escaping = [
            k
            for n in nodes
            for i in range(max(len(n.outputs), 1))
            if (k := (n.name, i)) in self.values and any(u not in names for u in self.users_of(k))
        ]
        escaping_values = [self.values[k] for k in escaping]
        types = [v.type for v in escaping_values]
        loc = self.location(nodes[0])
        scope: Operation
        if limited:
            if (cube is not None and cube < 1) or (vector is not None and vector < 1):
                raise _fail(
                    nodes[0].location,
                    BAD_CORE_COUNT,
                    node=nodes[0].name,
                    cube=cube,
                    vector=vector,
                )
            inner.add_op(coreset.YieldOp(*escaping_values))
            limit = coreset.LimitOp(cube, vector, Region(inner), types)
            limit.location = loc
            if label is None:
                block.add_op(limit)
                scope = limit
            else:
                outer = Block()
                outer.add_op(limit)
                outer.add_op(stream.YieldOp(*limit.results))
                scope = stream.SwitchOp(label, Region(outer), types, priority)
                scope.location = loc
                block.add_op(scope)
        else:
            inner.add_op(stream.YieldOp(*escaping_values))
            scope = stream.SwitchOp(label or "", Region(inner), types, priority)
            scope.location = loc
            block.add_op(scope)
        for k, result in zip(escaping, scope.results):
            self.values[k] = result

    def build_node(self, node: Node, block: Block) -> None:
        try:
            self._build_node(node, block)
        except VerifyException as exc:
            # Values no IR attribute can hold (e.g. a priority beyond i64) reach here.
            reason = str(exc).splitlines()[0]
            raise _fail(node.location, UNREPRESENTABLE, node=node.name, reason=reason) from None

    def _build_node(self, node: Node, block: Block) -> None:
        loc = self.location(node)
        name_attr = StringAttr(node.name)

        def emit(op: Operation) -> Operation:
            op.location = loc
            op.attributes[npu.OP_NAME] = name_attr
            block.add_op(op)
            return op

        operands = [self.value(e, node) for e in node.inputs]
        formats = [self.formats.get((e.source, e.index), "ND") for e in node.inputs]
        # Control inputs: wait the first operand on each producer (TorchAir's npu_wait_tensor).
        waited = False
        for c in node.controls:
            dep = self.values.get((c.source, 0))
            if dep is None:
                self.warn(c.location, NO_VALUE_TO_WAIT, source=c.source, node=node.name)
                continue
            if not operands:
                self.warn(c.location, NOTHING_TO_WAIT, source=c.source, node=node.name)
                continue
            operands[0] = emit(stream.WaitTensorOp(operands[0], dep)).results[0]
            waited = True

        rule = self.table.rules.get(node.type)
        if rule is not None and rule.builder == "identity":
            if not operands:
                raise _fail(node.location, IDENTITY_WITHOUT_INPUT, node=node.name)
            self.values[(node.name, 0)] = operands[0]
            self.set_format((node.name, 0), formats[0] if formats else "ND")
            self.summary.record(node.type, WAIT if waited else FORWARDED)
            return

        infos = [self.info(node, i) for i in range(len(node.outputs))]
        for i in range(len(infos)):
            del self.infos[(node.name, i)]  # asked for once more only for arguments
        types = [i.type for i in infos]
        results: list[SSAValue] | None = None
        if rule is not None:
            results = self.try_rule(node, rule, operands, types, formats, emit, waited)
        if results is None:
            op = emit(npu.OpaqueOp(node.type, self.engine_of(node), operands, types))
            results = list(op.results)
            became = OPAQUE if rule is None else FALLBACK
            self.summary.record(node.type, f"{WAIT} + {became}" if waited else became)
        for i, (v, info) in enumerate(zip(results, infos)):
            key = (node.name, i)
            self.values[key] = v
            self.set_format(key, info.format)

    def set_format(self, key: tuple[str, int], fmt: str) -> None:
        """The layout of a GE value; ND, the default, is not stored."""
        if fmt != "ND":
            self.formats[key] = fmt

    def users_of(self, key: tuple[str, int]) -> Sequence[str]:
        """The names of the ops reading the GE value `key`."""
        known = self.users.get(key)
        if known is None:
            return ()
        return [known] if isinstance(known, str) else known

    def verify_made(self, op: Operation) -> None:
        """`verify_op` of an op `make` built, looked up by the key it was built from."""
        key = self.signatures.pop(id(op), None)
        if key is None:
            self.verify_op(op)
        elif _memo_get(self.verified_made, key) is None:
            self.verify_op(op)
            _memo_put(self.verified_made, key, True)

    def verify_op(self, op: Operation) -> None:
        """`op.verify()`, once per signature: an npu op's checks read its class, operand
        and result types and attributes only (as the verifier's memo relies on), not its
        name in the dump."""
        attrs = [(k, v) for k, v in op.attributes.items() if k != npu.OP_NAME]
        types = (op.operand_types, op.result_types)
        # Types by identity, kept alive by the memo (as in `_OpBuild.make`).
        key = (type(op), *map(id, types[0]), None, *map(id, types[1]), None, *attrs)
        if _memo_get(self.verified, key) is None:
            op.verify()
            _memo_put(self.verified, key, types)

    def try_rule(
        self,
        node: Node,
        rule: Rule,
        operands: list[SSAValue],
        types: list[TensorType[Attribute]],
        formats: list[str],
        emit: Callable[[Operation], Operation],
        waited: bool,
    ) -> list[SSAValue] | None:
        """Build `node` by its rule; None (and a recorded reason) when it does not fit."""
        made: list[Operation] = []

        def record(op: Operation) -> Operation:
            made.append(op)
            return emit(op)

        used = [i for i in range(len(node.outputs)) if (node.name, i) in self.users]
        limit = rule.inputs if rule.inputs is not None else len(operands)
        b = _OpBuild(
            node, rule, operands[:limit], types, formats, record, self.retyped, self.signatures
        )
        reason = ""
        try:
            if any(i >= rule.outputs for i in used):
                raise _Fallback(f"output {max(used)} is used but {rule.op} gives {rule.outputs}")
            if len(types) < rule.outputs:
                raise _Fallback(f"{len(types)} output descriptor(s) for {rule.outputs} result(s)")
            results = BUILDERS.get(rule.builder or "", _generic)(b)
            for op in made:
                self.verify_made(op)
            for i, (got, want) in enumerate(zip(results, types)):
                if got.type is want or npu.compatible(want, got.type):
                    continue
                if _with_element(want, got.type) != got.type:
                    raise _Fallback(f"it gives {got.type} where the dump declares {want}")
                results[i] = b.make("npu.cast", [got], [want]).results[0]
                self.verify_made(made[-1])
        except _Fallback as exc:
            reason = str(exc)
        except VerifyException as exc:
            reason = str(exc).splitlines()[0]
        except (ValueError, IndexError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
        if reason:
            for op in reversed(made):
                self.signatures.pop(id(op), None)
                op.detach()
                op.erase(safe_erase=False)
            self.fallbacks[node.type].append((node, reason))
            return None
        kernel = self.kernel_of(node)
        if kernel is not None:
            for op in made:
                if isinstance(op, npu.NpuOp):
                    op.attributes[npu.KERNEL] = StringAttr(kernel)
        became = " + ".join(dict.fromkeys(op.name for op in made))
        self.summary.record(node.type, f"{WAIT} + {became}" if waited else became)
        return results


@without_collector  # the messages and the IR live on: collections would walk them again
def import_text(
    ctx: NpuirContext,
    text: str,
    filename: str,
    graph: str | None = None,
    strict: bool = False,
) -> ImportResult:
    """Import the dump in `text`; warnings are returned, not printed."""
    ctx.diagnostics.sources.add(filename, text)
    graphs = read_graphs(text, filename)
    if graph is None:
        chosen = graphs[0]
    else:
        matches = [g for g in graphs if g.name == graph]
        if not matches:
            names = ", ".join(f"'{g.name}'" for g in graphs)
            raise _fail(_loc(filename, 1, 1), NO_SUCH_GRAPH, graph=graph, names=names)
        chosen = matches[0]
    importer = _Importer(chosen, filename, strict)
    module = importer.run()
    warnings = list(importer.warnings)
    if graph is None and len(graphs) > 1:
        others = ", ".join(f"'{g.name}'" for g in graphs[1:])
        warnings.insert(
            0,
            Diagnostic.of(
                "warning",
                SEVERAL_GRAPHS,
                _loc(filename, 1, 1),
                count=len(graphs),
                graph=chosen.name,
                others=others,
            ),
        )
    verify(module)
    return ImportResult(module, importer.summary, warnings)


def import_dump(
    ctx: NpuirContext,
    path: str | Path,
    graph: str | None = None,
    strict: bool = False,
) -> ModuleOp:
    """Import the GE / TorchAir dump at `path` as a verified module.

    Warnings (unmapped types, fallbacks, dropped control inputs) go to
    `ctx.diagnostics`; errors raise `DiagnosticError` located in the dump.
    """
    # The one loader reads the file (located errors for unreadable or non-UTF-8 input).
    from npuir.frontends.load import read

    result = import_text(ctx, read(path).text(ctx), str(path), graph, strict)
    ctx.diagnostics.emitted.extend(result.warnings)
    return result.module
