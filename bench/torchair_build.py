"""Building IR with `npuir.torchair` against parsing the same program as text.

`build_layers(n_ops)` writes `generate.transformer_layers`' decoder block with
the Python API (k/v projections on stream "1", the all_reduce on "comm"), so
both sides hold the same ops.  Building includes the one verification of the
finished module; parsing includes npuir's op-by-op verification.  No text is
printed or parsed on the building side.  Times are CPU seconds (`time.process_time`):
these machines are shared, and wall time would measure the neighbours.
"""

from __future__ import annotations

import gc
import time
from typing import Any

from generate import LAYER_OPS, transformer_layers

import npuir
from npuir import torchair
from npuir.torchair import ops


def build_layers(n_ops: int) -> torchair.Graph:
    g = torchair.Graph("layers")
    x = g.input((8, 4096), "f16")
    gamma = g.input((4096,), "f16")
    wq, wk, wv, wo = (g.input((4096, 4096), "f16") for _ in range(4))
    wup, wdown = g.input((4096, 22016), "f16"), g.input((11008, 4096), "f16")
    for _ in range(max(1, n_ops // LAYER_OPS)):
        n = ops.rms_norm(x, gamma)
        q = ops.mm(n, wq)
        with torchair.scope.npu_stream_switch("1"):
            k, v = ops.mm(n, wk), ops.mm(n, wv)
        a = ops.mul(ops.softmax(ops.mul(q, k)), v)
        o = ops.mm(a, wo)
        with torchair.scope.npu_stream_switch("comm"):
            r = ops.all_reduce(o, 8)
        h = ops.add(x, r)
        x = ops.add(h, ops.mm(ops.swiglu(ops.mm(h, wup)), wdown))
    g.output(x)
    return g


def run_build(sizes: list[int]) -> dict[str, Any]:
    rows = []
    for n in sizes:
        text = transformer_layers(n)
        gc.collect()
        t0 = time.process_time()
        parsed = npuir.parse_text(npuir.make_context(), text, "layers.mlir")
        t1 = time.process_time()
        gc.collect()
        t2 = time.process_time()
        built = build_layers(n).module
        t3 = time.process_time()
        count = sum(1 for _ in built.walk())
        assert count == sum(1 for _ in parsed.walk())
        rows.append(
            {
                "ops": count,
                "parse_s": round(t1 - t0, 3),
                "build_s": round(t3 - t2, 3),
                "build_ops_per_s": round(count / (t3 - t2)),
                "build_over_parse": round((t3 - t2) / (t1 - t0), 3),
            }
        )
    return {"rows": rows}


def print_build(result: dict[str, Any]) -> None:
    print(f"{'ops':>8} {'parse s':>9} {'build s':>9} {'build/parse':>12} {'build ops/s':>12}")
    for r in result["rows"]:
        print(
            f"{r['ops']:>8} {r['parse_s']:>9.3f} {r['build_s']:>9.3f} "
            f"{r['build_over_parse']:>12.3f} {r['build_ops_per_s']:>12}"
        )
