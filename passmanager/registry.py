"""Where a pass name resolves: npuir's passes, installed packages' and loaded modules'.

Three sources, each name in at most one of them:

- npuir's own passes (`npuir.transforms.PASSES`) and named pipelines
  (`npuir.transforms.pipelines.PIPELINES`);
- the `npuir.passes` entry-point group: an installed package declares
  `my-pass = "my_package.my_module:MyPass"` in its pyproject's
  `[project.entry-points."npuir.passes"]`; the entry's name must equal the
  class's `name`.  The group is read only when a name is not npuir's own (and
  by `--list-passes`), and a class is imported only when its pass is used;
- modules loaded with `load_module` (`--load-pass MODULE` on the tools): every
  `ModulePass` subclass *defined* in the module (not merely imported into it)
  that has a `name` is registered.  MODULE is a dotted module name on
  `sys.path`, or the path of a `.py` file.

A name that is already taken (by npuir, another package or another loaded
module), a module that cannot be imported or defines no pass, and an entry
point that is not a pass are `UsageError`s (exit status 2 in the tools).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
import textwrap
import types
from collections.abc import Callable, Mapping
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

from xdsl.passes import ModulePass

from npuir.diagnostics import UsageError

ENTRY_POINT_GROUP = "npuir.passes"
"""The entry-point group an installed package declares its passes in."""

BUILTIN = "npuir"
"""The origin `origin()` gives npuir's own passes."""


class PassRegistry:
    """Pass names to pass classes, from npuir, entry points and loaded modules."""

    def __init__(
        self,
        builtin: Mapping[str, Callable[[], type[ModulePass]]] | None = None,
        pipelines: Mapping[str, str] | None = None,
        group: str = ENTRY_POINT_GROUP,
    ) -> None:
        if builtin is None:
            from npuir.transforms import PASSES

            builtin = PASSES
        if pipelines is None:
            from npuir.transforms.pipelines import PIPELINES

            pipelines = PIPELINES
        self.builtin = dict(builtin)
        self.pipelines = dict(pipelines)
        self._group = group
        self._loaded: dict[str, type[ModulePass]] = {}
        self._loaded_from: dict[str, str] = {}
        self._entry_points: dict[str, EntryPoint] | None = None

    # ------------------------------------------------------------------
    # Lookup
    # ------------------------------------------------------------------

    def get(self, name: str) -> type[ModulePass] | None:
        """The pass class called `name`, or None if no source has it."""
        factory = self.builtin.get(name)
        if factory is not None:
            return factory()
        if name in self._loaded:
            return self._loaded[name]
        entry = self._scan().get(name)
        return None if entry is None else self._load_entry_point(entry)

    def names(self) -> list[str]:
        """Every pass name (pipelines excluded), sorted."""
        return sorted({*self.builtin, *self._loaded, *self._scan()})

    def origin(self, name: str) -> str:
        """Where pass `name` comes from: `npuir`, a module loaded, or a package."""
        if name in self.builtin:
            return BUILTIN
        if name in self._loaded_from:
            return self._loaded_from[name]
        entry = self._scan()[name]
        return entry.dist.name if entry.dist is not None else entry.value

    # ------------------------------------------------------------------
    # Out-of-tree passes
    # ------------------------------------------------------------------

    def load_module(self, module_name: str) -> list[str]:
        """Import `module_name` (dotted name or .py path) and register the passes it defines.

        Returns the names registered.
        """
        module = _import(module_name)
        found = [
            cls
            for _, cls in inspect.getmembers(module, inspect.isclass)
            if issubclass(cls, ModulePass)
            and cls.__module__ == module.__name__
            and isinstance(getattr(cls, "name", None), str)
        ]
        if not found:
            raise UsageError(
                f"--load-pass '{module_name}': the module defines no ModulePass subclass "
                "with a name"
            )
        for cls in found:
            self._check_free(cls.name, f"module '{module_name}'")
        for cls in found:
            self._loaded[cls.name] = cls
            self._loaded_from[cls.name] = module_name
        return [cls.name for cls in found]

    def _check_free(self, name: str, claimant: str) -> None:
        if name in self.builtin or name in self.pipelines:
            raise UsageError(f"{claimant} defines pass '{name}', a name npuir already uses")
        if name in self._loaded:
            raise UsageError(
                f"{claimant} defines pass '{name}', already loaded from '{self._loaded_from[name]}'"
            )
        entry = self._scan().get(name)
        if entry is not None:
            raise UsageError(
                f"{claimant} defines pass '{name}', which package "
                f"'{entry.dist.name if entry.dist else entry.value}' already provides"
            )

    def _scan(self) -> dict[str, EntryPoint]:
        """The group's entry points by name; a name npuir uses is an error."""
        if self._entry_points is None:
            found: dict[str, EntryPoint] = {}
            for entry in entry_points(group=self._group):
                where = f"package '{entry.dist.name if entry.dist else entry.value}'"
                if entry.name in self.builtin or entry.name in self.pipelines:
                    raise UsageError(
                        f"{where} declares pass '{entry.name}' ({self._group} entry point), "
                        "a name npuir already uses"
                    )
                if entry.name in found and found[entry.name].value != entry.value:
                    raise UsageError(
                        f"{where} declares pass '{entry.name}' ({self._group} entry point), "
                        f"which '{found[entry.name].value}' also declares"
                    )
                found[entry.name] = entry
            self._entry_points = found
        return self._entry_points

    def _load_entry_point(self, entry: EntryPoint) -> type[ModulePass]:
        where = f"entry point '{entry.name} = {entry.value}' ({self._group})"
        try:
            obj = entry.load()
        except Exception as exc:
            raise UsageError(f"cannot load {where}: {_first_line(exc)}") from None
        if not (isinstance(obj, type) and issubclass(obj, ModulePass)):
            raise UsageError(f"{where} is not a ModulePass subclass")
        if getattr(obj, "name", None) != entry.name:
            raise UsageError(
                f"{where} names pass '{getattr(obj, 'name', None)}'; "
                "the entry point's name must equal the pass's name"
            )
        return obj


def _import(module_name: str) -> types.ModuleType:
    """Import a dotted module name, or a .py file by path; failures are `UsageError`s."""
    try:
        if module_name.endswith(".py"):
            path = Path(module_name)
            if not path.is_file():
                raise UsageError(f"--load-pass '{module_name}': no such file")
            # A name of its own, so that a file called json.py does not replace a stdlib module.
            spec = importlib.util.spec_from_file_location(f"npuir_load_pass.{path.stem}", path)
            if spec is None or spec.loader is None:
                raise UsageError(f"--load-pass '{module_name}': not a Python module")
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            return module
        return importlib.import_module(module_name)
    except UsageError:
        raise
    except Exception as exc:
        raise UsageError(
            f"--load-pass '{module_name}': cannot import it: {_first_line(exc)}"
        ) from None


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def describe_passes(registry: PassRegistry | None = None) -> str:
    """`npuir-opt --list-passes`: each pass with its summary, the IR states it needs,
    establishes and may undo (`npuir.passes.Contract`), its options, then the pipelines."""
    from npuir.passes import contract_of, options_of
    from npuir.transforms.pipelines import PIPELINE_SUMMARIES

    registry = registry or default_registry()
    width, indent = 24, " " * 6
    lines: list[str] = []
    for name in registry.names():
        cls = registry.get(name)
        assert cls is not None
        doc = (cls.__doc__ or "").strip().splitlines()
        origin = registry.origin(name)
        where = "" if origin == BUILTIN else f" [from {origin}]"
        lines.append(f"{name:<{width}} {doc[0] if doc else ''}{where}")
        lines.extend(f"  {line}" for line in contract_of(cls).describe())
        for opt in options_of(cls):
            lines.append(f"    {opt.signature}")
            meaning = opt.meaning or "(undocumented)"
            lines.extend(
                textwrap.wrap(meaning, 96, initial_indent=indent, subsequent_indent=indent)
            )
    for name in sorted(registry.pipelines):
        summary = PIPELINE_SUMMARIES.get(name, "")
        lines.append(f"{name:<{width}} {summary} ({registry.pipelines[name]})")
    return "\n".join(lines) + "\n"


_DEFAULT: PassRegistry | None = None


def default_registry() -> PassRegistry:
    """The registry the tools and `build_pipeline` use unless given another."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = PassRegistry()
    return _DEFAULT


def load_passes(module_name: str) -> list[str]:
    """Register the passes `module_name` defines in the default registry (`--load-pass`)."""
    return default_registry().load_module(module_name)
