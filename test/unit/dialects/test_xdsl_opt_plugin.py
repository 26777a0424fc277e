"""A stock `xdsl-opt` with the npuir plugin verifies what the dialects define.

The dialects reach `xdsl-opt` through the `xdsl.universe` entry point; no
npuir tool code runs there, so these checks prove that the attribute checks,
typed attributes and `gear.dispatch` symbol uses live in the dialects.
Stock `xdsl-opt` reports a verifier error as a traceback (the module printed
with the message under the op at fault; a typed attribute of the declarative
format fails while parsing, as a bare exception), so each case checks the
exit code and the message.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

T = "tensor<8xf16>"

VALID = f"""stream.decl @s0 "<main>" priority 0
func.func @f(%x: tensor<?x2xf32> {{gear.dims = #gear.dims<0: [2, 4]>}}, %y: {T}) -> {T}
    attributes {{gear.policy = "zip"}} {{
  %a = npu.relu %y {{stream.on = @s0}} : ({T}) -> {T}
  func.return %a : {T}
}}
"""

BAD = {
    "stream.on naming no stream.decl": (
        f"""stream.decl @s0 "<main>" priority 0
func.func @f(%x: {T}) -> {T} {{
  %a = npu.relu %x {{stream.on = @s7}} : ({T}) -> {T}
  func.return %a : {T}
}}
""",
        "names stream @s7, which no 'stream.decl' declares",
    ),
    "gear.dims on a static dim": (
        """func.func @f(%x: tensor<4x2xf32> {gear.dims = #gear.dims<0: [2, 4]>}) -> tensor<4x2xf32> {
  %a = npu.relu %x : (tensor<4x2xf32>) -> tensor<4x2xf32>
  func.return %a : tensor<4x2xf32>
}
""",
        "in @f: argument 0: gear dim 0 of tensor<4x2xf32> is static (4)",
    ),
    "gear.policy that is no policy": (
        f"""func.func @f(%x: {T}) -> {T} attributes {{gear.policy = "cartesian"}} {{
  %a = npu.relu %x : ({T}) -> {T}
  func.return %a : {T}
}}
""",
        """in @f: 'gear.policy' must be "zip" or "product", got "cartesian\"""",
    ),
    "npu.target that is empty": (
        f"""module attributes {{npu.target = ""}} {{
  func.func @f(%x: {T}) -> {T} {{
    %a = npu.relu %x : ({T}) -> {T}
    func.return %a : {T}
  }}
}}
""",
        "in module: 'npu.target' must be a non-empty string naming a device preset",
    ),
    "gear.dispatch calling an unknown function": (
        """func.func @f(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %r = gear.dispatch(%x) dims [0:0] cases {[2] -> @f_g0} : (tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %r : tensor<?x2xf32>
}
""",
        "@f_g0 does not name a function in the module",
    ),
    "transpose with a float perm": (
        """func.func @f(%x: tensor<4x8xf16>) -> tensor<8x4xf16> {
  %t = npu.transpose %x {perm = array<f32: 1.0, 0.0>} : (tensor<4x8xf16>) -> tensor<8x4xf16>
  func.return %t : tensor<8x4xf16>
}
""",
        "'perm' must be an i64 array (array<i64: ...>)",
    ),
}


def run_xdsl_opt(text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from xdsl.tools.xdsl_opt import main; sys.exit(main())",
        ],
        input=text,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.slow
def test_valid_module_passes_through_xdsl_opt() -> None:
    # Also shows the plugin is loaded: without it, `stream.decl` is unknown.
    proc = run_xdsl_opt(VALID)
    assert proc.returncode == 0, proc.stderr
    assert 'stream.decl @s0 "<main>" priority 0' in proc.stdout
    assert "%a = npu.relu %y {stream.on = @s0}" in proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(BAD))
def test_xdsl_opt_rejects(case: str) -> None:
    text, message = BAD[case]
    proc = run_xdsl_opt(text)
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr
