"""Check npuir's import rules: the import-linter contracts, no import cycle, no private import.

1. The contracts (`[tool.importlinter]` in pyproject.toml).  import-linter reads packages
   from the file system, and an editable install maps `npuir.dialects` to `dialects/`
   (pyproject's `package-dir`) through an import hook it cannot see.  So this script lays
   the package out as an install would -- each `package-dir` folder's Python files copied
   under `npuir/` in a scratch directory -- and runs `lint-imports` there.
2. No import cycle among the product's modules: the module-level imports (those that run
   when a module is imported; not the ones inside functions, nor `if TYPE_CHECKING:`) from
   one `npuir.*` module to another form no cycle.  A cycle found is printed.
3. No private import: no product module imports another module's `_`-prefixed name
   (`from m import _x`, `import m._x`), nor a name from another package's private module
   (`from npuir.p._m import x` outside `npuir.p`).  A third-party private name is allowed
   only where `THIRD_PARTY_PRIVATE` lists it, each behind a version pin and a test.

Usage: `python dev/lint_imports.py` (make lint runs it).
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def lay_out(target: Path) -> None:
    """Copy every package of pyproject's `package-dir` to where an install puts it."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for package, folder in config["tool"]["setuptools"]["package-dir"].items():
        dest = target.joinpath(*package.split("."))
        dest.mkdir(parents=True, exist_ok=True)
        for source in (ROOT / folder).glob("*.py"):
            shutil.copy2(source, dest / source.name)


THIRD_PARTY_PRIVATE: dict[tuple[str, str], str] = {
    ("npuir.frontends.pt2", "torch._export.serde."): "torch's export deserializer "
    "(`_dict_to_dataclass`), pinned torch>=2.13,<2.14 (extra `torch`); "
    "test/unit/frontends/test_pt2_graph.py reads a real archive through it",
    ("npuir.frontends.torchair.inference", "torch.fx.experimental._config"): "dynamo's "
    "`use_duck_shape` switch, same pin; test_torch_compile.py's product-gears test",
    ("npuir.driver.torch_backend", "torch._dynamo.eval_frame.innermost_backend"): "the "
    "backend behind a compiled model, same pin; test_torch_compile.py's reports test",
    ("npuir.frontends.aten_core", "torch._decomp."): "PyTorch's decomposition tables "
    "(`decomposition_table`, `core_aten_decompositions`), the documented way to lower an "
    "op to Core ATen, same pin; test_aten_core.py's decomposed-op and OpInfo tests",
    ("npuir.deep_stack", "_lsprof.Profiler"): "CPython's C profiler, the base of every "
    "cProfile profiler (the stdlib's, no pin); test/unit/test_profiling.py",
}
"""(module, what it imports) pairs allowed to use a third-party private name, and why: each
sits behind a version pin and a test that exercises it.  npuir's own names never are."""


def product_modules() -> dict[str, Path]:
    """Every product module by its installed name (pyproject's `package-dir`), with its file."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    found: dict[str, Path] = {}
    for package, folder in config["tool"]["setuptools"]["package-dir"].items():
        for source in sorted((ROOT / folder).glob("*.py")):
            name = package if source.stem == "__init__" else f"{package}.{source.stem}"
            found[name] = source
    return found


def _imports(
    module: str, is_package: bool, tree: ast.Module, module_level: bool
) -> Iterator[tuple[ast.stmt, str, str | None]]:
    """Each import of `tree` as (statement, module imported from, name or None).

    `import a.b` gives ("a.b", None); `from a import b` gives ("a", "b"); relative
    imports are resolved against `module`.  With `module_level`, only the imports that run
    when the module is imported: not those in functions, nor under `if TYPE_CHECKING:`.
    """
    package = module if is_package else module.rpartition(".")[0]

    def visit(nodes: Sequence[ast.AST]) -> Iterator[tuple[ast.stmt, str, str | None]]:
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield node, alias.name, None
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    anchor = ".".join(parts[: len(parts) - node.level + 1])
                    base = f"{anchor}.{base}" if base else anchor
                for alias in node.names:
                    yield node, base, alias.name
            elif module_level and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            elif module_level and isinstance(node, ast.If) and _is_type_checking(node.test):
                yield from visit(node.orelse)
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    children = getattr(node, field, None)
                    if isinstance(children, list):
                        yield from visit([c for c in children if isinstance(c, ast.AST)])

    if module_level:
        yield from visit(tree.body)
    else:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                yield from visit([node])


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_graph(sources: Mapping[str, str], packages: set[str]) -> dict[str, set[str]]:
    """Module -> the product modules its module-level imports name (`from p import m`
    names the module `p.m` when it is one, else `p`)."""
    graph: dict[str, set[str]] = {}
    for module, text in sources.items():
        edges: set[str] = set()
        tree = ast.parse(text)
        for _node, base, name in _imports(module, module in packages, tree, True):
            target = f"{base}.{name}" if name and f"{base}.{name}" in sources else base
            if target in sources and target != module:
                edges.add(target)
        graph[module] = edges
    return graph


def find_cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """One cycle (a path back to its start) in each strongly connected part of `graph` that
    has one, found iteratively (Tarjan's algorithm, then a search within the part)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    parts: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                part: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    part.append(member)
                    if member == node:
                        break
                if len(part) > 1:
                    parts.append(sorted(part))
    return [_cycle_in(graph, set(part), part[0]) for part in parts]


def _cycle_in(graph: Mapping[str, set[str]], part: set[str], start: str) -> list[str]:
    """A shortest path from `start` back to itself inside `part` (breadth first)."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for child in sorted(graph[node] & part):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if child not in came_from:
                    came_from[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"{start} is in a strongly connected part but on no cycle")


def private_imports(
    sources: Mapping[str, str], packages: set[str], allowed: Mapping[tuple[str, str], str]
) -> list[tuple[str, int, str]]:
    """(module, line, what) for each private import: a `_`-prefixed name or module of
    another module (dunders such as `__version__` are public), or any name of a private
    module outside the package that holds it.  `allowed` holds (module, prefix) pairs: that
    module may import the third-party private names starting with prefix (never npuir's)."""
    found: list[tuple[str, int, str]] = []
    for module, text in sources.items():
        tree = ast.parse(text)
        for node, base, name in _imports(module, module in packages, tree, False):
            dotted = f"{base}.{name}" if name else base
            parts = dotted.split(".")
            for i, part in enumerate(parts):
                if not (part.startswith("_") and not part.startswith("__")):
                    continue
                owner = ".".join(parts[:i])  # the module or package the private name is in
                if owner and (module == owner or module.startswith(owner + ".")):
                    # Its own package's private module (`from ._graph import Graph` in the
                    # package); a private *name* of that module is still another module's.
                    if i < len(parts) - 1 or dotted in sources:
                        continue
                if not dotted.startswith("npuir.") and any(
                    module == who and dotted.startswith(what) for who, what in allowed
                ):
                    continue
                found.append((module, node.lineno, f"{dotted} (private '{part}')"))
                break
    return found


def _sources() -> tuple[dict[str, Path], dict[str, str], set[str]]:
    files = product_modules()
    texts = {name: path.read_text(encoding="utf-8") for name, path in files.items()}
    packages = {name for name, path in files.items() if path.stem == "__init__"}
    return files, texts, packages


def check_cycles() -> int:
    """Print each import cycle among the product's modules; the number found."""
    _files, texts, packages = _sources()
    cycles = find_cycles(import_graph(texts, packages))
    for cycle in cycles:
        print(f"import cycle: {' -> '.join(cycle)}")
    return len(cycles)


def check_private_imports() -> int:
    """Print each private import in the product (file:line); the number found."""
    files, texts, packages = _sources()
    found = private_imports(texts, packages, THIRD_PARTY_PRIVATE)
    for module, line, what in found:
        where = files[module].relative_to(ROOT)
        print(f"{where}:{line}: error: {module} imports a private name: {what}")
    return len(found)


def main() -> int:
    lint = Path(sys.executable).with_name("lint-imports")
    with tempfile.TemporaryDirectory(prefix="npuir-imports-") as scratch:
        lay_out(Path(scratch))
        env = {**os.environ, "PYTHONPATH": scratch}
        config = str(ROOT / "pyproject.toml")
        contracts = subprocess.run([str(lint), config, "--no-cache"], cwd=scratch, env=env)
    cycles = check_cycles()
    private = check_private_imports()
    print(f"Import cycles: {cycles} found.  Private imports: {private} found.")
    return 1 if contracts.returncode or cycles or private else 0


if __name__ == "__main__":
    sys.exit(main())
