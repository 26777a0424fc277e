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
  so the analyses cached in the context (`analyses(ctx)`) outlive it;
- a pass states its place in a pipeline as IR states (`IRState`, GCC's pass
  properties): `REQUIRES` the states its input must be in, `ESTABLISHES` those
  it leaves the IR in, `INVALIDATES` those it may undo (`undoes(state, when,
  because)` when only some options undo it).  The pass manager checks them
  when a pipeline is built and, against the input, before the first pass runs
  (`npuir.passmanager.pipeline.check_order`); `--list-passes` prints them.

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

from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from npuir.analysis.manager import ALL, Preserved, analyses
from npuir.analysis.program import is_lowered, scheduled_functions
from npuir.context import remark, warn
from npuir.diagnostics import DiagnosticError, UsageError, error
from npuir.dialects import coreset, mem
from npuir.dialects.npu import DYN, NpuOp

__all__ = [
    "ALL",
    "LIMITS_LOWERED",
    "MEMORY_PLANNED",
    "PARTITIONED",
    "Contract",
    "DiagnosticError",
    "IRState",
    "ModulePass",
    "PassOption",
    "Preserved",
    "Undoes",
    "analyses",
    "contract_of",
    "error",
    "option",
    "option_from_env",
    "options_of",
    "remark",
    "undoes",
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

    def spell(self, value: Any) -> str:
        """`value` as a pipeline spec writes it for this option (`auto`, `true`, `1,2`)."""
        return _spell(value)

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


# ----------------------------------------------------------------------
# Pass-order contracts: the IR states a pass needs and leaves
# ----------------------------------------------------------------------

Witness = tuple[Operation, str]
"""Where a state does not hold and why: an op to point at, and words for it."""


@dataclass(frozen=True, eq=False)
class IRState:
    """A property of the IR that some passes establish and others need, as GCC's pass
    properties (`PROP_cfg`, `PROP_ssa`) say what a pipeline has made of the IR.  `witness(module)` looks at a module: None when the state
    holds, else an op that shows it does not and what is wrong there.

    States are compared by identity: one object per state, declared at module level,
    which passes name in `REQUIRES`, `ESTABLISHES` and `INVALIDATES`."""

    name: str
    """How messages and `--list-passes` spell it: `partitioned`."""
    meaning: str
    """What holds of the IR in this state, in one phrase."""
    established_by: str
    """The pass that establishes it: what a refused pipeline is told to run first."""
    witness: Callable[[ModuleOp], Witness | None]


@dataclass(frozen=True)
class Undoes:
    """A state a pass may undo, and, when only some of its options undo it, which."""

    state: IRState
    when: Callable[[Any], bool] = lambda _pass: True
    """Whether the pass instance (its options) undoes the state."""
    because: str = ""
    """Why, in words a refused pipeline's message repeats (`mode=auto with limits=true
    writes coreset.limit scopes`)."""


def undoes(state: IRState, when: Callable[[Any], bool], because: str) -> Undoes:
    """`state`, undone by a pass only when `when(pass)` (its options) holds, `because` ...:
    an entry of `INVALIDATES` for a pass whose options decide it."""
    return Undoes(state, when, because)


@dataclass(frozen=True)
class Contract:
    """What a pass declares about its place in a pipeline (its class attributes)."""

    requires: tuple[IRState, ...] = ()
    """`REQUIRES`: the states its input must be in."""
    establishes: tuple[IRState, ...] = ()
    """`ESTABLISHES`: the states it leaves the IR in, whatever it was given."""
    invalidates: tuple[Undoes, ...] = ()
    """`INVALIDATES`: the states it may undo (a bare `IRState` there: always)."""
    declared: bool = True
    """Whether the pass declares a contract at all.  One that does not (a stock xDSL pass,
    a plug-in written before contracts) may have made or unmade any state: the pass
    manager checks no state against the input past it."""

    def describe(self) -> list[str]:
        """One line per non-empty part, as `--list-passes` and docs/passes.md print them:
        `needs: partitioned (stream-partition first)`, `establishes: ...`, `may undo: ...`."""
        lines: list[str] = []
        if self.requires:
            needs = ", ".join(f"{s.name} ({s.established_by} first)" for s in self.requires)
            lines.append(f"needs: {needs}")
        if self.establishes:
            lines.append(f"establishes: {', '.join(s.name for s in self.establishes)}")
        if self.invalidates:
            undone = ", ".join(
                f"{u.state.name} ({u.because})" if u.because else u.state.name
                for u in self.invalidates
            )
            lines.append(f"may undo: {undone}")
        return lines

    def undone_by(self, pass_: ModulePass) -> list[Undoes]:
        """The states this instance of the pass undoes, given its options."""
        return [u for u in self.invalidates if u.when(pass_)]


def contract_of(pass_: ModulePass | type[ModulePass]) -> Contract:
    """The contract `pass_` (a pass or its class) declares; empty when it declares none,
    as a pass written before contracts existed, or a stock xDSL pass, does."""
    cls = pass_ if isinstance(pass_, type) else type(pass_)
    keys = ("REQUIRES", "ESTABLISHES", "INVALIDATES")
    declared = {k: tuple(getattr(cls, k, ())) for k in keys}
    for key, entries in declared.items():
        for entry in entries:
            if not isinstance(entry, IRState | Undoes) or (
                isinstance(entry, Undoes) and key != "INVALIDATES"
            ):
                # A plug-in author's mistake, reported as the registry reports a bad plug-in.
                raise UsageError(
                    f"pass '{getattr(cls, 'name', cls.__name__)}' declares {entry!r} in {key}, "
                    "which is not an npuir.passes.IRState"
                )
    return Contract(
        declared["REQUIRES"],
        declared["ESTABLISHES"],
        tuple(u if isinstance(u, Undoes) else Undoes(u) for u in declared["INVALIDATES"]),
        declared=any(hasattr(cls, k) for k in keys),
    )


def _unpartitioned(module: ModuleOp) -> Witness | None:
    for func in scheduled_functions(module):
        if not is_lowered(func) and any(isinstance(op, NpuOp) for op in func.body.walk()):
            return func, f"@{func.sym_name.data}'s ops carry no stream.on"
    return None


def _limit_scope(module: ModuleOp) -> Witness | None:
    for op in module.walk():
        if isinstance(op, coreset.LimitOp):
            return op, "a coreset.limit scope is left"
    return None


def _unplanned(module: ModuleOp) -> Witness | None:
    # Conservative: a function with a dynamically shaped result is one mem-plan leaves
    # unplanned on purpose, and mem-verify itself judges it.
    for func in scheduled_functions(module):
        if mem.POOL in func.attributes:
            continue
        results = [r.type for op in func.body.walk() if isinstance(op, NpuOp) for r in op.results]
        if results and not any(isinstance(t, TensorType) and DYN in t.get_shape() for t in results):
            return func, f"@{func.sym_name.data} has no mem.pool"
    return None


PARTITIONED = IRState(
    "partitioned",
    "every op runs on a stream the module declares: stream.on, stream.decl",
    "stream-partition",
    _unpartitioned,
)
LIMITS_LOWERED = IRState(
    "limits-lowered",
    "no coreset.limit scope is left: core limits live on the ops, coreset.cores",
    "coreset-lower",
    _limit_scope,
)
MEMORY_PLANNED = IRState(
    "memory-planned",
    "every function with static shapes has a memory plan: mem.pool, mem.offset",
    "mem-plan",
    _unplanned,
)
STATES: tuple[IRState, ...] = (PARTITIONED, LIMITS_LOWERED, MEMORY_PLANNED)
"""npuir's own states, in the order a pipeline establishes them."""
