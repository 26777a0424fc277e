"""A `.pt2` archive's program as a graph the torch importer walks, without torch.

`npuir.frontends.pt2` reads and checks the archive as data; torch's own deserializer
would rebuild an `ExportedProgram` from that JSON, but importing torch for it takes
longer than everything `npuir-advise` does with the program.  This module builds,
from the checked JSON (torch's `torch._export.serde.schema`), the nodes the torch
importer (`npuir.frontends.torch`) needs of an FX graph, as torch's deserializer would
make them:

- one `placeholder` per graph input, its `meta["val"]` a `TensorValue` (sizes, with a
  symbolic size as its symbol's name; dtype), a `SymSize` (a symbolic int, float or
  bool), or the value of a constant torch fixed at export (`as_bool`, `as_int`,
  `as_float`, `as_string`, `as_none` and lists of them; `meta["constant"]` is True),
  named as the signature names it (`use_cache`);
- one `call_function` per node, its `target` the operator's name (`aten.linear.default`,
  `_operator.getitem`), positional and keyword arguments as the schema lists them
  (tensors as the nodes that make them, scalar types as `ScalarType`), `meta["val"]` its
  result(s) and `meta["stack_trace"]` the model's stack; a node with several results
  (or a list of them) is followed by one `_operator.getitem` node per result, named as
  the results are;
- one `output` node.

An argument kind the importer has no use for (graphs, custom objects, ...) raises
`Pt2GraphError`, which the importer reports at the node.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

# torch._export.serde.schema.ScalarType -> torch's dtype name.
_SCALAR_TYPES = {
    1: "uint8",
    2: "int8",
    3: "int16",
    4: "int32",
    5: "int64",
    6: "float16",
    7: "float32",
    8: "float64",
    12: "bool",
    13: "bfloat16",
    28: "uint16",
    34: "uint32",
    35: "uint64",
}
_TARGETS = ("torch.ops.", "_operator.", "math.")
"""What a node may call (`npuir.frontends.pt2` checks the rest of the name)."""
_POSITIONAL = 1  # schema.ArgumentKind.POSITIONAL (KEYWORD is 2; 0: unknown, positional)


class Pt2GraphError(Exception):
    """An argument or value the importer cannot read.

    `needle`: a JSON string of the program at whose first occurrence the error is located
    (an input's name), or None for the program as a whole."""

    def __init__(self, message: str, needle: str | None = None) -> None:
        super().__init__(message)
        self.needle = needle


@dataclass(frozen=True)
class ScalarType:
    """A dtype argument: `str()` is torch's spelling (`torch.float32`)."""

    name: str

    def __str__(self) -> str:
        return f"torch.{self.name}"


@dataclass(frozen=True)
class SymSize:
    """A symbolic size (`s0`): `str()` is its symbol, as torch's `SymInt` prints."""

    expr: str

    def __str__(self) -> str:
        return self.expr


@dataclass(frozen=True)
class TensorValue:
    """What the importer reads of a tensor: its sizes and its dtype."""

    shape: tuple[int | SymSize, ...]
    dtype: ScalarType


@dataclass(frozen=True)
class Bound:
    """A symbol's range (`torch.export.Dim`), as `range_constraints` gives it."""

    lower: int
    upper: int | float


@dataclass(eq=False)
class Node:
    """An FX node, as far as the importer reads one."""

    op: str
    name: str
    target: str = ""
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict[str, Any])
    meta: dict[str, Any] = field(default_factory=dict[str, Any])

    def __repr__(self) -> str:
        return self.name


@dataclass
class Graph:
    """The nodes of a `.pt2` program, in order, and its symbols' ranges."""

    nodes: list[Node]
    range_constraints: dict[str, Bound]


_SREPR_SYMBOL = re.compile(
    r"Symbol\('([a-z]{1,4}[0-9]{1,6})'(?:, *[a-z_]{1,20}=(?:True|False)){0,8}\)"
)
"""A shape symbol as sympy's `srepr` spells it: torch writes a dim that `mark_dynamic` (or
`set_dim_gears`) made dynamic before `torch.export` as `Symbol('s77', positive=True,
integer=True)` when the program has no range for it."""


def plain_expression(expr: str) -> str:
    """`expr` with each srepr'd symbol (`Symbol('s0', integer=True)`) as its name (`s0`)."""
    return _SREPR_SYMBOL.sub(lambda m: m.group(1), expr) if "Symbol(" in expr else expr


def _size(value: dict[str, Any]) -> int | SymSize:
    if "as_int" in value:
        return int(value["as_int"])
    expr = value.get("as_expr")
    if isinstance(expr, dict) and isinstance(expr.get("expr_str"), str):
        return SymSize(plain_expression(expr["expr_str"]))
    raise Pt2GraphError(f"a size the importer cannot read: {sorted(value)}")


def _scalar_type(code: object) -> ScalarType:
    name = _SCALAR_TYPES.get(code) if isinstance(code, int) else None
    if name is None:
        raise Pt2GraphError(f"scalar type {code!r} is not one npuir reads")
    return ScalarType(name)


class _Builder:
    def __init__(self, graph: dict[str, Any]) -> None:
        self.tensors: dict[str, Any] = graph.get("tensor_values") or {}
        self.values: dict[str, Node] = {}
        self.nodes: list[Node] = []
        self.names: set[str] = set()

    def tensor_value(self, name: str) -> TensorValue:
        meta = self.tensors.get(name)
        if not isinstance(meta, dict):
            raise Pt2GraphError(f"tensor '{name}' has no metadata")
        sizes = meta.get("sizes")
        if not isinstance(sizes, list):
            raise Pt2GraphError(f"tensor '{name}' has no sizes")
        return TensorValue(tuple(_size(s) for s in sizes), _scalar_type(meta.get("dtype")))

    def value(self, name: str) -> Node:
        node = self.values.get(name)
        if node is None:
            raise Pt2GraphError(f"'{name}' is used before a node makes it")
        return node

    def argument(self, arg: dict[str, Any]) -> Any:
        """One `schema.Argument` as the importer's handlers take it."""
        if not isinstance(arg, dict) or len(arg) != 1:
            raise Pt2GraphError("an argument that is not one of the schema's kinds")
        ((kind, value),) = arg.items()
        if kind == "as_none":
            return None
        if kind == "as_tensor":
            return self.value(value["name"])
        if kind == "as_tensors":
            return [self.value(t["name"]) for t in value]
        if kind == "as_optional_tensors":
            return [self.value(t["as_tensor"]["name"]) if "as_tensor" in t else None for t in value]
        if kind in ("as_int", "as_float", "as_bool", "as_string"):
            return value
        if kind in ("as_ints", "as_floats", "as_bools", "as_strings"):
            return list(value)
        if kind == "as_scalar_type":
            return _scalar_type(value)
        if kind == "as_sym_int":
            return self.sym_int(value)
        if kind == "as_sym_ints":
            return [self.sym_int(v) for v in value]
        if kind in ("as_memory_format", "as_layout", "as_device"):
            return None  # what the importer's handlers ignore (a copy's layout, device)
        raise Pt2GraphError(f"an argument of kind '{kind}'")

    def sym_int(self, value: dict[str, Any]) -> Any:
        if "as_int" in value:
            return int(value["as_int"])
        if "as_name" in value:
            return self.value(value["as_name"])
        raise Pt2GraphError("a symbolic int the importer cannot read")

    def result(self, out: dict[str, Any]) -> Any:
        """A node output's value (`meta["val"]`), and the names it is known by."""
        if "as_tensor" in out:
            return self.tensor_value(out["as_tensor"]["name"])
        if "as_tensors" in out:
            return [self.tensor_value(t["name"]) for t in out["as_tensors"]]
        if "as_none" in out:
            return None
        name = _scalar_name(out)
        if name is not None:
            return SymSize(name)
        raise Pt2GraphError(f"an output of kind '{sorted(out)}'")

    def add(self, node: Node) -> Node:
        self.nodes.append(node)
        return node

    def call(self, spec: dict[str, Any]) -> None:
        target = spec.get("target")
        if not isinstance(target, str) or not target.startswith(_TARGETS):
            raise Pt2GraphError(f"a node target that is not an operator: {target!r}")
        target = target.removeprefix("torch.ops.")
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for named in spec.get("inputs") or []:
            value = self.argument(named.get("arg"))
            if named.get("kind", _POSITIONAL) in (0, _POSITIONAL):
                args.append(value)
            else:
                kwargs[str(named.get("name"))] = value
        outputs: list[dict[str, Any]] = spec.get("outputs") or []
        metadata = spec.get("metadata")
        trace = metadata.get("stack_trace") if isinstance(metadata, dict) else None
        stack = trace if isinstance(trace, str) else None  # the model's frames, as text
        first = _names(outputs)
        name = str(spec.get("name") or (first[0] if first else target))
        meta: dict[str, Any] = {"stack_trace": stack}
        results = [self.result(o) for o in outputs]
        single = len(outputs) == 1 and "as_tensor" in outputs[0]
        meta["val"] = results[0] if single else (results if len(outputs) > 1 else None)
        if len(outputs) == 1 and "as_tensors" in outputs[0]:
            meta["val"] = results[0]
        scalar = _scalar_name(outputs[0]) if len(outputs) == 1 else None
        if scalar is not None:
            # One symbolic scalar (`aten.sym_size.int`): the node is the value, by its name.
            meta["val"] = results[0]
        node = self.add(Node("call_function", name, target, tuple(args), kwargs, meta))
        if single:
            self.values[outputs[0]["as_tensor"]["name"]] = node
            return
        if scalar is not None:
            self.values[scalar] = node
            return
        # Several results, or a list of them: one getitem per result, as torch makes them.
        items: list[tuple[str, Any]] = []
        if len(outputs) == 1 and "as_tensors" in outputs[0]:
            items = [(t["name"], v) for t, v in zip(outputs[0]["as_tensors"], results[0])]
        else:
            for out, value in zip(outputs, results):
                if "as_tensor" in out:
                    items.append((out["as_tensor"]["name"], value))
                elif "as_none" in out:
                    items.append(("", None))
                else:
                    raise Pt2GraphError("a node with several results that are not tensors")
        for i, (out_name, value) in enumerate(items):
            if not out_name:
                continue
            getitem = self.add(
                Node(
                    "call_function",
                    out_name,
                    "_operator.getitem",
                    (node, i),
                    {},
                    {"val": value, "stack_trace": stack},
                )
            )
            self.values[out_name] = getitem


def _scalar_name(out: Any) -> str | None:
    """The name of a symbolic scalar result (`{"as_sym_int": {"as_name": "sym_size_int"}}`),
    or None for any other output."""
    for kind in _SYMBOLIC_INPUTS:
        value = out.get(kind) if isinstance(out, dict) else None
        if isinstance(value, dict) and isinstance(value.get("as_name"), str):
            return str(value["as_name"])
    return None


def _names(outputs: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    for o in outputs:
        if "as_tensor" in o:
            out.append(o["as_tensor"]["name"])
        elif "as_tensors" in o:
            out.extend(t["name"] for t in o["as_tensors"])
    return out


_CONSTANT_INPUTS = frozenset(
    {"as_int", "as_float", "as_bool", "as_string", "as_ints", "as_floats", "as_bools", "as_strings"}
)
"""Graph-input kinds whose value torch fixed at export (a Python scalar, string or list the
model took): `constant_input`s in the signature."""
_SYMBOLIC_INPUTS = ("as_sym_int", "as_sym_float", "as_sym_bool")
"""Graph-input kinds of a scalar torch kept symbolic (`torch.export.Dim` on an int)."""


def _own_name(arg: Any) -> str | None:
    """The name an argument carries itself (a tensor's, a symbol's, a custom object's)."""
    if not isinstance(arg, dict) or len(arg) != 1:
        return None
    (value,) = arg.values()
    if isinstance(value, list) and value:
        value = value[0]
    if isinstance(value, dict):
        name = value.get("name", value.get("as_name"))
        if isinstance(name, str) and name:
            return name
    return None


def _input_name(arg: Any, spec: Any, position: int) -> str:
    """An input's name: its own (a tensor, a symbol), else the signature's (a constant)."""
    name = _own_name(arg)
    if name is not None:
        return name
    if isinstance(spec, dict):
        for entry in spec.values():
            if isinstance(entry, dict):
                named = entry.get("name")
                if isinstance(named, str) and named:
                    return named
                inner = _own_name(entry.get("arg"))
                if inner is not None:
                    return inner
    return f"input{position}"


_LITERALS: dict[str, type | tuple[type, ...]] = {
    "int": int,
    "float": (int, float),
    "bool": bool,
    "string": str,
}


def _literal(kind: str, value: Any) -> bool:
    """Whether a constant input's value is what its kind says (`as_ints`: a list of ints)."""
    base = kind.removeprefix("as_")
    if base.endswith("s") and base[:-1] in _LITERALS:
        return isinstance(value, list) and all(_literal(f"as_{base[:-1]}", v) for v in value)
    wanted = _LITERALS.get(base)
    if wanted is None:
        return False
    return isinstance(value, wanted) and (base == "bool" or not isinstance(value, bool))


def _input(b: _Builder, arg: Any, spec: Any, position: int, count: int) -> Node:
    """The placeholder of graph input `position`: a tensor, a symbolic scalar (its symbol,
    `SymSize`) or a constant torch fixed at export (`meta["constant"]`, the importer folds
    its value)."""
    if not isinstance(arg, dict) or len(arg) != 1:
        raise Pt2GraphError(
            f"graph input {position + 1} of {count} is not one of the schema's kinds"
        )
    name = _input_name(arg, spec, position)
    ((kind, value),) = arg.items()
    if kind == "as_tensor":
        return Node("placeholder", name, meta={"val": b.tensor_value(name)})
    if kind in _SYMBOLIC_INPUTS and isinstance(value, dict):
        if "as_name" in value:
            return Node("placeholder", name, meta={"val": SymSize(name)})
        for literal in ("as_int", "as_float", "as_bool"):
            if literal in value:
                return Node("placeholder", name, meta={"val": value[literal], "constant": True})
    if kind == "as_sym_ints" and isinstance(value, list):
        vals = [
            SymSize(str(v["as_name"])) if "as_name" in v else _size(v)
            for v in value
            if isinstance(v, dict)
        ]
        return Node("placeholder", name, meta={"val": vals, "constant": True})
    if kind == "as_none":
        return Node("placeholder", name, meta={"val": None, "constant": True})
    if kind in _CONSTANT_INPUTS:
        if not _literal(kind, value):
            raise Pt2GraphError(
                f"graph input '{name}' (input {position + 1} of {count}) is of kind '{kind}' but "
                f"holds a {type(value).__name__}, which is not what torch writes",
                json.dumps(name),
            )
        return Node("placeholder", name, meta={"val": value, "constant": True})
    raise Pt2GraphError(
        f"graph input '{name}' (input {position + 1} of {count}) is of kind '{kind}', which npuir "
        "cannot take (it takes tensors, symbolic ints and constants: bool, int, float, str, "
        "None and lists of them); pass it as a tensor, or fix its value in the model before "
        "torch.export",
        json.dumps(name),
    )


def graph_of(program: dict[str, Any]) -> Graph:
    """The importer's view of a checked program (`Pt2Archive.program`)."""
    module = program.get("graph_module") or {}
    graph = module.get("graph") or {}
    b = _Builder(graph)
    inputs = graph.get("inputs") or []
    specs = (module.get("signature") or {}).get("input_specs") or []
    for position, arg in enumerate(inputs):
        spec = specs[position] if position < len(specs) else None
        node = _input(b, arg, spec, position, len(inputs))
        b.add(node)
        b.values[node.name] = node
    for spec in graph.get("nodes") or []:
        b.call(spec)
    results = [b.argument(o) for o in graph.get("outputs") or []]
    b.add(Node("output", "output", "output", (results,)))
    bounds: dict[str, Bound] = {}
    for sym, limits in (program.get("range_constraints") or {}).items():
        lo, hi = limits.get("min_val"), limits.get("max_val")
        bounds[str(sym)] = Bound(
            int(lo) if isinstance(lo, int) else 0, int(hi) if isinstance(hi, int) else -1
        )
    return Graph(b.nodes, bounds)


__all__ = [
    "Bound",
    "Graph",
    "Node",
    "Pt2GraphError",
    "ScalarType",
    "SymSize",
    "TensorValue",
    "graph_of",
]
