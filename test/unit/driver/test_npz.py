"""`--inputs FILE.npz` is read member by member and bounded (`npuir.driver.npz`)."""

from __future__ import annotations

import io
import random
import zipfile
from pathlib import Path

import numpy as np
import pytest

from npuir.diagnostics import DiagnosticError
from npuir.driver.npz import read_arrays


def _npz(path: Path, arrays: dict[str, np.ndarray], compression: int = zipfile.ZIP_STORED) -> Path:  # type: ignore[type-arg]
    with zipfile.ZipFile(path, "w", compression) as z:
        for name, array in arrays.items():
            buf = io.BytesIO()
            np.save(buf, array)
            z.writestr(name + ".npy", buf.getvalue())
    return path


def test_only_the_arrays_asked_for_are_read(tmp_path: Path) -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    path = _npz(tmp_path / "a.npz", {"arg0": x, "unused": np.zeros(10, np.int8)})
    got = read_arrays(str(path), ["arg0", "arg1"], lambda name: 24)
    assert list(got) == ["arg0"] and np.array_equal(got["arg0"], x)
    got["arg0"][0, 0] = 7.0  # writable, as numpy.load gives it


def test_an_array_larger_than_its_argument_is_refused_unread(tmp_path: Path) -> None:
    path = _npz(tmp_path / "a.npz", {"arg0": np.zeros(1 << 20, np.uint8)}, zipfile.ZIP_DEFLATED)
    with pytest.raises(DiagnosticError, match="more than the 64 its argument takes"):
        read_arrays(str(path), ["arg0"], lambda name: 64)


def test_an_object_array_is_refused(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "o.npz", "w") as z:
        buf = io.BytesIO()
        np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
        z.writestr("arg0.npy", buf.getvalue())
    with pytest.raises(DiagnosticError, match="pickled"):
        read_arrays(str(tmp_path / "o.npz"), ["arg0"], lambda name: None)


def test_mutated_archives_give_an_error_or_arrays(tmp_path: Path) -> None:
    good = _npz(tmp_path / "g.npz", {"arg0": np.ones((4, 4), np.float16)}).read_bytes()
    rng = random.Random(7)
    for case in range(300):
        data = bytearray(good)
        if case % 2:
            del data[rng.randrange(len(data)) :]
        else:
            for _ in range(rng.randint(1, 6)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        path = tmp_path / f"m{case}.npz"
        path.write_bytes(bytes(data))
        try:
            read_arrays(str(path), ["arg0"], lambda name: 32)
        except DiagnosticError:
            pass
