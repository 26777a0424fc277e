"""The registries: every pass and dialect is named, documented and discoverable.

Cheap checks that catch drift between the registries, the classes they load,
the tools that list them and xDSL's plugin mechanism.
"""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.universe import Universe

import npuir
from npuir.dialects import DIALECTS
from npuir.dialects.npu import NPU_OPS, ConstantOp, Engine, NpuOp
from npuir.passmanager.registry import PassRegistry
from npuir.transforms import PASSES

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SEED = ROOT / "examples" / "seed_multistream.mlir"


def _dialect(name: str) -> Dialect:
    return DIALECTS[name]()


def _pass(name: str) -> type[ModulePass]:
    return PASSES[name]()


def _summary(pass_cls: type[ModulePass]) -> str:
    return (pass_cls.__doc__ or "").strip().splitlines()[0]


# --------------------------------------------------------------------------
# Passes
# --------------------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(PASSES))
def test_pass_key_equals_its_name(key: str) -> None:
    assert _pass(key).name == key


@pytest.mark.parametrize("key", sorted(PASSES))
def test_pass_has_a_one_sentence_summary(key: str) -> None:
    doc = _pass(key).__doc__
    assert doc and doc.strip(), f"pass '{key}' has no docstring"
    assert _summary(_pass(key)).endswith("."), f"pass '{key}': summary line is not a sentence"


def test_list_passes_prints_every_pass_with_its_summary() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "npuir.tools.opt", "--list-passes"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = {line.split(maxsplit=1)[0]: line for line in proc.stdout.splitlines() if line.strip()}
    for key in PASSES:
        assert key in lines, f"--list-passes does not list '{key}'"
        assert lines[key].split(maxsplit=1)[1].strip() == _summary(_pass(key))


def test_no_product_pass_is_a_test_pass() -> None:
    """The `test-*` passes (printing an analysis for lit) are test code: they register only
    when a test loads test/lib/analysis_passes.py, never beside npuir's own passes."""
    registry = PassRegistry()
    product = [*registry.names(), *registry.pipelines]
    assert product and [name for name in product if name.startswith("test-")] == []
    lib = Path(__file__).resolve().parents[1] / "lib" / "analysis_passes.py"
    loaded = registry.load_module(str(lib))
    assert loaded and all(name.startswith("test-") for name in loaded)


# --------------------------------------------------------------------------
# Dialects
# --------------------------------------------------------------------------


def test_dialect_registry_names_match() -> None:
    for name in DIALECTS:
        assert _dialect(name).name == name
        for op in _dialect(name).operations:
            assert op.name.startswith(f"{name}."), op.name


ALL_OPS = [(d, op) for d in sorted(DIALECTS) for op in _dialect(d).operations]
ALL_ATTRS = [(d, attr) for d in sorted(DIALECTS) for attr in _dialect(d).attributes]


@pytest.mark.parametrize(("dialect", "op"), ALL_OPS, ids=[op.name for _, op in ALL_OPS])
def test_op_has_a_docstring_with_an_mlir_example(dialect: str, op: type) -> None:
    doc = op.__doc__
    assert doc and doc.strip(), f"{op.name} has no docstring"
    assert "```mlir" in doc, f"{op.name}'s docstring has no ```mlir example"
    example = doc.split("```mlir", 1)[1].split("```", 1)[0]
    assert op.name in example, f"{op.name}'s example does not use the op"


@pytest.mark.parametrize(("dialect", "attr"), ALL_ATTRS, ids=[a.name for _, a in ALL_ATTRS])
def test_attribute_has_a_docstring(dialect: str, attr: type) -> None:
    assert attr.__doc__ and attr.__doc__.strip(), f"{attr.name} has no docstring"


def test_npu_ops_are_exactly_the_dialect_and_run_on_an_engine() -> None:
    # npu.constant is the one op of the dialect that is no operator: it runs nowhere.
    assert set(NPU_OPS) | {ConstantOp} == set(_dialect("npu").operations)
    assert not issubclass(ConstantOp, NpuOp)
    assert len(NPU_OPS) == len(set(NPU_OPS))
    for op in NPU_OPS:
        assert issubclass(op, NpuOp)
        assert isinstance(op.ENGINE, Engine), op.name
        assert op.ENGINE in set(Engine)


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_ops_lit_test_uses_every_op_and_attribute(dialect: str) -> None:
    path = ROOT / "test" / "dialects" / dialect / "ops.mlir"
    module = npuir.parse_file(npuir.make_context(), path)
    used = {op.name for op in module.walk()}
    missing = sorted(op.name for op in _dialect(dialect).operations if op.name not in used)
    assert not missing, f"{path.relative_to(ROOT)} never uses {missing}"
    text = path.read_text()
    for attr in _dialect(dialect).attributes:
        assert re.search(rf"[#!]{re.escape(attr.name)}\b", text), f"{attr.name} not in {path}"


# --------------------------------------------------------------------------
# xDSL's plugin mechanism
# --------------------------------------------------------------------------


def test_entry_point_is_registered_once() -> None:
    ours = [ep for ep in entry_points(group="xdsl.universe") if ep.name == "npuir"]
    assert [ep.value for ep in ours] == ["npuir.passmanager.universe:NPUIR_UNIVERSE"]


def test_multiverse_sees_npuir_dialects_and_passes() -> None:
    multiverse = Universe.get_multiverse()  # raises on a duplicate name
    for name in DIALECTS:
        assert name in multiverse.all_dialects
        assert multiverse.all_dialects[name]() is _dialect(name)
    for key in PASSES:
        assert key in multiverse.all_passes
        assert multiverse.all_passes[key]() is _pass(key)


@pytest.mark.slow
def test_stock_xdsl_opt_parses_the_seed_like_npuir_opt() -> None:
    stock = subprocess.run(
        [str(BIN / "xdsl-opt"), str(SEED)], capture_output=True, text=True, check=False
    )
    assert stock.returncode == 0, stock.stderr
    ours = subprocess.run(
        [sys.executable, "-m", "npuir.tools.opt", str(SEED)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ours.returncode == 0, ours.stderr
    assert "stream.switch" in stock.stdout
    assert stock.stdout.strip() == ours.stdout.strip()
