"""The `.pt2` reader takes what `torch.export.save` writes: every graph-input kind
(constants, symbolic scalars, lists of them), dunder ATen overloads, sympy-spelled symbols;
what it refuses is a located error naming the input or target; `--json` answers on stdout
even when the import fails.  Archives are laid out by hand (no torch needed)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pt2archive import PROGRAM, build

from npuir.api import print_ir
from npuir.diagnostics import DiagnosticError
from npuir.frontends.pt2 import read_pt2
from npuir.frontends.torch import import_pt2

BIN = Path(sys.executable).parent
SCHEMAS = Path(__file__).resolve().parents[3] / "docs" / "json-schema"

ATEN_DUNDERS = [
    "__and__",
    "__or__",
    "__xor__",
    "__lshift__",
    "__rshift__",
    "__iand__",
    "__ior__",
    "__ixor__",
    "__ilshift__",
    "__irshift__",
]
"""ATen's operators spelled as Python's dunders (all of them in torch 2.13; checked against
torch's registry in test_pt2_models.py)."""


def _tensor(sizes: list[object], dtype: int = 7) -> dict[str, object]:
    return {
        "dtype": dtype,
        "sizes": sizes,
        "requires_grad": False,
        "device": {"type": "cpu", "index": None},
        "strides": [{"as_int": 1} for _ in sizes],
        "storage_offset": {"as_int": 0},
        "layout": 7,
    }


def _program(
    extra: dict[str, Any] | None = None,
    operand: dict[str, Any] | None = None,
    target: str = "torch.ops.aten.mul.Tensor",
    x_sizes: list[object] | None = None,
) -> dict[str, Any]:
    """forward(x: f32[4, 8], *extra) -> target(x, operand): `extra` is one more graph input
    (named `c` in the signature), `operand` the node's second argument (default: x)."""
    program = copy.deepcopy(PROGRAM)
    graph = program["graph_module"]["graph"]
    sizes = x_sizes or [{"as_int": 4}, {"as_int": 8}]
    graph["tensor_values"] = {"x": _tensor(sizes), "y": _tensor(sizes)}
    x = {"as_tensor": {"name": "x"}}
    graph["inputs"] = [x] + ([extra] if extra is not None else [])
    specs: list[dict[str, Any]] = [{"user_input": {"arg": x}}]
    if extra is not None:
        specs.append({"constant_input": {"name": "c", "value": extra}})
    program["graph_module"]["signature"]["input_specs"] = specs
    graph["nodes"] = [
        {
            "target": target,
            "inputs": [
                {"name": "self", "arg": x, "kind": 1},
                {"name": "other", "arg": operand or x, "kind": 1},
            ],
            "outputs": [{"as_tensor": {"name": "y"}}],
            "metadata": {"stack_trace": 'File "/m/model.py", line 7, in forward\n    y = f(x)'},
            "name": "y",
        }
    ]
    graph["outputs"] = [{"as_tensor": {"name": "y"}}]
    return program


def _archive(path: Path, program: dict[str, Any]) -> Path:
    return build(path, {"models/model.json": json.dumps(program, indent=1).encode()})


CONSTANTS = [
    {"as_bool": False},
    {"as_int": 3},
    {"as_float": 0.5},
    {"as_string": "mean"},
    {"as_none": True},
    {"as_ints": [1, 2]},
    {"as_floats": [0.5, 2.0]},
    {"as_bools": [True, False]},
    {"as_strings": ["a", "b"]},
    {"as_sym_int": {"as_int": 5}},
]


@pytest.mark.parametrize("kind", CONSTANTS, ids=lambda k: next(iter(k)))
def test_a_constant_input_is_no_argument(tmp_path: Path, kind: dict[str, Any]) -> None:
    """`use_cache=False` and its kin: torch fixed the value at export, so the function
    takes only the tensor."""
    module = import_pt2(_archive(tmp_path / "c.pt2", _program(kind)))
    text = print_ir(module)
    assert "func.func @forward(%x: tensor<4x8xf32>" in text
    assert "%c" not in text


@pytest.mark.parametrize(
    ("kind", "value"),
    [({"as_int": 3}, "3.0"), ({"as_float": 0.5}, "5.0e-01"), ({"as_bool": True}, "1.0")],
)
def test_a_constant_input_used_as_an_operand_is_an_npu_constant(
    tmp_path: Path, kind: dict[str, Any], value: str
) -> None:
    program = _program(kind, operand={"as_tensor": {"name": "c"}})
    # The node takes the input by name: the placeholder torch makes of it.
    program["graph_module"]["graph"]["nodes"][0]["inputs"][1]["arg"] = {"as_tensor": {"name": "c"}}
    text = print_ir(import_pt2(_archive(tmp_path / "c.pt2", program)))
    constants = [line for line in text.splitlines() if "npu.constant" in line]
    assert len(constants) == 1 and value.split("e")[0] in constants[0], constants
    assert "npu.mul %x, %0" in text


def test_a_symbolic_int_input_is_a_dynamic_dim(tmp_path: Path) -> None:
    """`torch.export` with a `Dim` on an int input: the size is the tensors' `?` dim, and
    the int takes no argument."""
    sizes: list[object] = [{"as_expr": {"expr_str": "s0", "hint": {"as_int": 4}}}, {"as_int": 8}]
    program = _program({"as_sym_int": {"as_name": "s0"}}, x_sizes=sizes)
    program["range_constraints"] = {"s0": {"min_val": 2, "max_val": 64}}
    text = print_ir(import_pt2(_archive(tmp_path / "s.pt2", program)))
    assert "func.func @forward(%x: tensor<?x8xf32>" in text
    assert 'torch.sym_dims = ["s0", ""]' in text
    assert "s0 = array<i64: 2, 64>" in text


def test_a_list_of_symbolic_ints_is_taken(tmp_path: Path) -> None:
    program = _program({"as_sym_ints": [{"as_name": "s0"}, {"as_int": 8}]})
    text = print_ir(import_pt2(_archive(tmp_path / "s.pt2", program)))
    assert "func.func @forward(%x: tensor<4x8xf32>)" in text


def test_a_sympy_spelled_symbol_is_its_name(tmp_path: Path) -> None:
    """What torch writes for a dim `mark_dynamic` (or `set_dim_gears`) made dynamic
    before `torch.export`, when the program has no range for it."""
    srepr = "Symbol('s77', positive=True, integer=True)"
    sizes: list[object] = [{"as_expr": {"expr_str": srepr, "hint": {"as_int": 4}}}, {"as_int": 8}]
    text = print_ir(import_pt2(_archive(tmp_path / "s.pt2", _program(x_sizes=sizes))))
    assert 'torch.sym_dims = ["s77", ""]' in text


@pytest.mark.parametrize(
    "expr",
    [
        "Symbol('s0', positive=__import__('os'))",
        "Symbol(__import__('os').getcwd())",
        "Symbol('s0').evalf()",
    ],
)
def test_only_a_plain_sympy_symbol_is_read(tmp_path: Path, expr: str) -> None:
    sizes: list[object] = [{"as_expr": {"expr_str": expr, "hint": None}}, {"as_int": 8}]
    with pytest.raises(DiagnosticError) as info:
        read_pt2(_archive(tmp_path / "s.pt2", _program(x_sizes=sizes)))
    assert info.value.diagnostic.kind.startswith("pt2.unsafe-entry.")


@pytest.mark.parametrize(
    "arg",
    [
        {"as_custom_obj": {"name": "obj", "class_fqn": "__torch__.C"}},
        {"as_tensors": [{"name": "obj"}]},
        {"as_graph": {"name": "obj"}},
    ],
    ids=lambda a: next(iter(a)),
)
def test_an_input_npuir_cannot_take_names_itself_where_it_is(
    tmp_path: Path, arg: dict[str, Any]
) -> None:
    program = _program()
    program["graph_module"]["graph"]["inputs"].append(arg)
    program["graph_module"]["signature"]["input_specs"].append({"user_input": {"arg": arg}})
    archive = _archive(tmp_path / "bad.pt2", program)
    with pytest.raises(DiagnosticError) as info:
        import_pt2(archive)
    d = info.value.diagnostic
    assert "graph input 'obj' (input 2 of 2)" in d.message
    assert "pass it as a tensor" in d.message  # what to do
    assert d.location is not None and d.location.filename.endswith("m/models/model.json")
    # At the input's name in the program (indented JSON: not line 1).
    text = json.dumps(program, indent=1).splitlines()
    assert '"obj"' in text[d.location.line - 1]
    done = subprocess.run(
        [str(BIN / "npuir-import"), str(archive)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"{archive}/m/models/model.json:{d.location.line}:")


@pytest.mark.parametrize("name", ATEN_DUNDERS)
def test_a_dunder_aten_overload_is_read(tmp_path: Path, name: str) -> None:
    """transformers 5 builds every causal mask with `aten.__and__.Tensor`.  On this
    program's f32 tensors the bitwise ones are a form npuir refuses and the shifts have no
    npu op: either way the overload is read and stands as an opaque op naming it."""
    target = f"torch.ops.aten.{name}.Tensor"
    with pytest.warns(UserWarning, match="imported as npu.opaque"):
        module = import_pt2(_archive(tmp_path / "d.pt2", _program(target=target)))
    assert f'ge_type = "aten.{name}.Tensor"' in print_ir(module)


@pytest.mark.parametrize(
    "target",
    [
        "torch.ops.aten.__class__.mro",  # Python's attributes, reached by torch's getattr
        "torch.ops.aten.__init__.default",
        "torch.ops.aten.__getattr__",
        "torch.ops.aten.add.__call__",
        "torch.ops.load_library.default",  # what torch.ops holds besides namespaces
        "torch.ops.import_module.x.default",
        "torch.ops._private.op.default",
        "torch.ops.aten",
        "_operator.__builtins__",
        "math.__loader__.load_module",
        "builtins.eval",
        "os.system",
    ],
)
def test_a_target_that_is_no_operator_is_refused_where_it_is(tmp_path: Path, target: str) -> None:
    archive = _archive(tmp_path / "t.pt2", _program(target=target))
    with pytest.raises(DiagnosticError) as info:
        read_pt2(archive)
    d = info.value.diagnostic
    assert d.kind == "pt2.unsafe-entry.target" and target in d.message
    assert d.location is not None and d.location.line > 1


def test_a_library_namespace_is_read(tmp_path: Path) -> None:
    """Qwen2-MoE calls `torch.ops.transformers.grouped_mm_fallback`: imported as opaque."""
    target = "torch.ops.transformers.grouped_mm_fallback.default"
    with pytest.warns(UserWarning, match="imported as npu.opaque"):
        module = import_pt2(_archive(tmp_path / "l.pt2", _program(target=target)))
    assert 'ge_type = "transformers.grouped_mm_fallback.default"' in print_ir(module)


def _json(tool: str, *args: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [str(BIN / tool), *args, "--json"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode not in (0, 70) or done.stdout, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    jsonschema.validate(answer, json.loads((SCHEMAS / f"{tool}.schema.json").read_text()))
    return done.returncode, answer


@pytest.mark.parametrize("tool", ["npuir-advise", "npuir-import"])
def test_json_answers_a_refused_archive_on_stdout(tmp_path: Path, tool: str) -> None:
    archive = _archive(tmp_path / "t.pt2", _program(target="os.system"))
    code, answer = _json(tool, str(archive))
    assert code == 1
    error = answer["error"]
    assert error["kind"] == "pt2.unsafe-entry.target"
    assert error["location"]["file"] == f"{archive}/m/models/model.json"
    assert error["location"]["line"] > 1


@pytest.mark.parametrize("tool", ["npuir-advise", "npuir-import"])
def test_json_answers_a_missing_file_on_stdout(tmp_path: Path, tool: str) -> None:
    code, answer = _json(tool, str(tmp_path / "absent.pt2"))
    assert code == 1 and answer["error"]["kind"] == "input.unreadable"


def test_import_json_summarises_an_archive_per_aten_target(tmp_path: Path) -> None:
    out = tmp_path / "out.mlir"
    # `<<` has no npu op (`&` of f32 tensors would be a form npuir refuses, a bitwise op on
    # floats: another kind of warning).
    archive = _archive(tmp_path / "d.pt2", _program(target="torch.ops.aten.__lshift__.Tensor"))
    code, answer = _json("npuir-import", str(archive), "-o", str(out))
    assert code == 0 and answer["ops"] == 1
    assert answer["types"] == {"aten.__lshift__.Tensor": {"count": 1, "became": {"npu.opaque": 1}}}
    assert [w["kind"] for w in answer["warnings"]] == ["torch.import-warning"]
    assert "npu.opaque" in out.read_text()


def test_an_srepr_expression_is_read(tmp_path: Path) -> None:
    """torch 2.13 writes every symbolic size in sympy's `srepr`."""
    expr = "Mul(Integer(2), Symbol('s0', positive=True, integer=True))"
    sizes: list[object] = [{"as_expr": {"expr_str": expr, "hint": {"as_int": 4}}}, {"as_int": 8}]
    text = print_ir(import_pt2(_archive(tmp_path / "s.pt2", _program(x_sizes=sizes))))
    assert "func.func @forward(%x: tensor<?x8xf32>" in text


@pytest.mark.parametrize("metadata", [{"stack_trace": 3}, [], None, {"stack_trace": ["x"]}])
def test_node_metadata_that_is_not_text_is_no_location(tmp_path: Path, metadata: object) -> None:
    """Fuzz case 3454115026: a stack trace that is not text was a TypeError."""
    program = _program()
    program["graph_module"]["graph"]["nodes"][0]["metadata"] = metadata
    text = print_ir(import_pt2(_archive(tmp_path / "m.pt2", program)))
    assert "npu.mul %x, %x" in text
