"""Pass options with fixed choices are `Literal[...]`, so stock xDSL checks them too.

npuir-opt's option parser and `--list-passes` read the choices from the type; so does
xDSL's own (`ModulePass.from_spec`, which `xdsl-opt -p` uses), which rejects an
`enum.Enum` option outright.  The choices must stay those the passes dispatch on.
"""

from __future__ import annotations

import enum
import typing

import pytest
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import parse_spec

from npuir.analysis.partition import Mode
from npuir.passes import options_of
from npuir.schedule.minidag import Variant
from npuir.transforms import PASSES
from npuir.transforms.gear_multiversion import Fallback
from npuir.transforms.stream_partition import ModeName, VariantName


def test_the_choices_are_the_enums_the_passes_dispatch_on() -> None:
    assert typing.get_args(ModeName) == tuple(m.value for m in Mode)
    assert typing.get_args(VariantName) == tuple(v.value for v in Variant)
    assert typing.get_args(Fallback) == ("none", "dynamic")


def _choice_options() -> list[tuple[type[ModulePass], str, tuple[str, ...]]]:
    found = []
    for factory in PASSES.values():
        cls = factory()
        for opt in options_of(cls):
            hint = typing.get_args(opt.hint)[0] if opt.optional else opt.hint
            if typing.get_origin(hint) is typing.Literal:
                found.append((cls, opt.name, typing.get_args(hint)))
    return found


def test_every_option_with_fixed_choices_is_a_literal() -> None:
    names = {(cls.name, name) for cls, name, _ in _choice_options()}
    assert {
        ("stream-partition", "mode"),
        ("stream-partition", "variant"),
        ("gear-multiversion", "fallback"),
    } <= names
    for factory in PASSES.values():
        for opt in options_of(factory()):
            assert not (isinstance(opt.hint, type) and issubclass(opt.hint, enum.Enum)), opt.name


@pytest.mark.parametrize(
    ("cls", "name", "choices"), _choice_options(), ids=lambda x: getattr(x, "name", str(x))
)
def test_stock_xdsl_checks_the_choices(
    cls: type[ModulePass], name: str, choices: tuple[str, ...]
) -> None:
    for choice in choices:
        made = cls.from_spec(parse_spec(f"{cls.name}{{{name}={choice}}}"))
        assert getattr(made, name.replace("-", "_")) == choice
    with pytest.raises(ValueError, match="Incompatible types"):
        cls.from_spec(parse_spec(f"{cls.name}{{{name}=not-a-choice}}"))
