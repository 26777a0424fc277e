"""The stream assignment modes of `npuir.analysis.partition`, and the pass that
writes them: what each mode decides on small graphs, that pins and
`max-streams` hold in every mode, and that every mode's output goes through
`insert-events` and `sync-verify` race-free."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from randgraph import random_annotated_graph
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

import npuir
from npuir.analysis.happens_before import HappensBefore
from npuir.analysis.partition import (
    STRATEGIES,
    Assignment,
    assign,
    max_matching,
    path_cover,
    pinned_tags,
    transitive_reduction,
)
from npuir.analysis.program import NodeKind, Program, build_program, module_streams
from npuir.backends.npu.hardware import load_hardware
from npuir.dialects import stream
from npuir.schedule.auto import cost_strategies

MAIN = stream.MAIN_TAG
T = "tensor<8x8xf16>"
BASELINES = ("user", "ge", "engine", "nimble")
COSTED = ("minidag:loadbalance", "minidag:mainstream", "minidag:weighted", "opara")
"""The cost-aware baselines (`mode:variant`), from `npuir.schedule`."""
TABLE = {**STRATEGIES, **cost_strategies(load_hardware("910b2"))}


def _module(text: str) -> tuple[npuir.NpuirContext, ModuleOp]:
    ctx = npuir.make_context(collect_diagnostics=True)
    return ctx, npuir.parse_text(ctx, text)


def _func(module: ModuleOp, name: str | None = None) -> FuncOp:
    return next(
        op
        for op in module.ops
        if isinstance(op, FuncOp) and (name is None or op.sym_name.data == name)
    )


def _program(text: str) -> tuple[Program, list[str | None], dict[str, int]]:
    _, module = _module(text)
    func = _func(module)
    prog = build_program(func)
    pinned, priorities = pinned_tags(prog)
    return prog, pinned, priorities


def _by_name(prog: Program, result: Assignment) -> dict[str, str]:
    """Result name (or op name) -> stream tag."""
    out: dict[str, str] = {}
    for n, op in enumerate(prog.ops):
        key = op.results[0].name_hint if op.results and op.results[0].name_hint else op.name
        out[key] = result.streams[result.stream_of[n]].tag
    return out


def _free(text: str, mode: str, max_streams: int = 8, **kw: int) -> dict[str, str]:
    prog, _, _ = _program(text)
    return _by_name(prog, assign(mode, prog, [None] * len(prog), {}, max_streams, **kw))


def _func_text(body: str, args: str = f"%x: {T}, %y: {T}", ret: str = "%x") -> str:
    lines = "\n".join(f"  {line}" for line in body.strip().splitlines())
    rets = ", ".join(T for _ in ret.split(","))
    return f"func.func @f({args}) -> ({rets}) {{\n{lines}\n  func.return {ret} : {rets}\n}}\n"


def _un(op: str, x: str) -> str:
    return f"%{op}_{x[1:]} = npu.{op} {x} : ({T}) -> {T}"


# --------------------------------------------------------------------------
# ge
# --------------------------------------------------------------------------

GE_GRAPH = _func_text(
    f"""
%a = npu.matmul %x, %y : ({T}, {T}) -> {T}
%r = npu.all_reduce %a {{group_size = 2 : i64}} : ({T}) -> {T}
%b = npu.relu %x : ({T}) -> {T}
%c = npu.add %r, %b : ({T}, {T}) -> {T}
%d = npu.exp %c : ({T}) -> {T}
""",
    ret="%d",
)


def test_ge_puts_communication_on_its_own_stream_and_ai_core_work_after_its_producer() -> None:
    tags = _free(GE_GRAPH, "ge")
    assert tags == {
        "a": MAIN,
        "r": "comm",
        "b": MAIN,
        "c": MAIN,
        "d": MAIN,
        "func.return": MAIN,
    }


# a feeds two collectives and two AI Core subgraphs that cannot merge with it
# (each also depends on a collective, a second path): b and c both follow a,
# so a's stream continues only one chain.
GE_FORK = _func_text(
    f"""
%a = npu.matmul %x, %y : ({T}, {T}) -> {T}
%h1 = npu.all_reduce %a {{group_size = 2 : i64}} : ({T}) -> {T}
%h2 = npu.all_gather %a {{group_size = 2 : i64}} : ({T}) -> tensor<16x8xf16>
%b = npu.add %a, %h1 : ({T}, {T}) -> {T}
%b2 = npu.relu %b : ({T}) -> {T}
%s = npu.slice %h2 {{offsets = array<i64: 0, 0>, sizes = array<i64: 8, 8>}} : (tensor<16x8xf16>) -> {T}
%c = npu.add %a, %s : ({T}, {T}) -> {T}
""",
    ret="%b2, %c",
)


def test_ge_continues_one_chain_per_stream_when_parallel_streams_are_allowed() -> None:
    # With GE's default of one stream per engine, everything AI Core shares it.
    default = _free(GE_FORK, "ge")
    assert {default[k] for k in ("a", "b", "b2", "c")} == {MAIN}
    assert default["h1"] == default["h2"] == "comm"
    # With two, b cannot reuse a's stream (a's other successor c is AI Core
    # too), so it opens the second; its own successor b2 stays with it; c
    # opens the next one, which wraps round to the first.
    two = _free(GE_FORK, "ge", max_parallel=2)
    assert two["a"] == MAIN
    assert two["b"] == two["b2"] == "ge1"
    assert two["c"] == MAIN


def test_ge_keeps_a_pinned_collective_on_its_label() -> None:
    text = _func_text(
        f"""
%a = npu.relu %x : ({T}) -> {T}
%r = stream.switch "mine" -> {T} {{
  %q = npu.all_reduce %a {{group_size = 2 : i64}} : ({T}) -> {T}
  stream.yield %q : {T}
}}
%s = npu.all_reduce %a {{group_size = 2 : i64}} : ({T}) -> {T}
%b = npu.add %r, %s : ({T}, {T}) -> {T}
""",
        ret="%b",
    )
    prog, pinned, priorities = _program(text)
    tags = _by_name(prog, assign("ge", prog, pinned, priorities, 8))
    assert tags["q"] == "mine"
    assert tags["s"] == "comm"
    assert tags["a"] == tags["b"] == MAIN


# --------------------------------------------------------------------------
# engine
# --------------------------------------------------------------------------


def test_engine_groups_ops_by_engine_class_with_vector_on_the_default_stream() -> None:
    tags = _free(GE_GRAPH, "engine")
    assert tags["a"] == "cube"
    assert tags["r"] == "comm"
    assert tags["b"] == tags["c"] == tags["d"] == MAIN


def test_engine_without_vector_work_puts_the_first_class_on_the_default_stream() -> None:
    text = _func_text(
        f"""
%a = npu.matmul %x, %y : ({T}, {T}) -> {T}
%r = npu.all_reduce %a {{group_size = 2 : i64}} : ({T}) -> {T}
""",
        ret="%r",
    )
    tags = _free(text, "engine")
    assert tags["a"] == MAIN
    assert tags["r"] == "comm"


def test_engine_over_the_cap_folds_the_later_classes_into_the_default_stream() -> None:
    tags = _free(GE_GRAPH, "engine", max_streams=2)
    assert tags["r"] == "comm"  # communication has precedence
    assert tags["a"] == MAIN


# --------------------------------------------------------------------------
# nimble
# --------------------------------------------------------------------------

DIAMOND = _func_text(
    f"""
{_un("relu", "%x")}
{_un("exp", "%relu_x")}
{_un("neg", "%relu_x")}
%d = npu.add %exp_relu_x, %neg_relu_x : ({T}, {T}) -> {T}
""",
    ret="%d",
)


def _chains(n: int, length: int) -> str:
    body: list[str] = []
    rets: list[str] = []
    for c in range(n):
        prev = "%x"
        for i in range(length):
            body.append(f"%c{c}_{i} = npu.relu {prev} : ({T}) -> {T}")
            prev = f"%c{c}_{i}"
        rets.append(prev)
    return _func_text("\n".join(body), ret=", ".join(rets))


def test_nimble_covers_a_diamond_with_two_paths() -> None:
    prog, _, _ = _program(DIAMOND)
    free = [k is NodeKind.COMPUTE for k in prog.kind]
    assert path_cover(prog, free) == [[0, 1, 3], [2]]
    result = assign("nimble", prog, [None] * len(prog), {}, 8)
    assert [info.tag for info in result.streams] == [MAIN, "chain1"]


def test_nimble_gives_independent_chains_a_stream_each_and_merges_them_to_fit() -> None:
    prog, _, _ = _program(_chains(4, 3))
    none: list[str | None] = [None] * len(prog)
    result = assign("nimble", prog, none, {}, 8)
    assert len(result.streams) == 4
    for c in range(4):
        assert len({result.stream_of[3 * c + i] for i in range(3)}) == 1
    capped = assign("nimble", prog, none, {}, 2)
    assert len(capped.streams) == 2
    loads = [capped.stream_of[:-1].count(s) for s in range(2)]
    assert loads == [6, 6]  # sources go to the least-loaded stream
    for c in range(4):  # a path is never split
        assert len({capped.stream_of[3 * c + i] for i in range(3)}) == 1


def _brute_reduction(prog: Program, keep: list[bool]) -> list[set[int]]:
    n = len(prog)
    succ: list[set[int]] = [set() for _ in range(n)]
    for v, deps in enumerate(prog.deps):
        for p, _ in deps:
            succ[p].add(v)
    reach: list[set[int]] = [set() for _ in range(n)]
    for u in range(n - 1, -1, -1):
        for s in succ[u]:
            reach[u] |= {s} | reach[s]
    out: list[set[int]] = [set() for _ in range(n)]
    for u in range(n):
        if not keep[u]:
            continue
        kept = {v for v in reach[u] if keep[v]}
        out[u] = {v for v in kept if not any(v in reach[w] for w in kept if w != v)}
    return out


def test_transitive_reduction_of_a_small_dag() -> None:
    # a -> b -> c, a -> c, a -> d -> c: the edge a -> c is implied.
    text = _func_text(
        f"""
{_un("relu", "%x")}
{_un("exp", "%relu_x")}
%d = npu.neg %relu_x : ({T}) -> {T}
%c = npu.add %exp_relu_x, %relu_x : ({T}, {T}) -> {T}
%e = npu.add %c, %d : ({T}, {T}) -> {T}
""",
        ret="%e",
    )
    prog, _, _ = _program(text)
    # nodes: 0 a=relu, 1 b=exp, 2 d=neg, 3 c=add(b, a), 4 e=add(c, d)
    assert transitive_reduction(prog)[:5] == [[1, 2], [3], [4], [4], []]
    # Without b, a still reaches c only through... nothing else: a -> c stays.
    keep = [True, False, True, True, True, False]
    assert transitive_reduction(prog, keep)[:5] == [[2, 3], [], [4], [4], []]


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), num_ops=st.integers(1, 40))
def test_transitive_reduction_matches_brute_force(seed: int, num_ops: int) -> None:
    prog, _, _ = _program(random_annotated_graph(seed, num_ops))
    rng = random.Random(seed)
    keep = [k is NodeKind.COMPUTE and rng.random() < 0.7 for k in prog.kind]
    reduced = transitive_reduction(prog, keep)
    assert [set(r) for r in reduced] == _brute_reduction(prog, keep)


def _dense_reduction(prog: Program, keep: list[bool]) -> list[list[int]]:
    """The reduction as npuir first computed it: one absolute reachability
    bitset per node (N x N bits), kept as the oracle for the windowed one."""
    n_nodes = len(prog)
    work = [k is NodeKind.COMPUTE for k in prog.kind]
    succ: list[list[int]] = [[] for _ in range(n_nodes)]
    for n, deps in enumerate(prog.deps):
        if work[n]:
            for p, _ in deps:
                if work[p]:
                    succ[p].append(n)
    reach = [0] * n_nodes
    first_kept = [0] * n_nodes
    reduced: list[list[int]] = [[] for _ in range(n_nodes)]
    for u in range(n_nodes - 1, -1, -1):
        if not work[u]:
            continue
        r = f = 0
        for s in succ[u]:
            bit = 1 << s
            r |= reach[s] | bit
            f |= bit if keep[s] else first_kept[s]
        reach[u] = r
        if not keep[u]:
            first_kept[u] = f
            continue
        out: list[int] = []
        while f:
            low = f & -f
            v = low.bit_length() - 1
            out.append(v)
            f = (f ^ low) & ~reach[v]
        reduced[u] = out
    return reduced


def _dense_cover_size(prog: Program, keep: list[bool]) -> int:
    reduced = _dense_reduction(prog, keep)
    nodes = [n for n in range(len(prog)) if keep[n]]
    index = {n: i for i, n in enumerate(nodes)}
    return len(nodes) - _kuhn(len(nodes), [[index[v] for v in reduced[n]] for n in nodes])


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    num_ops=st.integers(1, 120),
    keep_rate=st.floats(0.3, 1.0),
    tags=st.integers(0, 3),
)
def test_path_cover_is_a_minimum_cover_of_the_dense_reduction(
    seed: int, num_ops: int, keep_rate: float, tags: int
) -> None:
    prog, _, _ = _program(random_annotated_graph(seed, num_ops, num_tags=tags))
    rng = random.Random(seed)
    keep = [k is NodeKind.COMPUTE and rng.random() < keep_rate for k in prog.kind]
    reduced = transitive_reduction(prog, keep)
    assert reduced == _dense_reduction(prog, keep)
    paths = path_cover(prog, keep)
    assert sorted(n for path in paths for n in path) == [n for n in range(len(prog)) if keep[n]]
    for path in paths:
        assert all(b in reduced[a] for a, b in itertools.pairwise(path))
    assert len(paths) == _dense_cover_size(prog, keep)


def _kuhn(num: int, adj: list[list[int]]) -> int:
    match_r = [-1] * num

    def augment(u: int, seen: set[int]) -> bool:
        for v in adj[u]:
            if v not in seen:
                seen.add(v)
                if match_r[v] < 0 or augment(match_r[v], seen):
                    match_r[v] = u
                    return True
        return False

    return sum(augment(u, set()) for u in range(num))


@settings(max_examples=100, deadline=None)
@given(
    num=st.integers(1, 25),
    density=st.floats(0.0, 0.5),
    seed=st.integers(0, 2**31),
)
def test_hopcroft_karp_finds_a_maximum_matching(num: int, density: float, seed: int) -> None:
    rng = random.Random(seed)
    adj = [[v for v in range(num) if rng.random() < density] for _ in range(num)]
    match = max_matching(num, adj)
    partners = [v for v in match if v >= 0]
    assert len(partners) == len(set(partners))
    assert all(v in adj[u] for u, v in enumerate(match) if v >= 0)
    assert len(partners) == _kuhn(num, adj)


# --------------------------------------------------------------------------
# Every mode: pins, the cap, and the API's errors
# --------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    num_ops=st.integers(1, 40),
    num_tags=st.integers(1, 4),
    cap=st.integers(1, 8),
)
def test_every_mode_keeps_pins_and_the_stream_cap(
    seed: int, num_ops: int, num_tags: int, cap: int
) -> None:
    prog, pinned, priorities = _program(random_annotated_graph(seed, num_ops, num_tags))
    needed = 1 + len(set(priorities) - {stream.MAIN_TAG})
    for name in BASELINES + COSTED:
        mode, _, variant = name.partition(":")
        variant = variant or "loadbalance"
        if needed > cap:
            with pytest.raises(ValueError, match="max-streams"):
                assign(mode, prog, pinned, priorities, cap, variant=variant, strategies=TABLE)
            continue
        result = assign(mode, prog, pinned, priorities, cap, variant=variant, strategies=TABLE)
        assert len(result.streams) <= cap
        assert result.streams[0].tag == stream.MAIN_TAG
        assert len(result.stream_of) == len(prog)
        assert result.stream_of[-1] == 0  # func.return
        tags = [info.tag for info in result.streams]
        assert len(tags) == len(set(tags))
        for n, tag in enumerate(pinned):
            if tag is not None:
                assert tags[result.stream_of[n]] == tag
            elif mode == "user":
                assert result.stream_of[n] == 0
            else:
                assert tags[result.stream_of[n]] not in priorities or result.stream_of[n] == 0
        free = assign(mode, prog, [None] * len(prog), {}, cap, variant=variant, strategies=TABLE)
        assert len(free.streams) <= cap
        if result.order is not None:  # a new issue order must stay topological, return last
            position = {n: i for i, n in enumerate(result.order)}
            assert sorted(result.order) == list(range(len(prog)))
            assert result.order[-1] == len(prog) - 1
            assert all(position[p] < position[n] for n in position for p, _ in prog.deps[n])


def test_assign_rejects_bad_input() -> None:
    prog, pinned, priorities = _program(DIAMOND)
    with pytest.raises(ValueError, match="is not one of: user, single, ge, engine, nimble"):
        assign("fastest", prog, pinned, priorities, 8)
    with pytest.raises(ValueError, match=">= 1"):
        assign("nimble", prog, pinned, priorities, 0)
    assert tuple(STRATEGIES) == ("user", "single", "ge", "engine", "nimble")
    with pytest.raises(ValueError, match="auto"):
        assign("auto", prog, pinned, priorities, 8)  # the pass runs auto, not the analysis


def test_made_streams_never_take_a_reserved_or_pinned_tag() -> None:
    prog, _, _ = _program(GE_GRAPH)
    none: list[str | None] = [None] * len(prog)
    result = assign("ge", prog, none, {}, 8, reserved={"comm"})
    assert [info.tag for info in result.streams] == [MAIN, "comm_"]


def test_pinned_tags_follow_the_issue_order_and_reject_two_priorities() -> None:
    text = _func_text(
        f"""
%a = npu.relu %x : ({T}) -> {T}
%r = stream.switch "outer" priority 2 -> {T} {{
  %b = npu.exp %a : ({T}) -> {T}
  %s = stream.switch "inner" -> {T} {{
    %c = npu.neg %b : ({T}) -> {T}
    stream.yield %c : {T}
  }}
  stream.yield %s : {T}
}}
""",
        ret="%r",
    )
    _, pinned, priorities = _program(text)
    assert pinned == [None, "outer", "inner", None]
    assert priorities == {"outer": 2, "inner": 0}
    bad = text.replace('"inner"', '"outer" priority 1')
    with pytest.raises(npuir.DiagnosticError, match="one stream has one priority"):
        _program(bad)


# --------------------------------------------------------------------------
# The pass
# --------------------------------------------------------------------------


def _lower(text: str, spec: str) -> tuple[npuir.NpuirContext, ModuleOp]:
    ctx, module = _module(text)
    npuir.run_passes(ctx, module, npuir.build_pipeline(spec))
    return ctx, module


def test_the_pass_shares_made_streams_and_keeps_them_off_user_tags() -> None:
    text = f"""
func.func @f(%x: {T}) -> {T} {{
  %r = stream.switch "comm" -> {T} {{
    %a = npu.relu %x : ({T}) -> {T}
    stream.yield %a : {T}
  }}
  func.return %r : {T}
}}
func.func @g(%x: {T}) -> {T} {{
  %a = npu.all_reduce %x {{group_size = 2 : i64}} : ({T}) -> {T}
  %b = npu.relu %a : ({T}) -> {T}
  func.return %b : {T}
}}
func.func @h(%x: {T}) -> {T} {{
  %a = npu.all_reduce %x {{group_size = 2 : i64}} : ({T}) -> {T}
  func.return %a : {T}
}}
"""
    _, module = _lower(text, "stream-partition{mode=ge}")
    assert [(info.symbol, info.tag) for info in module_streams(module)] == [
        ("s0", MAIN),
        ("s1", "comm"),
        ("s2", "comm_"),
    ]
    for name in ("g", "h"):
        first = next(iter(_func(module, name).body.block.ops))
        assert stream.stream_of(first) == "s2"


def test_the_pass_runs_a_dynamic_shape_function_on_one_stream_in_every_mode() -> None:
    text = """
func.func @f(%x: tensor<?x8xf16>) -> tensor<?x8xf16> {
  %a = npu.relu %x : (tensor<?x8xf16>) -> tensor<?x8xf16>
  %b = npu.all_reduce %x {group_size = 2 : i64} : (tensor<?x8xf16>) -> tensor<?x8xf16>
  %c = npu.add %a, %b : (tensor<?x8xf16>, tensor<?x8xf16>) -> tensor<?x8xf16>
  func.return %c : tensor<?x8xf16>
}
"""
    for mode in ("ge", "engine", "nimble"):
        ctx, module = _lower(text, f"stream-partition{{mode={mode}}}")
        assert len(module_streams(module)) == 1
        remarks = [d.message for d in ctx.diagnostics.drain()]
        assert any(f"mode={mode} is not applied" in m for m in remarks), remarks
        _, module = _lower(text, f"stream-partition{{mode={mode} dynamic-multi-stream=true}}")
        assert len(module_streams(module)) == 2


def test_the_pass_reports_user_tags_over_the_cap_at_the_scope() -> None:
    text = random_annotated_graph(3, 30, num_tags=3)
    with pytest.raises(npuir.DiagnosticError, match="max-streams=3"):
        _lower(text, "stream-partition{mode=nimble max-streams=3}")
    _, module = _lower(text, "stream-partition{mode=nimble max-streams=3 ignore-tags=true}")
    assert len(module_streams(module)) <= 3


def test_an_unknown_mode_lists_every_mode() -> None:
    with pytest.raises(
        npuir.UsageError, match="user, single, ge, engine, nimble, minidag, opara, auto"
    ):
        npuir.build_pipeline("stream-partition{mode=fastest}")


# --------------------------------------------------------------------------
# Every mode feeds insert-events: race-free and verified
# --------------------------------------------------------------------------


def _race_free(text: str, spec: str) -> ModuleOp:
    ctx, module = _module(text)
    npuir.run_passes(ctx, module, npuir.build_pipeline(spec))
    prog = build_program(_func(module), module_streams(module))
    needed = [(prog.ops[p], prog.ops[n]) for n, deps in enumerate(prog.deps) for p, _ in deps]
    npuir.run_passes(ctx, module, npuir.build_pipeline("insert-events,sync-verify"))
    lowered = build_program(_func(module), module_streams(module))
    hb = HappensBefore(lowered).run()
    index = lowered.index
    assert all(hb.ordered(index[p], index[n]) for p, n in needed)
    assert not hb.unjoined()
    return module


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    num_ops=st.integers(1, 30),
    num_tags=st.integers(1, 4),
    mode=st.sampled_from(BASELINES + COSTED),
    ignore=st.booleans(),
    cap=st.integers(5, 8),
)
def test_every_mode_lowers_race_free_through_insert_events(
    seed: int, num_ops: int, num_tags: int, mode: str, ignore: bool, cap: int
) -> None:
    text = random_annotated_graph(seed, num_ops, num_tags)
    mode, _, variant = mode.partition(":")
    spec = (
        f"stream-partition{{mode={mode} variant={variant or 'loadbalance'} max-streams={cap} "
        f"ignore-tags={str(ignore).lower()}}}"
    )
    module = _race_free(text, spec)
    assert len(module_streams(module)) <= cap


@pytest.mark.parametrize("mode", BASELINES + COSTED)
@pytest.mark.parametrize(
    "example",
    [
        "seed_multistream.mlir",
        "multi_branch.mlir",
        "moe_decode.mlir",
        "tp_decoder_decode.mlir",
        "core_limit_fixed.mlir",
    ],
)
def test_every_mode_lowers_the_examples(mode: str, example: str) -> None:
    from pathlib import Path

    path = Path(__file__).parents[3] / "examples" / example
    if not path.exists():
        pytest.skip(f"{example} is not in this checkout")
    ctx, module = _module(path.read_text())
    mode, _, variant = mode.partition(":")
    spec = (
        f"stream-partition{{mode={mode} variant={variant or 'loadbalance'}}},"
        "coreset-lower,insert-events,sync-verify"
    )
    npuir.run_passes(ctx, module, npuir.build_pipeline(spec))
    assert len(module_streams(module)) <= 8
