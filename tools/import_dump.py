"""`npuir-import`: a GE / TorchAir graph dump (txt, pbtxt, ge_proto_*.txt) into `.mlir`.

Prints the IR (or writes it to `-o FILE`, atomically), the warnings, and the
import summary (ops per GE type and what each became) on stderr; with `--json`
the summary goes to stdout as one JSON object instead, and the IR only to `-o`.
Exit codes: 0 ok, 1 an error in the dump (or an unknown type under --strict),
2 a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from npuir.api import print_ir, read_source
from npuir.context import make_context
from npuir.diagnostics import DiagnosticError
from npuir.frontends.ge import import_text
from npuir.tools.opt import _write_atomically

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def _arg_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="npuir-import",
        description="Import a GE or TorchAir graph dump (txt, pbtxt, ge_proto_*.txt) as npuir IR.",
        epilog="exit codes: 0 ok, 1 error in the dump, 2 usage error",
    )
    ap.add_argument("input", help="the dump file")
    ap.add_argument("-o", "--output-file", help="write the IR here instead of stdout")
    ap.add_argument("--graph", help="the graph to import when the dump holds several")
    ap.add_argument(
        "--strict", action="store_true", help="refuse GE types the op table does not know"
    )
    ap.add_argument(
        "--json", action="store_true", help="print the import summary as JSON on stdout"
    )
    return ap


def run(argv: Sequence[str] | None = None) -> int:
    args = _arg_parser().parse_args(argv)
    ctx = make_context()
    try:
        result = import_text(ctx, read_source(ctx, args.input), args.input, args.graph, args.strict)
    except DiagnosticError as exc:
        for diagnostic in (exc.diagnostic, *exc.notes):
            print(ctx.diagnostics.render(diagnostic), file=sys.stderr)
        return EXIT_ERROR
    for warning in result.warnings:
        print(ctx.diagnostics.render(warning), file=sys.stderr)
    text = print_ir(result.module)
    if args.output_file:
        try:
            _write_atomically(args.output_file, text)
        except OSError as exc:
            print(
                f"npuir-import: error: cannot write '{args.output_file}': {exc.strerror}",
                file=sys.stderr,
            )
            return EXIT_USAGE
    elif not args.json:
        sys.stdout.write(text)
    if args.json:
        print(json.dumps(result.summary.to_json(), indent=2))
    else:
        sys.stderr.write(result.summary.render())
    return EXIT_OK


def main() -> None:
    sys.exit(run())


if __name__ == "__main__":
    main()
