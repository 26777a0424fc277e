"""Fuzzing the `.pt2` reader with mutations of a real archive's program JSON.

`bench/fuzz.py` mutates MLIR text; an archive's program is JSON, so this mutates its
members instead: node targets (dunder, Python-attribute and foreign names), graph-input
kinds and counts, argument kinds and values, tensor metadata (sizes, sympy-spelled and
hostile symbols), signature specs, and any member replaced or deleted.  Each mutant is
read and imported in this process; it must import, or fail with a located
`DiagnosticError` -- never another exception, never an error without a location.

`python test/unit/frontends/test_pt2_fuzz.py ARCHIVE.pt2 CASES SEED` runs a batch on any
archive and prints the counts; the test runs a small seeded batch on the tiny Llama export.
"""

from __future__ import annotations

import collections
import copy
import io
import json
import random
import sys
import traceback
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from npuir.diagnostics import DiagnosticEngine, DiagnosticError
from npuir.frontends.pt2 import read_pt2
from npuir.frontends.torch import import_pt2

KINDS = [
    "as_none",
    "as_tensor",
    "as_tensors",
    "as_int",
    "as_ints",
    "as_float",
    "as_floats",
    "as_string",
    "as_strings",
    "as_bool",
    "as_bools",
    "as_sym_int",
    "as_sym_ints",
    "as_sym_bool",
    "as_sym_float",
    "as_scalar_type",
    "as_memory_format",
    "as_layout",
    "as_device",
    "as_optional_tensors",
    "as_custom_obj",
    "as_graph",
    "as_operator",
    "as_complex",
    "as_expr",
    "bogus",
]
TARGETS = [
    "torch.ops.aten.__and__.Tensor",
    "torch.ops.aten.__or__.Scalar",
    "torch.ops.aten.__lshift__.Tensor",
    "torch.ops.aten.__class__.mro",
    "torch.ops.aten.add.__call__",
    "_operator.getitem",
    "_operator.__builtins__",
    "math.ceil",
    "torch.ops.aten.add",
    "torch.ops.aten",
    "torch.ops.transformers.x.default",
    "torch.ops._x.y.z",
    "os.system",
    "",
    "torch.ops.aten.sym_size.int",
    "torch.ops.higher_order.cond",
    "torch.ops.air.scope_enter.default",
    "torch.ops.aten.linear.default",
    "torch.ops.aten.expand.default",
    "torch.ops.aten.view.default",
    "torch.ops.aten.topk.default",
]
EXPRESSIONS = [
    "s0",
    "s0*2",
    "Symbol('s0', positive=True)",
    "Symbol('s0', evil=__import__)",
    "s0 + zz",
]


def _value(rng: random.Random, depth: int = 0) -> Any:
    """A random JSON value, biased toward what the schema holds."""
    choice = rng.randrange(9)
    if choice == 0:
        return None
    if choice == 1:
        return rng.choice([True, False])
    if choice == 2:
        return rng.choice([0, -1, 1, 2, 3, 2**63, -(2**70), 7, 12, 99])
    if choice == 3:
        return rng.choice([0.5, -0.0, 1e308, 1.5])
    if choice == 4:
        return rng.choice(["x", "", "s0", "input_ids", "Symbol('s9', integer=True)", "getitem"])
    if choice == 5 and depth < 3:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    if choice == 6 and depth < 3:
        return {rng.choice(KINDS): _value(rng, depth + 1)}
    if choice == 7:
        return {"name": rng.choice(["x", "input_ids", "arange", "mul", "zz"])}
    return {"as_name": rng.choice(["s0", "s77", "input_ids", "zz"])}


def _members(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _members(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _members(item, (*path, i))


def _at(root: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        root = root[step]
    return root


def mutate(program: dict[str, Any], rng: random.Random) -> str:
    """One mutation of `program` in place; returns its name."""
    graph = program["graph_module"]["graph"]
    nodes, inputs = graph["nodes"], graph["inputs"]
    what = rng.randrange(9)
    if what == 0:
        node = rng.choice(nodes)
        node["target"] = rng.choice(TARGETS + [n["target"] for n in nodes])
        return "target"
    if what == 1:
        inputs[rng.randrange(len(inputs))] = {rng.choice(KINDS): _value(rng)}
        return "input-kind"
    if what == 2:
        i = rng.randrange(len(inputs))
        if rng.random() < 0.5:
            del inputs[i]
        else:
            inputs.insert(i, copy.deepcopy(inputs[i]))
        return "input-count"
    if what in (3, 4):
        node = rng.choice(nodes)
        if node["inputs"]:
            arg = rng.choice(node["inputs"])
            kind = rng.choice(KINDS) if what == 3 else next(iter(arg["arg"]), "as_none")
            arg["arg"] = {kind: _value(rng)}
        return "arg-kind" if what == 3 else "arg-value"
    if what == 5:
        meta = graph["tensor_values"][rng.choice(sorted(graph["tensor_values"]))]
        key = rng.choice(["sizes", "dtype", "strides", "layout"])
        if rng.random() < 0.5:
            meta[key] = _value(rng)
        elif key == "sizes":
            meta[key] = [{"as_expr": {"expr_str": rng.choice(EXPRESSIONS), "hint": None}}]
        else:
            meta[key] = rng.randrange(40)
        return "tensor-meta"
    if what == 6:
        paths = [p for p, _ in _members(program) if p]
        path = rng.choice(paths)
        _at(program, path[:-1])[path[-1]] = _value(rng)
        return "any-member"
    if what == 7:
        paths = [p for p, _ in _members(program) if p and isinstance(p[-1], str)]
        path = rng.choice(paths)
        del _at(program, path[:-1])[path[-1]]
        return "delete-member"
    specs = program["graph_module"]["signature"]["input_specs"]
    kind = rng.choice(["user_input", "constant_input", "parameter", "custom_obj", "token", "x"])
    specs[rng.randrange(len(specs))] = {kind: _value(rng)}
    return "input-spec"


def fuzz(archive: Path, cases: int, seed: int) -> tuple[collections.Counter[str], list[str]]:
    """`cases` mutants of `archive`'s program, imported; the outcome counts (ok, located,
    unlocated, traceback) and a description of each failure."""
    with zipfile.ZipFile(archive) as z:
        entries = {info.filename: z.read(info) for info in z.infolist()}
    model = next(n for n in entries if n.endswith("models/model.json"))
    base = json.loads(entries[model])
    counts: collections.Counter[str] = collections.Counter()
    failures: list[str] = []
    seeds = random.Random(seed)
    for _ in range(cases):
        case = seeds.randrange(2**32)
        rng = random.Random(case)
        program = copy.deepcopy(base)
        tags = [mutate(program, rng) for _ in range(rng.randint(1, 3))]
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as out:
            for name, data in entries.items():
                out.writestr(name, json.dumps(program).encode() if name == model else data)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                import_pt2(
                    read_pt2("fuzz.pt2", data=buffer.getvalue()), diagnostics=DiagnosticEngine()
                )
            outcome = "ok"
        except DiagnosticError as exc:
            outcome = "located" if exc.diagnostic.location is not None else "unlocated"
            if outcome == "unlocated":
                failures.append(f"case {case} {tags}: {exc.diagnostic.message[:200]}")
        except Exception as exc:  # the fuzz's finding: any escape is a bug
            outcome = "traceback"
            text = "".join(traceback.format_exception(exc))
            failures.append(f"case {case} {tags}:\n{text[-1500:]}")
        counts[outcome] += 1
    return counts, failures


@pytest.mark.torch
@pytest.mark.slow
def test_mutated_llama_exports_import_or_fail_located(
    exports: dict[str, tuple[Path, Any]],
) -> None:
    counts, failures = fuzz(exports["llama"][0], 80, 20261128)
    assert not failures, failures[:3]
    # The batch reaches both ends: mutants that still import, and refusals.
    assert counts["ok"] > 5 and counts["located"] > 30, counts


if __name__ == "__main__":
    found, failed = fuzz(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
    print(dict(found))
    for failure in failed:
        print(failure)
    sys.exit(1 if failed else 0)
