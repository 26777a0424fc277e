"""`CompilerConfig`: TorchAir's compile options, at TorchAir's attribute paths.

Only the options npuir gives a meaning are here; each is checked when it is
set, as TorchAir's option values are:

- `config.ge_config.aicore_num = "A|V"` (GE's `ge.aicoreNum`): the module's
  global core limit, `coreset.global = #coreset.cores<cube A, vector V>`;
  either side may be empty (unlimited).
- `config.ge_config.enable_single_stream` (GE's `ge.enableSingleStream`): the
  lowering pipeline (`Graph.pipeline`) partitions with
  `stream-partition{mode=single}`, which puts everything on one stream and
  refuses user stream scopes.  It is a pipeline choice rather than an IR
  attribute because npuir's passes take their mode from the pipeline.
- `config.inference_config.dynamic_gears_merge_policy` ("zip" or "product"):
  the function's `gear.policy` when any input has gears.
"""

from __future__ import annotations

from npuir.dialects.gear import Policy
from npuir.transforms.pipelines import PIPELINES

from ._errors import fail

POLICIES: tuple[str, ...] = tuple(Policy)


class _GEConfig:
    """`config.ge_config`: the GE options npuir understands."""

    def __init__(self) -> None:
        self.enable_single_stream = False
        self.aicore_num: str | None = None

    def __setattr__(self, name: str, value: object) -> None:
        if name == "enable_single_stream" and not isinstance(value, bool):
            raise fail(f"ge_config.enable_single_stream must be True or False, got {value!r}")
        if name == "aicore_num" and value is not None:
            _parse_aicore_num(value)
        if name not in ("enable_single_stream", "aicore_num"):
            raise fail(f"ge_config has no option '{name}' that npuir understands")
        super().__setattr__(name, value)

    def global_cores(self) -> tuple[int | None, int | None] | None:
        """(cube, vector) of `aicore_num`, or None when it is not set."""
        return None if self.aicore_num is None else _parse_aicore_num(self.aicore_num)


def _parse_aicore_num(value: object) -> tuple[int | None, int | None]:
    """GE's "A|V" spelling: aicore (cube) count, then vector-core count."""
    parts = value.split("|") if isinstance(value, str) else []
    counts: list[int | None] = []
    for part in parts:
        part = part.strip()
        counts.append(int(part) if part.isdigit() and int(part) >= 1 else None)
        if part and counts[-1] is None:
            break
    else:
        if len(counts) == 2 and counts != [None, None]:
            return counts[0], counts[1]
    raise fail(
        f'ge_config.aicore_num must be "A|V" (cube and vector core counts >= 1, '
        f"either may be empty), got {value!r}"
    )


class _InferenceConfig:
    """`config.inference_config`: the gear options."""

    def __init__(self) -> None:
        self.dynamic_gears_merge_policy = Policy.ZIP.value

    def __setattr__(self, name: str, value: object) -> None:
        if name != "dynamic_gears_merge_policy":
            raise fail(f"inference_config has no option '{name}' that npuir understands")
        if value not in POLICIES:
            raise fail(f'dynamic_gears_merge_policy must be "zip" or "product", got {value!r}')
        super().__setattr__(name, value)


class CompilerConfig:
    """TorchAir's `CompilerConfig`, with the options npuir gives a meaning.

    ```python
    config = torchair.CompilerConfig()
    config.ge_config.aicore_num = "20|40"
    config.inference_config.dynamic_gears_merge_policy = "product"
    g = torchair.Graph("forward", config=config)
    ```
    """

    def __init__(self) -> None:
        self.ge_config = _GEConfig()
        self.inference_config = _InferenceConfig()

    def pipeline(self) -> str:
        """The `npuir-opt -p` pipeline that lowers a graph built with this config."""
        passes = PIPELINES["npu-default"].split(",")
        if self.ge_config.enable_single_stream:
            passes = [
                "stream-partition{mode=single}" if p == "stream-partition" else p for p in passes
            ]
        return ",".join(passes)
