"""Reading `--inputs FILE.npz` as data, bounded by what the run asks for.

`numpy.load` reads an `.npz` lazily but trusts each member: a member's header may claim
any shape (numpy allocates it before reading), and a deflated member may expand a
thousandfold (a 2 MB zip bomb becomes 2 GB).  `read_arrays` opens the archive with
`zipfile`, reads only the members the run needs, and before reading one checks that its
header's shape and dtype fit the bytes the member really holds and the bytes the caller
expects, so memory stays within the size of the arrays asked for.  Pickled (object)
arrays are refused, as `numpy.load(allow_pickle=False)` does.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from npuir.diagnostics import INPUT_ERROR, Diagnostic, DiagnosticError

__all__ = ["member_names", "read_arrays"]

Array = np.ndarray[Any, Any]

_HEADER_BYTES = 1 << 16
"""Room for a `.npy` header (numpy writes them in 64-byte multiples, under 64 KiB)."""


def _fail(path: str, message: str) -> DiagnosticError:
    return DiagnosticError(
        Diagnostic.of("error", INPUT_ERROR, None, action="read inputs", path=path, reason=message)
    )


def member_names(path: str) -> list[str]:
    """The array names in the archive (`arg0`, `rank1/arg2`, ...)."""
    try:
        with zipfile.ZipFile(path) as z:
            return [n[: -len(".npy")] for n in z.namelist() if n.endswith(".npy")]
    except OSError as exc:
        raise _fail(path, exc.strerror or str(exc)) from None
    except (zipfile.BadZipFile, ValueError, EOFError, RuntimeError) as exc:
        raise _fail(path, f"not an .npz archive ({exc})") from None


def read_arrays(
    path: str, names: Iterable[str], most_bytes: Callable[[str], int | None]
) -> dict[str, Array]:
    """The arrays `names` of the `.npz` at `path` (absent names are left out).

    `most_bytes(name)` bounds each array's data (None: the host's means); a member
    whose header claims more, or more than it holds, is refused before it is read."""
    out: dict[str, Array] = {}
    try:
        with zipfile.ZipFile(path) as z:
            members = {i.filename: i for i in z.infolist()}
            for name in names:
                info = members.get(name + ".npy")
                if info is None:
                    continue
                out[name] = _read_member(path, z, info, most_bytes(name))
    except OSError as exc:
        raise _fail(path, exc.strerror or str(exc)) from None
    except (zipfile.BadZipFile, EOFError, RuntimeError) as exc:
        raise _fail(path, f"not an .npz archive ({exc})") from None
    return out


def _read_member(path: str, z: zipfile.ZipFile, info: zipfile.ZipInfo, most: int | None) -> Array:
    name = info.filename[: -len(".npy")]
    where = f"array '{name}'"
    if most is not None and info.file_size > most + _HEADER_BYTES:
        raise _fail(
            path,
            f"{where} holds {info.file_size} bytes, more than the {most} its argument "
            "takes; refused unread",
        )
    try:
        with z.open(info) as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            elif version in ((2, 0), (3, 0)):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
            else:
                raise ValueError(f"unknown .npy version {version}")
            if dtype.hasobject:
                raise ValueError("it holds pickled (object) data, which npuir does not load")
            count = int(np.prod(shape, dtype=object)) if shape else 1
            size = count * dtype.itemsize
            if size > info.file_size:
                raise ValueError(
                    f"its header claims {size} bytes of data, but the member holds {info.file_size}"
                )
            if most is not None and size > most:
                raise ValueError(f"it holds {size} bytes, more than the {most} its argument takes")
            data = f.read(size)
            if len(data) != size:
                raise ValueError("it is truncated")
            array = np.frombuffer(bytearray(data), dtype=dtype, count=count)
            return array.reshape(shape, order="F" if fortran else "C")
    except (ValueError, TypeError, OverflowError) as exc:
        raise _fail(path, f"{where}: {exc}") from None
