"""Every tool's `--json` output matches the versioned schema in docs/json-schema/.

Users script against these objects, so their shape is a contract: each answer carries
`"schema"`, and a field removed or renamed without a new version fails here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from npuir.tools.cli import JSON_SCHEMA

ROOT = Path(__file__).resolve().parents[3]
SCHEMAS = ROOT / "docs" / "json-schema"
BIN = Path(sys.executable).parent


def schema(tool: str) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((SCHEMAS / f"{tool}.schema.json").read_text())
    return loaded


def answer(tool: str, *args: str, stdin: str | None = None) -> dict[str, object]:
    done = subprocess.run(
        [str(BIN / tool), *args, "--json"], capture_output=True, text=True, input=stdin
    )
    assert done.returncode != 70, done.stderr
    obj: dict[str, object] = json.loads(done.stdout)
    return obj


RUNS = [
    ("examples/seed_multistream.mlir",),
    ("examples/core_limit_deadlock.mlir", "--entries", "rank0,rank1"),
    ("examples/gears.mlir", "--shape", "0=4x2", "--shape", "1=4x2", "--check"),
    ("/dev/null",),
]


@pytest.mark.slow
@pytest.mark.parametrize("args", RUNS, ids=lambda a: Path(a[0]).name)
def test_run_json_matches_the_schema(args: tuple[str, ...]) -> None:
    obj = answer("npuir-run", *(str(ROOT / a) if a.endswith(".mlir") else a for a in args))
    assert obj["schema"] == JSON_SCHEMA
    jsonschema.validate(obj, schema("npuir-run"))


def test_run_json_error_carries_a_kind() -> None:
    obj = answer("npuir-run", "-", stdin="func.func @f(\n")
    jsonschema.validate(obj, schema("npuir-run"))
    error = obj["error"]
    assert isinstance(error, dict) and error["kind"] == "parse.syntax"


@pytest.mark.slow
def test_advise_json_matches_the_schema() -> None:
    obj = answer("npuir-advise", str(ROOT / "examples" / "seed_multistream.mlir"))
    assert obj["schema"] == JSON_SCHEMA
    jsonschema.validate(obj, schema("npuir-advise"))


def test_import_json_matches_the_schema(tmp_path: Path) -> None:
    dump = ROOT / "test" / "frontends" / "Inputs" / "seed_multistream.pbtxt"
    obj = answer("npuir-import", str(dump), "-o", str(tmp_path / "out.mlir"))
    assert obj["schema"] == JSON_SCHEMA
    jsonschema.validate(obj, schema("npuir-import"))


@pytest.mark.slow
def test_a_schema_rejects_a_report_without_its_fields() -> None:
    obj = answer("npuir-run", str(ROOT / "examples" / "seed_multistream.mlir"))
    del obj["makespan_ns"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(obj, schema("npuir-run"))
