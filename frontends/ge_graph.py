"""Stage two of the GE importer: the graphs of a dump, from its located messages.

`read_graphs(text, filename)` parses a dump (stage one, `npuir.frontends.protobuf_text`)
and returns its graphs whichever of the three shapes it has (a GE GraphDef, a
`DUMP_GE_GRAPH` ModelDef holding several graphs, a TorchAir pbtxt NodeDef list whose
attribute values are GE text in one string each, parsed again): each `Node` keeps its
GE name, type, inputs (data and control `Edge`s), attributes and output descriptors,
and the location of its block.  Nothing here builds IR; stage three
(`npuir.frontends.ge`) does.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npuir.diagnostics import Diagnostic, DiagnosticError, Kind, SourceLocation
from npuir.frontends.protobuf_text import Ident, Message, parse, shared

# A GE dump the importer refuses: one kind per reason, each `ge.invalid-dump.<what>`
# (a consumer that only cares that the dump was refused matches the prefix).
OUT_OF_I64 = Kind(
    "ge.invalid-dump.out-of-i64", "attribute '{key}' of '{node}' is {value}, outside i64"
)
"""An integer attribute beyond i64; arguments: `key`, `node`, `value`."""
NEGATIVE_OUTPUT = Kind(
    "ge.invalid-dump.negative-output",
    "input '{input}' names output {index}; outputs count from 0",
)
"""An input naming an output below -1 (-1 is a control edge); arguments: `input`, `index`."""
INPUT_NOT_STRING = Kind("ge.invalid-dump.input-not-string", "an input must be a string")
"""An `input:` entry that is not a string."""
BAD_INNER_TEXT = Kind(
    "ge.invalid-dump.attribute-text",
    "attribute '{key}': {reason} (line {line}, column {column} of the string)",
)
"""GE text held in an attribute string does not parse; arguments: `key`, `reason` (the
parser's message), `line`, `column` (within the string)."""
NOT_A_DUMP = Kind(
    "ge.invalid-dump.not-a-dump",
    "not a GE or TorchAir graph dump: no 'graph', 'op' or 'node' blocks at the top level",
)
"""A file with none of the three dump shapes at its top level."""

I64_MIN, I64_MAX = -(2**63), 2**63 - 1


# Edges and nodes are slotted and keep their positions as numbers (a location is made
# when asked for): a 10^6-op dump holds millions of them.


@dataclass(frozen=True, slots=True)
class Edge:
    """One `input:` of a node: output `index` of `source`, or a control edge; where the
    `input:` stands."""

    source: str
    index: int
    control: bool
    filename: str
    line: int
    column: int

    @property
    def location(self) -> SourceLocation:
        return SourceLocation(self.filename, self.line, self.column)


@dataclass(slots=True)
class Node:
    """One GE op, whichever dump shape it came from; where its block stands."""

    name: str
    type: str
    filename: str
    line: int
    column: int
    order: int
    inputs: list[Edge] = field(default_factory=list[Edge])
    controls: list[Edge] = field(default_factory=list[Edge])
    attrs: dict[str, Message] = field(default_factory=dict[str, Message])
    outputs: list[Message] = field(default_factory=list[Message])

    @property
    def location(self) -> SourceLocation:
        return SourceLocation(self.filename, self.line, self.column)

    def attr(self, key: str) -> Message | None:
        return self.attrs.get(key)

    def attr_int(self, key: str) -> int | None:
        value = self.attrs.get(key)
        if value is None:
            return None
        raw = value.get("i", value.get("s"))
        if isinstance(raw, str) and re.fullmatch(r"-?\d+", raw.strip()):
            raw = int(raw)
        if not isinstance(raw, int):
            return None
        if not I64_MIN <= raw <= I64_MAX:
            where = loc(self.filename, value.line, value.column)
            raise fail(where, OUT_OF_I64, key=key, node=self.name, value=raw)
        return raw

    def attr_float(self, key: str) -> float | None:
        value = self.attrs.get(key)
        raw = None if value is None else value.get("f", value.get("i"))
        return float(raw) if isinstance(raw, int | float) else None

    def attr_str(self, key: str) -> str | None:
        value = self.attrs.get(key)
        raw = None if value is None else value.get("s")
        return raw if isinstance(raw, str) and not isinstance(raw, Ident) else None

    def attr_bool(self, key: str) -> bool | None:
        value = self.attrs.get(key)
        raw = None if value is None else value.get("b")
        if raw is None and value is not None and isinstance(value.get("s"), str):
            raw = value.get("s").lower()
        if raw in ("true", 1):
            return True
        if raw in ("false", 0):
            return False
        return None

    def attr_list(self, key: str, kind: str) -> list[Any] | None:
        value = self.attrs.get(key)
        lst = None if value is None else value.get("list")
        return lst.all(kind) if isinstance(lst, Message) else None


@dataclass
class Graph:
    """The nodes of one GE graph, in file order."""

    name: str
    nodes: list[Node]


def loc(filename: str, line: int, column: int) -> SourceLocation:
    """A location in the dump."""
    return SourceLocation(filename, line, column)


def fail(location: SourceLocation | None, kind: Kind, /, **args: Any) -> DiagnosticError:
    """The error of `kind` for a dump the importer refuses, at `location`."""
    return DiagnosticError(Diagnostic.of("error", kind, location, **args))


_OUTPUT_INDEX = re.compile(r"-?\d+")


def _edge(text: str, filename: str, line: int, column: int) -> Edge | None:
    """`"op:k"`, `"op"` (output 0), `"op:-1"` / `"^op"` (control), `""` (none).  The
    source's name is interned: every input naming an op shares one string."""
    text = text.strip()
    if not text:
        return None
    if text.startswith("^"):
        return Edge(sys.intern(text[1:]), -1, True, filename, line, column)
    name, sep, index = text.rpartition(":")
    if sep and _OUTPUT_INDEX.fullmatch(index):
        k = int(index)
        if k < -1:
            raise fail(loc(filename, line, column), NEGATIVE_OUTPUT, input=text, index=k)
        return Edge(sys.intern(name), k, k == -1, filename, line, column)
    return Edge(sys.intern(text), 0, False, filename, line, column)


def _add_inputs(node: Node, msg: Message, filename: str) -> None:
    for entry in msg.entries("input"):
        if not isinstance(entry.value, str):
            raise fail(loc(filename, entry.line, entry.column), INPUT_NOT_STRING)
        edge = _edge(entry.value, filename, entry.line, entry.column)
        if edge is not None:
            (node.controls if edge.control else node.inputs).append(edge)


def attr_map(msg: Message) -> dict[str, Message]:
    """`attr { key: "k" value { ... } }` entries as a dict of value messages."""
    out: dict[str, Message] = {}
    for a in msg.messages("attr"):
        key, value = a.get("key"), a.get("value")
        if isinstance(key, str) and isinstance(value, Message):
            out[key] = value
    return out


def _text_of(node_msg: Message, key: str) -> str:
    value = node_msg.get(key)
    return value if isinstance(value, str) and not isinstance(value, Ident) else ""


def _interned(node_msg: Message, key: str) -> str:
    """`_text_of`, interned: an op's name is shared with the inputs naming it, and its
    type with every op of that type (a 10^6-op dump holds millions of them)."""
    return sys.intern(_text_of(node_msg, key))


def _op_node(msg: Message, order: int, filename: str) -> Node:
    """A GE OpDef (`op { name type input attr input_desc output_desc }`)."""
    node = Node(
        _interned(msg, "name"), _interned(msg, "type"), filename, msg.line, msg.column, order
    )
    _add_inputs(node, msg, filename)
    node.attrs = attr_map(msg)
    node.outputs = list(msg.messages("output_desc"))
    return node


def _node_node(msg: Message, order: int, filename: str) -> Node:
    """A TorchAir pbtxt NodeDef: every attribute value is GE text in one string."""
    node = Node(_interned(msg, "name"), _interned(msg, "op"), filename, msg.line, msg.column, order)
    _add_inputs(node, msg, filename)
    for a in msg.messages("attr"):
        key, value = a.get("key"), a.get("value")
        if not isinstance(key, str) or not isinstance(value, Message):
            continue
        entry = value.entries("s")
        if not entry or not isinstance(entry[-1].value, str):
            continue
        where = loc(filename, entry[-1].line, entry[-1].column)
        inner = _parse_inner(entry[-1].value, where, key)
        if key.startswith("[o]"):
            node.outputs.append(inner)
        elif not key.startswith("[i]"):
            node.attrs[key] = inner
    return node


_INNER: dict[str, Message] = {}
"""The messages of the attribute strings read lately: a pbtxt dump repeats its tensor
descriptors in every node (located in the string, so equal text reads the same)."""
_INNER_KEPT = 4096


def _parse_inner(text: str, where: SourceLocation, key: str) -> Message:
    """Parse the GE text held in a pbtxt attribute string; errors point at the string."""
    known = _INNER.get(text)
    if known is not None:
        return shared(known)
    try:
        message = parse(text, "<attribute>")
        if len(text) <= 4096:
            if len(_INNER) >= _INNER_KEPT:
                del _INNER[next(iter(_INNER))]
            _INNER[text] = message
        return message
    except DiagnosticError as exc:
        inner = exc.diagnostic.location  # the parser locates every error
        line, column = (inner.line, inner.column) if inner is not None else (1, 1)
        reason = exc.diagnostic.message
        raise fail(
            where, BAD_INNER_TEXT, key=key, reason=reason, line=line, column=column
        ) from None


def _converter(filename: str) -> Callable[[tuple[str, ...], Message], object]:
    """Each op or node as the reader completes it (its block's messages are then freed):
    a 10^6-op dump would otherwise hold every block's messages at once.  A block that
    does not convert stays a message, converted again (and refused) in file order once
    the whole text has parsed: a syntax error anywhere comes first, as without this."""

    def convert(path: tuple[str, ...], msg: Message) -> object:
        try:
            if path in (("op",), ("graph", "op")):
                return _op_node(msg, 0, filename)
            if path == ("node",):
                return _node_node(msg, 0, filename)
        except DiagnosticError:
            pass
        return msg

    return convert


def _nodes(
    parent: Message, field: str, make: Callable[[Message, int, str], Node], filename: str
) -> list[Node]:
    """The nodes of `field` in `parent`, in file order, those still messages made now."""
    nodes: list[Node] = []
    for entry in parent.entries(field):
        value = entry.value
        if isinstance(value, Message):
            value = make(value, len(nodes), filename)
        elif not isinstance(value, Node):
            continue  # a scalar of that name
        value.order = len(nodes)
        nodes.append(value)
    return nodes


def read_graphs(text: str, filename: str) -> list[Graph]:
    """Every graph in a dump, whichever of the three shapes it has."""
    top = parse(text, filename, convert=_converter(filename))
    # pbtxt dumps carry no graph name: the file's stem names the function then.
    stem = re.sub(r"\W", "_", Path(filename).stem) or "main"
    if top.fields.get("graph"):
        graphs = []
        for g in top.messages("graph"):
            nodes = _nodes(g, "op", _op_node, filename)
            graphs.append(Graph(_text_of(g, "name") or stem, nodes))
        return graphs
    if top.fields.get("op"):
        nodes = _nodes(top, "op", _op_node, filename)
        return [Graph(_text_of(top, "name") or stem, nodes)]
    if top.fields.get("node"):
        nodes = _nodes(top, "node", _node_node, filename)
        return [Graph(_text_of(top, "name") or stem, nodes)]
    raise fail(loc(filename, 1, 1), NOT_A_DUMP)
