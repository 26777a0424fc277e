"""Write kernel_details.csv beside this file: tp_decoder_prefill run on the device in
truth_910b2.toml, its compute ops as torch_npu's profiler writes them (every column
`kernel_details.csv` documents, in its order; the Ascend PyTorch Profiler user guide,
"kernel_details.csv").  Collectives are left out: their cost is link time, which the fit
does not touch.  Run from the repository root: `.venv/bin/python test/unit/backends/data/
make_kernel_details.py`."""

from __future__ import annotations

import csv
from pathlib import Path

from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from npuir.analysis.program import NodeKind
from npuir.backends.npu.profile import TASK_TYPES, kind_of, shapes_of
from npuir.driver.run import RunConfig, run_program

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parents[3] / "examples" / "tp_decoder_prefill.mlir"
HEADER = (
    "Step Id,Device_id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,"
    "Start Time(us),Duration(us),Wait Time(us),Block Num,Mix Block Num,HF32 Eligible,"
    "Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats"
).split(",")
TYPES = {"matmul": "MatMul", "rms_norm": "RmsNorm"}
EPOCH_NS = 1_732_800_000_000_000_000  # the profiler's timestamps are since the epoch


def op_type(kind: str) -> str:
    return TYPES.get(kind) or "".join(part.capitalize() for part in kind.split("_"))


def us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def tensors(values: list[SSAValue], text: str) -> str:
    return ";".join(text for v in values if isinstance(v.type, TensorType))


def main() -> None:
    config = RunConfig(
        path=str(EXAMPLE), hw=str(HERE / "truth_910b2.toml"), mirror_peers=True, timing_only=True
    )
    outcome = run_program(config)
    assert outcome.result is not None
    program = outcome.programs[0]
    with open(HERE / "kernel_details.csv", "w", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(HEADER)
        last_end: dict[int, int] = {}
        task = 0
        for rec in sorted(outcome.result.ops, key=lambda o: o.start):
            if program.kind[rec.node] is not NodeKind.COMPUTE or rec.engine == "comm":
                continue
            if rec.end == rec.start:
                continue  # a view (reshape): no task on the device
            op = program.ops[rec.node]
            task += 1
            wait = max(rec.start - last_end.get(rec.stream, 0), 0)
            last_end[rec.stream] = rec.end
            ins, outs = list(op.operands), list(op.results)
            writer.writerow(
                [1, 0, 4294967295, task, 2 + rec.stream, outs[0].name_hint, op_type(kind_of(op)),
                 "static", TASK_TYPES[rec.engine], us(EPOCH_NS + rec.start),
                 us(rec.end - rec.start), us(wait), rec.cores, "N/A", "NO", shapes_of(ins),
                 tensors(ins, "DT_FLOAT16"), tensors(ins, "ND"), shapes_of(outs),
                 tensors(outs, "DT_FLOAT16"), tensors(outs, "ND")]
            )  # fmt: skip
    print(f"truth makespan {outcome.result.makespan_ns} ns, {task} rows")


if __name__ == "__main__":
    main()
