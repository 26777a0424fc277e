"""The fast parser reads exactly what xDSL's parser reads (bench/parse_diff.py).

On every `.mlir` input of the repository, the benchmark programs, their generic and
located re-prints and a seeded batch of fuzz mutations, `--parser=fast` and
`--parser=xdsl` give the same IR (printed with locations, custom and generic) or the
same diagnostic.  Longer runs: `python bench/parse_diff.py --cases 10000`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH))

import parse_diff  # noqa: E402


def _report(found: list[tuple[str, parse_diff.Outcome, parse_diff.Outcome]]) -> str:
    return "\n".join(
        f"{label}\n  fast: {fast!r:.300}\n  xdsl: {ref!r:.300}" for label, fast, ref in found
    )


def _recorded(monkeypatch: pytest.MonkeyPatch, method: str) -> list[Any]:
    """What `OpLineReader.<method>` builds from now on (its results other than None): the
    differential tests would pass with a fast path that never fires."""
    from npuir.fastparse import OpLineReader

    got: list[Any] = []
    original = getattr(OpLineReader, method)

    def recording(self: OpLineReader, parser: object, start: int) -> object:
        out = original(self, parser, start)
        if out is not None:
            got.append(out)
        return out

    monkeypatch.setattr(OpLineReader, method, recording)
    return got


@pytest.mark.slow
def test_repository_inputs_read_the_same() -> None:
    found = list(parse_diff.differences(parse_diff.repo_inputs()))
    assert not found, _report(found)


@pytest.mark.slow
def test_benchmark_programs_read_the_same() -> None:
    found = list(parse_diff.differences(parse_diff.program_inputs(200)))
    assert not found, _report(found)


@pytest.mark.slow
def test_nested_scopes_read_the_same() -> None:
    found = list(parse_diff.differences(parse_diff.nested_inputs()))
    assert not found, _report(found)


def test_scope_edits_read_the_same() -> None:
    inputs = list(parse_diff.scope_inputs())
    assert len(inputs) == len(parse_diff.SCOPE_EDITS)
    found = list(parse_diff.differences(iter(inputs)))
    assert not found, _report(found)
    # Both kinds: edits the parsers accept and edits they refuse.
    kinds = {parse_diff.outcome(text, "fast")[0] for _, text in inputs}
    assert {"ok", "error"} <= kinds


@pytest.mark.slow
def test_fuzzed_inputs_read_the_same() -> None:
    found = list(parse_diff.differences(parse_diff.fuzz_inputs(100, seed=7)))
    assert not found, _report(found)


def test_fast_path_reads_the_benchmark_ops(monkeypatch: pytest.MonkeyPatch) -> None:
    # The differential tests would pass with a fast path that never fires: check that it
    # builds the ops of a benchmark program itself.
    from generate import transformer_layers

    from npuir import make_context
    from npuir.parsing import parse_module

    text = transformer_layers(100)
    ctx = make_context()
    ctx.diagnostics.sources.add("t.mlir", text)
    built = _recorded(monkeypatch, "read")
    module = parse_module(ctx, text, "t.mlir", ctx.diagnostics.sources)
    leaf_ops = [op for op in module.walk() if not op.regions]
    assert len(built) == len(leaf_ops)


def test_fast_path_reads_ops_with_file_locations(monkeypatch: pytest.MonkeyPatch) -> None:
    # What an import route writes: every op with `loc("file":line:col)`.  The fast path
    # reads those ops (with the location they name, as xDSL's parser gives it) and leaves
    # other locations to the reference parser.
    from generate import transformer_layers
    from xdsl.dialects.builtin import FileLineColLoc

    from npuir import make_context, print_ir
    from npuir.parsing import parse_module

    ctx = make_context()
    source = transformer_layers(20)
    ctx.diagnostics.sources.add("t.mlir", source)
    located = print_ir(parse_module(ctx, source, "t.mlir", ctx.diagnostics.sources), debuginfo=True)
    located = re.sub(r'loc\("t\.mlir":(\d+):', r'loc("other.py":\1:', located, count=1)
    renamed = re.sub(r'loc\(("t\.mlir":\d+:\d+)\)', r'loc("step"(\1))', located, count=1)
    assert "other.py" in located and renamed != located
    built = _recorded(monkeypatch, "read")
    ctx.diagnostics.sources.add("l.mlir", located)
    module = parse_module(ctx, located, "l.mlir", ctx.diagnostics.sources)
    leaf_ops = [op for op in module.walk() if not op.regions and op.name != "builtin.module"]
    assert len(built) == len(leaf_ops)
    assert all(isinstance(op.location, FileLineColLoc) for op in built)
    assert any(op.location.filename.data == "other.py" for op in built)
    assert print_ir(module, debuginfo=True) == located
    built.clear()
    ctx.diagnostics.sources.add("n.mlir", renamed)
    module = parse_module(ctx, renamed, "n.mlir", ctx.diagnostics.sources)
    assert print_ir(module, debuginfo=True) == renamed
    assert len(built) == len(leaf_ops) - 1  # the op with a named location: xDSL's


_T = "tensor<2x2xf16>"
_NAMED = [
    # (attribute dictionary, location): what an import writes, and its near misses
    ('{npu.op_name = "n3"}', 'loc("dump.txt":139:1)'),
    ('{npu.op_name = "n3", stream.on = @s0}', 'loc("dump.txt":2:7)'),
    ('{stream.on = @s0, npu.op_name = "with space, comma"}', 'loc("a b.txt":1:1)'),
    ('{npu.op_name = "\\41"}', 'loc("dump.txt":3:1)'),  # an escape: the reference's
    ('{npu.op_name = "x", npu.op_name = "y"}', 'loc("dump.txt":4:1)'),  # a key twice
    ('{npu.op_name = "x", npu.kernel = [1, 2]}', 'loc("dump.txt":5:1)'),
    ('{npu.op_name = "x", npu.priority = 3 : i64}', 'loc("d\\22.txt":6:1)'),
    ('{npu.op_name = "x", stream.on = @missing}', 'loc("dump.txt":999999999:1)'),
    ('{npu.op_name = "x" }', 'loc("dump.txt":7:1) '),
    ('{npu.op_name = "x",}', 'loc("dump.txt":8:1)'),
    ('{npu.op_name = "x" = 1}', 'loc("dump.txt":9:1)'),
]


@pytest.mark.parametrize(("attrs", "loc"), _NAMED)
def test_named_ops_with_file_locations_read_the_same(attrs: str, loc: str) -> None:
    """The fast path reads an op's attribute dictionary entry by entry when it holds
    strings (an import names every op) and builds its file location itself: the same IR,
    or the same diagnostic, as xDSL's parser, and the fast path does read the plain case."""
    text = (
        'module {\n  stream.decl @s0 "<main>" priority 0\n'
        f"  func.func @f(%a: {_T}) -> {_T} {{\n"
        f"    %b = npu.add %a, %a {attrs} : ({_T}, {_T}) -> {_T} {loc}\n"
        f"    func.return %b : {_T}\n  }}\n}}\n"
    )
    fast, ref = parse_diff.outcome(text, "fast"), parse_diff.outcome(text, "xdsl")
    assert fast == ref


def test_the_fast_path_builds_named_located_ops(monkeypatch: pytest.MonkeyPatch) -> None:
    from xdsl.dialects.builtin import FileLineColLoc, StringAttr

    from npuir import make_context
    from npuir.parsing import parse_module

    ctx = make_context()
    attrs, loc = _NAMED[1]
    ops = "".join(
        f"    %b{i} = npu.add %a, %a {attrs.replace('n3', f'n{i}')} : ({_T}, {_T}) -> {_T} {loc}\n"
        for i in range(3)
    )
    text = (
        f'module {{\n  stream.decl @s0 "<main>" priority 0\n  func.func @f(%a: {_T}) -> {_T} {{\n'
        f"{ops}    func.return %b2 : {_T}\n  }}\n}}\n"
    )
    built = _recorded(monkeypatch, "read")
    parse_module(ctx, text, "t.mlir", ctx.diagnostics.sources)
    adds = [op for op in built if op.name == "npu.add"]
    assert len(adds) == 3
    assert [op.attributes["npu.op_name"] for op in adds] == [StringAttr(f"n{i}") for i in range(3)]
    assert all(isinstance(op.location, FileLineColLoc) for op in adds)
    assert adds[0].location.line.data == 2 and adds[0].location.filename.data == "dump.txt"


def test_parser_xdsl_selects_the_reference_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from generate import chain

    from npuir.fastparse import OpLineReader
    from npuir.tools import opt

    calls: list[int] = []
    original = OpLineReader.read

    def counting(self: OpLineReader, parser: object, start: int) -> object:
        calls.append(start)
        return original(self, parser, start)  # type: ignore[arg-type]

    monkeypatch.setattr(OpLineReader, "read", counting)
    path = tmp_path / "chain.mlir"
    path.write_text(chain(20))
    assert opt.run(["--parser=xdsl", str(path)]) == 0
    reference = capsys.readouterr().out
    assert calls == []
    assert opt.run([str(path)]) == 0
    assert capsys.readouterr().out == reference
    assert calls


def test_fast_path_reads_generic_ops_with_regions(monkeypatch: pytest.MonkeyPatch) -> None:
    # The generic form of the module, the function and every scope is read by the fast
    # path up to the region list and after it; a result written `%r:1` is xDSL's
    # business, but the fast path still reads that op's properties.
    import re

    from generate import transformer_layers

    from npuir import make_context, print_ir
    from npuir.fastparse import OpLineReader
    from npuir.parsing import parse_module

    ctx = make_context()
    ctx.diagnostics.sources.add("t.mlir", transformer_layers(30))
    module = parse_module(ctx, transformer_layers(30), "t.mlir", ctx.diagnostics.sources)
    generic = print_ir(module, generic=True)
    calls: dict[str, list[object]] = {
        "region_op_header": [],
        "region_op_trailer": [],
        "properties": [],
    }
    for method in calls:
        original = getattr(OpLineReader, method)

        def counting(
            self: OpLineReader, *args: object, _o: object = original, _m: str = method
        ) -> object:
            got = _o(self, *args)  # type: ignore[operator]
            calls[_m].append(got)
            return got

        monkeypatch.setattr(OpLineReader, method, counting)

    def parse(text: str) -> None:
        ctx = make_context()
        ctx.diagnostics.sources.add("g.mlir", text)
        parse_module(ctx, text, "g.mlir", ctx.diagnostics.sources)

    parse(generic)
    with_regions = generic.count("({")
    headers = [got for got in calls["region_op_header"] if got is not None]
    assert len(headers) == with_regions
    assert {h.cls.name for h in headers} == {  # type: ignore[attr-defined]
        "builtin.module",
        "func.func",
        "stream.switch",
    }
    assert len(calls["region_op_trailer"]) == with_regions
    assert all(got is not None for got in calls["region_op_trailer"])
    assert calls["properties"] == []

    for got in calls.values():
        got.clear()
    tupled = re.sub(r'(%l\d+_r) = "stream.switch"', r'\1:1 = "stream.switch"', generic)
    parse(tupled)
    refused = tupled.count(':1 = "stream.switch"')
    assert refused > 0
    assert (
        len([got for got in calls["region_op_header"] if got is not None]) == with_regions - refused
    )
    assert len(calls["properties"]) == refused
    assert all(got is not None for got in calls["properties"])


def test_fast_path_reads_custom_ops_with_regions(monkeypatch: pytest.MonkeyPatch) -> None:
    # In custom form the fast path reads the results and name of every scope (and the
    # function), and the op's own parser the rest.
    from valid_programs import program

    from npuir import make_context
    from npuir.parsing import parse_module

    text = "\n".join(program(seed).text for seed in range(3))
    read = _recorded(monkeypatch, "region_op_header")
    ctx = make_context()
    ctx.diagnostics.sources.add("t.mlir", text)
    module = parse_module(ctx, text, "t.mlir", ctx.diagnostics.sources)
    with_regions = [op for op in module.walk() if op.regions and op.name != "builtin.module"]
    assert sorted(h.cls.name for h in read) == sorted(op.name for op in with_regions)
    assert {"stream.switch", "coreset.limit", "func.func"} <= {h.cls.name for h in read}
    assert all(h.properties is None for h in read)
