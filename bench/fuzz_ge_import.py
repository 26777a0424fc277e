"""Fuzz the GE / TorchAir dump importer: mutated dumps must give a located error, never a traceback.

Each case takes one dump and applies one mutation: truncation at a random byte, deletion of a
random token (a word, a brace, a quote, a colon), a run of random bytes inserted, two lines
swapped, or a number replaced by an extreme one.  The mutated bytes go through what
`npuir-import` does (UTF-8 decoding, parsing, mapping, verification); a `DiagnosticError` is
the expected outcome for broken input and a clean import is fine too, anything else is a
failure, printed with its traceback and the seed that reproduces it.

    python bench/fuzz_ge_import.py [--cases N] [--seed S] [DUMP ...]

Without dumps it fuzzes the seed model's txt and pbtxt dumps and the fused ResNet-50 dump
under test/frontends/Inputs (the ResNet cases are fewer: each import takes seconds).
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from npuir.context import make_context
from npuir.diagnostics import DiagnosticError
from npuir.frontends.ge import import_text
from npuir.parsing import decode_source

INPUTS = Path(__file__).resolve().parents[1] / "test" / "frontends" / "Inputs"
_TOKEN = re.compile(rb'[A-Za-z_0-9.\-]+|"[^"\n]*"|\S')


def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def _delete_token(data: bytes, rng: random.Random) -> bytes:
    tokens = list(_TOKEN.finditer(data))
    if not tokens:
        return data
    m = rng.choice(tokens)
    return data[: m.start()] + data[m.end() :]


def _random_bytes(data: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(data) + 1)
    noise = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
    return data[:at] + noise + data[at:]


def _swap_lines(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    if len(lines) < 2:
        return data
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


def _extreme_number(data: bytes, rng: random.Random) -> bytes:
    numbers = list(re.finditer(rb"-?\b\d+\b", data))
    if not numbers:
        return data
    m = rng.choice(numbers)
    value = rng.choice([b"0", b"-1", b"-2", b"99999999999999999999", b"1e309", b"0x7fffffff"])
    return data[: m.start()] + value + data[m.end() :]


MUTATIONS: dict[str, Callable[[bytes, random.Random], bytes]] = {
    "truncate": _truncate,
    "delete-token": _delete_token,
    "random-bytes": _random_bytes,
    "swap-lines": _swap_lines,
    "extreme-number": _extreme_number,
}


@dataclass
class Outcome:
    cases: int = 0
    errors: int = 0
    imported: int = 0
    failures: int = 0


def import_bytes(data: bytes, name: str) -> None:
    """What npuir-import does with a file's bytes (minus printing)."""
    ctx = make_context()
    text = decode_source(data, name, ctx.diagnostics.sources)
    import_text(ctx, text, name)


def fuzz(paths: Sequence[Path], cases: int, seed: int, out: list[str] | None = None) -> Outcome:
    """Run `cases` mutations spread over `paths`; failures' tracebacks go to `out`."""
    outcome = Outcome()
    originals = [(p, p.read_bytes()) for p in paths]
    for case in range(cases):
        rng = random.Random(seed * 1_000_003 + case)
        path, data = originals[case % len(originals)]
        kind = rng.choice(sorted(MUTATIONS))
        mutated = MUTATIONS[kind](data, rng)
        outcome.cases += 1
        try:
            import_bytes(mutated, path.name)
            outcome.imported += 1
        except DiagnosticError:
            outcome.errors += 1
        except Exception:
            outcome.failures += 1
            if out is not None:
                out.append(
                    f"case {case} ({kind} on {path.name}, seed {seed}):\n{traceback.format_exc()}"
                )
    return outcome


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dumps", nargs="*", type=Path)
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    small = [INPUTS / "seed_multistream.txt", INPUTS / "seed_multistream.pbtxt"]
    runs = (
        [(list(args.dumps), args.cases)]
        if args.dumps
        else [
            (small, args.cases),
            ([INPUTS / "ge_proto_00046_afterUBMatch.txt"], max(1, args.cases // 30)),
        ]
    )
    failures: list[str] = []
    total = Outcome()
    start = time.perf_counter()
    for paths, cases in runs:
        got = fuzz(paths, cases, args.seed, failures)
        total.cases += got.cases
        total.errors += got.errors
        total.imported += got.imported
        total.failures += got.failures
    for failure in failures:
        print(failure, file=sys.stderr)
    print(
        f"{total.cases} cases in {time.perf_counter() - start:.1f} s: {total.errors} located errors, "
        f"{total.imported} imported, {total.failures} tracebacks"
    )
    return 1 if total.failures else 0


if __name__ == "__main__":
    sys.exit(main())
