"""The layering a user can observe: importing a dialect loads no pass, backend or pipeline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def loaded_by(module: str, prefixes: tuple[str, ...] = ("npuir",)) -> list[str]:
    """The modules starting with `prefixes` that importing `module` in a fresh Python loads."""
    code = (
        f"import sys, json, {module}; "
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({prefixes!r}))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded: list[str] = json.loads(out.stdout)
    return loaded


@pytest.mark.parametrize("module", ["npuir.dialects.npu", "npuir.dialects.stream", "npuir"])
def test_importing_a_low_layer_loads_nothing_above_it(module: str) -> None:
    loaded = loaded_by(module)
    above = (
        "npuir.transforms",
        "npuir.backends",
        "npuir.schedule",
        "npuir.passmanager.pipeline",
        "npuir.driver",
        "npuir.tools",
        "npuir.frontends",
    )
    assert [m for m in loaded if m.startswith(above)] == []


def test_the_package_names_load_on_first_use() -> None:
    code = (
        "import sys, npuir; before = 'npuir.passmanager.pipeline' in sys.modules; "
        "npuir.build_pipeline('sync-verify'); print(before, 'npuir.passmanager.pipeline' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


@pytest.mark.parametrize(
    "module", ["npuir.torchair", "npuir.frontends.torchair", "npuir.frontends.load"]
)
def test_an_importer_loads_only_the_ir_layers(module: str) -> None:
    """The builder and the loader build IR with no pass, schedule, backend or driver
    behind them (and without torch); `npuir.torchair.get_npu_backend` loads the driver
    only when it is used.  Of the backend they load the device description alone."""
    loaded = loaded_by(module, ("npuir", "torch"))
    # The device description is the one backend module an importer reads (to check a
    # `limit_core_num` against a device's core counts); the cost model and simulator stay out.
    device = ("npuir.backends", "npuir.backends.npu", "npuir.backends.npu.hardware")
    loaded = [m for m in loaded if m not in device]
    above = (
        "npuir.transforms",
        "npuir.backends",
        "npuir.schedule",
        "npuir.passmanager",
        "npuir.passes",
        "npuir.driver",
        "npuir.tools",
        "torch",
    )
    assert [m for m in loaded if m.startswith(above)] == []


def test_the_facade_folder_does_not_pose_as_torchair() -> None:
    """torchair/ is npuir.torchair; from a clone's root (cwd on sys.path) `import torchair`
    must not find it as TorchAir itself, so code that falls back on ImportError (the seeds)
    gets npuir.torchair by its own name."""
    root = Path(__file__).resolve().parents[2]
    code = (
        "try:\n    import torchair\nexcept ImportError as e:\n    print('refused', e)\n"
        "import npuir.torchair\nprint(npuir.torchair.__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True
    )
    lines = out.stdout.splitlines()
    assert lines[0].startswith("refused") and "import npuir.torchair" in lines[0]
    assert lines[1] == "npuir.torchair"
