"""Interpreter overhead: `numerics.run_ranks` against calling the same numpy kernels directly.

A chain of 20 ops (4 matmuls, 16 elementwise and softmax ops) on `size x size` f32 tensors
is run two ways: through `run_ranks` (the xDSL interpreter with npuir's functions, one rank),
and as a plain loop calling `kernels.kernel_for(op)(inputs, attrs)` with the attributes
decoded beforehand.  Each is run `repeats` times, alternating which goes first, and the fastest run of each
counts (these machines are noisy).  The goal is a ratio of at most 1.2.
"""

from __future__ import annotations

import gc
import time
from typing import Any

import numpy as np
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import SSAValue

import npuir
from npuir.backends.npu.interpreters.npu import op_kernel_attrs
from npuir.backends.npu.kernels import kernel_for
from npuir.backends.npu.numerics import run_ranks
from npuir.dialects.npu import NpuOp

# (op, second operand or None, attributes): the chain's 20 steps; "w" is the next weight.
CHAIN: tuple[tuple[str, str | None, str], ...] = (
    ("matmul", "w", ""),
    ("relu", None, ""),
    ("add", "b", ""),
    ("mul", "a", ""),
    ("matmul", "w", ""),
    ("sigmoid", None, ""),
    ("sub", "b", ""),
    ("maximum", "a", ""),
    ("matmul", "w", ""),
    ("silu", None, ""),
    ("add", "a", ""),
    ("neg", None, ""),
    ("matmul", "w", ""),
    ("gelu", None, 'approximate = "tanh"'),
    ("mul", "b", ""),
    ("add", "a", ""),
    ("relu", None, ""),
    ("softmax", None, "axis = -1 : i64"),
    ("sub", "b", ""),
    ("add", "a", ""),
)


def chain_text(size: int) -> str:
    ty = f"tensor<{size}x{size}xf32>"
    weights = sum(1 for _, other, _ in CHAIN if other == "w")
    args = ", ".join([f"%a: {ty}", f"%b: {ty}", *(f"%w{i}: {ty}" for i in range(weights))])
    lines = ['module attributes {npu.target = "910b2"} {', f"  func.func @chain({args}) -> {ty} {{"]
    v, w = "%a", 0
    for i, (op, other, attrs) in enumerate(CHAIN):
        attr_text = f" {{{attrs}}}" if attrs else ""
        if other is None:
            lines.append(f"    %v{i} = npu.{op} {v}{attr_text} : ({ty}) -> {ty}")
        else:
            rhs = f"%w{w}" if other == "w" else f"%{other}"
            w += other == "w"
            lines.append(f"    %v{i} = npu.{op} {v}, {rhs}{attr_text} : ({ty}, {ty}) -> {ty}")
        v = f"%v{i}"
    lines += [f"    func.return {v} : {ty}", "  }", "}"]
    return "\n".join(lines) + "\n"


def _direct_plan(func: FuncOp) -> tuple[list[Any], int]:
    """The chain as (kernel, operand slots, result slot, attrs), slots indexing one list."""
    slots: dict[SSAValue, int] = {arg: i for i, arg in enumerate(func.body.block.args)}
    plan: list[Any] = []
    out = -1
    for op in func.body.block.ops:
        if isinstance(op, ReturnOp):
            out = slots[op.operands[0]]
            continue
        assert isinstance(op, NpuOp)
        ins = [slots[v] for v in op.operands]
        slots[op.results[0]] = len(slots)
        plan.append((kernel_for(op.name), ins, slots[op.results[0]], op_kernel_attrs(op)))
    return plan, out


def _run_direct(plan: list[Any], out: int, inputs: list[np.ndarray[Any, Any]]) -> Any:
    values: list[Any] = [*inputs, *([None] * len(plan))]
    for kernel, ins, res, attrs in plan:
        values[res] = kernel([values[i] for i in ins], attrs)[0]
    return values[out]


def _best_times(size: int, repeats: int) -> tuple[float, float, int]:
    """Fastest run_ranks and fastest direct run of the chain at `size`, and its op count."""
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, chain_text(size), "chain.mlir")
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    rng = np.random.default_rng(0)
    inputs = [rng.uniform(-1, 1, (size, size)).astype(np.float32) for _ in func.body.block.args]
    plan, out = _direct_plan(func)
    interp_times: list[float] = []
    direct_times: list[float] = []
    outputs: list[Any] = []
    direct: Any = None
    for i in range(repeats):
        # Alternate which goes first, so neither always runs on a warmer heap.
        for which in ("interp", "direct") if i % 2 == 0 else ("direct", "interp"):
            gc.collect()
            t0 = time.perf_counter()
            if which == "interp":
                (outputs,) = run_ranks(module, [func], [inputs])
                interp_times.append(time.perf_counter() - t0)
            else:
                direct = _run_direct(plan, out, inputs)
                direct_times.append(time.perf_counter() - t0)
    assert np.array_equal(outputs[0], direct, equal_nan=True)
    return min(interp_times), min(direct_times), len(plan)


def run_interp(size: int = 2048, repeats: int = 3) -> dict[str, Any]:
    """The ratio on big tensors, and the fixed cost per op on tiny ones (8x8, 50 runs),
    where the kernels take almost no time and what is left is the interpreter's own."""
    interp, direct, ops = _best_times(size, repeats)
    small_interp, small_direct, _ = _best_times(8, 50)
    return {
        "size": size,
        "ops": ops,
        "repeats": repeats,
        "interp_s": round(interp, 4),
        "direct_s": round(direct, 4),
        "ratio": round(interp / direct, 3),
        "fixed_us_per_op": {
            "interp": round(1e6 * small_interp / ops, 1),
            "direct": round(1e6 * small_direct / ops, 1),
        },
    }


def print_interp(r: dict[str, Any]) -> None:
    print(
        f"{r['ops']}-op chain on {r['size']}x{r['size']} f32, best of {r['repeats']}: "
        f"run_ranks {r['interp_s']:.3f} s, kernels directly {r['direct_s']:.3f} s"
    )
    print(f"ratio {r['ratio']:.3f} (goal <= 1.2)")
    fixed = r["fixed_us_per_op"]
    print(
        f"on 8x8 tensors (fixed cost per op): run_ranks {fixed['interp']} us, "
        f"kernels directly {fixed['direct']} us"
    )
