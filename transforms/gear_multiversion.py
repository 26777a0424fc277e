"""`gear-multiversion`: turn a function with gears into static versions and a dispatcher.

Mirrors TorchAir's `set_dim_gears`.  The annotated dims of a function's
arguments (`gear.dims`) combine by the function's `gear.policy`: "zip"
(default) pairs the i-th values of every annotated dim, "product" takes the
Cartesian product.  For each resulting gear the function is cloned as
`@NAME_gK` with those dims made static, and every result type is re-inferred
through the `npu` ops' shape inference (scope results and the function's
results included).  The original body becomes a `gear.dispatch` over the
versions; at run time a shape that matches no gear is an error naming the
gears, unless `fallback=dynamic` keeps the generic body as `@NAME_dynamic`
(like GE's hybrid mode).

The rules, from the gear seed document and GE: gear values are whole numbers
>= 2 (checked when `#gear.dims` is parsed), an annotated dim must exist and be
dynamic (checked by npuir's verifier), `zip` lists have equal lengths, at most
100 gears after merging, at least 2 (GE's rule).  Duplicate gears merge
silently, keeping first-occurrence order.  A `product` combination that does
not type-check is dropped with a warning naming it; in `zip` mode, where the
user listed every combination, it is an error.

The dispatcher also records the options TorchAir would pass to GE for the
same gears: `ge.inputShape` (e.g. "arg0:-1,2;arg1:-1,2") and `ge.dynamicDims`
(e.g. "2,2;4,4").
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import ClassVar, Literal, get_args

from xdsl.context import Context
from xdsl.dialects.builtin import (
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from npuir.analysis.program import defined_functions
from npuir.context import warn
from npuir.diagnostics import DiagnosticError, Kind, error
from npuir.dialects import gear
from npuir.dialects.npu import DYN
from npuir.dialects.shapes import Dim, RetypeError, specialise
from npuir.passes import IRState, option

GEAR_DROPPED = Kind("gear.dropped", "dropping gear ({gear}): it does not type-check ({reason})")
"""A `product` gear that does not type-check is dropped; arguments: `gear` (its dims and
values), `reason` (the shape rule's message)."""
GEAR_ILL_TYPED = Kind("gear.ill-typed", "gear ({gear}) does not type-check: {reason}")
"""A gear whose shapes do not type-check; arguments: `gear`, `reason`."""
TOO_FEW_GEARS = Kind(
    "gear.too-few",
    "{count} gear after merging; a gear set needs at least 2 (GE's rule: with one shape, "
    "make the dims static instead)",
)
"""Fewer than two gears after merging; argument: `count`."""
TOO_MANY_GEARS = Kind("gear.too-many", "{count} gears after merging; at most {limit} are allowed")
"""More gears than allowed after merging; arguments: `count`, `limit`."""
ZIP_LENGTHS = Kind(
    "gear.zip-lengths",
    'gear.policy "zip" pairs the i-th values of every annotated dim, so all lists need the '
    "same length; got {lengths}",
)
"""`zip` gear lists of different lengths; argument: `lengths` (each dim's count)."""

MAX_GEARS = 100
"""The most gears one function may have (the gear seed document's limit)."""


def annotated_dims(func: FuncOp) -> list[tuple[Dim, tuple[int, ...]]]:
    """The function's annotated dims with their values, by argument then as written."""
    out: list[tuple[Dim, tuple[int, ...]]] = []
    if func.arg_attrs is None:
        return out
    for index, attrs in enumerate(func.arg_attrs):
        assert isinstance(attrs, DictionaryAttr)
        dims = attrs.data.get(gear.DIMS)
        if isinstance(dims, gear.DimsAttr):
            out.extend(((index, d), values) for d, values in dims.items())
    return out


def combine(
    func: FuncOp, dims: list[tuple[Dim, tuple[int, ...]]], policy: gear.Policy
) -> list[tuple[int, ...]]:
    """The gears, one value per annotated dim each, validated and deduplicated."""
    lists = [values for _, values in dims]
    if policy is gear.Policy.ZIP:
        lengths = {len(v) for v in lists}
        if len(lengths) > 1:
            described = ", ".join(f"arg{a} dim {d}: {len(v)}" for (a, d), v in dims)
            raise error(
                func,
                ZIP_LENGTHS,
                lengths=described,
            )
        gears = list(zip(*lists))
    else:
        count = 1
        for values in lists:
            count *= len(set(values))
        if count > MAX_GEARS:
            raise error(func, TOO_MANY_GEARS, count=count, limit=MAX_GEARS)
        gears = list(itertools.product(*lists))
    unique = list(dict.fromkeys(gears))
    if len(unique) > MAX_GEARS:
        raise error(func, TOO_MANY_GEARS, count=len(unique), limit=MAX_GEARS)
    if len(unique) < 2:
        raise error(func, TOO_FEW_GEARS, count=len(unique))
    return unique


def ge_options(func: FuncOp, dims: list[Dim], gears: list[tuple[int, ...]]) -> dict[str, str]:
    """`ge.inputShape` and `ge.dynamicDims` as TorchAir would give them to GE."""
    shapes = []
    for index, ty in enumerate(func.function_type.inputs):
        if isinstance(ty, TensorType):
            dims_text = ",".join("-1" if d == DYN else str(d) for d in ty.get_shape())
            shapes.append(f"arg{index}:{dims_text}")
    return {
        "ge.inputShape": ";".join(shapes),
        "ge.dynamicDims": ";".join(",".join(map(str, g)) for g in gears),
    }


Fallback = Literal["none", "dynamic"]
"""The `fallback` option's choices."""


@dataclass(frozen=True)
class GearMultiversionPass(ModulePass):
    """Clone each function with gears into static versions behind a gear.dispatch."""

    name = "gear-multiversion"

    # Needs no state and undoes none: its versions are clones, their ops' attributes kept.
    REQUIRES: ClassVar[tuple[IRState, ...]] = ()

    FALLBACKS: ClassVar[tuple[str, ...]] = get_args(Fallback)

    fallback: Fallback = option(
        "none",
        "what a shape that matches no gear does: 'none' makes it a runtime error; "
        "'dynamic' keeps the generic body as @NAME_dynamic for such shapes",
    )

    def __post_init__(self) -> None:
        if self.fallback not in self.FALLBACKS:
            raise ValueError(
                f"fallback '{self.fallback}' is not one of: {', '.join(self.FALLBACKS)}"
            )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in defined_functions(op):
            dims = annotated_dims(func)
            if dims:
                self._multiversion(ctx, op, func, dims)

    def _multiversion(
        self, ctx: Context, module: ModuleOp, func: FuncOp, dims: list[tuple[Dim, tuple[int, ...]]]
    ) -> None:
        policy = gear.policy_of(dict(func.attributes)) or gear.Policy.ZIP
        gears = combine(func, dims, policy)
        base = func.sym_name.data
        keys = [d for d, _ in dims]
        versions: list[FuncOp] = []
        cases: list[tuple[tuple[int, ...], str]] = []
        failures: list[tuple[tuple[int, ...], DiagnosticError]] = []
        for values in gears:
            name = f"{base}_g{len(versions)}"
            described = ", ".join(f"arg{a} dim {d} = {v}" for (a, d), v in zip(keys, values))
            try:
                versions.append(specialise(func, name, dict(zip(keys, values))))
                cases.append((values, name))
            except RetypeError as exc:
                where = self._original_of(func, exc.op)
                failure = error(where, GEAR_ILL_TYPED, gear=described, reason=str(exc))
                if policy is gear.Policy.ZIP:
                    raise failure from None
                failures.append((values, failure))
                warn(
                    ctx,
                    where,
                    GEAR_DROPPED,
                    gear=described,
                    reason=str(exc),
                )
        if not versions:
            raise failures[0][1]
        fallback_name = None
        if self.fallback == "dynamic":
            generic = func.clone()
            generic.sym_name = StringAttr(f"{base}_dynamic")
            generic.arg_attrs = None
            generic.attributes.pop(gear.POLICY, None)
            versions.append(generic)
            fallback_name = generic.sym_name.data
        self._build_dispatcher(func, keys, cases, fallback_name)
        anchor = func
        for version in versions:
            module.body.block.insert_op_after(version, anchor)
            anchor = version

    @staticmethod
    def _original_of(func: FuncOp, op: Operation) -> Operation:
        """The op of `func` that a clone's op came from (same location), for errors."""
        for original in func.body.walk():
            if original.location == op.location and original.name == op.name:
                return original
        return func

    @staticmethod
    def _build_dispatcher(
        func: FuncOp,
        keys: list[Dim],
        cases: list[tuple[tuple[int, ...], str]],
        fallback: str | None,
    ) -> None:
        old = func.body.block
        block = Block(arg_types=[a.type for a in old.args])
        for new, original in zip(block.args, old.args):
            new.name_hint = original.name_hint
        outputs = list(func.function_type.outputs)
        dispatch = gear.DispatchOp(block.args, outputs, keys, cases, fallback)
        dispatch.location = func.location
        for name, value in ge_options(func, keys, [v for v, _ in cases]).items():
            dispatch.attributes[name] = StringAttr(value)
        ret = ReturnOp(*dispatch.results)
        ret.location = func.location
        block.add_ops([dispatch, ret])
        func.body.detach_block(old)
        old.erase(safe_erase=False)
        func.body.add_block(block)
        func.attributes.pop(gear.POLICY, None)
        func.arg_attrs = None
