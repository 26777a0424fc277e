"""Out-of-tree passes: `--load-pass MODULE` and the `npuir.passes` entry-point group.

The tools run as a user runs them (subprocesses); the plug-in modules and the
installed package are written into a temporary directory put on PYTHONPATH
(a `*.dist-info` directory there is an installed distribution to
`importlib.metadata`, entry points included).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from npuir.diagnostics import UsageError
from npuir.passmanager.pipeline import build_pipeline
from npuir.passmanager.registry import PassRegistry

GOOD = """func.func @f(%a: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %0 = npu.relu %a : (tensor<4x8xf16>) -> tensor<4x8xf16>
  func.return %0 : tensor<4x8xf16>
}
"""

PLUGIN = '''
"""A plug-in: one pass that remarks on every function, and one imported pass it must ignore."""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from npuir.passes import ModulePass, option, remark
from npuir.transforms.sync_verify import SyncVerifyPass  # imported, so not registered


@dataclass(frozen=True)
class HelloPass(ModulePass):
    """Say hello to every function."""

    name = "{name}"

    greeting: str = option("hello", "what to say")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in op.ops:
            if isinstance(func, FuncOp):
                remark(ctx, func, f"{{self.greeting}} @{{func.sym_name.data}}")
'''


def _plugin(directory: Path, module: str, pass_name: str) -> Path:
    path = directory / f"{module}.py"
    path.write_text(PLUGIN.format(name=pass_name))
    return path


def _dist(directory: Path, package: str, entries: dict[str, str]) -> None:
    """An installed distribution `package` declaring `entries` in the `npuir.passes` group."""
    info = directory / f"{package}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.0\n")
    lines = "".join(f"{k} = {v}\n" for k, v in entries.items())
    (info / "entry_points.txt").write_text(f"[npuir.passes]\n{lines}")


def _tool(
    tool: str, *args: str | Path, path: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(path), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", f"npuir.tools.{tool}", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


def _usage_error(proc: subprocess.CompletedProcess[str], tool: str, message: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"npuir-{tool}: error: "), lines[0]
    assert message in lines[0], lines[0]


# --------------------------------------------------------------------------
# --load-pass
# --------------------------------------------------------------------------


@pytest.mark.slow
def test_load_pass_by_module_name_runs_it_by_name(tmp_path: Path) -> None:
    _plugin(tmp_path, "hello_plugin", "test-hello")
    (tmp_path / "in.mlir").write_text(GOOD)
    proc = _tool(
        "opt", tmp_path / "in.mlir", "--load-pass", "hello_plugin", "-p",
        "test-hello{greeting=hi},stream-partition", path=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "remark: hi @f" in proc.stderr
    assert "func.func @f" in proc.stdout


@pytest.mark.slow
def test_load_passes_from_python_makes_build_pipeline_know_the_name(tmp_path: Path) -> None:
    """`npuir.load_passes(module)` is `--load-pass` from Python (fresh process: it fills the
    default registry)."""
    path = _plugin(tmp_path, "hello_api", "test-hello-api")
    code = (
        "import npuir; "
        f"print(npuir.load_passes({str(path)!r})); "
        "print([p.name for p in npuir.build_pipeline('test-hello-api')])"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["['test-hello-api']", "['test-hello-api']"]


@pytest.mark.slow
def test_load_pass_by_file_path_and_list_passes(tmp_path: Path) -> None:
    path = _plugin(tmp_path, "hello_file", "test-hello")
    proc = _tool("opt", "--load-pass", path, "--list-passes")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("test-hello "))
    assert lines[at].endswith(f"Say hello to every function. [from {path}]")
    assert lines[at + 1 : at + 3] == ["    greeting: string = hello", "      what to say"]


@pytest.mark.slow
def test_load_pass_is_repeatable(tmp_path: Path) -> None:
    _plugin(tmp_path, "hello_one", "test-hello-one")
    _plugin(tmp_path, "hello_two", "test-hello-two")
    (tmp_path / "in.mlir").write_text(GOOD)
    proc = _tool(
        "opt", tmp_path / "in.mlir", "--load-pass", "hello_one", "--load-pass", "hello_two",
        "-p", "test-hello-one,test-hello-two{greeting=bye}", path=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "remark: hello @f" in proc.stderr and "remark: bye @f" in proc.stderr


@pytest.mark.slow
def test_npuir_run_loads_passes_for_its_pipeline(tmp_path: Path) -> None:
    _plugin(tmp_path, "hello_run", "test-hello")
    (tmp_path / "in.mlir").write_text(GOOD)
    proc = _tool(
        "run", tmp_path / "in.mlir", "--load-pass", "hello_run", "--timing-only",
        "--pipeline", "test-hello,npu-default", path=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "remark: hello @f" in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("tool", ["opt", "run"])
def test_a_module_that_cannot_be_imported_is_a_usage_error(tmp_path: Path, tool: str) -> None:
    (tmp_path / "in.mlir").write_text(GOOD)
    (tmp_path / "broken_plugin.py").write_text("import no_such_module_anywhere\n")
    proc = _tool("opt" if tool == "opt" else "run", tmp_path / "in.mlir", "--load-pass",
                 "broken_plugin", path=tmp_path)  # fmt: skip
    _usage_error(
        proc,
        tool,
        "--load-pass 'broken_plugin': cannot import it: "
        "ModuleNotFoundError: No module named 'no_such_module_anywhere'",
    )
    missing = _tool(tool, tmp_path / "in.mlir", "--load-pass", "no_such_plugin")
    _usage_error(missing, tool, "--load-pass 'no_such_plugin': cannot import it")
    nofile = _tool(tool, tmp_path / "in.mlir", "--load-pass", tmp_path / "absent.py")
    _usage_error(nofile, tool, f"--load-pass '{tmp_path / 'absent.py'}': no such file")


@pytest.mark.slow
def test_a_pass_named_like_a_builtin_is_a_usage_error(tmp_path: Path) -> None:
    _plugin(tmp_path, "clash_plugin", "sync-verify")
    proc = _tool("opt", "--load-pass", "clash_plugin", "--list-passes", path=tmp_path)
    _usage_error(
        proc, "opt", "module 'clash_plugin' defines pass 'sync-verify', a name npuir already uses"
    )
    _plugin(tmp_path, "pipeline_clash", "npu-default")
    proc = _tool("opt", "--load-pass", "pipeline_clash", "--list-passes", path=tmp_path)
    _usage_error(proc, "opt", "defines pass 'npu-default', a name npuir already uses")


@pytest.mark.slow
def test_the_same_name_from_two_modules_is_a_usage_error(tmp_path: Path) -> None:
    _plugin(tmp_path, "first_plugin", "test-hello")
    _plugin(tmp_path, "second_plugin", "test-hello")
    proc = _tool(
        "opt", "--load-pass", "first_plugin", "--load-pass", "second_plugin", "--list-passes",
        path=tmp_path,
    )  # fmt: skip
    _usage_error(
        proc,
        "opt",
        "module 'second_plugin' defines pass 'test-hello', already loaded from 'first_plugin'",
    )


@pytest.mark.slow
def test_a_module_without_passes_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "empty_plugin.py").write_text(
        "from npuir.transforms.sync_verify import SyncVerifyPass\n"
    )
    proc = _tool("opt", "--load-pass", "empty_plugin", "--list-passes", path=tmp_path)
    _usage_error(
        proc, "opt", "'empty_plugin': the module defines no ModulePass subclass with a name"
    )


# --------------------------------------------------------------------------
# The npuir.passes entry-point group
# --------------------------------------------------------------------------


@pytest.mark.slow
def test_an_installed_package_pass_is_usable_by_name(tmp_path: Path) -> None:
    _plugin(tmp_path, "hello_pkg", "test-hello")
    _dist(tmp_path, "hello-dist", {"test-hello": "hello_pkg:HelloPass"})
    (tmp_path / "in.mlir").write_text(GOOD)
    proc = _tool("opt", tmp_path / "in.mlir", "-p", "test-hello{greeting=hey}", path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "remark: hey @f" in proc.stderr
    listing = _tool("opt", "--list-passes", path=tmp_path)
    assert "Say hello to every function. [from hello-dist]" in listing.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("hello_pkg:Nothing", "cannot load entry point 'test-hello = hello_pkg:Nothing'"),
        ("no_such_pkg:HelloPass", "cannot load entry point 'test-hello = no_such_pkg:HelloPass'"),
        ("hello_pkg:option", "entry point 'test-hello = hello_pkg:option' (npuir.passes) "
         "is not a ModulePass subclass"),
        ("hello_pkg:SyncVerifyPass", "names pass 'sync-verify'; the entry point's name must "
         "equal the pass's name"),
    ],
)  # fmt: skip
def test_a_bad_entry_point_is_a_usage_error(tmp_path: Path, entry: str, message: str) -> None:
    _plugin(tmp_path, "hello_pkg", "test-hello")
    _dist(tmp_path, "bad-dist", {"test-hello": entry})
    (tmp_path / "in.mlir").write_text(GOOD)
    proc = _tool("opt", tmp_path / "in.mlir", "-p", "test-hello", path=tmp_path)
    _usage_error(proc, "opt", message)


@pytest.mark.slow
def test_an_entry_point_named_like_a_builtin_is_a_usage_error(tmp_path: Path) -> None:
    _plugin(tmp_path, "hello_pkg", "sync-verify")
    _dist(tmp_path, "shadow-dist", {"sync-verify": "hello_pkg:HelloPass"})
    proc = _tool("opt", "--list-passes", path=tmp_path)
    _usage_error(
        proc,
        "opt",
        "package 'shadow-dist' declares pass 'sync-verify' (npuir.passes entry point), "
        "a name npuir already uses",
    )


@pytest.mark.slow
def test_builtin_passes_do_not_read_the_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    def unreadable(group: str) -> list[object]:
        raise AssertionError(f"entry points of {group} read")

    monkeypatch.setattr("npuir.passmanager.registry.entry_points", unreadable)
    passes = build_pipeline("npu-default,insert-events{stats}", PassRegistry())
    assert [p.name for p in passes][-1] == "insert-events"
    with pytest.raises(AssertionError, match=r"entry points of npuir\.passes read"):
        build_pipeline("test-not-builtin", PassRegistry())


@pytest.mark.slow
def test_load_module_in_a_registry_of_ones_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    _plugin(tmp_path, "hello_lib", "test-hello")
    registry = PassRegistry()
    assert registry.load_module("hello_lib") == ["test-hello"]
    (built,) = build_pipeline("test-hello{greeting=yo}", registry)
    assert built.name == "test-hello"
    with pytest.raises(UsageError, match="unknown pass 'test-hello'"):
        build_pipeline("test-hello", PassRegistry())
