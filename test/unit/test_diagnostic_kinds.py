"""Every diagnostic npuir gives on the lit suites' bad inputs has a real kind.

Consumers match kinds, so a diagnostic without one (`npuir.unclassified`) is one they
cannot react to.  This walks every case of every lit input, parses, verifies and lowers it
with `npu-default`, and checks the kind of each error and warning that comes out.
"""

from __future__ import annotations

import importlib
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


STRUCTURED = [
    "npuir.dialects.validation",
    "npuir.transforms.coreset_check",
    "npuir.transforms.sync_verify",
    "npuir.transforms.stream_partition",
    "npuir.analysis.program",
    "npuir.analysis.core_limits",
    "npuir.analysis.partition",
    "npuir.verifier",
    "npuir.parsing",
    "npuir.frontends.load",
    "npuir.frontends.protobuf_text",
    "npuir.frontends.torch",
]
"""Modules whose every diagnostic kind renders its message from named arguments."""
FROM_A_MESSAGE = {"verify.op", "parse.syntax"}
"""Kinds that carry a message made elsewhere: an op verifier's and a parser's (xDSL's
`VerifyException` and `ParseError`, lark's errors hold text only)."""


@pytest.mark.parametrize("name", STRUCTURED)
def test_kinds_render_from_named_arguments(name: str) -> None:
    if name == "npuir.frontends.torch":
        pytest.importorskip("torch")
    module = importlib.import_module(name)
    declared = [k for k in vars(module).values() if isinstance(k, Kind)]
    assert declared
    assert [
        k.code
        for k in declared
        if k.fields <= {"message"} and "{message}" in k.template and k.code not in FROM_A_MESSAGE
    ] == []


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
