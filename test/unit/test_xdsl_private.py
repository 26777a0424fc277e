"""npuir's use of private xDSL names is listed, pinned and checked (issue 19, item 10).

If an xDSL upgrade drops or renames one, the first test fails naming each name and
what npuir uses it for; the others keep the list and the pin honest.
"""

from __future__ import annotations

import inspect
import re
import tomllib
from pathlib import Path

from xdsl.context import Context
from xdsl.parser import Parser
from xdsl.utils.mlir_lexer import MLIRLexer

from npuir import parsing
from npuir.diagnostics import SourceManager
from npuir.xdsl_private import PRIVATE, TESTED, installed, missing

ROOT = Path(__file__).resolve().parents[2]


def test_the_installed_xdsl_has_every_private_name_npuir_uses() -> None:
    gone = missing()
    assert not gone, (
        f"xDSL {installed()} lacks private names npuir.parsing depends on (npuir is tested "
        f"with xDSL {TESTED[0]}.{TESTED[1]}.x; port npuir.parsing, then update "
        "npuir/xdsl_private.py and the pin in pyproject.toml):\n  " + "\n  ".join(gone)
    )


def test_the_list_names_every_private_xdsl_name_parsing_uses() -> None:
    source = inspect.getsource(parsing)
    used = set(re.findall(r"(?:self|super\(\))\.(_[A-Za-z]\w*)", source))
    for cls in (parsing.LocatingParser, parsing._LinearLexer):
        used |= {n for n in vars(cls) if n.startswith("_") and not n.startswith(("__", "_abc"))}
    listed = {name for names in PRIVATE.values() for name in names}
    from_xdsl = {name for name in used if hasattr(Parser, name) or hasattr(MLIRLexer, name)}
    assert from_xdsl <= listed, f"unlisted private xDSL names: {sorted(from_xdsl - listed)}"


def test_the_locating_parser_sets_up_what_xdsl_parser_does() -> None:
    # LocatingParser replaces Parser.__init__ (to use its own lexer): any state a newer
    # Parser.__init__ adds must be added there too.
    ours = parsing.LocatingParser(Context(), "", "x.mlir", SourceManager())
    assert set(vars(Parser(Context(), ""))) <= set(vars(ours))


def test_the_pin_is_the_tested_range_and_the_installed_xdsl_is_in_it() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (xdsl,) = [d for d in deps if re.match(r"xdsl\b", d)]
    major, minor = TESTED
    assert xdsl == f"xdsl>={major}.{minor},<{major}.{minor + 1}"
    assert tuple(int(x) for x in installed().split(".")[:2]) == TESTED
