"""`torchair.inference`: dynamic-shape gears, as TorchAir's `set_dim_gears`.

On a builder input it puts `gear.dims` on the function argument; on a torch
tensor it does what TorchAir's does: checks the gears, marks the geared dims
dynamic with their range (`torch._dynamo.mark_dynamic(t, d, min, max)`) and
the others static, and remembers the gears on the tensor, where
`get_npu_backend` finds them when dynamo compiles the graph (one program for
all gears; a call whose shape is no gear is a `TorchairError` naming them).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from npuir.diagnostics import Kind
from npuir.dialects import gear

from .errors import fail, user_location, warn
from .graph import GEAR_DIM, GEARS_NOT_INTS, Tensor

# Gears `set_dim_gears` refuses (TorchAir's checks): `torchair.bad-gears.<what>`; values
# given are shown as Python writes them (repr).
NOT_A_DICT = Kind(
    "torchair.bad-gears.not-a-dict", "dim_gears must be a dict {{dim: [gears]}}, got {value}"
)
"""`dim_gears` is no dict; argument: `value`."""
BAD_DIM = GEAR_DIM
"""A dim index outside the tensor's rank (the builder's kind: one code, one template)."""
NOT_INTS = GEARS_NOT_INTS
"""A dim's gears that are not a list of ints (the builder's kind)."""
GEAR_COUNT = Kind(
    "torchair.bad-gears.count", "dim {dim} has {count} gears; give between 2 and {limit}"
)
"""Too few or too many gears for a dim; arguments: `dim`, `count`, `limit`."""
GEAR_TOO_SMALL = Kind(
    "torchair.bad-gears.too-small",
    "gears for dim {dim} must be >= 2 (dynamo specialises sizes 0 and 1), got {gears}",
)
"""A gear below 2; arguments: `dim`, `gears`."""
GEARS_REFUSED = Kind("torchair.bad-gears.refused", "{reason}")
"""Gears the `gear.dims` attribute's own verifier refuses (e.g. more than 100 merged
gears); `reason` is that verifier's message, which holds text only (as `verify.op`)."""
NOT_A_TENSOR = Kind(
    "torchair.bad-gears.not-a-tensor",
    "set_dim_gears takes a torch tensor or a graph input, got {value}",
)
"""`set_dim_gears` on something that is no tensor; argument: `value`."""
ALREADY_SET = Kind(
    "torchair.bad-gears.already-set",
    "the tensor already has dim gears {previous}; setting different ones is not supported (as "
    "in TorchAir)",
)
"""Different gears set twice on one tensor; argument: `previous`."""

GEARS_NOT_DYNAMIC = Kind(
    "torchair.gears-without-dynamic",
    "set_dim_gears {gears} is meant for torch.compile(..., dynamic=True): it makes only these "
    "dims symbolic; without dynamic=True dynamo fixes the model's other sizes and scalars at "
    "the first call's values",
)
"""Gears on a torch tensor compiled without `dynamic=True` (TorchAir's rule: gears go with
`dynamic=True`, which makes dynamo symbolise what `set_dim_gears` does not); a warning at
the `set_dim_gears` line; argument: `gears`."""

GEARS_ATTR = "_npuir_dim_gears"
"""Where a torch tensor keeps its gears ({dim: [values]})."""
GEARS_AT_ATTR = "_npuir_dim_gears_at"
"""Where a torch tensor keeps the location of its `set_dim_gears` call."""

MAX_GEARS = 100
"""TorchAir's cap on the gears of one dim, and on the merged gears of a graph."""


def _check(dim_gears: object, rank: int) -> dict[int, list[int]]:
    """TorchAir's checks: dims in range, 2..100 whole-number gears >= 2 per dim."""
    if not isinstance(dim_gears, dict):
        raise fail(NOT_A_DICT, value=repr(dim_gears))
    checked: dict[int, list[int]] = {}
    for dim, gears in dim_gears.items():
        if not isinstance(dim, int) or isinstance(dim, bool) or not 0 <= dim < rank:
            raise fail(BAD_DIM, dim=repr(dim), last=rank - 1)
        if not isinstance(gears, list | tuple) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in gears
        ):
            raise fail(NOT_INTS, dim=dim, gears=repr(gears))
        if not 2 <= len(gears) <= MAX_GEARS:
            raise fail(GEAR_COUNT, dim=dim, count=len(gears), limit=MAX_GEARS)
        if any(v < 2 for v in gears):
            raise fail(GEAR_TOO_SMALL, dim=dim, gears=str(list(gears)))
        checked[dim] = list(gears)
    try:
        gear.DimsAttr(checked).verify()
    except Exception as exc:  # the dialect's own check (e.g. more than 100 merged gears)
        raise fail(GEARS_REFUSED, reason=str(exc)) from None
    return checked


def set_dim_gears(t: Any, dim_gears: dict[int, Sequence[int]]) -> None:
    """Give the dims of an input the values (gears) they may take.

    `set_dim_gears(x, {0: [2, 4]})` on a builder input puts `gear.dims =
    #gear.dims<0: [2, 4]>` on it (a static dim becomes `?`, before the input is
    used); on a torch tensor it marks dim 0 dynamic in [2, 4] and the other dims
    static, for `torch.compile(..., backend=get_npu_backend())`.  The graph's
    `gear.policy` is the config's `inference_config.dynamic_gears_merge_policy`.
    TorchAir's checks apply: dims in range, 2 to 100 int gears per dim, each
    >= 2, one annotation per tensor.
    """
    if isinstance(t, Tensor):
        if not isinstance(dim_gears, dict):
            raise fail(NOT_A_DICT, value=repr(dim_gears))
        t.graph.set_gears(t, dim_gears)
        return
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(t, torch.Tensor):
        raise fail(NOT_A_TENSOR, value=repr(t))
    checked = _check(dim_gears, t.dim())
    previous = getattr(t, GEARS_ATTR, None)
    if previous is not None:
        if previous != checked:
            raise fail(ALREADY_SET, previous=str(previous))
        return
    import torch.fx.experimental._config as fx_config

    # Each geared dim needs a symbol of its own: with duck sizing, dynamo would give
    # two dims of equal size on the first call one symbol (and refuse product gears).
    fx_config.use_duck_shape = False
    for d in range(t.dim()):
        if d in checked:
            torch._dynamo.mark_dynamic(t, d, min=min(checked[d]), max=max(checked[d]))
        else:
            torch._dynamo.mark_static(t, d)
    setattr(t, GEARS_ATTR, checked)
    setattr(t, GEARS_AT_ATTR, user_location())


def warn_unless_dynamic(tensors: Sequence[Any]) -> None:
    """Warn, at each `set_dim_gears` line, about gears compiled without `dynamic=True`.

    Called by a `torch.compile` backend while dynamo compiles (its config then says whether
    `dynamic=True` was asked for: only then does dynamo assume sizes dynamic by default).
    A builder graph has no such switch: its geared dims are dynamic (`?`) and the program
    is gear-multiversioned, so nothing there warns.
    """
    import torch

    if not torch._dynamo.config.assume_static_by_default:
        return  # dynamic=True
    for t in tensors:
        gears = getattr(t, GEARS_ATTR, None)
        if gears:
            warn(GEARS_NOT_DYNAMIC, getattr(t, GEARS_AT_ATTR, None), gears=str(gears))


def gears_of(t: Any) -> dict[int, list[int]] | None:
    """The gears `set_dim_gears` gave a torch tensor, or None."""
    gears = getattr(t, GEARS_ATTR, None)
    return dict(gears) if gears else None
