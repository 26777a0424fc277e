"""The simulator's entry points: `simulate` measures everything, `simulate_span` only
what a search judges a schedule by (`Span`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from npuir.analysis.program import Program
from npuir.backends.npu.hardware import Hardware
from npuir.dialects.npu import CollectiveOp
from npuir.gc_pause import collector_paused

from ..cost import OpWork
from ..groups import mismatched_pairs, partial_groups
from ..profile import Profile
from .inputs import CoreLimitFn, Prepared, SimCache, coreset_limit, refuse_unlowered_scopes
from .loop import Simulation
from .measure import collect, critical_path, last_to_end
from .results import SimResult

__all__ = ["Span", "simulate", "simulate_span", "span_task"]


def simulate(
    programs: Sequence[Program],
    hw: Hardware,
    *,
    limits: CoreLimitFn | None = None,
    cache: SimCache | None = None,
    mirror_peers: bool = False,
    profile: Profile | None = None,
) -> SimResult:
    """Run `programs` (one per rank) on `hw` and measure what happens.

    SPMD: pass the same `Program` once per rank (its per-node work is computed once).
    `limits(program, node, engine)` gives each op's core limit; the default reads the
    `coreset.cores` attribute `coreset-lower` writes, unlimited where absent.  `cache` keeps
    what was read from the IR for later calls (see `SimCache`).  `mirror_peers` lets a
    collective whose group reaches past `programs` run as if the missing ranks were copies
    of the ones present (a planner looking at one rank of an SPMD program wants that).
    `profile` replaces the cost model's durations and core demands for the ops it covers
    (see `npuir.backends.npu.profile`); `SimResult.profiled_ops` says how many.

    Raises `ValueError` if `programs` is empty, a node has no stream (not lowered), two
    ranks' collectives that pair up differ (`groups.mismatched_pairs`), a group is partial
    without `mirror_peers` (see `npuir.backends.npu.groups`), or
    `cache` was made for another device; `UnloweredScopes` when `limits` is the default
    but an op still stands in a `coreset.limit` or `stream.switch` scope (its limit would be
    ignored: run `coreset-lower`, or pass `limits=npuir.analysis.core_limits.limit_fn(...)`,
    which resolves scopes).  A deadlock is not an exception: it is
    `SimResult.deadlock`.
    """
    # The run allocates many small objects and frees none of them in cycles; a collection
    # would walk the whole IR each time, so the collector is paused for the run.
    with collector_paused():
        sim, prepared = _run(programs, hw, limits, cache, mirror_peers, profile, True)
        sim.find_races()
        deadlock = sim.deadlock() if sim.finished < sim.total else None
        result = collect(sim, deadlock)
        result.compute_ops = sum(p.compute_ops for p in prepared)
        result.profiled_ops = sum(p.profiled for p in prepared)
        return result


@dataclass(frozen=True)
class Span:
    """What a search judges a schedule by (`simulate_span`)."""

    makespan_ns: int
    """As `SimResult.makespan_ns` when the run finishes; when it deadlocks, the latest end
    of an op that ran (`SimResult` takes the later of that and the deadlock's time)."""
    deadlocked: bool
    critical_path: list[tuple[int, int]]
    """As `SimResult.critical_path`."""


def simulate_span(
    programs: Sequence[Program],
    hw: Hardware,
    *,
    limits: CoreLimitFn | None = None,
    cache: SimCache | None = None,
    mirror_peers: bool = False,
    profile: Profile | None = None,
    inputs: Sequence[Prepared] | None = None,
) -> Span:
    """The same run as `simulate` (same arguments, same errors), measured only for its
    makespan, whether it deadlocks, and its critical path: no races, memory, utilisation,
    events or deadlock report, which a search judging thousands of schedules does not
    read.  `inputs`, one per program, are the programs already prepared (a search's
    `Prepared.view`s of its one program); then `limits` and `profile` are not read."""
    with collector_paused():
        sim, _ = _run(programs, hw, limits, cache, mirror_peers, profile, False, inputs)
        makespan, last = last_to_end(sim)
        return Span(makespan, sim.finished < sim.total, critical_path(sim, last))


def span_task(hw: Hardware, works: list[OpWork], prep: Prepared) -> Span:
    """`simulate_span` of one rank whose inputs are prepared (a search's `Prepared.view`,
    with `works` its cache's `list(cache.works)`), its peers mirrored: a task a search sends
    to another process (`prep` pickles without its IR).  A rank alone mirrors its peers as
    `simulate_span(..., mirror_peers=True, inputs=[prep])` does."""
    with collector_paused():
        sim = Simulation([prep], hw, works, False)
        sim.run()
        makespan, last = last_to_end(sim)
        return Span(makespan, sim.finished < sim.total, critical_path(sim, last))


def _run(
    programs: Sequence[Program],
    hw: Hardware,
    limits: CoreLimitFn | None,
    cache: SimCache | None,
    mirror_peers: bool,
    profile: Profile | None,
    memory: bool,
    inputs: Sequence[Prepared] | None = None,
) -> tuple[Simulation, list[Prepared]]:
    """Check `programs`, read them (once per distinct program; what memory needs only
    with `memory`, which also keeps the ops' core steps) and run them; the finished (or
    stuck) simulation and the distinct programs' inputs."""
    if not programs:
        raise ValueError("simulate needs at least one program (one per rank)")
    if cache is None:
        cache = SimCache(hw)
    elif cache.hw is not hw and cache.hw != hw:
        raise ValueError(f"the SimCache was made for {cache.hw.name}, not {hw.name}")
    # One rank has no peer to differ from, and with `mirror_peers` no group is partial: a
    # search judging one rank's schedules skips reading the collectives.
    if len(programs) > 1 or not mirror_peers:
        # Ranks that run one program share one list (`mismatched_pairs` keys it once).
        of_prog: dict[int, list[CollectiveOp]] = {}
        for prog in programs:
            if id(prog) not in of_prog:
                of_prog[id(prog)] = [op for op in prog.ops if isinstance(op, CollectiveOp)]
        per_rank = [of_prog[id(prog)] for prog in programs]
        mismatched = mismatched_pairs(per_rank, len(programs))
        if mismatched:
            raise ValueError(mismatched[0].describe())
        if not mirror_peers:
            partial = partial_groups(per_rank, len(programs))
            if partial:
                raise ValueError(
                    partial[0].describe() + "; simulate every rank, or pass mirror_peers=True"
                )
    if inputs is not None:
        if len(inputs) != len(programs):
            raise ValueError(f"{len(inputs)} prepared inputs for {len(programs)} programs")
        sim = Simulation(list(inputs), hw, list(cache.works), memory)
        sim.run()
        return sim, list({id(p): p for p in inputs}.values())
    if limits is None:
        for prog in {id(p): p for p in programs}.values():
            refuse_unlowered_scopes(prog)
    limit_fn = limits if limits is not None else coreset_limit
    prepared: dict[int, Prepared] = {}
    preps: list[Prepared] = []
    for prog in programs:
        prep = prepared.get(id(prog))
        if prep is None:
            prep = prepared[id(prog)] = Prepared(prog, hw, limit_fn, cache, profile, memory)
        preps.append(prep)
    sim = Simulation(preps, hw, list(cache.works), memory)
    sim.run()
    return sim, list(prepared.values())
