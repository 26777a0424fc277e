"""Simulator throughput on big lowered programs, and how it grows with their size.

The program is `generate.transformer_layers` (the compile-time benchmark's decoder layers,
k/v and the all_reduce on their own streams).  Parsing 100k ops of text takes about a minute,
so the big IR is built without the parser: one layer is parsed and lowered by
`stream-partition` once, then its ops are cloned layer after layer into a fresh function
(each layer's input mapped to the previous layer's output) — xDSL's `clone` skips the
lexer, the parser and the verifier.  `insert-events` and `sync-verify` then run on the
whole function, as the real pipeline would; that set-up is timed but not part of the
figures.  `gc.freeze()` after building the IR keeps the cyclic collector from walking it.

Measured separately, per size: `build_program` (reading the Program out of the IR) and
`simulate` (one rank, its collectives' peers mirrored, a fresh cache each call), each as ops per second,
where ops are the `npu` ops; nodes (ops plus records, waits and the return) are reported
too.  Each is run `repeats` times and the fastest run counts (these machines are noisy);
times are CPU seconds of this process, so that other load on the machine does not count.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass
from typing import Any

from generate import LAYER_OPS, transformer_layers
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region, SSAValue

import npuir
from npuir.analysis.program import build_program, module_streams, scheduled_functions
from npuir.backends.npu.hardware import load_hardware
from npuir.backends.npu.simulator import SimCache, simulate
from npuir.dialects import npu, stream

HW = "910b2"


def _template() -> tuple[ModuleOp, FuncOp]:
    """One decoder layer, lowered by stream-partition."""
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, transformer_layers(LAYER_OPS), "layer.mlir")
    npuir.run_passes(ctx, module, npuir.build_pipeline("stream-partition"), verify_each=False)
    (func,) = scheduled_functions(module)
    return module, func


def lowered_layers(n_ops: int) -> ModuleOp:
    """A lowered module (streams, events) whose one function has about `n_ops` npu ops."""
    template_module, template = _template()
    body = list(template.body.block.ops)
    ret = body[-1]
    assert isinstance(ret, ReturnOp)
    layer = body[:-1]
    per_layer = sum(1 for op in layer if isinstance(op, npu.NpuOp))
    layers = max(1, round(n_ops / per_layer))

    block = Block(arg_types=template.function_type.inputs)
    new_args: dict[SSAValue, SSAValue] = dict(zip(template.body.block.args, block.args))
    x_arg = template.body.block.args[0]
    out: SSAValue = block.args[0]
    for _ in range(layers):
        mapper: dict[SSAValue, SSAValue] = dict(new_args)
        mapper[x_arg] = out
        for op in layer:
            block.add_op(op.clone(mapper))
        out = mapper[ret.operands[0]]
    block.add_op(ReturnOp(out))
    func = FuncOp(template.sym_name.data, template.function_type, Region(block))

    module = ModuleOp([])
    module.attributes[npu.TARGET] = StringAttr(HW)
    for op in template_module.ops:
        if isinstance(op, stream.DeclOp):
            module.body.block.add_op(op.clone())
    module.body.block.add_op(func)
    return module


@dataclass(frozen=True)
class SimFigures:
    ops: int
    nodes: int
    build_ir_s: float
    lower_s: float
    build_program_s: float
    simulate_s: float
    warm_simulate_s: float
    makespan_ns: int

    def to_json(self) -> dict[str, Any]:
        return {
            "ops": self.ops,
            "nodes": self.nodes,
            "build_ir_s": round(self.build_ir_s, 3),
            "insert_events_s": round(self.lower_s, 3),
            "build_program_s": round(self.build_program_s, 4),
            "simulate_s": round(self.simulate_s, 4),
            "build_program_ops_per_s": round(self.ops / self.build_program_s),
            "simulate_ops_per_s": round(self.ops / self.simulate_s),
            "simulate_nodes_per_s": round(self.nodes / self.simulate_s),
            "warm_simulate_s": round(self.warm_simulate_s, 4),
            "warm_simulate_ops_per_s": round(self.ops / self.warm_simulate_s),
            "makespan_ns": self.makespan_ns,
        }


def measure(n_ops: int, repeats: int = 3) -> SimFigures:
    hw = load_hardware(HW)
    gc.collect()
    t0 = time.process_time()
    module = lowered_layers(n_ops)
    t1 = time.process_time()
    gc.freeze()
    try:
        ctx = npuir.make_context()
        npuir.run_passes(
            ctx, module, npuir.build_pipeline("insert-events,sync-verify"), verify_each=False
        )
        t2 = time.process_time()
        gc.freeze()
        (func,) = scheduled_functions(module)
        ops = sum(1 for op in func.body.block.ops if isinstance(op, npu.NpuOp))
        streams = module_streams(module)
        program_s: list[float] = []
        simulate_s: list[float] = []
        for _ in range(repeats):
            t3 = time.process_time()
            prog = build_program(func, streams)
            t4 = time.process_time()
            result = simulate([prog], hw, mirror_peers=True)
            t5 = time.process_time()
            program_s.append(t4 - t3)
            simulate_s.append(t5 - t4)
        # With the ops' cost signatures already read from the IR (a SimCache,
        # as a search that simulates many schedules of one program has).
        cache = SimCache(hw)
        simulate([prog], hw, cache=cache, mirror_peers=True)
        warm_s: list[float] = []
        for _ in range(repeats):
            t6 = time.process_time()
            simulate([prog], hw, cache=cache, mirror_peers=True)
            warm_s.append(time.process_time() - t6)
    finally:
        gc.unfreeze()
    assert result.deadlock is None and not result.races
    return SimFigures(
        ops,
        len(prog),
        t1 - t0,
        t2 - t1,
        min(program_s),
        min(simulate_s),
        min(warm_s),
        result.makespan_ns,
    )


def run_sim(sizes: list[int], repeats: int = 3) -> dict[str, Any]:
    """Figures per size; smaller sizes get more runs (up to 100k ops in all), since short
    runs are the noisier."""
    rows = [measure(n, max(repeats, min(10, 100_000 // max(n, 1)))) for n in sizes]
    out: dict[str, Any] = {"hw": HW, "repeats": repeats, "rows": [r.to_json() for r in rows]}
    if len(rows) >= 2:
        a, b = rows[0], rows[-1]
        out["growth"] = {
            "ops": round(b.ops / a.ops, 2),
            "build_program_time": round(b.build_program_s / a.build_program_s, 2),
            "simulate_time": round(b.simulate_s / a.simulate_s, 2),
        }
    return out


def print_sim(result: dict[str, Any]) -> None:
    print(
        f"device {result['hw']}; IR built by cloning one parsed, lowered layer (no parser); "
        f"best of {result['repeats']} or more runs"
    )
    print(
        f"{'ops':>8} {'nodes':>8} {'build IR s':>11} {'events s':>9} {'program s':>10} "
        f"{'program ops/s':>14} {'simulate s':>11} {'sim ops/s':>10} {'sim nodes/s':>12}"
        f" {'warm ops/s':>11}"
    )
    for r in result["rows"]:
        print(
            f"{r['ops']:>8} {r['nodes']:>8} {r['build_ir_s']:>11.2f} {r['insert_events_s']:>9.2f} "
            f"{r['build_program_s']:>10.3f} {r['build_program_ops_per_s']:>14} "
            f"{r['simulate_s']:>11.3f} {r['simulate_ops_per_s']:>10} "
            f"{r['simulate_nodes_per_s']:>12} {r['warm_simulate_ops_per_s']:>11}"
        )
    g = result.get("growth")
    if g:
        print(
            f"{g['ops']}x the ops: build_program took {g['build_program_time']}x the time, "
            f"simulate {g['simulate_time']}x"
        )
