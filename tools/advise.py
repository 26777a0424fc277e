"""`npuir-advise`: the user's annotation, one stream and `auto` side by side, with the reasons,
and the recommended annotation as TorchAir edits (`npuir.driver.advise` does the work)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from npuir.diagnostics import Diagnostic, DiagnosticError, SourceManager, UsageError
from npuir.driver.advise import GRANULARITIES, AdviseConfig, advise
from npuir.progress import progress
from npuir.tools.cli import (
    EXIT_INPUT,
    EXIT_OK,
    EXIT_USAGE,
    add_common_arguments,
    exit_codes_epilog,
    print_json,
    print_json_error,
    run_tool,
    shape_argument,
)
from npuir.tools.output import write_text
from npuir.tools.run import USAGE

EXIT_CODES = (
    (EXIT_OK, "ok: the advice is printed"),
    (EXIT_INPUT, "error in the input (syntax, verifier or pass error)"),
    (EXIT_USAGE, "usage (bad flag or value, an output that cannot be written)"),
)


def _weights(text: str) -> list[float]:
    try:
        weights = [float(w) for w in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"'{text}' is not a comma-separated list of numbers"
        ) from None
    if any(not w >= 0 or w == float("inf") for w in weights) or not any(weights):
        raise argparse.ArgumentTypeError(
            f"'{text}': weights are finite, not negative, and not all zero"
        )
    return weights


def _arg_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="npuir-advise",
        description="Where to put npu_stream_switch and limit_core_num, and what it buys: "
        "the program as annotated, on one stream and with auto, simulated side by side.",
        epilog=exit_codes_epilog(EXIT_CODES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "input", help="an .mlir file, a GE / TorchAir dump, or a torch.export archive (.pt2)"
    )
    ap.add_argument("--hw", help="device preset (910b2, 910b4, a3, tiny) or TOML file")
    who = ap.add_mutually_exclusive_group()
    who.add_argument("--entry", help="the function to run on every rank")
    who.add_argument("--entries", help="one function per rank, comma-separated (MPMD)")
    ap.add_argument("--ranks", type=int, help="ranks running --entry (SPMD; default 1)")
    ap.add_argument(
        "--shape",
        type=shape_argument,
        action="append",
        default=[],
        metavar="ARG=DxD",
        help="the shape of a dynamic argument, as npuir-run takes it (default for a geared "
        "program: every gear)",
    )
    ap.add_argument(
        "--granularity",
        choices=GRANULARITIES,
        default="line",
        help="what the advice may move: whole source lines, the same in every layer (line, "
        "the default), only your own with blocks (scope), or any op (op: auto's answer)",
    )
    ap.add_argument(
        "--gear-weights",
        type=_weights,
        metavar="W1,W2,...",
        help="how much each gear's makespan counts, in gear order (default: equally)",
    )
    ap.add_argument(
        "--mem-budget",
        metavar="BYTES|hbm",
        help="recommend only an option whose planned peak fits (64MiB, 2GiB, or hbm: the "
        "device's HBM less the inputs); the pass row is then auto under this budget",
    )
    ap.add_argument(
        "--edit-files",
        action="append",
        metavar="GLOB",
        help="the files edits may name (repeatable; default: every file outside installed "
        "packages, the standard library, torch, transformers and npuir)",
    )
    ap.add_argument(
        "--emit-mlir",
        metavar="OUT.mlir",
        help="write the input with the recommended scopes, in source form",
    )
    ap.add_argument(
        "--jobs",
        default="1",
        metavar="N|ray|ray:N",
        help="run the baselines beside the search, and auto's candidates, on N worker "
        "processes, or on Ray (the ray extra); 1 (the default) runs everything in this "
        "process.  The advice is the same whatever the number",
    )
    ap.add_argument("--json", action="store_true", help="print the advice as one JSON object")
    ap.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    ap.add_argument(
        "--report",
        metavar="OUT.html",
        help="also write the advice as one self-contained HTML page (needs matplotlib)",
    )
    add_common_arguments(ap)
    return ap


def run(argv: Sequence[str] | None = None) -> int:
    args = _arg_parser().parse_args(argv)
    if args.json or args.quiet:
        progress.disable()
    config = AdviseConfig(
        path=args.input,
        hw=args.hw,
        entry=args.entry,
        entries=args.entries.split(",") if args.entries else None,
        ranks=args.ranks,
        shapes=dict(args.shape),
        emit_mlir=args.emit_mlir,
        granularity=args.granularity,
        gear_weights=args.gear_weights,
        mem_budget=args.mem_budget,
        edit_files=args.edit_files,
        jobs=args.jobs,
    )
    sources = SourceManager()
    try:
        with open(args.input, "rb") as f:
            # A torch.export archive (a zip) is not text: its diagnostics name its entries.
            if f.read(4) != b"PK\x03\x04":
                f.seek(0)
                sources.add(args.input, f.read().decode("utf-8", errors="replace"))
    except OSError:
        pass  # advise reports the unreadable file
    # --report draws the recommended program: advise writes it as --emit-mlir would.
    advised: dict[str, str] = {}

    def write(path: str, text: str) -> None:
        advised["mlir"] = text
        if args.emit_mlir is not None:
            write_text(path, text)

    if args.report and args.emit_mlir is None:
        config.emit_mlir = args.report + ".mlir"  # a name only: `write` keeps the text
    try:
        advice = advise(config, write=write)
        if args.emit_mlir is None:
            advice.emitted = None
    except UsageError as exc:
        if args.json:
            print_json_error(Diagnostic.of("error", USAGE, reason=str(exc)))
        else:
            print(f"npuir-advise: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except DiagnosticError as exc:
        if args.json:
            notes = [n for n in exc.notes if n.severity == "note"]
            warnings = [n for n in exc.notes if n.severity != "note"]
            print_json_error(exc.diagnostic, notes, warnings)
        else:
            for diagnostic in (exc.diagnostic, *exc.notes):
                print(diagnostic.render(sources), file=sys.stderr)
        return EXIT_INPUT
    if args.report:
        from npuir.tools.run import advised_config, write_advice_report

        try:
            title = f"npuir-advise {args.input}"
            advised_run = advised_config(args, advised.get("mlir"))
            write_advice_report(args.report, advice.to_json(), title, advised_run)
        except UsageError as exc:
            if args.json:
                print_json_error(Diagnostic.of("error", USAGE, reason=str(exc)))
            else:
                print(f"npuir-advise: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
    progress.clear()
    if args.json:
        print_json(advice.to_json())
    else:
        for warning in advice.warnings:
            print(warning.render(sources), file=sys.stderr)
        sys.stdout.write(advice.render())
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> NoReturn:
    sys.exit(run_tool("npuir-advise", run, argv, exiting=True))


if __name__ == "__main__":
    main()
