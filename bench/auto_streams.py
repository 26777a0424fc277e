"""What `npuir.torchair.auto_streams` does to whole models, as TorchAir would run it.

`python bench/auto_streams.py` exports each model (`torch.export`, the ATen graph TorchAir's
custom passes get after AOT autograd), runs the pass on the whole graph and prints, per
model: the simulated makespan as written, `auto`'s, the rewritten graph's (imported and
simulated again, as npuir's backend compiles it), the streams it uses, the ATen nodes kept
whole (those `auto` splits across streams), and the pass's CPU time.  The models: the seed
(`examples/seed_multistream.py`), the 2-layer MoE decoder (`examples/moe_decoder.py`) and
the tiny transformers Llama and Qwen2-MoE of `test/unit/frontends/conftest.py`.
"""

from __future__ import annotations

import importlib.util
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
    tiny = _load(ROOT / "test" / "unit" / "frontends" / "conftest.py")

    def transformers_model(name: str) -> Any:
        torch.manual_seed(0)
        ids = torch.randint(0, tiny.TINY["vocab_size"], (1, 8))
        model = tiny._models()[name].eval()
        return torch.export.export(model, (ids,), {"use_cache": False})

    return {
        "seed_multistream": seed.export,
        "moe_decoder (2 layers)": moe.export,
        "tiny Llama": lambda: transformers_model("llama"),
        "tiny Qwen2-MoE": lambda: transformers_model("qwen2-moe"),
    }


def main() -> None:
    import npuir.torchair as tng

    def us(ns: int | None) -> str:
        return "-" if ns is None else f"{ns / 1000:.1f}"

    print("| model | as written µs | auto µs | rewritten µs | streams | kept whole | pass CPU s |")
    print("|---|---|---|---|---|---|---|")
    for name, export in _models().items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ep = export()
            auto = tng.auto_streams()
            start = time.process_time()
            auto(ep.graph_module, [], None)
            seconds = time.process_time() - start
        r = auto.reports[-1]
        print(
            f"| {name} | {us(r.written_ns)} | {us(r.auto_ns)} | {us(r.applied_ns)} | "
            f"{r.stream_count} | {len(r.split)} | {seconds:.1f} |"
        )


if __name__ == "__main__":
    main()
