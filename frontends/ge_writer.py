"""GE graph dumps out: an npuir function as TorchAir's `graph_dump` files.

`graph_text(module, kind, name)` writes the function of a module (before
lowering) in one of the two text shapes `npuir.frontends.ge` reads, so that
`npuir-import` of the dump gives the same program back:

- `"txt"`: a GE GraphDef (`name:` then `op { name type input attr input_desc
  output_desc }` blocks);
- `"pbtxt"`: TorchAir's TensorBoard-style `node { name op input attr }` blocks,
  each attribute value the GE text of the attribute in one quoted string, the
  tensor descriptors under `[i]x` / `[o]y`.

Each npu op is written as the first GE type of `ge_ops.toml` that maps to it
(its unit attributes as GE bools), `stream.wait_tensor` as an `Identity` with
a control input on the dependency, arguments as `Data` (with `index`) and the
return as `NetOutput`; scopes become TorchAir's `_user_stream_label` /
`_user_stream_priority` / `_op_aicore_num` / `_op_vectorcore_num` attributes
on the ops inside them.  An op the table cannot name is a `DiagnosticError`
at the op.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType, UnitAttr
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Operation, SSAValue

from npuir.diagnostics import Kind, error
from npuir.dialects import coreset, stream
from npuir.dialects.npu import DYN, OP_NAME, NpuOp, dtype_name
from npuir.frontends.ge import op_table
from npuir.gc_pause import without_collector

UNWRITABLE = Kind("ge.unwritable-op", "graph_dump cannot write '{op_name}' as a GE op")
"""An op the GE dump writer cannot name as a GE op; argument: `op_name`."""

STREAM_LABEL = "_user_stream_label"
STREAM_PRIORITY = "_user_stream_priority"
AICORE_NUM = "_op_aicore_num"
VECTORCORE_NUM = "_op_vectorcore_num"


def _ge_types() -> dict[str, tuple[str, dict[str, str]]]:
    """npu op name -> (GE type, npu unit attribute -> GE attribute), first listed wins."""
    out: dict[str, tuple[str, dict[str, str]]] = {}
    for ge_type, rule in op_table().rules.items():
        if rule.op is None or rule.op in out:
            continue
        if rule.builder not in (None, "matmul"):
            continue
        if rule.int or rule.float or rule.string or rule.array or rule.inputs is not None:
            continue
        out[rule.op] = (ge_type, {npu_name: ge for ge, npu_name in rule.unit.items()})
    return out


def _dtype(ty: Attribute) -> str:
    assert isinstance(ty, TensorType)
    name = dtype_name(ty.element_type)
    for ge, npuir in op_table().dtypes.items():
        if npuir == name:
            return ge
    return "DT_UNDEFINED"


def _desc(name: str, ty: Attribute) -> list[str]:
    assert isinstance(ty, TensorType)
    dims = [f"  dim: {-1 if d == DYN else d}" for d in ty.get_shape()]
    return [f'name: "{name}"', f"dtype: {_dtype(ty)}", "shape {", *dims, "}", 'layout: "ND"']


class _Node:
    def __init__(self, name: str, ge_type: str) -> None:
        self.name = name
        self.type = ge_type
        self.inputs: list[str] = []
        self.attrs: list[tuple[str, str, str]] = []  # key, kind (s/i/b), value text
        self.in_descs: list[list[str]] = []
        self.out_descs: list[list[str]] = []


class _Writer:
    def __init__(self, func: FuncOp) -> None:
        self.func = func
        self.names: dict[SSAValue, str] = {}
        self.nodes: list[_Node] = []
        self.used: set[str] = set()
        self.next_suffix: dict[str, int] = {}
        self.types = _ge_types()

    def fresh(self, base: str) -> str:
        """`base`, else `base_k` for the smallest k free.  Names are only ever added, so
        the search for a base resumes where its last one ended (it restarted from 0:
        quadratic in the ops sharing a base, as unnamed ops of one type do)."""
        k = self.next_suffix.get(base, 0)
        name = f"{base}_{k}" if k else base
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.next_suffix[base] = k + 1
        self.used.add(name)
        return name

    def ref(self, value: SSAValue) -> str:
        return self.names[value]

    def run(self) -> list[_Node]:
        for i, arg in enumerate(self.func.body.block.args):
            node = _Node(self.fresh(arg.name_hint or f"arg{i}"), "Data")
            node.attrs.append(("index", "i", str(i)))
            node.out_descs.append(_desc("y", arg.type))
            self.names[arg] = f"{node.name}:0"
            self.nodes.append(node)
        self.block(list(self.func.body.block.ops), [])
        return self.nodes

    def block(self, ops: Sequence[Operation], scope: list[tuple[str, str]]) -> None:
        for op in ops:
            if isinstance(op, stream.SwitchOp):
                attrs = [
                    (STREAM_LABEL, op.tag.data),
                    (STREAM_PRIORITY, str(op.priority.value.data)),
                ]
                self.enter(op, [*scope, *attrs])
            elif isinstance(op, coreset.LimitOp):
                attrs = []
                if op.cube is not None:
                    attrs.append((AICORE_NUM, str(op.cube.value.data)))
                if op.vector is not None:
                    attrs.append((VECTORCORE_NUM, str(op.vector.value.data)))
                self.enter(op, [*scope, *attrs])
            elif isinstance(op, ReturnOp):
                node = _Node(self.fresh("NetOutput"), "NetOutput")
                node.inputs = [self.ref(v) for v in op.operands]
                node.in_descs = [_desc(f"x{i}", v.type) for i, v in enumerate(op.operands)]
                self.nodes.append(node)
            elif isinstance(op, stream.WaitTensorOp):
                node = _Node(self.fresh(_op_name(op, "Identity")), "Identity")
                node.inputs = [self.ref(op.operands[0]), _control(self.ref(op.operands[1]))]
                self.finish(node, op, scope)
            elif isinstance(op, NpuOp) and op.name in self.types:
                ge_type, units = self.types[op.name]
                node = _Node(self.fresh(_op_name(op, ge_type)), ge_type)
                node.inputs = [self.ref(v) for v in op.operands]
                for npu_name, ge in units.items():
                    flag = isinstance(op.attributes.get(npu_name), UnitAttr)
                    node.attrs.append((ge, "b", "true" if flag else "false"))
                self.finish(node, op, scope)
            elif isinstance(op, stream.YieldOp | coreset.YieldOp):
                continue
            else:
                raise error(op, UNWRITABLE, op_name=op.name)

    def enter(self, op: Operation, scope: list[tuple[str, str]]) -> None:
        body = list(op.regions[0].block.ops)
        self.block(body, scope)
        term = op.regions[0].block.last_op
        assert term is not None
        for inner, outer in zip(term.operands, op.results):
            self.names[outer] = self.names[inner]

    def finish(self, node: _Node, op: Operation, scope: list[tuple[str, str]]) -> None:
        merged = dict(scope)
        node.attrs[:0] = [(k, "s", v) for k, v in merged.items()]
        data = [v for v in op.operands][: 1 if node.type == "Identity" else None]
        node.in_descs = [
            _desc(f"x{i + 1}" if len(data) > 1 else "x", v.type) for i, v in enumerate(data)
        ]
        node.out_descs = [_desc("y", r.type) for r in op.results]
        for i, r in enumerate(op.results):
            self.names[r] = f"{node.name}:{i}"
        self.nodes.append(node)


def _op_name(op: Operation, default: str) -> str:
    name = op.attributes.get(OP_NAME)
    return name.data if isinstance(name, StringAttr) and name.data.isidentifier() else default


def _control(ref: str) -> str:
    return ref.rsplit(":", 1)[0] + ":-1"


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _value(kind: str, text: str) -> str:
    return f'{kind}: "{_quote(text)}"' if kind == "s" else f"{kind}: {text}"


def _txt(graph: str, nodes: list[_Node]) -> str:
    out = [f'name: "{_quote(graph)}"']
    for n in nodes:
        out += ["op {", f'  name: "{n.name}"', f'  type: "{n.type}"']
        out += [f'  input: "{i}"' for i in n.inputs]
        for key, kind, text in n.attrs:
            out += ["  attr {", f'    key: "{key}"', "    value {", f"      {_value(kind, text)}"]
            out += ["    }", "  }"]
        for tag, descs in (("input_desc", n.in_descs), ("output_desc", n.out_descs)):
            for d in descs:
                out += [f"  {tag} {{", *[f"    {line}" for line in d], "  }"]
        out.append("}")
    return "\n".join(out) + "\n"


def _escaped(lines: list[str]) -> str:
    return "'" + "".join(line.replace("'", "\\'") + "\\n" for line in lines) + "'"


def _pbtxt(nodes: list[_Node]) -> str:
    out: list[str] = []
    for n in nodes:
        out += ["node {", f'  name: "{n.name}"', f'  op: "{n.type}"']
        out += [f'  input: "{"^" + i[:-3] if i.endswith(":-1") else i}"' for i in n.inputs]
        attrs = [(k, [_value(kind, text)]) for k, kind, text in n.attrs]
        attrs += [(f"[i]{d[0].split(chr(34))[1]}", d) for d in n.in_descs]
        attrs += [(f"[o]{d[0].split(chr(34))[1]}", d) for d in n.out_descs]
        for key, lines in attrs:
            out += ["  attr {", f'    key: "{key}"', "    value {", f"      s: {_escaped(lines)}"]
            out += ["    }", "  }"]
        out.append("}")
    return "\n".join(out) + "\n"


@without_collector  # it allocates while the module lives: collections would walk it, and
# the walks grew with the module (quadratic time)
def graph_text(module: ModuleOp, kind: str, name: str = "graph") -> str:
    """The first function of `module` as a `"txt"` or `"pbtxt"` GE dump."""
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    nodes = _Writer(func).run()
    return _txt(name, nodes) if kind == "txt" else _pbtxt(nodes)
