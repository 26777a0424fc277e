"""A torch model through npuir and numpy: the export imported, printed, run with
`npuir-run --check` on the model's own parameters and inputs; the outputs beside eager's."""

from pathlib import Path
from typing import Any

import numpy as np
import torch
from xdsl.dialects.builtin import ModuleOp

import npuir
from npuir.driver.run import RunConfig, output_arrays, run_program
from npuir.frontends.torch import example_inputs, import_exported_program


def run_exported(
    model: Any, args: tuple[Any, ...], tmp_path: Path, *, strict: bool = False
) -> tuple[ModuleOp, list[np.ndarray], list[torch.Tensor]]:
    """The imported module, npuir's outputs in order, and eager's on the same inputs."""
    ep = torch.export.export(model, args)
    module = import_exported_program(ep, strict=strict)
    path, inputs = tmp_path / "model.mlir", tmp_path / "inputs.npz"
    path.write_text(npuir.print_ir(module))
    np.savez(inputs, **example_inputs(ep, *args))
    outcome = run_program(RunConfig(str(path), inputs=str(inputs), check=True))
    assert outcome.status == 0, outcome.report
    got = output_arrays(outcome)
    with torch.no_grad():
        eager = model(*args)
    want = list(eager) if isinstance(eager, tuple | list) else [eager]
    return module, [got[f"out{i}"] for i in range(len(got))], want
