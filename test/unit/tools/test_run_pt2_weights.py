"""`npuir-run` on a `.pt2`: parameters, buffers and lifted constants are the archive's.

The importer marks each such argument with `torch.state` (its name in the program's
state); a run of the archive takes its value from the archive (read as data), never asks
for it in `--inputs`, and leaves it out of `--save-inputs`, so that the saved file is what
`--inputs` reads and a run on it computes what eager PyTorch computes on the same input.
A printed module (no archive) has every argument as an input, as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from npuir.driver.run import RunConfig, run_program  # noqa: E402
from npuir.tools.run import run  # noqa: E402


class _Model(torch.nn.Module):  # type: ignore[misc,name-defined]
    """A parameter (the linear layer's), a buffer and a lifted tensor constant."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)
        self.register_buffer("scale", torch.linspace(0.5, 2.0, 16))
        self.shift = torch.full((16,), 0.25)  # not registered: torch.export lifts it

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(x)) * self.scale + self.shift


def _archive(tmp_path: Path) -> tuple[Path, Any]:
    torch.manual_seed(0)
    model = _Model()
    path = tmp_path / "m.pt2"
    ep = torch.export.export(model, (torch.randn(8, 16),))
    torch.export.save(ep, str(path))
    return path, model


def _run(*args: str | Path) -> int:
    try:
        return run([str(a) for a in args])
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1


def test_weights_are_not_inputs_and_take_the_archives_values(tmp_path: Path) -> None:
    path, model = _archive(tmp_path)
    saved, outputs = tmp_path / "in.npz", tmp_path / "out.npz"
    assert _run(path, "--seed", "3", "--save-inputs", saved, "--outputs", outputs) == 0
    outcome = run_program(RunConfig(path=str(path), seed=3))
    func_args = len(outcome.inputs[0])
    state = outcome.state[0]
    assert len(state) == 4  # lin.weight, lin.bias, scale, the lifted constant
    (user,) = set(range(func_args)) - state
    with np.load(saved) as data:
        assert data.files == [f"arg{user}"]  # the weights are not inputs
        x = data[f"arg{user}"]
    # Computed on the archive's weights: what eager PyTorch gives on the saved input.
    with np.load(outputs) as data:
        got = data["out0"]
    want = model(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # Read back with --inputs (another seed, which it overrides): the same outputs, bit
    # for bit; the file has no weights, and none are asked for.
    again = tmp_path / "again.npz"
    assert _run(path, "--seed", "9", "--inputs", saved, "--outputs", again, "--check") == 0
    with np.load(outputs) as a, np.load(again) as b:
        np.testing.assert_array_equal(a["out0"], b["out0"])


def test_a_weight_in_the_inputs_file_is_not_read(tmp_path: Path) -> None:
    path, model = _archive(tmp_path)
    outcome = run_program(RunConfig(path=str(path), seed=1))
    state = outcome.state[0]
    user = next(i for i in range(len(outcome.inputs[0])) if i not in state)
    x = np.random.default_rng(5).standard_normal((8, 16)).astype(np.float32)
    # Every argument given, the weights as zeros: the archive's values still win.
    arrays = {f"arg{i}": np.zeros_like(a) for i, a in enumerate(outcome.inputs[0])}
    arrays[f"arg{user}"] = x
    given, outputs = tmp_path / "all.npz", tmp_path / "out.npz"
    np.savez(given, **arrays)
    assert _run(path, "--inputs", given, "--outputs", outputs) == 0
    with np.load(outputs) as data:
        got = data["out0"]
    np.testing.assert_allclose(
        got, model(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6
    )


def test_a_printed_module_keeps_every_argument_an_input(tmp_path: Path) -> None:
    path, _ = _archive(tmp_path)
    from npuir.api import print_ir
    from npuir.frontends.load import load

    text = print_ir(load(path))
    assert 'torch.state = "lin.weight"' in text
    printed = tmp_path / "m.mlir"
    printed.write_text(text)
    saved = tmp_path / "in.npz"
    assert _run(printed, "--seed", "3", "--save-inputs", saved) == 0
    outcome = run_program(RunConfig(path=str(printed), seed=3))
    assert outcome.state == [set()]
    with np.load(saved) as data:
        assert len(data.files) == len(outcome.inputs[0])


def test_example_inputs_name_the_printed_arguments(tmp_path: Path) -> None:
    """`example_inputs` keys every array by the name its argument is printed with, so the
    npz it writes feeds a printed module by name -- the lifted constant `c_lifted_tensor_0`
    too, whose trailing `_0` xDSL's printer would otherwise drop."""
    from npuir.api import print_ir
    from npuir.frontends.load import load
    from npuir.frontends.torch import example_inputs

    class Lifted(_Model):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            # A tensor made in forward: torch.export lifts it as `c_lifted_tensor_0`.
            return super().forward(x) - torch.tensor(0.5)

    torch.manual_seed(0)
    model = Lifted()
    x = torch.randn(8, 16)
    ep = torch.export.export(model, (x,))
    path = tmp_path / "m.pt2"
    torch.export.save(ep, str(path))
    printed = tmp_path / "m.mlir"
    printed.write_text(print_ir(load(path)))
    arrays = example_inputs(ep, x)
    assert any(name.startswith("c_lifted_tensor") for name in arrays)
    assert all(f"%{name}:" in printed.read_text() for name in arrays)
    given, outputs = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(given, **arrays)
    assert _run(printed, "--inputs", given, "--outputs", outputs, "--check") == 0
    with np.load(outputs) as data:
        np.testing.assert_allclose(data["out0"], model(x).detach().numpy(), rtol=1e-5, atol=1e-6)
