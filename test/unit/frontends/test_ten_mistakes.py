"""Ten mistakes, four routes, one verdict: the same diagnostic kind, at the user's own line.

Each mistake is made in `.mlir` text, with the `npuir.torchair` builder, in a torch model
(`torch_scope`, imported from `torch.export`) and in a GE dump; each route refuses it with
the kind of the rule in `npuir.dialects.validation`, located where the user wrote it (the
text's line, the Python line of the call or the `with`, the dump's op).  Gears exist on
two routes only: a torch program takes TorchAir's gears as compile options and a GE dump
as session options (`ge.dynamicDims`), neither in the graph; and the text route writes one
annotation per argument, so "set twice" has no spelling there.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import npuir
from npuir import torchair
from npuir.diagnostics import DiagnosticError, Kind
from npuir.dialects import validation as v
from npuir.frontends.load import load_source, source_of_text

HERE = str(Path(__file__).resolve())

MISTAKES: dict[str, Kind] = {
    "int tag": v.TAG_TYPE,
    "empty tag": v.TAG_EMPTY,
    "non-int priority": v.PRIORITY_TYPE,
    "negative priority": v.PRIORITY_NEGATIVE,
    "limit_core_num(0, 12)": v.CORE_COUNT_LOW,
    "count above the device": v.CORE_COUNT_HIGH,
    "fractional count": v.CORE_COUNT_TYPE,
    "gear value 1": v.GEAR_VALUE,
    "101 gears": v.GEAR_COUNT,
    "gears set twice": v.GEAR_TWICE,
}

T = "tensor<4x4xf16>"
GEARS_101 = ", ".join(str(n) for n in range(2, 103))

# -- text ---------------------------------------------------------------------

TEXT_SCOPES = {
    "int tag": ("stream.switch 1", "stream.yield"),
    "empty tag": ('stream.switch ""', "stream.yield"),
    "non-int priority": ('stream.switch "a" priority 1.5', "stream.yield"),
    "negative priority": ('stream.switch "a" priority -1', "stream.yield"),
    "limit_core_num(0, 12)": ("coreset.limit cube 0 vector 12", "coreset.yield"),
    "count above the device": ("coreset.limit cube 30 vector 12", "coreset.yield"),
    "fractional count": ("coreset.limit cube 1.5 vector 12", "coreset.yield"),
}
TEXT_GEARS = {"gear value 1": "[1, 4]", "101 gears": f"[{GEARS_101}]"}


def _text(mistake: str) -> tuple[str, int]:
    """The program with the mistake, and the line the mistake is on."""
    arg, scope, term = f"%x: {T}", 'stream.switch "a"', "stream.yield"
    line = 3
    if mistake in TEXT_GEARS:
        arg = f"%x: tensor<?x4xf16> {{gear.dims = #gear.dims<0: {TEXT_GEARS[mistake]}>}}"
        line = 2
    else:
        scope, term = TEXT_SCOPES[mistake]
    ty = "tensor<?x4xf16>" if mistake in TEXT_GEARS else T
    text = "\n".join(
        [
            'module attributes {npu.target = "910b2"} {',
            f"func.func @f({arg}) -> {ty} {{",
            f"  %y = {scope} -> {ty} {{",
            f"    %r = npu.relu %x : ({ty}) -> {ty}",
            f"    {term} %r : {ty}",
            "  }",
            f"  func.return %y : {ty}",
            "}",
            "}",
        ]
    )
    return text, line


def _lowered_error(load: Callable[[npuir.NpuirContext], Any]) -> DiagnosticError:
    """The error a program gives on its way in or through `npu-default`."""
    ctx = npuir.make_context()
    with pytest.raises(DiagnosticError) as info:
        module = load(ctx)
        npuir.run_passes(ctx, module, npuir.build_pipeline("npu-default"))
    return info.value


# -- GE dumps -------------------------------------------------------------------

GE_ATTRS = {
    "int tag": [("_user_stream_label", "i", 1)],
    "empty tag": [("_user_stream_label", "s", "")],
    "non-int priority": [("_user_stream_label", "s", "a"), ("_user_stream_priority", "s", "1.5")],
    "negative priority": [("_user_stream_label", "s", "a"), ("_user_stream_priority", "s", "-1")],
    "limit_core_num(0, 12)": [("_op_aicore_num", "s", "0"), ("_op_vectorcore_num", "s", "12")],
    "count above the device": [("_op_aicore_num", "s", "30"), ("_op_vectorcore_num", "s", "12")],
    "fractional count": [("_op_aicore_num", "s", "1.5"), ("_op_vectorcore_num", "s", "12")],
}


def _quoted(value: object) -> str:
    return f'"{value}"'


def _dump(mistake: str) -> tuple[str, int]:
    """A GE dump (TorchAir's txt form) whose Relu carries the mistake, and the Relu's line."""
    desc = 'output_desc { dtype: DT_FLOAT16 shape { dim: 4 dim: 4 } layout: "ND" }'
    attrs = " ".join(
        f'attr {{ key: "{k}" value {{ {kind}: {_quoted(val) if kind == "s" else val} }} }}'
        for k, kind, val in GE_ATTRS[mistake]
    )
    lines = [
        'name: "g"',
        f'op {{ name: "x" type: "Data" {desc} }}',
        f'op {{ name: "r" type: "Relu" input: "x:0" {attrs} {desc} }}',
        'op { name: "o" type: "NetOutput" input: "r:0" }',
    ]
    return "\n".join(lines) + "\n", 3


# -- builder --------------------------------------------------------------------


def _builder(mistake: str) -> tuple[Callable[[], object], int]:
    g = torchair.Graph("f")
    x = g.input((None, 4), "f16")
    scope, gears = torchair.scope, torchair.inference.set_dim_gears
    calls: dict[str, Callable[[], object]] = {
        "int tag": lambda: scope.npu_stream_switch(1),  # type: ignore[arg-type]
        "empty tag": lambda: scope.npu_stream_switch(""),
        "non-int priority": lambda: scope.npu_stream_switch("a", 1.5),  # type: ignore[arg-type]
        "negative priority": lambda: scope.npu_stream_switch("a", -1),
        "limit_core_num(0, 12)": lambda: scope.limit_core_num(0, 12),
        "count above the device": lambda: scope.limit_core_num(30, 12),
        "fractional count": lambda: scope.limit_core_num(1.5, 12),  # type: ignore[arg-type]
        "gear value 1": lambda: gears(x, {0: [1, 4]}),
        "101 gears": lambda: gears(x, {0: list(range(2, 103))}),
        "gears set twice": lambda: (gears(x, {0: [2, 4]}), gears(x, {0: [2, 8]})),
    }
    call = calls[mistake]
    return call, inspect.getsourcelines(call)[1]


# -- torch ----------------------------------------------------------------------

TORCH_ARGS: dict[str, tuple[str, tuple[Any, ...]]] = {
    "int tag": ("switch", (1, 0)),
    "empty tag": ("switch", ("", 0)),
    "non-int priority": ("switch", ("a", 1.5)),
    "negative priority": ("switch", ("a", -1)),
    "limit_core_num(0, 12)": ("limit", (0, 12)),
    "count above the device": ("limit", (30, 12)),
    "fractional count": ("limit", (1.5, 12)),
}


def _torch_error(mistake: str) -> tuple[DiagnosticError, int]:
    torch = pytest.importorskip("torch")
    from npuir.frontends import torch_scope as scope

    scope.register()  # torch came after npuir.torchair here; a trace cannot register ops
    from npuir.frontends.torch import import_exported_program

    which, args = TORCH_ARGS[mistake]

    make = scope.npu_stream_switch if which == "switch" else scope.limit_core_num

    class Model(torch.nn.Module):  # type: ignore[misc, name-defined]
        def forward(self, x: Any) -> Any:
            with make(*args):
                y = torch.relu(x)
            return y

    line = inspect.getsourcelines(Model.forward)[1] + 1  # the `with` line
    with pytest.raises(DiagnosticError) as info:
        import_exported_program(torch.export.export(Model(), (torch.randn(4, 4),)))
    return info.value, line


# -- the test -------------------------------------------------------------------

ROUTES = ("text", "builder", "torch", "ge-dump")


def _error(route: str, mistake: str) -> tuple[DiagnosticError, str, int]:
    """The route's error for the mistake, the file and the line it must point at."""
    if route == "text":
        text, line = _text(mistake)
        err = _lowered_error(lambda ctx: npuir.parse_text(ctx, text, "model.mlir"))
        return err, "model.mlir", line
    if route == "ge-dump":
        dump, line = _dump(mistake)
        err = _lowered_error(lambda ctx: load_source(source_of_text("dump.txt", dump), ctx))
        return err, "dump.txt", line
    if route == "builder":
        call, line = _builder(mistake)
        with pytest.raises(torchair.TorchairError) as info:
            call()
        return info.value, HERE, line
    err, line = _torch_error(mistake)
    return err, HERE, line


def _expressible(route: str, mistake: str) -> bool:
    if route == "text":
        return mistake in TEXT_SCOPES or mistake in TEXT_GEARS
    if route == "ge-dump":
        return mistake in GE_ATTRS
    if route == "torch":
        return mistake in TORCH_ARGS
    return True


CASES = [(r, m) for r in ROUTES for m in MISTAKES if _expressible(r, m)]


@pytest.mark.parametrize(
    ("route", "mistake"),
    [
        pytest.param(r, m, id=f"{r}:{m}", marks=[pytest.mark.torch] if r == "torch" else [])
        for r, m in CASES
    ],
)
def test_every_route_refuses_the_mistake_with_one_kind_at_the_users_line(
    route: str, mistake: str
) -> None:
    err, filename, line = _error(route, mistake)
    diagnostic = err.diagnostic
    assert diagnostic.kind == MISTAKES[mistake].code, diagnostic.message
    assert diagnostic.location is not None
    assert (diagnostic.location.filename, diagnostic.location.line) == (filename, line)
    if route == "builder":  # a TorchairError reads like every diagnostic, location first
        assert str(err).startswith(f"{filename}:{line}:")


def test_every_mistake_is_made_on_at_least_three_routes_and_the_builder_takes_all() -> None:
    per_mistake = {m: [r for r, mm in CASES if mm == m] for m in MISTAKES}
    assert all("builder" in routes for routes in per_mistake.values())
    scoped = [m for m in MISTAKES if not m.startswith("gear") and "gears" not in m]
    assert all(len(per_mistake[m]) == 4 for m in scoped)
