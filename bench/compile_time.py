"""Compile-time scaling: pass time next to parse time, as a ratio.

Measures the `npu-default` pipeline as the tools run it (verification after
the last pass included) against parsing the same file, at several sizes, and
the parse and print throughput (ops per second; parsing includes npuir's
op-by-op verification).  `gc.freeze()` after building big IR keeps the
cyclic collector from making large runs look superlinear.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass

from generate import transformer_layers

import npuir

PIPELINE = "npu-default"


@dataclass(frozen=True)
class CompileFigures:
    ops: int
    parse_s: float
    passes_s: float
    print_s: float
    verify_each_s: float
    """The same pipeline verifying after every pass (`--verify-each`), on a fresh parse."""

    @property
    def ratio(self) -> float:
        return self.passes_s / self.parse_s


def measure(n_ops: int) -> CompileFigures:
    text = transformer_layers(n_ops)
    ctx = npuir.make_context()
    gc.collect()
    t0 = time.perf_counter()
    module = npuir.parse_text(ctx, text, f"layers-{n_ops}.mlir")
    t1 = time.perf_counter()
    gc.freeze()
    ops = sum(1 for _ in module.walk())
    passes = npuir.build_pipeline(PIPELINE)
    t2 = time.perf_counter()
    npuir.run_passes(ctx, module, passes)
    t3 = time.perf_counter()
    npuir.print_ir(module)
    t4 = time.perf_counter()
    gc.unfreeze()
    again = npuir.parse_text(ctx, text, f"layers-{n_ops}.mlir")
    gc.freeze()
    t5 = time.perf_counter()
    npuir.run_passes(ctx, again, npuir.build_pipeline(PIPELINE), verify_each=True)
    t6 = time.perf_counter()
    gc.unfreeze()
    return CompileFigures(ops, t1 - t0, t3 - t2, t4 - t3, t6 - t5)
