"""`npuir-run`: interpret and simulate an npuir program, and report.

Exit codes: 0 ok; 1 bad input (including a race refused and a shape no gear
matches); 2 usage (including --plot without matplotlib and an unwritable --trace or --plot
path); 3 deadlock (also
under --check); 4 check failed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from npuir.backends.npu.runner import (
    EXIT_INPUT,
    EXIT_USAGE,
    RunConfig,
    run_program,
)
from npuir.deep_stack import on_deep_stack
from npuir.diagnostics import DiagnosticError, SourceManager, UsageError

EPILOG = """exit codes:
  0  ok
  1  bad input (syntax, verifier or pass error, a race refused, a shape no gear matches)
  2  usage (bad flag or value, --plot without matplotlib, an unwritable output path)
  3  deadlock (also under --check)
  4  --check found an output that differs from the unscheduled program"""


def _shape(text: str) -> tuple[str, tuple[int, ...]]:
    arg, sep, dims = text.partition("=")
    try:
        if not sep or not arg:
            raise ValueError
        shape = tuple(int(d) for d in dims.lower().split("x"))
        if any(d < 0 for d in shape):
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"'{text}' is not ARG=DxD... (e.g. 0=4x2 or x1=4x2)"
        ) from None
    return arg, shape


def _arg_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="npuir-run",
        description="Interpret and simulate an npuir program on an NPU model.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("input", help="input .mlir file")
    ap.add_argument(
        "--pipeline", help="passes to apply first (default: npu-default if not lowered)"
    )
    who = ap.add_mutually_exclusive_group()
    who.add_argument("--entry", help="the function to run on every rank")
    who.add_argument("--entries", help="one function per rank, comma-separated (MPMD)")
    ap.add_argument("--ranks", type=int, default=1, help="ranks running --entry (SPMD)")
    ap.add_argument("--hw", help="device preset (910b2, 910b4, a3, tiny) or TOML file")
    ap.add_argument("--shape", type=_shape, action="append", default=[], metavar="ARG=DxD")
    ap.add_argument("--inputs", help=".npz with arrays argN (or rankR/argN)")
    ap.add_argument("--seed", type=int, default=0, help="seed for random inputs")
    ap.add_argument("--check", action="store_true", help="compare with the unscheduled program")
    ap.add_argument("--timing-only", action="store_true", help="simulate only, no numerics")
    ap.add_argument("--trace", metavar="OUT.json", help="write a Chrome/Perfetto trace")
    ap.add_argument("--plot", metavar="OUT.png", help="write a PNG timeline (needs matplotlib)")
    ap.add_argument("--json", action="store_true", help="print the report as one JSON object")
    return ap


def run(argv: Sequence[str] | None = None) -> int:
    ap = _arg_parser()
    args = ap.parse_args(argv)
    if args.ranks < 1:
        ap.error("--ranks must be >= 1")
    if args.check and args.timing_only:
        ap.error("--check needs the numerics; it cannot go with --timing-only")
    if args.plot:
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            print(
                "npuir-run: error: --plot needs matplotlib: pip install 'npuir[plot]'",
                file=sys.stderr,
            )
            return EXIT_USAGE
    config = RunConfig(
        path=args.input,
        pipeline=args.pipeline,
        entry=args.entry,
        entries=args.entries.split(",") if args.entries else None,
        ranks=args.ranks,
        hw=args.hw,
        shapes=dict(args.shape),
        inputs=args.inputs,
        seed=args.seed,
        check=args.check,
        timing_only=args.timing_only,
    )
    # Diagnostics show the offending line, as npuir-opt's do.
    sources = SourceManager()
    try:
        with open(args.input, encoding="utf-8", errors="replace") as f:
            sources.add(args.input, f.read())
    except OSError:
        pass  # run_program reports the unreadable file
    try:
        outcome = run_program(config)
    except UsageError as exc:
        print(f"npuir-run: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except DiagnosticError as exc:
        for diagnostic in (exc.diagnostic, *exc.notes):
            print(diagnostic.render(sources), file=sys.stderr)
        return EXIT_INPUT
    for warning in outcome.warnings:
        print(warning.render(sources), file=sys.stderr)
    if outcome.result is not None and (args.trace or args.plot):
        from npuir.backends.npu.trace import plot_timeline, write_trace

        writers = [(args.trace, write_trace), (args.plot, plot_timeline)]
        for path, write in writers:
            if not path:
                continue
            try:
                write(outcome.result, outcome.programs, path)
            except OSError as exc:
                print(
                    f"npuir-run: error: cannot write '{path}': {exc.strerror or exc}",
                    file=sys.stderr,
                )
                return EXIT_USAGE
    if args.json:
        print(json.dumps(outcome.report, indent=2))
    else:
        from npuir.backends.npu.report import render_report

        sys.stdout.write(render_report(outcome.report))
    return outcome.status


def main() -> None:
    # Deeply nested input recurses deeply in every phase (see npuir.deep_stack).
    sys.exit(on_deep_stack(run))


if __name__ == "__main__":
    main()
