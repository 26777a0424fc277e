"""The documentation tells the truth.

- The README stays a guide: at most 300 lines, with a table of contents whose links
  resolve.
- Every fenced block in README.md or docs/*.md whose info string is `sh test` or
  `python test` runs, as a user would run it, in a fresh directory holding copies of
  `examples/` and the GE dumps of `test/frontends/Inputs/`, with the installed tools on
  PATH.  A shell line ends with exit 0 unless its comment says `exit N`, and prints
  TEXT on stdout where its comment says `prints "TEXT"`; a Python block exits 0 (its
  own asserts say what it claims).
- The generated references (docs/passes.md, docs/ir.md) are what `dev/gen_docs.py`
  writes from the code.
- Every repository file a comment, docstring or page cites exists, and every relative
  link in the pages resolves, anchors included.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 300

# ----------------------------------------------------------------------
# Markdown helpers
# ----------------------------------------------------------------------

FENCE = re.compile(r"^(`{3,})(.*)$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    info: str
    text: str

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of `page`, in order."""
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, info = opening.group(1), opening.group(2).strip()
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not lines[j].startswith(fence):
            body.append(lines[j])
            j += 1
        found.append(Block(page, i + 1, info, "\n".join(body) + "\n"))
        i = j + 1
    return found


def prose(page: Path) -> list[str]:
    """The lines of `page` outside fenced blocks."""
    out: list[str] = []
    inside: str | None = None
    for line in page.read_text(encoding="utf-8").splitlines():
        opening = FENCE.match(line)
        if inside is None and opening is not None:
            inside = opening.group(1)
        elif inside is not None and line.startswith(inside):
            inside = None
        elif inside is None:
            out.append(line)
    return out


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    for line in prose(page):
        heading = re.match(r"^#{1,6}\s+(.*)$", line)
        if heading is None:
            continue
        base = slug(heading.group(1))
        name, n = base, 0
        while name in found:  # GitHub numbers repeated headings: name, name-1, ...
            n += 1
            name = f"{base}-{n}"
        found.add(name)
    return found


# ----------------------------------------------------------------------
# The README is a guide
# ----------------------------------------------------------------------


def test_the_readme_is_short_and_opens_with_a_table_of_contents() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    contents = text.split("## Contents", 1)[1].split("\n## ", 1)[0]
    links = re.findall(r"\]\(#([^)]+)\)", contents)
    assert len(links) >= 5
    assert set(links) <= anchors(ROOT / "README.md")


def test_the_readme_and_the_cli_guide_give_the_same_exit_codes() -> None:
    def table(page: Path) -> list[str]:
        lines = page.read_text(encoding="utf-8").splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("| exit |"))
        rows = lines[start:]
        return rows[: next((i for i, r in enumerate(rows) if not r.startswith("|")), len(rows))]

    assert table(ROOT / "README.md") == table(ROOT / "docs" / "cli.md")


# ----------------------------------------------------------------------
# The blocks marked `test` run
# ----------------------------------------------------------------------

TESTED = {"sh test", "python test"}
EXIT = re.compile(r"#.*\bexit (\d+)")
PRINTS = re.compile(r'#.*\bprints "([^"]+)"')


def _tested_blocks() -> list[Block]:
    return [b for page in PAGES for b in blocks(page) if b.info in TESTED]


def _needs_torch(block: Block) -> bool:
    return "torch" in block.text and (
        "import torch" in block.text or "moe_decoder.py" in block.text
    )


def _params() -> list[object]:
    return [
        pytest.param(b, id=b.id, marks=[pytest.mark.torch] if _needs_torch(b) else [])
        for b in _tested_blocks()
    ]


def _commands(text: str) -> list[str]:
    """The shell commands of a block: continuation lines joined, comment lines dropped."""
    out: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        out.append(pending + line)
        pending = ""
    assert not pending, "a block ends inside a continued line"
    return out


def _workdir(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    shutil.copytree(
        ROOT / "test" / "frontends" / "Inputs", tmp_path / "test" / "frontends" / "Inputs"
    )
    return tmp_path


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # The tools and `python` of the environment running the tests come first.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def test_some_blocks_are_tested() -> None:
    tested = _tested_blocks()
    assert any(b.page.name == "README.md" for b in tested)
    assert {b.info for b in tested} == TESTED


@pytest.mark.slow
@pytest.mark.parametrize("block", _params())
def test_a_documented_block_does_what_it_says(block: Block, tmp_path: Path) -> None:
    cwd = _workdir(tmp_path)
    if block.info == "python test":
        script = cwd / "block.py"
        script.write_text(block.text, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=cwd,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, f"{block.id}:\n{done.stdout}\n{done.stderr}"
        return
    for command in _commands(block.text):
        done = subprocess.run(
            command,
            shell=True,
            cwd=cwd,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=900,
            executable="/bin/bash",
        )
        code = EXIT.search(command)
        expected = int(code.group(1)) if code else 0
        assert done.returncode == expected, (
            f"{block.id}: `{command}` exited {done.returncode}, the page says {expected}\n"
            f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
        shown = PRINTS.search(command)
        if shown is not None:
            assert shown.group(1) in done.stdout, f"{block.id}: `{command}`\n{done.stdout}"


# ----------------------------------------------------------------------
# The generated references are current
# ----------------------------------------------------------------------


def _gen_docs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "dev" / "gen_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_references_are_current() -> None:
    stale = _gen_docs().stale_pages()
    assert not stale, f"stale: {sorted(stale)}; run python dev/gen_docs.py"


def test_the_pass_reference_names_every_pass_and_option() -> None:
    from npuir.passes import options_of
    from npuir.transforms import PASSES

    text = (ROOT / "docs" / "passes.md").read_text(encoding="utf-8")
    for name, load in PASSES.items():
        if name.startswith("test-"):
            assert f"### {name}\n" not in text
            continue
        assert f"### {name}\n" in text
        for opt in options_of(load()):
            assert f"| `{opt.name}` |" in text


def test_the_ir_reference_names_every_op() -> None:
    from npuir.dialects import DIALECTS

    text = (ROOT / "docs" / "ir.md").read_text(encoding="utf-8")
    for load in DIALECTS.values():
        for op in load().operations:
            assert f"### `{op.name}`\n" in text


# ----------------------------------------------------------------------
# Cited files exist
# ----------------------------------------------------------------------

TOP = (
    "npuir|dialects|analysis|backends|schedule|transforms|passmanager|frontends|torchair|"
    "driver|tools|test|bench|dev|docs|examples"
)
EXTENSIONS = "py|md|mlir|toml|json|txt|pbtxt|lark|cfg|csv"
CITED = re.compile(rf"(?<![\w./-])((?:{TOP})/[\w./-]*?\.(?:{EXTENSIONS}))(?![\w/-])")
"""A repo-relative file path: a top-level folder, then a name with a known extension."""

EXTERNAL = {"torchair/scope/__init__.py"}
"""Files of other projects cited as such (TorchAir's own source), not of this repository."""

PACKAGE_ROOTS = [ROOT, *(p.parent for p in ROOT.glob("docs/*/pyproject.toml"))]
"""Where a cited path may start: the repository, or an example package inside it (whose
own files cite their paths from the package's root)."""

SKIP_DIRS = {"Output", "__pycache__", "build", "dist"}
"""Folders of generated files (lit's Output, caches, builds); hidden folders are skipped too."""

SUFFIXES = {".py", ".md", ".mlir", ".cfg", ".toml"}


def _sources() -> list[Path]:
    found = [ROOT / "Makefile"]
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".") and d not in SKIP_DIRS and not d.endswith(".egg-info")
        )
        found += [Path(folder) / f for f in sorted(files) if Path(f).suffix in SUFFIXES]
    # The changelog records history, so it may name files that have since moved.
    return [p for p in found if p.name != "CHANGELOG.md"]


def test_every_cited_file_exists() -> None:
    missing: list[str] = []
    for source in _sources():
        text = source.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            for cited in CITED.findall(line):
                if cited in EXTERNAL:
                    continue
                if not any((base / cited).exists() for base in PACKAGE_ROOTS):
                    missing.append(f"{source.relative_to(ROOT)}:{number}: {cited}")
    assert not missing, "\n".join(missing)


def test_the_citation_pattern_finds_repository_paths() -> None:
    # Spelt in pieces, so that this file does not cite the paths itself.
    nowhere, hardware, unit = (
        "/".join(parts)
        for parts in (("docs", "nowhere.md"), ("backends", "npu", "hardware.py"), ("test", "x.py"))
    )
    line = f"see {nowhere}, `{hardware}` and ({unit}); not site/{nowhere}, examples/X/ or a/b.py"
    assert CITED.findall(line) == [nowhere, hardware, unit]


def test_nothing_cites_a_design_document_the_repository_lacks() -> None:
    stale = [
        f"{source.relative_to(ROOT)}:{number}"
        for source in _sources()
        for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bDESIGN(\.md|\s*§)", line)
    ]
    assert not stale, stale


LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken: list[str] = []
    for line in prose(page):
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target):
                continue  # a URL
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(target)
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"


@pytest.mark.parametrize(
    "heading, anchor",
    [
        ("## If you use TorchAir", "if-you-use-torchair"),
        ("### What `stream.wait_tensor` means", "what-streamwait_tensor-means"),
        ("## `npuir-advise`: where to put the scopes", "npuir-advise-where-to-put-the-scopes"),
    ],
)
def test_anchors_are_spelt_as_github_spells_them(heading: str, anchor: str) -> None:
    assert slug(heading.lstrip("# ")) == anchor


HISTORY = [
    re.compile(r"(?<![\w.])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?!\w)"),
    re.compile(r"\bissues? #?\d+", re.I),
    re.compile(r"\b(last|previous|this|two) stops?\b|\bstops? ago\b", re.I),
]
"""What a lab notebook says and a guide does not: commit hashes, issue numbers, "the last
stop".  The changelog keeps the history."""


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_guides_speak_without_history(page: Path) -> None:
    found = [
        f"{page.relative_to(ROOT)}:{number}: {hit.group(0)}"
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        for pattern in HISTORY
        if (hit := pattern.search(line)) is not None
    ]
    assert not found, found


def test_the_history_check_sees_a_notebook() -> None:
    notebook = "At 2ad4ac1, two stops ago (issue 25): 0.974; dense<5.000000e-01> is a float."
    hits = [p.search(notebook) for p in HISTORY]
    assert [h.group(0) if h else None for h in hits] == ["2ad4ac1", "issue 25", "two stops"]
