"""`npuir-opt`: parse, verify, run passes and print, with xdsl-opt's conventions.

Exit codes: 0 ok (also when `--verify-diagnostics` / `--parsing-diagnostics`
printed the expected error), 1 an error in the input, 2 a usage error.
Output goes to stdout or `-o FILE` only when every chunk succeeded; the file
is written to a temporary name and renamed, so a failing run never leaves a
half-written or truncated output behind.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence

from npuir import make_context, print_ir
from npuir.context import NpuirContext
from npuir.deep_stack import on_deep_stack
from npuir.diagnostics import Diagnostic, DiagnosticError, SourceManager, UsageError
from npuir.parsing import SPLIT_MARKER, decode_source, parse_module, split_input
from npuir.pipeline import build_pipeline, run_passes
from npuir.transforms import PASSES
from npuir.transforms.pipelines import PIPELINE_SUMMARIES, PIPELINES
from npuir.verifier import verify

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def _arg_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="npuir-opt",
        description="Parse, verify and transform npuir IR (xdsl-opt conventions).",
        epilog="exit codes: 0 ok, 1 error in the input, 2 usage error",
    )
    ap.add_argument("input", nargs="?", default="-", help="input .mlir file ('-' for stdin)")
    ap.add_argument("-p", "--passes", default="", help="comma-separated pass pipeline")
    ap.add_argument("-o", "--output-file", help="write the result here instead of stdout")
    ap.add_argument("--split-input-file", action="store_true", help="process '// -----' chunks")
    ap.add_argument(
        "--verify-diagnostics",
        action="store_true",
        help="print a verifier or pass error on stdout and exit 0",
    )
    ap.add_argument(
        "--parsing-diagnostics",
        action="store_true",
        help="print a parse error on stdout and exit 0",
    )
    ap.add_argument("--print-op-generic", action="store_true", help="print the generic form")
    ap.add_argument("--allow-unregistered-dialect", action="store_true")
    ap.add_argument(
        "--warnings-as-errors", action="store_true", help="treat warnings as errors (exit 1)"
    )
    ap.add_argument("--list-passes", action="store_true", help="list passes and pipelines")
    return ap


def list_passes() -> str:
    lines = []
    for name in sorted(PASSES):
        doc = (PASSES[name]().__doc__ or "").strip().splitlines()
        lines.append(f"{name:<24} {doc[0] if doc else ''}")
    for name in sorted(PIPELINES):
        lines.append(f"{name:<24} {PIPELINE_SUMMARIES[name]} ({PIPELINES[name]})")
    return "\n".join(lines) + "\n"


def _read_input(path: str, sources: SourceManager) -> tuple[str, str]:
    if path == "-":
        return decode_source(sys.stdin.buffer.read(), "<stdin>", sources), "<stdin>"
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise DiagnosticError(
            Diagnostic("error", f"cannot read '{path}': {exc.strerror}")
        ) from None
    return decode_source(data, path, sources), path


def _write_atomically(path: str, text: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".npuir-opt-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _flush_warnings(ctx: NpuirContext, as_errors: bool) -> bool:
    """Print pending warnings and remarks; True when one counts as an error."""
    failed = False
    for diag in ctx.diagnostics.drain():
        if as_errors and diag.severity == "warning":
            diag = Diagnostic("error", diag.message, diag.location)
            failed = True
        print(ctx.diagnostics.render(diag), file=sys.stderr)
    return failed


def run(argv: Sequence[str] | None = None) -> int:
    args = _arg_parser().parse_args(argv)
    if args.list_passes:
        sys.stdout.write(list_passes())
        return EXIT_OK
    try:
        passes = build_pipeline(args.passes)
    except UsageError as exc:
        print(f"npuir-opt: error: {exc}", file=sys.stderr)
        return EXIT_USAGE

    ctx = make_context(allow_unregistered=args.allow_unregistered_dialect)
    try:
        text, filename = _read_input(args.input, ctx.diagnostics.sources)
    except DiagnosticError as exc:
        print(ctx.diagnostics.render(exc.diagnostic), file=sys.stderr)
        return EXIT_ERROR
    ctx.diagnostics.sources.add(filename, text)

    outputs: list[str] = []
    failed = False
    for chunk in split_input(text, args.split_input_file):
        phase = "parse"
        try:
            module = parse_module(ctx, chunk.text, filename, ctx.diagnostics.sources, chunk.offset)
            phase = "verify"
            verify(module)
            run_passes(ctx, module, passes)
            if _flush_warnings(ctx, args.warnings_as_errors):
                failed = True
                continue
            outputs.append(print_ir(module, generic=args.print_op_generic))
        except DiagnosticError as exc:
            _flush_warnings(ctx, args.warnings_as_errors)
            expected = args.parsing_diagnostics if phase == "parse" else args.verify_diagnostics
            rendered = ctx.diagnostics.render(exc.diagnostic)
            if expected:
                outputs.append(rendered + "\n")
            else:
                print(rendered, file=sys.stderr)
                failed = True
    if failed:
        return EXIT_ERROR
    result = f"{SPLIT_MARKER}\n".join(outputs)
    if args.output_file:
        _write_atomically(args.output_file, result)
    else:
        sys.stdout.write(result)
    return EXIT_OK


def main() -> None:
    # Deeply nested input recurses deeply in every phase (see npuir.deep_stack).
    sys.exit(on_deep_stack(run))


if __name__ == "__main__":
    main()
