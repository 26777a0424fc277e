"""What a pass author imports: documented options, diagnostics, option introspection.

An npuir pass is an xDSL pass: a `@dataclass(frozen=True)` subclass of
`ModulePass` with a `name` and an `apply(ctx, module)`.  This module adds the
two things npuir asks of it:

- options are documented fields: declare each with `option(default, "meaning")`
  so that `npuir-opt --list-passes` prints its type, default and meaning, and
  pipeline specs (`my-pass{my-option=3}`) are checked against it;
- problems are reported through npuir's diagnostics: `raise error(op, "...")`
  for an error (a located `file:line:col: error:` and exit status 1),
  `warn(ctx, op, "...")` and `remark(ctx, op, "...")` for the rest (printed
  on stderr, or gathered by `ctx.diagnostics.collect()`);
- a pass that changes no IR says so, `PRESERVES: ClassVar[Preserved] = ALL`,
  so the analyses cached in the context (`analyses(ctx)`) outlive it.

`options_of(pass_cls)` describes a pass's options (the tools use it to list
and parse them); the option machinery is defined here, below the passes that declare
options and the pass manager (`npuir.passmanager`) that parses them.
docs/writing-a-pass.md walks through a whole pass.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from xdsl.passes import ModulePass

from npuir.analysis.manager import ALL, Preserved, analyses
from npuir.context import remark, warn
from npuir.diagnostics import DiagnosticError, error

__all__ = [
    "ALL",
    "DiagnosticError",
    "ModulePass",
    "PassOption",
    "Preserved",
    "analyses",
    "error",
    "option",
    "option_from_env",
    "options_of",
    "remark",
    "warn",
]

T = TypeVar("T")

_MEANING = "npuir.meaning"
"""The dataclass field metadata key that holds an option's meaning."""

_SCALARS: dict[type, str] = {bool: "bool", int: "int", float: "float", str: "string"}


def option(default: T, meaning: str) -> T:
    """A pass option with its default and a one-sentence meaning.

    Use it as a dataclass field of the pass: `max_events: int | None =
    option(None, "the most event ids a program may use")`.  The option is
    spelt with dashes in pipelines (`max-events=8`).
    """
    return dataclasses.field(default=default, metadata={_MEANING: meaning})


def option_from_env(default: Callable[[], T], meaning: str) -> T:
    """A pass option whose default is read when the pass is made (`default()`, e.g. from
    an environment variable), not when its class is defined."""
    return dataclasses.field(default_factory=default, metadata={_MEANING: meaning})


Value = str | int | bool | float
"""What a pipeline spec can give an option (xDSL's `ParameterType`)."""


@dataclass(frozen=True)
class PassOption:
    """One option of a pass: how it is spelt, its type, default and meaning."""

    name: str
    """The spelling in pipelines: the field name with dashes."""
    field: str
    """The dataclass field that holds it."""
    hint: Any
    """The field's type annotation, resolved."""
    default: Any
    """The default value, or `dataclasses.MISSING` for a required option."""
    meaning: str

    @property
    def optional(self) -> bool:
        """Whether `None` (the option given without a value) is allowed."""
        return _optional_part(self.hint) is not None

    @property
    def type_name(self) -> str:
        """The type as a user spells values: `int`, `bool`, `user|single|auto` ..."""
        return _type_name(_optional_part(self.hint) or self.hint)

    @property
    def signature(self) -> str:
        """`name: type = default` as `--list-passes` prints it (no default when unset)."""
        if self.default is dataclasses.MISSING:
            return f"{self.name}: {self.type_name} (required)"
        if self.default is None:
            return f"{self.name}: {self.type_name}"
        return f"{self.name}: {self.type_name} = {_spell(self.default)}"

    def parse(self, given: Sequence[Value]) -> Any:
        """The field value for `given`, the values a spec wrote after `name=`.

        Raises `ValueError` with a message that names the option as a user spells it.
        """
        hint = self.hint
        inner = _optional_part(hint)
        if inner is not None:
            if not given:
                return None
            hint = inner
        if hint is bool and not given:
            return True  # `pass{flag}` sets a boolean, as MLIR's option parser does
        if typing.get_origin(hint) is tuple:
            (element, *_rest) = typing.get_args(hint)
            return tuple(self._one(element, v) for v in given)
        if not given:
            raise ValueError(f"option '{self.name}' needs a value ({self.type_name})")
        if len(given) != 1:
            raise ValueError(
                f"option '{self.name}' takes one value ({self.type_name}), "
                f"got {len(given)}: {', '.join(_spell(v) for v in given)}"
            )
        return self._one(hint, given[0])

    def _one(self, hint: Any, value: Value) -> Any:
        if typing.get_origin(hint) is typing.Literal:
            choices = typing.get_args(hint)
            if value not in choices:
                raise self._expected(f"one of: {', '.join(map(str, choices))}", value)
            return value
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            for member in hint:
                if member.value == value or member.name.lower() == str(value).lower():
                    return member
            raise self._expected(f"one of: {', '.join(_spell(m) for m in hint)}", value)
        if hint is bool:
            if isinstance(value, bool):
                return value
            raise self._expected("true or false", value)
        if hint is int:
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            raise self._expected("an integer", value)
        if hint is float:
            if isinstance(value, int | float) and not isinstance(value, bool):
                return float(value)
            raise self._expected("a number", value)
        if hint is str:
            # `hw=910` lexes as a number; a string option takes it as written.
            if isinstance(value, bool):
                raise self._expected("a string", value)
            return str(value)
        raise TypeError(f"option '{self.name}' has a type pipelines cannot give: {hint}")

    def _expected(self, what: str, value: Value) -> ValueError:
        return ValueError(f"option '{self.name}' expects {what}, got '{_spell(value)}'")


def options_of(pass_cls: type[ModulePass]) -> list[PassOption]:
    """The options of `pass_cls`, in declaration order."""
    hints = typing.get_type_hints(pass_cls)
    found: list[PassOption] = []
    for f in dataclasses.fields(pass_cls):
        if not f.init or f.name == "name":
            continue
        if f.default is not dataclasses.MISSING:
            default: Any = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = dataclasses.MISSING
        found.append(
            PassOption(
                name=f.name.replace("_", "-"),
                field=f.name,
                hint=hints[f.name],
                default=default,
                meaning=str(f.metadata.get(_MEANING, "")),
            )
        )
    return found


def _optional_part(hint: Any) -> Any:
    """`X` for a hint `X | None` (or `Optional[X]`), else None."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) < len(typing.get_args(hint)):
            return args[0] if len(args) == 1 else typing.Union[tuple(args)]  # noqa: UP007
    return None


def _type_name(hint: Any) -> str:
    if typing.get_origin(hint) is typing.Literal:
        return "|".join(map(str, typing.get_args(hint)))
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return "|".join(_spell(m) for m in hint)
    if typing.get_origin(hint) is tuple:
        return f"{_type_name(typing.get_args(hint)[0])},..."
    if hint in _SCALARS:
        return _SCALARS[hint]
    return str(hint)


def _spell(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, tuple):
        return ",".join(_spell(v) for v in value) or "(empty)"
    return str(value) or "(empty)"
