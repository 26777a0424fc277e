"""Warnings and remarks that passes emit reach a library caller: printed, or collected."""

from __future__ import annotations

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

import npuir
from npuir.context import NpuirContext, remark, warn

SOURCE = """func.func @f(%a: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %0 = npu.relu %a : (tensor<4x8xf16>) -> tensor<4x8xf16>
  func.return %0 : tensor<4x8xf16>
}
"""
REMARK = "model.mlir:1:1: remark: insert-events on @f: 0 cross-stream orderings"


def _run(ctx: NpuirContext) -> ModuleOp:
    module = npuir.parse_text(ctx, SOURCE, "model.mlir")
    npuir.run_passes(ctx, module, npuir.build_pipeline("stream-partition,insert-events{stats}"))
    return module


def test_an_uncollected_remark_is_printed_with_its_line(capsys: pytest.CaptureFixture[str]) -> None:
    ctx = npuir.make_context()
    _run(ctx)
    err = capsys.readouterr().err
    assert err.startswith(REMARK), err
    assert "\nfunc.func @f(" in err
    assert list(ctx.diagnostics.drain()) == []


def test_collect_gathers_them_instead(capsys: pytest.CaptureFixture[str]) -> None:
    ctx = npuir.make_context()
    with ctx.diagnostics.collect() as found:
        module = _run(ctx)
    assert capsys.readouterr().err == ""
    assert [d.severity for d in found] == ["remark"]
    assert ctx.diagnostics.render(found[0]).startswith(REMARK)
    # Outside the block the engine prints again.
    warn(ctx, module, "after")
    assert "warning: after" in capsys.readouterr().err


def test_collect_nests_and_restores(capsys: pytest.CaptureFixture[str]) -> None:
    ctx = npuir.make_context(collect_diagnostics=True)
    module = npuir.parse_text(ctx, SOURCE, "model.mlir")
    remark(ctx, module, "outer")
    with ctx.diagnostics.collect() as inner:
        warn(ctx, module, "inner")
    remark(ctx, module, "outer again")
    assert [d.message for d in inner] == ["inner"]
    assert [d.message for d in ctx.diagnostics.drain()] == ["outer", "outer again"]
    assert capsys.readouterr().err == ""


def test_a_collecting_context_keeps_them_until_drained(capsys: pytest.CaptureFixture[str]) -> None:
    ctx = npuir.make_context(collect_diagnostics=True)
    _run(ctx)
    assert capsys.readouterr().err == ""
    (found,) = ctx.diagnostics.drain()
    assert found.severity == "remark" and found.message.startswith("insert-events on @f")


def test_a_plain_xdsl_context_prints_them(capsys: pytest.CaptureFixture[str]) -> None:
    module = npuir.parse_text(npuir.make_context(), SOURCE, "model.mlir")
    warn(Context(), module.body.block.first_op, "plain")
    assert capsys.readouterr().err.startswith("model.mlir:1:1: warning: plain")


def test_every_declared_kind_is_a_dotted_code_with_one_meaning() -> None:
    """Kinds are declared where they are emitted; once every layer is imported, each code is
    well-formed and means one thing (`Kind` refuses a second, different template)."""
    import importlib
    import pkgutil

    import npuir
    from npuir.diagnostics import Kind, kinds

    for package in (
        "dialects",
        "analysis",
        "schedule",
        "transforms",
        "backends",
        "driver",
        "tools",
    ):
        pkg = importlib.import_module(f"npuir.{package}")
        for info in pkgutil.walk_packages(pkg.__path__, f"npuir.{package}."):
            try:
                importlib.import_module(info.name)
            except ModuleNotFoundError as exc:
                # A module built on PyTorch (the torch backend) when it is not installed:
                # the suite runs without torch.
                if exc.name != "torch":
                    raise
    declared = kinds()
    assert {
        "core.hold-and-wait",
        "core.pair-exceeds-device",
        "stream.single-stream-conflict",
    } <= set(declared)
    assert npuir  # the package imports
    with pytest.raises(ValueError, match="declared twice"):
        Kind("core.hold-and-wait", "another {template}")
    with pytest.raises(ValueError, match="dotted"):
        Kind("Not A Code")


def test_a_kind_renders_its_message_from_the_arguments() -> None:
    from npuir.diagnostics import Diagnostic, Kind, diagnostic_json

    kind = Kind("test.rendered", "stream {name} needs {count} cores")
    d = Diagnostic.of("error", kind, None, name="s1", count=3)
    assert d.message == "stream s1 needs 3 cores" and d.kind == "test.rendered"
    assert diagnostic_json(d)["args"] == {"name": "s1", "count": 3}
    assert kind.fields == {"name", "count"}
