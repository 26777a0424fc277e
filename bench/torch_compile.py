"""The torch.compile backend's compile overhead on a Llama-style decoder layer.

`python bench/run.py torch [--repeats N]` compiles `workloads.torch_decoder`'s
layer (decode step, KV cache, k/v on stream "1") N times each way, in one
process, under `torch.no_grad()`:

- `torch.compile(backend="eager")`: the first call's time is dynamo's capture
  (plus running the graph once eagerly);
- `torch.compile(backend=npuir.torchair.get_npu_backend())`: the backend's own
  time, from dynamo's graph to the lowered program (`ScheduleReport.compile_seconds`:
  the ATen re-trace, the import and the lowering; dynamo's capture excluded), and
  separately the schedule report's simulations (`report_seconds`).

It prints the medians and each as a ratio to the eager backend's first call.
Ratios only mean something within one run.
"""

from __future__ import annotations

import statistics
import time
from typing import Any


def run_torch(repeats: int) -> dict[str, Any]:
    import torch
    from workloads import torch_decoder

    import npuir.torchair as tng

    torch.manual_seed(0)
    layer, xs = torch_decoder.DecoderLayer(), torch_decoder.inputs()
    eager, backend_s, report_s = [], [], []
    with torch.no_grad():
        for _ in range(repeats):
            torch._dynamo.reset()
            start = time.perf_counter()
            torch.compile(layer, backend="eager", fullgraph=True, dynamic=False)(*xs)
            eager.append(time.perf_counter() - start)
            torch._dynamo.reset()
            backend = tng.get_npu_backend()
            torch.compile(layer, backend=backend, fullgraph=True, dynamic=False)(*xs)
            (report,) = tng.reports(backend)
            backend_s.append(report.compile_seconds)
            report_s.append(report.report_seconds)
    base = statistics.median(eager)
    return {
        "repeats": repeats,
        "eager_first_call_s": base,
        "npuir_backend_s": statistics.median(backend_s),
        "npuir_report_s": statistics.median(report_s),
        "backend_ratio": statistics.median(backend_s) / base,
        "report_ratio": statistics.median(report_s) / base,
    }


def print_torch(result: dict[str, Any]) -> None:
    print(f"decoder layer, {result['repeats']} compile(s) each way (medians):")
    print(f"  torch.compile(backend='eager') first call  {result['eager_first_call_s']:.3f} s")
    print(
        f"  npuir backend, graph to lowered program    {result['npuir_backend_s']:.3f} s"
        f"  ({result['backend_ratio']:.2f}x)"
    )
    print(
        f"  npuir backend, schedule report             {result['npuir_report_s']:.3f} s"
        f"  ({result['report_ratio']:.2f}x)"
    )
