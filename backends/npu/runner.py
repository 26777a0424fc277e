"""Run a program end to end: lower it, simulate it in time, run it numerically, check it.

This is the library behind `npuir-run` (the tool only parses arguments):

    outcome = run_program(RunConfig(path="examples/seed_multistream.mlir"))
    outcome.status        # 0 ok, 3 deadlock, 4 check failed (bad input raises)
    outcome.report        # the JSON-able report (see `npuir.backends.npu.report`)
    outcome.outputs       # each rank's outputs (and `outcome.inputs` what they came from)

Steps: parse; apply the pipeline (`npu-default` when the input is not
lowered yet; `--hw` overrides the module's `npu.target` for the passes too);
refuse a program that fails `sync-verify`; resolve each rank's entry (a gear
dispatcher enters the version whose gear the input shapes match); simulate
(dynamic dims take the shapes given, data-dependent ones their upper bound);
unless timing-only, run the numerics on random or given inputs and, with
`check`, compare every output with the program before the pipeline.  The
report also carries the makespan of the same program on a single stream
(scopes ignored), the baseline a multi-stream schedule is measured against.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import BlockArgument, OpResult, SSAValue

import npuir
from npuir.analysis.program import Program, build_program, is_lowered, module_streams
from npuir.backends.npu.hardware import Hardware, HardwareError, load_hardware
from npuir.backends.npu.kernels import numpy_dtype, positive_domain_ops, random_input
from npuir.backends.npu.numerics import NumericsError, resolve_entry, run_ranks
from npuir.backends.npu.report import build_report
from npuir.backends.npu.simulator import SimResult, simulate
from npuir.diagnostics import Diagnostic, DiagnosticError, UsageError, error
from npuir.dialects import gear, npu, stream
from npuir.transforms.gear_multiversion import GearTypeError, specialise

EXIT_OK, EXIT_INPUT, EXIT_USAGE, EXIT_DEADLOCK, EXIT_CHECK = 0, 1, 2, 3, 4

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
    pipeline: str | None = None
    entry: str | None = None
    entries: list[str] | None = None
    ranks: int = 1
    hw: str | None = None
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict[str, tuple[int, ...]])
    inputs: str | None = None
    seed: int = 0
    check: bool = False
    timing_only: bool = False


@dataclass
class RunOutcome:
    """What a run produced: the exit status, the report, and what it was computed from."""

    status: int
    report: dict[str, Any]
    result: SimResult | None = None
    programs: list[Program] = field(default_factory=list[Program])
    warnings: list[Diagnostic] = field(default_factory=list[Diagnostic])
    inputs: list[list[Array]] = field(default_factory=list[list[Array]])
    """Each rank's inputs (random or from `--inputs`); empty under timing-only."""
    outputs: list[list[Array]] = field(default_factory=list[list[Array]])
    """Each rank's outputs of the scheduled program; empty under timing-only."""


def _hardware(config: RunConfig, module: ModuleOp) -> Hardware:
    spec = config.hw or npu.target_of(module) or "910b2"
    try:
        return load_hardware(spec)
    except HardwareError as exc:
        if config.hw is None:
            raise error(module, str(exc)) from None
        # A preset that does not exist or a file that cannot be read is a bad flag value; a
        # file that can be read but is wrong is bad input (its message names file and line).
        if not Path(config.hw).is_file():
            raise UsageError(f"--hw: {exc}") from None
        raise DiagnosticError(Diagnostic("error", f"--hw: {exc}")) from None


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
        raise error(module, "the module has no function to run")
    if len(candidates) > 1 and "main" in candidates:
        return "main"
    return candidates[0]


def entry_names(config: RunConfig, module: ModuleOp) -> list[str]:
    """One entry function name per rank."""
    funcs = _functions(module)
    if config.entries:
        names = config.entries
    else:
        names = [config.entry or _default_entry(module)] * config.ranks
    for name in names:
        if name not in funcs:
            raise UsageError(
                f"no function @{name} in the module (it has: "
                + ", ".join(f"@{n}" for n in funcs)
                + ")"
            )
        if funcs[name].is_declaration:
            raise error(funcs[name], f"@{name} is an external declaration: it has no body to run")
    return names


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
            Diagnostic(
                "error",
                f"argument {index} of @{func.sym_name.data} indexes an empty axis; "
                "give inputs with --inputs",
            )
        )
    return bound


def make_inputs(
    func: FuncOp, shapes: Sequence[tuple[int, ...]], seed: int, rank: int
) -> list[Array]:
    """Random inputs where every op is defined: positive floats where an op needs
    them, gather indices within the gathered dim; one stream of numbers per rank."""
    rng = np.random.default_rng([seed, rank])
    positive = _needs_positive(func)
    out: list[Array] = []
    for index, (ty, shape) in enumerate(zip(func.function_type.inputs, shapes)):
        assert isinstance(ty, TensorType)
        dtype = numpy_dtype(npu.dtype_name(ty.element_type))
        high = _index_bound(func, index, shapes)
        out.append(random_input(shape, dtype, rng, positive=positive, high=high))
    return out


def load_inputs(path: str, funcs: Sequence[FuncOp]) -> list[list[Array]]:
    """Inputs from an `.npz` (loaded without pickle): `argN`, or `rankR/argN` per rank."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except (OSError, ValueError) as exc:
        raise DiagnosticError(Diagnostic("error", f"cannot read inputs '{path}': {exc}")) from None
    per_rank: list[list[Array]] = []
    for rank, func in enumerate(funcs):
        values: list[Array] = []
        for index, ty in enumerate(func.function_type.inputs):
            key = next((k for k in (f"rank{rank}/arg{index}", f"arg{index}") if k in arrays), None)
            if key is None:
                raise DiagnosticError(
                    Diagnostic("error", f"'{path}' has no array 'arg{index}' for rank {rank}")
                )
            assert isinstance(ty, TensorType)
            values.append(_given_input(path, key, arrays[key], func, index, ty))
        per_rank.append(values)
    return per_rank


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
            Diagnostic(
                "error",
                f"{where} has dtype {array.dtype}, but argument {index} of "
                f"@{func.sym_name.data} is {ty}: save it as {dtype}",
            )
        )
    shape = tuple(ty.get_shape())
    if array.ndim != len(shape) or any(d != npu.DYN and d != n for d, n in zip(shape, array.shape)):
        raise DiagnosticError(
            Diagnostic(
                "error",
                f"{where} has shape {'x'.join(map(str, array.shape)) or 'scalar'}, which does "
                f"not fit argument {index} of @{func.sym_name.data}, {ty}",
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
    except GearTypeError as exc:
        raise error(exc.op, f"the shapes given do not type-check: {exc}") from None


def _lower(
    ctx: npuir.NpuirContext, module: ModuleOp, pipeline: str | None, hw_spec: str | None
) -> None:
    if hw_spec is not None:
        module.attributes[npu.TARGET] = StringAttr(hw_spec)
    if pipeline is None:
        lowered = any(is_lowered(f) for f in module.ops if isinstance(f, FuncOp))
        pipeline = "sync-verify" if lowered else "npu-default"
    elif "sync-verify" not in pipeline:
        pipeline = f"{pipeline},sync-verify" if pipeline.strip() else "sync-verify"
    npuir.run_passes(ctx, module, npuir.build_pipeline(pipeline))


def _simulate(
    module: ModuleOp,
    names: Sequence[str],
    shapes: Sequence[Sequence[tuple[int, ...]]],
    hw: Hardware,
) -> tuple[SimResult, list[Program], list[FuncOp], list[str | None]]:
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
            raise error(exc.op, str(exc)) from None
        actual.append(func)
        gears.append(label)
        key = (func.sym_name.data, tuple(rank_shapes))
        prog = cache.get(key)
        if prog is None:
            prog = cache[key] = build_program(timing_function(func, rank_shapes), streams)
        programs.append(prog)
    return simulate(programs, hw), programs, actual, gears


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


def run_program(config: RunConfig) -> RunOutcome:
    """Do what `config` asks; user errors raise `DiagnosticError` / `UsageError`."""
    ctx = npuir.make_context()
    module = npuir.parse_file(ctx, config.path)
    original = module.clone()
    hw = _hardware(config, module)
    names = entry_names(config, module)
    # The functions as written: lowering rewrites `module`'s in place (a gear dispatcher keeps
    # nothing of the body that says which inputs need positive values or index bounds).
    funcs = _functions(original)
    given = load_inputs(config.inputs, [funcs[n] for n in names]) if config.inputs else None
    shapes = [
        _arg_shapes(funcs[n], config, given[r] if given else None) for r, n in enumerate(names)
    ]
    try:
        _lower(ctx, module, config.pipeline, config.hw)
    except DiagnosticError as exc:
        # Warnings the passes gave before the error still matter to the user.
        raise DiagnosticError(exc.diagnostic, (*ctx.diagnostics.drain(), *exc.notes)) from None
    warnings = list(ctx.diagnostics.drain())
    result, programs, actual, gears = _simulate(module, names, shapes, hw)

    baseline = original.clone()
    base_ctx = npuir.make_context()
    _lower(base_ctx, baseline, SINGLE_STREAM_PIPELINE, config.hw)
    base_ctx.diagnostics.drain()
    single, _, _, _ = _simulate(baseline, names, shapes, hw)

    check: dict[str, Any] | None = None
    inputs: list[list[Array]] = []
    outputs: list[list[Array]] = []
    if not config.timing_only:
        inputs = given or [
            make_inputs(funcs[n], s, config.seed, r) for r, (n, s) in enumerate(zip(names, shapes))
        ]
        try:
            outputs = run_ranks(module, actual, inputs)
        except NumericsError as exc:
            raise error(exc.op or module, str(exc)) from None
        if config.check:
            check = _check(original, names, inputs, outputs)
    report = build_report(
        result,
        programs,
        hw,
        single_stream_ns=single.makespan_ns if single.deadlock is None else None,
        single_stream_deadlocks=single.deadlock is not None,
        gears=gears,
        entries=list(names),
        check=check,
    )
    status = EXIT_OK
    if result.deadlock is not None:
        status = EXIT_DEADLOCK
    elif check is not None and not check["passed"]:
        status = EXIT_CHECK
    return RunOutcome(status, report, result, programs, warnings, inputs, outputs)


def _check(
    original: ModuleOp,
    names: Sequence[str],
    inputs: Sequence[Sequence[Array]],
    outputs: Sequence[Sequence[Array]],
) -> dict[str, Any]:
    funcs = _functions(original)
    reference_funcs = [funcs[n] for n in names]
    try:
        reference = run_ranks(original, reference_funcs, inputs)
    except NumericsError as exc:
        raise error(exc.op or original, f"the unscheduled program fails: {exc}") from None
    mismatches: list[str] = []
    for rank, (got, want) in enumerate(zip(outputs, reference)):
        for index, (a, b) in enumerate(zip(got, want)):
            if not same_bits(a, b):
                mismatches.append(f"rank {rank} output {index}")
    return {"passed": not mismatches, "mismatches": mismatches}
