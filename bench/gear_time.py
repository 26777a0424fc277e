"""Time of `gear-multiversion` against the number of gears.

The function has about `ops` vector ops (elementwise, softmax, a keepdims reduction that
broadcasts back) on one `tensor<?x?xf16>` argument whose two dims carry gears under the
`product` policy: 10 gears = 2 x 5, 25 = 5 x 5, 50 = 5 x 10, 100 = 10 x 10 (the seed's
limit).  Each gear is a static clone of the whole function, re-typed through shape
inference, so the goal is time linear in the gears: a constant time per gear.  Parsing is
not timed; the pass runs without verifying after it (as in the compile benchmark).

Each count is timed twice: with the cyclic garbage collector paused (the pass's own
scaling) and with it running after `gc.freeze()` of the parsed input (what a user of
`npuir-opt` sees: every collection walks the clones made so far).
"""

from __future__ import annotations

import gc
import random
import time
from typing import Any

import npuir

SPLITS: dict[int, tuple[int, int]] = {10: (2, 5), 25: (5, 5), 50: (5, 10), 100: (10, 10)}


def gear_function(ops: int, gears: int, seed: int = 0) -> str:
    """A module whose function has `ops` ops and `gears` gears (product of two dims)."""
    a, b = SPLITS[gears]
    rows = [16 * (i + 1) for i in range(a)]
    cols = [64 * (i + 1) for i in range(b)]
    rng = random.Random(seed)
    ty = "tensor<?x?xf16>"
    col = "tensor<?x1xf16>"
    dims = f"#gear.dims<0: [{', '.join(map(str, rows))}], 1: [{', '.join(map(str, cols))}]>"
    lines = [
        'module attributes {npu.target = "910b2"} {',
        f"  func.func @geared(%x: {ty} {{gear.dims = {dims}}}) -> {ty}",
        '      attributes {gear.policy = "product"} {',
    ]
    values = ["%x"]
    n = 0
    while n < ops:
        a_ = rng.choice(values[-6:])
        kind = rng.random()
        if kind < 0.35:
            op = rng.choice(("add", "mul", "sub", "maximum"))
            b_ = rng.choice(values[-6:])
            lines.append(f"    %v{n} = npu.{op} {a_}, {b_} : ({ty}, {ty}) -> {ty}")
        elif kind < 0.75:
            op = rng.choice(("relu", "sigmoid", "neg", "silu"))
            lines.append(f"    %v{n} = npu.{op} {a_} : ({ty}) -> {ty}")
        elif kind < 0.85:
            lines.append(f"    %v{n} = npu.softmax {a_} {{axis = -1 : i64}} : ({ty}) -> {ty}")
        else:
            lines.append(
                f"    %m{n} = npu.reduce_max {a_} {{axes = array<i64: 1>, keepdims}} : "
                f"({ty}) -> {col}"
            )
            n += 1
            lines.append(f"    %v{n} = npu.sub {a_}, %m{n - 1} : ({ty}, {col}) -> {ty}")
            values.append(f"%v{n}")
            n += 1
            continue
        values.append(f"%v{n}")
        n += 1
    lines.append(f"    func.return {values[-1]} : {ty}")
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _time_pass(ops: int, gears: int, collector: bool) -> tuple[float, int]:
    """Seconds `gear-multiversion` takes, and the ops in the module after it."""
    ctx = npuir.make_context(collect_diagnostics=True)
    module = npuir.parse_text(ctx, gear_function(ops, gears), f"gears-{gears}.mlir")
    passes = npuir.build_pipeline("gear-multiversion")
    gc.collect()
    gc.freeze()
    if not collector:
        gc.disable()
    try:
        t0 = time.perf_counter()
        npuir.run_passes(ctx, module, passes, verify_each=False)
        elapsed = time.perf_counter() - t0
    finally:
        gc.enable()
        gc.unfreeze()
    ctx.diagnostics.drain()
    total = sum(1 for _ in module.walk())
    del module
    gc.collect()
    return elapsed, total


def measure(ops: int, gears: int) -> dict[str, Any]:
    paused, total = _time_pass(ops, gears, collector=False)
    running, _ = _time_pass(ops, gears, collector=True)
    return {
        "gears": gears,
        "ops_in": ops,
        "ops_out": total,
        "time_s": round(paused, 4),
        "ms_per_gear": round(1000 * paused / gears, 3),
        "time_gc_on_s": round(running, 4),
        "ms_per_gear_gc_on": round(1000 * running / gears, 3),
    }


def run_gears(ops: int, counts: list[int]) -> dict[str, Any]:
    rows = [measure(ops, g) for g in counts]
    out: dict[str, Any] = {"ops": ops, "rows": rows}
    if len(rows) >= 2:
        a, b = rows[0], rows[-1]
        out["growth"] = {
            "gears": round(b["gears"] / a["gears"], 2),
            "time": round(b["time_s"] / a["time_s"], 2),
            "per_gear": round(b["ms_per_gear"] / a["ms_per_gear"], 2),
            "per_gear_gc_on": round(b["ms_per_gear_gc_on"] / a["ms_per_gear_gc_on"], 2),
        }
    return out


def print_gears(result: dict[str, Any]) -> None:
    print(f"gear-multiversion on a {result['ops']}-op function, product of two annotated dims")
    print(f"{'':>16} {'collector paused':>20} {'collector on':>20}")
    print(
        f"{'gears':>6} {'ops out':>9} {'time s':>10} {'ms/gear':>9} {'time s':>10} {'ms/gear':>9}"
    )
    for r in result["rows"]:
        print(
            f"{r['gears']:>6} {r['ops_out']:>9} {r['time_s']:>10.3f} {r['ms_per_gear']:>9.2f} "
            f"{r['time_gc_on_s']:>10.3f} {r['ms_per_gear_gc_on']:>9.2f}"
        )
    g = result.get("growth")
    if g:
        print(
            f"{g['gears']}x the gears took {g['time']}x the time with the collector paused "
            f"(time per gear x{g['per_gear']}; linear is x1.0), time per gear "
            f"x{g['per_gear_gc_on']} with it on"
        )
