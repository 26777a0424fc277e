"""Large and extreme inputs: every one ends in a result or a located error, within budget.

`python bench/extreme_inputs.py [--scale S] [--only NAME,...] [--keep DIR]` writes each
input below (huge splats, hex and listed constants, huge strings, deep literals, extreme
integers, floats and dims, long chains; in `.mlir`, GE text and pbtxt, and `.pt2`), runs
the tool that
reads it in a child process under an address-space limit, and checks:

- the exit status is 0, 1 or 2 -- never 70 (an internal error) nor a signal -- and no
  traceback is printed;
- an error (exit 1) is located: its first line is `FILE:LINE:COL: error: ...`;
- peak memory stays within `MEMORY_PER_BYTE` x the input's size + `MEMORY_BASE`, and CPU
  time within `SECONDS_PER_MB` per MB + `SECONDS_BASE`: memory and time linear in the
  input.

`--scale` multiplies the size of every input that has one (1 = a few MB each, about a
minute on one core; 8 reaches the sizes of the review that found these: a 32 MB hex
constant, a 30 MB string, 13.5 MB of listed elements, a 50 MB op name).  Exit status 1
when any case misses its budget or ends badly.  `.pt2` archives are covered by
test/unit/test_hostile_inputs.py and bench/fuzz.py too; the `.pt2` cases here need torch
(to export the archive they edit).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
GE_SEED = ROOT / "test" / "frontends" / "Inputs" / "seed_multistream.txt"
MB = 1 << 20

MEMORY_PER_BYTE = 10
MEMORY_BASE = 300 * MB
"""Peak RSS budget: 10x the input plus the interpreter, xDSL and npuir loaded (~150 MB)."""
SECONDS_PER_MB = 2.0
SECONDS_BASE = 10.0
"""CPU budget: start-up and a shared machine's noise, then 2 s per MB of input."""
ADDRESS_LIMIT = 8 << 30
"""A runaway child fails here rather than exhausting the machine (the deep-stack thread
reserves 512 MiB of address space)."""

# Runs argv; prints the child's CPU seconds and peak RSS (KiB) as the last stderr line.
WRAPPER = """
import resource, subprocess, sys
proc = subprocess.run(sys.argv[3:], capture_output=True, timeout=float(sys.argv[2]),
    preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]),) * 2))
sys.stdout.buffer.write(proc.stdout[:4000])
sys.stderr.buffer.write(proc.stderr[:4000])
use = resource.getrusage(resource.RUSAGE_CHILDREN)
sys.stderr.write("\\nextreme-usage %f %d\\n" % (use.ru_utime + use.ru_stime, use.ru_maxrss))
sys.exit(proc.returncode)
"""

LOCATED = re.compile(r"^[^\n]*:\d+:\d+: error: ")


@dataclass
class Case:
    name: str
    make: Callable[[Path, int], list[str]]
    """Writes the input under the directory for the scale given; returns the command."""
    exits: tuple[int, ...]
    says: str = ""


def _tool(name: str) -> str:
    return str(BIN / name)


def _constant(d: Path, name: str, n: int, body: str, element: str = "f32") -> Path:
    p = d / name
    ty = f"tensor<{n}x{element}>"
    p.write_text(
        f"func.func @f() -> {ty} {{\n  %c = npu.constant dense<{body}> : {ty}\n"
        f"  func.return %c : {ty}\n}}\n"
    )
    return p


def _opt(p: Path, d: Path, *passes: str) -> list[str]:
    return [_tool("npuir-opt"), str(p), *passes, "-o", str(d / "out.mlir")]


def mlir_splat(d: Path, scale: int) -> list[str]:
    return _opt(_constant(d, "splat.mlir", 10**10, "1.0"), d)


def mlir_hex_splat(d: Path, scale: int) -> list[str]:
    return _opt(_constant(d, "hexsplat.mlir", 10**10, '"0x0000803F"'), d)


def mlir_hex(d: Path, scale: int) -> list[str]:
    n = scale * 500_000  # 4 MB of hex digits per unit of scale
    digits = bytes(range(256)).hex().upper() * (n * 8 // 512 + 1)
    return _opt(_constant(d, "hex.mlir", n, f'"0x{digits[: n * 8]}"'), d)


def mlir_list(d: Path, scale: int) -> list[str]:
    n = scale * 400_000  # ~4.5 MB of literal per unit of scale
    body = "[" + ", ".join(f"{i % 1000}.25" for i in range(n)) + "]"
    return _opt(_constant(d, "list.mlir", n, body), d)


def mlir_int_list(d: Path, scale: int) -> list[str]:
    n = scale * 400_000
    body = "[" + ", ".join(str(i % 30000 - 15000) for i in range(n)) + "]"
    return _opt(_constant(d, "ints.mlir", n, body, "i32"), d)


def mlir_string(d: Path, scale: int) -> list[str]:
    p = d / "string.mlir"
    big = "s" * (scale * 4 * MB)
    p.write_text(
        f'func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> attributes {{tag = "{big}"}} {{\n'
        "  %y = npu.relu %x : (tensor<8xf32>) -> tensor<8xf32>\n"
        "  func.return %y : tensor<8xf32>\n}\n"
    )
    return _opt(p, d, "-p", "npu-default")


def mlir_deep_literal(d: Path, scale: int) -> list[str]:
    p = d / "deep.mlir"
    depth = 20_000  # beyond npuir.deep_stack.MAX_NESTING: a located refusal
    p.write_text(
        "func.func @f() attributes {a = " + "[" * depth + "]" * depth + "} {\n  func.return\n}\n"
    )
    return _opt(p, d)


def mlir_deep_dense(d: Path, scale: int) -> list[str]:
    depth = 3000  # a tensor<1x1x...x1> literal, within the nesting bound
    ty = "tensor<" + "1x" * depth + "f32>"
    p = d / "deepdense.mlir"
    p.write_text(
        f"func.func @f() -> {ty} {{\n  %c = npu.constant dense<{'[' * depth}1.0{']' * depth}> : {ty}\n"
        f"  func.return %c : {ty}\n}}\n"
    )
    return _opt(p, d)


def mlir_big_int(d: Path, scale: int) -> list[str]:
    p = _constant(d, "bigint.mlir", 1, "9" * 5000, "i64")
    return _opt(p, d)


def mlir_big_float(d: Path, scale: int) -> list[str]:
    return _opt(_constant(d, "bigfloat.mlir", 2, "[1.0, 1.0e39]"), d)


def mlir_huge_dims(d: Path, scale: int) -> list[str]:
    p = d / "dims.mlir"
    t = "tensor<1000000000000x1000000000000xf16>"
    p.write_text(
        'module attributes {npu.target = "910b2"} {\n'
        f"func.func @f(%x: {t}) -> {t} {{\n"
        f"  %0 = npu.relu %x : ({t}) -> {t}\n  %1 = npu.relu %0 : ({t}) -> {t}\n"
        f"  func.return %1 : {t}\n}}\n}}\n"
    )
    return _opt(p, d, "-p", "npu-default")


def mlir_dim_beyond_i64(d: Path, scale: int) -> list[str]:
    return _opt(_constant(d, "dim.mlir", 10**30, "1.0"), d)


def mlir_splat_run(d: Path, scale: int) -> list[str]:
    p = d / "splatrun.mlir"
    p.write_text(
        'module attributes {npu.target = "910b2"} {\n'
        "func.func @f(%x: tensor<f32>) -> tensor<f32> {\n"
        "  %c = npu.constant dense<1.0> : tensor<100000x100000xf32>\n"
        "  %s = npu.reduce_sum %c : (tensor<100000x100000xf32>) -> tensor<f32>\n"
        "  %y = npu.add %x, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
        "  func.return %y : tensor<f32>\n}\n}\n"
    )
    return [_tool("npuir-run"), str(p), "--check"]


def _ge(d: Path, name: str, old: str, new: str, count: int = 1) -> list[str]:
    text = GE_SEED.read_text()
    assert old in text, old
    p = d / name
    p.write_text(text.replace(old, new, count))
    return [_tool("npuir-import"), str(p), "-o", str(d / "out.mlir")]


def ge_op_name(d: Path, scale: int) -> list[str]:
    # The op and every input naming it.
    return _ge(d, "opname.txt", '"arg4', '"' + "n" * (scale * 3 * MB), count=-1)


def ge_stream_tag(d: Path, scale: int) -> list[str]:
    return _ge(d, "tag.txt", 's: "1"', 's: "' + "t" * (scale * 4 * MB) + '"')


def ge_big_int(d: Path, scale: int) -> list[str]:
    return _ge(d, "int.txt", "i: 0", "i: " + "9" * 5000)


def ge_big_float(d: Path, scale: int) -> list[str]:
    return _ge(d, "float.txt", "i: 0", "f: 1e999999")


def ge_big_dim(d: Path, scale: int) -> list[str]:
    return _ge(d, "dim.txt", "dim: 1000", "dim: 100000000000000000000")


def ge_huge_dims(d: Path, scale: int) -> list[str]:
    return _ge(d, "dims.txt", "dim: 1000\n", "dim: 1000000000000\n")


def ge_deep(d: Path, scale: int) -> list[str]:
    p = d / "deep.pbtxt"
    depth = 100_000
    p.write_text('node {\n  name: "a"\n  op: "Data"\n' + "attr { " * depth + "}" * depth + "\n}\n")
    return [_tool("npuir-import"), str(p)]


_DESC = (
    '  {io} {{\n    name: "y"\n    dtype: DT_FLOAT16\n'
    '    shape {{\n      dim: 2048\n      dim: 2048\n    }}\n    layout: "ND"\n  }}\n'
)


def ge_chain_text(n: int) -> str:
    """A GE txt dump of a chain of `n` ops, matmuls and adds alternating (the program of
    bench/generate.py's `chain`)."""
    out_desc = _DESC.format(io="output_desc")
    in_desc = _DESC.format(io="input_desc")
    parts = ['name: "graph"']
    for i, name in enumerate(("x", "w")):
        parts.append(
            f'op {{\n  name: "{name}"\n  type: "Data"\n  attr {{\n    key: "index"\n'
            f"    value {{\n      i: {i}\n    }}\n  }}\n{out_desc}}}"
        )
    prev = "x"
    for i in range(n):
        kind, other = ("MatMul", "w") if i % 2 == 0 else ("Add", "x")
        parts.append(
            f'op {{\n  name: "n{i}"\n  type: "{kind}"\n  input: "{prev}:0"\n'
            f'  input: "{other}:0"\n{in_desc}{in_desc}{out_desc}}}'
        )
        prev = f"n{i}"
    parts.append(f'op {{\n  name: "out"\n  type: "NetOutput"\n  input: "{prev}:0"\n{in_desc}}}')
    return "\n".join(parts) + "\n"


_PB_DESC = '\'name: \\"{name}\\"\\ndtype: DT_FLOAT16\\nshape {{\\n  dim: 2048\\n  dim: 2048\\n}}\\nlayout: \\"ND\\"\\n\''


def _pb_attr(key: str, value: str) -> str:
    return f'  attr {{\n    key: "{key}"\n    value {{\n      s: {value}\n    }}\n  }}\n'


def ge_chain_pbtxt(n: int) -> str:
    """The chain of `ge_chain_text` as TorchAir's pbtxt dump (`node` blocks whose
    descriptors are GE text in escaped strings, as `ge_writer.graph_text` writes them)."""
    out_desc = _pb_attr("[o]y", _PB_DESC.format(name="y"))
    in_descs = _pb_attr("[i]x1", _PB_DESC.format(name="x1")) + _pb_attr(
        "[i]x2", _PB_DESC.format(name="x2")
    )
    parts = []
    for i, name in enumerate(("x", "w")):
        index = _pb_attr("index", f"'i: {i}\\n'")
        parts.append(f'node {{\n  name: "{name}"\n  op: "Data"\n{index}{out_desc}}}')
    prev = "x"
    for i in range(n):
        kind, other = ("MatMul", "w") if i % 2 == 0 else ("Add", "x")
        parts.append(
            f'node {{\n  name: "n{i}"\n  op: "{kind}"\n  input: "{prev}:0"\n'
            f'  input: "{other}:0"\n{in_descs}{out_desc}}}'
        )
        prev = f"n{i}"
    x = _pb_attr("[i]x", _PB_DESC.format(name="x"))
    parts.append(f'node {{\n  name: "out"\n  op: "NetOutput"\n  input: "{prev}:0"\n{x}}}')
    return "\n".join(parts) + "\n"


def ge_chain_pb(d: Path, scale: int) -> list[str]:
    p = d / "chain.pbtxt"
    p.write_text(ge_chain_pbtxt(scale * 5000))
    return [_tool("npuir-import"), str(p), "-o", str(d / "out.mlir")]


def ge_chain(d: Path, scale: int) -> list[str]:
    p = d / "chain.txt"
    p.write_text(ge_chain_text(scale * 5000))
    return [_tool("npuir-import"), str(p), "-o", str(d / "out.mlir")]


def _pt2(d: Path, width: int, edit: Callable[[str], str] = lambda text: text) -> list[str]:
    """A `torch.export` archive of `relu(linear(x))` (x 4x8, the weight 8 x `width` f32),
    its program's JSON passed through `edit`."""
    import zipfile

    import torch

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.l = torch.nn.Linear(8, width)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.l(x))

    made = d / "made.pt2"
    torch.export.save(torch.export.export(Model(), (torch.randn(4, 8),)), str(made))
    p = d / "model.pt2"
    with zipfile.ZipFile(made) as src, zipfile.ZipFile(p, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("models/model.json"):
                data = edit(data.decode()).encode()
            dst.writestr(info.filename, data)
    made.unlink()
    return [_tool("npuir-import"), str(p), "-o", str(d / "out.mlir")]


def pt2_big_weight(d: Path, scale: int) -> list[str]:
    return _pt2(d, scale * 128 * 1024)  # 4 MB of f32 weight per unit of scale


def pt2_long_name(d: Path, scale: int) -> list[str]:
    # The relu node and every reference to it.
    return _pt2(d, 8, lambda text: text.replace('"relu"', '"' + "r" * (scale * 4 * MB) + '"'))


def _x_sizes(text: str, sizes: str) -> str:
    old = '"x": {"dtype": 7, "sizes": [{"as_int": 4}, {"as_int": 8}]'
    assert old in text, "torch.export wrote x's sizes otherwise"
    return text.replace(old, '"x": {"dtype": 7, "sizes": ' + sizes)


def pt2_huge_dims(d: Path, scale: int) -> list[str]:
    big = '{"as_int": 1000000000000}'
    return _pt2(d, 8, lambda text: _x_sizes(text, f'[{big}, {{"as_int": 8}}]'))


def pt2_big_int(d: Path, scale: int) -> list[str]:
    big = '{"as_int": ' + "9" * 5000 + "}"
    return _pt2(d, 8, lambda text: _x_sizes(text, f'[{big}, {{"as_int": 8}}]'))


CASES = [
    Case("mlir-splat", mlir_splat, (0,)),
    Case("mlir-hex-splat", mlir_hex_splat, (0,)),
    Case("mlir-hex", mlir_hex, (0,)),
    Case("mlir-list", mlir_list, (0,)),
    Case("mlir-int-list", mlir_int_list, (0,)),
    Case("mlir-string", mlir_string, (0,)),
    Case("mlir-deep-literal", mlir_deep_literal, (1,), "nesting deeper than"),
    Case("mlir-deep-dense", mlir_deep_dense, (0,)),
    Case("mlir-big-int", mlir_big_int, (1,), "digits is too long"),
    Case("mlir-big-float", mlir_big_float, (1,), "out of range of f32"),
    Case("mlir-huge-dims", mlir_huge_dims, (1,), "i64"),
    Case("mlir-dim-beyond-i64", mlir_dim_beyond_i64, (1,)),
    Case("mlir-splat-run", mlir_splat_run, (1,), "host memory"),
    Case("ge-op-name", ge_op_name, (0,)),
    Case("ge-stream-tag", ge_stream_tag, (0, 1)),
    Case("ge-big-int", ge_big_int, (1,), "at most 4300"),
    Case("ge-big-float", ge_big_float, (1,), "out of range of a double"),
    Case("ge-big-dim", ge_big_dim, (1,), "outside -1 (dynamic)"),
    Case("ge-huge-dims", ge_huge_dims, (0, 1)),
    Case("ge-deep", ge_deep, (1,)),
    Case("ge-chain", ge_chain, (0,)),
    Case("ge-chain-pbtxt", ge_chain_pb, (0,)),
    Case("pt2-big-weight", pt2_big_weight, (0,)),
    Case("pt2-long-name", pt2_long_name, (0, 1)),
    Case("pt2-huge-dims", pt2_huge_dims, (0, 1)),
    Case("pt2-big-int", pt2_big_int, (1,)),
]


def run_case(case: Case, scale: int, directory: Path) -> dict[str, object]:
    """Run one case; its size, CPU seconds, peak RSS, exit status and what went wrong."""
    argv = case.make(directory, scale)
    inputs = [Path(a) for a in argv[1:] if Path(a).is_file()]
    size = sum(p.stat().st_size for p in inputs)
    memory_budget = MEMORY_PER_BYTE * size + MEMORY_BASE
    time_budget = SECONDS_PER_MB * size / MB + SECONDS_BASE
    start = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", WRAPPER, str(ADDRESS_LIMIT), str(4 * time_budget), *argv],
            capture_output=True,
            text=True,
            errors="replace",
        )
    finally:
        wall = time.monotonic() - start
    *lines, last = proc.stderr.rstrip().splitlines() or [""]
    stderr = "\n".join(lines).strip()
    problems: list[str] = []
    cpu, peak = float("nan"), 0
    if last.startswith("extreme-usage"):
        cpu, peak = float(last.split()[1]), int(last.split()[2]) * 1024
    else:
        problems.append("the child did not finish (timeout)")
    if proc.returncode not in case.exits:
        problems.append(f"exit {proc.returncode}, expected {case.exits}")
    if "Traceback" in stderr or "internal error" in stderr:
        problems.append("a traceback or an internal error")
    if proc.returncode == 1 and not LOCATED.match(stderr):
        problems.append(f"an unlocated error: {stderr.splitlines()[0] if stderr else ''!r}")
    if case.says and case.says not in stderr:
        problems.append(f"the message lacks {case.says!r}")
    if peak > memory_budget:
        problems.append(f"peak {peak / MB:.0f} MB over {memory_budget / MB:.0f} MB")
    if cpu > time_budget:
        problems.append(f"{cpu:.1f} CPU-s over {time_budget:.1f} s")
    for path in directory.iterdir():
        path.unlink()
    return {
        "name": case.name,
        "bytes": size,
        "exit": proc.returncode,
        "cpu_s": cpu,
        "wall_s": wall,
        "peak_mb": peak / MB,
        "problems": problems,
        "first_line": stderr.splitlines()[0][:160] if stderr else "",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=1, help="size multiplier (default 1)")
    ap.add_argument("--only", help="comma-separated case names")
    ap.add_argument("--keep", type=Path, help="write the inputs here instead of a temp dir")
    args = ap.parse_args(argv)
    chosen = CASES
    if args.only:
        names = set(args.only.split(","))
        chosen = [c for c in CASES if c.name in names]
        if unknown := names - {c.name for c in chosen}:
            ap.error(f"unknown cases: {', '.join(sorted(unknown))}")
    failed = 0
    print(f"{'case':<22}{'MB':>8}{'exit':>6}{'CPU s':>8}{'peak MB':>9}  result")
    with tempfile.TemporaryDirectory(prefix="npuir-extreme-") as scratch:
        base = args.keep or Path(scratch)
        for case in chosen:
            directory = base / case.name
            directory.mkdir(parents=True, exist_ok=True)
            row = run_case(case, args.scale, directory)
            problems = row["problems"]
            assert isinstance(problems, list)
            failed += bool(problems)
            verdict = "ok" if not problems else "FAIL: " + "; ".join(problems)
            print(
                f"{row['name']:<22}{row['bytes'] / MB:>8.2f}{row['exit']:>6}"  # type: ignore[operator]
                f"{row['cpu_s']:>8.2f}{row['peak_mb']:>9.0f}  {verdict}",
                flush=True,
            )
    print(f"{len(chosen) - failed} of {len(chosen)} within budget")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
