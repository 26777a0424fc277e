"""`stream-partition{mode=ios}`: IOS's dynamic program over stages (npuir.schedule.ios).

The DP is checked against a brute force over every stage sequence (with a made-up stage
latency, so the check is of the search, not of the simulator); the stages it returns are
checked against IOS's rules; the mode's schedules are lowered, checked and run numerically."""

from __future__ import annotations

import contextlib
import functools
import io
import itertools
import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from workloads import DagConfig, random_dag
from xdsl.dialects.func import FuncOp

import npuir
from npuir.analysis.partition import Mode, assign, collective_chain, with_collective_chain
from npuir.analysis.program import NodeKind, Program, build_program
from npuir.backends.npu.hardware import load_hardware
from npuir.dialects.npu import CollectiveOp
from npuir.schedule.auto import cost_strategies
from npuir.schedule.ios import GROUP_OPS, STAGE_GROUPS, PartSearch, ios_stages
from npuir.tools.run import run

HW = load_hardware("910b2")
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
LOWER = "stream-partition{mode=ios},coreset-lower,insert-events,coreset-check,sync-verify"


def _prog(text: str) -> Program:
    module = npuir.parse_text(npuir.make_context(), text)
    return build_program(next(op for op in module.ops if isinstance(op, FuncOp)))


def _dag(seed: int, ops: int, comm: float = 0.08) -> Program:
    return _prog(random_dag(seed, DagConfig(ops=ops, rows=256, cols=512, comm_rate=comm)))


def _components(nodes: frozenset[int], deps: Sequence[Sequence[int]]) -> list[set[int]]:
    """The weakly connected components of `nodes` under `deps` (written independently of
    the search's own bit masks)."""
    left, out = set(nodes), []
    while left:
        comp, todo = set(), [min(left)]
        while todo:
            v = todo.pop()
            if v in comp:
                continue
            comp.add(v)
            todo += [p for p in deps[v] if p in nodes]
            todo += [u for u in nodes if v in deps[u]]
        out.append(comp)
        left -= comp
    return out


Stages = tuple[tuple[int, ...], ...]


def _brute_force(
    n: int, deps: Sequence[Sequence[int]], cost: Callable[[Stages], int], groups: int
) -> int:
    """The least summed latency over every sequence of stages IOS allows, by enumerating
    every subset of the remaining ops as the last stage."""

    @functools.cache
    def best(state: frozenset[int]) -> int:
        if not state:
            return 0
        found = None
        for size in range(1, len(state) + 1):
            for ending in map(frozenset, itertools.combinations(sorted(state), size)):
                if any(p in ending for v in state - ending for p in deps[v]):
                    continue  # an op of the ending feeds one left for later
                comps = _components(ending, deps)
                if len(comps) > groups or any(len(c) > GROUP_OPS for c in comps):
                    continue
                stage = tuple(tuple(sorted(c)) for c in sorted(comps, key=min))
                total = best(state - ending) + cost(stage)
                found = total if found is None else min(found, total)
        assert found is not None
        return found

    return best(frozenset(range(n)))


@pytest.mark.parametrize("seed", range(6))
def test_dp_matches_brute_force(seed: int) -> None:
    """On random DAGs of 7 nodes and a stage latency that rewards some groupings and
    punishes others, the DP's optimum is the brute force's."""
    rng = random.Random(seed)
    n = 7
    deps = [[p for p in range(v) if rng.random() < 0.3] for v in range(n)]
    weight = [rng.randint(1, 9) for _ in range(n)]

    def latency(stage: tuple[tuple[int, ...], ...]) -> int:
        # A stage costs its longest group plus a sync, and a penalty for each pair of
        # groups whose weights' parities clash: neither "always more groups" nor "fewer".
        longest = max(sum(weight[v] for v in g) for g in stage)
        clash = sum(1 for a, b in itertools.combinations(stage, 2) if (sum(a) + sum(b)) % 3 == 0)
        return 10 * longest + 7 + 5 * clash

    for groups in (1, 2, STAGE_GROUPS):
        search = PartSearch(range(n), deps, groups, latency)
        stages = search.solve()
        assert sum(s.latency for s in stages) == _brute_force(n, deps, latency, groups)
        assert sorted(v for s in stages for g in s.groups for v in g) == list(range(n))


def test_stages_keep_ios_rules() -> None:
    """Every compute node in one stage; each group a connected chain of at most s ops in
    topological order; at most r groups; a stage's ops depend only on earlier stages or on
    earlier ops of their group (the collectives' written order counted as an edge)."""
    prog = _dag(3, 12, comm=0.3)
    found = ios_stages(prog, HW)
    deps = [{p for p, _ in d} for d in with_collective_chain(prog).deps]
    compute = [n for n in range(len(prog)) if prog.kind[n] is NodeKind.COMPUTE]
    done: set[int] = set()
    seen: list[int] = []
    for stage in found.stages:
        assert 1 <= len(stage.groups) <= STAGE_GROUPS
        for group in stage.groups:
            assert 1 <= len(group) <= GROUP_OPS
            assert len(_components(frozenset(group), [list(d) for d in deps])) == 1
            for i, v in enumerate(group):
                assert deps[v] <= done | set(group[:i])
        for group in stage.groups:
            done |= set(group)
            seen += group
        assert stage.latency > 0
    assert sorted(seen) == compute
    assert found.latency == sum(s.latency for s in found.stages)


@pytest.mark.slow
def test_mode_keeps_collective_order_and_cap() -> None:
    """The mode's issue order keeps every group's collectives in written order, and it uses
    at most max-streams streams."""
    prog = _dag(5, 14, comm=0.3)
    strategies = cost_strategies(HW)
    colls = [n for n, op in enumerate(prog.ops) if isinstance(op, CollectiveOp)]
    assert len(colls) >= 2
    for cap in (1, 3, 8):
        result = assign(Mode.IOS, prog, [None] * len(prog), {}, cap, strategies=strategies)
        assert len(result.streams) <= cap
        order = result.order or list(range(len(prog)))
        position = {n: i for i, n in enumerate(order)}
        for earlier, later in collective_chain([prog.ops[n] for n in colls]):
            assert position[colls[earlier]] < position[colls[later]]
        assert order[-1] == len(prog) - 1 and prog.kind[order[-1]] is NodeKind.RETURN


def _run(path: Path, *args: str) -> dict[str, object]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = run([str(path), "--pipeline", LOWER, "--check", "--json", *args])
    report = json.loads(out.getvalue())
    assert code == 0, report
    return report


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "args"),
    [("seed_multistream.mlir", ()), ("core_limit_fixed.mlir", ("--entries", "rank0,rank1"))],
)
def test_examples_check(name: str, args: tuple[str, ...]) -> None:
    """The examples lowered with mode=ios pass coreset-check and sync-verify, and compute
    what the unscheduled program computes (`--check`)."""
    report = _run(EXAMPLES / name, *args)
    assert report["check"] == {"passed": True, "mismatches": []}
