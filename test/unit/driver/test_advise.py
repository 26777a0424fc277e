"""npuir-advise: the user's annotation, one stream and auto side by side, and edits that reproduce."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from npuir.diagnostics import Kind
from npuir.driver.advise import AdviseConfig, advise
from npuir.driver.run import RunConfig, run_program
from npuir.tools.advise import run as advise_tool

ROOT = Path(__file__).resolve().parents[3]
SEED = str(ROOT / "examples" / "seed_multistream.mlir")
DEADLOCK = str(ROOT / "examples" / "core_limit_deadlock.mlir")


ROWS = {
    "as written",
    "no annotation",
    "single stream",
    "GE auto multi-stream",
    "advice (line)",
    "auto (per op)",
}


@pytest.mark.slow
def test_seed_advice_names_the_with_lines_and_reproduces(tmp_path: Path) -> None:
    out = tmp_path / "advised.mlir"
    advice = advise(AdviseConfig(path=SEED, emit_mlir=str(out)))
    spans = {v.name: v.makespan_ns for v in advice.variants}
    assert set(spans) == ROWS
    assert all(s is not None for s in spans.values())
    assert spans["advice (line)"] < spans["single stream"] < spans["as written"]  # type: ignore[operator]
    assert advice.lower_bound_ns is not None
    assert advice.lower_bound_ns <= min(s for s in spans.values() if s is not None)
    assert not advice.keep
    source = Path(SEED).read_text().splitlines()
    # A removal names the scope's own line (the `with`), not its ops' lines.
    changed = [e for e in advice.edits if e.kind in ("remove-scope", "retag-scope")]
    assert changed and all("stream.switch" in source[e.first_line - 1] for e in changed)
    assert all("torchair.scope.npu_stream_switch" in str(e) for e in advice.edits)
    # The emitted source form runs, with the default pipeline, at exactly the advised makespan.
    rerun = run_program(RunConfig(path=str(out), check=True))
    assert rerun.status == 0 and rerun.result is not None
    assert rerun.result.makespan_ns == spans["advice (line)"]


def test_scope_granularity_only_moves_the_users_scopes() -> None:
    advice = advise(AdviseConfig(path=SEED, granularity="scope"))
    assert advice.best == "advice (scope)"
    assert all(e.kind in ("remove-scope", "retag-scope") for e in advice.edits)
    spans = {v.name: v.makespan_ns for v in advice.variants}
    line = advise(AdviseConfig(path=SEED))
    assert spans["advice (scope)"] is not None
    # A coarser constraint never finds a faster assignment than the line one.
    assert line.advised_ns[None] <= spans["advice (scope)"]  # type: ignore[operator]


def test_the_best_annotation_is_kept() -> None:
    gears = str(ROOT / "examples" / "gears.mlir")
    advice = advise(AdviseConfig(path=gears))
    assert advice.keep and not advice.edits
    assert "recommended: keep your annotation" in advice.render()


def test_deadlock_advice_names_limit_core_num_on_the_nonzero_line() -> None:
    advice = advise(AdviseConfig(path=DEADLOCK, entries=["rank0", "rank1"]))
    by_name = {v.name: v for v in advice.variants}
    assert by_name["as written"].deadlock
    assert not by_name[advice.best].deadlock
    limits = [e for e in advice.edits if e.kind == "add-limit-scope"]
    source = Path(DEADLOCK).read_text().splitlines()
    assert len(limits) == 2
    assert all("npu.nonzero" in source[e.first_line - 1] for e in limits)
    assert all("torchair.scope.limit_core_num(" in str(e) for e in limits)
    assert not any("set_stream_limit" in str(e) for e in advice.edits)
    # The bound holds under the user's own core limits (aiv collectives hold only theirs).
    spans = [v.makespan_ns for v in advice.variants if v.makespan_ns is not None]
    assert advice.lower_bound_ns is not None and advice.lower_bound_ns <= min(spans)


def test_a_geared_program_is_advised_per_gear(capsys: pytest.CaptureFixture[str]) -> None:
    gears = str(ROOT / "examples" / "gears.mlir")
    advice = advise(AdviseConfig(path=gears, gear_weights=[3.0, 1.0]))
    assert len(advice.cases) == 2 and None not in advice.cases
    for case in advice.cases:
        assert {v.name for v in advice.variants if v.case == case} == ROWS
    assert sorted(advice.weights.values()) == [1.0, 3.0]
    assert advise_tool([gears, "--gear-weights", "1"]) == 2
    assert "2 gears" in capsys.readouterr().err
    # One gear by its shape, as npuir-run takes it.
    assert advise_tool([gears, "--shape", "0=4x2", "--shape", "1=4x2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {v["case"] for v in report["variants"]} == {None}


def test_tool_json_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert advise_tool([SEED, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["best"] == "advice (line)"
    assert {v["name"] for v in report["variants"]} == ROWS
    assert all(v["torchair"] for v in report["variants"])
    assert report["lower_bound_ns"] is not None
    assert report["edits"] and report["why"]
    assert all(
        {"kind", "file", "first_line", "last_line", "torchair"} <= set(e) for e in report["edits"]
    )
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f( {\n")
    assert advise_tool([str(bad)]) == 1
    assert f"{bad}:1:" in capsys.readouterr().err
    assert advise_tool([SEED, "--emit-mlir", str(tmp_path / "missing" / "x.mlir")]) == 2
    assert "cannot write" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        advise_tool([SEED, "--granularity", "stream"])
    assert advise_tool([SEED, "--gear-weights", "1,2"]) == 2
    assert "geared" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        advise_tool([SEED, "--gear-weights", "a"])


def test_npuir_run_says_why_and_what_auto_would_take() -> None:
    outcome = run_program(RunConfig(path=SEED, timing_only=True))
    why = outcome.report["why"]
    assert why[0].startswith("this schedule is 3.5 µs slower than one stream")
    assert any("waits 6.7 µs for cube cores" in line for line in why)
    assert outcome.report["auto"]["makespan_ns"] < outcome.report["single_stream_ns"]
    auto_us = outcome.report["auto"]["makespan_ns"] / 1000
    assert "mode=auto" in why[-1] and f"{auto_us:.1f} µs" in why[-1]
    # A schedule that already beats one stream is explained, with no auto run for it.
    auto = run_program(
        RunConfig(path=SEED, timing_only=True, pipeline=outcome.report["auto"]["pipeline"])
    )
    assert auto.report["auto"] is None
    gain_us = (auto.report["single_stream_ns"] - auto.report["makespan_ns"]) / 1000
    assert auto.report["why"][0].startswith(f"this schedule is {gain_us:.1f} µs faster than one")


def test_a_ge_dump_is_advised_by_op_name() -> None:
    dump = str(ROOT / "test" / "frontends" / "Inputs" / "seed_multistream.pbtxt")
    advice = advise(AdviseConfig(path=dump))
    assert advice.edits and all(e.source == "dump" and e.ops for e in advice.edits)
    names = {"Add", "MatMul", "MatMul_1", "Add_1"}
    assert all(set(e.ops) <= names and "_user_stream_label" in str(e) for e in advice.edits)
    # The same model as .mlir gets the same assignment: the same makespans.
    mlir = advise(AdviseConfig(path=SEED))
    assert advice.advised_ns == mlir.advised_ns


@pytest.mark.slow
@pytest.mark.parametrize("tool", ["npuir-import", "npuir-opt", "npuir-run", "npuir-advise"])
def test_every_tool_reads_an_archive_by_content_without_torch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tool: str
) -> None:
    """One loader: every tool takes a torch.export archive, whatever its file is called,
    and reads it as data (`npuir.frontends.pt2_graph`): torch is never imported."""
    import subprocess
    import sys

    from pt2archive import build

    archive = build(tmp_path / "model.bin", {})
    module = {"npuir-import": "import_dump", "npuir-opt": "opt"}.get(tool, tool.split("-")[1])
    script = (
        "import sys\n"
        f"from npuir.tools.{module} import run\n"
        f"code = run([{str(archive)!r}])\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()


def test_opt_prints_locations_that_read_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from npuir.context import make_context
    from npuir.diagnostics import op_location
    from npuir.dialects.npu import NpuOp
    from npuir.frontends.load import parse_file
    from npuir.tools.opt import run as opt_tool

    assert opt_tool([SEED, "--mlir-print-debuginfo"]) == 0
    printed = capsys.readouterr().out
    assert f'loc("{SEED}":14:' in printed
    again = tmp_path / "again.mlir"
    again.write_text(printed)
    module = parse_file(make_context(), again)
    lines = [op_location(op).line for op in module.walk() if isinstance(op, NpuOp)]  # type: ignore[union-attr]
    assert lines == [8, 11, 14, 17]  # the original file's lines, not the printed file's


@pytest.mark.slow
def test_hazards_are_counted_by_kind_not_by_wording(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rewording the hold-and-wait warning must not change what advise counts."""
    from npuir.transforms import coreset_check

    hazards = lambda: {  # noqa: E731
        v.name: v.hazards
        for v in advise(AdviseConfig(path=DEADLOCK, entries=["rank0", "rank1"])).variants
    }
    before = hazards()
    render = Kind.render

    def reworded(self: Kind, args: Mapping[str, object]) -> str:
        if self is coreset_check.HOLD_AND_WAIT:
            return "something else entirely"
        return render(self, args)

    monkeypatch.setattr(Kind, "render", reworded)
    assert hazards() == before
    assert any(before.values())


SEED_SCRIPT = """\
import sys

import npuir
from npuir import torchair
from npuir.torchair import ops

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
with open(sys.argv[1], "w") as out:
    out.write(npuir.print_ir(g.module, debuginfo=True))
"""

GEARS_SCRIPT = """\
import sys

import npuir
from npuir import torchair
from npuir.torchair import ops

g = torchair.Graph("forward")
x1 = g.input((None, 2), "f32")
x2 = g.input((None, 2), "f32")
torchair.inference.set_dim_gears(x1, {0: [2, 4]})
torchair.inference.set_dim_gears(x2, {0: [2, 4]})
g.output(ops.add(x1, x2))
with open(sys.argv[1], "w") as out:
    out.write(npuir.print_ir(g.module, debuginfo=True))
"""


def _build(script: Path, out: Path) -> None:
    import runpy
    import sys

    saved = sys.argv
    sys.argv = [str(script), str(out)]
    try:
        runpy.run_path(str(script), run_name="__main__")
    finally:
        sys.argv = saved


@pytest.mark.slow
def test_a_builder_scripts_edits_apply_and_reproduce(tmp_path: Path) -> None:
    from npuir.driver.advise import apply_edits

    script = tmp_path / "seed.py"
    script.write_text(SEED_SCRIPT)
    built = tmp_path / "seed.mlir"
    _build(script, built)
    advice = advise(AdviseConfig(path=str(built)))
    assert not advice.keep and advice.edits
    # The builder locates each scope at its `with` line, and the edits name the script.
    lines = SEED_SCRIPT.splitlines()
    for edit in advice.edits:
        assert edit.file == str(script) and edit.source == "python"
        if edit.kind in ("remove-scope", "retag-scope"):
            assert lines[edit.first_line - 1].startswith("with torchair.scope.npu_stream_switch")
    edited = tmp_path / "edited" / "seed.py"
    edited.parent.mkdir()
    edited.write_text(apply_edits(SEED_SCRIPT, advice.edits))
    rebuilt = tmp_path / "edited.mlir"
    _build(edited, rebuilt)
    rerun = run_program(RunConfig(path=str(rebuilt), check=True))
    assert rerun.status == 0 and rerun.result is not None
    assert rerun.result.makespan_ns == advice.advised_ns[None]


def test_seed_004s_script_is_advised_per_gear(tmp_path: Path) -> None:
    script = tmp_path / "gears.py"
    script.write_text(GEARS_SCRIPT)
    built = tmp_path / "gears.mlir"
    _build(script, built)
    advice = advise(AdviseConfig(path=str(built)))
    assert len(advice.cases) == 2
    for case in advice.cases:
        rows = {v.name: v.makespan_ns for v in advice.variants if v.case == case}
        assert set(rows) == ROWS and all(s is not None for s in rows.values())
        assert advice.lower_bounds[case] is not None
    # One add: nothing to gain from a second stream in either gear.
    assert advice.keep


def test_apply_edits_writes_what_a_user_would() -> None:
    from npuir.driver.advise import Edit, apply_edits

    source = (
        "def forward(x):\n"
        "    a = f(x)\n"
        '    with torchair.scope.npu_stream_switch("1"):\n'
        "        b = g(a)\n"
        "\n"
        "        c = h(b)\n"
        '    with torchair.scope.npu_stream_switch("2"):\n'
        "        d = k(a)\n"
        "    return c + d\n"
    )
    edits = [
        Edit("remove-scope", "m.py", 3, 6, "python", "1"),
        Edit("add-stream-scope", "m.py", 6, 6, "python", "s1"),
        Edit("add-limit-scope", "m.py", 6, 6, "python", counts=(24, 6)),
        Edit("retag-scope", "m.py", 7, 8, "python", "s1"),
        Edit("add-stream-scope", "m.py", 2, 2, "python", "s2"),
    ]
    assert apply_edits(source, edits) == (
        "def forward(x):\n"
        '    with torchair.scope.npu_stream_switch("s2"):\n'
        "        a = f(x)\n"
        "    b = g(a)\n"
        "\n"
        '    with torchair.scope.npu_stream_switch("s1"):\n'
        "        with torchair.scope.limit_core_num(24, 6):\n"
        "            c = h(b)\n"
        '    with torchair.scope.npu_stream_switch("s1"):\n'
        "        d = k(a)\n"
        "    return c + d\n"
    )


AIV_CASE = """\
!a = tensor<2048x1024xf16>
module attributes {npu.target = "910b2"} {
  func.func @f(%x: !a, %y: !a) -> (!a, !a) {
    %r = npu.all_reduce %x {group_size = 2 : i64, group = "tp", mode = "aiv"} : (!a) -> !a
    %v1 = npu.gelu %y : (!a) -> !a
    %v2 = npu.silu %v1 : (!a) -> !a
    %v3 = npu.mul %v2, %v1 : (!a, !a) -> !a
    %v4 = npu.add %v3, %r : (!a, !a) -> !a
    func.return %v4, %v3 : !a, !a
  }
}
"""


@pytest.mark.slow
def test_auto_core_limits_are_phrased_as_limit_core_num(tmp_path: Path) -> None:
    # An aiv all_reduce holds the vector cores it asks for while a vector chain waits:
    # auto (limits=true) limits it and the chain's stream so that they fit together, and
    # the op-granularity advice says so as limit_core_num edits that reproduce its makespan.
    path = tmp_path / "aiv.mlir"
    path.write_text(AIV_CASE)
    out = tmp_path / "advised.mlir"
    advice = advise(AdviseConfig(path=str(path), ranks=2, granularity="op", emit_mlir=str(out)))
    spans = {v.name: v.makespan_ns for v in advice.variants}
    assert spans["advice (op)"] == spans["auto (per op)"]
    assert spans["advice (op)"] < spans["single stream"]  # type: ignore[operator]
    limits = [e for e in advice.edits if e.kind == "add-limit-scope"]
    lines = AIV_CASE.splitlines()
    (collective,) = [e for e in limits if "npu.all_reduce" in lines[e.first_line - 1]]
    assert collective.counts is not None and collective.counts[1] < 48
    assert all(e.counts is not None and e.counts[0] == 24 for e in limits)  # cube untouched
    assert "torchair.scope.limit_core_num(24, " in collective.torchair
    # Seed 003's pair rule: the collective's stream and the chain's fit the device together.
    chain = [e for e in limits if e is not collective]
    assert chain and all(
        e.counts is not None and e.counts[1] + collective.counts[1] <= 48 for e in chain
    )
    rerun = run_program(RunConfig(path=str(out), ranks=2))
    assert rerun.status == 0 and rerun.result is not None
    assert rerun.result.makespan_ns == spans["advice (op)"]


HOIST_MODEL = """\
def forward(a, b, c):
    x = ops.add(ops.relu(a), ops.mm(b, c))
    with torchair.scope.npu_stream_switch("1"):
        y = ops.mul(ops.exp(b), ops.mm(a, c))
    return ops.sub(ops.mm(x, y), x)
"""


def _hoist_module(model: Path) -> str:
    t = "tensor<512x512xf16>"

    def loc(line: int) -> str:
        return f'loc("{model}":{line}:5)'

    def mm(k: int, a: str, b: str, line: int) -> str:
        return f'npu.matmul {a}, {b} {{npu.op_name = "mm_{k}"}} : ({t}, {t}) -> {t} {loc(line)}'

    return f"""builtin.module {{
  func.func @forward(%a: {t}, %b: {t}, %c: {t}) -> {t} {{
    %r = npu.relu %a : ({t}) -> {t} {loc(2)}
    %m = {mm(1, "%b", "%c", 2)}
    %x = npu.add %r, %m : ({t}, {t}) -> {t} {loc(2)}
    %y = stream.switch "1" -> {t} {{
      %e = npu.exp %b : ({t}) -> {t} {loc(4)}
      %n = {mm(2, "%a", "%c", 4)}
      %p = npu.mul %e, %n : ({t}, {t}) -> {t} {loc(4)}
      stream.yield %p : {t}
    }} {loc(3)}
    %q = {mm(3, "%x", "%y", 5)}
    %s = npu.sub %q, %x : ({t}, {t}) -> {t} {loc(5)}
    func.return %s : {t}
  }}
}}
"""


def test_a_hoisting_variant_is_the_program_reissued_not_reread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without `stream.wait_tensor`s, the structured search's variants that take calls out
    of their lines are the program's nodes in a new issue order (`Target._reordered`); read
    from a rewritten copy of the function instead (`Target._rebuilt`) they are the same
    program: the same ops in the same order, dependencies, scopes and units."""
    from npuir.driver import advise as advise_module

    model = tmp_path / "model.py"
    model.write_text(HOIST_MODEL)
    path = tmp_path / "model.mlir"
    path.write_text(_hoist_module(model))
    compared: list[bool] = []
    reordered = advise_module.Target._reordered

    def checked(self: advise_module.Target, hoisted: frozenset) -> object:  # type: ignore[type-arg]
        fast = reordered(self, hoisted)
        assert fast is not None
        slow = self._rebuilt(frozenset(), hoisted)
        (fp, fu, _), (sp, su, _) = fast, slow
        assert [self._origin.get(op, op).name for op in sp.ops] == [op.name for op in fp.ops]
        assert [self._origin.get(op, op) for op in sp.ops[:-1]] == fp.ops[:-1]
        assert sp.kind == fp.kind and sp.pinned == fp.pinned and su == fu
        assert [sorted(d) for d in sp.deps] == [sorted(d) for d in fp.deps]
        compared.append(fp.ops != self.prog.ops)
        return fast

    monkeypatch.setattr(advise_module.Target, "_reordered", checked)
    advice = advise(AdviseConfig(path=str(path)))
    assert advice.variants
    assert compared and any(compared)  # not vacuous: some variant reissues the nodes
