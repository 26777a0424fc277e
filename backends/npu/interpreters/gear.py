"""Interpreter functions for the `gear` dialect: pick the version by shape.

`choose_version` is also what the rank executor uses to enter a dispatcher;
a shape that matches no gear is a `NoGearMatch` naming the argument, its
shape and the gears that exist.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from npuir.dialects import gear


class NoGearMatch(Exception):
    """The arguments' shapes match none of a dispatcher's gears."""


def choose_version(
    op: gear.DispatchOp, shapes: Sequence[tuple[int, ...]]
) -> tuple[str, int | None]:
    """(callee, index of the gear that matched, or None for the fallback)."""
    pairs = op.dim_pairs()
    actual = tuple(shapes[a][d] if d < len(shapes[a]) else -1 for a, d in pairs)
    for index, (values, callee) in enumerate(op.case_list()):
        if values == actual:
            return callee, index
    if op.fallback_name is not None:
        return op.fallback_name, None
    gears = "; ".join(
        ", ".join(f"arg{a} dim {d} = {v}" for (a, d), v in zip(pairs, values))
        for values, _ in op.case_list()
    )
    got = ", ".join(
        f"arg{a} has shape {'x'.join(map(str, shapes[a]))}" for a in sorted({a for a, _ in pairs})
    )
    raise NoGearMatch(f"no gear matches the inputs ({got}); the gears are: {gears}")


@register_impls
class GearFunctions(InterpreterFunctions):
    """`gear.dispatch`: call the version whose gear the argument shapes match."""

    @impl(gear.DispatchOp)
    def run_dispatch(
        self, interpreter: Interpreter, op: gear.DispatchOp, args: PythonValues
    ) -> PythonValues:
        callee, _ = choose_version(op, [tuple(a.shape) for a in args])
        return interpreter.call_op(callee, args)
