"""`npuir-import`: a GE / TorchAir graph dump (txt, pbtxt, ge_proto_*.txt) into `.mlir`.

Prints the IR (or writes it to `-o FILE`, atomically), the warnings, and the
import summary (ops per GE type and what each became) on stderr; with `--json`
the summary goes to stdout as one JSON object instead, and the IR only to `-o`.
Exit codes: `EXIT_CODES` below, and those `npuir.tools.cli` gives every tool.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from xdsl.dialects.builtin import ModuleOp, StringAttr

from npuir.api import print_ir
from npuir.context import make_context
from npuir.diagnostics import (
    Diagnostic,
    DiagnosticError,
    Kind,
    SourceLocation,
    UsageError,
    diagnostic_json,
)
from npuir.frontends.ge import import_text
from npuir.frontends.load import Format, Source, read
from npuir.tools.cli import (
    EXIT_INPUT,
    EXIT_OK,
    EXIT_USAGE,
    add_common_arguments,
    exit_codes_epilog,
    print_json,
    print_json_error,
    run_tool,
)
from npuir.tools.output import write_text
from npuir.tools.run import USAGE

EXIT_CODES = (
    (EXIT_OK, "ok"),
    (EXIT_INPUT, "an error in the dump (or an unknown GE type under --strict)"),
    (EXIT_USAGE, "usage (bad flag, an output that cannot be written)"),
)


ALREADY_MLIR = Kind(
    "input.already-mlir",
    "'{path}' is MLIR already, not a graph dump or a torch.export archive (npuir-opt and "
    "npuir-run read it as it is)",
)
"""npuir-import given MLIR, which needs no import; argument: `path`."""


def _arg_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="npuir-import",
        description="Import a GE or TorchAir graph dump (txt, pbtxt, ge_proto_*.txt) as npuir IR.",
        epilog=exit_codes_epilog(EXIT_CODES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("input", help="the dump file, or a torch.export archive (.pt2)")
    ap.add_argument("-o", "--output-file", help="write the IR here instead of stdout")
    ap.add_argument("--graph", help="the graph to import when the dump holds several")
    ap.add_argument(
        "--strict", action="store_true", help="refuse GE types the op table does not know"
    )
    ap.add_argument(
        "--json", action="store_true", help="print the import summary as JSON on stdout"
    )
    add_common_arguments(ap)
    return ap


def _run_archive(args: argparse.Namespace, source: Source) -> int:
    """A `torch.export.save` archive: the module, its warnings on stderr and the summary
    (ops per ATen target and what each became); with `--json` the summary, or the error,
    as JSON on stdout and the IR only to `-o`."""
    from npuir.frontends.pt2 import read_pt2
    from npuir.frontends.torch import import_pt2

    ctx = make_context(collect_diagnostics=True)
    try:
        archive = read_pt2(source.filename, data=source.data)
        module = import_pt2(archive, strict=args.strict, diagnostics=ctx.diagnostics)
    except DiagnosticError as exc:
        if args.json:
            print_json_error(exc.diagnostic, exc.notes, list(ctx.diagnostics.drain()))
        else:
            for warning in ctx.diagnostics.drain():
                print(ctx.diagnostics.render(warning), file=sys.stderr)
            print(ctx.diagnostics.render(exc.diagnostic), file=sys.stderr)
        return EXIT_INPUT
    warnings = list(ctx.diagnostics.drain())
    if not args.json:
        for warning in warnings:
            print(ctx.diagnostics.render(warning), file=sys.stderr)
    try:
        if args.output_file or not args.json:
            write_text(args.output_file or "-", print_ir(module, debuginfo=True))
    except UsageError as exc:
        if args.json:
            print_json_error(Diagnostic.of("error", USAGE, reason=str(exc)), (), warnings)
        else:
            print(f"npuir-import: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    summary = _archive_summary(archive.model, archive.program, module)
    if args.json:
        print_json({**summary, "warnings": [diagnostic_json(w) for w in warnings]})
    else:
        became = summary["types"]
        width = max((len(t) for t in became), default=0)
        lines = [f"imported program '{summary['graph']}': {summary['ops']} ATen ops"]
        for target, entry in became.items():
            what = (
                ", ".join(f"{n} {op}" if n > 1 else op for op, n in entry["became"].items())
                or "nothing (folded)"
            )
            lines.append(f"  {target:<{width}} {entry['count']:>5}  -> {what}")
        sys.stderr.write("\n".join(lines) + "\n")
    return EXIT_OK


def _archive_summary(model: str, program: dict[str, Any], module: ModuleOp) -> dict[str, Any]:
    """The import summary of a `.pt2`, as `npuir-import --json` gives a dump's: `graph`
    (the model's name in the archive), `ops` (its ATen nodes) and, per ATen target, how
    many nodes and the npu ops they became (by `npu.op_name`, the node's name)."""
    from npuir.dialects import npu

    nodes = ((program.get("graph_module") or {}).get("graph") or {}).get("nodes") or []
    target_of: dict[str, str] = {}
    types: dict[str, dict[str, Any]] = {}
    for spec in nodes:
        target = str(spec.get("target", "")).removeprefix("torch.ops.")
        entry = types.setdefault(target, {"count": 0, "became": {}})
        entry["count"] += 1
        target_of[str(spec.get("name", ""))] = target
    for op in module.walk():
        name = op.attributes.get(npu.OP_NAME)
        if isinstance(name, StringAttr) and name.data in target_of:
            became = types[target_of[name.data]]["became"]
            became[op.name] = became.get(op.name, 0) + 1
    ordered = {
        t: {"count": e["count"], "became": dict(sorted(e["became"].items()))}
        for t, e in sorted(types.items())
    }
    return {"graph": model, "ops": len(nodes), "types": ordered}


def run(argv: Sequence[str] | None = None) -> int:
    args = _arg_parser().parse_args(argv)
    ctx = make_context()
    try:
        source = read(args.input)
        if source.format is Format.PT2:
            return _run_archive(args, source)
        if source.format is Format.MLIR:
            raise DiagnosticError(
                Diagnostic.of(
                    "error",
                    ALREADY_MLIR,
                    SourceLocation(source.filename, 1, 0),
                    path=source.filename,
                )
            )
        text, filename = source.text(ctx), source.filename
        del source  # its bytes: as large as the text, which is all the import needs
        result = import_text(ctx, text, filename, args.graph, args.strict)
        del text  # the diagnostics' source manager keeps it
    except DiagnosticError as exc:
        if args.json:
            print_json_error(exc.diagnostic, exc.notes)
        else:
            for diagnostic in (exc.diagnostic, *exc.notes):
                print(ctx.diagnostics.render(diagnostic), file=sys.stderr)
        return EXIT_INPUT
    for warning in result.warnings:
        print(ctx.diagnostics.render(warning), file=sys.stderr)
    text = print_ir(result.module, debuginfo=True)
    if args.output_file:
        try:
            write_text(args.output_file, text)
        except UsageError as exc:
            if args.json:
                print_json_error(Diagnostic.of("error", USAGE, reason=str(exc)))
            else:
                print(f"npuir-import: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
    elif not args.json:
        sys.stdout.write(text)
    if args.json:
        print_json(result.summary.to_json())
    else:
        sys.stderr.write(result.summary.render())
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> NoReturn:
    sys.exit(run_tool("npuir-import", run, argv, exiting=True))


if __name__ == "__main__":
    main()
