"""`coreset-lower`: write every op's effective core limits on it and drop the scopes.

Each op that uses cores gets `coreset.cores = #coreset.cores<...>` with the
count of each engine it uses, resolved by `npuir.analysis.core_limits`
(op scope > stream > module > device).  `coreset.limit` scopes are then
inlined (their results replaced by the yielded values) and
`coreset.stream_limit` ops erased: after this pass the limits live on the ops.
Works before or after `stream-partition`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from npuir.analysis.core_limits import CoreLimits, engines_used
from npuir.analysis.manager import LoweredFunction, analyses
from npuir.analysis.program import module_streams, scheduled_functions
from npuir.context import warn
from npuir.diagnostics import Kind
from npuir.dialects import coreset, scope, stream
from npuir.dialects.npu import NpuOp
from npuir.passes import LIMITS_LOWERED, IRState, option
from npuir.schedule.device import device_of

STREAM_LIMIT_UNUSED = Kind(
    "core.stream-limit-unused",
    'coreset.stream_limit names stream "{tag}", which no scope in {where} uses; it limits nothing',
)
"""A stream limit that names no stream in use; arguments: `tag`, `where` (`@function` or
"the module")."""
LIMIT_NO_EFFECT = Kind(
    "core.limit-no-effect",
    "the core limit ({counts}) has no effect on '{op_name}': {reason} (seed 003)",
)
"""A core limit on an op it does not act on (seed 003's table: AI CPU, ATB, TBE on cube,
collectives that hold no cores); arguments: `op_name`, `limits` (`"engine count"` each),
`counts` (the same, comma-separated), `reason`."""


def _warn_no_effect(ctx: Context, limits: CoreLimits) -> None:
    """One warning per op that a scope's or stream's limit does not act on, as seed 003
    says: the limit "has no effect" (不生效) on such kernels."""
    per_op: dict[NpuOp, list[str]] = {}
    reason: dict[NpuOp, str] = {}
    for op, engine, limit, why in limits.no_effect:
        per_op.setdefault(op, []).append(f"{engine} {limit.count}")
        reason[op] = why
    for op, counts in per_op.items():
        warn(
            ctx,
            op,
            LIMIT_NO_EFFECT,
            op_name=op.name,
            limits=counts,
            counts=", ".join(counts),
            reason=reason[op],
        )


def inline_limits(module: ModuleOp) -> set[FuncOp]:
    """Replace each `coreset.limit` by its body; erase `coreset.stream_limit`s; then point
    the later uses of each tensor waited on inside a scope at the wait's result
    (`stream.bind_later_uses`), which the scope hid.  Waits outside every scope were
    bound by `stream-partition` already (or are `chain_collectives`' own, which order
    their collective alone); a chain wait inside a scope is bound here too, which
    orders the later uses of its tensor after the previous collective as well: later,
    never earlier, than the program asks.  Returns the functions whose data that changed
    (the others keep their program graph: scopes are transparent to it)."""
    ops = list(module.walk())
    hidden = {op for op in ops if isinstance(op, stream.WaitTensorOp) and _in_limit_scope(op)}
    rebound = {f for f in (_function_of(w) for w in hidden) if f is not None}
    for op in reversed(ops):
        if isinstance(op, coreset.StreamLimitOp):
            block = op.parent_block()
            assert block is not None
            block.erase_op(op)
        elif isinstance(op, coreset.LimitOp):
            scope.inline_scope(op)
    for func in module.ops:
        if isinstance(func, FuncOp):
            stream.bind_later_uses(func, hidden)
    return rebound


def _function_of(op: Operation) -> FuncOp | None:
    """The function `op` is nested in."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, FuncOp):
        parent = parent.parent_op()
    return parent


def _in_limit_scope(op: Operation) -> bool:
    """Whether `op` is nested in a `coreset.limit`."""
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, coreset.LimitOp):
            return True
        parent = parent.parent_op()
    return False


def _tags_used(root: Operation, decls: dict[str, str]) -> set[str]:
    """Stream tags the ops under `root` run on: scope tags, partitioned streams' tags, and the
    default stream's (every function's return runs there)."""
    used = {stream.MAIN_TAG}
    for inner in root.walk():
        if isinstance(inner, stream.SwitchOp):
            used.add(inner.tag_name)
        elif (symbol := stream.stream_of(inner)) is not None and symbol in decls:
            used.add(decls[symbol])
    return used


def _warn_unused_stream_limits(ctx: Context, module: ModuleOp) -> None:
    """A stream limit naming a tag no scope uses limits nothing: most likely a typo."""
    # One walk finds the stream limits; the tags in use are read only when there are some.
    found = [
        (func, limit)
        for func in module.ops
        for limit in (func.walk() if isinstance(func, FuncOp) else [func])
        if isinstance(limit, coreset.StreamLimitOp)
    ]
    if not found:
        return
    decls = {d.symbol: d.tag.data for d in module.ops if isinstance(d, stream.DeclOp)}
    # Tags used: a function's limit against its own ops, a module-level one against all.
    used: dict[Operation, set[str]] = {}
    for func, limit in found:
        where_tags = func if isinstance(func, FuncOp) else module
        if where_tags not in used:
            used[where_tags] = _tags_used(where_tags, decls)
        if limit.tag.data in used[where_tags]:
            continue
        where = f"@{func.sym_name.data}" if isinstance(func, FuncOp) else "the module"
        warn(
            ctx,
            limit,
            STREAM_LIMIT_UNUSED,
            tag=limit.tag.data,
            where=where,
        )


@dataclass(frozen=True)
class CoresetLowerPass(ModulePass):
    """Resolve each op's effective core limits into coreset.cores and drop the scopes.

    A limit outside [1, the device's core count] is an error.
    """

    name = "coreset-lower"

    ESTABLISHES: ClassVar[tuple[IRState, ...]] = (LIMITS_LOWERED,)

    hw: str | None = option(
        None, "the device preset or TOML file (default: the module's npu.target, else 910b2)"
    )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        limits = CoreLimits(op, device_of(op, self.hw)).run()
        limits.check_ranges()
        _warn_unused_stream_limits(ctx, op)
        _warn_no_effect(ctx, limits)
        cache: dict[tuple[int | None, int | None], coreset.CoresAttr] = {}
        for inner in op.walk():
            if not isinstance(inner, NpuOp):
                continue
            used = engines_used(inner)
            if not used:
                continue
            counts = limits.of(inner)
            key = (
                counts["cube"] if "cube" in used else None,
                counts["vector"] if "vector" in used else None,
            )
            attr = cache.get(key)
            if attr is None:
                attr = cache[key] = coreset.CoresAttr(*key)
            inner.attributes[coreset.CORES] = attr
        rebound = inline_limits(op)
        # The program graph does not see scopes or core counts: a function whose waits
        # the inlining did not rebind keeps the graph stream-partition handed on.
        manager, streams = analyses(ctx), tuple(module_streams(op))
        for func in scheduled_functions(op):
            if func not in rebound:
                manager.keep(LoweredFunction, func, streams)
