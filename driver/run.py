"""Run a program end to end: lower it, simulate it in time, run it numerically, check it.

This is the library behind `npuir-run` (the tool only parses arguments):

    outcome = run_program(RunConfig(path="examples/seed_multistream.mlir"))
    outcome.status        # 0 ok, 3 deadlock, 4 check failed (bad input raises)
    outcome.report        # the JSON-able report (see `npuir.backends.npu.report`)
    outcome.outputs       # each rank's outputs (and `outcome.inputs` what they came from)
    with open("out.npz", "wb") as f:
        save_arrays(f, output_arrays(outcome))         # what `--outputs` writes

Steps: parse; apply the pipeline (`npu-default` when the input is not
lowered yet; `--hw` overrides the module's `npu.target` for the passes too);
refuse a program that fails `sync-verify`; resolve each rank's entry (a gear
dispatcher enters the version whose gear the input shapes match); simulate
(dynamic dims take the shapes given, data-dependent ones their upper bound);
unless timing-only, run the numerics on random or given inputs and, with
`check`, compare every output with the program before the pipeline.  The
report also carries the makespan of the same program on a single stream
(scopes ignored), the baseline a multi-stream schedule is measured against; for an
input that is already lowered, the baseline is taken from the same program with its
streams and events removed (`unlowered`), so it matches the baseline of its source.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue

from npuir.analysis.manager import LoweredFunction, analyses
from npuir.analysis.program import Program, build_program, is_lowered, module_streams
from npuir.backends.npu.calibrate import Fit, FitError, fit_hardware
from npuir.backends.npu.estimates import estimated_ops
from npuir.backends.npu.explain import compare, explain
from npuir.backends.npu.groups import (
    MAX_MIRRORED,
    PartialGroup,
    collectives,
    mismatched_pairs,
    partial_groups,
)
from npuir.backends.npu.hardware import Hardware, HardwareError, load_hardware
from npuir.backends.npu.kernels import numpy_dtype, positive_domain_ops, random_input
from npuir.backends.npu.memory import imas_line, memory_report
from npuir.backends.npu.numerics import NumericsError, resolve_entry, run_ranks
from npuir.backends.npu.pools import Layout, LayoutError, Pool, host_bytes_available
from npuir.backends.npu.profile import Profile, read_profile
from npuir.backends.npu.report import build_report, memory_warning
from npuir.backends.npu.simulator import SimResult, simulate
from npuir.context import NpuirContext, make_context
from npuir.diagnostics import Diagnostic, DiagnosticError, Kind, UsageError, error
from npuir.dialects import gear, npu, stream
from npuir.dialects.shapes import RetypeError, specialise
from npuir.driver.identical import has_symbol_refs, share_identical, text_copies
from npuir.driver.npz import read_arrays
from npuir.frontends.load import (
    Format,
    Source,
    load_source,
    read,
    source_of_text,
    state_arrays,
)
from npuir.frontends.pt2 import STATE_ATTR
from npuir.host import available_bytes, gib
from npuir.parsing import parse_module
from npuir.passmanager.pipeline import build_pipeline, run_passes
from npuir.progress import progress
from npuir.schedule.device import UNKNOWN_DEVICE, device_spec
from npuir.transforms.pipelines import PIPELINES
from npuir.verifier import verify

INPUT_SHAPE = Kind(
    "input.shape-mismatch",
    "{where} has shape {shape}, which does not fit argument {index} of @{function}, {type}",
)
"""An input array whose shape the argument does not take; arguments: `where` (the array),
`shape`, `index`, `function`, `type`."""
INPUT_DTYPE = Kind(
    "input.dtype-mismatch",
    "{where} has dtype {dtype}, but argument {index} of @{function} is {type}: save it as {want}",
)
"""An input array whose dtype the argument does not take; arguments: `where`, `dtype`,
`index`, `function`, `type`, `want`."""
INPUT_MISSING = Kind(
    "input.missing-array", "'{path}' has no array 'arg{index}'{alternative} for rank {rank}"
)
"""An inputs file without an array the program needs; arguments: `path`, `index`,
`alternative` (`" or 'name'"` when the argument has a name, else empty), `rank`."""
STATE_MISSING = Kind(
    "input.missing-state",
    "argument {index} of @{function} is the program's state '{state}', which '{path}' does "
    "not hold",
)
"""A `.pt2` argument marked as the program's state (`torch.state`) that the archive lacks;
arguments: `index`, `function`, `state`, `path`."""
EMPTY_AXIS = Kind(
    "input.empty-axis",
    "argument {index} of @{function} indexes an empty axis; give inputs with --inputs",
)
"""An argument that indexes an empty axis; arguments: `index`, `function`."""
HW_INVALID = Kind("hw.invalid", "--hw: {reason}")
"""A hardware description that cannot be used; argument: `reason` (the description
reader's message, `npuir.backends.npu.hardware.HardwareError`: text only)."""

REFERENCE_FAILS = Kind("check.reference-fails", "the unscheduled program fails: {reason}")
"""The unscheduled program fails to run; argument: `reason` (the interpreter's message)."""
NUMERICS_ERROR = Kind("run.numerics", "{reason}")
"""The numeric run refuses the program; `reason` is the interpreter's message
(`npuir.backends.npu.numerics.NumericsError`: text only, made where the run stopped)."""
NO_MEMORY_PLAN = Kind("run.no-memory-plan", "--check-memory: {reason}")
"""`--check-memory` on a function that has no usable memory plan; argument: `reason` (the
layout reader's message)."""
HOST_MEMORY = Kind(
    "run.host-memory",
    "--check-memory: the planned pools take {total} bytes over {ranks} rank(s), more than the "
    "{available} bytes this host has free; run without --check-memory",
)
"""`--check-memory`: the planned pools do not fit the host's free memory; arguments:
`total`, `ranks`, `available`."""
NO_GEAR = Kind("gear.no-match", "{reason}")
"""No gear matches the input shapes; `reason` is the gear dispatcher's message (text
only)."""
MISSING_RANKS = Kind(
    "collective.missing-ranks",
    "{group}: run all {needed} ranks (--ranks {needed}, or one --entries function per rank), "
    "or pass --mirror-peers to take the missing ranks as copies of those present",
)
"""A collective's group reaches past the ranks run; arguments: `group` (described),
`needed`."""
TOO_MANY_MIRRORED = Kind(
    "collective.missing-ranks.too-many",
    "{group}: --mirror-peers takes at most {limit} missing ranks as copies, and this group "
    "misses {missing}",
)
"""`--mirror-peers` asked to copy more ranks than it takes; arguments: `group`, `limit`,
`missing`."""
SHAPES_ILL_TYPED = Kind("input.shape-ill-typed", "the shapes given do not type-check: {reason}")
"""The shapes given do not type-check; argument: `reason` (the shape rule's message)."""
EXTERNAL_ENTRY = Kind(
    "run.external-function", "@{function} is an external declaration: it has no body to run"
)
"""The entry is an external declaration; argument: `function`."""
NO_FUNCTION = Kind("run.no-function", "the module has no function to run")
"""The module has no function to run."""

COLLECTIVE_MISMATCH = Kind("collective.mismatch", "{reason}")
"""Collectives that pair up across ranks but differ (op, group size, mode, shape, dtype);
`reason` is the pairing's own description of the difference
(`npuir.backends.npu.groups`)."""
FIT_FAILED = Kind("profile.unreadable.fit-hw", "--fit-hw {path}: {reason}")
"""`--fit-hw` cannot fit the device to the profile; arguments: `path`, `reason` (the fit's
message)."""
BEYOND_HOST = Kind(
    "run.beyond-host-memory",
    "computing this program's values{checked} needs about {need} of host memory, more than "
    "the {available} available{largest}; --timing-only simulates the schedule without "
    "computing them",
)
"""Computing the values would need more memory than the host has available; arguments:
`need`, `available` (readable sizes), `checked` (" with --check ..." or empty), `largest`
(the largest tensor, or empty)."""

EXIT_OK, EXIT_INPUT, EXIT_USAGE, EXIT_DEADLOCK, EXIT_CHECK = 0, 1, 2, 3, 4

MAX_RANKS = 4096
"""The most ranks a run takes (`--ranks`, `--entries`): npuir's bound, so that a typo
cannot ask for a billion simulated ranks; real jobs of 4096 cards fit."""

# The baseline keeps the generic version for shapes no gear matches: the run itself only
# gets that far with such a shape when its own pipeline kept one (`fallback=dynamic`).
SINGLE_STREAM_PIPELINE = (
    "gear-multiversion{fallback=dynamic},stream-partition{mode=single ignore-tags=true},"
    "coreset-lower,insert-events,sync-verify"
)

Array = np.ndarray[Any, Any]


@dataclass
class RunConfig:
    """What `npuir-run` was asked to do."""

    path: str
    source: str | Source | None = None
    """The program when the caller has read it already (`npuir.frontends.load.read`, or
    MLIR text; `path` then only names it, e.g. `<stdin>`); otherwise it is read from
    `path` by the one loader, whatever its format."""
    pipeline: str | None = None
    entry: str | None = None
    entries: list[str] | None = None
    ranks: int | None = None
    """SPMD ranks running `entry` (default 1); with `entries`, if given, it must match."""
    mirror_peers: bool = False
    """Let a collective whose group reaches past the ranks run take the missing ranks as
    copies of those present (`npuir.backends.npu.groups`); the report lists them."""
    hw: str | None = None
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict[str, tuple[int, ...]])
    inputs: str | None = None
    seed: int = 0
    check: bool = False
    check_memory: bool = False
    """Run the numerics on the memory plan's layout (`npuir.backends.npu.pools`)."""
    mem_budget: str | None = None
    """Lower with `auto` under this memory budget (`budget_pipeline`) instead of
    `npu-default`; bytes (`64MiB`) or `hbm`."""
    favor: str | None = None
    """With `mem_budget`: what `auto` keeps among the schedules that fit,
    `max-concurrency` (the fastest, the default) or `min-peak-memory` (the smallest plan)."""
    timing_only: bool = False
    profile: str | None = None
    """An op-summary CSV whose durations and block dims replace the cost model's for the
    ops it names (`npuir.backends.npu.profile`)."""


@dataclass
class RunOutcome:
    """What a run produced: the exit status, the report, and what it was computed from."""

    status: int
    report: dict[str, Any]
    result: SimResult | None = None
    programs: list[Program] = field(default_factory=list[Program])
    warnings: list[Diagnostic] = field(default_factory=list[Diagnostic])
    """What lowering warned about, then the run's own warnings (peak memory over HBM)."""
    inputs: list[list[Array]] = field(default_factory=list[list[Array]])
    """Each rank's inputs (random or from `--inputs`); empty under timing-only."""
    outputs: list[list[Array]] = field(default_factory=list[list[Array]])
    """Each rank's outputs of the scheduled program; empty under timing-only."""
    state: list[set[int]] = field(default_factory=list[set[int]])
    """Per rank, the arguments that are a `.pt2`'s weights (their values are the
    archive's: `inputs` holds them, `input_arrays` leaves them out)."""
    hw: Hardware | None = None
    """The device simulated (None when the run did not get that far)."""


def _hardware(config: RunConfig, module: ModuleOp) -> Hardware:
    spec = device_spec(module, config.hw)
    try:
        return load_hardware(spec)
    except HardwareError as exc:
        if config.hw is None:
            raise error(module, UNKNOWN_DEVICE, reason=str(exc)) from None
        # A preset that does not exist or a file that cannot be read is a bad flag value; a
        # file that can be read but is wrong is bad input (its message names file and line).
        if not Path(config.hw).is_file():
            raise UsageError(f"--hw: {exc}") from None
        raise DiagnosticError(Diagnostic.of("error", HW_INVALID, reason=str(exc))) from None


def _functions(module: ModuleOp) -> dict[str, FuncOp]:
    return {f.sym_name.data: f for f in module.ops if isinstance(f, FuncOp)}


def _default_entry(module: ModuleOp) -> str:
    funcs = _functions(module)
    called: set[str] = set()
    for op in module.walk():
        if isinstance(op, gear.DispatchOp):
            called.update(c for _, c in op.case_list())
            if op.fallback_name:
                called.add(op.fallback_name)
    candidates = [name for name, f in funcs.items() if name not in called and not f.is_declaration]
    if not candidates:
        raise error(module, NO_FUNCTION)
    if len(candidates) > 1 and "main" in candidates:
        return "main"
    return candidates[0]


def entry_names(config: RunConfig, module: ModuleOp) -> list[str]:
    """One entry function name per rank."""
    funcs = _functions(module)
    if config.entries:
        names = config.entries
        if len(names) > MAX_RANKS:
            raise UsageError(f"--entries names {len(names)} ranks; npuir runs at most {MAX_RANKS}")
        if config.ranks is not None and config.ranks != len(names):
            raise UsageError(
                f"--entries names {len(names)} function(s), one per rank, but --ranks is "
                f"{config.ranks}"
            )
    else:
        if config.ranks is not None and not 1 <= config.ranks <= MAX_RANKS:
            raise UsageError(
                f"--ranks {config.ranks}: npuir runs 1 to {MAX_RANKS} ranks (each rank's "
                "state is simulated and, unless --timing-only, computed)"
            )
        names = [config.entry or _default_entry(module)] * (config.ranks or 1)
    for name in names:
        if name not in funcs:
            raise UsageError(
                f"no function @{name} in the module (it has: "
                + ", ".join(f"@{n}" for n in funcs)
                + ")"
            )
        if funcs[name].is_declaration:
            raise error(funcs[name], EXTERNAL_ENTRY, function=name)
    return names


def entries_and_shapes(
    config: RunConfig, module: ModuleOp
) -> tuple[list[str], list[list[tuple[int, ...]]]]:
    """Each rank's entry function name and argument shapes, as a run would take them."""
    names = entry_names(config, module)
    funcs = _functions(module)
    check_shape_names(config, [funcs[n] for n in names])
    return names, [_arg_shapes(funcs[n], config, None) for n in names]


def _argument_keys(func: FuncOp) -> list[tuple[str, ...]]:
    """The names `--shape` may give each argument of `func`: its index, `x` and `%x`."""
    keys: list[tuple[str, ...]] = []
    for index, arg in enumerate(func.body.block.args):
        hint = arg.name_hint
        keys.append((str(index), hint, f"%{hint}") if hint else (str(index),))
    return keys


def check_shape_names(config: RunConfig, funcs: Sequence[FuncOp]) -> None:
    """Refuse a `--shape` that names no argument of any function being run."""
    for key, dims in config.shapes.items():
        if any(key in names for func in funcs for names in _argument_keys(func)):
            continue
        known = "; ".join(
            f"@{func.sym_name.data} has "
            + (
                "arguments " + ", ".join(_describe_argument(n) for n in _argument_keys(func))
                if func.body.block.args
                else "no arguments"
            )
            for func in dict.fromkeys(funcs)
        )
        raise UsageError(
            f"--shape {key}={'x'.join(map(str, dims))} names no argument of the function run "
            f"({known})"
        )


def _describe_argument(names: tuple[str, ...]) -> str:
    return f"{names[0]} ({names[2]})" if len(names) == 3 else names[0]


def _arg_shapes(
    func: FuncOp, config: RunConfig, given: Sequence[Array] | None
) -> list[tuple[int, ...]]:
    shapes: list[tuple[int, ...]] = []
    for index, (arg, ty) in enumerate(zip(func.body.block.args, func.function_type.inputs)):
        assert isinstance(ty, TensorType)
        shape = tuple(ty.get_shape())
        if given is not None:
            shapes.append(tuple(given[index].shape))
            continue
        key = next(
            (
                k
                for k in (str(index), arg.name_hint or "", f"%{arg.name_hint}")
                if k in config.shapes
            ),
            None,
        )
        if key is not None:
            fixed = config.shapes[key]
            if len(fixed) != len(shape) or any(
                d != npu.DYN and d != f for d, f in zip(shape, fixed)
            ):
                raise UsageError(
                    f"--shape {key}={'x'.join(map(str, fixed))} does not fit argument {index} "
                    f"of @{func.sym_name.data}, {ty}"
                )
            shape = fixed
        if npu.DYN in shape:
            raise UsageError(
                f"argument {index} (%{arg.name_hint or index}) of @{func.sym_name.data} has the "
                f"dynamic type {ty}; give its shape with --shape {index}=DxD..."
            )
        shapes.append(shape)
    return shapes


def _needs_positive(func: FuncOp) -> bool:
    return any(op.name in positive_domain_ops for op in func.body.walk())


def _through_waits(value: SSAValue) -> SSAValue:
    """The value a chain of `stream.wait_tensor` results stands for."""
    while isinstance(value, OpResult) and isinstance(value.op, stream.WaitTensorOp):
        value = value.op.tensor
    return value


def _index_bound(func: FuncOp, index: int, shapes: Sequence[tuple[int, ...]]) -> int | None:
    """For an argument used as gather indices, the size of the gathered dim.

    Uses are followed through `stream.wait_tensor` (which returns its tensor), and a
    gathered argument takes the shape given for it, so dynamic dims are bounded too.
    """
    values: list[SSAValue] = [func.body.block.args[index]]
    bound: int | None = None
    while values:
        value = values.pop()
        for use in value.uses:
            op = use.operation
            if isinstance(op, stream.WaitTensorOp) and use.index == 0:
                values.append(op.result)
            elif isinstance(op, npu.GatherOp) and use.index == 1:
                data = _through_waits(op.data)
                if isinstance(data, BlockArgument) and data.block is func.body.block:
                    data_shape = shapes[data.index]
                else:
                    assert isinstance(data.type, TensorType)
                    data_shape = tuple(data.type.get_shape())
                axis = op.axis.value.data if op.axis is not None else 0
                size = int(data_shape[axis % len(data_shape)])
                if size != npu.DYN:
                    bound = size if bound is None else min(bound, size)
    if bound == 0:
        raise DiagnosticError(
            Diagnostic.of("error", EMPTY_AXIS, index=index, function=func.sym_name.data)
        )
    return bound


def make_inputs(
    func: FuncOp,
    shapes: Sequence[tuple[int, ...]],
    seed: int,
    rank: int,
    state: Mapping[int, Array] | None = None,
) -> list[Array]:
    """Random inputs where every op is defined: positive floats where an op needs
    them, gather indices within the gathered dim; one stream of numbers per rank.
    The arguments of `state` (a `.pt2`'s weights, `state_inputs`) take its values."""
    rng = np.random.default_rng([seed, rank])
    positive = _needs_positive(func)
    out: list[Array] = []
    for index, (ty, shape) in enumerate(zip(func.function_type.inputs, shapes)):
        if state and index in state:
            out.append(state[index])
            continue
        assert isinstance(ty, TensorType)
        dtype = numpy_dtype(npu.dtype_name(ty.element_type))
        high = _index_bound(func, index, shapes)
        out.append(random_input(shape, dtype, rng, positive=positive, high=high))
    return out


def load_inputs(
    path: str, funcs: Sequence[FuncOp], state: Sequence[Mapping[int, Array]] = ()
) -> list[list[Array]]:
    """Inputs from an `.npz` (loaded without pickle): each argument by its index `argN` or
    by its name (the `%name` it is printed with; a torch program's input names, as
    `npuir.frontends.torch.example_inputs` keys them), or `rankR/argN` / `rankR/NAME`
    per rank.  Constants (`npu.constant`) are not arguments and are never asked for, nor
    are the arguments of `state` (per rank: a `.pt2`'s weights, `state_inputs`), which
    take its values."""
    # Only the arrays the run uses are read, each bounded by its argument's size
    # (`npuir.driver.npz`): an unused or oversized member is never decompressed.
    fixed = [state[r] if r < len(state) else {} for r in range(len(funcs))]
    wanted: dict[str, int | None] = {}
    for rank, func in enumerate(funcs):
        for index, ty in enumerate(func.function_type.inputs):
            if index in fixed[rank]:
                continue
            assert isinstance(ty, TensorType)
            most = None if npu.DYN in ty.get_shape() else npu.tensor_bytes(ty)
            hint = func.body.block.args[index].name_hint
            names = [f"rank{rank}/arg{index}", f"arg{index}"]
            if hint:
                names += [f"rank{rank}/{hint}", hint]
            for name in names:
                before = wanted.get(name, 0)
                wanted[name] = None if most is None or before is None else max(before, most)
    arrays = read_arrays(path, wanted, wanted.__getitem__)
    per_rank: list[list[Array]] = []
    for rank, func in enumerate(funcs):
        values: list[Array] = []
        for index, ty in enumerate(func.function_type.inputs):
            if index in fixed[rank]:
                values.append(fixed[rank][index])
                continue
            keys = [f"rank{rank}/arg{index}", f"arg{index}"]
            hint = func.body.block.args[index].name_hint
            if hint:
                keys[1:1] = [f"rank{rank}/{hint}"]
                keys.append(hint)
            key = next((k for k in keys if k in arrays), None)
            if key is None:
                named = f" or '{hint}'" if hint else ""
                raise DiagnosticError(
                    Diagnostic.of(
                        "error", INPUT_MISSING, path=path, index=index, alternative=named, rank=rank
                    )
                )
            assert isinstance(ty, TensorType)
            values.append(_given_input(path, key, arrays[key], func, index, ty))
        per_rank.append(values)
    return per_rank


def state_inputs(func: FuncOp, state: Mapping[str, Array], path: str) -> dict[int, Array]:
    """The arguments of `func` that are its program's state (`torch.state`: a `.pt2`'s
    parameters, buffers and lifted constants) and their values from `state` (the archive's,
    `npuir.frontends.load.state_arrays`), by argument index.  Empty when `state` is: a
    printed module's arguments are all inputs."""
    if not state or func.arg_attrs is None:
        return {}
    out: dict[int, Array] = {}
    for index, (attrs, ty) in enumerate(zip(func.arg_attrs.data, func.function_type.inputs)):
        name = attrs.data.get(STATE_ATTR)
        if not isinstance(name, StringAttr) or not isinstance(ty, TensorType):
            continue
        value = state.get(name.data)
        if value is None:
            raise error(
                func,
                STATE_MISSING,
                index=index,
                function=func.sym_name.data,
                state=name.data,
                path=path,
            )
        out[index] = _given_input(path, f"state {name.data}", np.asarray(value), func, index, ty)
    return out


def _given_input(
    path: str, key: str, array: Array, func: FuncOp, index: int, ty: TensorType[Any]
) -> Array:
    """`array` as argument `index` of `func`, refused unless it fits the argument's type."""
    where = f"'{path}' array '{key}'"
    dtype = numpy_dtype(npu.dtype_name(ty.element_type))
    # np.save stores bfloat16 (an ml_dtypes type) as 2-byte void; its bits are the value.
    if array.dtype.kind == "V" and array.dtype.itemsize == dtype.itemsize == 2:
        array = array.view(dtype)
    if array.dtype != dtype:
        raise DiagnosticError(
            Diagnostic.of(
                "error",
                INPUT_DTYPE,
                where=where,
                dtype=str(array.dtype),
                index=index,
                function=func.sym_name.data,
                type=str(ty),
                want=str(dtype),
            )
        )
    shape = tuple(ty.get_shape())
    if array.ndim != len(shape) or any(d != npu.DYN and d != n for d, n in zip(shape, array.shape)):
        raise DiagnosticError(
            Diagnostic.of(
                "error",
                INPUT_SHAPE,
                where=where,
                shape="x".join(map(str, array.shape)) or "scalar",
                index=index,
                function=func.sym_name.data,
                type=str(ty),
            )
        )
    return array


def timing_function(func: FuncOp, shapes: Sequence[tuple[int, ...]]) -> FuncOp:
    """`func` with every dynamic argument dim fixed to `shapes`, for costing.

    Dims only data-dependent ops make dynamic take their upper bound
    (`npu.nonzero`: every element), by re-inferring from that bound.
    """
    fixed = {
        (a, d): shapes[a][d]
        for a, ty in enumerate(func.function_type.inputs)
        if isinstance(ty, TensorType)
        for d, size in enumerate(ty.get_shape())
        if size == npu.DYN
    }
    has_nonzero = any(isinstance(op, npu.NonzeroOp) for op in func.body.walk())
    if not fixed and not has_nonzero:
        return func
    try:
        return specialise(func, func.sym_name.data, fixed, upper_bound_data_dependent=True)
    except RetypeError as exc:
        raise error(exc.op, SHAPES_ILL_TYPED, reason=str(exc)) from None


RUN_PIPELINE = PIPELINES["npu-default"].replace("coreset-check", "coreset-check{pair-rule=warning}")
"""What a run lowers an unlowered program with: `npu-default`, with the stream pair rule
(an error in `npu-default`) reported as a warning, so that a program breaking it still
runs and shows what it leads to -- the seed's two-card deadlock."""


def _lower(ctx: NpuirContext, module: ModuleOp, pipeline: str | None, hw_spec: str | None) -> None:
    if hw_spec is not None:
        module.attributes[npu.TARGET] = StringAttr(hw_spec)
    if pipeline is None:
        lowered = any(is_lowered(f) for f in module.ops if isinstance(f, FuncOp))
        pipeline = "sync-verify" if lowered else RUN_PIPELINE
    elif "sync-verify" not in pipeline:
        pipeline = f"{pipeline},sync-verify" if pipeline.strip() else "sync-verify"
    run_passes(ctx, module, build_pipeline(pipeline))


def _value_bytes(value: SSAValue) -> int:
    ty = value.type
    if not isinstance(ty, TensorType) or npu.DYN in ty.get_shape():
        return 0
    return npu.tensor_bytes(ty)


def numerics_bytes(
    programs: Sequence[Program], partial: Sequence[PartialGroup], check: bool
) -> tuple[int, SSAValue | None]:
    """Host memory the numeric run of `programs` (one per rank, shapes specialised) needs
    at most, and its largest tensor.  The interpreter keeps every value a rank computes,
    so each rank needs its arguments and all its results; `--check` runs the unscheduled
    program too; a mirrored collective stacks one input per member of its group."""
    total = 0
    largest: tuple[int, SSAValue | None] = (0, None)
    for prog in programs:
        values: list[SSAValue] = list(prog.func.body.block.args)
        values += [r for op in prog.func.body.walk() for r in op.results]
        for value in values:
            size = _value_bytes(value)
            total += size
            if size > largest[0]:
                largest = (size, value)
    if check:
        total *= 2
    for group in partial:
        total += len(group.missing) * sum(_value_bytes(v) for v in group.op.operands)
    return total, largest[1]


def _refuse_beyond_host(
    programs: Sequence[Program], partial: Sequence[PartialGroup], config: RunConfig
) -> None:
    """A located error when the numeric run would need more memory than the host has."""
    available = available_bytes()
    if available is None:
        return
    need, largest = numerics_bytes(programs, partial, config.check)
    if need <= available:
        return
    what = ""
    where: Operation | None = None
    if largest is not None:
        name = f"%{largest.name_hint}" if largest.name_hint else "a value"
        what = f"; the largest tensor, {name}: {largest.type}, takes {gib(_value_bytes(largest))}"
        where = largest.owner if isinstance(largest, OpResult) else largest.owner.parent_op()
    checked = " with --check (which also runs the unscheduled program)" if config.check else ""
    raise error(
        where or programs[0].func,
        BEYOND_HOST,
        checked=checked,
        need=gib(need),
        available=gib(available),
        largest=what,
    )


def _partial_groups(funcs: Sequence[FuncOp], mirror_peers: bool) -> list[PartialGroup]:
    """The groups `funcs` (one per rank) leave partial; an error unless `mirror_peers`.
    Collectives that pair up across ranks but differ are an error at the later rank's."""
    # One walk per distinct function, shared by the ranks that run it (SPMD: one walk).
    walked: dict[int, list[npu.CollectiveOp]] = {}
    for f in funcs:
        if id(f) not in walked:
            walked[id(f)] = collectives(f)
    per_rank = [walked[id(f)] for f in funcs]
    mismatched = mismatched_pairs(per_rank, len(funcs))
    if mismatched:
        raise error(mismatched[0].op, COLLECTIVE_MISMATCH, reason=mismatched[0].describe())
    partial = partial_groups(per_rank, len(funcs))
    for group in partial if mirror_peers else ():
        if len(group.missing) > MAX_MIRRORED:
            raise error(
                group.op,
                TOO_MANY_MIRRORED,
                group=group.describe(),
                limit=MAX_MIRRORED,
                missing=len(group.missing),
            )
    if partial and not mirror_peers:
        first = partial[0]
        needed = max(p.present[0] + p.group_size for p in partial)
        raise error(first.op, MISSING_RANKS, group=first.describe(), needed=needed)
    return partial


def _programs(
    ctx: NpuirContext,
    module: ModuleOp,
    names: Sequence[str],
    shapes: Sequence[Sequence[tuple[int, ...]]],
) -> tuple[list[Program], list[FuncOp], list[str | None]]:
    """Each rank's program (shared between ranks running the same function on the same
    shapes), the function it runs (a gear version for a dispatcher) and which gear.

    A function with static shapes is the one the passes lowered: its program graph comes
    from `ctx`'s analysis cache, where `coreset-check` and `sync-verify` left it."""
    funcs = _functions(module)
    streams = module_streams(module)
    programs: list[Program] = []
    actual: list[FuncOp] = []
    gears: list[str | None] = []
    cache: dict[tuple[str, tuple[tuple[int, ...], ...]], Program] = {}
    for name, rank_shapes in zip(names, shapes):
        try:
            func, label = resolve_entry(module, funcs[name], rank_shapes)
        except NumericsError as exc:
            raise error(exc.op, NO_GEAR, reason=str(exc)) from None
        actual.append(func)
        gears.append(label)
        key = (func.sym_name.data, tuple(rank_shapes))
        prog = cache.get(key)
        if prog is None:
            timed = timing_function(func, rank_shapes)
            prog = cache[key] = (
                analyses(ctx).get(LoweredFunction, func, tuple(streams)).prog
                if timed is func
                else build_program(timed, streams)
            )
        programs.append(prog)
    return programs, actual, gears


def _simulate(
    ctx: NpuirContext,
    module: ModuleOp,
    names: Sequence[str],
    shapes: Sequence[Sequence[tuple[int, ...]]],
    hw: Hardware,
    mirror_peers: bool,
    profile: Profile | None,
    symmetric: bool = False,
) -> tuple[SimResult, list[Program], list[FuncOp], list[str | None], list[PartialGroup]]:
    """Lower `names`' programs out of `module` and simulate them.  With `symmetric`, a run
    whose ranks all run one program is simulated on one rank with its peers mirrored: every
    rank of a deterministic SPMD run does the same at the same times, so that rank's times
    are every rank's (the result then has one rank; for a baseline read at rank 0)."""
    programs, actual, gears = _programs(ctx, module, names, shapes)
    partial = _partial_groups(actual, mirror_peers)
    ranks = programs
    if symmetric and len(programs) > 1 and all(p is programs[0] for p in programs):
        ranks, mirror_peers = programs[:1], True
    progress.phase(f"simulate {sum(len(p) for p in ranks)} nodes")
    try:
        result = simulate(ranks, hw, mirror_peers=mirror_peers, profile=profile)
    finally:
        progress.clear()
    return result, programs, actual, gears, partial


def unlowered(module: ModuleOp) -> ModuleOp:
    """`module` with what `stream-partition` and `insert-events` added taken out, in place
    (the `stream-unlower` pass), ready to be lowered another way."""
    run_passes(make_context(), module, build_pipeline("stream-unlower"))
    return module


def same_bits(a: Array, b: Array) -> bool:
    """Bitwise equality, except that NaN equals NaN at the same place."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind not in "fV" and a.dtype.name != "bfloat16":
        return bool(np.array_equal(a, b))
    nan_a = np.isnan(a.astype(np.float32))
    if not np.array_equal(nan_a, np.isnan(b.astype(np.float32))):
        return False
    unsigned = np.dtype(f"u{a.dtype.itemsize}")
    return bool(np.array_equal(a.view(unsigned)[~nan_a], b.view(unsigned)[~nan_a]))


_Loaded = tuple[
    NpuirContext,
    ModuleOp,
    ModuleOp,
    Hardware,
    list[str],
    dict[str, FuncOp],
    list[list[Array]] | None,
    list[list[tuple[int, ...]]],
    list[dict[int, Array]],
    list[str],
]


def _load_sharing(
    source: Source, ctx: NpuirContext, config: RunConfig
) -> tuple[ModuleOp, dict[str, str]]:
    """`load_source(source, ctx)`, but for an MPMD run of `.mlir` text, entry functions whose
    text is another entry's but for its name are not parsed (`text_copies`): the module
    holds one of each, and the copies' names map to it.  Parsing and verifying every copy
    cost MPMD most of its time over SPMD.  Whatever `share_identical` would not share (a
    module that names a symbol), or any entry the smaller module does not resolve, is
    read from the whole text as before, so errors and results are the same."""
    entries = config.entries or []
    if len(set(entries)) < 2 or source.format is not Format.MLIR:
        return load_source(source, ctx), {}
    text = source.text(ctx)
    blanked, copied = text_copies(text, entries)
    if not copied:
        return load_source(source, ctx), {}
    sources = ctx.diagnostics.sources
    try:
        module = parse_module(ctx, blanked, source.filename, sources)
        verify(module)
    except DiagnosticError:
        module = None  # said as the whole text says it, below
    finally:
        sources.add(source.filename, text)  # lines quoted in diagnostics: the text as given
    funcs = _functions(module) if module is not None else {}
    if (
        module is None
        or has_symbol_refs(module)
        or any(f not in funcs or funcs[f].is_declaration for f in copied.values())
    ):
        return load_source(source, ctx), {}
    return module, copied


def _load(config: RunConfig, parsed: ModuleOp | None = None, keep: bool = True) -> _Loaded:
    """Parse the input (or take `parsed`, already parsed and verified); its device,
    entries, given inputs and argument shapes.  Without `keep`, the module as written is
    not copied before lowering (the caller needs only the lowered one)."""
    ctx = make_context(collect_diagnostics=True)
    weights: dict[str, Array] = {}
    copied: dict[str, str] = {}
    if parsed is not None:
        module = parsed
        if isinstance(config.source, str):
            ctx.diagnostics.sources.add(config.path, config.source)
    else:
        if isinstance(config.source, Source):
            source = config.source
        elif config.source is not None:
            source = source_of_text(config.path, config.source)
        else:
            source = read(config.path)
        module, copied = _load_sharing(source, ctx, config)
        weights = state_arrays(source)
    if copied and config.entries:
        # The copies were never parsed: each rank that runs one is given the one kept.
        shared = [copied.get(n, n) for n in config.entries]
        names = entry_names(replace(config, entries=shared), module)
        shown = list(config.entries)
    else:
        names = entry_names(config, module)
        shown = list(names)
    # Entry functions that are copies of each other are lowered and prepared once (every
    # rank is still simulated); `shown` keeps the names the ranks were given.
    names = share_identical(module, names)
    original = module.clone() if keep else module
    hw = _hardware(config, module)
    # The functions as written: lowering rewrites `module`'s in place (a gear dispatcher keeps
    # nothing of the body that says which inputs need positive values or index bounds).
    funcs = _functions(original)
    check_shape_names(config, [funcs[n] for n in names])
    # A `.pt2`'s weights are not inputs: they take the archive's values.
    state = [state_inputs(funcs[n], weights, config.path) for n in names]
    given = load_inputs(config.inputs, [funcs[n] for n in names], state) if config.inputs else None
    # Without given inputs a function's shapes are the same on every rank that runs it:
    # read once per function, not once per rank.
    once: dict[str, list[tuple[int, ...]]] = {}
    shapes = [
        _arg_shapes(funcs[n], config, given[r])
        if given
        else list(once.get(n) or once.setdefault(n, _arg_shapes(funcs[n], config, None)))
        for r, n in enumerate(names)
    ]
    return ctx, module, original, hw, names, funcs, given, shapes, state, shown


def budget_pipeline(budget: str, favor: str = "max-concurrency") -> str:
    """`npu-default` with `auto` choosing the streams under a memory budget (keeping what
    `favor` names among the schedules that fit), and the plan checked against it."""
    return (
        f"gear-multiversion,stream-partition{{mode=auto mem-budget={budget} favor={favor}}},"
        "coreset-lower,"
        f"insert-events,coreset-check,sync-verify,mem-plan{{budget={budget}}},mem-verify"
    )


def _lower_reporting(ctx: NpuirContext, module: ModuleOp, config: RunConfig) -> list[Diagnostic]:
    """Lower `module` as `config` asks; the passes' warnings."""
    pipeline = config.pipeline
    if config.favor is not None and config.mem_budget is None:
        raise UsageError("--favor chooses among the schedules that fit --mem-budget: give both")
    if config.mem_budget is not None:
        if pipeline is not None:
            raise UsageError(
                "--mem-budget chooses the pipeline (auto under the budget); with --pipeline, "
                "give stream-partition{mode=auto mem-budget=...} in it instead"
            )
        pipeline = budget_pipeline(config.mem_budget, config.favor or "max-concurrency")
    try:
        _lower(ctx, module, pipeline, config.hw)
    except DiagnosticError as exc:
        # Warnings the passes gave before the error still matter to the user.
        raise DiagnosticError(exc.diagnostic, (*ctx.diagnostics.drain(), *exc.notes)) from None
    return list(ctx.diagnostics.drain())


def fit_program(config: RunConfig, profile_path: str) -> tuple[Fit, list[Diagnostic]]:
    """Fit the device's rates and launch overhead to the profile of `config`'s program
    (`npuir.backends.npu.calibrate`), lowered as a run would lower it."""
    ctx, module, _, hw, names, _, _, shapes, _, _ = _load(config)
    profile = read_profile(profile_path)
    warnings = profile.warnings + _lower_reporting(ctx, module, config)
    programs, _, _ = _programs(ctx, module, names, shapes)
    try:
        return fit_hardware(programs, profile, hw), warnings
    except FitError as exc:
        raise DiagnosticError(
            Diagnostic.of("error", FIT_FAILED, path=profile_path, reason=str(exc))
        ) from None


@dataclass
class Timed:
    """A run's lowering and simulation only: no one-stream baseline, explanation or
    numerics (what `npuir-advise` needs of each variant it times)."""

    result: SimResult
    programs: list[Program]
    gears: list[str | None]
    warnings: list[Diagnostic]


def time_program(config: RunConfig, parsed: ModuleOp | None = None) -> Timed:
    """Lower and simulate `config`'s program as `run_program` does, and nothing else.
    `parsed` is the program already parsed (it is lowered in place)."""
    ctx, module, _, hw, names, _, _, shapes, _, _ = _load(config, parsed, keep=False)
    profile = read_profile(config.profile) if config.profile else None
    warnings = (profile.warnings if profile else []) + _lower_reporting(ctx, module, config)
    result, programs, _, gears, _ = _simulate(
        ctx, module, names, shapes, hw, config.mirror_peers, profile
    )
    return Timed(result, programs, gears, warnings + memory_warning(result, hw))


def run_program(config: RunConfig) -> RunOutcome:
    """Do what `config` asks; user errors raise `DiagnosticError` / `UsageError`."""
    loaded = _load(config)
    ctx, module, original, hw, names, funcs, given, shapes, state, shown = loaded
    profile = read_profile(config.profile) if config.profile else None
    warnings = (profile.warnings if profile else []) + _lower_reporting(ctx, module, config)
    result, programs, actual, gears, partial = _simulate(
        ctx, module, names, shapes, hw, config.mirror_peers, profile
    )

    baseline = unlowered(original.clone())
    base_ctx = make_context(collect_diagnostics=True)
    _lower(base_ctx, baseline, SINGLE_STREAM_PIPELINE, config.hw)
    base_ctx.diagnostics.drain()
    # The one-stream baseline is read for its makespan, rank 0's explanation and the plans'
    # peaks: an SPMD baseline is simulated on one rank (see `_simulate`), so the whole run
    # is simulated once.
    single, single_programs, _, _, _ = _simulate(
        base_ctx, baseline, names, shapes, hw, config.mirror_peers, profile, symmetric=True
    )

    check: dict[str, Any] | None = None
    inputs: list[list[Array]] = []
    outputs: list[list[Array]] = []
    if not config.timing_only:
        _refuse_beyond_host(programs, partial, config)
        inputs = given or [
            make_inputs(funcs[n], s, config.seed, r, state[r])
            for r, (n, s) in enumerate(zip(names, shapes))
        ]
        pools = _pools(module, actual) if config.check_memory else None
        try:
            outputs = run_ranks(
                module, actual, inputs, mirror_peers=config.mirror_peers, pools=pools
            )
        except NumericsError as exc:
            raise error(exc.op or module, NUMERICS_ERROR, reason=str(exc)) from None
        if config.check:
            check = _check(original, names, inputs, outputs, config.mirror_peers)
    report = build_report(
        result,
        programs,
        hw,
        single_stream_ns=single.makespan_ns if single.deadlock is None else None,
        single_stream_deadlocks=single.deadlock is not None,
        gears=gears,
        entries=shown,
        check=check,
        mirrored=[p.to_json() for p in partial] if config.mirror_peers else None,
        profile=(
            {
                "path": profile.path,
                "rows": profile.rows,
                "ops_from_profile": result.profiled_ops,
                "ops": result.compute_ops,
            }
            if profile is not None
            else None
        ),
        warnings=warnings,
    )
    if result.deadlock is None:
        report["memory"] = memory_report(result, programs, single_programs)
        report["memory"]["log"] = imas_line("@" + shown[0], report["memory"])
    else:
        report["memory"] = None
    report["why"], report["auto"] = _why(
        config, original, names, shapes, hw, profile, (result, programs), (single, single_programs)
    )
    estimated = estimated_ops(result, programs) if result.deadlock is None else None
    report["estimated_ops"] = estimated.to_json() if estimated is not None else None
    if estimated is not None:
        report["why"].append(estimated.line())
    warnings += memory_warning(result, hw)
    status = EXIT_OK
    if result.deadlock is not None:
        status = EXIT_DEADLOCK
    elif check is not None and not check["passed"]:
        status = EXIT_CHECK
    state_args = [set(fixed) for fixed in state]
    return RunOutcome(status, report, result, programs, warnings, inputs, outputs, state_args, hw)


def _pools(module: ModuleOp, funcs: Sequence[FuncOp]) -> list[Pool]:
    """One pool per rank laid out by its function's plan; refused before anything is
    allocated when the host cannot hold them all."""
    layouts: list[Layout] = []
    for func in funcs:
        try:
            layouts.append(Layout.of(module, func))
        except LayoutError as exc:
            raise error(exc.op, NO_MEMORY_PLAN, reason=str(exc)) from None
    total = sum(layout.pool_bytes for layout in layouts)
    available = host_bytes_available()
    if available is not None and total > available:
        raise error(funcs[0], HOST_MEMORY, total=total, ranks=len(funcs), available=available)
    return [Pool(layout) for layout in layouts]


AUTO_PIPELINE = (
    "gear-multiversion,stream-partition{mode=auto ignore-tags=true},"
    "coreset-lower,insert-events,coreset-check,sync-verify"
)
"""What `npuir-run` suggests when the schedule it ran is slower than one stream."""


def _why(
    config: RunConfig,
    original: ModuleOp,
    names: Sequence[str],
    shapes: Sequence[Sequence[tuple[int, ...]]],
    hw: Hardware,
    profile: Profile | None,
    ran: tuple[SimResult, list[Program]],
    single: tuple[SimResult, list[Program]],
) -> tuple[list[str], dict[str, Any] | None]:
    """Why the schedule takes what it takes against one stream (`npuir.backends.npu.explain`)
    and, when it is slower than one stream, what `auto` would take and the pipeline for it.

    Auto is only tried on a slowdown: it is a search, too slow to run on every program."""
    (result, programs), (base, base_programs) = ran, single
    if result.deadlock is not None or base.deadlock is not None:
        return [], None
    mine, other = explain(result, programs, hw), explain(base, base_programs, hw)
    lines = [compare(mine, other, "this schedule", "one stream"), *mine.lines()]
    if result.makespan_ns <= base.makespan_ns or "mode=auto" in (config.pipeline or ""):
        return lines, None
    candidate = unlowered(original.clone())
    auto_ctx = make_context(collect_diagnostics=True)
    try:
        _lower(auto_ctx, candidate, AUTO_PIPELINE, config.hw)
        auto, _, _, _, _ = _simulate(
            auto_ctx, candidate, names, shapes, hw, config.mirror_peers, profile
        )
    except DiagnosticError:
        return lines, None
    if auto.deadlock is not None or auto.makespan_ns >= result.makespan_ns:
        return lines, None
    lines.append(
        f"auto would take {auto.makespan_ns / 1000:.1f} µs: npuir-run FILE --pipeline "
        f"'{AUTO_PIPELINE}'  (npuir-advise FILE gives it as TorchAir edits)"
    )
    return lines, {"makespan_ns": auto.makespan_ns, "pipeline": AUTO_PIPELINE}


def _check(
    original: ModuleOp,
    names: Sequence[str],
    inputs: Sequence[Sequence[Array]],
    outputs: Sequence[Sequence[Array]],
    mirror_peers: bool,
) -> dict[str, Any]:
    funcs = _functions(original)
    reference_funcs = [funcs[n] for n in names]
    try:
        reference = run_ranks(original, reference_funcs, inputs, mirror_peers=mirror_peers)
    except NumericsError as exc:
        raise error(exc.op or original, REFERENCE_FAILS, reason=str(exc)) from None
    mismatches: list[str] = []
    for rank, (got, want) in enumerate(zip(outputs, reference)):
        for index, (a, b) in enumerate(zip(got, want)):
            if not same_bits(a, b):
                mismatches.append(f"rank {rank} output {index}")
    return {"passed": not mismatches, "mismatches": mismatches}


def input_arrays(outcome: RunOutcome) -> dict[str, Array]:
    """The inputs a run used, keyed as `load_inputs` reads them: `argN` for one rank,
    `rankR/argN` for several; without a `.pt2`'s weights, which are not inputs (a run
    takes them from the archive)."""
    keyed = _keyed(outcome.inputs, "arg")
    for rank, args in enumerate(outcome.state):
        for index in args:
            keyed.pop(f"arg{index}" if len(outcome.inputs) == 1 else f"rank{rank}/arg{index}")
    return keyed


def output_arrays(outcome: RunOutcome) -> dict[str, Array]:
    """The outputs a run computed: `outN` for one rank, `rankR/outN` for several."""
    return _keyed(outcome.outputs, "out")


def _keyed(per_rank: Sequence[Sequence[Array]], stem: str) -> dict[str, Array]:
    if len(per_rank) == 1:
        return {f"{stem}{i}": a for i, a in enumerate(per_rank[0])}
    return {
        f"rank{r}/{stem}{i}": a for r, arrays in enumerate(per_rank) for i, a in enumerate(arrays)
    }


def save_arrays(out: BinaryIO, arrays: dict[str, Array]) -> None:
    """Write `arrays` to the binary stream `out` as an uncompressed `.npz` (what `--outputs`
    and `--save-inputs` write).  bfloat16 is saved as its 2-byte bits, which `load_inputs`
    reads back as bfloat16."""
    np.savez(out, **arrays)  # type: ignore[arg-type]
