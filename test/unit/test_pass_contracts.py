"""Pass-order contracts: the IR states a pass declares it needs, establishes and may undo
(`npuir.passes`), and the pass manager's check of them before any pass runs.

An out-of-tree pass declares them as npuir's own passes do, with npuir's states or states
of its own; the check refuses a pipeline whose order breaks one (a usage error, exit 2)
and an input that lacks a state nothing in the pipeline establishes (a located error).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import npuir
from npuir.diagnostics import DiagnosticError, UsageError
from npuir.passes import LIMITS_LOWERED, PARTITIONED, STATES, IRState, contract_of
from npuir.passmanager.pipeline import (
    PASS_ORDER,
    PASS_PRECONDITION,
    PassOrderError,
    build_pipeline,
    check_order,
    run_passes,
)
from npuir.passmanager.registry import PassRegistry, default_registry, describe_passes
from npuir.tools import opt, run
from npuir.transforms.pipelines import PIPELINES

ROOT = Path(__file__).resolve().parents[2]

AUTO_LIMITS = """!a = tensor<2048x1024xf16>
module attributes {npu.target = "910b2"} {
  func.func @f(%x: !a, %y: !a) -> (!a, !a) {
    %r = npu.all_reduce %x {group_size = 8 : i64, group = "tp", mode = "aiv"} : (!a) -> !a
    %v1 = npu.gelu %y : (!a) -> !a
    %v2 = npu.silu %v1 : (!a) -> !a
    %v3 = npu.mul %v2, %v1 : (!a, !a) -> !a
    %v4 = npu.add %v3, %r : (!a, !a) -> !a
    func.return %v4, %v3 : !a, !a
  }
}
"""
"""A program `auto` (limits=true) writes coreset.limit scopes for: an aiv all_reduce that
would hold every vector core beside a vector chain."""

PLUGIN = '''
"""Out-of-tree passes with contracts: a state of their own, and npuir's."""

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr

from npuir.passes import PARTITIONED, IRState, ModulePass, Undoes, option, remark, undoes


def _untagged(module: ModuleOp):
    return None if "example.tagged" in module.attributes else (module, "no example.tagged")


TAGGED = IRState("tagged", "the module carries example.tagged", "example-tag", _untagged)


@dataclass(frozen=True)
class TagPass(ModulePass):
    """Tag the module."""

    name = "example-tag"

    ESTABLISHES: ClassVar[tuple[IRState, ...]] = (TAGGED,)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        op.attributes["example.tagged"] = UnitAttr()


@dataclass(frozen=True)
class UntagPass(ModulePass):
    """Remove the tag, when asked to."""

    name = "example-untag"

    INVALIDATES: ClassVar[tuple[Undoes, ...]] = (
        undoes(TAGGED, lambda p: p.wipe, "with wipe=true it removes example.tagged"),
    )

    wipe: bool = option(False, "remove the tag")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.wipe:
            op.attributes.pop("example.tagged", None)


@dataclass(frozen=True)
class LegacyTagPass(ModulePass):
    """Tag the module, declaring nothing (written before contracts)."""

    name = "example-legacy-tag"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        op.attributes["example.tagged"] = UnitAttr()


@dataclass(frozen=True)
class ReportPass(ModulePass):
    """Remark on a tagged, partitioned module."""

    name = "example-report"

    REQUIRES: ClassVar[tuple[IRState, ...]] = (PARTITIONED, TAGGED)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        remark(ctx, op, "example-report ran", "test.example-ran")
'''


BAD_PLUGIN = '''
"""A pass that names a state by a string."""

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from npuir.passes import ModulePass


@dataclass(frozen=True)
class BadPass(ModulePass):
    """Declare a requirement by name instead of by state."""

    name = "example-bad"

    REQUIRES: ClassVar[tuple[object, ...]] = ("partitioned",)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pass
'''


@pytest.fixture
def registry(tmp_path: Path) -> PassRegistry:
    path = tmp_path / "contract_plugin.py"
    path.write_text(PLUGIN)
    reg = PassRegistry()
    reg.load_module(str(path))
    return reg


def _module(ctx: npuir.NpuirContext, text: str = AUTO_LIMITS) -> npuir.ModuleOp:
    return npuir.parse_text(ctx, text, "input.mlir")


def _ran(found: list[npuir.Diagnostic]) -> bool:
    return any(d.kind == "test.example-ran" for d in found)


def test_auto_then_insert_events_is_refused_when_built_naming_coreset_lower() -> None:
    with pytest.raises(PassOrderError) as info:
        build_pipeline("stream-partition{mode=auto},insert-events")
    diag = info.value.diagnostic
    assert diag.kind == PASS_ORDER.code
    assert diag.args["pass_name"] == "insert-events"
    assert diag.args["provider"] == "coreset-lower"
    assert diag.args["culprit"] == "stream-partition{mode=auto}"
    assert "insert-events needs coreset-lower first" in diag.message


@pytest.mark.parametrize(
    "spec",
    [
        "stream-partition{mode=auto},coreset-lower,insert-events",
        "stream-partition{mode=auto limits=false},insert-events",
        "stream-partition{mode=auto mem-budget=hbm},insert-events",
        "stream-partition{mode=opara},insert-events",
        "stream-partition,coreset-partition,coreset-lower,insert-events",
        *PIPELINES,
    ],
)
def test_pipelines_in_a_valid_order_are_built(spec: str) -> None:
    assert build_pipeline(spec)


def test_what_the_check_refuses_does_fail_without_it() -> None:
    """The requirement is real: applied one by one, bypassing the check, auto's scopes
    break insert-events (the failure issue 37 reports)."""
    ctx = npuir.make_context()
    module = _module(ctx)
    for p in [*build_pipeline("stream-partition{mode=auto}"), *build_pipeline("insert-events")]:
        p.apply(ctx, module)
    with pytest.raises(DiagnosticError, match="inside the scope is used outside it"):
        npuir.verify(module)


def test_the_input_state_counts_a_lowered_input_needs_no_earlier_pass() -> None:
    ctx = npuir.make_context()
    module = _module(ctx)
    run_passes(ctx, module, build_pipeline("stream-partition{mode=auto},coreset-lower"))
    assert PARTITIONED.witness(module) is None and LIMITS_LOWERED.witness(module) is None
    run_passes(ctx, module, build_pipeline("insert-events,sync-verify,mem-plan,mem-verify"))


def test_an_input_lacking_a_state_is_refused_at_its_witness_before_any_pass_runs(
    registry: PassRegistry,
) -> None:
    ctx = npuir.make_context(collect_diagnostics=True)
    module = _module(ctx)
    passes = build_pipeline("example-tag,example-report", registry)
    with ctx.diagnostics.collect() as found, pytest.raises(DiagnosticError) as info:
        run_passes(ctx, module, passes)
    diag = info.value.diagnostic
    assert diag.kind == PASS_PRECONDITION.code
    assert diag.args["provider"] == "stream-partition"
    assert diag.location is not None and diag.location.line == 3  # @f
    assert "example.tagged" not in module.attributes  # example-tag did not run
    assert not _ran(found)


def test_an_out_of_tree_pass_declares_and_is_checked_like_npuirs(
    registry: PassRegistry,
) -> None:
    good = "stream-partition,example-tag,example-untag,example-report"
    ctx = npuir.make_context(collect_diagnostics=True)
    module = _module(ctx)
    with ctx.diagnostics.collect() as found:
        run_passes(ctx, module, build_pipeline(good, registry))
    assert _ran(found)

    with pytest.raises(PassOrderError) as info:
        build_pipeline("stream-partition,example-tag,example-untag{wipe},example-report", registry)
    assert info.value.diagnostic.args["culprit"] == "example-untag{wipe=true}"
    assert info.value.diagnostic.args["provider"] == "example-tag"
    # Re-established after it was undone: accepted.
    assert build_pipeline("example-tag,example-untag{wipe},example-tag,example-report", registry)


def test_past_a_pass_without_a_contract_the_input_state_is_not_checked(
    registry: PassRegistry,
) -> None:
    """A pass that declares nothing may establish anything: what follows it is not refused
    for what the input lacks (only the pass's own checks, in `apply`, remain)."""
    ctx = npuir.make_context(collect_diagnostics=True)
    with pytest.raises(DiagnosticError, match="example-report needs example-tag first"):
        run_passes(ctx, _module(ctx), build_pipeline("stream-partition,example-report", registry))
    module = _module(ctx)
    with ctx.diagnostics.collect() as found:
        spec = "stream-partition,example-legacy-tag,example-report"
        run_passes(ctx, module, build_pipeline(spec, registry))
    assert _ran(found)
    assert not contract_of(_cls(registry, "example-legacy-tag")).declared
    assert all(contract_of(_cls(registry, n)).declared for n in registry.builtin)


def test_list_passes_prints_an_out_of_tree_contract(registry: PassRegistry) -> None:
    listing = describe_passes(registry)
    assert "  needs: partitioned (stream-partition first), tagged (example-tag first)" in listing
    assert "  may undo: tagged (with wipe=true it removes example.tagged)" in listing


def test_a_malformed_declaration_is_a_usage_error_naming_the_pass(tmp_path: Path) -> None:
    path = tmp_path / "bad_plugin.py"
    path.write_text(BAD_PLUGIN)
    reg = PassRegistry()
    reg.load_module(str(path))
    with pytest.raises(UsageError, match="pass 'example-bad' declares 'partitioned' in REQUIRES"):
        build_pipeline("example-bad", reg)


def test_every_npuir_pass_declares_states_npuir_knows() -> None:
    """Each state npuir's passes name is one of `STATES`, and each is established by the
    pass its `established_by` names."""
    registry = default_registry()
    for name in registry.builtin:
        cls = registry.get(name)
        assert cls is not None
        contract = contract_of(cls)
        named = [
            *contract.requires,
            *contract.establishes,
            *(u.state for u in contract.invalidates),
        ]
        assert all(s in STATES for s in named), name
    for state in STATES:
        provider = registry.get(state.established_by)
        assert provider is not None and state in contract_of(provider).establishes


@pytest.mark.parametrize("example", ["seed_multistream.mlir", "core_limit_fixed.mlir"])
def test_after_npu_default_every_state_holds(example: str) -> None:
    """What the passes establish is what the witnesses see: after the standard pipeline no
    state is missing."""
    ctx = npuir.make_context(collect_diagnostics=True)
    module = npuir.load(str(ROOT / "examples" / example), ctx)
    with ctx.diagnostics.collect():
        run_passes(ctx, module, build_pipeline("npu-default"))
    assert [s.name for s in STATES if s.witness(module) is not None] == []


def test_check_order_without_a_module_leaves_the_input_states_open() -> None:
    """Built alone, `insert-events` may meet a lowered input: only the run decides."""
    check_order(build_pipeline("insert-events"))


def test_the_tools_exit_2_on_a_refused_order_and_1_on_an_input_without_the_state(
    tmp_path: Path,
) -> None:
    path = tmp_path / "auto.mlir"
    path.write_text(AUTO_LIMITS)
    spec = "stream-partition{mode=auto},insert-events"
    assert opt.run([str(path), "-p", spec]) == 2
    assert run.run([str(path), "--timing-only", "--pipeline", spec]) == 2
    assert opt.run([str(path), "-p", "insert-events"]) == 1
    assert (
        opt.run([str(path), "-p", "stream-partition{mode=auto},coreset-lower,insert-events"]) == 0
    )


def _providers(name: str) -> list[str]:
    """The passes that establish what `name` needs, transitively, in `STATES` order."""
    registry = default_registry()
    needed: set[IRState] = set()
    todo = list(contract_of(_cls(registry, name)).requires)
    while todo:
        state = todo.pop()
        if state not in needed:
            needed.add(state)
            todo += contract_of(_cls(registry, state.established_by)).requires
    return [s.established_by for s in STATES if s in needed]


def _cls(registry: PassRegistry, name: str) -> type[npuir.ModulePass]:
    cls = registry.get(name)
    assert cls is not None
    return cls


VERIFIERS = {"sync-verify", "capture-verify"}
"""Passes whose error on a program no pass synchronised is their finding (a race, an unforked
or unjoined stream), not a need: they check events, hand-written ones too."""


@pytest.mark.parametrize("name", sorted(set(default_registry().builtin) - VERIFIERS))
@pytest.mark.parametrize("example", ["core_limit_fixed.mlir", "seed_multistream.mlir"])
def test_what_a_pass_declares_it_needs_is_all_it_needs(name: str, example: str) -> None:
    """Each npuir pass runs on a source program after only the passes that establish the
    states it declares (so a need it leaves undeclared fails here, as mem-verify's need of
    lowered limits did): after auto's partition, its limit scopes included, for the passes
    the partition feeds."""
    first = _providers(name)
    if first and first[0] == "stream-partition":
        first[0] = "stream-partition{mode=auto}"
    ctx = npuir.make_context(collect_diagnostics=True)
    module = npuir.load(str(ROOT / "examples" / example), ctx)
    with ctx.diagnostics.collect():
        run_passes(ctx, module, build_pipeline(",".join([*first, name])))
