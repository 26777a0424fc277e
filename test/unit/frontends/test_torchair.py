"""`npuir.torchair`: models written with TorchAir's names give the programs the examples hold.

The seed model, the two-card core-limit deadlock and the gears example are
built with the API and lowered with `npu-default`; their lowered programs
must be the examples' own, op for op (same ops per stream, same waits, same
limits), ignoring locations and SSA names.  Mistakes raise `TorchairError`
located at the test's own line.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp, SymbolRefAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, SSAValue

import npuir
from npuir import torchair
from npuir.diagnostics import Kind
from npuir.dialects import coreset, gear, stream, sync, validation
from npuir.driver.run import RUN_PIPELINE
from npuir.passmanager.pipeline import configured_pipeline
from npuir.torchair import ops

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
HERE = str(Path(__file__).resolve())


def _lower(module: ModuleOp, pipeline: str = "npu-default") -> ModuleOp:
    ctx = npuir.make_context()
    npuir.run_passes(ctx, module, npuir.build_pipeline(pipeline))
    return module


def _example(name: str) -> ModuleOp:
    return npuir.parse_file(npuir.make_context(), EXAMPLES / name)


def _structure(module: ModuleOp) -> list[object]:
    """The program without names or locations: streams by tag, values by position."""
    tags = {op.symbol: op.tag.data for op in module.ops if isinstance(op, stream.DeclOp)}

    def norm(attr: Attribute) -> object:
        if isinstance(attr, SymbolRefAttr) and attr.root_reference.data in tags:
            return ("stream", tags[attr.root_reference.data])
        return attr

    out: list[object] = []
    for top in module.ops:
        if isinstance(top, stream.DeclOp):
            out.append(("decl", top.tag.data, top.priority_value))
            continue
        if not isinstance(top, FuncOp):
            out.append((top.name, sorted(top.properties.items()), sorted(top.attributes.items())))
            continue
        refs: dict[SSAValue, object] = {a: ("arg", i) for i, a in enumerate(top.args)}
        body: list[object] = []
        for k, op in enumerate(top.body.walk()):
            for j, r in enumerate(op.results):
                refs[r] = (k, j)
            body.append(
                (
                    op.name,
                    tuple(refs[v] for v in op.operands),
                    tuple(r.type for r in op.results),
                    sorted((n, norm(a)) for n, a in op.properties.items()),
                    sorted((n, norm(a)) for n, a in op.attributes.items()),
                )
            )
        out.append((top.sym_name.data, top.function_type, top.arg_attrs, top.attributes, body))
    return out


def _count(module: ModuleOp, kind: type) -> int:
    return sum(isinstance(op, kind) for op in module.walk())


def _line_of_next_statement() -> int:
    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    return frame.f_back.f_lineno + 1


# --------------------------------------------------------------------------
# The examples, built with the API
# --------------------------------------------------------------------------


def seed_model() -> torchair.Graph:
    """The seed documents' model, written as the seed writes it."""
    g = torchair.Graph("forward")
    in1, in2, in3, in4 = (g.input((1000, 1000), "f16") for _ in range(4))
    add_result = ops.add(in1, in2)
    with torchair.scope.npu_stream_switch("1"):
        torchair.scope.npu_wait_tensor(in4, add_result)
        mm_result = ops.mm(in3, in4)
    mm1 = ops.mm(in3, in4)
    with torchair.scope.npu_stream_switch("2"):
        torchair.scope.npu_wait_tensor(in4, mm_result)
        add2 = ops.add(in3, in4)
    g.output(add_result, mm_result, mm1, add2)
    return g


def test_seed_model_lowers_to_the_example_program() -> None:
    built = _lower(seed_model().module)
    expected = _lower(_example("seed_multistream.mlir"))
    assert _structure(built) == _structure(expected)
    assert _count(built, stream.DeclOp) == 3
    assert _count(built, sync.WaitOp) == 3


def test_seed_model_before_lowering_matches_the_example() -> None:
    assert _structure(seed_model().module) == _structure(_example("seed_multistream.mlir"))


def _rank(p: torchair.Program, name: str, order: list[str]) -> None:
    g = p.graph(name)
    x, y = g.input((4096, 1024), "f16"), g.input((4096, 1024), "f16")
    mask = g.input((64, 512), "f16")
    made: dict[str, torchair.Tensor] = {}
    for what in order:
        with torchair.scope.npu_stream_switch(what):
            if what == "rs":
                with torchair.scope.limit_core_num(24, 16):
                    made[what] = ops.reduce_scatter(x, 2, mode="aiv", group="rs")
            elif what == "dc":
                with torchair.scope.limit_core_num(24, 24):
                    made[what] = ops.all_to_all(y, 2, mode="aiv", group="dc")
            else:
                made[what] = ops.nonzero(mask)
    g.output(made["rs"], made["dc"], made["nz"])


def deadlock_program() -> torchair.Program:
    p = torchair.Program()
    _rank(p, "rank0", ["rs", "nz", "dc"])
    _rank(p, "rank1", ["dc", "nz", "rs"])
    return p


def test_two_card_deadlock_lowers_to_the_example_program() -> None:
    # The seed's program breaks the pair rule (that is why it deadlocks): lower it as
    # npuir-run does, the rule a warning.
    built = _lower(deadlock_program().module, RUN_PIPELINE)
    expected = _lower(_example("core_limit_deadlock.mlir"), RUN_PIPELINE)
    assert _structure(built) == _structure(expected)
    funcs = [op for op in built.ops if isinstance(op, FuncOp)]
    assert [f.sym_name.data for f in funcs] == ["rank0", "rank1"]


def test_limit_core_num_gives_a_limit_scope_per_collective() -> None:
    module = deadlock_program().module
    limits = [op for op in module.walk() if isinstance(op, coreset.LimitOp)]
    assert sorted(op.count("vector") for op in limits) == [16, 16, 24, 24]


def gears_model(config: torchair.CompilerConfig | None = None) -> torchair.Graph:
    g = torchair.Graph("forward", config=config)
    x1, x2 = g.input((None, 2), "f32"), g.input((None, 2), "f32")
    torchair.inference.set_dim_gears(x1, {0: [2, 4]})
    torchair.inference.set_dim_gears(x2, {0: [2, 4]})
    g.output(ops.add(x1, x2))
    return g


def test_gears_model_lowers_to_the_example_program() -> None:
    built = _lower(gears_model().module)
    expected = _lower(_example("gears.mlir"))
    assert _structure(built) == _structure(expected)
    assert _count(built, gear.DispatchOp) == 1


def test_gear_policy_comes_from_the_config() -> None:
    config = torchair.CompilerConfig()
    config.inference_config.dynamic_gears_merge_policy = "product"
    func = gears_model(config).module.body.block.first_op
    assert isinstance(func, FuncOp)
    assert gear.policy_of(func.attributes) == "product"


def test_set_dim_gears_makes_an_unused_static_dim_dynamic() -> None:
    g = torchair.Graph("f")
    x = g.input((8, 2), "f32")
    torchair.inference.set_dim_gears(x, {0: [2, 4]})
    g.output(ops.relu(x))
    func = g.module.body.block.first_op
    assert isinstance(func, FuncOp)
    assert str(func.function_type.inputs.data[0]) == "tensor<?x2xf32>"
    assert x.shape == (None, 2)


# --------------------------------------------------------------------------
# Scopes, configs, programs
# --------------------------------------------------------------------------


def test_values_leave_nested_scopes_through_every_yield() -> None:
    g = torchair.Graph("f")
    x = g.input((4, 8), "f16")
    with torchair.scope.npu_stream_switch("1", 2):
        with torchair.scope.limit_core_num(2, 4):
            inner = ops.relu(x)
        unused = ops.exp(x)
    g.output(ops.add(inner, x))
    assert unused.shape == (4, 8)
    text = g.text()
    assert 'stream.switch "1" priority 2 -> tensor<4x8xf16>' in text
    assert "coreset.limit cube 2 vector 4 -> tensor<4x8xf16>" in text
    switch = next(op for op in g.module.walk() if isinstance(op, stream.SwitchOp))
    # Only the value used after the scope is yielded, not the unused exp.
    assert len(switch.results) == 1


def test_a_wait_orders_later_uses_in_its_scope_only() -> None:
    g = torchair.Graph("f")
    a, b = g.input((4, 4), "f16"), g.input((4, 4), "f16")
    s = ops.add(a, a)
    with torchair.scope.npu_stream_switch("1"):
        torchair.scope.npu_wait_tensor(b, s)
        inside = ops.mul(b, b)
    outside = ops.sub(b, b)
    g.output(inside, outside)
    module = g.module
    wait = next(op for op in module.walk() if isinstance(op, stream.WaitTensorOp))
    mul = next(op for op in module.walk() if op.name == "npu.mul")
    sub = next(op for op in module.walk() if op.name == "npu.sub")
    assert list(mul.operands) == [wait.result, wait.result]
    assert list(sub.operands) == [b.value, b.value]


def test_compiler_config_global_cores_and_stream_limit() -> None:
    config = torchair.CompilerConfig()
    config.ge_config.aicore_num = "20|40"
    g = torchair.Graph("f", config=config)
    x = g.input((4, 8), "f16")
    torchair.scope.set_stream_limit("1", 3, -1)
    with torchair.scope.npu_stream_switch("1"):
        y = ops.relu(x)
    g.output(y)
    module = g.module
    assert module.attributes[coreset.GLOBAL] == coreset.CoresAttr(20, 40)
    (limit,) = [op for op in module.walk() if isinstance(op, coreset.StreamLimitOp)]
    assert (limit.tag.data, limit.count("cube"), limit.count("vector")) == ("1", 3, None)
    _lower(module)


def _limits_by_op(module: ModuleOp) -> dict[str, dict[str, int]]:
    """Each npu op's effective core limits (`npuir.analysis.core_limits`), by op name."""
    from npuir.analysis.core_limits import CoreLimits
    from npuir.backends.npu.hardware import load_hardware
    from npuir.dialects.npu import NpuOp

    limits = CoreLimits(module, load_hardware("910b2")).run()
    return {op.name: limits.of(op) for op in module.walk() if isinstance(op, NpuOp)}


def test_set_stream_limit_limits_only_the_ops_issued_after_it() -> None:
    g = torchair.Graph("f")
    x = g.input((64, 64), "f16")
    with torchair.scope.npu_stream_switch("1"):
        before = ops.matmul(x, x)  # issued before the call: not limited by it
    torchair.scope.set_stream_limit("1", 3, 8)
    assert torchair.scope.get_stream_limit("1") == {"cube_core_num": 3, "vector_core_num": 8}
    with torchair.scope.npu_stream_switch("1"):
        after = ops.relu(x)
        with torchair.scope.limit_core_num(2, 40):  # the op's own scope still wins
            scoped = ops.exp(x)
    torchair.scope.reset_stream_limit("1")
    assert torchair.scope.get_stream_limit("1") == {"cube_core_num": 24, "vector_core_num": 48}
    with torchair.scope.npu_stream_switch("1"):
        reset = ops.neg(x)
    g.output(before, after, scoped, reset)
    module = g.module
    assert _limits_by_op(module) == {
        "npu.matmul": {"cube": 24, "vector": 48},
        "npu.relu": {"cube": 3, "vector": 8},
        "npu.exp": {"cube": 2, "vector": 40},
        "npu.neg": {"cube": 24, "vector": 48},
    }
    assert _count(module, coreset.StreamLimitOp) == 0  # the limit changed: per-op limits
    _lower(module)


def test_one_limit_for_a_whole_stream_stays_one_stream_limit() -> None:
    config = torchair.CompilerConfig()
    config.ge_config.aicore_num = "20|40"
    g = torchair.Graph("f", config=config)
    x = g.input((64, 64), "f16")
    assert torchair.scope.get_stream_limit("1") == {"cube_core_num": 20, "vector_core_num": 40}
    torchair.scope.set_stream_limit("1", 3, -1)
    assert torchair.scope.get_stream_limit("1") == {"cube_core_num": 3, "vector_core_num": 40}
    with torchair.scope.npu_stream_switch("1"):
        y = ops.relu(x)
    z = ops.exp(x)  # on the main stream: no stream limit
    g.output(y, z)
    module = g.module
    assert _count(module, coreset.StreamLimitOp) == 1 and _count(module, coreset.LimitOp) == 0
    assert _limits_by_op(module) == {
        "npu.relu": {"cube": 3, "vector": 40},
        "npu.exp": {"cube": 20, "vector": 40},
    }
    g = torchair.Graph("layers")  # the same limit set again before each layer: still one
    x = g.input((64, 64), "f16")
    for _ in range(2):
        torchair.scope.set_stream_limit("1", 3, 8)
        with torchair.scope.npu_stream_switch("1"):
            x = ops.relu(x)
    g.output(x)
    assert _count(g.module, coreset.StreamLimitOp) == 1 and _count(g.module, coreset.LimitOp) == 0


def test_reduce_overhead_takes_stream_scopes_and_lowers_to_capture_mode() -> None:
    """npugraph_ex captures multi-stream graphs (its multi_stream.md): reduce-overhead takes
    a stream scope and core limits, and its pipeline forks and joins the side stream."""
    config = torchair.CompilerConfig()
    config.mode = "reduce-overhead"
    g = torchair.Graph("f", config=config)
    x = g.input((4, 8), "f16")
    with torchair.scope.npu_stream_switch("1"):
        y = ops.relu(x)
    with torchair.scope.limit_core_num(6, 12):  # core limits work in both modes
        z = ops.exp(y)
    g.output(z)
    module = g.module
    assert _count(module, stream.SwitchOp) == 1 and _count(module, coreset.LimitOp) == 1
    assert config.pipeline_name() == "npu-capture"
    ctx = npuir.make_context()
    npuir.run_passes(ctx, module, npuir.build_pipeline(config.pipeline_name()))
    side = [
        d.sym_name.data for d in module.ops if isinstance(d, stream.DeclOp) and d.tag.data == "1"
    ]
    waits = [op.stream_name for op in module.walk() if isinstance(op, sync.WaitOp)]
    records = [op.stream_name for op in module.walk() if isinstance(op, sync.RecordOp)]
    assert side and side[0] in waits and side[0] in records  # forked, and joined


def test_reduce_overhead_warns_on_what_does_not_take_effect_there() -> None:
    """TorchAir's `_check_config_support`: GE options and gears in reduce-overhead mode are
    one warning naming them (and they set no pass option there)."""
    config = torchair.CompilerConfig()
    config.ge_config.enable_single_stream = True
    config.ge_config.aicore_num = "20|40"
    assert config.capture_warning() is None  # max-autotune: they take effect
    config.mode = "reduce-overhead"
    message = config.capture_warning(gears=True)
    assert message is not None and "reduce-overhead mode" in message
    for named in ("enable_single_stream:True", "aicore_num:20|40", "set_dim_gears"):
        assert named in message
    assert config.pass_options().get("stream-partition", {}).get("mode") != "single"
    g = torchair.Graph("f", config=config)
    x = g.input((4, 8), "f16")
    g.output(ops.relu(x))
    with pytest.warns(UserWarning, match="may not take effect"):
        module = g.module
    assert coreset.GLOBAL not in module.attributes  # GE's aicore_num sets nothing here


def test_enable_single_stream_chooses_the_single_stream_pipeline() -> None:
    config = torchair.CompilerConfig()
    config.ge_config.enable_single_stream = True
    g = torchair.Graph("f", config=config)
    x = g.input((4, 8), "f16")
    g.output(ops.exp(ops.relu(x)))
    assert config.pass_options() == {"stream-partition": {"mode": "single"}}
    pipeline = configured_pipeline("npu-default", config.pass_options())
    assert "stream-partition{mode=single}" in pipeline
    lowered = _lower(g.module, pipeline)
    assert _count(lowered, stream.DeclOp) == 1


def test_every_op_is_located_at_the_line_that_made_it() -> None:
    g = torchair.Graph("f")
    x = g.input((4, 8), "f16")
    line = _line_of_next_statement()
    y = ops.silu(x)
    g.output(y)
    op = y.value.owner
    g.module  # noqa: B018 - building the module must keep the location
    assert isinstance(op.location, FileLineColLoc)
    assert (op.location.filename.data, op.location.line.data) == (HERE, line)


def test_every_op_has_a_builder_and_infers_its_type() -> None:
    p = torchair.Program()
    g = p.graph("all")
    x = g.input((4, 8), "f16")
    w = g.input((16, 8), "f16")
    ids = g.input((3,), "i64")
    b3 = g.input((2, 4, 8), "f16")
    gamma = g.input((8,), "f16")
    outs = [
        ops.maximum(x, x),
        ops.div(ops.sub(x, x), ops.mul(x, x)),
        ops.neg(ops.sqrt(ops.rsqrt(ops.sigmoid(ops.gelu(x, approximate="tanh"))))),
        ops.to(x, "float32"),
        ops.linear(x, w),
        ops.linear(b3, w),
        ops.bmm(b3, ops.transpose(b3, 1, 2)),
        ops.matmul(b3, ops.permute(x, (1, 0))),
        ops.softmax(ops.rms_norm(x, gamma), dim=-1),
        ops.swiglu(x),
        ops.sum(x, 1, keepdim=True),
        ops.amax(x, dim=0),
        ops.view(x, (-1,)),
        ops.cat([x, x], dim=0),
        ops.slice(x, 1, 2, -1),
        ops.narrow(x, 0, 1, 2),
        ops.index_select(x, 0, ids),
        ops.embedding(ids, x),
        *ops.topk(x, 3),
        ops.nonzero(x),
        ops.all_reduce(x, 2),
        ops.reduce_scatter(x, 2),
        ops.all_gather(x, 2),
        ops.all_to_all(x, 2, mode="aiv", group="ep"),
        x @ ops.transpose(x, 0, 1) + ops.exp(x @ ops.transpose(x, 0, 1)),
    ]
    g.output(*outs)
    shapes = [o.shape for o in outs]
    assert shapes[4] == (4, 16) and shapes[5] == (2, 4, 16) and shapes[6] == (2, 4, 4)
    assert shapes[7] == (2, 4, 4) and shapes[10] == (4, 1) and shapes[11] == (8,)
    assert shapes[12] == (32,) and shapes[13] == (8, 8) and shapes[14] == (4, 5)
    assert shapes[15] == (2, 8) and shapes[16] == (3, 8) and shapes[17] == (3, 8)
    assert outs[3].dtype == "f32" and outs[19].dtype == "i64" and shapes[20] == (None, 2)
    assert shapes[22] == (2, 8) and shapes[23] == (8, 8)
    _lower(p.module)


# --------------------------------------------------------------------------
# Errors name the user's file and line
# --------------------------------------------------------------------------


def _raises_here(line: int, match: str) -> pytest.RaisesContext[torchair.TorchairError]:
    return pytest.raises(torchair.TorchairError, match=rf"^{HERE}:{line}:\d+: error: .*{match}")


def test_a_shape_error_names_the_users_line() -> None:
    g = torchair.Graph("f")
    a, b = g.input((4, 8), "f16"), g.input((4, 8), "f16")
    with _raises_here(_line_of_next_statement(), "inner dimensions differ"):
        ops.mm(a, b)
    # The failed op left nothing behind: the graph still builds.
    g.output(ops.add(a, b))
    assert g.module is not None


def test_a_failed_broadcast_through_an_operator_names_the_users_line() -> None:
    g = torchair.Graph("f")
    a, b = g.input((4, 8), "f16"), g.input((3, 8), "f16")
    with _raises_here(_line_of_next_statement(), "do not broadcast"):
        a + b


@pytest.mark.parametrize(
    ("call", "kind"),
    [
        (lambda: torchair.scope.npu_stream_switch(1), validation.TAG_TYPE),
        (lambda: torchair.scope.npu_stream_switch("1", -1), validation.PRIORITY_NEGATIVE),
        (lambda: torchair.scope.limit_core_num(0, 8), validation.CORE_COUNT_LOW),
        (lambda: torchair.scope.set_stream_limit("1", 0, 4), validation.CORE_COUNT_LOW),
        (lambda: torchair.scope.get_stream_limit(7), validation.TAG_TYPE),
        (lambda: torchair.scope.reset_stream_limit(""), validation.TAG_EMPTY),
    ],
)
def test_bad_scope_arguments_name_the_users_line(call: object, kind: Kind) -> None:
    torchair.Graph("f")
    line = inspect.getsourcelines(call)[1]  # type: ignore[arg-type]
    with pytest.raises(torchair.TorchairError, match=rf"^{HERE}:{line}:\d+: error: ") as info:
        call()  # type: ignore[operator]
    assert info.value.diagnostic.kind == kind.code


def test_bad_config_values_are_refused() -> None:
    config = torchair.CompilerConfig()
    with _raises_here(_line_of_next_statement(), "aicore_num must be"):
        config.ge_config.aicore_num = "20,40"
    with _raises_here(_line_of_next_statement(), "must be True or False"):
        config.ge_config.enable_single_stream = "yes"
    with _raises_here(_line_of_next_statement(), '"zip" or "product"'):
        config.inference_config.dynamic_gears_merge_policy = "cartesian"


def test_bad_gears_are_refused() -> None:
    g = torchair.Graph("f")
    x = g.input((None, 2), "f32")
    with _raises_here(_line_of_next_statement(), "must be in \\[0, 1\\]"):
        torchair.inference.set_dim_gears(x, {2: [2, 4]})
    with _raises_here(_line_of_next_statement(), "between 2 and 100"):
        torchair.inference.set_dim_gears(x, {0: [2]})
    with _raises_here(_line_of_next_statement(), "gear value 1"):
        torchair.inference.set_dim_gears(x, {0: [1, 4]})
    torchair.inference.set_dim_gears(x, {0: [2, 4]})
    with _raises_here(_line_of_next_statement(), "already has dim gears"):
        torchair.inference.set_dim_gears(x, {0: [2, 8]})
    y = g.input((8, 2), "f32")
    ops.relu(y)
    with _raises_here(_line_of_next_statement(), "already used"):
        torchair.inference.set_dim_gears(y, {0: [2, 4]})


def test_tensors_of_another_graph_are_refused() -> None:
    p = torchair.Program()
    g0 = p.graph("rank0")
    x0 = g0.input((4,), "f16")
    p.graph("rank1")
    with _raises_here(_line_of_next_statement(), "belongs to graph 'rank0'"):
        ops.relu(x0)
    with _raises_here(_line_of_next_statement(), "already has a graph named 'rank1'"):
        p.graph("rank1")
    with g0:
        g0.output(ops.relu(x0))


def test_bad_inputs_and_outputs_are_refused() -> None:
    g = torchair.Graph("f")
    with _raises_here(_line_of_next_statement(), "unsupported dtype 'f8'"):
        g.input((4,), "f8")
    with _raises_here(_line_of_next_statement(), "is not a size"):
        g.input((4, -3), "f16")
    x = g.input((4,), "f16")
    with _raises_here(_line_of_next_statement(), "expected a Tensor"):
        ops.add(x, 1.0)  # type: ignore[arg-type]
    with _raises_here(_line_of_next_statement(), "has no outputs"):
        g.module  # noqa: B018
    g.output(x)
    with _raises_here(_line_of_next_statement(), "already has outputs"):
        g.output(x)
    g.module  # noqa: B018
    with _raises_here(_line_of_next_statement(), "is finished"):
        ops.relu(x)


def test_a_collective_with_a_bad_group_size_names_the_users_line() -> None:
    g = torchair.Graph("f")
    x = g.input((5, 8), "f16")
    with _raises_here(_line_of_next_statement(), "not divisible by group_size"):
        ops.reduce_scatter(x, 2)


def test_the_readme_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    text = (ROOT / "docs" / "torchair.md").read_text()
    section = text.split("## Python API (npuir.torchair)", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert out.count("stream.decl") == 3
    assert out.count("sync.wait") == 3


def test_building_lowering_and_simulating_never_parse_or_print(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A program built from Python goes through the pipeline and the simulator as IR
    objects: no pass re-parses or re-prints it (at 100k ops either would cost as much as
    the rest of the compile)."""
    from xdsl.parser import Parser
    from xdsl.printer import Printer

    from npuir.analysis.program import build_program, module_streams, scheduled_functions
    from npuir.backends.npu.hardware import load_hardware
    from npuir.backends.npu.simulator import simulate

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the pipeline parsed or printed IR")

    monkeypatch.setattr(Parser, "parse_module", refuse)
    monkeypatch.setattr(Parser, "parse_op", refuse)
    monkeypatch.setattr(Printer, "print_op", refuse)
    module = _lower(seed_model().module, "npu-default")
    func = scheduled_functions(module)[0]
    result = simulate([build_program(func, module_streams(module))], load_hardware("910b2"))
    assert result.makespan_ns > 0 and not result.races


@pytest.mark.parametrize(
    ("mistake", "kind"),
    [
        (lambda g, x: ops.add(x, 1), "torchair.bad-op-argument.not-a-tensor"),
        (lambda g, x: ops.slice(x, 5), "torchair.bad-op-argument.dim-range"),
        (lambda g, x: ops.slice(x, 0, 0, 1, 0), "torchair.bad-op-argument.slice-step"),
        (lambda g, x: ops.cat([]), "torchair.bad-op-argument.empty-cat"),
        (lambda g, x: g.input([2], "f99"), "torchair.graph.dtype"),
        (lambda g, x: g.input([-5], "f16"), "torchair.graph.dim"),
        (lambda g, x: (g.output(x), g.output(x)), "torchair.graph.outputs-twice"),
    ],
)
def test_builder_mistakes_have_kinds_and_their_facts(mistake: object, kind: str) -> None:
    """A builder mistake is a located error of its own kind whose message is rendered from
    the arguments it carries (never `npuir.unclassified`)."""
    from npuir.diagnostics import kinds

    g = torchair.Graph("f")
    with g:
        x = g.input([2, 2], "f16")
        with pytest.raises(torchair.TorchairError) as caught:
            mistake(g, x)  # type: ignore[operator]
    d = caught.value.diagnostic
    assert d.kind == kind and d.location is not None
    assert d.message == kinds()[kind].render(d.args)


def test_a_torchair_warning_rebuilt_from_its_text_keeps_the_text() -> None:
    """pytest-xdist rebuilds a warning in the controlling process as `cls(*args)`."""
    from npuir.diagnostics import Diagnostic, Kind
    from npuir.frontends.torchair.errors import TorchairWarning

    kind = Kind("test.torchair-warning", "gears {dims} need dynamic=True")
    original = TorchairWarning(Diagnostic.of("warning", kind, None, dims="0"))
    rebuilt = type(original)(*(str(arg) for arg in original.args))
    assert str(rebuilt) == str(original)
    assert rebuilt.diagnostic is None
