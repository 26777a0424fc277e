"""Large annotated programs for the compile-time benchmarks.

`transformer_layers(n_ops)` repeats a decoder-layer-shaped block — q/k/v
projections with k and v on their own stream, attention, the o-projection and
its all_reduce on a communication stream, then the MLP — until the function
has about `n_ops` ops.  The shapes are real (hidden 4096, 32 heads, one decode
step of batch 8); the annotations follow the multi-stream seed's advice
(compute next to communication, cube next to vector).
"""

from __future__ import annotations

H = "tensor<8x4096xf16>"
W = "tensor<4096x4096xf16>"
W_UP = "tensor<4096x22016xf16>"
UP = "tensor<8x22016xf16>"
W_DOWN = "tensor<11008x4096xf16>"
MID = "tensor<8x11008xf16>"
GAMMA = "tensor<4096xf16>"

LAYER_OPS = 13
"""Ops per layer (scopes and yields not counted)."""


def _layer(i: int, x: str) -> tuple[list[str], str]:
    p = f"l{i}"
    lines = [
        f"  %{p}_n = npu.rms_norm {x}, %gamma {{epsilon = 1.0e-06 : f32}} : ({H}, {GAMMA}) -> {H}",
        f"  %{p}_q = npu.matmul %{p}_n, %wq : ({H}, {W}) -> {H}",
        f'  %{p}_k, %{p}_v = stream.switch "1" -> {H}, {H} {{',
        f"    %{p}_k0 = npu.matmul %{p}_n, %wk : ({H}, {W}) -> {H}",
        f"    %{p}_v0 = npu.matmul %{p}_n, %wv : ({H}, {W}) -> {H}",
        f"    stream.yield %{p}_k0, %{p}_v0 : {H}, {H}",
        "  }",
        f"  %{p}_s = npu.mul %{p}_q, %{p}_k : ({H}, {H}) -> {H}",
        f"  %{p}_p = npu.softmax %{p}_s : ({H}) -> {H}",
        f"  %{p}_a = npu.mul %{p}_p, %{p}_v : ({H}, {H}) -> {H}",
        f"  %{p}_o = npu.matmul %{p}_a, %wo : ({H}, {W}) -> {H}",
        f'  %{p}_r = stream.switch "comm" -> {H} {{',
        f'    %{p}_r0 = npu.all_reduce %{p}_o {{group_size = 8 : i64, mode = "sdma"}} : ({H}) -> {H}',
        f"    stream.yield %{p}_r0 : {H}",
        "  }",
        f"  %{p}_h = npu.add {x}, %{p}_r : ({H}, {H}) -> {H}",
        f"  %{p}_u = npu.matmul %{p}_h, %wup : ({H}, {W_UP}) -> {UP}",
        f"  %{p}_g = npu.swiglu %{p}_u : ({UP}) -> {MID}",
        f"  %{p}_d = npu.matmul %{p}_g, %wdown : ({MID}, {W_DOWN}) -> {H}",
        f"  %{p}_y = npu.add %{p}_h, %{p}_d : ({H}, {H}) -> {H}",
    ]
    return lines, f"%{p}_y"


def transformer_layers(n_ops: int) -> str:
    """A module whose one function has about `n_ops` ops, as `.mlir` text."""
    layers = max(1, n_ops // LAYER_OPS)
    args = (
        f"%x: {H}, %gamma: {GAMMA}, %wq: {W}, %wk: {W}, %wv: {W}, %wo: {W}, "
        f"%wup: {W_UP}, %wdown: {W_DOWN}"
    )
    out = ['module attributes {npu.target = "910b2"} {', f"func.func @layers({args}) -> {H} {{"]
    x = "%x"
    for i in range(layers):
        lines, x = _layer(i, x)
        out.extend(lines)
    out.append(f"  func.return {x} : {H}")
    out.append("}")
    out.append("}")
    return "\n".join(out) + "\n"


SQUARE = "tensor<2048x2048xf16>"


def chain(n_ops: int) -> str:
    """An unannotated chain of `n_ops` 2048x2048 ops, matmuls and adds alternating."""
    out = [
        'module attributes {npu.target = "910b2"} {',
        f"func.func @chain(%x: {SQUARE}, %w: {SQUARE}) -> {SQUARE} {{",
    ]
    x = "%x"
    for i in range(max(1, n_ops)):
        if i % 2 == 0:
            out.append(f"  %c{i} = npu.matmul {x}, %w : ({SQUARE}, {SQUARE}) -> {SQUARE}")
        else:
            out.append(f"  %c{i} = npu.add {x}, %x : ({SQUARE}, {SQUARE}) -> {SQUARE}")
        x = f"%c{i}"
    out += [f"  func.return {x} : {SQUARE}", "}", "}"]
    return "\n".join(out) + "\n"


def wide_dag(n_ops: int, width: int = 16, seed: int = 0) -> str:
    """An unannotated DAG of `n_ops` 2048x2048 ops in levels of `width`: each op reads one
    or two ops of the level before (chosen by a seeded generator), cube and vector mixed;
    the last level is summed into the result."""
    import random

    rng = random.Random(seed)
    out = [
        'module attributes {npu.target = "910b2"} {',
        f"func.func @wide(%x: {SQUARE}, %w: {SQUARE}) -> {SQUARE} {{",
    ]
    previous = ["%x"]
    count = 0
    while count < n_ops:
        level: list[str] = []
        for _ in range(min(width, n_ops - count)):
            name = f"%v{count}"
            a = rng.choice(previous)
            if rng.random() < 0.4:
                out.append(f"  {name} = npu.matmul {a}, %w : ({SQUARE}, {SQUARE}) -> {SQUARE}")
            else:
                b = rng.choice(previous)
                out.append(f"  {name} = npu.add {a}, {b} : ({SQUARE}, {SQUARE}) -> {SQUARE}")
            level.append(name)
            count += 1
        previous = level
    out += [f"  func.return {previous[-1]} : {SQUARE}", "}", "}"]
    return "\n".join(out) + "\n"
