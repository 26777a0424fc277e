"""The one set of rules for the values users write: stream tags, priorities, core counts
and gears.

Every route in applies these same functions, so a mistake is refused with the same kind
on every route: the dialects' verifiers and parsers (text), the passes that know the
device (`coreset-lower` for a count above it), the GE importer (dump attributes), and
`npuir.torchair` / `npuir.frontends.torch_scope` at the user's call (builder and torch).
Each validator returns the checked value or raises `ValidationError`, a
`VerifyException` that carries its diagnostic `Kind` and arguments; the verifier, the
parser and the builders turn it into a located `DiagnosticError` of that kind.

The rules are TorchAir's (seed documents 000-004), as docs/ir.md states them:

- a stream tag is a non-empty string, and not the main stream's reserved label;
- a stream priority is a whole number >= 0 (TorchAir passes it as an int);
- a core count is a whole number in [1, device max] (`limit_core_num`'s range); a
  stream limit may also be -1, `set_stream_limit`'s "no limit";
- a gear list has 2 to 100 whole numbers, none 0 or 1; a tensor's gears are set once;
  a dim of a geared input that has no gears is static.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from xdsl.parser import BaseParser
from xdsl.utils.exceptions import ParseError, VerifyException

from npuir.diagnostics import Kind

MAIN_STREAM = "<main>"
"""The label of the stream that ops outside every scope run on.  No user tag can take it
(`stream_tag` refuses it): a user's tag "default" is an ordinary stream, as in TorchAir,
where only ops outside every `npu_stream_switch` run on the main stream."""

TAG_TYPE = Kind("stream.tag-type", "stream tag must be a string, got {value}")
TAG_EMPTY = Kind("stream.tag-empty", "stream tag must not be empty")
TAG_RESERVED = Kind(
    "stream.tag-reserved",
    "stream tag {value} is reserved for the main stream (ops outside every scope)",
)
PRIORITY_TYPE = Kind(
    "stream.priority-type", "stream priority must be a whole number >= 0, got {value}"
)
PRIORITY_NEGATIVE = Kind(
    "stream.priority-negative",
    "stream priority must be >= 0 (0 is served first), got {value}",
)
CORE_COUNT_TYPE = Kind("core.count-type", "{subject} must be a whole number of cores, got {value}")
CORE_COUNT_LOW = Kind(
    "core.count-below-one", "{subject} must be a whole number >= 1{allowed}, got {value}"
)
CORE_COUNT_HIGH = Kind(
    "core.count-above-device",
    "{subject} is {value}, but the device ({device}) has {most} {engine} cores",
)
GEAR_VALUE = Kind(
    "gear.value",
    "gear value {value} on dim {dim} is not allowed: gear values are whole numbers >= 2 "
    "(0 and 1 are reserved)",
)
GEAR_COUNT = Kind("gear.count", "dim {dim} has {count} gears; give between 2 and 100")
GEAR_TWICE = Kind(
    "gear.set-twice",
    "{subject} already has dim gears {before}; setting them again differently ({after}) is "
    "not supported (as in TorchAir)",
)
GEAR_UNGEARED_DYNAMIC = Kind(
    "gear.ungeared-dynamic-dim",
    "{subject} has gears, so its other dims must be static, but dim {dim} of {type} is "
    "dynamic; give dim {dim} gears or a static size",
)

MAX_GEARS = 100
"""The most gears a dim may have (and a function in total): seed 004."""


class ValidationError(VerifyException):
    """A rule a user's value broke: its diagnostic kind, arguments and message."""

    def __init__(self, kind: Kind, **args: Any) -> None:
        super().__init__(kind.render(args))
        self.kind = kind
        self.args_ = dict(args)


class ValidationParseError(ParseError):
    """A `ValidationError` found while parsing, at a span of the text."""

    def __init__(self, span: Any, error: ValidationError) -> None:
        super().__init__(span, str(error))
        self.kind = error.kind
        self.args_ = error.args_


def refuse_parsed(parser: BaseParser, start: int, error: ValidationError) -> NoReturn:
    """Raise `error` as a parse error over the text parsed since `start`."""
    try:
        parser.raise_error(str(error), start, parser.pos)
    except ParseError as exc:
        raise ValidationParseError(exc.span, error) from None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


Problem = tuple[Kind, dict[str, Any]]
"""A rule's verdict without an exception: the kind and its arguments (what code that
must not raise -- a torch model under dynamo's trace -- asks for)."""


def stream_tag_problem(value: object) -> Problem | None:
    """What is wrong with a user's stream tag, or None (see `stream_tag`)."""
    if not isinstance(value, str):
        return TAG_TYPE, {"value": repr(value)}
    if not value:
        return TAG_EMPTY, {}
    if value == MAIN_STREAM:
        return TAG_RESERVED, {"value": repr(value)}
    return None


def stream_priority_problem(value: object) -> Problem | None:
    """What is wrong with a stream priority, or None (see `stream_priority`)."""
    if not _is_int(value):
        return PRIORITY_TYPE, {"value": repr(value)}
    if value < 0:  # type: ignore[operator]
        return PRIORITY_NEGATIVE, {"value": value}
    return None


def _raise(problem: Problem | None) -> None:
    if problem is not None:
        raise ValidationError(problem[0], **problem[1])


def stream_tag(value: object) -> str:
    """A user's stream tag: a non-empty string that is not the main stream's label."""
    _raise(stream_tag_problem(value))
    assert isinstance(value, str)
    return value


def stream_priority(value: object) -> int:
    """A stream priority: a whole number >= 0."""
    _raise(stream_priority_problem(value))
    assert isinstance(value, int)
    return value


def core_count(
    what: str,
    value: object,
    *,
    engine: str = "",
    most: int | None = None,
    device: str = "",
    no_limit: bool = False,
) -> int | None:
    """A core count `what` (e.g. "op_aicore_num"): a whole number >= 1, at most `most`
    (the device's cores of `engine`) when given; with `no_limit`, -1 means unlimited
    (returned as None)."""
    _raise(
        core_count_problem(what, value, engine=engine, most=most, device=device, no_limit=no_limit)
    )
    assert isinstance(value, int)
    return None if no_limit and value == -1 else value


def core_count_problem(
    what: str,
    value: object,
    *,
    engine: str = "",
    most: int | None = None,
    device: str = "",
    no_limit: bool = False,
) -> Problem | None:
    """What is wrong with a core count, or None (see `core_count`)."""
    if not _is_int(value):
        return CORE_COUNT_TYPE, {"subject": what, "value": repr(value)}
    assert isinstance(value, int)
    if no_limit and value == -1:
        return None
    if value < 1:
        allowed = ", or -1 for no limit" if no_limit else ""
        return CORE_COUNT_LOW, {"subject": what, "value": value, "allowed": allowed}
    if most is not None and value > most:
        args = {"subject": what, "value": value, "most": most, "engine": engine, "device": device}
        return CORE_COUNT_HIGH, args
    return None


def gear_list(dim: int, values: Sequence[object]) -> list[int]:
    """The gears of one dim: 2 to 100 whole numbers, each >= 2."""
    if not 2 <= len(values) <= MAX_GEARS:
        raise ValidationError(GEAR_COUNT, dim=dim, count=len(values))
    for v in values:
        if not _is_int(v) or v < 2:  # type: ignore[operator]
            raise ValidationError(GEAR_VALUE, dim=dim, value=repr(v) if not _is_int(v) else v)
    return [int(v) for v in values]  # type: ignore[call-overload]


def gears_once(
    what: str, before: Mapping[int, Sequence[int]] | None, after: Mapping[int, Sequence[int]]
) -> None:
    """A tensor's gears are set once (again with the same gears is no change)."""
    if before is not None and {d: list(v) for d, v in before.items()} != {
        d: list(v) for d, v in after.items()
    }:
        raise ValidationError(GEAR_TWICE, subject=what, before=dict(before), after=dict(after))


def ungeared_dims_static(
    what: str, shape: Sequence[int], geared: Sequence[int], type_text: str, dynamic: int
) -> None:
    """Every dim of a geared input without gears is static (`dynamic` marks a `?`)."""
    for d, size in enumerate(shape):
        if size == dynamic and d not in geared:
            raise ValidationError(GEAR_UNGEARED_DYNAMIC, subject=what, dim=d, type=type_text)
