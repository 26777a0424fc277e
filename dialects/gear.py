"""The `gear` dialect: dynamic-shape functions as a few static versions.

Mirrors TorchAir's `set_dim_gears`: a function argument's dynamic dims are
annotated with the values they may take (`gear.dims` on the argument), the
function's `gear.policy` says how annotations combine ("zip" pairs the i-th
values of every annotated dim, "product" takes the Cartesian product), and
`gear-multiversion` turns the function into a `gear.dispatch` over one static
clone per gear.  A shape that matches no gear is a runtime error.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DenseArrayBase,
    FunctionType,
    SymbolRefAttr,
    TensorType,
    i64,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    opt_prop_def,
    param_def,
    prop_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.irdl.constraints import VerificationContext
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import SymbolTable, SymbolUserOpInterface
from xdsl.utils.exceptions import VerifyException

from npuir.dialects.attributes import AttributeVerifier, SpelledEnum, VerifiesDialectAttributes
from npuir.dialects.npu import compatible

DIMS = "gear.dims"
"""Argument attribute: the gear values of each annotated dim, a `#gear.dims`."""

POLICY = "gear.policy"
"""Function attribute: "zip" (default) or "product"."""


class Policy(StrEnum):
    """How a function's `gear.dims` annotations combine (its `gear.policy`)."""

    ZIP = "zip"
    """The i-th values of every annotated dim form the i-th gear (the default)."""
    PRODUCT = "product"
    """Every combination of the annotated dims' values is a gear."""


POLICIES: tuple[str, ...] = tuple(Policy)

_POLICY = SpelledEnum.of(f"'{POLICY}'", Policy)


def _ints(array: DenseArrayBase) -> tuple[int, ...]:
    """An i64 dense array's values as Python ints."""
    return tuple(int(x) for x in array.get_values())  # type: ignore[misc]


@irdl_attr_definition
class DimsAttr(ParametrizedAttribute):
    """Gear values per dim of one tensor, `#gear.dims<0: [2, 4], 1: [8, 16]>`.

    A dim appears at most once; its values are whole numbers >= 2 (the gear
    seed forbids 0 and 1).  That the dim exists and is dynamic is checked by
    npuir's verification walk, since xDSL does not verify argument attributes.
    """

    name = "gear.dims"

    dims: DenseArrayBase = param_def()
    values: ArrayAttr[DenseArrayBase] = param_def()

    def __init__(self, gears: dict[int, Sequence[int]]) -> None:
        super().__init__(
            DenseArrayBase.from_list(i64, list(gears)),
            ArrayAttr([DenseArrayBase.from_list(i64, list(v)) for v in gears.values()]),
        )

    def items(self) -> list[tuple[int, tuple[int, ...]]]:
        """(dim, values) pairs in the order written."""
        dims = _ints(self.dims)
        return [(d, _ints(v)) for d, v in zip(dims, self.values)]

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        def parse_i64() -> int:
            start = parser.pos
            value = parser.parse_integer(allow_boolean=False)
            if not -(2**63) <= value < 2**63:
                parser.raise_error(f"{value} does not fit in 64 bits", start, parser.pos)
            return value

        def parse_entry() -> tuple[int, list[int]]:
            dim = parse_i64()
            parser.parse_punctuation(":")
            values = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parse_i64)
            return dim, values

        entries = parser.parse_comma_separated_list(parser.Delimiter.ANGLE, parse_entry)
        return [
            DenseArrayBase.from_list(i64, [d for d, _ in entries]),
            ArrayAttr([DenseArrayBase.from_list(i64, v) for _, v in entries]),
        ]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(
            "<" + ", ".join(f"{d}: [{', '.join(map(str, v))}]" for d, v in self.items()) + ">"
        )

    def verify(self) -> None:
        if len(self.dims) != len(self.values):
            raise VerifyException("#gear.dims needs one value list per dim")
        if not self.items():
            raise VerifyException("#gear.dims needs at least one dim")
        seen: set[int] = set()
        for dim, values in self.items():
            if dim < 0:
                raise VerifyException(f"gear dim must be >= 0, got {dim}")
            if dim in seen:
                raise VerifyException(f"dim {dim} is annotated twice; give each dim one list")
            seen.add(dim)
            if not values:
                raise VerifyException(f"dim {dim} has an empty gear list")
            for v in values:
                if v < 2:
                    raise VerifyException(
                        f"gear value {v} on dim {dim} is not allowed: gear values are "
                        "whole numbers >= 2 (0 and 1 are reserved)"
                    )


class DispatchSymbolUser(SymbolUserOpInterface):
    """`gear.dispatch` names functions: each must exist and take what it is given.

    A case's callee takes the dispatcher's operands and gives its results, with
    static dims agreeing, and each gear dim it fixes equals the case's value (a
    `?` there accepts any); the default version takes the dispatcher's types.
    This is the check MLIR's `verifySymbolUses` makes for `func.call`, so a
    wrong callee fails at `npuir-opt` time rather than when the dispatch runs.
    """

    def verify(self, op: Operation) -> None:
        assert isinstance(op, DispatchOp)
        # The case structure comes first: the checks below index by it.
        op.verify_cases()
        pairs = op.dim_pairs()
        for values, callee in op.case_list():
            func = _callee(op, callee)
            _check_signature(op, func)
            for (arg, dim), value in zip(pairs, values):
                ty = func.function_type.inputs.data[arg]
                assert isinstance(ty, TensorType)
                got = ty.get_shape()[dim]
                if got != DYNAMIC_INDEX and got != value:
                    raise VerifyException(
                        f"case {list(values)} calls @{callee}, whose argument {arg} has "
                        f"{got} in dim {dim}, not the gear value {value}"
                    )
        if op.fallback_name is not None:
            _check_signature(op, _callee(op, op.fallback_name))


def _callee(op: DispatchOp, name: str) -> FuncOp:
    found = SymbolTable.lookup_symbol(op, name)
    if found is None:
        raise VerifyException(f"@{name} does not name a function in the module")
    if not isinstance(found, FuncOp):
        raise VerifyException(f"@{name} names a '{found.name}', not a function")
    return found


def _check_signature(op: DispatchOp, func: FuncOp) -> None:
    name = func.sym_name.data
    inputs, outputs = func.function_type.inputs.data, func.function_type.outputs.data
    if len(inputs) != len(op.args) or len(outputs) != len(op.outputs):
        raise VerifyException(
            f"@{name} takes {len(inputs)} arguments and gives {len(outputs)} results; "
            f"the dispatcher passes {len(op.args)} and expects {len(op.outputs)}"
        )
    for i, (want, given) in enumerate(zip(inputs, op.args.types)):
        if not compatible(want, given):
            raise VerifyException(f"@{name} takes {want} as argument {i}, not {given}")
    for i, (gives, expected) in enumerate(zip(outputs, op.outputs.types)):
        if not compatible(gives, expected):
            raise VerifyException(f"@{name} gives {gives} as result {i}, not {expected}")


@irdl_op_definition
class DispatchOp(IRDLOperation):
    """Calls the static version whose gear matches the arguments' shapes.

    `dims` lists the annotated (argument, dim) pairs; each case gives their
    values, in that order, and the function to call.  Without a match the
    `default` function runs if there is one, else it is a runtime error naming
    the gears that exist.

    ```mlir
    %r = gear.dispatch(%x1, %x2) dims [0:0, 1:0] cases {[2, 2] -> @f_g0, [4, 4] -> @f_g1} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    ```
    """

    name = "gear.dispatch"

    args = var_operand_def()
    outputs = var_result_def()
    dims = prop_def(DenseArrayBase)
    cases = prop_def(ArrayAttr[DenseArrayBase])
    callees = prop_def(ArrayAttr[SymbolRefAttr])
    fallback = opt_prop_def(SymbolRefAttr)

    traits = traits_def(DispatchSymbolUser(), VerifiesDialectAttributes())

    def __init__(
        self,
        args: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        dims: Sequence[tuple[int, int]],
        cases: Sequence[tuple[Sequence[int], str]],
        fallback: str | None = None,
    ) -> None:
        props: dict[str, Attribute] = {
            "dims": DenseArrayBase.from_list(i64, [x for pair in dims for x in pair]),
            "cases": ArrayAttr([DenseArrayBase.from_list(i64, list(v)) for v, _ in cases]),
            "callees": ArrayAttr([SymbolRefAttr(c) for _, c in cases]),
        }
        if fallback is not None:
            props["fallback"] = SymbolRefAttr(fallback)
        super().__init__(operands=[list(args)], result_types=[list(result_types)], properties=props)

    def dim_pairs(self) -> list[tuple[int, int]]:
        flat = list(_ints(self.dims))
        return list(zip(flat[0::2], flat[1::2]))

    def case_list(self) -> list[tuple[tuple[int, ...], str]]:
        return [(_ints(v), c.root_reference.data) for v, c in zip(self.cases, self.callees)]

    @property
    def fallback_name(self) -> str | None:
        return None if self.fallback is None else self.fallback.root_reference.data

    @classmethod
    def parse(cls, parser: Parser) -> DispatchOp:
        args = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        parser.parse_keyword("dims")

        def parse_pair() -> tuple[int, int]:
            arg = parser.parse_integer(allow_boolean=False)
            parser.parse_punctuation(":")
            return arg, parser.parse_integer(allow_boolean=False)

        dims = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parse_pair)
        parser.parse_keyword("cases")

        def parse_case() -> tuple[list[int], str]:
            values = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
            )
            parser.parse_punctuation("->")
            return values, parser.parse_symbol_name().data

        cases = parser.parse_comma_separated_list(parser.Delimiter.BRACES, parse_case)
        fallback = None
        if parser.parse_optional_keyword("default") is not None:
            fallback = parser.parse_symbol_name().data
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_pos = parser.pos
        func_type = parser.parse_type()
        if not isinstance(func_type, FunctionType):
            parser.raise_error("expected a function type", type_pos)
        operands = parser.resolve_operands(args, func_type.inputs.data, type_pos)
        op = cls(operands, func_type.outputs.data, dims, cases, fallback)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string("(")
        printer.print_list(self.args, printer.print_operand)
        pairs = ", ".join(f"{a}:{d}" for a, d in self.dim_pairs())
        cases = ", ".join(f"[{', '.join(map(str, v))}] -> @{c}" for v, c in self.case_list())
        printer.print_string(f") dims [{pairs}] cases {{{cases}}}")
        if self.fallback_name is not None:
            printer.print_string(f" default @{self.fallback_name}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(FunctionType.from_lists(self.args.types, self.outputs.types))

    def verify_(self) -> None:
        self.verify_cases()

    def verify_cases(self) -> None:
        """The (argument, dim) pairs exist and every case gives one value per pair."""
        pairs = self.dim_pairs()
        if len(self.dims) % 2:
            raise VerifyException("dims must list (argument, dim) pairs")
        if len(self.cases) != len(self.callees):
            raise VerifyException("needs one callee per case")
        for arg, dim in pairs:
            if not 0 <= arg < len(self.args):
                raise VerifyException(f"dims names argument {arg}, but there are {len(self.args)}")
            ty = self.args[arg].type
            if not isinstance(ty, TensorType) or not 0 <= dim < ty.get_num_dims():
                raise VerifyException(f"argument {arg} has no dim {dim}")
        for values, callee in self.case_list():
            if len(values) != len(pairs):
                raise VerifyException(
                    f"case for @{callee} gives {len(values)} values for {len(pairs)} dims"
                )


def policy_of(attrs: dict[str, Attribute]) -> Policy | None:
    """The `gear.policy` in an attribute dictionary, if it names one."""
    return _POLICY.member(attrs.get(POLICY))


class GearAttributeVerifier(AttributeVerifier):
    """`gear.policy` on a function is "zip" or "product"; `gear.dims` on one of its
    arguments is a `#gear.dims` whose dims exist and are dynamic in that argument."""

    def verify_operation_attribute(self, op: Operation, name: str, value: Attribute) -> None:
        if name == POLICY:
            _POLICY.verify(value, VerificationContext())

    def verify_argument_attribute(
        self, func: FuncOp, index: int, name: str, value: Attribute
    ) -> None:
        if name != DIMS:
            return
        if not isinstance(value, DimsAttr):
            raise VerifyException(f"argument {index}: '{DIMS}' must be a #gear.dims attribute")
        ty = func.function_type.inputs.data[index]
        if not isinstance(ty, TensorType):
            raise VerifyException(f"argument {index}: gears apply to tensor arguments")
        shape = ty.get_shape()
        for dim, _ in value.items():
            if dim >= len(shape):
                raise VerifyException(
                    f"argument {index}: gear dim {dim} is out of range for {ty} (rank {len(shape)})"
                )
            if shape[dim] != DYNAMIC_INDEX:
                raise VerifyException(
                    f"argument {index}: gear dim {dim} of {ty} is static ({shape[dim]}); "
                    "only dynamic ('?') dims take gears"
                )


Gear = Dialect("gear", [DispatchOp], [DimsAttr], [GearAttributeVerifier()])
