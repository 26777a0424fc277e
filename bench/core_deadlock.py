"""How long `core-deadlock-check` takes on large programs, beside the pairwise definition.

`python bench/core_deadlock.py [--ops 10000] [--streams 8] [--holders 0.5] [--pairwise]`
builds one function of `--ops` ops spread over `--streams` stream scopes (a `--holders`
share of them AIV all_reduces, some under core limits, the rest adds; every eighth op
waits on another stream's value, so happens-before orders some pairs and not others),
partitions and lowers it (stream-partition, coreset-lower, insert-events), then times
`check_core_deadlock` alone (CPU seconds).  `--pairwise` also times the definition it
replaces -- every two holders on two streams, asked of happens-before -- for comparison.
docs/benchmarks.md ("core-deadlock-check") has the figures.
"""

from __future__ import annotations

import argparse
import random
import time

from xdsl.dialects.builtin import ModuleOp

import npuir
from npuir.analysis.core_limits import CoreLimits
from npuir.analysis.manager import AnalysisManager, LoweredFunction
from npuir.analysis.program import NodeKind, module_streams, scheduled_functions
from npuir.backends.npu.hardware import PRESETS
from npuir.dialects.npu import NpuOp
from npuir.transforms.core_deadlock_check import check_core_deadlock, holds_cores

T = "tensor<8x8xf16>"


def program(num_ops: int, num_streams: int, holders: float, seed: int = 1) -> str:
    rng = random.Random(seed)
    lines = ['module attributes {npu.target = "910b2"} {', f"  func.func @g(%a: {T}) -> {T} {{"]
    values = ["%a"]
    for i in range(num_ops):
        tag = rng.randrange(num_streams)
        x = values[-1] if rng.random() < 0.5 else rng.choice(values[-64:])
        body: list[str] = []
        if i % 8 == 0 and len(values) > 2:
            body.append(f"%w{i} = stream.wait_tensor {x} after {rng.choice(values)} : {T}, {T}")
            x = f"%w{i}"
        if rng.random() < holders:
            limit = rng.choice([8, 16, 24, 32])
            body += [
                f"%v{i} = coreset.limit vector {limit} -> {T} {{",
                f'  %c{i} = npu.all_reduce {x} {{group_size = 2 : i64, mode = "aiv", '
                f'group = "g{tag}"}} : ({T}) -> {T}',
                f"  coreset.yield %c{i} : {T}",
                "}",
            ]
        else:
            body.append(f"%v{i} = npu.add {x}, {x} : ({T}, {T}) -> {T}")
        if tag == 0:  # the default stream
            lines += [f"    {line}" for line in body]
            values.append(f"%v{i}")
            continue
        lines.append(f'    %r{i} = stream.switch "s{tag}" -> {T} {{')
        lines += [f"      {line}" for line in body]
        lines += [f"      stream.yield %v{i} : {T}", "    }"]
        values.append(f"%r{i}")
    lines += [f"    func.return {values[-1]} : {T}", "  }", "}", ""]
    return "\n".join(lines)


def pairwise(module: ModuleOp, cache: AnalysisManager) -> int:
    """The number of conflicting pairs by definition (every two holders on two streams)."""
    hw = PRESETS["910b2"]
    (func,) = scheduled_functions(module)
    lowered = cache.get(LoweredFunction, func, tuple(module_streams(module)))
    prog, hb = lowered.prog, lowered.happens_before
    limits = CoreLimits(module, hw).run()
    hs = [n for n in range(len(prog)) if prog.kind[n] is NodeKind.COMPUTE]
    hs = [n for n in hs if holds_cores(prog.ops[n])]
    demand = {}
    for n in hs:
        op = prog.ops[n]
        assert isinstance(op, NpuOp)
        demand[n] = limits.of(op)["vector"]
    count = 0
    for i, a in enumerate(hs):
        for b in hs[i + 1 :]:
            if prog.stream[a] == prog.stream[b] or demand[a] + demand[b] <= hw.vector_cores:
                continue
            if not hb.ordered(a, b) and not hb.ordered(b, a):
                count += 1
    return count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=10_000)
    ap.add_argument("--streams", type=int, default=8)
    ap.add_argument("--holders", type=float, default=0.5)
    ap.add_argument("--pairwise", action="store_true")
    args = ap.parse_args()
    ctx = npuir.make_context(collect_diagnostics=True)
    module = npuir.parse_text(ctx, program(args.ops, args.streams, args.holders), "bench.mlir")
    start = time.process_time()
    npuir.run_passes(
        ctx, module, npuir.build_pipeline("stream-partition,coreset-lower,insert-events")
    )
    lowering = time.process_time() - start
    cache = AnalysisManager()
    (func,) = scheduled_functions(module)
    start = time.process_time()
    hb = cache.get(LoweredFunction, func, tuple(module_streams(module))).happens_before
    graph = time.process_time() - start
    holders = sum(1 for n in range(len(hb.program)) if holds_cores(hb.program.ops[n]))
    start = time.process_time()
    found = check_core_deadlock(module, PRESETS["910b2"], cache=cache)
    check = time.process_time() - start
    errors = sum(1 for d in found if d.severity == "error")
    print(
        f"{args.ops} ops ({holders} holders), {len(module_streams(module))} streams: lowering {lowering:.2f} s, program graph and "
        f"happens-before {graph:.2f} s, check {check:.3f} s CPU, {errors} pair(s) reported"
    )
    if args.pairwise:
        start = time.process_time()
        count = pairwise(module, cache)
        print(f"pairwise definition: {time.process_time() - start:.2f} s CPU, {count} pair(s)")


if __name__ == "__main__":
    main()
