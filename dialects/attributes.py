"""Verification of npuir's dialect attributes, wherever they are attached.

MLIR lets a dialect verify the attributes named after it on any op
(`Dialect::verifyOperationAttribute`) and on function arguments
(`verifyRegionArgAttribute`).  xDSL 0.74 has no such hook: it verifies an
op's own definition and traits, and an attribute's parameters, but never asks
a dialect about `npu.target` on a `builtin.module` or `gear.dims` on a
`func.func` argument.  So each npuir dialect implements `AttributeVerifier`
(a `DialectInterface` attached to its `Dialect`), and two callers ask it:

- npuir's verifier, for every op and every function argument, so an error
  points at the op that carries the attribute;
- the `VerifiesDialectAttributes` trait, which every npuir op carries, for the
  op's own attributes and those of its enclosing function and module, so a
  stock `xdsl-opt` with the npuir plugin checks them too whenever the module
  holds an npuir op (it has no other place to run dialect code from).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from typing import Generic, TypeVar

from typing_extensions import TypeVar as ConstraintVar
from xdsl.dialects.builtin import DictionaryAttr, ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, DialectInterface, Operation
from xdsl.irdl import AttrConstraint, IntConstraint
from xdsl.irdl.constraints import VerificationContext
from xdsl.traits import OpTrait
from xdsl.utils.exceptions import VerifyException

E = TypeVar("E", bound=StrEnum)


class AttributeVerifier(DialectInterface):
    """What a dialect says about the attributes named after it (`dialect.name`)."""

    def verify_operation_attribute(self, op: Operation, name: str, value: Attribute) -> None:
        """Raise `VerifyException` if `value` is not a valid `name` on `op`."""

    def verify_argument_attribute(
        self, func: FuncOp, index: int, name: str, value: Attribute
    ) -> None:
        """Raise `VerifyException` if `value` is not a valid `name` on argument `index`."""


@cache
def _verifier(prefix: str) -> AttributeVerifier | None:
    # Imported here: the dialect modules import this one for the trait.
    from npuir.dialects import DIALECTS

    factory = DIALECTS.get(prefix)
    return None if factory is None else factory().get_interface(AttributeVerifier)


def _prefix(name: str) -> str:
    return name.split(".", 1)[0] if "." in name else ""


@cache
def _attribute_verifier(name: str) -> AttributeVerifier | None:
    """The verifier of the dialect an attribute `name` is named after (looked up once per
    name: a module repeats a few names on every op)."""
    return _verifier(_prefix(name))


def verify_op_attributes(op: Operation) -> None:
    """Check every npuir dialect attribute on `op` (and, for a function, its arguments')."""
    for name, value in op.attributes.items():
        if (verifier := _attribute_verifier(name)) is not None:
            verifier.verify_operation_attribute(op, name, value)
    if isinstance(op, FuncOp) and op.arg_attrs is not None:
        for index, attrs in enumerate(op.arg_attrs):
            assert isinstance(attrs, DictionaryAttr)
            for name, value in attrs.data.items():
                if (verifier := _attribute_verifier(name)) is not None:
                    verifier.verify_argument_attribute(op, index, name, value)


_ENCLOSING_VERIFIED: ContextVar[bool] = ContextVar("enclosing_verified", default=False)
_WALK_FACTS: ContextVar[dict[tuple[str, Operation], object] | None] = ContextVar(
    "walk_facts", default=None
)


@contextmanager
def enclosing_ops_verified() -> Iterator[None]:
    """Within this block, ops skip re-checking their function's and module's
    attributes: the caller verifies every op in walk order, so it has checked
    those (at the function and the module, where an error belongs) already.
    The IR does not change meanwhile, so verifiers may remember what they read of
    an enclosing op (`walk_facts`)."""
    token = _ENCLOSING_VERIFIED.set(True)
    facts = _WALK_FACTS.set({})
    try:
        yield
    finally:
        _WALK_FACTS.reset(facts)
        _ENCLOSING_VERIFIED.reset(token)


def walk_facts() -> dict[tuple[str, Operation], object] | None:
    """Inside `enclosing_ops_verified`: a table for what a verifier reads of an enclosing
    op (keyed by what it is and the op), kept for the one walk; None elsewhere (the IR
    may change between two checks)."""
    return _WALK_FACTS.get()


class VerifiesDialectAttributes(OpTrait):
    """Checks the npuir attributes of the op, its function and its module.

    The function's and module's are repeated at each op for tools that only
    run xDSL's verifier; npuir's verifier checks them once, at those ops.
    """

    def verify(self, op: Operation) -> None:
        verify_op_attributes(op)
        if _ENCLOSING_VERIFIED.get():
            return
        parent = op.parent_op()
        while parent is not None:
            if isinstance(parent, FuncOp | ModuleOp):
                try:
                    verify_op_attributes(parent)
                except VerifyException as exc:
                    where = f"@{parent.sym_name.data}" if isinstance(parent, FuncOp) else "module"
                    raise VerifyException(f"in {where}: {exc}") from None
            parent = parent.parent_op()


@dataclass(frozen=True)
class SpelledEnum(AttrConstraint[StringAttr], Generic[E]):
    """A string attribute that spells one member of a closed set, a `StrEnum`.

    xDSL's `EnumAttribute` ties a `StrEnum` to an attribute printed
    `#dialect<name value>`; npuir's enums keep the spelling their IR has always had
    (`mode = "aiv"`, `gear.policy = "zip"`, in the custom and the generic form
    alike), so the attribute stays a string and this constraint, made from the
    enum, is what checks it.  `member(attr)` reads it back as the enum.
    """

    subject: str
    """How messages name the attribute (`mode`, `'gear.policy'`)."""
    enum: type[E]
    choices: tuple[E, ...]
    """The members allowed here (by default every member of `enum`)."""

    @staticmethod
    def of(subject: str, enum: type[E], choices: Iterable[E] | None = None) -> SpelledEnum[E]:
        """The constraint for `subject`, allowing `choices` (default: all of `enum`)."""
        return SpelledEnum(subject, enum, tuple(enum if choices is None else choices))

    def spelled_choices(self) -> str:
        """`"a" or "b"`, or `one of "a", "b", "c"`."""
        quoted = [f'"{c.value}"' for c in self.choices]
        if len(quoted) == 2:
            return " or ".join(quoted)
        return "one of " + ", ".join(quoted)

    def member(self, attr: Attribute | None) -> E | None:
        """The member `attr` spells, or None when it spells none of the choices."""
        if isinstance(attr, StringAttr):
            for choice in self.choices:
                if choice.value == attr.data:
                    return choice
        return None

    def verify(self, attr: Attribute, constraint_context: VerificationContext) -> None:
        if self.member(attr) is None:
            raise VerifyException(f"{self.subject} must be {self.spelled_choices()}, got {attr}")

    def get_bases(self) -> set[type[Attribute]] | None:
        return {StringAttr}

    def mapping_type_vars(
        self, type_var_mapping: Mapping[ConstraintVar, AttrConstraint | IntConstraint]
    ) -> SpelledEnum[E]:
        return self
