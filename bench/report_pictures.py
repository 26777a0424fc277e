"""What `--trace` and `--report` cost on large programs: CPU time and file size.

`python bench/report_pictures.py [N ...]` generates bench/generate.py's `transformer`
shape with N ops (default 1000 and 10000), runs it as `npuir-run --timing-only
--mirror-peers` would (once, untimed), then times writing the trace (`trace_json`) and
the HTML page (`run_report_html`) from that run, in CPU seconds (`time.process_time`:
the machines are shared), and prints their sizes and the page's count of SVG elements.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def measure(n: int) -> dict[str, float | int]:
    sys.path.insert(0, str(HERE))
    from generate import transformer_layers

    from npuir.backends.npu.html_report import run_report_html
    from npuir.backends.npu.trace import trace_json
    from npuir.driver.run import RunConfig, run_program

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "program.mlir"
        path.write_text(transformer_layers(n))
        outcome = run_program(RunConfig(path=str(path), timing_only=True, mirror_peers=True))
    assert outcome.result is not None
    result, programs = outcome.result, outcome.programs
    start = time.process_time()
    trace = trace_json(result, programs, hw=outcome.hw)
    trace_s = time.process_time() - start
    start = time.process_time()
    page = run_report_html(outcome.report, result, programs, outcome.hw, title=f"{n} ops")
    page_s = time.process_time() - start
    return {
        "ops": len(result.ops),
        "trace_cpu_s": round(trace_s, 2),
        "trace_mb": round(len(trace) / 1e6, 2),
        "report_cpu_s": round(page_s, 2),
        "report_mb": round(len(page.encode()) / 1e6, 2),
        "svg_rects": page.count("<rect"),
    }


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [1000, 10000]
    for n in sizes:
        print(f"transformer {n}: {measure(n)}")


if __name__ == "__main__":
    main()
