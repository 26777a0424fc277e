"""The GE importer's second stage: every mapping rule and every error, on small dumps."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp, StringAttr, UnitAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation

from npuir.api import print_ir
from npuir.context import make_context
from npuir.diagnostics import DiagnosticError
from npuir.dialects import coreset, npu, stream
from npuir.frontends.ge import ImportResult, import_dump, import_text
from npuir.frontends.load import looks_like_dump
from npuir.tools import import_dump as tool

Attr = tuple[str, str, object]  # key, kind (s, i, f, b, list_i, list_f), value


def desc(dtype: str = "DT_FLOAT16", shape: Sequence[int] = (4, 4), extra: str = "") -> str:
    dims = " ".join(f"dim: {d}" for d in shape)
    return f'output_desc {{ dtype: {dtype} shape {{ {dims} }} layout: "ND" {extra}}}'


def attr(key: str, kind: str, value: object) -> str:
    if kind == "s":
        body = f's: "{value}"'
    elif kind.startswith("list_"):
        assert isinstance(value, Sequence)
        body = "list { " + " ".join(f"{kind[5:]}: {v}" for v in value) + " }"
    else:
        body = f"{kind}: {value}"
    return f'attr {{ key: "{key}" value {{ {body} }} }}'


def op(
    name: str,
    type: str,
    inputs: Sequence[str] = (),
    attrs: Sequence[Attr] = (),
    outs: Sequence[str] | None = None,
) -> str:
    """One GE `op { }` block on one line (so its line is easy to name in a test)."""
    ins = " ".join(f'input: "{i}"' for i in inputs)
    ats = " ".join(attr(*a) for a in attrs)
    descs = " ".join(outs if outs is not None else [desc()])
    return f'op {{ name: "{name}" type: "{type}" {ins} {ats} {descs} }}'


def graph(*ops: str, name: str = "g") -> str:
    return f'name: "{name}"\n' + "\n".join(ops) + "\n"


def data(name: str, dtype: str = "DT_FLOAT16", shape: Sequence[int] = (4, 4)) -> str:
    return op(name, "Data", outs=[desc(dtype, shape)])


def run(text: str, filename: str = "dump.txt", **kw: object) -> ImportResult:
    return import_text(make_context(), text, filename, **kw)  # type: ignore[arg-type]


def body_ops(module: ModuleOp) -> list[Operation]:
    fn = next(o for o in module.ops if isinstance(o, FuncOp))
    return [o for o in fn.walk() if o is not fn]


def names(module: ModuleOp) -> list[str]:
    return [o.name for o in body_ops(module)]


def error_of(text: str, filename: str = "dump.txt", **kw: object) -> str:
    ctx = make_context()
    with pytest.raises(DiagnosticError) as info:
        import_text(ctx, text, filename, **kw)  # type: ignore[arg-type]
    return ctx.diagnostics.render(info.value.diagnostic)


# --------------------------------------------------------------------------- shapes


def test_graphdef_txt_maps_data_ops_and_netoutput_with_names_and_locations() -> None:
    text = graph(
        data("x"),
        data("y"),
        op("add1", "Add", ["x:0", "y:0"]),
        op("out", "NetOutput", ["add1:0"], outs=[]),
    )
    result = run(text)
    fn = next(iter(result.module.ops))
    assert isinstance(fn, FuncOp) and fn.sym_name.data == "g"
    assert fn.arg_attrs is not None
    assert [d.data[npu.OP_NAME] for d in fn.arg_attrs] == [StringAttr("x"), StringAttr("y")]
    add, ret = body_ops(result.module)
    assert add.name == "npu.add" and add.attributes[npu.OP_NAME] == StringAttr("add1")
    assert isinstance(add.location, FileLineColLoc)
    assert (add.location.filename.data, add.location.line.data, add.location.column.data) == (
        "dump.txt",
        4,
        1,
    )
    assert ret.name == "func.return" and ret.operands[0] is add.results[0]
    assert result.summary.by_type["Add"] == {"npu.add": 1}


def test_modeldef_picks_the_first_graph_or_the_named_one() -> None:
    g1 = 'graph { name: "a" ' + data("x") + " " + op("o", "NetOutput", ["x:0"], outs=[]) + " }"
    g2 = (
        'graph { name: "b" '
        + data("x")
        + op("r", "Relu", ["x:0"])
        + op("o", "NetOutput", ["r:0"], outs=[])
        + " }"
    )
    text = g1 + "\n" + g2 + "\n"
    first = run(text)
    assert names(first.module) == ["func.return"]
    assert "holds 2 graphs; imported 'a'" in first.warnings[0].message
    second = run(text, graph="b")
    assert names(second.module) == ["npu.relu", "func.return"] and not second.warnings
    assert "no graph named 'c' in the dump (it has 'a', 'b')" in error_of(text, graph="c")


def _pbtxt_attr(key: str, ge_text: str) -> str:
    return f'attr {{ key: "{key}" value {{ s: {ge_text!r} }} }}'


PB_DESC = 'dtype: DT_FLOAT16\\nshape {\\n  dim: 4\\n  dim: 4\\n}\\nlayout: "ND"\\n'


def pb_node(
    name: str, type: str, inputs: Sequence[str] = (), attrs: str = "", out: bool = True
) -> str:
    ins = " ".join(f'input: "{i}"' for i in inputs)
    o = f'attr {{ key: "[o]y" value {{ s: \'name: "y"\\n{PB_DESC}\' }} }}' if out else ""
    return f'node {{ name: "{name}" op: "{type}" {ins} {attrs} {o} }}'


def test_pbtxt_parses_attribute_strings_and_control_inputs() -> None:
    label = 'attr { key: "_user_stream_label" value { s: \'s: "1"\\n\' } }'
    text = "\n".join(
        [
            pb_node("a", "Data"),
            pb_node("b", "Data"),
            pb_node("s", "Add", ["a", "b:0"]),
            pb_node("w", "Identity", ["b:0", "^s"], label),
            pb_node("m", "MatMul", ["a:0", "w:0"], label),
            pb_node("o", "NetOutput", ["m:0"], out=False),
        ]
    )
    result = run(text + "\n", filename="seed.pbtxt")
    assert names(result.module) == [
        "npu.add",
        "stream.switch",
        "stream.wait_tensor",
        "npu.matmul",
        "stream.yield",
        "func.return",
    ]
    fn = next(iter(result.module.ops))
    assert isinstance(fn, FuncOp) and fn.sym_name.data == "seed"
    assert result.summary.by_type["Identity"] == {"stream.wait_tensor": 1}


def test_pbtxt_error_inside_an_attribute_string_points_at_the_string() -> None:
    bad = "attr { key: \"_user_stream_label\" value { s: 's: {\\n' } }"
    text = pb_node("a", "Data") + "\n" + pb_node("r", "Relu", ["a:0"], bad) + "\n"
    rendered = error_of(text, filename="d.pbtxt")
    assert rendered.startswith("d.pbtxt:2:")
    assert "attribute '_user_stream_label': unexpected end of input" in rendered


# --------------------------------------------------------------------------- mapping rules


def test_const_is_an_argument_marked_ge_const() -> None:
    text = graph(
        op("c", "Const", outs=[desc()]),
        data("x"),
        op("m", "Mul", ["x:0", "c:0"]),
        op("o", "NetOutput", ["m:0"], outs=[]),
    )
    fn = next(iter(run(text).module.ops))
    assert isinstance(fn, FuncOp) and fn.arg_attrs is not None
    assert fn.arg_attrs.data[0].data[CONST] == UnitAttr()
    assert CONST not in fn.arg_attrs.data[1].data


CONST = "ge.const"


def test_end_ops_are_the_returned_values_in_file_order() -> None:
    text = graph(
        data("x"),
        op("r", "Relu", ["x:0"]),
        op("e0", "End", ["x:0"], outs=[]),
        op("e1", "End", ["r:0"], outs=[]),
    )
    (_, ret) = body_ops(run(text).module)
    assert len(ret.operands) == 2 and ret.operands[1].owner.name == "npu.relu"  # type: ignore[union-attr]


def test_identity_without_control_is_forwarded() -> None:
    text = graph(
        data("x"),
        op("i", "Identity", ["x:0"]),
        op("r", "Relu", ["i:0"]),
        op("o", "NetOutput", ["r:0"], outs=[]),
    )
    result = run(text)
    assert names(result.module) == ["npu.relu", "func.return"]
    assert result.summary.by_type["Identity"] == {"forwarded (no op)": 1}


def test_control_input_on_another_op_waits_its_first_operand() -> None:
    text = graph(
        data("x"),
        data("y"),
        op("a", "Exp", ["x:0"]),
        op("b", "Add", ["x:0", "y:0", "a:-1"]),
        op("o", "NetOutput", ["a:0", "b:0"], outs=[]),
    )
    result = run(text)
    exp, wait, add, _ = body_ops(result.module)
    assert wait.name == "stream.wait_tensor" and wait.operands[1] is exp.results[0]
    assert add.operands[0] is wait.results[0]
    assert result.summary.by_type["Add"] == {"stream.wait_tensor + npu.add": 1}


def test_control_input_on_an_op_without_data_inputs_is_a_warning() -> None:
    text = graph(
        data("x"),
        op("c", "Const", ["x:-1"]),
        op("r", "RandomSeed", ["x:-1"]),
        op("o", "NetOutput", ["c:0", "r:0"], outs=[]),
    )
    messages = [w.message for w in run(text).warnings]
    assert any("'c' is dropped: a function argument is ready" in m for m in messages)
    assert any("'r' has no data input to wait" in m for m in messages)


def test_consecutive_ops_with_one_stream_label_share_a_scope_and_yield_what_leaves() -> None:
    s1 = [("_user_stream_label", "s", "1"), ("_user_stream_priority", "s", "2")]
    text = graph(
        data("x"),
        op("a", "Exp", ["x:0"], s1),
        op("b", "Relu", ["a:0"], s1),
        op("c", "Neg", ["x:0"]),
        op("d", "Sqrt", ["c:0"], s1),
        op("o", "NetOutput", ["b:0", "d:0"], outs=[]),
    )
    module = run(text).module
    switches = [o for o in body_ops(module) if isinstance(o, stream.SwitchOp)]
    assert [(s.tag_name, s.priority_value, len(s.results)) for s in switches] == [
        ("1", 2, 1),
        ("1", 2, 1),
    ]
    first = list(switches[0].body.ops)
    assert [o.name for o in first] == ["npu.exp", "npu.relu", "stream.yield"]
    assert first[-1].operands[0] is first[1].results[0]


def test_core_limits_become_a_coreset_limit_inside_the_stream_scope() -> None:
    lim = [
        ("_user_stream_label", "s", "2"),
        ("_op_aicore_num", "s", "6"),
        ("_op_vectorcore_num", "s", "12"),
    ]
    text = graph(data("x"), op("a", "Exp", ["x:0"], lim), op("o", "NetOutput", ["a:0"], outs=[]))
    ops = body_ops(run(text).module)
    assert [o.name for o in ops] == [
        "stream.switch",
        "coreset.limit",
        "npu.exp",
        "coreset.yield",
        "stream.yield",
        "func.return",
    ]
    limit = ops[1]
    assert isinstance(limit, coreset.LimitOp) and (limit.count("cube"), limit.count("vector")) == (
        6,
        12,
    )


def test_fractal_layouts_use_the_origin_shape() -> None:
    origin = (
        'attr { key: "origin_format" value { s: "NCHW" } } '
        'attr { key: "origin_shape" value { list { i: 1 i: 32 i: 4 i: 4 } } }'
    )
    stored = (
        'output_desc { dtype: DT_FLOAT16 shape { dim: 1 dim: 2 dim: 4 dim: 4 dim: 16 } layout: "NC1HWC0" '
        + origin
        + " }"
    )
    text = graph(op("x", "PlaceHolder", outs=[stored]), op("e", "End", ["x:0"], outs=[]))
    fn = next(iter(run(text).module.ops))
    assert isinstance(fn, FuncOp)
    assert str(fn.function_type.inputs.data[0]) == "tensor<1x32x4x4xf16>"


def test_ge_dtypes_map_to_element_types_including_unsigned() -> None:
    text = graph(
        data("a", "DT_UINT64", (2,)),
        data("b", "DT_UINT8", (2,)),
        data("c", "DT_INT8", (2,)),
        data("d", "DT_BF16", (2,)),
        data("e", "DT_BOOL", (2,)),
        op("o", "NetOutput", ["a:0"], outs=[]),
    )
    fn = next(iter(run(text).module.ops))
    assert isinstance(fn, FuncOp)
    got = [str(t) for t in fn.function_type.inputs.data]
    assert got == [
        "tensor<2xui64>",
        "tensor<2xui8>",
        "tensor<2xi8>",
        "tensor<2xbf16>",
        "tensor<2xi1>",
    ]


def test_unknown_type_becomes_opaque_with_one_warning_per_type_and_an_engine() -> None:
    host = [("_ge_attr_op_kernel_lib_name", "s", "DNN_VM_HOST_CPU_OP_STORE")]
    text = graph(
        data("x"),
        op("q1", "AscendQuant", ["x:0"], outs=[desc("DT_INT8")]),
        op("q2", "AscendQuant", ["x:0"], outs=[desc("DT_INT8")]),
        op("h", "Frobnicate", ["x:0"], host),
        op("o", "NetOutput", ["q1:0", "q2:0", "h:0"], outs=[]),
    )
    result = run(text)
    opaque = [o for o in body_ops(result.module) if isinstance(o, npu.OpaqueOp)]
    assert [(o.ge_type.data, o.engine) for o in opaque] == [
        ("AscendQuant", npu.Engine.VECTOR),
        ("AscendQuant", npu.Engine.VECTOR),
        ("Frobnicate", npu.Engine.AICPU),
    ]
    messages = [w.message for w in result.warnings]
    assert messages == [
        "GE type 'AscendQuant' is not in the op table: 2 op(s) imported as npu.opaque (engine vector)",
        "GE type 'Frobnicate' is not in the op table: 1 op(s) imported as npu.opaque (engine aicpu)",
    ]
    assert result.warnings[0].location is not None and result.warnings[0].location.line == 3
    assert result.summary.to_json()["types"]["AscendQuant"] == {
        "count": 2,
        "became": {"npu.opaque": 2},
    }


def test_strict_refuses_unknown_types_at_the_first_op() -> None:
    text = graph(data("x"), op("q", "AscendQuant", ["x:0"]), op("o", "NetOutput", ["q:0"], outs=[]))
    rendered = error_of(text, strict=True)
    assert rendered.startswith("dump.txt:3:1: error: GE type 'AscendQuant' is not in the op table")
    assert "--strict" in rendered


def test_attributes_an_op_cannot_express_fall_back_to_opaque_with_a_warning() -> None:
    text = graph(
        data("x"),
        data("y"),
        op("e", "Eltwise", ["x:0", "y:0"], [("mode", "i", 1), ("coeff", "list_f", [0.5, 1.0])]),
        op("o", "NetOutput", ["e:0"], outs=[]),
    )
    result = run(text)
    assert names(result.module) == ["npu.opaque", "func.return"]
    assert result.summary.by_type["Eltwise"] == {"npu.opaque (fallback)": 1}
    assert "eltwise coefficients other than 1" in result.warnings[0].message


def test_a_declared_element_type_change_becomes_a_cast() -> None:
    text = graph(
        data("x"),
        op("r", "LeakyRelu", ["x:0"], [("negative_slope", "f", 0.1)], outs=[desc("DT_FLOAT")]),
        op("o", "NetOutput", ["r:0"], outs=[]),
    )
    result = run(text)
    assert names(result.module) == ["npu.leaky_relu", "npu.cast", "func.return"]
    assert "tensor<4x4xf32>" in print_ir(result.module)


def test_convolution_pooling_eltwise_and_layout_rules() -> None:
    nchw = 'attr { key: "origin_format" value { s: "NCHW" } }'
    x = op("x", "Data", outs=[desc(shape=(1, 3, 8, 8), extra=nchw)])
    w = op("w", "Const", outs=[desc(shape=(4, 3, 3, 3), extra=nchw)])
    conv = op(
        "c",
        "Conv2D",
        ["x:0", "w:0"],
        [("strides", "list_i", [1, 1, 2, 2]), ("pads", "list_i", [1, 1, 1, 1])],
        outs=[desc(shape=(1, 4, 4, 4))],
    )
    pool = op(
        "p",
        "Pooling",
        ["c:0"],
        [("mode", "i", 0), ("window", "list_i", [3, 3]), ("stride", "list_i", [2, 2])],
        outs=[desc(shape=(1, 4, 2, 2))],
    )
    gpool = op(
        "g",
        "Pooling",
        ["c:0"],
        [("mode", "i", 1), ("global_pooling", "b", "true")],
        outs=[desc(shape=(1, 4, 1, 1))],
    )
    elt = op(
        "e", "Eltwise", ["c:0", "c:0", "c:0"], [("mode", "i", 2)], outs=[desc(shape=(1, 4, 4, 4))]
    )
    trans = op(
        "t",
        "TransData",
        ["e:0"],
        [("src_format", "s", "NC1HWC0"), ("dst_format", "s", "NCHW")],
        outs=[desc(shape=(1, 4, 4, 4))],
    )
    out = op("o", "NetOutput", ["p:0", "g:0", "t:0"], outs=[])
    result = run(graph(x, w, conv, pool, gpool, elt, trans, out))
    assert names(result.module) == [
        "npu.conv2d",
        "npu.pool2d",
        "npu.pool2d",
        "npu.maximum",
        "npu.maximum",
        "npu.layout_transform",
        "func.return",
    ]
    assert not result.warnings
    text = print_ir(result.module)
    assert "strides = array<i64: 2, 2>" in text and "ceil_mode" in text


def test_fully_connection_with_matrix_weights_is_a_1x1_convolution() -> None:
    text = graph(
        op("x", "Data", outs=[desc("DT_INT8", (1, 8, 1, 1))]),
        op("w", "Const", outs=[desc("DT_INT8", (5, 8))]),
        op("b", "Const", outs=[desc("DT_INT32", (5,))]),
        op("f", "FullyConnection", ["x:0", "w:0", "b:0"], outs=[desc("DT_INT32", (1, 5, 1, 1))]),
        op("o", "NetOutput", ["f:0"], outs=[]),
    )
    result = run(text)
    assert names(result.module) == ["npu.reshape", "npu.reshape", "npu.conv2d", "func.return"]


def test_reduce_transpose_concat_and_collective_rules_read_shapes_when_attributes_are_absent() -> (
    None
):
    text = graph(
        data("x", shape=(2, 3, 4)),
        op("ax", "Const", outs=[desc("DT_INT32", (1,))]),
        op(
            "s",
            "ReduceSum",
            ["x:0", "ax:0"],
            [("keep_dims", "b", "false")],
            outs=[desc(shape=(2, 4))],
        ),
        op("t", "Transpose", ["x:0", "ax:0"], outs=[desc(shape=(4, 2, 3))]),
        op("c", "ConcatV2", ["x:0", "x:0", "ax:0"], outs=[desc(shape=(2, 6, 4))]),
        op("g", "HcomAllGather", ["x:0"], [("group", "s", "tp")], outs=[desc(shape=(8, 3, 4))]),
        op("o", "NetOutput", ["s:0", "t:0", "c:0", "g:0"], outs=[]),
    )
    result = run(text)
    assert not result.warnings
    text_ir = print_ir(result.module)
    assert "npu.reduce_sum %0 {axes = array<i64: 1>" in text_ir
    assert "perm = array<i64: 2, 0, 1>" in text_ir
    assert "axis = 1 : i64" in text_ir
    assert 'group_size = 4 : i64, group = "tp"' in text_ir


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("ops", "where", "message"),
    [
        (
            [data("x"), op("r", "Relu", ["y:0"]), op("o", "NetOutput", ["r:0"], outs=[])],
            "dump.txt:3:29",
            "input 'y' of 'r' names no op in the graph",
        ),
        (
            [data("x"), op("r", "Relu", ["x:3"]), op("o", "NetOutput", ["r:0"], outs=[])],
            "dump.txt:3:29",
            "input 'x:3' of 'r': 'x' has 1 output descriptor(s)",
        ),
        (
            [data("x", "DT_COMPLEX64"), op("o", "NetOutput", ["x:0"], outs=[])],
            "dump.txt:2:",
            "unsupported element type DT_COMPLEX64 in output 0 of 'x'",
        ),
        (
            [data("x"), data("x")],
            "dump.txt:3:1",
            "a second op is named 'x'",
        ),
        (
            [op("a", "Relu", ["b:0"]), op("b", "Relu", ["a:0"])],
            "dump.txt:2:1",
            "op 'a' is on a cycle of inputs",
        ),
        (
            [op("x", "Data", outs=["output_desc { dtype: DT_FLOAT shape { dim: -2 } }"])],
            "dump.txt:2:",
            "has dim -2; npuir needs a known rank",
        ),
        (
            [op("x", "Data", outs=["output_desc { dtype: DT_FLOAT shape { dim: -5 } }"])],
            "dump.txt:2:",
            "output 0 of 'x' has dim -5, outside -1 (dynamic) .. 9223372036854775807",
        ),
        (
            [
                op(
                    "x",
                    "Data",
                    outs=["output_desc { dtype: DT_FLOAT shape { dim: 1" + "0" * 20 + " } }"],
                )
            ],
            "dump.txt:2:",
            "has dim 1" + "0" * 20 + ", outside -1 (dynamic) .. 9223372036854775807",
        ),
        (
            [
                op("x", "Data", outs=["output_desc { shape { dim: 2 } }"]),
                op("o", "NetOutput", ["x:0"], outs=[]),
            ],
            "dump.txt:2:",
            "output 0 of 'x' has no dtype",
        ),
    ],
)
def test_graph_errors_are_located(ops: list[str], where: str, message: str) -> None:
    rendered = error_of(graph(*ops))
    assert rendered.startswith(where), rendered
    assert message in rendered, rendered


def test_a_located_error_for_the_dump_text_and_for_no_graph_at_all() -> None:
    assert error_of('name: "g"\nop {\n  name: "x"\n').startswith(
        "dump.txt:4:1: error: unexpected end of input"
    )
    assert "not a GE or TorchAir graph dump" in error_of('version: "1"\n')


def test_input_inside_the_graph_points_at_its_line() -> None:
    text = 'name: "g"\nop {\n  name: "r"\n  type: "Relu"\n  input: "nope:0"\n}\n'
    assert error_of(text).startswith("dump.txt:5:3: error: input 'nope' of 'r' names no op")


# --------------------------------------------------------------------------- entry points


def test_detection_is_by_content() -> None:
    assert looks_like_dump('name: "g"\nop {\n}')
    assert looks_like_dump("# comment\ngraph {\n}")
    assert looks_like_dump('node {\n  name: "a"\n}')
    assert not looks_like_dump("module {\n}")
    assert not looks_like_dump("func.func @f() {\n  func.return\n}")
    assert not looks_like_dump("// RUN: npuir-opt %s\n")


def test_import_dump_reads_a_file_and_reports_warnings_to_the_context(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "d.txt"
    path.write_text(
        graph(data("x"), op("q", "Foo", ["x:0"]), op("o", "NetOutput", ["q:0"], outs=[]))
    )
    ctx = make_context()
    module = import_dump(ctx, path)
    assert names(module) == ["npu.opaque", "func.return"]
    assert [d.severity for d in ctx.diagnostics.emitted] == ["warning"]
    with pytest.raises(DiagnosticError, match="cannot read"):
        import_dump(ctx, Path(str(tmp_path)) / "missing.txt")


def test_tool_writes_ir_summary_and_json(
    tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "d.txt"
    out = Path(str(tmp_path)) / "d.mlir"
    path.write_text(
        graph(data("x"), op("r", "Relu", ["x:0"]), op("o", "NetOutput", ["r:0"], outs=[]))
    )
    assert tool.run([str(path), "-o", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["ops"] == 3 and summary["types"]["Relu"]["became"] == {"npu.relu": 1}
    assert "npu.relu" in out.read_text()
    assert tool.run([str(path)]) == 0
    captured = capsys.readouterr()
    assert "npu.relu" in captured.out and "Relu" in captured.err
    bad = Path(str(tmp_path)) / "bad.txt"
    bad.write_text("op {\n")
    assert tool.run([str(bad), "-o", str(out)]) == 1
    assert "bad.txt:2:1: error:" in capsys.readouterr().err
    assert "npu.relu" in out.read_text()  # a failing run leaves the old output alone


def test_an_integer_attribute_beyond_i64_is_a_located_error() -> None:
    big = [("_user_stream_label", "s", "1"), ("_user_stream_priority", "i", 2**70)]
    text = graph(data("x"), op("r", "Relu", ["x:0"], big), op("o", "NetOutput", ["r:0"], outs=[]))
    rendered = error_of(text)
    assert rendered.startswith("dump.txt:3:")
    assert f"attribute '_user_stream_priority' of 'r' is {2**70}, outside i64" in rendered


def test_load_takes_mlir_and_dumps_alike(tmp_path: object) -> None:
    from pathlib import Path

    from npuir import load

    dump = Path(str(tmp_path)) / "g.mlir"  # a dump, whatever its suffix
    dump.write_text(
        graph(data("x"), op("r", "Relu", ["x:0"]), op("o", "NetOutput", ["r:0"], outs=[]))
    )
    assert names(load(dump)) == ["npu.relu", "func.return"]
    mlir = Path(str(tmp_path)) / "f.txt"  # MLIR, whatever its suffix
    mlir.write_text("func.func @f() {\n  func.return\n}\n")
    assert names(load(mlir)) == ["func.return"]
    # The library's parse_file is the same loader: it takes the dump too.
    import npuir

    assert names(npuir.parse_file(npuir.make_context(), dump)) == ["npu.relu", "func.return"]
    with open(dump, "rb") as stream:
        assert names(load(stream)) == ["npu.relu", "func.return"]


def test_npuir_import_of_mlir_says_it_needs_no_import(
    tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    """MLIR given to the importer: a located error saying which tools read it, exit 1."""
    from pathlib import Path

    from npuir.tools.import_dump import run as import_tool

    mlir = Path(str(tmp_path)) / "f.txt"
    mlir.write_text("func.func @f() {\n  func.return\n}\n")
    assert import_tool([str(mlir)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{mlir}:1: error: ") and "is MLIR already" in err
    assert "Traceback" not in err


def test_the_op_table_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every tensor descriptor asks for the table: it is read from disk once per process.
    import tomllib

    from npuir.frontends.ge import op_table

    op_table()  # read already, or now
    loads: list[object] = []
    original = tomllib.load

    def counting(*args: object, **kwargs: object) -> object:
        loads.append(1)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tomllib, "load", counting)
    text = graph(
        data("x"),
        data("y"),
        op("add1", "Add", ["x:0", "y:0"]),
        op("out", "NetOutput", ["add1:0"], outs=[]),
    )
    assert names(run(text).module) == ["npu.add", "func.return"]
    assert loads == []


def test_a_syntax_error_comes_before_a_bad_op_met_earlier() -> None:
    # The reader turns each op into a node as it completes it; an op that does not
    # convert (here an input that is not a string) is refused only once the whole text
    # has parsed, in file order: a syntax error later in the file is what is reported,
    # as when the whole text was parsed first.
    good = 'op { name: "x" type: "Data" ' + desc() + " }\n"
    bad = 'op { name: "y" type: "Relu" input: 5 ' + desc() + " }\n"
    also_bad = 'op { name: "z" type: "Relu" input: "x:-7" ' + desc() + " }\n"
    with pytest.raises(DiagnosticError) as info:
        import_text(make_context(), good + bad + also_bad + "op { name: }\n", "d.txt")
    assert info.value.diagnostic.kind == "parse.syntax"
    assert info.value.diagnostic.location is not None
    assert info.value.diagnostic.location.line == 4
    with pytest.raises(DiagnosticError) as info:
        import_text(make_context(), good + also_bad + bad, "d.txt")
    assert info.value.diagnostic.kind == "ge.invalid-dump.negative-output"
    with pytest.raises(DiagnosticError) as info:
        import_text(make_context(), good + bad + also_bad, "d.txt")
    assert info.value.diagnostic.kind == "ge.invalid-dump.input-not-string"


def test_graph_text_names_unnamed_ops_by_type_in_order() -> None:
    # Unnamed ops of one type are `MatMul`, `MatMul_1`, ...; a name an op carries is kept
    # and the next unnamed op skips it (the writer's search resumes per base: it was
    # quadratic in the ops of one type).
    from npuir.api import parse_text
    from npuir.frontends.ge_writer import graph_text

    square = "tensor<8x8xf16>"
    ops = []
    x = "%x"
    for i in range(5):
        named = ' {npu.op_name = "MatMul_1"}' if i == 1 else ""
        ops.append(f"  %m{i} = npu.matmul {x}, %x{named} : ({square}, {square}) -> {square}")
        x = f"%m{i}"
    text = (
        f"func.func @f(%x: {square}) -> {square} {{\n" + "\n".join(ops) + f"\n"
        f"  func.return {x} : {square}\n}}\n"
    )
    dump = graph_text(parse_text(make_context(), text, "f.mlir"), "txt")
    names = [line.split('"')[1] for line in dump.splitlines() if line.startswith("  name:")]
    assert names == ["x", "MatMul", "MatMul_1", "MatMul_2", "MatMul_3", "MatMul_4", "NetOutput"]
    back = import_text(make_context(), dump, "f.txt").module
    assert sum(isinstance(o, npu.MatmulOp) for o in back.walk()) == 5
