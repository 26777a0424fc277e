"""npuir-advise on transformers models as a user writes them: which files the edits name,
and which option it recommends.

`python bench/advise_user_files.py [--layers N] [--keep DIR]` builds transformers'
`LlamaForCausalLM` and `Qwen2MoeForCausalLM` at a tiny size (random weights, nothing
downloaded) from a user script that patches the models' MLP `forward` in its own file
with a `torchair.scope.npu_stream_switch` per layer (`f"mlp{i}"`: a new stream in every
layer, the trap `advise.stream-per-layer` warns of), exports and saves them as a user
would, and runs `npuir-advise` on each archive twice: with the default set of files a
user owns (everything outside installed packages) and with `--edit-files '*'` (every
file, as if the user could edit transformers).  It prints, per model, the rows, the
recommendation and its memory cost, how many edits name an installed file in each
run, and the warnings' kinds.  Needs torch and transformers.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

USER_SCRIPT = """\
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2MoeConfig, Qwen2MoeForCausalLM
from transformers.models.llama.modeling_llama import LlamaMLP
from transformers.models.qwen2_moe.modeling_qwen2_moe import Qwen2MoeMLP

import npuir.torchair as torchair


def mlp_forward(self, x):
    with torchair.scope.npu_stream_switch(f"mlp{self.layer}"):
        gate = self.act_fn(self.gate_proj(x))
    up = self.up_proj(x)
    return self.down_proj(gate * up)


LlamaMLP.forward = mlp_forward
Qwen2MoeMLP.forward = mlp_forward

TINY = dict(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=LAYERS,
            num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32)
MOE = dict(moe_intermediate_size=8, shared_expert_intermediate_size=16, num_experts=4,
           num_experts_per_tok=2)


def build(name):
    torch.manual_seed(0)
    if name == "llama":
        model = LlamaForCausalLM(LlamaConfig(**TINY))
    else:
        model = Qwen2MoeForCausalLM(Qwen2MoeConfig(**TINY, **MOE))
    for i, module in enumerate(m for m in model.modules() if isinstance(m, (LlamaMLP, Qwen2MoeMLP))):
        module.layer = i
    return model.eval()


def export(name):
    ids = torch.randint(0, 64, (1, 8))
    return torch.export.export(build(name), (ids,), {"use_cache": False})
"""


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--keep", type=Path, help="write the script and archives here")
    args = ap.parse_args()
    import torch  # before npuir.torchair, which registers TorchAir's ops with it

    from npuir.driver.advise import AdviseConfig, advise, owned_file

    folder = args.keep or Path(tempfile.mkdtemp(prefix="advise-user-files-"))
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "user_model.py"
    script.write_text(USER_SCRIPT.replace("LAYERS", str(args.layers)))
    user = _load(script)
    for name in ("llama", "qwen2-moe"):
        archive = folder / f"{name}.pt2"
        torch.export.save(user.export(name), str(archive))
        for label, globs in (("your files", None), ("every file", ["*"])):
            start = time.process_time()
            advice = advise(AdviseConfig(path=str(archive), edit_files=globs))
            cpu = time.process_time() - start
            installed = sum(1 for e in advice.edits if not owned_file(e.file))
            files = sorted({Path(e.file).name for e in advice.edits})
            print(f"== {name}, edits may name {label} ({cpu:.1f} s CPU)")
            if globs is None:
                for v in advice.variants:
                    span = "deadlock" if v.makespan_ns is None else f"{v.makespan_ns / 1000:.1f}"
                    print(f"  {v.name:<22} {span:>8} µs  peak {v.peak_bytes or 0:>9} bytes")
                print("  warnings:", sorted({w.kind for w in advice.warnings}))
            rec = advice.recommendation
            if rec is not None:
                print(f"  recommended: {rec.row} ({rec.option}), {rec.weighted_ns / 1000:.1f} µs")
                print(f"  {rec.memory()}")
            edited = advice.advised_ns.get(None)
            row = "-" if edited is None else f"{edited / 1000:.1f} µs"
            print(
                f"  edits row {row}: {len(advice.edits)} edit(s) in {files}; naming an "
                f"installed file: {installed}"
            )
    print(f"(script and archives in {folder})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
