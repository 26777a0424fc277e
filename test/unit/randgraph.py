"""Seeded random annotated graphs, as `.mlir` text, for property tests and benchmarks."""

from __future__ import annotations

import random

TYPE = "tensor<8x8xf16>"
UNARY = ("relu", "exp", "neg", "sigmoid")
BINARY = ("add", "mul", "sub")


def random_annotated_graph(
    seed: int, num_ops: int, num_tags: int = 3, wait_tensor_rate: float = 0.3
) -> str:
    """A function of `num_ops` ops; each op sits on the default stream or in a
    `stream.switch` scope of one of `num_tags` tags, and some operands go
    through `stream.wait_tensor` on an earlier value."""
    rng = random.Random(seed)
    lines = [f"func.func @g(%a0: {TYPE}, %a1: {TYPE}) -> {TYPE} {{"]
    values = ["%a0", "%a1"]
    for i in range(num_ops):
        tag = rng.randrange(num_tags + 1)
        indent = "    " if tag else "  "
        body: list[str] = []
        operands = [rng.choice(values[-8:] if rng.random() < 0.7 else values) for _ in range(2)]
        if rng.random() < wait_tensor_rate and len(values) > 2:
            dep = rng.choice(values)
            body.append(
                f"{indent}%w{i} = stream.wait_tensor {operands[0]} after {dep} : {TYPE}, {TYPE}"
            )
            operands[0] = f"%w{i}"
        if rng.random() < 0.5:
            op = rng.choice(UNARY)
            body.append(f"{indent}%v{i} = npu.{op} {operands[0]} : ({TYPE}) -> {TYPE}")
        else:
            op = rng.choice(BINARY)
            body.append(
                f"{indent}%v{i} = npu.{op} {operands[0]}, {operands[1]} : ({TYPE}, {TYPE}) -> {TYPE}"
            )
        if tag:
            lines.append(f'  %r{i} = stream.switch "{tag}" -> {TYPE} {{')
            lines.extend(body)
            lines.append(f"    stream.yield %v{i} : {TYPE}")
            lines.append("  }")
            values.append(f"%r{i}")
        else:
            lines.extend(body)
            values.append(f"%v{i}")
    lines.append(f"  func.return {values[-1]} : {TYPE}")
    lines.append("}")
    return "\n".join(lines) + "\n"
