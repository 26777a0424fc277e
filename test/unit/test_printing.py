"""npuir's printer (npuir.printing) writes exactly what xDSL's printer writes.

Every `.mlir` input of the repository that parses, and the benchmark programs, printed
in custom and generic form, with and without locations, by `npuir.print_ir` (cached
type texts, op templates) and by xDSL's `Printer`: byte-identical.
"""

from __future__ import annotations

import sys
from io import StringIO
from itertools import chain
from pathlib import Path

import pytest
from xdsl.printer import Printer

from npuir import make_context, print_ir
from npuir.diagnostics import DiagnosticError
from npuir.parsing import parse_module

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import parse_diff  # noqa: E402


def _reference(module: object, generic: bool, debuginfo: bool) -> str:
    out = StringIO()
    Printer(stream=out, print_generic_format=generic, print_debuginfo=debuginfo).print_op(
        module  # type: ignore[arg-type]
    )
    out.write("\n")
    return out.getvalue()


@pytest.mark.slow
def test_printing_is_byte_identical_to_xdsl() -> None:
    differ: list[str] = []
    printed = 0
    for label, text in chain(parse_diff.repo_inputs(), parse_diff.program_inputs(200)):
        ctx = make_context()
        ctx.diagnostics.sources.add("in.mlir", text)
        try:
            module = parse_module(ctx, text, "in.mlir", ctx.diagnostics.sources)
        except DiagnosticError:
            continue
        for generic in (False, True):
            for debuginfo in (False, True):
                try:
                    want = _reference(module, generic, debuginfo)
                except Exception as exc:  # unverified IR xDSL cannot print
                    with pytest.raises(type(exc)):
                        print_ir(module, generic=generic, debuginfo=debuginfo)
                    continue
                printed += 1
                if print_ir(module, generic=generic, debuginfo=debuginfo) != want:
                    differ.append(f"{label} generic={generic} debuginfo={debuginfo}")
    assert printed > 100
    assert not differ, "\n".join(differ)
