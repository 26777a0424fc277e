"""A `.pt2` is imported without torch (`npuir.frontends.pt2_graph`): the module is the one
torch's own deserializer leads to, and a program the importer cannot read is a located
error, never a traceback."""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pt2archive import PROGRAM, build

from npuir.api import print_ir
from npuir.diagnostics import DiagnosticError
from npuir.frontends.pt2_graph import Pt2GraphError, graph_of
from npuir.frontends.torch import import_pt2, library_frame


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


def _node(target: str, inputs: list[tuple[str, dict[str, Any]]], outputs: list[Any]) -> Any:
    return {
        "target": target,
        "inputs": [{"name": n, "arg": a, "kind": 1} for n, a in inputs],
        "outputs": outputs,
        "metadata": {"stack_trace": 'File "/m/model.py", line 7, in forward\n    y = f(x)'},
        "name": outputs[0]["as_tensor"]["name"] if "as_tensor" in outputs[0] else "chunk",
    }


def _program() -> dict[str, Any]:
    """x: f32[4, 8] -> relu(x), chunked in two along dim 1, the halves added, cast to f16,
    inside a stream scope -- several results, scalar types and the air:: ops."""
    program = copy.deepcopy(PROGRAM)
    graph = program["graph_module"]["graph"]
    t = {"as_tensor": {"name": "x"}}
    graph["inputs"] = [t]
    graph["tensor_values"] = {
        "x": _tensor([{"as_int": 4}, {"as_int": 8}]),
        "relu": _tensor([{"as_int": 4}, {"as_int": 8}]),
        "getitem": _tensor([{"as_int": 4}, {"as_int": 4}]),
        "getitem_1": _tensor([{"as_int": 4}, {"as_int": 4}]),
        "add": _tensor([{"as_int": 4}, {"as_int": 4}]),
        "to": _tensor([{"as_int": 4}, {"as_int": 4}], 6),
    }
    graph["nodes"] = [
        _node(
            "torch.ops.air.scope_enter.default",
            [
                ("keys", {"as_strings": ["_user_stream_label"]}),
                ("values", {"as_strings": ["s1"]}),
            ],
            [{"as_none": True}],
        ),
        _node("torch.ops.aten.relu.default", [("self", t)], [{"as_tensor": {"name": "relu"}}]),
        _node(
            "torch.ops.aten.chunk.default",
            [
                ("self", {"as_tensor": {"name": "relu"}}),
                ("chunks", {"as_int": 2}),
                ("dim", {"as_int": 1}),
            ],
            [{"as_tensors": [{"name": "getitem"}, {"name": "getitem_1"}]}],
        ),
        _node(
            "torch.ops.aten.add.Tensor",
            [
                ("self", {"as_tensor": {"name": "getitem"}}),
                ("other", {"as_tensor": {"name": "getitem_1"}}),
            ],
            [{"as_tensor": {"name": "add"}}],
        ),
        _node("torch.ops.air.scope_exit.default", [], [{"as_none": True}]),
        _node(
            "torch.ops.aten._to_copy.default",
            [("self", {"as_tensor": {"name": "add"}}), ("dtype", {"as_scalar_type": 6})],
            [{"as_tensor": {"name": "to"}}],
        ),
    ]
    graph["nodes"][-2]["name"] = "scope_exit"
    graph["nodes"][0]["name"] = "scope_enter"
    graph["outputs"] = [{"as_tensor": {"name": "to"}}]
    return program


def _archive(path: Path, program: dict[str, Any]) -> Path:
    return build(path, {"models/model.json": json.dumps(program).encode()})


def test_a_pt2_imports_without_torch(tmp_path: Path) -> None:
    archive = _archive(tmp_path / "m.pt2", _program())
    script = (
        "import sys\n"
        "from npuir.api import print_ir\n"
        "from npuir.frontends.torch import import_pt2\n"
        f"print(print_ir(import_pt2({str(archive)!r})))\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert 'stream.switch "s1"' in text
    assert text.count("npu.slice") == 2  # the chunk's two halves
    assert "npu.cast" in text or "tensor<4x4xf16>" in text


def test_the_graph_reads_results_and_arguments_as_torch_would() -> None:
    graph = graph_of(_program())
    names = [n.name for n in graph.nodes]
    # A list result: the call, then one getitem per element, named as its results.
    chunk = names.index("chunk")
    assert names[chunk + 1 : chunk + 3] == ["getitem", "getitem_1"]
    getitem = graph.nodes[chunk + 1]
    assert getitem.target == "_operator.getitem" and getitem.args == (graph.nodes[chunk], 0)
    cast = next(n for n in graph.nodes if n.target == "aten._to_copy.default")
    assert str(cast.args[1]) == "torch.float16"
    assert graph.nodes[0].op == "placeholder" and graph.nodes[-1].op == "output"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda g: g["nodes"][1]["inputs"][0].update(arg={"as_graph": {}}), "kind 'as_graph'"),
        (lambda g: g["tensor_values"].pop("relu"), "'relu' has no metadata"),
        (lambda g: g["tensor_values"]["x"].update(dtype=99), "scalar type 99"),
        (lambda g: g["nodes"].pop(1), "'relu' is used before a node makes it"),
        (lambda g: g["nodes"][1].update(inputs=[{"name": "x", "arg": 3, "kind": 1}]), "argument"),
        (
            lambda g: g.update(inputs=[{"as_custom_obj": {"name": "obj", "class_fqn": "C"}}]),
            "graph input 'obj' \\(input 1 of 1\\) is of kind 'as_custom_obj'",
        ),
    ],
)
def test_a_program_the_importer_cannot_read_is_a_located_error(
    tmp_path: Path, mutate: Any, message: str
) -> None:
    program = _program()
    mutate(program["graph_module"]["graph"])
    archive = _archive(tmp_path / "bad.pt2", program)
    with pytest.raises(DiagnosticError, match=message) as info:
        import_pt2(archive)
    assert info.value.diagnostic.location is not None
    with pytest.raises(Pt2GraphError):
        graph_of(program)


def test_arguments_an_operator_does_not_take_are_a_located_error(tmp_path: Path) -> None:
    program = _program()
    # relu given an int where its tensor goes: the node's line, not a traceback.
    program["graph_module"]["graph"]["nodes"][1]["inputs"][0]["arg"] = {"as_int": 3}
    with pytest.raises(DiagnosticError) as info:
        import_pt2(_archive(tmp_path / "bad.pt2", program))
    assert info.value.diagnostic.location is not None
    assert info.value.diagnostic.location.filename == "/m/model.py"


def test_mutated_programs_give_a_located_error_or_a_module(tmp_path: Path) -> None:
    """A small fuzz run of the graph reader and the importer on it: values swapped, keys
    dropped, kinds changed -- a `DiagnosticError` with a location, or a module."""
    rng = random.Random(7)
    leaves: list[Any] = [None, 0, -1, 2**40, 1.5, "x", "relu", [], {}, [{"as_int": 1}], True]
    for case in range(150):
        program = _program()
        graph = program["graph_module"]["graph"]
        for _ in range(rng.randint(1, 3)):
            node = rng.choice(graph["nodes"])
            where = rng.choice(["inputs", "outputs", "target", "name", "metadata"])
            if where == "inputs" and node["inputs"]:
                arg = rng.choice(node["inputs"])
                arg["arg"] = rng.choice(
                    [
                        {"as_int": rng.choice(leaves)},
                        {"as_tensor": {"name": rng.choice(leaves)}},
                        rng.choice(leaves),
                    ]
                )
            elif where == "outputs":
                node["outputs"] = rng.choice([[], [{"as_tensor": {"name": "nope"}}], leaves])
            else:
                node[where] = rng.choice(leaves)
        path = _archive(tmp_path / f"m{case}.pt2", program)
        try:
            print_ir(import_pt2(path))
        except DiagnosticError as exc:
            assert exc.diagnostic.location is not None, (case, exc.diagnostic.message)


@pytest.mark.torch
def test_a_real_archive_gives_the_module_torch_gives(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from npuir.frontends import torch_scope
    from npuir.frontends.pt2 import exported_program, read_pt2
    from npuir.frontends.torch import import_exported_program

    class M(torch.nn.Module):  # type: ignore[name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(16, 32)

        def forward(self, x: Any) -> Any:
            a, b = self.lin(x).chunk(2, dim=-1)
            with torch_scope.npu_stream_switch("s1"):
                w, i = torch.topk(torch.softmax(a, dim=-1), 2, dim=-1)
            return (b * 0.5).to(torch.float16), w.sum(dim=-1, keepdim=True) / 3, i

    torch_scope.register()  # the air:: ops, before the trace needs them
    torch.manual_seed(0)
    path = tmp_path / "m.pt2"
    torch.export.save(torch.export.export(M(), (torch.randn(8, 16),)), str(path))
    from_torch = import_exported_program(exported_program(read_pt2(path)))
    assert print_ir(import_pt2(path), debuginfo=True) == print_ir(from_torch, debuginfo=True)


@pytest.mark.parametrize(
    "library",
    [
        "/elsewhere/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py",
        "C:\\Python311\\Lib\\site-packages\\torch\\nn\\functional.py",
        "/usr/lib/python3/dist-packages/npuir/frontends/torchair/scope.py",
    ],
)
def test_library_frames_of_another_environment_are_not_the_models_lines(
    tmp_path: Path, library: str
) -> None:
    # An archive keeps the paths of the environment that exported it: its torch frames
    # must not become the model's lines here (another venv, or a reader without torch).
    program = _program()
    for node in program["graph_module"]["graph"]["nodes"]:
        node["metadata"]["stack_trace"] += f'\n  File "{library}", line 99, in forward\n    x'
    text = print_ir(import_pt2(_archive(tmp_path / "m.pt2", program)), debuginfo=True)
    assert 'loc("/m/model.py":7:' in text
    assert "line 99" not in text and ":99:" not in text


@pytest.mark.parametrize(
    ("path", "library"),
    [
        ("/home/u/model.py", False),
        ("/x/venv/lib/python3.12/site-packages/transformers/models/llama/modeling.py", False),
        ("/x/venv/lib/python3.12/site-packages/torch/_dynamo/eval_frame.py", True),
    ],
)
def test_only_torch_and_npuir_are_library_frames(path: str, library: bool) -> None:
    # A model installed as a package (transformers) is still the model's code.
    assert library_frame(path) is library
