"""Every diagnostic npuir gives on the lit suites' bad inputs has a real kind.

Consumers match kinds, so a diagnostic without one (`npuir.unclassified`) is one they
cannot react to.  This walks every case of every lit input, parses, verifies and lowers it
with `npu-default`, and checks the kind of each error and warning that comes out.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
from pathlib import Path

import pytest

import npuir
from npuir.diagnostics import UNCLASSIFIED, Diagnostic, DiagnosticError, Kind, kinds
from npuir.parsing import split_input

ROOT = Path(__file__).resolve().parents[2]
INPUTS = sorted((ROOT / "test").glob("**/*.mlir"))


def diagnostics_of(path: Path) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    for chunk in split_input(path.read_text(encoding="utf-8", errors="replace"), True):
        ctx = npuir.make_context(collect_diagnostics=True)
        try:
            module = npuir.parse_text(ctx, chunk.text, str(path))
            npuir.run_passes(ctx, module, npuir.build_pipeline("npu-default"))
        except DiagnosticError as exc:
            found.append(exc.diagnostic)
        except npuir.UsageError:
            pass
        found.extend(ctx.diagnostics.drain())
    return found


def kinds_of(path: Path) -> list[str]:
    return [d.kind for d in diagnostics_of(path)]


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_diagnostic_on_the_lit_inputs_has_a_kind(path: Path) -> None:
    assert UNCLASSIFIED.code not in kinds_of(path)


def test_the_invalid_inputs_do_give_diagnostics() -> None:
    """The walk above sees the errors (else it would pass on nothing)."""
    invalid = [p for p in INPUTS if "invalid" in p.name]
    kinds = {k for p in invalid for k in kinds_of(p)}
    assert {"verify.op", "parse.syntax"} <= kinds and len(kinds) >= 5


PACKAGES = (
    "npuir",
    "npuir.dialects",
    "npuir.analysis",
    "npuir.schedule",
    "npuir.transforms",
    "npuir.backends",
    "npuir.frontends",
    "npuir.driver",
    "npuir.tools",
    "npuir.passmanager",
    "npuir.torchair",
)
"""Every package of npuir (pyproject's `package-dir`); their modules declare the kinds."""

FROM_A_MESSAGE = {
    "npuir.unclassified": "a bare message from an out-of-tree pass that names no kind",
    "verify.op": "an op verifier's message (xDSL's VerifyException holds text only)",
    "parse.syntax": "a parser's message (xDSL's ParseError and lark's errors hold text only)",
    "run.numerics": "the interpreter's NumericsError, text made where the run stopped",
    "gear.no-match": "the gear dispatcher's message (text only)",
    "collective.mismatch": "the collective pairing's own description of the difference",
    "device.unknown": "the device reader's HardwareError (text only)",
    "usage.invalid": "a UsageError's message, made where the flag or option was read",
    "torchair.bad-gears.refused": "the gear.dims attribute verifier's message (text only)",
}
"""Kinds whose message is made elsewhere, as text, and carried whole: their template is one
field.  Every other kind renders its message from named arguments."""


def _import_every_module() -> list[str]:
    names: list[str] = []
    for package in PACKAGES:
        pkg = importlib.import_module(package)
        names.append(package)
        for info in pkgutil.walk_packages(pkg.__path__, f"{package}."):
            try:
                importlib.import_module(info.name)
            except ModuleNotFoundError as exc:
                if exc.name != "torch":  # the torch-built modules, when torch is absent
                    raise
                continue
            names.append(info.name)
    return names


def test_every_kind_renders_its_message_from_named_arguments() -> None:
    """In every module (not a list of them), a diagnostic kind's template is more than one
    field: its message is rendered from the facts it names, which `--json` carries.  The
    kinds in `FROM_A_MESSAGE` carry text made elsewhere, and say why."""
    modules = _import_every_module()
    assert len(modules) > 100  # the walk found the package (else this would check nothing)
    one_field = re.compile(r"\{\w+\}")
    bare = sorted(
        k.code
        for k in kinds().values()
        if one_field.fullmatch(k.template) and not k.code.startswith("test.")  # the suite's own
    )
    assert bare == sorted(FROM_A_MESSAGE)


def test_every_kind_is_declared_at_module_level() -> None:
    """Each kind in the registry is a module-level name of the module that emits it, so the
    walk above sees every kind npuir has (a kind made inside a function would be missed)."""
    _import_every_module()
    declared = {
        k.code
        for m in list(sys.modules.values())
        if getattr(m, "__name__", "").startswith("npuir.")
        for k in vars(m).values()
        if isinstance(k, Kind)
    }
    test_kinds = {c for c in kinds() if c.startswith("test.")}  # this suite's own
    assert set(kinds()) - test_kinds <= declared


@pytest.mark.slow
def test_every_message_on_the_lit_inputs_is_its_arguments_rendered() -> None:
    """A structured kind's diagnostic carries the facts its message says: rendering the
    kind's template from the diagnostic's arguments gives the message back (after the
    "'op' op " an op verifier puts first)."""
    table = kinds()
    seen = 0
    for path in INPUTS:
        for d in diagnostics_of(path):
            kind = table.get(d.kind)
            if kind is None or "message" in kind.fields:
                continue
            rendered = kind.render(d.args)
            by_verifier = d.message.startswith("'") and d.message.endswith("' op " + rendered)
            assert d.message == rendered or by_verifier, (path.name, d.kind, d.message)
            seen += 1
    assert seen >= 20
