"""What costing Ascend's fused kernels as one op changes: attention and MoE experts.

`python bench/fused_kernels.py [--hw 910b2]` prints, for a Llama-style attention layer
(32 query heads, 8 key/value heads, head dim 128, batch 1) at several sequence lengths:

- `fused`: `npu.fusion_attention` alone on the device (launch included), grouped-query
  heads read in place;
- `parts`: what a graph without the fused kernel runs one after the other: `repeat_kv`
  as two broadcast copies of K and V, `Q K^T`, a softmax and `P V` (each alone, launch
  included), the scores going through HBM;
- `HBM bytes` of each;

and for an MoE layer's experts (64 experts, hidden 2048, expert hidden 1408, top-8 of 4096
tokens) `npu.grouped_matmul` against one matmul per expert of its share of the rows.
Everything is the cost model's (`backends/npu/timing.py`), not a measurement.
"""

from __future__ import annotations

import argparse

from xdsl.dialects.builtin import TensorType, UnitAttr, f16, i32
from xdsl.ir import Attribute, Operation
from xdsl.utils.test_value import create_ssa_value

from npuir.backends.npu.cost import op_work
from npuir.backends.npu.hardware import Hardware, load_hardware
from npuir.backends.npu.timing import solo_task_ns
from npuir.dialects import npu
from npuir.dialects.npu_fused import FusionAttentionOp, GroupedMatmulOp


def _t(*shape: int) -> TensorType[Attribute]:
    return TensorType(f16, list(shape))


def _op(cls: type[Operation], *types: Attribute, **attrs: Attribute) -> npu.NpuOp:
    operands = [create_ssa_value(t) for t in types]
    probe = cls.create(operands=operands, result_types=[types[0]], attributes=dict(attrs))
    assert isinstance(probe, npu.NpuOp)
    op = cls.create(
        operands=operands,
        result_types=probe.infer_result_types(list(types)),
        attributes=dict(attrs),
    )
    assert isinstance(op, npu.NpuOp)
    return op


def _cost(hw: Hardware, ops: list[npu.NpuOp]) -> tuple[int, int]:
    works = [op_work(op, hw) for op in ops]
    return sum(solo_task_ns(hw, w) for w in works), sum(w.bytes for w in works)


def attention(hw: Hardware, seq: int, heads: int = 32, kv: int = 8, d: int = 128) -> str:
    q, k = _t(1, heads, seq, d), _t(1, kv, seq, d)
    fused_ns, fused_b = _cost(hw, [_op(FusionAttentionOp, q, k, k, causal=UnitAttr())])
    wide, scores = _t(1, heads, seq, d), _t(1, heads, seq, seq)
    copy = _op(npu.AddOp, _t(1, kv, 1, seq, d), _t(1, kv, heads // kv, seq, d))
    parts = [
        copy,
        copy,
        _op(npu.BatchMatmulOp, wide, wide, transpose_b=UnitAttr()),
        _op(npu.SoftmaxOp, scores),
        _op(npu.BatchMatmulOp, scores, wide),
    ]
    parts_ns, parts_b = _cost(hw, parts)
    return (
        f"| {seq} | {fused_ns / 1000:.1f} | {parts_ns / 1000:.1f} | {parts_ns / fused_ns:.1f}x "
        f"| {fused_b / 2**20:.1f} | {parts_b / 2**20:.1f} |"
    )


def experts(hw: Hardware, e: int = 64, h: int = 2048, f: int = 1408, rows: int = 4096 * 8) -> str:
    grouped = _op(GroupedMatmulOp, _t(rows, h), _t(e, h, f), TensorType(i32, [e]))
    g_ns, _ = _cost(hw, [grouped])
    each = [_op(npu.MatmulOp, _t(rows // e, h), _t(h, f)) for _ in range(e)]
    e_ns, _ = _cost(hw, each)
    return (
        f"| {e} experts, {rows} rows | {g_ns / 1000:.1f} | {e_ns / 1000:.1f} | {e_ns / g_ns:.1f}x |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hw", default="910b2")
    hw = load_hardware(parser.parse_args().hw)
    print(f"causal GQA attention on {hw.name} (32 q heads, 8 kv heads, d 128), alone, µs:\n")
    print("| seq | fused µs | parts µs | parts / fused | fused MiB | parts MiB |")
    print("|---:|---:|---:|---:|---:|---:|")
    for seq in (128, 512, 2048, 8192):
        print(attention(hw, seq))
    print("\nMoE experts (hidden 2048 -> 1408), µs:\n")
    print("| layer | grouped µs | per-expert matmuls µs | ratio |")
    print("|---|---:|---:|---:|")
    print(experts(hw))


if __name__ == "__main__":
    main()
