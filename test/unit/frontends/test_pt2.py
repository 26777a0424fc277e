"""`.pt2` archives are read as data (`npuir.frontends.pt2`): a malicious one runs nothing.

The archives here carry a pickle whose `__reduce__` calls `os.system("touch MARKER")`,
exactly what `pickle.dumps` writes for an object with such a `__reduce__`, or a
symbolic-shape string that `sympy.sympify` would evaluate.  Each must be refused with a
message naming the entry, exit status 1, and no marker file.  The hand-built archives
need no torch; with torch, the same payloads are planted in a real export, and
`torch.export.load` is shown to run them (so the archives really are malicious).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from pt2archive import PROGRAM, build, tensor_meta

from npuir.diagnostics import DiagnosticError
from npuir.frontends.pt2 import MAX_JSON_DEPTH, read_pt2
from npuir.nesting import bracket_depth

BIN = Path(sys.executable).parent


def evil_pickle(marker: Path) -> bytes:
    """Protocol-0 pickle of an object whose `__reduce__` is `(os.system, ("touch M",))`."""
    return f"cposix\nsystem\n(S'touch {marker}'\ntR.".encode()


def _config(kind: str, name: str, path_name: str, use_pickle: bool) -> bytes:
    meta = {"path_name": path_name, "is_param": False, "use_pickle": use_pickle}
    meta["tensor_meta"] = None if use_pickle else tensor_meta()  # type: ignore[assignment]
    return json.dumps({"config": {name: meta}}).encode()


def malicious(marker: Path) -> dict[str, dict[str, bytes]]:
    """Each way torch 2.13's loader would run a payload, as archive entries."""
    payload = evil_pickle(marker)
    weights = "data/weights/model_weights_config.json"
    constants = "data/constants/model_constants_config.json"
    program = json.loads(json.dumps(PROGRAM))
    program["range_constraints"] = {
        "s0": {"min_val": 2, "max_val": 8},
    }
    program["graph_module"]["graph"]["tensor_values"] = {
        "x": {
            **tensor_meta(),
            "sizes": [
                {
                    "as_expr": {
                        "expr_str": f"__import__('os').system('touch {marker}')",
                        "hint": None,
                    }
                }
            ],
        }
    }
    return {
        "pickled weight": {
            weights: _config("w", "w", "weight_0", True),
            "data/weights/weight_0": payload,
        },
        "pickled constant": {
            constants: _config("c", "c", "tensor_0", True),
            "data/constants/tensor_0": payload,
        },
        "torchbind object": {
            constants: _config("c", "c", "custom_obj_0", False),
            "data/constants/custom_obj_0": payload,
        },
        "opaque object": {
            constants: _config("c", "c", "opaque_obj_0", False),
            "data/constants/opaque_obj_0": payload,
        },
        "legacy weights": {"data/weights/model.pt": payload},
        "shape expression": {"models/model.json": json.dumps(program).encode()},
    }


CASES = sorted(malicious(Path("x")))


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_a_malicious_archive_runs_nothing_and_is_refused(tmp_path: Path, case: str) -> None:
    marker = tmp_path / "MARKER"
    archive = build(tmp_path / "evil.pt2", malicious(marker)[case])
    for tool in ("npuir-import", "npuir-advise"):
        proc = subprocess.run(
            [str(BIN / tool), str(archive)], capture_output=True, text=True, timeout=300
        )
        assert not marker.exists(), f"{tool} ran the payload of the {case}"
        assert proc.returncode == 1, (tool, proc.returncode, proc.stderr)
        assert "Traceback" not in proc.stderr
        first = proc.stderr.splitlines()[0]
        # Located at the archive's entry, and says why.
        assert first.startswith(f"{archive}/m/"), first
        assert ": error: " in first
    with pytest.raises(DiagnosticError):
        read_pt2(archive)
    assert not marker.exists()


def test_the_sample_inputs_pickle_is_never_read(tmp_path: Path) -> None:
    """torch writes a pickle of sample inputs into every archive; npuir skips it."""
    marker = tmp_path / "MARKER"
    archive = build(tmp_path / "a.pt2", {"data/sample_inputs/model.pt": evil_pickle(marker)})
    read = read_pt2(archive)
    assert not marker.exists()
    assert read.weights["w"].tolist() == [1.5, -2.0]
    assert read.weights["w"].dtype == np.float32


def test_a_zip_bomb_is_refused_unread(tmp_path: Path) -> None:
    archive = tmp_path / "bomb.pt2"
    build(archive, {})
    with zipfile.ZipFile(archive, "a", zipfile.ZIP_DEFLATED) as z:
        z.writestr("m/data/weights/weight_9", b"\0" * (64 * 1024 * 1024))
    assert archive.stat().st_size < 1024 * 1024
    with pytest.raises(DiagnosticError, match="zip bomb"):
        read_pt2(archive)


def test_deep_json_is_refused_before_parsing(tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    archive = build(tmp_path / "deep.pt2", {"models/model.json": deep.encode()})
    proc = subprocess.run(
        [str(BIN / "npuir-import"), str(archive)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 1, proc.stderr
    assert f"more than {MAX_JSON_DEPTH} levels" in proc.stderr
    assert proc.stderr.startswith(f"{archive}/m/models/model.json:1:{MAX_JSON_DEPTH + 1}: error:")


def test_json_depth_counts_brackets_inside_strings_too() -> None:
    assert bracket_depth('{"a": [1, {"b": "[[["}]}') == (6, 19)
    assert bracket_depth("[]]][") == (1, 0)


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ({"archive_format": b"zip"}, "archive_format is not 'pt2'"),
        ({"byteorder": b"big"}, "little-endian"),
        ({"data/weights/weight_0": b"\0\0\0\0"}, "needs 2 elements"),
        ({"models/model.json": b"{not json"}, "invalid JSON"),
        ({"models/model.json": b"\xff\xfe"}, "not UTF-8"),
    ],
)
def test_a_corrupt_archive_is_a_located_error(
    tmp_path: Path, entries: dict[str, bytes], message: str
) -> None:
    archive = build(tmp_path / "bad.pt2", entries)
    with pytest.raises(DiagnosticError, match=message) as info:
        read_pt2(archive)
    assert info.value.diagnostic.location is not None


def test_not_a_zip_is_a_located_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pt2"
    bad.write_bytes(b"PK\3\4 truncated")
    proc = subprocess.run(
        [str(BIN / "npuir-import"), str(bad)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"{bad}:1: error: cannot load")


# -- with torch: the payloads are live, and a real archive reads the same -----------------


def _real_archive(path: Path) -> Path:
    torch = pytest.importorskip("torch")

    class M(torch.nn.Module):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(4, 3)
            self.register_buffer("buf", torch.arange(3, dtype=torch.bfloat16))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.lin(x) + self.buf.float()

    torch.manual_seed(0)
    model = M()
    torch.export.save(torch.export.export(model, (torch.randn(2, 4),)), str(path))
    return path


@pytest.mark.torch
def test_a_real_archive_reads_its_weights_as_numpy(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    archive = _real_archive(tmp_path / "m.pt2")
    loaded = torch.export.load(str(archive))  # trusted here: we just wrote it
    read = read_pt2(archive)
    assert set(read.weights) == set(loaded.state_dict)
    for name, tensor in loaded.state_dict.items():
        expected = tensor.detach().float().numpy()
        assert np.array_equal(read.weights[name].astype(np.float32), expected)
    assert read.parameters == {"lin.weight", "lin.bias"}


def _plant(real: Path, out: Path, entries: dict[str, bytes]) -> Path:
    """`real` with `entries` (relative to its root) replaced or added."""
    with zipfile.ZipFile(real) as src:
        root = next(n for n in src.namelist() if n.endswith("archive_format"))[
            : -len("archive_format")
        ]
        files = {n: src.read(n) for n in src.namelist()}
    for name, data in entries.items():
        files[root + name] = data
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return out


@pytest.mark.torch
def test_torch_export_load_would_run_the_payload(tmp_path: Path) -> None:
    """The control: the planted weight pickle runs under torch.export.load (torch 2.13),
    and the same archive is refused by npuir with no marker."""
    torch = pytest.importorskip("torch")
    real = _real_archive(tmp_path / "m.pt2")
    marker = tmp_path / "MARKER"
    with zipfile.ZipFile(real) as src:
        config = json.loads(
            src.read(next(n for n in src.namelist() if n.endswith("model_weights_config.json")))
        )
    config["config"]["lin.weight"]["use_pickle"] = True
    path_name = config["config"]["lin.weight"]["path_name"]
    evil = _plant(
        real,
        tmp_path / "evil.pt2",
        {
            "data/weights/model_weights_config.json": json.dumps(config).encode(),
            f"data/weights/{path_name}": evil_pickle(marker),
        },
    )
    proc = subprocess.run(
        [str(BIN / "npuir-import"), str(evil)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 1 and not marker.exists()
    assert "'lin.weight' is stored as a pickle" in proc.stderr
    try:
        torch.export.load(str(evil))
    except Exception:
        pass  # the payload's return value is no tensor; what matters is that it ran
    assert marker.exists(), "the planted payload is not live: this test would prove nothing"


@pytest.mark.torch
def test_an_expression_payload_would_run_under_torch(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    real = _real_archive(tmp_path / "m.pt2")
    marker = tmp_path / "MARKER"
    with zipfile.ZipFile(real) as src:
        name = next(n for n in src.namelist() if n.endswith("models/model.json"))
        program = json.loads(src.read(name))
    values = program["graph_module"]["graph"]["tensor_values"]
    values["x"]["sizes"][0] = {
        "as_expr": {
            "expr_str": f"__import__('os').system('touch {marker}') + 2",
            "hint": {"as_int": 2},
        }
    }
    evil = _plant(real, tmp_path / "evil.pt2", {"models/model.json": json.dumps(program).encode()})
    with pytest.raises(DiagnosticError, match=r"not arithmetic|no shape symbol"):
        read_pt2(evil)
    assert not marker.exists()
    buffer = io.StringIO()
    try:
        torch.export.load(str(evil))
    except Exception as exc:
        buffer.write(str(exc))
    assert marker.exists(), "the planted expression is not live: this test would prove nothing"


def test_mutated_archives_give_a_located_error_or_an_archive(tmp_path: Path) -> None:
    """A small fuzz run of the reader: byte flips, truncation and entry swaps of a valid
    archive end in a `DiagnosticError` with a location, or read -- never another
    exception (a traceback)."""
    import random

    good = build(tmp_path / "good.pt2", {}).read_bytes()
    rng = random.Random(23)
    for case in range(300):
        data = bytearray(good)
        how = case % 3
        if how == 0:
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        elif how == 1:
            del data[rng.randrange(len(data)) :]
        else:
            at = rng.randrange(len(data))
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        path = tmp_path / f"m{case}.pt2"
        path.write_bytes(bytes(data))
        try:
            read_pt2(path)
        except DiagnosticError as exc:
            assert exc.diagnostic.location is not None, (case, exc.diagnostic.message)
