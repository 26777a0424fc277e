"""`npuir.passes`: documented pass options, as pipelines read them and --list-passes shows them."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from npuir.diagnostics import UsageError
from npuir.passes import ModulePass, option, options_of
from npuir.passmanager.pipeline import build_pipeline
from npuir.passmanager.registry import PassRegistry, describe_passes
from npuir.transforms import PASSES


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True)
class KitchenSinkPass(ModulePass):
    """A pass with one option of every kind pipelines can give."""

    name = "test-kitchen-sink"

    max_things: int | None = option(None, "the most things")
    strict: bool = option(False, "be strict")
    ratio: float = option(0.5, "a ratio")
    label: str = option("x", "a label")
    colour: Colour = option(Colour.RED, "a colour")
    side: Literal["left", "right"] = option("left", "a side")
    sizes: tuple[int, ...] = option((), "some sizes")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pass


@dataclass(frozen=True)
class NeedsPass(ModulePass):
    """A pass with an option that has no default."""

    name = "test-needs"

    target: str
    count: int = option(0, "unused")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pass


def _registry() -> PassRegistry:
    return PassRegistry(
        builtin={"test-kitchen-sink": lambda: KitchenSinkPass, "test-needs": lambda: NeedsPass},
        pipelines={},
        group="npuir.test-no-such-group",
    )


def _build(spec: str) -> ModulePass:
    (built,) = build_pipeline(spec, _registry())
    return built


def test_options_are_read_with_their_own_spelling_and_types() -> None:
    built = _build(
        "test-kitchen-sink{max-things=3 strict=true ratio=2 label=910 colour=blue "
        "side=right sizes=1,2,3}"
    )
    assert built == KitchenSinkPass(3, True, 2.0, "910", Colour.BLUE, "right", (1, 2, 3))


def test_defaults_and_bare_flags() -> None:
    assert _build("test-kitchen-sink") == KitchenSinkPass()
    # `{strict}` sets a boolean (MLIR's rule); `{max-things}` leaves an optional one unset.
    assert _build("test-kitchen-sink{strict max-things}") == KitchenSinkPass(strict=True)


def test_the_field_spelling_is_accepted_too() -> None:
    assert _build("test-kitchen-sink{max_things=2}") == KitchenSinkPass(max_things=2)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("{max-things=x}", "option 'max-things' expects an integer, got 'x'"),
        ("{max_things=x}", "option 'max-things' expects an integer, got 'x'"),
        ("{max-things=true}", "option 'max-things' expects an integer, got 'true'"),
        ("{strict=3}", "option 'strict' expects true or false, got '3'"),
        ("{label}", "option 'label' needs a value (string)"),
        ("{label=a,b}", "option 'label' takes one value (string), got 2: a, b"),
        ("{colour=green}", "option 'colour' expects one of: red, blue, got 'green'"),
        ("{side=up}", "option 'side' expects one of: left, right, got 'up'"),
        ("{sizes=1,x}", "option 'sizes' expects an integer, got 'x'"),
        ("{colours=red}", "unknown option 'colours'"),
    ],
)
def test_option_errors_name_the_option_as_a_user_spells_it(spec: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        _build(f"test-kitchen-sink{spec}")
    text = str(info.value)
    assert text.startswith(f"bad option for pass 'test-kitchen-sink': {message}"), text
    assert text.endswith("(options: max-things, strict, ratio, label, colour, side, sizes)")
    assert "max_things" not in text


def test_an_option_without_a_default_is_required() -> None:
    with pytest.raises(UsageError, match="option 'target' is required"):
        _build("test-needs")
    assert _build("test-needs{target=t}") == NeedsPass(target="t")


def test_builtin_option_errors_use_the_dashed_spelling() -> None:
    with pytest.raises(UsageError) as info:
        build_pipeline("stream-partition{ignore_tags=3}")
    assert "option 'ignore-tags' expects true or false, got '3'" in str(info.value)
    assert "ignore_tags" not in str(info.value)


def test_signature_shows_type_and_default() -> None:
    shown = {o.name: o.signature for o in options_of(KitchenSinkPass)}
    assert shown == {
        "max-things": "max-things: int",
        "strict": "strict: bool = false",
        "ratio": "ratio: float = 0.5",
        "label": "label: string = x",
        "colour": "colour: red|blue = red",
        "side": "side: left|right = left",
        "sizes": "sizes: int,... = (empty)",
    }
    assert options_of(NeedsPass)[0].signature == "target: string (required)"


@pytest.mark.parametrize("key", sorted(PASSES))
def test_every_builtin_option_is_documented(key: str) -> None:
    for opt in options_of(PASSES[key]()):
        assert opt.meaning, (
            f"option '{opt.name}' of '{key}' has no meaning: declare it with option()"
        )


def test_list_passes_shows_every_option_with_its_type_default_and_meaning() -> None:
    listing = describe_passes(_registry())
    lines = listing.splitlines()
    at = lines.index(next(ln for ln in lines if ln.startswith("test-kitchen-sink ")))
    assert (
        lines[at].split(maxsplit=1)[1] == "A pass with one option of every kind pipelines can give."
    )
    body = "\n".join(lines[at + 1 : at + 15])
    assert "    max-things: int\n      the most things\n" in body
    assert "    colour: red|blue = red\n      a colour\n" in body
    assert "    target: string (required)" in listing
    assert "(undocumented)" in listing  # NeedsPass.target has no meaning


def test_configured_pipeline_adds_and_replaces_options() -> None:
    """A front end's options (data) land on the passes they name, in a named pipeline
    too; an option the spec already sets is replaced, the others are kept."""
    from npuir.passmanager.pipeline import configured_pipeline

    spec = configured_pipeline("npu-default", {"stream-partition": {"mode": "single"}})
    assert "stream-partition{mode=single}" in spec.split(",")
    assert len(build_pipeline(spec)) == len(build_pipeline("npu-default"))
    spec = configured_pipeline(
        "stream-partition{mode=auto max-streams=2},insert-events",
        {"stream-partition": {"mode": "minidag"}},
    )
    assert spec == "stream-partition{max-streams=2 mode=minidag},insert-events"
    assert configured_pipeline("sync-verify", {}) == "sync-verify"
