"""The HTML report, read as a file and rendered by a real browser.

Every page must be self-contained (nothing fetched: no external script, style, image or
font) and list one timeline lane per stream, grouped per rank, with an arrow per executed
wait.  Headless Chromium (Debian's `chromium`, which `make test` installs) then loads each
page from disk: no console error or uncaught exception, the zoom script ran (it draws the
axis), the DOM has the lanes, and the screenshot shows coloured ops in the lane area.
Without Chromium the browser tests skip, except under CI=true, where they fail.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest
from report_cases import CASES, EXAMPLES
from xdsl.dialects.func import FuncOp

from npuir.analysis.program import Program
from npuir.api import parse_text
from npuir.backends.npu.html_report import run_report_html
from npuir.context import make_context
from npuir.dialects.npu import CollectiveOp
from npuir.driver.gear_cases import gear_cases
from npuir.driver.run import run_program
from npuir.tools.advise import run as advise
from npuir.tools.run import run as npuir_run

# Run in the page before anything else: every console error and uncaught exception is kept
# in an attribute that --dump-dom shows.
_CATCH = """<script>
(function () {
  var seen = [];
  function keep(text) { seen.push(String(text)); document.documentElement.dataset.errors = JSON.stringify(seen); }
  window.addEventListener("error", function (ev) { keep(ev.message || ev.type); }, true);
  window.addEventListener("unhandledrejection", function (ev) { keep(ev.reason); });
  var original = console.error;
  console.error = function () { keep(Array.prototype.join.call(arguments, " ")); original.apply(console, arguments); };
})();
</script>"""
# Run last: where the timeline is, for the screenshot's pixels.
_PROBE = """<script>
(function () {
  var box = document.getElementById("timeline").getBoundingClientRect();
  document.documentElement.dataset.timeline = [box.left, box.top, box.width, box.height].join(",");
})();
</script>"""

WINDOW = (1400, 4000)


class Expected(NamedTuple):
    lanes: list[tuple[int, str]]
    """(rank, stream tag) of every lane, in order."""
    waits: int
    joins: int = 0
    """Dashed lines joining one collective across ranks."""


class Page(NamedTuple):
    path: Path
    expected: Expected


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Page]]:
    out = tmp_path_factory.mktemp("reports")
    pages: dict[str, Page] = {}
    for name, config in CASES.items():
        outcome = run_program(config)
        assert outcome.result is not None and outcome.hw is not None
        path = out / f"{name.replace(' ', '-')}.html"
        html = run_report_html(
            outcome.report, outcome.result, outcome.programs, outcome.hw, title=name
        )
        path.write_text(html, encoding="utf-8")
        lanes = [(r, str(s.tag)) for r, p in enumerate(outcome.programs) for s in p.streams]
        waits = sum(
            1
            for r, rec, wait in outcome.result.event_edges
            if outcome.result.op(r, rec) and outcome.result.op(r, wait)
        )
        pages[name] = Page(path, Expected(lanes, waits, _joins(outcome.programs)))
    # npuir-advise's page: the tables, then the recommended program run (seed: 2 streams).
    path = out / "advice.html"
    assert advise([str(EXAMPLES / "seed_multistream.mlir"), "--report", str(path)]) == 0
    pages["advice"] = Page(path, Expected([(0, "<main>"), (0, "2")], 2))
    yield pages


def _joins(programs: Sequence[Program]) -> int:
    return _joins_of([[op for op in p.ops if isinstance(op, CollectiveOp)] for p in programs])


def _joins_of(per_rank: Sequence[Sequence[CollectiveOp]]) -> int:
    """How many rank-to-rank joins the collectives need (each rank's in program order): a
    collective met by k ranks joins them with k - 1 lines."""
    ranks_of: Counter[tuple[str, int]] = Counter()
    for ops in per_rank:
        for group, n in Counter(op.group for op in ops).items():
            ranks_of.update((group, k) for k in range(n))
    return sum(n - 1 for n in ranks_of.values())


def _lanes(dom: str) -> list[tuple[int, str]]:
    import html

    found = re.findall(r'<g class="lane" data-rank="(\d+)" data-stream="([^"]*)"', dom)
    if not found:  # as written by Python, before a browser re-serialises it
        found = re.findall(r"<g class='lane' data-rank='(\d+)' data-stream='([^']*)'", dom)
    return [(int(r), html.unescape(s)) for r, s in found]


@pytest.mark.parametrize("name", [*CASES, "advice"])
def test_the_page_is_self_contained_and_lists_every_lane(pages: dict[str, Page], name: str) -> None:
    page = pages[name]
    text = page.path.read_text(encoding="utf-8")
    # Nothing to fetch: no external script, stylesheet, image, font or frame.
    assert not re.search(r"<(script|img|iframe)[^>]*\ssrc=", text)
    assert not re.search(r"<link\b|@import|url\((?!#)", text)
    assert not re.search(r"(?:xlink:)?href=['\"](?!#)", text)
    assert _lanes(text) == page.expected.lanes
    assert text.count("class='wait-arrow'") == page.expected.waits > 0
    assert text.count("class='collective-join'") == page.expected.joins
    if name == "2-rank collective":
        assert page.expected.joins > 0
    if name == "advice":
        assert text.count("<tr class='recommended'>") == 1
        assert "id='plot-pareto'" in text
    else:
        assert "id='plot-memory'" in text and "id='plot-cores'" in text
        assert "Communication(Not Overlapped)" in text


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        message = "headless Chromium is not installed (make test installs Debian's chromium)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


def _render(page: Path, tmp: Path) -> tuple[str, Any, str]:
    """(the DOM after the page's scripts ran, the screenshot as an RGB image, stderr)."""
    from PIL import Image

    probe = tmp / page.name
    text = page.read_text(encoding="utf-8")
    text = text.replace("<head>", "<head>" + _CATCH, 1).replace("</body>", _PROBE + "</body>")
    probe.write_text(text, encoding="utf-8")
    shot = tmp / "shot.png"
    done = subprocess.run(
        [
            _chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp / 'profile'}",
            f"--window-size={WINDOW[0]},{WINDOW[1]}",
            f"--screenshot={shot}",
            "--dump-dom",
            probe.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, Image.open(shot).convert("RGB"), done.stderr


@pytest.mark.slow  # a browser start per page: the full suite runs it (and fails under CI without it)
@pytest.mark.parametrize("name", [*CASES, "advice"])
def test_chromium_renders_the_timeline(pages: dict[str, Page], name: str, tmp_path: Path) -> None:
    page = pages[name]
    dom, image, stderr = _render(page.path, tmp_path)
    errors = re.search(r'data-errors="([^"]*)"', dom)
    assert errors is None, errors.group(1)
    assert "Uncaught" not in stderr, stderr
    assert _lanes(dom) == page.expected.lanes
    assert dom.count('class="wait-arrow"') == page.expected.waits
    assert 'class="tick"' in dom  # the zoom script ran: it draws the axis
    if name == "advice":
        assert dom.count('<tr class="recommended">') == 1  # the advice table, as drawn
    box = re.search(r'data-timeline="([^"]*)"', dom)
    assert box is not None
    left, top, width, height = (float(v) for v in box.group(1).split(","))
    assert top + height <= WINDOW[1], "the timeline is below the screenshot"
    # The lanes' area (right of the labels, above the axis): coloured ops, not blank.
    lanes = image.crop((int(left) + 210, int(top) + 22, int(left + width), int(top + height) - 26))
    rgb = np.asarray(lanes, dtype=np.int16)
    coloured = int(((rgb.max(axis=2) - rgb.min(axis=2)) > 60).sum())
    pixels = rgb.shape[0] * rgb.shape[1]
    assert coloured / pixels > 0.05, f"{coloured} of {pixels} pixels coloured"


def test_npuir_run_writes_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "seed.html"
    assert (
        npuir_run([str(EXAMPLES / "seed_multistream.mlir"), "--timing-only", "--report", str(out)])
        == 0
    )
    assert _lanes(out.read_text(encoding="utf-8")) == [(0, "<main>"), (0, "1"), (0, "2")]
    unwritable = tmp_path / "missing" / "x.html"
    code = npuir_run(
        [str(EXAMPLES / "seed_multistream.mlir"), "--timing-only", "--report", str(unwritable)]
    )
    assert code == 2 and "x.html" in capsys.readouterr().err


@pytest.mark.slow  # an advice each: about 1.5 CPU-seconds
@pytest.mark.parametrize(
    ("example", "argv", "ranks"),
    [
        ("moe_decode.mlir", ["--ranks", "8"], ["moe_decode"] * 8),
        ("core_limit_fixed.mlir", ["--entries", "rank0,rank1"], ["rank0", "rank1"]),
    ],
    ids=["moe", "2-rank collective"],
)
def test_the_advice_pages_of_the_moe_and_a_2_rank_collective(
    tmp_path: Path, example: str, argv: list[str], ranks: list[str]
) -> None:
    """The MoE example on its 8 ranks and a 2-rank MPMD collective (`--entries`): the advice
    table with one recommended row, and the recommended run drawn with a lane group per rank,
    its waits' arrows and each collective joined across the ranks (by communicator and
    order: the count comes from the program as written, whose collectives advice keeps)."""
    out = tmp_path / "advice.html"
    assert advise([str(EXAMPLES / example), *argv, "--report", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert text.count("<tr class='recommended'>") == 1
    assert not re.search(r"<(script|img|iframe)[^>]*\ssrc=|<link\b", text)
    lanes = _lanes(text)
    assert sorted({r for r, _ in lanes}) == list(range(len(ranks)))
    assert text.count("class='wait-arrow'") > 0
    module = parse_text(make_context(), (EXAMPLES / example).read_text(encoding="utf-8"))
    funcs = {f.sym_name.data: f for f in module.ops if isinstance(f, FuncOp)}
    per_rank = [[op for op in funcs[name].walk() if isinstance(op, CollectiveOp)] for name in ranks]
    joins = text.count("class='collective-join'")
    assert joins == _joins_of(per_rank) > 0
    rank_top = [float(y) for y in re.findall(r"<text class='rank-label' x='4' y='([\d.]+)'", text)]
    for y1, y2 in re.findall(
        r"<line class='collective-join'[^>]*y1='([\d.]+)'[^>]*y2='([\d.]+)'", text
    ):
        # from one rank's lanes to the next one's
        assert any(float(y1) < top < float(y2) for top in rank_top)


@pytest.mark.slow  # two runs, their plots and a browser start
def test_a_geared_run_has_one_section_per_gear(tmp_path: Path) -> None:
    """`npuir-run --report` on a geared program: a section per gear (as `gear_cases` lists
    them), the run's own marked, each with its own timeline; the page's ids stay unique, and
    in a browser the zoom script draws every timeline's axis."""
    out = tmp_path / "gears.html"
    argv = [str(EXAMPLES / "gears.mlir"), "--timing-only", "--report", str(out)]
    assert npuir_run([*argv, "--shape", "0=4x2", "--shape", "1=4x2"]) == 0
    text = out.read_text(encoding="utf-8")
    gears = EXAMPLES / "gears.mlir"
    module = parse_text(make_context(), gears.read_text(encoding="utf-8"), str(gears))
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    labels = [g.label for g in gear_cases(func)]
    assert len(labels) == 2
    sections = re.findall(r"<section class='(gear(?: taken)?)' data-gear='([^']*)'>", text)
    assert [label for _, label in sections] == labels
    assert [cls for cls, _ in sections] == ["gear", "gear taken"]  # 4x2 is the second gear
    parts = text.split("<section class=")[1:]
    for part in parts:
        assert part.count("<svg id='timeline") == 1 and "class='op" in part
        assert _lanes(part) == [(0, "<main>")]
    ids = re.findall(r"\sid='([^']*)'", text)
    assert len(ids) == len(set(ids))
    dom, _, stderr = _render(out, tmp_path)
    assert re.search(r'data-errors="', dom) is None and "Uncaught" not in stderr
    drawn = [part.count('class="tick"') for part in dom.split('<section class="gear')[1:]]
    assert len(drawn) == 2 and all(drawn)
