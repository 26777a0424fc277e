"""The gears of a geared entry function, each as the input shapes that select it.

`npuir-advise` times every variant once per gear, and `npuir-run --report` draws one section
per gear: both enumerate the gears here, so that their labels and shapes agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.func import FuncOp

from npuir.dialects import gear
from npuir.transforms.gear_multiversion import annotated_dims, combine

__all__ = ["GearCase", "gear_cases"]


@dataclass(frozen=True)
class GearCase:
    """One gear of a function: its label and the argument shapes (by argument index, as
    `--shape` keys them) that make the dispatcher enter it."""

    label: str
    shapes: dict[str, tuple[int, ...]]


def gear_cases(func: FuncOp) -> list[GearCase]:
    """`func`'s gears in the order its policy combines them (empty when it has no annotated
    dim); an invalid annotation raises the located error `gear-multiversion` would."""
    dims = annotated_dims(func)
    if not dims:
        return []
    policy = gear.policy_of(func.attributes) or gear.Policy.ZIP
    cases: list[GearCase] = []
    for values in combine(func, dims, policy):
        shapes: dict[str, tuple[int, ...]] = {}
        for ((arg, dim), _), value in zip(dims, values):
            ty = func.function_type.inputs.data[arg]
            base = list(shapes.get(str(arg), ty.get_shape()))
            base[dim] = value
            shapes[str(arg)] = tuple(base)
        label = "gear " + ", ".join(
            f"arg{a}={'x'.join(str(d) if d >= 0 else '?' for d in s)}"
            for a, s in ((int(k), v) for k, v in shapes.items())
        )
        cases.append(GearCase(label, shapes))
    return cases
