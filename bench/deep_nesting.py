"""Deeply nested input: time per phase against the nesting depth.

`python bench/deep_nesting.py [--depths 250,1000,4990] [--kinds scopes,arrays,types]`
parses, verifies, prints (custom and generic) and re-parses nested
`stream.switch` scopes, nested array attributes and nested function types,
and prints CPU seconds per phase, so that the cost of depth (and the safety
of `npuir.deep_stack.MAX_NESTING`) can be checked on a given machine.
The printed text of nested scopes grows with the square of the depth (each
level is indented), which dominates past a few thousand levels.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "unit"))

from test_parsing import nested_arrays, nested_function_types, nested_switches

import npuir
from npuir.deep_stack import on_deep_stack
from npuir.parsing import parse_module
from npuir.verifier import verify

KINDS: dict[str, Callable[[int], str]] = {
    "scopes": nested_switches,
    "arrays": nested_arrays,
    "types": nested_function_types,
}


def measure(kind: str, depth: int) -> dict[str, float]:
    """CPU seconds of each phase on `depth` levels of `kind`."""
    text = KINDS[kind](depth)
    ctx = npuir.make_context()
    sources = ctx.diagnostics.sources
    sources.add("deep.mlir", text)
    times: dict[str, float] = {}
    clock = time.process_time

    t = clock()
    module = parse_module(ctx, text, "deep.mlir", sources)
    times["parse"] = clock() - t
    t = clock()
    verify(module)
    times["verify"] = clock() - t
    t = clock()
    printed = npuir.print_ir(module)
    times["print"] = clock() - t
    t = clock()
    again = parse_module(ctx, printed, "printed.mlir", sources)
    times["reparse"] = clock() - t
    t = clock()
    generic = parse_module(ctx, npuir.print_ir(module, generic=True), "generic.mlir", sources)
    times["generic"] = clock() - t
    same = on_deep_stack(module.is_structurally_equivalent, again)
    same_generic = on_deep_stack(module.is_structurally_equivalent, generic)
    times["round_trips"] = float(same and same_generic)
    times["printed_mb"] = len(printed) / 1e6
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--depths", default="250,1000,4990")
    ap.add_argument("--kinds", default=",".join(KINDS))
    args = ap.parse_args()
    for kind in args.kinds.split(","):
        for depth in map(int, args.depths.split(",")):
            row = measure(kind, depth)
            cells = "  ".join(f"{k} {v:.2f}" for k, v in row.items())
            print(f"{kind:<7} {depth:>6}  {cells}", flush=True)


if __name__ == "__main__":
    main()
