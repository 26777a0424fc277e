"""`npuir-opt`: parse, verify, run passes and print, with xdsl-opt's conventions.

Exit codes: `EXIT_CODES` below (and `npuir.tools.cli` for the ones every tool shares).
Output goes to stdout or `-o FILE` only when every chunk succeeded, through
`npuir.tools.output.write_output`: a failing run never leaves a half-written or
truncated output behind.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from typing import NoReturn

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from npuir.api import print_ir
from npuir.context import NpuirContext, make_context
from npuir.diagnostics import DiagnosticError, UsageError
from npuir.executor import parse_jobs, using
from npuir.frontends.load import Format, load_source, read
from npuir.parsing import SPLIT_MARKER, Chunk, parse_module, split_input
from npuir.passmanager.pipeline import build_pipeline, run_passes
from npuir.passmanager.registry import describe_passes, load_passes
from npuir.tools.cli import (
    EXIT_INPUT,
    EXIT_OK,
    EXIT_USAGE,
    add_common_arguments,
    exit_codes_epilog,
    run_tool,
)
from npuir.tools.output import write_text
from npuir.verifier import verify

EXIT_CODES = (
    (EXIT_OK, "ok (also when --verify-diagnostics or --parsing-diagnostics got its error)"),
    (EXIT_INPUT, "error in the input (syntax, verifier or pass; --warnings-as-errors)"),
    (EXIT_USAGE, "usage (bad flag, unknown pass or option, an output that cannot be written)"),
)


def _arg_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="npuir-opt",
        description="Parse, verify and transform npuir IR (xdsl-opt conventions).",
        epilog=exit_codes_epilog(EXIT_CODES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
    ap.add_argument(
        "--mlir-print-debuginfo",
        action="store_true",
        help="print every op's location (loc(...)), as mlir-opt does",
    )
    ap.add_argument("--allow-unregistered-dialect", action="store_true")
    ap.add_argument(
        "--parser",
        choices=("fast", "xdsl"),
        default="fast",
        help="fast: npuir's reader of one-line ops in front of xDSL's parser (default); "
        "xdsl: xDSL's parser alone, the reference the fast one is tested against",
    )
    ap.add_argument(
        "--warnings-as-errors", action="store_true", help="treat warnings as errors (exit 1)"
    )
    ap.add_argument(
        "--verify-each",
        action="store_true",
        help="verify the IR after every pass (MLIR's default; npuir verifies after parsing "
        "and after the last pass, since on large modules verification costs more than the "
        "passes -- the test suite runs with it on)",
    )
    ap.add_argument(
        "--list-passes", action="store_true", help="list passes with their options, and pipelines"
    )
    ap.add_argument(
        "--load-pass",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE (a dotted name or a .py file) and register the passes it defines; "
        "repeatable",
    )
    ap.add_argument(
        "--jobs",
        default="1",
        metavar="N|ray|ray:N",
        help="judge stream-partition{mode=auto}'s candidates on N worker processes, or on Ray "
        "(the ray extra); 1 (the default) judges them in this process.  The output is the "
        "same whatever the number",
    )
    add_common_arguments(ap)
    return ap


def _flush_warnings(ctx: NpuirContext, as_errors: bool) -> bool:
    """Print pending warnings and remarks; True when one counts as an error."""
    failed = False
    for diag in ctx.diagnostics.drain():
        if as_errors and diag.severity == "warning":
            diag = dataclasses.replace(diag, severity="error")
            failed = True
        print(ctx.diagnostics.render(diag), file=sys.stderr)
    return failed


def run(argv: Sequence[str] | None = None) -> int:
    args = _arg_parser().parse_args(argv)
    try:
        for module in args.load_pass:
            load_passes(module)
        if args.list_passes:
            sys.stdout.write(describe_passes())
            return EXIT_OK
        passes = build_pipeline(args.passes)
        jobs = parse_jobs(args.jobs)
    except UsageError as exc:
        print(f"npuir-opt: error: {exc}", file=sys.stderr)
        return EXIT_USAGE

    ctx = make_context(allow_unregistered=args.allow_unregistered_dialect, collect_diagnostics=True)
    ctx.parser = args.parser
    try:
        source = read(args.input)
        # MLIR may be split into cases; a dump or an archive is one program.
        chunks: list[Chunk | ModuleOp] = (
            list(split_input(source.text(ctx), args.split_input_file))
            if source.format is Format.MLIR
            else [load_source(source, ctx)]
        )
    except DiagnosticError as exc:
        print(ctx.diagnostics.render(exc.diagnostic), file=sys.stderr)
        return EXIT_INPUT
    except UsageError as exc:
        print(f"npuir-opt: error: {exc}", file=sys.stderr)
        return EXIT_USAGE

    try:
        pool = jobs.make()  # (Ray may not be installed)
    except UsageError as exc:
        print(f"npuir-opt: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    with pool, using(pool):
        outputs, failed = _run_chunks(ctx, args, source.filename, chunks, passes)
    if failed:
        return EXIT_INPUT
    result = f"{SPLIT_MARKER}\n".join(outputs)
    if args.output_file is not None:
        try:
            write_text(args.output_file, result)
        except UsageError as exc:
            print(f"npuir-opt: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
    else:
        sys.stdout.write(result)
    return EXIT_OK


def _run_chunks(
    ctx: NpuirContext,
    args: argparse.Namespace,
    filename: str,
    chunks: list[Chunk | ModuleOp],
    passes: list[ModulePass],
) -> tuple[list[str], bool]:
    """Each chunk parsed, verified and run through `passes`: the printed outputs (and the
    expected diagnostics), and whether one failed."""
    outputs: list[str] = []
    failed = False
    for chunk in chunks:
        phase = "parse"
        try:
            if isinstance(chunk, ModuleOp):
                module = chunk
            else:
                sources = ctx.diagnostics.sources
                module = parse_module(ctx, chunk.text, filename, sources, chunk.offset)
            phase = "verify"
            verify(module)
            run_passes(ctx, module, passes, verify_each=args.verify_each or None)
            if _flush_warnings(ctx, args.warnings_as_errors):
                failed = True
                continue
            outputs.append(
                print_ir(module, generic=args.print_op_generic, debuginfo=args.mlir_print_debuginfo)
            )
        except DiagnosticError as exc:
            _flush_warnings(ctx, args.warnings_as_errors)
            expected = args.parsing_diagnostics if phase == "parse" else args.verify_diagnostics
            # The notes an error carries (where the other side of a conflict is) print
            # after it, as MLIR prints an error's attached notes.
            rendered = "\n".join(ctx.diagnostics.render(d) for d in (exc.diagnostic, *exc.notes))
            if expected:
                outputs.append(rendered + "\n")
            else:
                print(rendered, file=sys.stderr)
                failed = True
    return outputs, failed


def main(argv: Sequence[str] | None = None) -> NoReturn:
    sys.exit(run_tool("npuir-opt", run, argv, exiting=True))


if __name__ == "__main__":
    main()
