"""What `npuir.torchair.auto_streams` does to whole models, as TorchAir would run it.

`python bench/auto_streams.py` exports each model (`torch.export`, the ATen graph TorchAir's
custom passes get after AOT autograd), runs the pass on the whole graph and prints, per
model: the simulated makespan as written, `auto`'s, the rewritten graph's (imported and
simulated again, as npuir's backend compiles it) and its difference from `auto`'s, the
streams it uses, the nodes it made finer (`finer`) and those it kept whole (`split`), and
the pass's CPU time.  The models: the seed (`examples/seed_multistream.py`), the 2-layer MoE
decoder (`examples/moe_decoder.py`), and the zoo's (bench/zoo.py, with the user's scope of
`zoo.scoped`) in prefill and decode: its core models, or every one with `NPUIR_ZOO=all`.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def _models() -> dict[str, Callable[[], Any]]:
    import torch

    seed = _load(ROOT / "examples" / "seed_multistream.py")
    moe = _load(ROOT / "examples" / "moe_decoder.py")
    sys.path.insert(0, str(ROOT / "bench"))
    import zoo

    def zoo_case(name: str, phase: str) -> Any:
        model = zoo.scoped(name, zoo.build(name))
        module = zoo.wrapped(name, model)
        with torch.no_grad():
            return torch.export.export(module, zoo.inputs(name, phase, model))

    names = zoo.ZOO if os.environ.get("NPUIR_ZOO") == "all" else zoo.CORE
    out: dict[str, Callable[[], Any]] = {
        "seed_multistream": seed.export,
        "moe_decoder (2 layers)": moe.export,
    }
    for name, phase in zoo.CASES:
        if name in names:
            out[f"{name} {phase}"] = functools.partial(zoo_case, name, phase)
    return out


def main() -> None:
    import npuir.torchair as tng

    def us(ns: int | None) -> str:
        return "-" if ns is None else f"{ns / 1000:.1f}"

    print(
        "| model | as written µs | auto µs | rewritten µs | against auto | streams | finer "
        "| kept whole | pass CPU s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, export in _models().items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ep = export()
            auto = tng.auto_streams()
            start = time.process_time()
            auto(ep.graph_module, [], None)
            seconds = time.process_time() - start
        r = auto.reports[-1]
        against = (
            "-"
            if r.applied_ns is None or r.auto_ns is None
            else f"{(r.applied_ns - r.auto_ns) / r.auto_ns:+.1%}"
        )
        print(
            f"| {name} | {us(r.written_ns)} | {us(r.auto_ns)} | {us(r.applied_ns)} | {against} | "
            f"{r.stream_count} | {len(r.finer)} | {', '.join(r.split) or '-'} | {seconds:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
