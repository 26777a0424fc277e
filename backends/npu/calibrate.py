"""Calibration: fit a device's per-core rates and launch overhead to a profile of a program.

`npuir-run PROGRAM --fit-hw PROFILE.csv --fit-out hw.toml` asks: which `Hardware` makes the
cost model predict the task durations the profile measured?  For every compute op of the
program that the profile covers (`Profile.lookup`), on its profiled block dim ``c``, the
simulator's model (`timing.task_ns`: the roofline plus the launch) is

    t = launch + max(flops * u[engine, dtype] / min(c, parallelism),   # compute-bound
                     bytes * v / share(c))                              # memory-bound

with ``u = 1e9 / per-core rate`` (ns per FLOP on one core), ``v = 1e9 / HBM bandwidth`` and
``share(c) = c / cores of the engine`` (`timing.static_hbm_share`).  The max makes it
non-linear; once each op is known to be compute- or memory-bound it is linear in the unknowns
(launch, every ``u`` the profile exercises, and ``v`` if some op is memory-bound).  So the
fit alternates: classify every op with the current estimate (starting from the base
device), solve the linear least-squares problem with numpy (each row weighted by 1/t, so
the fit minimises *relative* error), repeat until no op changes class (at most 50 rounds).
An unknown no op informs keeps the base device's value.  Collectives are left out: their cost
is link time, not a core rate.

The fit error is the root mean square (and the largest) relative difference between the
fitted model's prediction and the profiled duration, over the ops used.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from npuir.analysis.program import NodeKind, Program
from npuir.backends.npu.hardware import DEFAULT_HARDWARE, PRESETS, Hardware, HardwareError
from npuir.dialects.npu import NpuOp

from . import timing
from .cost import OpWork, op_work, parallelism
from .profile import Profile

__all__ = ["Fit", "FitError", "fit_hardware"]

_ROUNDS = 50

Array = np.ndarray[Any, Any]


class FitError(ValueError):
    """The profile does not cover enough of the program to fit anything."""


@dataclass(frozen=True)
class _Sample:
    work: OpWork
    cores: int
    """Cores its arithmetic used: min(block dim, parallelism)."""
    share: float
    observed_ns: int


@dataclass(frozen=True)
class Fit:
    """A fitted device and how well it explains the profile."""

    hw: Hardware
    base: Hardware
    ops: int
    """Profiled ops the fit used."""
    rms_error: float
    """Root mean square relative error of the fitted durations."""
    max_error: float
    fitted: tuple[str, ...]
    """The fields the profile informed (`launch_ns`, `cube_flops.f16`, `hbm_bandwidth`...)."""
    rounds: int

    def describe(self) -> str:
        return (
            f"fit over {self.ops} profiled op(s): rms error {self.rms_error:.2%}, "
            f"max {self.max_error:.2%}; fitted "
            + ", ".join(f"{name} = {_field_value(self.hw, name)}" for name in self.fitted)
        )

    def to_toml(self) -> str:
        """A `--hw` TOML file: the base preset and every fitted field (every field of the
        device when the base was itself a file)."""
        lines = [
            f"# Fitted by npuir-run --fit-hw over {self.ops} profiled op(s); rms relative "
            f"error {self.rms_error:.4%}, max {self.max_error:.4%}.",
        ]
        names = list(self.fitted)
        if self.base.name in PRESETS:
            lines.append(f'base = "{self.base.name}"')
        else:
            lines.append(f'base = "{DEFAULT_HARDWARE}"')
            names = [
                f"{key}.{dtype}" if isinstance(value, dict) else key
                for key, value in self.hw.to_dict().items()
                if key != "name"
                for dtype in (value if isinstance(value, dict) else [""])
            ]
        tables: dict[str, list[str]] = {}
        for name in names:
            table, _, key = name.partition(".")
            if key:
                tables.setdefault(table, []).append(f"{key} = {_field_value(self.hw, name)}")
            else:
                lines.append(f"{name} = {_field_value(self.hw, name)}")
        for table, entries in tables.items():
            lines.append(f"[{table}]")
            lines.extend(entries)
        return "\n".join(lines) + "\n"


def _field_value(hw: Hardware, name: str) -> int:
    table, _, key = name.partition(".")
    value = getattr(hw, table)
    return int(value[key]) if key else int(value)


def _samples(programs: Sequence[Program], profile: Profile, hw: Hardware) -> list[_Sample]:
    out: list[_Sample] = []
    seen: set[int] = set()
    for prog in programs:
        if id(prog) in seen:
            continue
        seen.add(id(prog))
        for n, op in enumerate(prog.ops):
            if prog.kind[n] is not NodeKind.COMPUTE or not isinstance(op, NpuOp):
                continue
            work = op_work(op, hw)
            cost = profile.lookup(op)
            if cost is None or work.engine == "comm":
                continue
            total = hw.cores(work.engine)
            dim = max(1, min(cost.cores_for(work.engine) or parallelism(hw, work), total))
            cores = max(1, min(dim, parallelism(hw, work)))
            out.append(_Sample(work, cores, min(1.0, dim / total), cost.duration_ns))
    return out


def fit_hardware(programs: Sequence[Program], profile: Profile, base: Hardware) -> Fit:
    """Fit `base`'s launch overhead, per-core rates and HBM bandwidth to `profile`'s durations
    of the ops of `programs` (see the module docstring).  Raises `FitError` when fewer than
    two ops are covered or the fitted values are not a valid device."""
    samples = _samples(programs, profile, base)
    if len(samples) < 2:
        raise FitError(
            f"the profile covers {len(samples)} compute op(s) of the program; a fit needs "
            "at least 2 (name ops with npu.op_name, or give the profile 'Input Shapes')"
        )
    rate_keys = sorted({(s.work.engine, s.work.dtype) for s in samples})
    # Unknowns, in ns: launch, ns per FLOP per core for each (engine, dtype), ns per byte.
    launch = float(timing.launch_cost(base))
    per_flop = {k: timing.ns_per_flop(base, *k) for k in rate_keys}
    per_byte = timing.ns_per_byte(base)
    observed = np.array([s.observed_ns for s in samples], dtype=np.float64)
    flop_terms = np.array([s.work.flops / s.cores for s in samples], dtype=np.float64)
    byte_terms = np.array([s.work.bytes / s.share for s in samples], dtype=np.float64)
    keys = [(s.work.engine, s.work.dtype) for s in samples]
    compute_bound: list[bool] | None = None
    rounds = 0
    used_bytes = False
    informed: set[tuple[str, str]] = set()
    while rounds < _ROUNDS:
        rounds += 1
        bound = [
            flop_terms[i] * per_flop[keys[i]] >= byte_terms[i] * per_byte
            for i in range(len(samples))
        ]
        if bound == compute_bound:
            break
        compute_bound = bound
        informed = {keys[i] for i in range(len(samples)) if bound[i]}
        used_bytes = not all(bound)
        columns = ["launch", *sorted(informed), *(["bytes"] if used_bytes else [])]
        index = {c: j for j, c in enumerate(columns)}
        matrix = np.zeros((len(samples), len(columns)))
        matrix[:, 0] = 1.0
        for i in range(len(samples)):
            if bound[i]:
                matrix[i, index[keys[i]]] = flop_terms[i]
            else:
                matrix[i, index["bytes"]] = byte_terms[i]
        weights = 1.0 / observed
        solution, *_ = np.linalg.lstsq(matrix * weights[:, None], observed * weights, rcond=None)
        launch = max(0.0, float(solution[0]))
        for key in informed:
            if solution[index[key]] > 0:
                per_flop[key] = float(solution[index[key]])
        if used_bytes and solution[index["bytes"]] > 0:
            per_byte = float(solution[index["bytes"]])
    predicted = launch + np.maximum(
        flop_terms * np.array([per_flop[k] for k in keys]), byte_terms * per_byte
    )
    relative = np.abs(predicted - observed) / observed
    hw, fitted = _fitted(base, launch, per_flop, informed, per_byte if used_bytes else None)
    return Fit(
        hw,
        base,
        len(samples),
        float(math.sqrt(float(np.mean(relative**2)))),
        float(np.max(relative)),
        fitted,
        rounds,
    )


def _fitted(
    base: Hardware,
    launch: float,
    per_flop: dict[tuple[str, str], float],
    informed: set[tuple[str, str]],
    per_byte: float | None,
) -> tuple[Hardware, tuple[str, ...]]:
    try:
        return timing.fitted_hardware(base, launch, {k: per_flop[k] for k in informed}, per_byte)
    except HardwareError as exc:
        raise FitError(f"the fitted device is not valid: {exc}") from None
