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
  fuzz      N mutations of the fuzz corpus (bench/fuzz.py), valid and invalid.

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


def fuzz_inputs(cases: int, seed: int) -> Iterator[tuple[str, str]]:
    """(label, text) of `cases` mutations of the fuzz corpus."""
    import fuzz

    for case_seed, text, names in fuzz.cases(cases, seed, fuzz.corpus()):
        yield f"fuzz seed {case_seed} {names}", text


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
    for label, text in chain(repo_inputs(), program_inputs(), fuzz_inputs(args.cases, args.seed)):
        checked += 1
        for _, fast, ref in differences(iter([(label, text)])):
            found += 1
            print(f"DIFFERENT: {label}\n  fast: {fast[:2]!r:.400}\n  xdsl: {ref[:2]!r:.400}")
    print(f"{checked} inputs, {found} differences")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
