"""dev/lint_imports.py's own checks find what they look for: an import cycle and a private
import planted in a few made-up modules (so a clean run of `make lint` means something)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "dev" / "lint_imports.py"


@pytest.fixture(scope="module")
def lint() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lint_imports", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


PACKAGES = {"npuir.p"}


def test_a_planted_cycle_is_found_and_printed_as_a_path(lint: ModuleType) -> None:
    sources = {
        "npuir.p": "",
        "npuir.p.a": "from npuir.p import b\n",
        "npuir.p.b": "import npuir.p.c\n",
        "npuir.p.c": "from . import a\n",  # relative, resolved against npuir.p
        "npuir.p.d": "from npuir.p.a import thing\n",  # into the cycle, not part of it
    }
    cycles = lint.find_cycles(lint.import_graph(sources, PACKAGES))
    assert cycles == [["npuir.p.a", "npuir.p.b", "npuir.p.c", "npuir.p.a"]]


def test_imports_that_do_not_run_at_import_time_make_no_cycle(lint: ModuleType) -> None:
    sources = {
        "npuir.p": "",
        "npuir.p.a": "from npuir.p import b\n",
        "npuir.p.b": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from npuir.p import a\n"
            "def later():\n    from npuir.p import a\n"
        ),
    }
    assert lint.find_cycles(lint.import_graph(sources, PACKAGES)) == []
    # The same import at module level (here inside a try, which runs) is a cycle.
    sources["npuir.p.b"] = "try:\n    from npuir.p import a\nexcept ImportError:\n    pass\n"
    assert lint.find_cycles(lint.import_graph(sources, PACKAGES)) == [
        ["npuir.p.a", "npuir.p.b", "npuir.p.a"]
    ]


def test_planted_private_imports_are_found(lint: ModuleType) -> None:
    sources = {
        "npuir.p": "",
        "npuir.p._impl": "X = 1\n_Y = 2\n",
        "npuir.p.ok": (
            "from npuir.p._impl import X\n"  # its own package's private module: fine
            "from . import _impl\n"
            "from npuir.q import public as _alias\n"  # a public name under a private alias
            "from npuir import __version__\n"  # a dunder is public
        ),
        "npuir.p.bad_name": "def f():\n    from npuir.p._impl import _Y\n",  # even in a function
        "npuir.q.bad_module": "from npuir.p import _impl as impl\nimport npuir.p._impl\n",
        "npuir.q": "",
        "npuir.q.outside": "from npuir.p._impl import X\n",  # another package's private module
        "npuir.q.torch_user": "from torch._dynamo import mark_dynamic\n",
    }
    found = {(m, line) for m, line, _what in lint.private_imports(sources, PACKAGES, {})}
    assert found == {
        ("npuir.p.bad_name", 2),
        ("npuir.q.bad_module", 1),
        ("npuir.q.bad_module", 2),
        ("npuir.q.outside", 1),
        ("npuir.q.torch_user", 1),
    }
    # A third-party private name is allowed only where listed, and never an npuir one.
    allowed = {
        ("npuir.q.torch_user", "torch._dynamo"): "pinned, tested",
        ("npuir.q.outside", "npuir"): "npuir's own: never allowed",
    }
    left = {m for m, _line, _what in lint.private_imports(sources, PACKAGES, allowed)}
    assert "npuir.q.torch_user" not in left and "npuir.q.outside" in left


def test_the_product_has_no_import_cycle(lint: ModuleType) -> None:
    assert lint.check_cycles() == 0
