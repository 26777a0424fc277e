"""A `torch.export` archive laid out by hand, as torch.export.save writes it (no torch
needed): the tests of the archive reader and of the loader build theirs with `build`."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np


def tensor_meta() -> dict[str, object]:
    return {
        "dtype": 7,
        "sizes": [{"as_int": 2}],
        "requires_grad": False,
        "device": {"type": "cpu", "index": None},
        "strides": [{"as_int": 1}],
        "storage_offset": {"as_int": 0},
        "layout": 7,
    }


PROGRAM = {
    "graph_module": {
        "graph": {"inputs": [], "outputs": [], "nodes": [], "tensor_values": {}},
        "signature": {"input_specs": [], "output_specs": []},
        "module_call_graph": [],
        "metadata": {},
    },
    "opset_version": {"aten": 10},
    "range_constraints": {},
    "schema_version": {"major": 8, "minor": 20},
    "verifiers": [],
    "torch_version": "2.13.0",
    "guards_code": [],
}


def build(path: Path, entries: dict[str, bytes], root: str = "m/") -> Path:
    """A zip archive as torch.export.save lays it out, with `entries` added or replaced."""
    files: dict[str, bytes] = {
        "archive_format": b"pt2",
        "archive_version": b"0",
        "byteorder": b"little",
        "models/model.json": json.dumps(PROGRAM).encode(),
        "data/weights/model_weights_config.json": json.dumps(
            {
                "config": {
                    "w": {
                        "path_name": "weight_0",
                        "is_param": True,
                        "use_pickle": False,
                        "tensor_meta": tensor_meta(),
                    }
                }
            }
        ).encode(),
        "data/weights/weight_0": np.array([1.5, -2.0], np.float32).tobytes(),
        "data/constants/model_constants_config.json": b'{"config": {}}',
    }
    files.update(entries)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for name, data in files.items():
            z.writestr(root + name, data)
    return path
