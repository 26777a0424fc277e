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


def test_imported_dumps_print_as_xdsl_prints_them() -> None:
    # An importer names and locates every op: the names are holes in the op templates,
    # the locations written from the file name's cached literal.  Names that need
    # escaping (a quote, a backslash, a non-ASCII letter, a control character) and a file
    # name that does too.
    from npuir.frontends.ge import import_text

    inputs = Path(__file__).resolve().parents[1] / "frontends" / "Inputs"
    seed = (inputs / "seed_multistream.txt").read_text()
    odd = seed
    for i, name in enumerate(['q"uote', "back\\\\slash", "n\u00e4me", "tab\\tbed"]):
        odd = odd.replace(f'"arg{i}', f'"{name}{i}')
    assert odd != seed
    cases = [
        ("seed.txt", seed),
        ("seed.pbtxt", (inputs / "seed_multistream.pbtxt").read_text()),
        ('od"d \u00e9.txt', odd),
        ("resnet.txt", (inputs / "ge_proto_00046_afterUBMatch.txt").read_text()),
    ]
    for filename, text in cases:
        module = import_text(make_context(), text, filename).module
        for generic in (False, True):
            want = _reference(module, generic, True)
            assert print_ir(module, generic=generic, debuginfo=True) == want, filename
    # The op names differ from op to op: a few templates for the 200 ops of a chain of
    # two kinds, not one per op.
    from extreme_inputs import ge_chain_text

    from npuir.printing import FastPrinter

    module = import_text(make_context(), ge_chain_text(200), "chain.txt").module
    out = StringIO()
    printer = FastPrinter(stream=out, print_debuginfo=True)
    printer.print_op(module)
    assert printer._templates
    assert len(printer._templates) <= 8
    assert out.getvalue() == _reference(module, False, True)[:-1]
