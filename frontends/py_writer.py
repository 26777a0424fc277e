"""`graph_dump.type = "py"`: an npuir function as an `npuir.torchair` builder script.

`builder_script(module, title)` writes the first function of an unlowered
module as Python that rebuilds it with the builder a model engineer uses:

```python
import npuir.torchair as tng
from npuir.torchair import ops

g = tng.Graph("forward")
arg0 = g.input((1000, 1000), "f16", "arg0")
...
v0 = ops.add(arg0, arg1)
with tng.scope.npu_stream_switch("1", 0):
    v1 = tng.scope.npu_wait_tensor(arg3, v0)
    v2 = ops.mm(arg2, v1)
g.output(v0, v2)
module = g.module
```

Running it gives the same ops, operands, attributes, types and scopes (the
ops' locations and `npu.op_name` are the script's own).  Each npu op is the
`torchair.ops` call that builds exactly that op (`npu.matmul` with
`transpose_b` on 2-D operands is `ops.linear`); an op no single call builds is
a `DiagnosticError` at the op (kind `torchair.unwritable-op`).
"""

from __future__ import annotations

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Operation, SSAValue

from npuir.diagnostics import Kind, error
from npuir.dialects import coreset, gear, stream
from npuir.dialects.npu import DYN, ConstantOp, NpuOp, dtype_name

UNWRITABLE = Kind("torchair.unwritable-op", "graph_dump py cannot write '{op_name}'")
"""An op the builder script has no statement for; argument: `op_name`."""
NO_SINGLE_CALL = Kind(
    "torchair.unwritable-op.no-single-call",
    "graph_dump py cannot write '{op_name}' as one torchair.ops call",
)
"""An op no single `npuir.torchair.ops` call builds; argument: `op_name`."""
UNWRITABLE_ATTRIBUTE = Kind(
    "torchair.unwritable-op.argument-attribute",
    "graph_dump py cannot write the argument attribute '{key}'",
)
"""A function argument attribute the builder script cannot spell; argument: `key`."""
HALF_LIMIT = Kind("torchair.unwritable-op.half-limit", "limit_core_num takes both core counts")
"""A `coreset.limit` giving one engine's count only (`limit_core_num` takes both)."""

_BINARY = {"npu.add": "add", "npu.sub": "sub", "npu.mul": "mul", "npu.div": "div"}
_BINARY["npu.maximum"] = "maximum"
_UNARY = {
    f"npu.{name}": name for name in ("neg", "exp", "sqrt", "rsqrt", "relu", "silu", "sigmoid")
}


def _shape(ty: Attribute) -> tuple[int | None, ...]:
    assert isinstance(ty, TensorType)
    return tuple(None if d == DYN else d for d in ty.get_shape())


def _rank(value: SSAValue) -> int:
    return len(_shape(value.type))


def _attr(op: Operation, name: str) -> Attribute | None:
    attr = op.attributes.get(name)
    return attr if attr is not None else op.properties.get(name)


def _int(op: Operation, name: str) -> int | None:
    attr = _attr(op, name)
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def _ints(op: Operation, name: str) -> list[int] | None:
    attr = _attr(op, name)
    return [int(v) for v in attr.get_values()] if isinstance(attr, DenseArrayBase) else None


def _has(op: Operation, name: str) -> bool:
    return isinstance(_attr(op, name), UnitAttr)


class _Writer:
    def __init__(self, func: FuncOp) -> None:
        self.func = func
        self.names: dict[SSAValue, str] = {}
        self.lines: list[str] = []
        self.count = 0

    def fresh(self, value: SSAValue) -> str:
        name = f"v{self.count}"
        self.count += 1
        self.names[value] = name
        return name

    def ref(self, value: SSAValue) -> str:
        return self.names[value]

    def run(self) -> list[str]:
        for i, arg in enumerate(self.func.body.block.args):
            assert isinstance(arg.type, TensorType)
            name = f"arg{i}"
            self.names[arg] = name
            dtype = dtype_name(arg.type.element_type)
            hint = f", {arg.name_hint!r}" if arg.name_hint else ""
            attrs = self.func.arg_attrs.data[i].data if self.func.arg_attrs is not None else {}
            extra = [self.arg_attr(key, value) for key, value in attrs.items() if key != gear.DIMS]
            more = f", {{{', '.join(extra)}}}" if extra else ""
            if more and not hint:
                hint = ", None"
            self.lines.append(f"{name} = g.input({_shape(arg.type)!r}, {dtype!r}{hint}{more})")
            dims = attrs.get(gear.DIMS)
            if isinstance(dims, gear.DimsAttr):
                gears = {d: list(v) for d, v in dims.items()}
                self.lines.append(f"tng.inference.set_dim_gears({name}, {gears!r})")
        self.block(list(self.func.body.block.ops), "")
        return self.lines

    def arg_attr(self, key: str, value: Attribute) -> str:
        """An argument attribute as Python (an importer's records: constants, symbols)."""
        if isinstance(value, FloatAttr):
            return f"{key!r}: FloatAttr({value.value.data!r}, f64)"
        if isinstance(value, ArrayAttr) and all(isinstance(v, StringAttr) for v in value.data):
            items = ", ".join(f"StringAttr({v.data!r})" for v in value.data)
            return f"{key!r}: ArrayAttr([{items}])"
        raise error(None, UNWRITABLE_ATTRIBUTE, key=key)

    def block(self, ops: list[Operation], indent: str) -> None:
        for op in ops:
            if isinstance(op, stream.SwitchOp):
                tag, priority = op.tag.data, op.priority.value.data
                self.scope(op, f"tng.scope.npu_stream_switch({tag!r}, {priority})", indent)
            elif isinstance(op, coreset.LimitOp):
                cube = op.cube.value.data if op.cube is not None else None
                vector = op.vector.value.data if op.vector is not None else None
                if cube is None or vector is None:
                    raise error(op, HALF_LIMIT)
                self.scope(op, f"tng.scope.limit_core_num({cube}, {vector})", indent)
            elif isinstance(op, stream.YieldOp | coreset.YieldOp):
                continue
            elif isinstance(op, ReturnOp):
                outs = ", ".join(self.ref(v) for v in op.operands)
                self.lines.append(f"{indent}g.output({outs})")
            elif isinstance(op, stream.WaitTensorOp):
                a, b = (self.ref(v) for v in op.operands)
                name = self.fresh(op.results[0])
                self.lines.append(f"{indent}{name} = tng.scope.npu_wait_tensor({a}, {b})")
            elif isinstance(op, ConstantOp) and not op.result.type.get_shape():
                (value,) = op.value.get_values()
                dtype = dtype_name(op.result.type.element_type)
                name = self.fresh(op.result)
                self.lines.append(f"{indent}{name} = g.constant({value!r}, {dtype!r})")
            elif isinstance(op, NpuOp) and len(op.results) == 1:
                call = self.call(op)
                self.lines.append(f"{indent}{self.fresh(op.results[0])} = {call}")
            else:
                raise error(op, UNWRITABLE, op_name=op.name)

    def scope(self, op: Operation, opener: str, indent: str) -> None:
        self.lines.append(f"{indent}with {opener}:")
        body = list(op.regions[0].block.ops)
        self.block(body, indent + "    ")
        term = op.regions[0].block.last_op
        assert term is not None
        for inner, outer in zip(term.operands, op.results):
            self.names[outer] = self.names[inner]

    def call(self, op: Operation) -> str:
        args = [self.ref(v) for v in op.operands]
        name = op.name
        if name in _BINARY and len(args) == 2:
            return f"ops.{_BINARY[name]}({args[0]}, {args[1]})"
        if name in _UNARY and len(args) == 1 and not op.attributes.keys() - {"npu.op_name"}:
            return f"ops.{_UNARY[name]}({args[0]})"
        if name == "npu.gelu":
            approx = op.attributes.get("approximate")
            mode = approx.data if isinstance(approx, StringAttr) else "none"
            return f"ops.gelu({args[0]}, {mode!r})"
        if name == "npu.matmul" and not _has(op, "transpose_a"):
            if all(_rank(v) == 2 for v in op.operands):
                fn = "linear" if _has(op, "transpose_b") else "mm"
                return f"ops.{fn}({args[0]}, {args[1]})"
        if name == "npu.batch_matmul" and not op.attributes.keys() - {"npu.op_name"}:
            return f"ops.bmm({args[0]}, {args[1]})"
        if name == "npu.softmax" and _int(op, "axis") is not None:
            return f"ops.softmax({args[0]}, {_int(op, 'axis')})"
        if name == "npu.swiglu" and _int(op, "axis") is not None:
            return f"ops.swiglu({args[0]}, {_int(op, 'axis')})"
        if name == "npu.rms_norm":
            eps = _attr(op, "epsilon")
            if isinstance(eps, FloatAttr):
                return f"ops.rms_norm({args[0]}, {args[1]}, {eps.value.data!r})"
        if name == "npu.concat" and _int(op, "axis") is not None:
            return f"ops.cat([{', '.join(args)}], {_int(op, 'axis')})"
        if name == "npu.transpose" and _ints(op, "perm") is not None:
            return f"ops.permute({args[0]}, {_ints(op, 'perm')})"
        if name == "npu.reshape":
            return f"ops.reshape({args[0]}, {list(_shape(op.results[0].type))!r})"
        if name == "npu.cast":
            ty = op.results[0].type
            assert isinstance(ty, TensorType)
            return f"ops.to({args[0]}, {dtype_name(ty.element_type)!r})"
        if name in ("npu.reduce_sum", "npu.reduce_max"):
            fn = "sum" if name == "npu.reduce_sum" else "amax"
            return f"ops.{fn}({args[0]}, {_ints(op, 'axes')}, {_has(op, 'keepdims')})"
        raise error(op, NO_SINGLE_CALL, op_name=name)


def builder_script(module: ModuleOp, title: str) -> str:
    """The first function of `module` as an `npuir.torchair` builder script."""
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    body = _Writer(func).run()
    head = [
        f'"""{title}, rebuilt with npuir.torchair (graph_dump type "py")."""',
        "",
        "from xdsl.dialects.builtin import ArrayAttr, FloatAttr, StringAttr, f64",
        "",
        "import npuir.torchair as tng",
        "from npuir.torchair import ops",
        "",
        "config = tng.CompilerConfig()",
    ]
    policy = func.attributes.get(gear.POLICY)
    if isinstance(policy, StringAttr):
        head.append(f"config.inference_config.dynamic_gears_merge_policy = {policy.data!r}")
    target = module.attributes.get("npu.target")
    where = f", {target.data!r}" if isinstance(target, StringAttr) else ""
    head.append(f"g = tng.Graph({func.sym_name.data!r}{where}, config=config)")
    return "\n".join([*head, *body, "module = g.module", ""])
