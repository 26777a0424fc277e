"""Building and running pass pipelines from textual specs.

A spec is xDSL's: `pass-a,pass-b{opt=value}`; a name from
`npuir.transforms.pipelines.PIPELINES` expands to its passes.  Unknown passes
and bad options are `UsageError`s that list the valid choices; a pass that
finds a problem in the IR raises a located `DiagnosticError`.

Pass order is checked against what each pass declares (`npuir.passes.contract_of`: the IR
states it `REQUIRES`, `ESTABLISHES` and `INVALIDATES`), as MLIR's pass manager reports a
missing dependency before it runs anything:

- when the pipeline is built (`build_pipeline`), with no input yet: a pass that needs a
  state an earlier pass of the pipeline undoes, with nothing re-establishing it in between,
  is a `PassOrderError` (a `UsageError`, exit status 2) naming the pass to run first --
  `stream-partition{mode=auto},insert-events` is refused so;
- when it runs (`run_passes`), before the first pass: each state a pass needs that no
  earlier pass establishes must hold of the input (`IRState.witness`), or the run stops
  with a located error at what shows it does not.  A state the input already has needs
  no pass: `insert-events` alone on a partitioned module is a valid pipeline.  Past a
  pass that declares no contract (a stock xDSL pass, an older plug-in) the input's state
  is not known, and only the pipeline's own order is checked.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from collections.abc import Callable, Mapping
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec, ArgSpecParseError, parse_pipeline
from xdsl.utils.exceptions import DiagnosticException

from npuir.analysis.manager import analyses, preserved_by
from npuir.deep_stack import deep_stack
from npuir.diagnostics import Diagnostic, DiagnosticError, Kind, UsageError, op_location
from npuir.gc_pause import collector_paused
from npuir.passes import IRState, Undoes, Witness, contract_of, options_of
from npuir.passmanager.registry import PassRegistry, default_registry
from npuir.progress import progress
from npuir.verifier import verify

PASS_FAILED = Kind("pass.failed", "{pass_name}: {reason}")
"""An xDSL-level failure inside a pass; arguments: `pass_name`, `reason` (xDSL's
`DiagnosticException` message, text only)."""

PASS_ORDER = Kind(
    "pass.order",
    "{pass_name} needs {provider} first: {culprit} before it undoes {state} ({why}); run "
    "{provider} between them",
)
"""A pipeline whose pass needs a state an earlier pass undoes; arguments: `pass_name`,
`state`, `provider` (the pass that establishes the state), `culprit` (the pass that undoes
it, as the pipeline spells it) and `why` (how it undoes it, else what the state means)."""
PASS_PRECONDITION = Kind(
    "pass.precondition",
    "{pass_name} needs {provider} first: the input is not {state} ({detail})",
)
"""The input lacks a state a pass needs and no earlier pass of the pipeline establishes;
arguments: `pass_name`, `state`, `provider` (the pass that establishes it), `detail` (what
is wrong at the op the error points at)."""

PassCallback = Callable[[ModulePass, ModuleOp], None]


class PassOrderError(UsageError):
    """A pipeline whose order breaks a pass's contract (exit status 2); `diagnostic` is
    the `pass.order` diagnostic, its arguments for whoever matches them."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def _expand(spec: str, pipelines: Mapping[str, str]) -> str:
    parts = [p.strip() for p in spec.split(",")] if spec.strip() else []
    return ",".join(pipelines.get(p, p) for p in parts)


def _top_level_parts(spec: str) -> list[str]:
    """`spec`'s comma-separated passes, each with its `{...}` options (commas inside braces
    belong to an option value)."""
    parts: list[str] = []
    depth, start = 0, 0
    for i, char in enumerate(spec):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(spec[start:i].strip())
            start = i + 1
    parts.append(spec[start:].strip())
    return [p for p in parts if p]


def configured_pipeline(
    spec: str,
    options: Mapping[str, Mapping[str, str]],
    registry: PassRegistry | None = None,
) -> str:
    """`spec` (pipeline names expanded) with `options[pass]` added to each pass it names:
    how a front end's settings -- data, such as `CompilerConfig.pass_options()` -- become a
    pipeline, e.g. `configured_pipeline("npu-default", {"stream-partition": {"mode":
    "single"}})` is npu-default partitioning with `mode=single`.  An option the spec
    already sets is replaced."""
    registry = registry or default_registry()
    out: list[str] = []
    for part in _top_level_parts(_expand(spec, registry.pipelines)):
        name, brace, body = part.partition("{")
        extra = options.get(name.strip())
        if not extra:
            out.append(part)
            continue
        given = [item for item in body.rstrip("}").split() if item] if brace else []
        kept = [item for item in given if item.split("=", 1)[0] not in extra]
        merged = kept + [f"{key}={value}" for key, value in extra.items()]
        out.append(f"{name.strip()}{{{' '.join(merged)}}}")
    return ",".join(out)


def build_pipeline(spec: str, registry: PassRegistry | None = None) -> list[ModulePass]:
    """Parse `spec` into pass instances; raise `UsageError` on a bad spec.

    Names resolve in `registry` (by default npuir's passes, the `npuir.passes`
    entry points and the modules loaded with `npuir.passmanager.registry.load_passes`).
    """
    registry = registry or default_registry()
    try:
        specs = list(parse_pipeline(_expand(spec, registry.pipelines)))
    except (ArgSpecParseError, ValueError) as exc:
        raise UsageError(f"malformed pass pipeline '{spec}': {exc}") from None
    passes: list[ModulePass] = []
    for pass_spec in specs:
        pass_cls = registry.get(pass_spec.name)
        if pass_cls is None:
            choices = ", ".join(sorted([*registry.names(), *registry.pipelines]))
            raise UsageError(f"unknown pass '{pass_spec.name}' (choose from: {choices})")
        passes.append(_instantiate(pass_cls, pass_spec))
    check_order(passes)
    return passes


def _spelt(pass_: ModulePass) -> str:
    """`pass_` as a pipeline spells it, with the options it was given that differ from
    their defaults (`stream-partition{mode=auto}`)."""
    given = [
        f"{o.name}={o.spell(getattr(pass_, o.field))}"
        for o in options_of(type(pass_))
        if getattr(pass_, o.field) != o.default
    ]
    return f"{pass_.name}{{{' '.join(given)}}}" if given else pass_.name


def check_order(passes: list[ModulePass], module: ModuleOp | None = None) -> None:
    """Check `passes` against their contracts, before any runs.

    Without `module` (a pipeline being built) only what the pipeline itself decides is
    checked: a state a pass needs that an earlier pass undoes (`PassOrderError`).  With
    it, a state a pass needs that no earlier pass establishes must also hold of `module`,
    else a located `pass.precondition` error at the op its witness names -- up to the
    first pass that declares no contract (`Contract.declared`), past which the input's
    state is not known."""
    established: set[IRState] = set()
    undone: dict[IRState, tuple[ModulePass, Undoes]] = {}
    seen: dict[IRState, Witness | None] = {}
    for p in passes:
        contract = contract_of(p)
        if not contract.declared:
            # It may have done anything to the IR: the input says nothing of what follows.
            module = None
        for state in contract.requires:
            if state in undone:
                culprit, undo = undone[state]
                raise PassOrderError(
                    Diagnostic.of(
                        "error",
                        PASS_ORDER,
                        pass_name=p.name,
                        provider=state.established_by,
                        culprit=_spelt(culprit),
                        why=undo.because or f"{state.name}: {state.meaning}",
                        state=state.name,
                    )
                )
            if state in established or module is None:
                continue
            if state not in seen:
                seen[state] = state.witness(module)
            found = seen[state]
            if found is not None:
                at, detail = found
                raise DiagnosticError(
                    Diagnostic.of(
                        "error",
                        PASS_PRECONDITION,
                        op_location(at),
                        pass_name=p.name,
                        state=state.name,
                        provider=state.established_by,
                        detail=detail,
                    )
                )
        for undo in contract.undone_by(p):
            undone[undo.state] = (p, undo)
            established.discard(undo.state)
        for state in contract.establishes:
            established.add(state)
            undone.pop(state, None)


def _instantiate(pass_cls: type[ModulePass], pass_spec: ArgSpec) -> ModulePass:
    """The pass `pass_spec` asks for, its options read with the pass's own spelling."""
    options = options_of(pass_cls)
    by_spelling = {o.name: o for o in options}
    listed = ", ".join(by_spelling) or "none"
    values: dict[str, Any] = {}
    try:
        for key, given in pass_spec.parameters.items():
            # xdsl-opt also accepts the field's own spelling; so does npuir-opt.
            opt = by_spelling.get(key.replace("_", "-"))
            if opt is None:
                raise ValueError(f"unknown option '{key}'")
            values[opt.field] = opt.parse(given)
        for opt in options:
            if opt.field not in values and opt.default is dataclasses.MISSING:
                raise ValueError(f"option '{opt.name}' is required")
        return pass_cls(**values)
    except ValueError as exc:
        raise UsageError(
            f"bad option for pass '{pass_spec.name}': {exc} (options: {listed})"
        ) from None


VERIFY_EACH_ENV = "NPUIR_VERIFY_EACH"
"""Set to 1 to verify after every pass by default (the test suite does)."""


def verify_each_default() -> bool:
    """Whether `run_passes` verifies after every pass when not told (`NPUIR_VERIFY_EACH`)."""
    return os.environ.get(VERIFY_EACH_ENV, "") not in ("", "0")


@deep_stack
def run_passes(
    ctx: Context,
    module: ModuleOp,
    passes: list[ModulePass],
    after_each: PassCallback | None = None,
    verify_each: bool | None = None,
) -> None:
    """Apply `passes` in order, then verify the result.

    With `verify_each` (default: `NPUIR_VERIFY_EACH`, off) the IR is verified after
    every pass instead, as MLIR does by default: it names the pass that broke the IR,
    but on a 10k-op module each verification costs more than most passes, and npuir's
    passes are tested with it on.

    Analyses are cached in the context (`npuir.analysis.manager`): the cache starts
    empty and each pass that does not declare `PRESERVES = ALL` clears what it does
    not preserve.

    Python's cyclic collector is paused meanwhile: passes allocate many small
    objects that live as long as the IR, and each collection would walk the
    whole module again (on a 100k-op program, a third of the pass time).
    """
    each = verify_each_default() if verify_each is None else verify_each
    check_order(passes, module)
    with collector_paused():
        try:
            _run_passes(ctx, module, passes, after_each, each)
        finally:
            progress.clear()


def _run_passes(
    ctx: Context,
    module: ModuleOp,
    passes: list[ModulePass],
    after_each: PassCallback | None,
    verify_each: bool,
) -> None:
    manager = analyses(ctx)
    manager.reset()
    for p in passes:
        progress.phase(p.name)
        try:
            p.apply(ctx, module)
        except DiagnosticException as exc:
            # An xDSL-level failure inside a pass carries no location of its own.
            raise DiagnosticError(
                Diagnostic.of("error", PASS_FAILED, pass_name=p.name, reason=str(exc))
            ) from None
        manager.invalidate(preserved_by(p))
        if verify_each:
            verify(module)
        if after_each is not None:
            after_each(p, module)
    if passes and not verify_each:
        verify(module)


def choices_of(pass_cls: type[ModulePass], field: str) -> tuple[str, ...]:
    """The values a `Literal[...]`-typed pass option accepts."""
    hints = typing.get_type_hints(pass_cls)
    return tuple(str(a) for a in typing.get_args(hints[field]))
