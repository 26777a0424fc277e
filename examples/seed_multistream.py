"""The multi-stream seed's model (TorchAir's npu_stream_switch / npu_wait_tensor example),
as a torch module: the Python twin of `examples/seed_multistream.mlir`.

    python examples/seed_multistream.py seed.pt2     # torch.export it (needs torch)
    npuir-advise seed.pt2                            # the advice, as edits to this file

Without TorchAir (`import torchair`), `npuir.torchair` gives the same scope functions.
"""

from __future__ import annotations

import sys
from typing import Any

import torch

try:
    import torchair  # type: ignore[import-not-found]
    from torchair import scope as _  # noqa: F401  (TorchAir itself, not a folder here)
except ImportError:
    import npuir.torchair as torchair  # type: ignore[no-redef]


class Seed(torch.nn.Module):
    """add and mm1 on the default stream, mm on "1" after add, add2 on "2" after mm."""

    def forward(self, in1: Any, in2: Any, in3: Any, in4: Any) -> Any:
        add_result = torch.add(in1, in2)
        with torchair.scope.npu_stream_switch("1"):
            torchair.scope.npu_wait_tensor(in4, add_result)
            mm_result = torch.mm(in3, in4)
        mm1 = torch.mm(in3, in4)
        with torchair.scope.npu_stream_switch("2"):
            torchair.scope.npu_wait_tensor(in4, mm_result)
            add2 = torch.add(in3, in4)
        return add_result, mm_result, mm1, add2


def export() -> torch.export.ExportedProgram:
    """The seed on four 1000x1000 f16 inputs."""
    inputs = tuple(torch.ones(1000, 1000, dtype=torch.float16) for _ in range(4))
    return torch.export.export(Seed(), inputs)


if __name__ == "__main__":
    torch.export.save(export(), sys.argv[1] if len(sys.argv) > 1 else "seed.pt2")
