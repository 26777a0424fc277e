"""`npuir-run`: interpret and simulate an npuir program, and report.

Exit codes: `EXIT_CODES` below (and `npuir.tools.cli` for the ones every tool shares).
With `--json`, stdout is one JSON object whatever happens after the arguments
parsed: the report (with every warning), or `{"error": {...}, "warnings": [...]}`
with the exit code the error has without `--json`; nothing goes to stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NoReturn

from xdsl.dialects.func import FuncOp

from npuir.diagnostics import (
    Diagnostic,
    DiagnosticError,
    Kind,
    SourceManager,
    UsageError,
    diagnostic_json,
)
from npuir.driver.run import (
    EXIT_CHECK,
    EXIT_DEADLOCK,
    EXIT_INPUT,
    EXIT_OK,
    EXIT_USAGE,
    RunConfig,
    RunOutcome,
    fit_program,
    input_arrays,
    output_arrays,
    run_program,
    save_arrays,
)
from npuir.frontends.load import Format, Source, read
from npuir.passmanager.pipeline import PassOrderError
from npuir.passmanager.registry import load_passes
from npuir.progress import progress
from npuir.tools.cli import (
    add_common_arguments,
    exit_codes_epilog,
    print_json,
    run_tool,
    shape_argument,
)
from npuir.tools.output import write_bytes, write_output, write_text

if TYPE_CHECKING:
    from npuir.backends.npu.html_report import GearRun

USAGE = Kind("usage.invalid", "{reason}")
"""A tool invoked the wrong way; `reason` is the `UsageError`'s message (text only, made
where the flag or option was read)."""

EXIT_CODES = (
    (EXIT_OK, "ok"),
    (EXIT_INPUT, "bad input (syntax, verifier or pass error, a race refused, no gear matches)"),
    (EXIT_USAGE, "usage (bad flag or value, --plot without matplotlib, an unwritable output)"),
    (EXIT_DEADLOCK, "deadlock (also under --check)"),
    (EXIT_CHECK, "--check found an output that differs from the unscheduled program"),
)


def _seed(text: str) -> int:
    try:
        seed = int(text)
    except ValueError:
        seed = -1
    if seed < 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a seed: give a whole number >= 0")
    return seed


def _arg_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="npuir-run",
        description="Interpret and simulate an npuir program on an NPU model.",
        epilog=exit_codes_epilog(EXIT_CODES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("input", help="input .mlir file ('-' for stdin)")
    ap.add_argument(
        "--pipeline", help="passes to apply first (default: npu-default if not lowered)"
    )
    who = ap.add_mutually_exclusive_group()
    who.add_argument("--entry", help="the function to run on every rank")
    who.add_argument("--entries", help="one function per rank, comma-separated (MPMD)")
    ap.add_argument(
        "--ranks",
        type=int,
        help="real SPMD ranks running --entry (default 1); with --entries it must match",
    )
    ap.add_argument(
        "--mirror-peers",
        action="store_true",
        help="take the ranks a collective's group needs beyond those run as copies of them "
        "(the report lists which); without it such a group is an error",
    )
    ap.add_argument("--hw", help="device preset (910b2, 910b4, a3, tiny) or TOML file")
    ap.add_argument("--shape", type=shape_argument, action="append", default=[], metavar="ARG=DxD")
    ap.add_argument("--inputs", help=".npz with arrays argN (or rankR/argN)")
    ap.add_argument("--seed", type=_seed, default=0, help="seed for random inputs (>= 0)")
    ap.add_argument("--check", action="store_true", help="compare with the unscheduled program")
    ap.add_argument(
        "--mem-budget",
        metavar="BYTES|hbm",
        help="lower with auto under this memory budget (64MiB, 2GiB, or hbm: the device's HBM "
        "less the inputs): the fastest schedule whose memory plan fits",
    )
    ap.add_argument(
        "--favor",
        choices=("max-concurrency", "min-peak-memory"),
        help="with --mem-budget: keep the fastest schedule that fits (max-concurrency, the "
        "default) or the one with the smallest memory plan (min-peak-memory)",
    )
    ap.add_argument(
        "--check-memory",
        action="store_true",
        help="run the numerics on one flat buffer per rank laid out by the memory plan, in "
        "the order most hostile to it, so an unsafe plan corrupts outputs (with --check)",
    )
    ap.add_argument("--timing-only", action="store_true", help="simulate only, no numerics")
    ap.add_argument("--trace", metavar="OUT.json", help="write a Chrome/Perfetto trace")
    ap.add_argument("--plot", metavar="OUT.png", help="write a PNG timeline (needs matplotlib)")
    ap.add_argument(
        "--report",
        metavar="OUT.html",
        help="write one self-contained HTML page: the timeline (zoomable), busy time, cores, "
        "memory, step trace and the reasons (needs matplotlib)",
    )
    ap.add_argument(
        "--outputs", metavar="OUT.npz", help="save the outputs computed: outN (or rankR/outN)"
    )
    ap.add_argument(
        "--save-inputs",
        metavar="IN.npz",
        help="save the inputs used, as --inputs reads them: argN (or rankR/argN)",
    )
    ap.add_argument(
        "--json",
        action="store_true",
        help="print the report, or the error, as one JSON object with every warning",
    )
    ap.add_argument(
        "--quiet",
        action="store_true",
        help="no progress line on stderr (it shows only on a terminal, after 2 s)",
    )
    ap.add_argument(
        "--load-pass",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE (a dotted name or a .py file) and register the passes it defines, "
        "for --pipeline; repeatable",
    )
    ap.add_argument(
        "--profile",
        metavar="FILE.csv",
        help="an msprof-style op summary whose task durations and block dims replace the cost "
        "model's for the ops it covers (by npu.op_name, else by op type and input shapes)",
    )
    ap.add_argument(
        "--emit-profile", metavar="OUT.csv", help="write the simulated ops as such an op summary"
    )
    ap.add_argument(
        "--fit-hw",
        metavar="PROFILE.csv",
        help="instead of running: fit the device's per-core rates and launch overhead to this "
        "profile of the program (least squares) and print the fit error; needs --fit-out",
    )
    ap.add_argument("--fit-out", metavar="HW.toml", help="where --fit-hw writes the --hw file")
    add_common_arguments(ap)
    return ap


def _fail(
    args: argparse.Namespace,
    code: int,
    error: Diagnostic,
    notes: Sequence[Diagnostic],
    sources: SourceManager,
) -> int:
    """Report an error (and the warnings before it) on stderr, or as JSON on stdout."""
    if args.json:
        report: dict[str, Any] = {
            "error": {
                **diagnostic_json(error),
                "notes": [diagnostic_json(n) for n in notes if n.severity == "note"],
            },
            "warnings": [diagnostic_json(n) for n in notes if n.severity != "note"],
        }
        print_json(report)
    elif error.location is None and code == EXIT_USAGE:
        print(f"npuir-run: error: {error.message}", file=sys.stderr)
    else:
        for diagnostic in (error, *notes):
            print(diagnostic.render(sources), file=sys.stderr)
    return code


def memory_budget(spec: str | None, outcome: RunOutcome) -> int | None:
    """`--mem-budget` in bytes for rank 0's program (None without one), as the run's
    `mem-plan` pass read it."""
    if spec is None or outcome.hw is None or not outcome.programs:
        return None
    from npuir.analysis.mem_planners import argument_bytes, parse_budget

    return parse_budget(spec, outcome.hw.hbm_bytes, argument_bytes(outcome.programs[0].func))


def advised_config(args: argparse.Namespace, mlir: str | None) -> RunConfig | None:
    """How `npuir-advise --report` runs the recommended program (`mlir`, None when advise
    wrote none): as `npuir-run` would, timing only, on the device and ranks advise used."""
    if mlir is None:
        return None
    return RunConfig(
        path=f"{args.input} (with the recommended edits)",
        source=mlir,
        entry=args.entry,
        entries=args.entries.split(",") if args.entries else None,
        ranks=args.ranks,
        hw=args.hw,
        shapes=dict(args.shape),
        timing_only=True,
    )


def write_advice_report(
    path: str, advice: dict[str, Any], title: str, advised: RunConfig | None
) -> None:
    """`npuir-advise --report`: the advice's HTML page at `path`, with the run of `advised`
    (the program with the recommended edits) when it runs as it is; a `UsageError` when
    matplotlib is missing or the file cannot be written."""
    from npuir.backends.npu.html_report import ReportUnavailable, Run, advice_report_html

    recommended, note = None, ""
    if advised is not None:
        try:
            outcome = run_program(advised)
        except (DiagnosticError, UsageError) as exc:
            note = f"The recommended program is not drawn: {exc}"
        else:
            if outcome.result is not None:
                recommended = Run(outcome.report, outcome.result, outcome.programs, outcome.hw)
    try:
        page = advice_report_html(advice, title=title, recommended=recommended, note=note)
    except ReportUnavailable as exc:
        raise UsageError(str(exc)) from None
    write_text(path, page)


def _gear_runs(config: RunConfig) -> list[GearRun]:
    """For `--report` on a geared program (rank 0's entry has gears): one entry per gear,
    the run's own gear marked (the page draws it from the run), every other one run timing-only at the shapes that
    select it (on every rank, as `--shape` gives them); empty for a program without gears."""
    from npuir.backends.npu.html_report import GearRun, Run
    from npuir.context import make_context
    from npuir.driver.gear_cases import gear_cases
    from npuir.driver.run import entries_and_shapes
    from npuir.frontends.load import load_source

    assert isinstance(config.source, Source)
    module = load_source(config.source, make_context(collect_diagnostics=True))
    names, shapes = entries_and_shapes(config, module)
    func = next(f for f in module.ops if isinstance(f, FuncOp) and f.sym_name.data == names[0])
    out: list[GearRun] = []
    for case in gear_cases(func):
        args = [(int(k), v) for k, v in case.shapes.items()]
        if all(shapes[0][a] == v for a, v in args):
            out.append(GearRun(case.label, None, taken=True))
            continue
        # The user's shapes of the gear's arguments give way to the gear's (an argument may
        # be named by index, name or %name).
        keys = {k for a, _ in args for k in (str(a), *_arg_names(func, a))}
        given = {k: v for k, v in config.shapes.items() if k not in keys}
        gear_config = replace(
            config,
            shapes={**given, **case.shapes},
            inputs=None,
            check=False,
            check_memory=False,
            timing_only=True,
        )
        try:
            run = run_program(gear_config)
        except (DiagnosticError, UsageError) as exc:
            out.append(GearRun(case.label, None, note=f"This gear does not run: {exc}"))
            continue
        assert run.result is not None
        out.append(GearRun(case.label, Run(run.report, run.result, run.programs, run.hw)))
    return out


def _arg_names(func: FuncOp, index: int) -> tuple[str, ...]:
    hint = func.args[index].name_hint
    return (hint, f"%{hint}") if hint else ()


def _write_files(args: argparse.Namespace, outcome: RunOutcome, config: RunConfig) -> None:
    """Every output file asked for; raises `OutputError` (a `UsageError`) on the first that
    cannot be written."""
    if outcome.result is not None and (args.trace or args.plot or args.emit_profile or args.report):
        from npuir.backends.npu.profile import profile_csv
        from npuir.backends.npu.trace import plot_timeline, trace_json

        result, programs = outcome.result, outcome.programs
        if args.trace:
            budget = memory_budget(args.mem_budget, outcome)
            data = trace_json(result, programs, hw=outcome.hw, memory_budget=budget)
            write_bytes(args.trace, data)
        if args.plot:
            write_output(args.plot, lambda out: plot_timeline(result, programs, out))
        if args.emit_profile:
            write_text(args.emit_profile, profile_csv(result, programs))
        if args.report:
            from npuir.backends.npu.html_report import run_report_html

            page = run_report_html(
                outcome.report,
                result,
                programs,
                outcome.hw,
                title=f"npuir-run {args.input}",
                memory_budget=memory_budget(args.mem_budget, outcome),
                gears=_gear_runs(config),
            )
            write_text(args.report, page)
    if args.outputs:
        arrays = output_arrays(outcome)
        write_output(args.outputs, lambda out: save_arrays(out, arrays))
    if args.save_inputs:
        inputs = input_arrays(outcome)
        write_output(args.save_inputs, lambda out: save_arrays(out, inputs))


def run(argv: Sequence[str] | None = None) -> int:
    ap = _arg_parser()
    args = ap.parse_args(argv)
    if args.ranks is not None and args.ranks < 1:
        ap.error("--ranks must be >= 1")
    if (args.fit_hw is None) != (args.fit_out is None):
        ap.error("--fit-hw and --fit-out go together")
    if args.json or args.quiet:
        progress.disable()  # the output is for a machine, or the user asked for quiet
    for flag, value in (
        ("--check", args.check),
        ("--check-memory", args.check_memory),
        ("--outputs", args.outputs),
        ("--save-inputs", args.save_inputs),
    ):
        if value and args.timing_only:
            ap.error(f"{flag} needs the numerics; it cannot go with --timing-only")
    # Diagnostics show the offending line, as npuir-opt's do.
    sources = SourceManager()
    try:
        for module in args.load_pass:
            load_passes(module)
        for flag, wanted in (("--plot", args.plot), ("--report", args.report)):
            import importlib.util

            if wanted and importlib.util.find_spec("matplotlib") is None:
                raise UsageError(f"{flag} needs matplotlib: pip install 'npuir[plot]'")
        source = read(args.input)
        if source.format is not Format.PT2:
            sources.add(source.filename, source.data.decode("utf-8", errors="backslashreplace"))
        config = RunConfig(
            path=source.filename,
            source=source,
            pipeline=args.pipeline,
            entry=args.entry,
            entries=args.entries.split(",") if args.entries else None,
            ranks=args.ranks,
            mirror_peers=args.mirror_peers,
            hw=args.hw,
            shapes=dict(args.shape),
            inputs=args.inputs,
            seed=args.seed,
            check=args.check,
            check_memory=args.check_memory,
            mem_budget=args.mem_budget,
            favor=args.favor,
            timing_only=args.timing_only,
            profile=args.profile,
        )
        if args.fit_hw is not None:
            fit, warnings = fit_program(config, args.fit_hw)
            write_text(args.fit_out, fit.to_toml())
            for warning in warnings:
                print(warning.render(sources), file=sys.stderr)
            print(fit.describe())
            print(f"wrote {args.fit_out} (use it with --hw {args.fit_out})")
            return EXIT_OK
        outcome = run_program(config)
        _write_files(args, outcome, config)
    except PassOrderError as exc:  # a usage error with a kind of its own (pass.order)
        return _fail(args, EXIT_USAGE, exc.diagnostic, (), sources)
    except UsageError as exc:
        return _fail(args, EXIT_USAGE, Diagnostic.of("error", USAGE, reason=str(exc)), (), sources)
    except DiagnosticError as exc:
        return _fail(args, EXIT_INPUT, exc.diagnostic, exc.notes, sources)
    progress.clear()
    if args.json:
        print_json(outcome.report)
    else:
        from npuir.backends.npu.report import render_report

        for warning in outcome.warnings:
            print(warning.render(sources), file=sys.stderr)
        sys.stdout.write(render_report(outcome.report))
    return outcome.status


def main(argv: Sequence[str] | None = None) -> NoReturn:
    sys.exit(run_tool("npuir-run", run, argv, exiting=True))


if __name__ == "__main__":
    main()
