"""Differential test of the fast parser (npuir.fastparse) against xDSL's parser.

`python bench/parse_diff.py [--cases N] [--seed S]` parses every input below with both
parsers (`--parser=fast` and `--parser=xdsl`) and reports each input on which they
differ: the IR printed with locations (`--mlir-print-debuginfo`) in custom and generic
form when both succeed, else the diagnostic (text and location) when both fail.

Inputs:
  repo      every `.mlir` file in the repository, split at `// -----` (examples, lit
            tests, documentation), each valid one also re-printed in generic form and
            with locations (which the fast path leaves to xDSL);
  programs  the benchmark programs (bench/generate.py, bench/workloads), printed the
            same three ways;
  nested    generated valid programs with nested `stream.switch` and `coreset.limit`
            scopes (bench/valid_programs.py), printed the same three ways;
  scopes    nested scopes in generic form edited around their region lists (results,
            properties, trailer attributes and types, locations), valid and invalid;
  fuzz      N mutations of the fuzz corpus (bench/fuzz.py), valid and invalid, and N
            of the generic form of the nested-scope programs.

`test/unit/bench/test_parse_diff.py` runs the first two and a small seeded fuzz batch.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))

Outcome = tuple[str, ...]


def outcome(text: str, kind: str, name: str = "input.mlir") -> Outcome:
    """What parsing `text` with parser `kind` gives: the printed IR or the diagnostic."""
    from npuir import make_context, print_ir
    from npuir.diagnostics import DiagnosticError
    from npuir.parsing import parse_module

    ctx = make_context()
    sources = ctx.diagnostics.sources
    sources.add(name, text)
    try:
        module = parse_module(ctx, text, name, sources, parser_kind=kind)
    except DiagnosticError as exc:
        return ("error", exc.diagnostic.render(), str(exc.diagnostic.kind))
    try:
        return (
            "ok",
            print_ir(module, debuginfo=True),
            print_ir(module, generic=True, debuginfo=True),
        )
    except Exception as exc:  # IR that parses but does not print (unverified)
        return ("unprintable", f"{type(exc).__name__}: {exc}")


def reprints(text: str) -> Iterator[str]:
    """`text`, and if it parses, its generic form and both forms with locations."""
    from npuir import print_ir

    yield text
    got = outcome(text, "xdsl")
    if got[0] != "ok":
        return
    from npuir import make_context
    from npuir.parsing import parse_module

    ctx = make_context()
    ctx.diagnostics.sources.add("input.mlir", text)
    module = parse_module(ctx, text, "input.mlir", ctx.diagnostics.sources, parser_kind="xdsl")
    yield print_ir(module, generic=True)
    yield got[1]
    yield got[2]


def repo_inputs() -> Iterator[tuple[str, str]]:
    """(label, text) of every `.mlir` chunk in the repository and its re-prints."""
    from npuir.parsing import split_input

    for path in sorted(ROOT.rglob("*.mlir")):
        rel = path.relative_to(ROOT)
        if any(part.startswith(".") or part in ("Output", "build") for part in rel.parts):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for i, chunk in enumerate(split_input(text, True)):
            for j, version in enumerate(reprints(chunk.text)):
                yield f"{rel} chunk {i} form {j}", version


def program_inputs(size: int = 300) -> Iterator[tuple[str, str]]:
    """(label, text) of the benchmark programs at `size` ops and their re-prints."""
    from generate import chain, transformer_layers, wide_dag
    from workloads import EXAMPLES, example_text

    texts = {
        "chain": chain(size),
        "wide": wide_dag(size),
        "transformer": transformer_layers(size),
    }
    texts.update({name: example_text(name) for name in EXAMPLES})
    for name, text in texts.items():
        for j, version in enumerate(reprints(text)):
            yield f"{name} form {j}", version


NESTED_PROGRAMS = 12
"""Generated valid programs with nested `stream.switch` and `coreset.limit` scopes
(bench/valid_programs.py) among the program inputs."""


def nested_programs(count: int = NESTED_PROGRAMS) -> list[str]:
    """Valid programs with nested scopes, one, two or four ranks."""
    from valid_programs import program

    return [program(seed).text for seed in range(count)]


def nested_inputs(count: int = NESTED_PROGRAMS) -> Iterator[tuple[str, str]]:
    """(label, text) of the nested-scope programs and their re-prints."""
    for seed, text in enumerate(nested_programs(count)):
        for j, version in enumerate(reprints(text)):
            yield f"nested program {seed} form {j}", version


SCOPES = """\
"builtin.module"() ({
  "func.func"() <{sym_name = "f", function_type = (tensor<4xf16>) -> tensor<4xf16>}> ({
  ^bb0(%x: tensor<4xf16>):
    %a, %b = "coreset.limit"() <{cube = 2 : i64}> ({
      %c = "stream.switch"() <{tag = "1", priority = 0 : i64}> ({
        %d = "npu.relu"(%x) : (tensor<4xf16>) -> tensor<4xf16>
        "stream.yield"(%d) : (tensor<4xf16>) -> ()
      }) : () -> tensor<4xf16>
      "coreset.yield"(%c, %x) : (tensor<4xf16>, tensor<4xf16>) -> ()
    }) : () -> (tensor<4xf16>, tensor<4xf16>)
    "func.return"(%a) : (tensor<4xf16>) -> ()
  }) : () -> ()
}) : () -> ()
"""
"""Nested scopes in generic form, the base of `SCOPE_EDITS`."""

SCOPE_SWITCH = '%c = "stream.switch"() <{tag = "1", priority = 0 : i64}> ({'
SCOPE_SWITCH_END = "}) : () -> tensor<4xf16>"
SCOPE_LIMIT = '%a, %b = "coreset.limit"() <{cube = 2 : i64}> ({'
SCOPE_LIMIT_END = "}) : () -> (tensor<4xf16>, tensor<4xf16>)"

SCOPE_EDITS: dict[str, tuple[str, str]] = {
    "as written": ("", ""),
    "trailer attributes": (SCOPE_SWITCH_END, '}) {note = "n"} : () -> tensor<4xf16>'),
    "property as attribute": (
        SCOPE_SWITCH,
        '%c = "stream.switch"() <{priority = 0 : i64}> ({',
    ),
    "property in attributes": (SCOPE_SWITCH_END, '}) {tag = "2"} : () -> tensor<4xf16>'),
    "property in attributes too": (
        SCOPE_LIMIT_END,
        "}) {cube = 3 : i64, vector = 4 : i64} : () -> (tensor<4xf16>, tensor<4xf16>)",
    ),
    "no properties": (SCOPE_LIMIT, '%a, %b = "coreset.limit"() ({'),
    "location": (SCOPE_SWITCH_END, '}) : () -> tensor<4xf16> loc("s.py":3:4)'),
    "location alias": (SCOPE_LIMIT_END, SCOPE_LIMIT_END + " loc(#here)"),
    "unknown location": (SCOPE_SWITCH_END, SCOPE_SWITCH_END + " loc(unknown)"),
    "too many results": (SCOPE_SWITCH, SCOPE_SWITCH.replace("%c =", "%c, %e =")),
    "too few results": (SCOPE_LIMIT, SCOPE_LIMIT.replace("%a, %b =", "%a =")),
    "no results": (SCOPE_SWITCH, SCOPE_SWITCH.replace("%c = ", "")),
    "duplicate results": (SCOPE_LIMIT, SCOPE_LIMIT.replace("%a, %b", "%a, %a")),
    "result redefines an argument": (SCOPE_SWITCH, SCOPE_SWITCH.replace("%c =", "%x =")),
    "tuple result": (SCOPE_SWITCH, SCOPE_SWITCH.replace("%c =", "%c:1 =")),
    "result used in its region": ('"npu.relu"(%x)', '"npu.relu"(%c)'),
    "operand types in trailer": (SCOPE_SWITCH_END, "}) : (tensor<4xf16>) -> tensor<4xf16>"),
    "no colon": (SCOPE_SWITCH_END, "}) () -> tensor<4xf16>"),
    "no function type": (SCOPE_SWITCH_END, "}) :"),
    "result count": (SCOPE_LIMIT_END, "}) : () -> (tensor<4xf16>)"),
    "unknown type": (SCOPE_SWITCH_END, "}) : () -> tensor<4xq16>"),
    "type of another dialect": (SCOPE_SWITCH_END, "}) : () -> !npu.token"),
    "trailing brace": (SCOPE_SWITCH_END, SCOPE_SWITCH_END + " {x}"),
    "region on the next line": (SCOPE_SWITCH, SCOPE_SWITCH.replace("> ({", ">\n      ({")),
    "two regions": ("      }) : () -> tensor<4xf16>", "      }, {\n      }) : () -> tensor<4xf16>"),
    "empty region": (
        SCOPE_SWITCH + "\n        %d",
        '"stream.switch"() <{tag = "1", priority = 0 : i64}> ({\n      }) : () -> ()\n'
        + SCOPE_SWITCH
        + "\n        %d",
    ),
    "unregistered op": (SCOPE_SWITCH, SCOPE_SWITCH.replace("stream.switch", "foo.switch")),
    "operand": (SCOPE_SWITCH, SCOPE_SWITCH.replace("() <{", "(%x) <{")),
    "properties of another dialect": (SCOPE_SWITCH, SCOPE_SWITCH.replace('"1"', "#foo.bar")),
    "bad property value": (SCOPE_SWITCH, SCOPE_SWITCH.replace('"1"', "1 : i64")),
    "duplicate property": (SCOPE_SWITCH, SCOPE_SWITCH.replace("priority", "tag")),
    "unclosed properties": (SCOPE_SWITCH, SCOPE_SWITCH.replace("}> ({", "} ({")),
    "custom yield in generic scope": (
        '"coreset.yield"(%c, %x) : (tensor<4xf16>, tensor<4xf16>) -> ()',
        "yield %c, %x : tensor<4xf16>, tensor<4xf16>",
    ),
    "unclosed region": (SCOPE_SWITCH_END, "}"),
    "custom scope inside": (
        SCOPE_SWITCH,
        '%c = stream.switch "1" -> tensor<4xf16> {',
    ),
}
"""Edits of `SCOPES` around the region lists (valid and invalid), with the text
they replace ("" leaves the base as it is)."""


def scope_inputs() -> Iterator[tuple[str, str]]:
    """(label, text) of `SCOPES` under each of `SCOPE_EDITS`."""
    for label, (old, new) in SCOPE_EDITS.items():
        text = SCOPES.replace(old, new, 1) if old else SCOPES
        if label == "location alias":
            text += '#here = loc("a.py":1:2)\n'
        if label == "custom scope inside":
            text = text.replace(SCOPE_SWITCH_END, "}", 1)
        yield f"scopes: {label}", text


def fuzz_inputs(cases: int, seed: int) -> Iterator[tuple[str, str]]:
    """(label, text) of `cases` mutations of the fuzz corpus, and as many of the
    generic form of the nested-scope programs."""
    import fuzz

    for case_seed, text, names in fuzz.cases(cases, seed, fuzz.corpus()):
        yield f"fuzz seed {case_seed} {names}", text
    generic = [list(reprints(text))[1] for text in nested_programs()]
    for case_seed, text, names in fuzz.cases(cases, seed, generic):
        yield f"fuzz generic nested seed {case_seed} {names}", text


def differences(inputs: Iterator[tuple[str, str]]) -> Iterator[tuple[str, Outcome, Outcome]]:
    """(label, fast, xdsl) for every input the two parsers read differently."""
    for label, text in inputs:
        fast, ref = outcome(text, "fast"), outcome(text, "xdsl")
        if fast != ref:
            yield label, fast, ref


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1000, help="fuzz cases (default 1000)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from itertools import chain

    found = 0
    checked = 0
    inputs = chain(
        repo_inputs(),
        program_inputs(),
        nested_inputs(),
        scope_inputs(),
        fuzz_inputs(args.cases, args.seed),
    )
    for label, text in inputs:
        checked += 1
        for _, fast, ref in differences(iter([(label, text)])):
            found += 1
            print(f"DIFFERENT: {label}\n  fast: {fast[:2]!r:.400}\n  xdsl: {ref[:2]!r:.400}")
    print(f"{checked} inputs, {found} differences")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
