"""Which device a pass or tool targets: one rule, in one place.

An explicit choice (a pass's `hw=` option, `npuir-run --hw`) wins; else the module's
`npu.target`; else `DEFAULT_HARDWARE`.  A spec that names no preset and no readable TOML file
is a located error at the module.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from npuir.backends.npu.hardware import DEFAULT_HARDWARE, Hardware, HardwareError, load_hardware
from npuir.diagnostics import Kind, error
from npuir.dialects.npu import target_of

UNKNOWN_DEVICE = Kind("device.unknown", "{reason}")
"""The module's target device is not a known preset (or its description cannot be used);
`reason` is the device reader's message (`npuir.backends.npu.hardware.HardwareError`: text only)."""

__all__ = ["device_of", "device_spec"]


def device_spec(module: ModuleOp, hw: str | None) -> str:
    """The preset name or TOML path the module is compiled for."""
    return hw or target_of(module) or DEFAULT_HARDWARE


def device_of(module: ModuleOp, hw: str | None) -> Hardware:
    """The device a pass targets: its `hw` option, else the module's `npu.target`, else the default."""
    try:
        return load_hardware(device_spec(module, hw))
    except HardwareError as exc:
        raise error(module, UNKNOWN_DEVICE, reason=str(exc)) from None
