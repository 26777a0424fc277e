"""Costs from profiles: reading an msprof-style op summary, simulating with it, writing it
back from a simulation, and fitting a device to it.

Times on ``tiny`` (see test_simulator.py): an f16 add of 1024 elements takes 12388 ns on its
2 vector cores; a matmul 64x64x64 takes 262244 ns on the 2 cube cores; a relu of 1024 f16
on 1 vector core (HBM share 1/4) max(1024, 4096 * 4) + 100 = 16484 ns.
"""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.func import FuncOp

import npuir
from npuir.analysis.program import Program, build_program, module_streams
from npuir.backends.npu.calibrate import FitError, fit_hardware
from npuir.backends.npu.hardware import PRESETS, load_hardware
from npuir.backends.npu.profile import (
    COLUMNS,
    IGNORED_TASK_TYPES,
    TASK_ENGINES,
    profile_csv,
    read_profile,
)
from npuir.backends.npu.simulator import SimResult, simulate
from npuir.diagnostics import DiagnosticError
from npuir.tools.run import run as run_tool

TINY = PRESETS["tiny"]
T = "tensor<1024xf16>"
BIN = f"({T}, {T}) -> {T}"
M = "tensor<64x64xf16>"

# An add named "Add_1" (as an importer names it), then an unnamed matmul and relu.
TEXT = f"""module {{
  stream.decl @s0 "<main>" priority 0
  func.func @f(%a: {T}, %b: {T}, %m: {M}) -> ({T}, {M}, {T}) {{
    %x = npu.add %a, %b {{stream.on = @s0, npu.op_name = "Add_1"}} : {BIN}
    %y = npu.matmul %m, %m {{stream.on = @s0}} : ({M}, {M}) -> {M}
    %z = npu.relu %x {{stream.on = @s0, coreset.cores = #coreset.cores<vector 1>}} : ({T}) -> {T}
    func.return %x, %y, %z : {T}, {M}, {T}
  }}
}}"""

HEADER = "Model ID,Op Name,OP Type,Task Type,Task Duration(us),Block Dim,Mix Block Dim,Input Shapes"


def program(text: str = TEXT) -> Program:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, text)
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    return build_program(func, module_streams(module))


def write(tmp_path: Path, *rows: str, header: str = HEADER) -> str:
    path = tmp_path / "op_summary.csv"
    path.write_text("\n".join([header, *rows]) + "\n")
    return str(path)


def durations(result: SimResult) -> list[tuple[int, int]]:
    """(duration, cores) of each compute op, in issue order."""
    return [(r.end - r.start, r.cores) for r in result.ops if r.engine]


# --------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------


def test_profile_replaces_the_costs_of_the_ops_it_names(tmp_path: Path) -> None:
    """By npu.op_name for the add, by type and input shapes for the matmul; the relu is not
    covered and keeps the cost model; rows of one op are averaged; extra columns ignored."""
    path = write(
        tmp_path,
        "1,Add_1,Add,AI_VECTOR_CORE,4.5,1,0,1024;1024",
        "1,Add_1,Add,AI_VECTOR_CORE,5.5,1,0,1024;1024",
        '1,MatMul_7,matmul,AI_CORE,100.25,2,0,"64,64;64,64"',
    )
    profile = read_profile(path)
    assert profile.rows == 3
    plain = simulate([program()], TINY)
    result = simulate([program()], TINY, profile=profile)
    # The profiled ops take the profile's times on its block dims; the relu keeps the
    # cost model's (whatever it is: the simulator's tests pin that).
    assert durations(result)[:2] == [(5000, 1), (100250, 2)]
    assert durations(result)[2] == durations(plain)[2]
    assert (result.profiled_ops, result.compute_ops) == (2, 3)


@pytest.mark.parametrize("task", [*TASK_ENGINES, "AI Core", "mix_aiv"])
def test_every_task_type_maps_to_an_engine_whose_cores_it_gives(tmp_path: Path, task: str) -> None:
    """The matmul (a cube op) profiled under each task type: the duration always comes from
    the row; its cores from Block Dim when the type ran on cube cores, from Mix Block Dim
    when cube is the mix engine (MIX_AIV), else from the cost model (the model gives it the
    2 cube cores of tiny, the row's Block Dim 1 and Mix Block Dim 2)."""
    path = write(tmp_path, f'1,MatMul_7,matmul,{task},100.25,1,2,"64,64;64,64"')
    profile = read_profile(path)
    assert profile.rows == 1 and profile.warnings == []
    plain = durations(simulate([program()], TINY))[1][1]
    main, mix = TASK_ENGINES[task.upper().replace(" ", "_")]
    cores = 1 if main == "cube" else 2 if mix == "cube" else plain
    assert plain == 2
    assert durations(simulate([program()], TINY, profile=profile))[1] == (100250, cores)


def test_task_types_without_an_npuir_meaning_are_counted_and_left_out(tmp_path: Path) -> None:
    ignored = list(IGNORED_TASK_TYPES)
    rows = [f"1,Add_1,Add,{t},{i + 1},1,0,1024;1024" for i, t in enumerate(ignored)]
    rows.insert(1, "1,Add_1,Add,AI_VECTOR_CORE,5,1,0,1024;1024")
    rows.append(f"1,Add_1,Add,{ignored[0]},9,1,0,1024;1024")
    path = write(tmp_path, *rows)
    profile = read_profile(path)
    assert profile.rows == 1  # only the vector row: its 5 us, nothing averaged in
    assert durations(simulate([program()], TINY, profile=profile))[0] == (5000, 1)
    notes = {d.args["task"]: d for d in profile.warnings}
    assert set(notes) == set(ignored)
    for task, note in notes.items():
        assert note.severity == "note" and note.kind == "profile.task-type-ignored"
        assert note.args["rows"] == (2 if task == ignored[0] else 1)
        first = 2 + ignored.index(task) + (ignored.index(task) >= 1)  # the header is line 1
        assert note.render().startswith(f"{path}:{first}: note: ")


def test_an_unknown_task_type_is_a_located_warning_and_the_rest_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path,
        "1,Add_1,Add,AI_VECTOR_CORE,5,1,0,1024;1024",
        '1,MatMul_7,matmul,GPU_TENSOR_CORE,3,1,0,"64,64;64,64"',
    )
    profile = read_profile(path)
    assert profile.rows == 1 and len(profile.warnings) == 1
    (warning,) = profile.warnings
    assert warning.severity == "warning" and warning.kind == "profile.task-type-unknown"
    rendered = warning.render()
    assert rendered.startswith(f"{path}:3: warning: row 'MatMul_7': 'Task Type' is ")
    assert "GPU_TENSOR_CORE" in rendered
    # The matmul keeps the cost model; npuir-run says why, and runs.
    result = simulate([program()], TINY, profile=profile)
    assert durations(result)[1] == durations(simulate([program()], TINY))[1]
    mlir = tmp_path / "p.mlir"
    mlir.write_text(TEXT)
    assert run_tool([str(mlir), "--hw", "tiny", "--timing-only", "--profile", path]) == 0
    assert f"{path}:3: warning: row 'MatMul_7'" in capsys.readouterr().err


def test_fewer_cores_than_the_block_dim_take_proportionally_longer(tmp_path: Path) -> None:
    """The relu is limited to 1 vector core; profiled at block dim 4 it runs 4 times its
    profiled duration."""
    path = write(tmp_path, "1,Relu_2,relu,AI_VECTOR_CORE,2,4,0,1024")
    result = simulate([program()], TINY, profile=read_profile(path))
    assert durations(result)[2] == (8000, 1)


@pytest.mark.parametrize(
    ("rows", "header", "where", "message"),
    [
        ((), "Op Name,OP Type,Task Duration(us)", 1, "the header has no column 'Task Type'"),
        (("1,Add_1,Add,AI_VECTOR_CORE,fast,1,0,",), HEADER, 2, "'Task Duration(us)' is 'fast'"),
        (("1,Add_1,Add,AI_VECTOR_CORE,-3,1,0,",), HEADER, 2, "'Task Duration(us)' is '-3'"),
        (("1,a,Add,AI_CORE,1,1,0,", "1,Add_1,Add,AI_CORE,1,2.5,0,"), HEADER, 3, "'Block Dim'"),
        (("1,Add_1,Add,AI_CORE,1,1,x,",), HEADER, 2, "'Mix Block Dim' is 'x'"),
        (("1,,Add,AI_CORE,1,1,0,",), HEADER, 2, "'Op Name' is empty"),
        (("1,Add_1,Add",), HEADER, 2, "the row has 3 cells, the header 8"),
        (("1,Mm,matmul,AI_CORE,1,1,0,64,64",), HEADER, 2, "the row has 9 cells, the header 8"),
    ],
)
def test_bad_profiles_are_located_errors(
    tmp_path: Path, rows: tuple[str, ...], header: str, where: int, message: str
) -> None:
    path = write(tmp_path, *rows, header=header)
    with pytest.raises(DiagnosticError) as info:
        read_profile(path)
    rendered = info.value.diagnostic.render()
    assert rendered.startswith(f"{path}:{where}: error: "), rendered
    assert message in rendered


def test_an_empty_or_missing_profile_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(DiagnosticError, match="the profile is empty"):
        read_profile(str(empty))
    with pytest.raises(DiagnosticError, match="cannot read profile"):
        read_profile(str(tmp_path / "nope.csv"))


# --------------------------------------------------------------------------
# Writing: the round trip
# --------------------------------------------------------------------------


def test_emitted_profile_round_trips(tmp_path: Path) -> None:
    """A simulation written as an op summary and read back costs every op as simulated, so
    the makespan is the same; the file has the columns a profile needs."""
    text = TEXT.replace("%y = npu.matmul %m, %m {", '%y = npu.matmul %m, %m {npu.op_name = "mm", ')
    text = text.replace("%z = npu.relu %x {", '%z = npu.relu %x {npu.op_name = "relu", ')
    prog = program(text)
    plain = simulate([prog], TINY)
    path = str(tmp_path / "out.csv")
    Path(path).write_text(profile_csv(plain, [prog]))
    with open(path, newline="") as f:
        header = next(csv.reader(f))
    assert set(COLUMNS) <= set(header)
    again = simulate([prog], TINY, profile=read_profile(path))
    assert again.profiled_ops == again.compute_ops == 3
    assert durations(again) == durations(plain)
    assert again.makespan_ns == plain.makespan_ns


# --------------------------------------------------------------------------
# Calibration
# --------------------------------------------------------------------------


def _layer_program() -> Program:
    """Matmuls of several sizes (compute-bound) and elementwise ops (memory-bound) on one
    stream, each named, so every op's duration is measured alone on the device."""
    args: dict[str, str] = {}
    body: list[str] = []
    for i, (m, k) in enumerate((m, k) for m in (256, 1024, 4096) for k in (256, 1024, 4096)):
        args[f"a{m}_{k}"] = f"tensor<{m}x{k}xf16>"
        args[f"b{k}"] = f"tensor<{k}x1024xf16>"
        out = f"tensor<{m}x1024xf16>"
        body += [
            f'%mm{i} = npu.matmul %a{m}_{k}, %b{k} {{stream.on = @s0, npu.op_name = "mm{i}"}}'
            f" : ({args[f'a{m}_{k}']}, {args[f'b{k}']}) -> {out}",
            f'%e{i} = npu.exp %mm{i} {{stream.on = @s0, npu.op_name = "exp{i}"}}'
            f" : ({out}) -> {out}",
        ]
    signature = ", ".join(f"%{name}: {ty}" for name, ty in args.items())
    text = (
        'module {\n  stream.decl @s0 "<main>" priority 0\n'
        f"  func.func @f({signature}) {{\n    "
        + "\n    ".join(body)
        + "\n    func.return\n  }\n}\n"
    )
    return program(text)


# The fit must recover the device that produced the profile to within these, from durations
# with 1% (one standard deviation) multiplicative noise.
LAUNCH_TOLERANCE = 0.05
RATE_TOLERANCE = 0.03


def test_fit_recovers_the_device_a_noisy_profile_came_from(tmp_path: Path) -> None:
    base = PRESETS["910b2"]
    truth = dataclasses.replace(
        base,
        name="truth",
        launch_ns=3100,
        cube_flops={**base.cube_flops, "f16": int(base.cube_flops["f16"] * 0.8)},
        hbm_bandwidth=int(base.hbm_bandwidth * 0.9),
    )
    prog = _layer_program()
    path = str(tmp_path / "truth.csv")
    Path(path).write_text(profile_csv(simulate([prog], truth), [prog]))
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    column = rows[0].index("Task Duration(us)")
    rng = np.random.default_rng(7)
    for row in rows[1:]:
        row[column] = f"{float(row[column]) * (1 + rng.normal(0, 0.01)):.3f}"
    with open(path, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)

    fit = fit_hardware([prog], read_profile(path), base)
    assert fit.ops == 18
    assert abs(fit.hw.launch_ns - 3100) / 3100 < LAUNCH_TOLERANCE
    got_cube = fit.hw.cube_flops["f16"]
    assert abs(got_cube - truth.cube_flops["f16"]) / truth.cube_flops["f16"] < RATE_TOLERANCE
    assert abs(fit.hw.hbm_bandwidth - truth.hbm_bandwidth) / truth.hbm_bandwidth < RATE_TOLERANCE
    # Every exp is memory-bound, so the vector rate is not informed and stays the base's.
    assert "vector_flops.f16" not in fit.fitted
    assert fit.hw.vector_flops == base.vector_flops
    assert fit.rms_error < 0.02
    # The TOML it writes loads as the fitted device.
    toml = tmp_path / "hw.toml"
    toml.write_text(fit.to_toml())
    loaded = load_hardware(str(toml))
    assert (loaded.launch_ns, loaded.cube_flops, loaded.hbm_bandwidth) == (
        fit.hw.launch_ns,
        fit.hw.cube_flops,
        fit.hw.hbm_bandwidth,
    )


def test_fit_needs_profiled_ops(tmp_path: Path) -> None:
    path = write(tmp_path, "1,Other,Add,AI_VECTOR_CORE,4.5,1,0,8")
    with pytest.raises(FitError, match="covers 0 compute op"):
        fit_hardware([program()], read_profile(path), TINY)
