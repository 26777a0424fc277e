"""`CompilerConfig`: TorchAir's compile options, at TorchAir's attribute paths and defaults.

Each option is checked when it is set, as TorchAir's option values are; a bad
value, or an option TorchAir does not have, is a `TorchairError` at the
user's line naming it.  Options TorchAir has that npuir gives no meaning
(the whole `experimental_config` section, and a few GE tuning switches) are
accepted with one warning that they do not change the model.

- `config.mode`: `"max-autotune"` (default, GE graph mode: the `npu-default` lowering) or
  `"reduce-overhead"` (aclgraph capture and replay, continued as torch_npu's `npugraph_ex`
  backend: the `npu-capture` lowering, docs/capture-mode.md).  Both take stream scopes and
  `limit_core_num`.  In reduce-overhead the GE options (`ge_config.enable_single_stream`,
  `.aicore_num`, `.auto_multistream_parallel_mode`) do not take effect, and
  `set_dim_gears` and a `product` gear policy may not: the config warns once, naming them,
  in TorchAir's words (`capture_warning`; TorchAir's `unsupport_aclgraphconfig_list` in
  `Ascend/torchair/python/torchair/configs/compiler_config.py`).
- `config.debug.graph_dump.type` (`None`, `"txt"`, `"pbtxt"`, `"py"`: GE text that
  `npuir-import` reads, or an `npuir.torchair` builder script) and
  `.path` (default `"."`): each compiled graph is written as
  `dynamo_original_graph_{id}_rank_{rank}_pid_{pid}_ts_{ts}.{type}`, TorchAir's
  file name.
- `config.debug.schedule_report.path` (npuir's own; default None): a directory where
  each compiled graph's schedule is written as `npuir-run --trace` and `--report` write
  it: `schedule_graph_{id}.trace.json` and `schedule_graph_{id}.html`.
- `config.ge_config.aicore_num = "A|V"` (GE's `ge.aicoreNum`): the module's
  global core limit, `coreset.global = #coreset.cores<cube A, vector V>`;
  either side may be empty (unlimited).
- `config.ge_config.enable_single_stream` (GE's `ge.enableSingleStream`): the
  lowering partitions with `stream-partition{mode=single}`, which puts
  everything on one stream and refuses user stream scopes.
- `config.inference_config.dynamic_gears_merge_policy` ("zip" or "product"):
  the function's `gear.policy` when any input has gears.
- `config.post_grad_custom_pre_pass` / `config.post_grad_custom_post_pass` (TorchAir's
  custom FX passes, `fn(gm, example_inputs, config)`): the backend runs them on the ATen
  graph before importing it, pre then post (npuir has no built-in FX passes between them);
  `npuir.torchair.auto_streams()` is one.
- `config.ge_config.auto_multistream_parallel_mode` (GE's `ge.autoMultistreamParallelMode`:
  `"cv"`, `"LoadBalance"`, `"LoadBalance:N"`, `"MainStream:N"`, N in 1..64): GE's automatic
  multi-stream, as `stream-partition{mode=minidag}` (`cv`: `mode=engine`).  TorchAir's
  `_GEConfig` has no such field and passes no other GE option through; the name is the one
  Ascend's TensorFlow adapter gives the option (`tf_adapter/util/ge_plugin.cc`,
  `SetOptionNameMap`), as it does TorchAir's `aicore_num` and `oo_level`
  (docs/torchair.md).  `enable_single_stream` wins over it.

`ENABLE_DYNAMIC_SHAPE_MULTI_STREAM=1` in the environment (the CANN variable
seed 000 names) lets a graph with dynamic-shape inputs use several streams:
the pipeline's `stream-partition` gets `dynamic-multi-stream=true`.

The config is data: `pass_options()` says which pass options it sets, and the
driver makes the pipeline from them (`configured_pipeline("npu-default",
config.pass_options())`), so the importers need no pass.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import ClassVar

from npuir.diagnostics import Kind
from npuir.dialects.gear import Policy
from npuir.host import dynamic_multi_stream_env

from ..errors import fail

# A CompilerConfig option TorchAir does not have, or a bad value of one:
# `torchair.bad-option.<what>`; `value` is the value given, as Python writes it (repr).
UNKNOWN_OPTION = Kind(
    "torchair.bad-option.unknown", "CompilerConfig has no option '{path}' (options here: {known})"
)
"""An option TorchAir does not have; arguments: `path`, `known` (the section's options)."""
DUMP_TYPE = Kind(
    "torchair.bad-option.dump-type",
    'debug.graph_dump.type must be "txt", "pbtxt" or "py", got {value}',
)
"""A graph dump type TorchAir does not write; argument: `value`."""
DUMP_PATH = Kind(
    "torchair.bad-option.dump-path", "debug.graph_dump.path must be a directory name, got {value}"
)
"""A graph dump path that is not a non-empty string; argument: `value`."""
DUMP_SECTION = Kind(
    "torchair.bad-option.dump-section",
    "debug.graph_dump is a section; set debug.graph_dump.type / .path",
)
"""`debug.graph_dump` assigned a value instead of its options."""
REPORT_PATH = Kind(
    "torchair.bad-option.report-path",
    "debug.schedule_report.path must be a directory name or None, got {value}",
)
"""A schedule report path that is neither None nor a non-empty string; argument: `value`."""
SINGLE_STREAM = Kind(
    "torchair.bad-option.single-stream",
    "ge_config.enable_single_stream must be True or False, got {value}",
)
"""A non-bool `enable_single_stream`; argument: `value`."""
AICORE_NUM = Kind(
    "torchair.bad-option.aicore-num",
    'ge_config.aicore_num must be "A|V" (cube and vector core counts >= 1, either may be '
    "empty), got {value}",
)
"""An `aicore_num` that is not `"A|V"`; argument: `value`."""
MERGE_POLICY = Kind(
    "torchair.bad-option.merge-policy",
    'dynamic_gears_merge_policy must be "zip" or "product", got {value}',
)
"""A gear merge policy TorchAir does not have; argument: `value`."""
BAD_MODE = Kind(
    "torchair.bad-option.mode", 'mode must be "max-autotune" or "reduce-overhead", got {value}'
)
"""A mode TorchAir does not have; argument: `value`."""
CUSTOM_PASS = Kind(
    "torchair.bad-option.custom-pass",
    "{name} must be a callable fn(gm, example_inputs, config) or None, got {value}",
)
"""A custom FX pass that is not callable; arguments: `name`, `value`."""
AUTO_MULTISTREAM = Kind(
    "torchair.bad-option.auto-multistream",
    'ge_config.auto_multistream_parallel_mode must be None, "cv", "LoadBalance", '
    '"LoadBalance:N" or "MainStream:N" (N in 1..64), got {value}',
)
"""A value GE's `ge.autoMultistreamParallelMode` does not take; argument: `value`."""
SECTION = Kind(
    "torchair.bad-option.section", "{name} is a section of CompilerConfig; set its options instead"
)
"""A section of CompilerConfig assigned a value; argument: `name`."""

POLICIES: tuple[str, ...] = tuple(Policy)
CUSTOM_PASSES = ("post_grad_custom_pre_pass", "post_grad_custom_post_pass")
MAX_AUTO_STREAMS = 64
"""GE's option reference: N of `LoadBalance:N` / `MainStream:N` is in [1, 64]."""
DEFAULT_AUTO_STREAMS = 8
"""`LoadBalance` without N: 8 streams (the TensorFlow adapter's documentation of
`auto_multistream_parallel_mode`)."""
MODES = ("max-autotune", "reduce-overhead")
CAPTURE_MODE = "reduce-overhead"
"""The mode that captures the graph (aclgraph; torch_npu's npugraph_ex backend)."""
DUMP_TYPES = ("txt", "pbtxt", "py")

_WARNED: set[str] = set()


def _meaningless(path: str) -> None:
    """One warning per option that TorchAir has and npuir gives no meaning."""
    if path in _WARNED:
        return
    _WARNED.add(path)
    warnings.warn(
        f"CompilerConfig option '{path}' is accepted for TorchAir compatibility; it does not "
        "change the model npuir compiles",
        UserWarning,
        stacklevel=3,
    )


class _Section:
    """One attribute group of the config; setting an option checks it."""

    _PATH: ClassVar[str] = ""
    _OPTIONS: ClassVar[tuple[str, ...]] = ()
    _ACCEPTED: ClassVar[tuple[str, ...]] = ()
    """TorchAir options without a meaning in npuir (accepted with a warning)."""
    _ANY_ACCEPTED: ClassVar[bool] = False

    def __setattr__(self, name: str, value: object) -> None:
        path = f"{self._PATH}.{name}" if self._PATH else name
        if name.startswith("_"):
            super().__setattr__(name, value)
            return
        if name in self._OPTIONS:
            self._check(name, value)
        elif name in self._ACCEPTED or self._ANY_ACCEPTED:
            _meaningless(path)
        else:
            known = ", ".join(sorted(self._OPTIONS + self._ACCEPTED)) or "none"
            raise fail(UNKNOWN_OPTION, path=path, known=known)
        super().__setattr__(name, value)

    def _check(self, name: str, value: object) -> None:
        """Refuse a bad value of a known option (each section overrides it)."""


class _GraphDump(_Section):
    """`config.debug.graph_dump`: where and how each compiled graph is written."""

    _PATH = "debug.graph_dump"
    _OPTIONS = ("type", "path")

    def __init__(self) -> None:
        self.type: str | None = None
        self.path = "."

    def _check(self, name: str, value: object) -> None:
        if name == "type" and value is not None and value not in DUMP_TYPES:
            raise fail(DUMP_TYPE, value=repr(value))
        if name == "path" and (not isinstance(value, str) or not value):
            raise fail(DUMP_PATH, value=repr(value))


class _ScheduleReport(_Section):
    """`config.debug.schedule_report` (npuir's own): where each compiled graph's schedule
    trace and HTML page go (`ScheduleReport.trace` / `.html`); None: nowhere."""

    _PATH = "debug.schedule_report"
    _OPTIONS = ("path",)

    def __init__(self) -> None:
        self.path: str | None = None

    def _check(self, name: str, value: object) -> None:
        if value is not None and (not isinstance(value, str) or not value):
            raise fail(REPORT_PATH, value=repr(value))


class _Debug(_Section):
    """`config.debug`."""

    _PATH = "debug"
    _OPTIONS = ("graph_dump", "schedule_report")
    _ACCEPTED = ("data_dump", "fx_summary", "run_eagerly", "aclgraph")

    def __init__(self) -> None:
        self.graph_dump = _GraphDump()
        self.schedule_report = _ScheduleReport()

    def _check(self, name: str, value: object) -> None:
        if name == "graph_dump" and not isinstance(value, _GraphDump):
            raise fail(DUMP_SECTION)
        if name == "schedule_report" and not isinstance(value, _ScheduleReport):
            raise fail(SECTION, name="debug.schedule_report")


class _GEConfig(_Section):
    """`config.ge_config`: the GE options npuir understands."""

    _PATH = "ge_config"
    _OPTIONS = ("enable_single_stream", "aicore_num", "auto_multistream_parallel_mode")
    _ACCEPTED = (
        "oo_level",
        "oo_constant_folding",
        "oo_dead_code_elimination",
        "export_compile_stat",
        "optimization_switch",
        "disable_reuse_memory",
        "topo_sorting_mode",
    )

    def __init__(self) -> None:
        self.enable_single_stream = False
        self.aicore_num: str | None = None
        self.auto_multistream_parallel_mode: str | None = None

    def _check(self, name: str, value: object) -> None:
        if name == "enable_single_stream" and not isinstance(value, bool):
            raise fail(SINGLE_STREAM, value=repr(value))
        if name == "aicore_num" and value is not None:
            _parse_aicore_num(value)
        if name == "auto_multistream_parallel_mode" and value is not None:
            _parse_auto_multistream(value)

    def auto_multistream(self) -> dict[str, str]:
        """The `stream-partition` options GE's automatic multi-stream stands for ({} when
        it is off)."""
        mode = self.auto_multistream_parallel_mode
        if mode is None:
            return {}
        algorithm, streams = _parse_auto_multistream(mode)
        if algorithm == "cv":
            return {"mode": "engine"}
        return {"mode": "minidag", "variant": algorithm, "max-streams": str(streams)}

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
    raise fail(AICORE_NUM, value=repr(value))


def _parse_auto_multistream(value: object) -> tuple[str, int]:
    """GE's `ge.autoMultistreamParallelMode` spelling: ("cv", 0), or ("loadbalance" /
    "mainstream", N)."""
    if value == "cv":
        return "cv", 0
    if value == "LoadBalance":
        return "loadbalance", DEFAULT_AUTO_STREAMS
    name, _, count = value.partition(":") if isinstance(value, str) else ("", "", "")
    if name in ("LoadBalance", "MainStream") and count.isdigit():
        if 1 <= int(count) <= MAX_AUTO_STREAMS:
            return name.lower(), int(count)
    raise fail(AUTO_MULTISTREAM, value=repr(value))


class _InferenceConfig(_Section):
    """`config.inference_config`: the gear options."""

    _PATH = "inference_config"
    _OPTIONS = ("dynamic_gears_merge_policy",)

    def __init__(self) -> None:
        self.dynamic_gears_merge_policy = Policy.ZIP.value

    def _check(self, name: str, value: object) -> None:
        if value not in POLICIES:
            raise fail(MERGE_POLICY, value=repr(value))


class _ExperimentalConfig(_Section):
    """`config.experimental_config`: TorchAir's experimental switches, none of which
    changes the model npuir compiles (each is accepted with one warning)."""

    _PATH = "experimental_config"
    _ANY_ACCEPTED = True


class CompilerConfig(_Section):
    """TorchAir's `CompilerConfig`, with the options npuir gives a meaning.

    ```python
    config = torchair.CompilerConfig()
    config.ge_config.aicore_num = "20|40"
    config.inference_config.dynamic_gears_merge_policy = "product"
    config.debug.graph_dump.type = "pbtxt"
    g = torchair.Graph("forward", config=config)        # the builder, or
    backend = torchair.get_npu_backend(compiler_config=config)   # torch.compile
    ```
    """

    _OPTIONS = (
        "mode",
        "debug",
        "ge_config",
        "inference_config",
        "experimental_config",
        *CUSTOM_PASSES,
    )
    _ACCEPTED = ("aoe_config", "export", "dump_config", "fusion_config", "ascend_config")

    def __init__(self) -> None:
        self.mode = "max-autotune"
        self.debug = _Debug()
        self.ge_config = _GEConfig()
        self.inference_config = _InferenceConfig()
        self.experimental_config = _ExperimentalConfig()
        self.post_grad_custom_pre_pass: Callable[..., object] | None = None
        self.post_grad_custom_post_pass: Callable[..., object] | None = None

    def _check(self, name: str, value: object) -> None:
        if name == "mode" and value not in MODES:
            raise fail(BAD_MODE, value=repr(value))
        if name in CUSTOM_PASSES and value is not None and not callable(value):
            raise fail(CUSTOM_PASS, name=name, value=repr(value))
        sections = {
            "debug": _Debug,
            "ge_config": _GEConfig,
            "inference_config": _InferenceConfig,
            "experimental_config": _ExperimentalConfig,
        }
        if name in sections and not isinstance(value, sections[name]):
            raise fail(SECTION, name=name)

    def dynamic_multi_stream(self) -> bool:
        """Whether graphs with dynamic-shape inputs may use several streams
        (`ENABLE_DYNAMIC_SHAPE_MULTI_STREAM=1`, read when the pipeline is made)."""
        return dynamic_multi_stream_env()

    def capture(self) -> bool:
        """Whether the config asks for capture mode (`reduce-overhead`)."""
        return bool(self.mode == CAPTURE_MODE)

    def pipeline_name(self) -> str:
        """The named lowering the mode selects: `npu-capture` or `npu-default`."""
        return "npu-capture" if self.capture() else "npu-default"

    def capture_warning(self, gears: bool = False) -> str | None:
        """TorchAir's warning for options that may not take effect in reduce-overhead mode
        (`_check_config_support`), or None; `gears`: the graph has `set_dim_gears` gears."""
        if not self.capture():
            return None
        named: list[str] = []
        for path, value in (
            ("ge_config.enable_single_stream", self.ge_config.enable_single_stream or None),
            ("ge_config.aicore_num", self.ge_config.aicore_num),
            (
                "ge_config.auto_multistream_parallel_mode",
                self.ge_config.auto_multistream_parallel_mode,
            ),
        ):
            if value is not None:
                named.append(f"config.{path}:{value}")
        if self.inference_config.dynamic_gears_merge_policy == Policy.PRODUCT.value:
            named.append("config.inference_config.dynamic_gears_merge_policy:product")
        if gears:
            named.append("set_dim_gears")
        if not named:
            return None
        return (
            "The following torchair config or properties may not take effect or report error "
            f"in reduce-overhead mode: {', '.join(named)}"
        )

    def pass_options(self) -> dict[str, dict[str, str]]:
        """The pass options this config sets, by pass name (data: the driver turns them
        into a pipeline with `npuir.passmanager.pipeline.configured_pipeline`, so the
        config needs no pass).  GE's options set none in capture mode, where GE does not
        compile the graph."""
        options: dict[str, str] = {}
        if self.capture():
            pass
        elif self.ge_config.enable_single_stream:
            options["mode"] = "single"
        else:
            options.update(self.ge_config.auto_multistream())
        if self.dynamic_multi_stream():
            options["dynamic-multi-stream"] = "true"
        return {"stream-partition": options} if options else {}
