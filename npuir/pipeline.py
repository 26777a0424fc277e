"""Building and running pass pipelines from textual specs.

A spec is xDSL's: `pass-a,pass-b{opt=value}`; a name from
`npuir.transforms.pipelines.PIPELINES` expands to its passes.  Unknown passes
and bad options are `UsageError`s that list the valid choices; a pass that
finds a problem in the IR raises a located `DiagnosticError`.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpecParseError, parse_pipeline
from xdsl.utils.exceptions import DiagnosticException

from npuir.deep_stack import deep_stack
from npuir.diagnostics import Diagnostic, DiagnosticError, UsageError
from npuir.gc_pause import collector_paused
from npuir.transforms import PASSES
from npuir.transforms.pipelines import PIPELINES
from npuir.verifier import verify

PassCallback = Callable[[ModulePass, ModuleOp], None]


def _expand(spec: str) -> str:
    parts = [p.strip() for p in spec.split(",")] if spec.strip() else []
    return ",".join(PIPELINES.get(p, p) for p in parts)


def option_names(pass_cls: type[ModulePass]) -> list[str]:
    return [f.name.replace("_", "-") for f in dataclasses.fields(pass_cls) if f.init]


def build_pipeline(spec: str) -> list[ModulePass]:
    """Parse `spec` into pass instances; raise `UsageError` on a bad spec."""
    try:
        specs = list(parse_pipeline(_expand(spec)))
    except (ArgSpecParseError, ValueError) as exc:
        raise UsageError(f"malformed pass pipeline '{spec}': {exc}") from None
    passes: list[ModulePass] = []
    for pass_spec in specs:
        factory = PASSES.get(pass_spec.name)
        if factory is None:
            choices = ", ".join(sorted([*PASSES, *PIPELINES]))
            raise UsageError(f"unknown pass '{pass_spec.name}' (choose from: {choices})")
        pass_cls = factory()
        try:
            passes.append(pass_cls.from_pass_spec(pass_spec))
        except (ValueError, TypeError) as exc:
            options = ", ".join(option_names(pass_cls)) or "none"
            raise UsageError(
                f"bad option for pass '{pass_spec.name}': {exc} (options: {options})"
            ) from None
    return passes


@deep_stack
def run_passes(
    ctx: Context,
    module: ModuleOp,
    passes: list[ModulePass],
    after_each: PassCallback | None = None,
    verify_each: bool = True,
) -> None:
    """Apply `passes` in order, verifying the IR after each one (unless told not to:
    the benchmarks time the passes alone).

    Python's cyclic collector is paused meanwhile: passes allocate many small
    objects that live as long as the IR, and each collection would walk the
    whole module again (on a 100k-op program, a third of the pass time).
    """
    with collector_paused():
        _run_passes(ctx, module, passes, after_each, verify_each)


def _run_passes(
    ctx: Context,
    module: ModuleOp,
    passes: list[ModulePass],
    after_each: PassCallback | None,
    verify_each: bool,
) -> None:
    for p in passes:
        try:
            p.apply(ctx, module)
        except DiagnosticException as exc:
            # An xDSL-level failure inside a pass carries no location of its own.
            raise DiagnosticError(Diagnostic("error", f"{p.name}: {exc}")) from None
        if verify_each:
            verify(module)
        if after_each is not None:
            after_each(p, module)


def choices_of(pass_cls: type[ModulePass], field: str) -> tuple[str, ...]:
    """The values a `Literal[...]`-typed pass option accepts."""
    hints = typing.get_type_hints(pass_cls)
    return tuple(str(a) for a in typing.get_args(hints[field]))
