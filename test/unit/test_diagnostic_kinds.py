"""Every diagnostic npuir gives on the lit suites' bad inputs has a real kind.

Consumers match kinds, so a diagnostic without one (`npuir.unclassified`) is one they
cannot react to.  This walks every case of every lit input, parses, verifies and lowers it
with `npu-default`, and checks the kind of each error and warning that comes out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import npuir
from npuir.diagnostics import UNCLASSIFIED, DiagnosticError
from npuir.parsing import split_input

ROOT = Path(__file__).resolve().parents[2]
INPUTS = sorted((ROOT / "test").glob("**/*.mlir"))


def kinds_of(path: Path) -> list[str]:
    found: list[str] = []
    for chunk in split_input(path.read_text(encoding="utf-8", errors="replace"), True):
        ctx = npuir.make_context(collect_diagnostics=True)
        try:
            module = npuir.parse_text(ctx, chunk.text, str(path))
            npuir.run_passes(ctx, module, npuir.build_pipeline("npu-default"))
        except DiagnosticError as exc:
            found.append(exc.diagnostic.kind)
        except npuir.UsageError:
            pass
        found.extend(d.kind for d in ctx.diagnostics.drain())
    return found


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_diagnostic_on_the_lit_inputs_has_a_kind(path: Path) -> None:
    assert UNCLASSIFIED.code not in kinds_of(path)


def test_the_invalid_inputs_do_give_diagnostics() -> None:
    """The walk above sees the errors (else it would pass on nothing)."""
    invalid = [p for p in INPUTS if "invalid" in p.name]
    kinds = {k for p in invalid for k in kinds_of(p)}
    assert {"verify.op", "parse.syntax"} <= kinds and len(kinds) >= 5
