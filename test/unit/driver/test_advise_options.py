"""npuir-advise's table is the user's options, each with how to apply it, and its
recommendation is the fastest of them (within a memory budget), its memory cost stated,
never contradicting the "why" lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from npuir.driver.advise import (
    AS_WRITTEN,
    GE_AUTO_OPTION,
    OPTIONS,
    PASS_CALL,
    STREAM_PER_LAYER,
    Advice,
    AdviseConfig,
    Variant,
    advise,
    owned_file,
    recommend,
)
from npuir.tools.advise import run as advise_tool

ROOT = Path(__file__).resolve().parents[3]
SEED = str(ROOT / "examples" / "seed_multistream.mlir")

LAYERS = """\
module attributes {npu.target = "910b2"} {
  func.func @forward(%x: tensor<512x512xf16>, %w: tensor<512x512xf16>, %v: tensor<512x512xf16>)
      -> (tensor<512x512xf16>, tensor<512x512xf16>, tensor<512x512xf16>) {
    %h0 = npu.matmul %x, %w : (tensor<512x512xf16>, tensor<512x512xf16>) -> tensor<512x512xf16> loc("model.py":10:12)
    %s0 = stream.switch "side0" -> tensor<512x512xf16> {
      %a = npu.add %x, %v : (tensor<512x512xf16>, tensor<512x512xf16>) -> tensor<512x512xf16> loc("model.py":13:16)
      stream.yield %a : tensor<512x512xf16>
    } loc("model.py":12:8)
    %h1 = npu.matmul %h0, %w : (tensor<512x512xf16>, tensor<512x512xf16>) -> tensor<512x512xf16> loc("model.py":10:12)
    %s1 = stream.switch "side1" -> tensor<512x512xf16> {
      %b = npu.add %s0, %v : (tensor<512x512xf16>, tensor<512x512xf16>) -> tensor<512x512xf16> loc("model.py":13:16)
      stream.yield %b : tensor<512x512xf16>
    } loc("model.py":12:8)
    func.return %h1, %s0, %s1 : tensor<512x512xf16>, tensor<512x512xf16>, tensor<512x512xf16>
  }
}
"""
"""Two layers of one model whose `with npu_stream_switch(f"side{i}")` (model.py:12) opens a
stream per layer; the second layer's side op depends on the first's."""


def _row(
    name: str, option: str, ns: int | None, peak: int, case: str | None = None, hazards: int = 0
) -> Variant:
    return Variant(
        name, option, None, case, ns, ns is None, 0, 1, None, hazards, peak, option=option
    )


def _weighted(advice: Advice, name: str) -> float | None:
    spans = [v for v in advice.variants if v.name == name]
    if any(v.makespan_ns is None or v.deadlock or v.hazards for v in spans):
        return None
    return sum(advice.weights.get(v.case, 1.0) * (v.makespan_ns or 0) for v in spans)


@pytest.fixture(scope="module")
def seed_scope() -> Advice:
    # The case: a bad annotation, advised by scope (the 2% rule once kept it).
    return advise(AdviseConfig(path=SEED, granularity="scope"))


def test_every_row_is_an_option_with_how_to_apply_it(seed_scope: Advice) -> None:
    options = {v.option for v in seed_scope.variants}
    assert options == set(OPTIONS)
    how = {v.option: v.torchair for v in seed_scope.variants}
    assert "enable_single_stream = True" in how["single-stream"]
    assert GE_AUTO_OPTION in how["ge-auto"]
    assert PASS_CALL in how["pass"]
    # The pass row's makespan is auto's: its pipeline is auto's, ignoring the scopes.
    (auto,) = [v for v in seed_scope.variants if v.option == "pass"]
    assert auto.pipeline is not None and "mode=auto ignore-tags=true" in auto.pipeline


def test_the_recommendation_is_the_fastest_row(seed_scope: Advice) -> None:
    rec = seed_scope.recommendation
    assert rec is not None
    for name in {v.name for v in seed_scope.variants}:
        other = _weighted(seed_scope, name)
        if other is not None:
            assert rec.weighted_ns <= other, name
    text = seed_scope.render()
    # Its memory cost against the annotation as written is stated.
    assert "peak memory" in text and "your annotation as written" in text
    assert rec.written_peak_bytes is not None and rec.peak_delta_bytes is not None


def test_an_annotation_slower_than_one_stream_is_never_kept(seed_scope: Advice) -> None:
    spans = {v.name: v.makespan_ns for v in seed_scope.variants}
    written, single = spans["as written"], spans["single stream"]
    assert written is not None and single is not None and written > single
    # The "why" line says so, and the recommendation does not contradict it.
    assert any("slower than one stream" in r for r in seed_scope.reasons)
    assert seed_scope.recommendation is not None
    assert seed_scope.recommendation.option != "keep"
    assert "recommended: keep your annotation" not in seed_scope.render()


def test_within_two_percent_of_one_stream_is_still_not_kept() -> None:
    # The 2% rule of the structured search must not leak into the recommendation: an
    # annotation 1% slower than one stream is not the best option.
    rows = [
        _row(AS_WRITTEN.name, "keep", 10_100, 100),
        _row("single stream", "single-stream", 10_000, 80),
        _row("advice (line)", "edits", 10_100, 100),
    ]
    rec = recommend(rows, {None: 1.0})
    assert rec is not None and rec.option == "single-stream"
    # A tie goes to the least work: the annotation as written.
    tie = recommend([*rows[:1], _row("advice (line)", "edits", 10_100, 90)], {None: 1.0})
    assert tie is not None and tie.option == "keep"


def test_a_row_with_a_deadlock_or_hazard_is_no_option() -> None:
    rows = [
        _row(AS_WRITTEN.name, "keep", 5_000, 100, hazards=1),
        _row("no annotation", "remove", None, 100),
        _row("single stream", "single-stream", 9_000, 100),
    ]
    rec = recommend(rows, {None: 1.0})
    assert rec is not None and rec.option == "single-stream"


def test_a_memory_budget_rules_out_the_rows_over_it() -> None:
    rows = [
        _row(AS_WRITTEN.name, "keep", 9_000, 300),
        _row("single stream", "single-stream", 12_000, 100),
        _row("auto (per op)", "pass", 7_000, 500),
    ]
    free = recommend(rows, {None: 1.0})
    assert free is not None and free.option == "pass" and free.fits
    assert free.peak_delta_bytes == 200 and "+200 bytes" in free.memory()
    tight = recommend(rows, {None: 1.0}, budget_bytes=300)
    assert tight is not None and tight.option == "keep" and tight.fits
    # Nothing fits: the smallest plan, said to be over the budget.
    none = recommend(rows, {None: 1.0}, budget_bytes=50)
    assert none is not None and not none.fits and none.option == "single-stream"
    assert any("no option fits" in line for line in none.lines([None], {None: 1.0}))


def test_a_memory_budget_on_a_program(seed_scope: Advice) -> None:
    budget = advise(AdviseConfig(path=SEED, granularity="scope", mem_budget="hbm"))
    rec = budget.recommendation
    assert rec is not None and rec.budget_bytes is not None and rec.fits
    assert rec.peak_bytes is not None and rec.peak_bytes <= rec.budget_bytes
    (auto,) = [v for v in budget.variants if v.option == "pass"]
    assert "memory_budget='hbm'" in auto.torchair


def test_per_gear_the_advice_says_which_gear_gets_which() -> None:
    small, large = "gear arg0=1x8", "gear arg0=64x8"
    rows = [
        _row(AS_WRITTEN.name, "keep", 3_000, 10, small),
        _row(AS_WRITTEN.name, "keep", 20_000, 10, large),
        _row("single stream", "single-stream", 2_000, 10, small),
        _row("single stream", "single-stream", 30_000, 10, large),
        _row("advice (line)", "edits", 2_500, 10, small),
        _row("advice (line)", "edits", 21_000, 10, large),
    ]
    weights = {small: 1.0, large: 1.0}
    rec = recommend(rows, weights, shared="advice (line)")
    assert rec is not None and rec.option == "keep"
    assert rec.per_case == {small: ("single stream", 2_000), large: (AS_WRITTEN.name, 20_000)}
    text = "\n".join(rec.lines([small, large], weights))
    assert f"{small}: single stream" in text and f"{large}: as written" in text
    assert "one shared annotation" in text
    assert rec.shared_ns == 23_500


def test_a_stream_per_layer_is_warned_with_its_tags(tmp_path: Path) -> None:
    path = tmp_path / "layers.mlir"
    path.write_text(LAYERS)
    advice = advise(AdviseConfig(path=str(path)))
    (warning,) = [w for w in advice.warnings if w.kind == STREAM_PER_LAYER.code]
    assert warning.severity == "warning"
    assert warning.location is not None
    assert (warning.location.filename, warning.location.line) == ("model.py", 12)
    assert "side0" in warning.args["tags"] and "side1" in warning.args["tags"]
    assert float(warning.args["shared_us"]) <= float(warning.args["written_us"])
    # The edits row gives the copies one tag when that is worth an edit.
    if float(warning.args["shared_us"]) < 0.98 * float(warning.args["written_us"]):
        spans = {v.name: v.makespan_ns for v in advice.variants}
        advised, written = spans[advice.best], spans["as written"]
        assert advised is not None and written is not None and advised < written
        assert any(e.kind == "retag-scope" and e.first_line == 12 for e in advice.edits)
    # Distinct `with` lines on distinct streams are not the trap.
    assert not any(
        w.kind == STREAM_PER_LAYER.code for w in advise(AdviseConfig(path=SEED)).warnings
    )


def test_the_tool_prints_the_recommendation_and_refuses_a_bad_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "layers.mlir"
    path.write_text(LAYERS)
    assert advise_tool([str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rec = out["recommendation"]
    assert rec["option"] in OPTIONS and rec["memory"].startswith("peak memory")
    assert any(w["kind"] == STREAM_PER_LAYER.code for w in out["warnings"])
    assert advise_tool([str(path)]) == 0
    captured = capsys.readouterr()
    assert "recommended" in captured.out
    assert f"{path.name}" not in captured.err and "model.py:12:8: warning:" in captured.err
    assert advise_tool([SEED, "--mem-budget", "12 apples"]) == 2
    assert "--mem-budget" in capsys.readouterr().err


def test_installed_and_library_files_are_not_the_users() -> None:
    assert not owned_file("/env/lib/python3.11/site-packages/transformers/activations.py")
    assert not owned_file("/usr/lib/python3/dist-packages/foo/bar.py")
    assert not owned_file("/usr/lib/python3.12/contextlib.py")
    assert not owned_file("<frozen runpy>")
    assert owned_file("/home/me/project/model.py") and owned_file("model.py")
    # --edit-files replaces the default: it widens and narrows.
    assert owned_file("/env/site-packages/pkg/a.py", ["*/site-packages/pkg/*"])
    assert not owned_file("/home/me/model.py", ["*/site-packages/pkg/*"])
