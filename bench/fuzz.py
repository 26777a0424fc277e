"""Fuzzing the tools with mutations of the valid test inputs.

`python bench/fuzz.py --cases N [--tool opt|run|advise] [--seed S]` runs N mutated
files through `npuir-opt` (or `npuir-run`, `npuir-advise`) in this process and
prints what it found; `make test` runs a small seeded batch of the same
(`test/unit/bench/test_fuzz.py`).

The corpus is every valid input the repository holds: `examples/*.mlir` and
the `// -----` chunks of the lit tests that parse and verify.  A case applies
one to three mutations to one of them: delete, duplicate or swap tokens,
truncate, wrap in deep nesting (scopes, arrays or function types, past the
parser's bound at times), replace a number by a huge one, insert random
bytes, insert unicode (into strings or anywhere).

Each case ends in one of:
  ok          exit 0, or a deadlock / failed check (`npuir-run` 3 and 4);
  located     exit 1 with `file:line:col: error: ...` first, or exit 2 with
              the tool's one-line usage error;
  unlocated   exit 1 without a location;
  traceback   an exception escaped the tool (or it exited 70, internal error);
  hang        the case ran past its time limit.
`npuir-opt` runs `npu-default` or the same lowering with another
stream-partition mode (auto, opara, minidag, nimble, engine: the modes that
search or reorder), chosen by the case's seed (`OPT_PIPELINES`).
The last three are failures; each is printed with its seed so that
`--replay SEED` reproduces it (and `--save DIR` keeps the input).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import re
import signal
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parents[1]

TOKEN = re.compile(
    r'"(?:[^"\\\n]|\\.)*"|[%@#^!][\w.$-]*|\d[\w.]*|[A-Za-z_][\w.$]*|->|\s+|.', re.DOTALL
)
NUMBER = re.compile(r"\b\d+\b")
LOCATED = re.compile(r"^.+:\d+:\d+: (error|warning|remark|note): ")
USAGE = re.compile(r"^npuir-(opt|run|advise): error: ")
SPLIT = re.compile(r"^// -----\s*$", re.MULTILINE)

OUTCOMES = ("ok", "located", "unlocated", "traceback", "hang")
FAILURES = ("unlocated", "traceback", "hang")
EXIT_INTERNAL = 70


def corpus() -> list[str]:
    """The valid inputs: examples and the valid chunks of every lit test."""
    from npuir import make_context, parse_text

    texts = [p.read_text() for p in sorted((ROOT / "examples").glob("*.mlir"))]
    for path in sorted((ROOT / "test").rglob("*.mlir")):
        if "Output" in path.parts:
            continue
        texts.extend(SPLIT.split(path.read_text()))
    valid = []
    for text in texts:
        try:
            parse_text(make_context(), text)
        except Exception:  # an invalid chunk (the lit tests of errors) is no seed
            continue
        valid.append(text)
    return valid


# Mutations: each takes the text and a random source and returns new text.


def _tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


def delete_tokens(text: str, rng: random.Random) -> str:
    toks = _tokens(text)
    for _ in range(rng.randint(1, 3)):
        if toks:
            del toks[rng.randrange(len(toks))]
    return "".join(toks)


def duplicate_tokens(text: str, rng: random.Random) -> str:
    toks = _tokens(text)
    if not toks:
        return text
    i = rng.randrange(len(toks))
    j = min(len(toks), i + rng.randint(1, 12))
    toks[i:i] = toks[i:j]
    return "".join(toks)


def swap_tokens(text: str, rng: random.Random) -> str:
    toks = _tokens(text)
    if len(toks) < 2:
        return text
    i, j = rng.randrange(len(toks)), rng.randrange(len(toks))
    toks[i], toks[j] = toks[j], toks[i]
    return "".join(toks)


def truncate(text: str, rng: random.Random) -> str:
    return text[: rng.randrange(len(text) + 1)]


def deep_nesting(text: str, rng: random.Random) -> str:
    depth = rng.choice([50, 200, 1000, 5001, 6000])
    kind = rng.choice(["array", "type", "scope", "parens"])
    if kind == "array":
        return (
            text.replace("{", "{deep = " + "[" * depth + "]" * depth + ", ", 1)
            if "{" in text
            else text
        )
    if kind == "type":
        ty = "i32"
        for _ in range(min(depth, 1200)):
            ty = f"({ty}) -> i32"
        return text.replace("tensor<", f"{ty}<", 1) if rng.random() < 0.3 else text + f"\n// {ty}\n"
    if kind == "parens":
        return text.replace("(", "(" * depth, 1)
    # Wrap the first op line after a function header in nested scopes.
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("%") and "=" in line:
            n = min(depth, 1200)
            opening = ['stream.switch "d" {'] * n
            lines[i:i] = opening
            lines[i + n + 1 : i + n + 1] = ["}"] * n
            break
    return "\n".join(lines)


def huge_number(text: str, rng: random.Random) -> str:
    numbers = list(NUMBER.finditer(text))
    if not numbers:
        return text
    m = rng.choice(numbers)
    big = rng.choice(
        [str(2**64), str(2**63), "-" + str(2**63 + 1), "9" * rng.choice([30, 4300, 4301, 9000])]
    )
    return text[: m.start()] + big + text[m.end() :]


def random_bytes(text: str, rng: random.Random) -> str:
    at = rng.randrange(len(text) + 1)
    junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    # Bytes that are not UTF-8 travel as lone surrogates until the file is written.
    return text[:at] + junk.decode("utf-8", errors="surrogateescape") + text[at:]


UNICODE = ["é", "流", "\u200b", "\U0001f600", "\u202e", "\x00", "\x1b[31m", "\ufeff", "Ω≈ç"]


def unicode(text: str, rng: random.Random) -> str:
    strings = [m for m in re.finditer(r'"[^"\n]*"', text)]
    piece = rng.choice(UNICODE)
    if strings and rng.random() < 0.6:
        m = rng.choice(strings)
        return text[: m.start() + 1] + piece + text[m.start() + 1 :]
    at = rng.randrange(len(text) + 1)
    return text[:at] + piece + text[at:]


MUTATIONS: list[Callable[[str, random.Random], str]] = [
    delete_tokens,
    duplicate_tokens,
    swap_tokens,
    truncate,
    deep_nesting,
    huge_number,
    random_bytes,
    unicode,
]


def mutate(text: str, rng: random.Random) -> tuple[str, list[str]]:
    names = []
    for _ in range(rng.randint(1, 3)):
        fn = rng.choice(MUTATIONS)
        text = fn(text, rng)
        names.append(fn.__name__)
    return text, names


# Running one case in-process.


class _Timeout(Exception):
    pass


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise _Timeout


@dataclass(frozen=True)
class Result:
    outcome: str
    exit_code: int | None
    detail: str


def classify(exit_code: int, stderr: str, tool: str) -> Result:
    first = stderr.lstrip("\n").split("\n", 1)[0]
    if exit_code == 0 or (tool == "run" and exit_code in (3, 4)):
        return Result("ok", exit_code, "")
    if exit_code == EXIT_INTERNAL:
        return Result("traceback", exit_code, stderr[-2000:])
    if exit_code == 1 and LOCATED.match(first):
        return Result("located", exit_code, first)
    if exit_code == 2 and USAGE.match(first):
        return Result("located", exit_code, first)
    return Result("unlocated", exit_code, stderr[-2000:])


def small_tensors(text: str) -> bool:
    """Whether every tensor in `text` is small enough to compute with numpy quickly."""
    for shape in re.findall(r"tensor<([0-9x?]*)x?[a-z]", text):
        size = 1
        for d in shape.split("x"):
            if d.isdigit():
                size *= int(d)
        if size > 1 << 16:
            return False
    return True


_LOWERING = "coreset-lower,insert-events,coreset-check,sync-verify"
OPT_PIPELINES: tuple[str, ...] = (
    "npu-default",
    *(
        f"gear-multiversion,stream-partition{{mode={mode}}},{_LOWERING}"
        for mode in ("auto", "opara", "minidag", "nimble", "engine")
    ),
)
"""What `npuir-opt` runs on a case: the one at the case's seed modulo their number."""


def opt_pipeline(case_seed: int) -> str:
    return OPT_PIPELINES[case_seed % len(OPT_PIPELINES)]


def run_case(
    text: str,
    tool: str,
    timeout_s: float,
    workdir: Path,
    numerics: bool,
    pipeline: str = "npu-default",
) -> Result:
    """Run one input through the tool in this process (`pipeline` for npuir-opt);
    never raises."""
    path = workdir / "case.mlir"
    path.write_bytes(text.encode("utf-8", errors="surrogateescape"))
    if tool == "opt":
        from npuir.tools.opt import run

        argv = [str(path), "-p", pipeline, "-o", str(workdir / "out.mlir")]
    elif tool == "advise":
        from npuir.tools.advise import run  # type: ignore[assignment]

        argv = [str(path)]
    else:
        from npuir.tools.run import run  # type: ignore[assignment]

        argv = [str(path)] + ([] if numerics else ["--timing-only"])
    err, out = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = run(argv)
    except _Timeout:
        return Result("hang", None, f"over {timeout_s}s")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    except BaseException:  # an escaped exception is what we look for
        return Result("traceback", None, traceback.format_exc()[-3000:])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return classify(code, err.getvalue(), tool)


@dataclass
class Report:
    counts: Counter[str]
    failures: list[tuple[int, list[str], Result]]
    seconds: float


def cases(n: int, seed: int, texts: list[str]) -> Iterator[tuple[int, str, list[str]]]:
    for i in range(n):
        case_seed = seed * 1_000_003 + i
        rng = random.Random(case_seed)
        text, names = mutate(rng.choice(texts), rng)
        yield case_seed, text, names


def fuzz(
    n: int,
    tool: str = "opt",
    seed: int = 0,
    timeout_s: float = 20.0,
    workdir: Path | None = None,
    progress: Callable[[int, Counter[str]], None] | None = None,
    save: Path | None = None,
) -> Report:
    """Run `n` seeded cases; return the outcome counts and the failures."""
    import tempfile

    texts = corpus()
    counts: Counter[str] = Counter()
    failures: list[tuple[int, list[str], Result]] = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        work = workdir or Path(tmp)
        for k, (case_seed, text, names) in enumerate(cases(n, seed, texts)):
            numerics = tool == "run" and small_tensors(text)
            result = run_case(text, tool, timeout_s, work, numerics, opt_pipeline(case_seed))
            counts[result.outcome] += 1
            if result.outcome in FAILURES:
                failures.append((case_seed, names, result))
                if save is not None:
                    save.mkdir(parents=True, exist_ok=True)
                    (save / f"{tool}-{case_seed}.mlir").write_bytes(
                        text.encode("utf-8", errors="surrogateescape")
                    )
            if progress is not None:
                progress(k + 1, counts)
    return Report(counts, failures, time.perf_counter() - start)


def replay(case_seed: int) -> str:
    """The input of the case with this seed."""
    rng = random.Random(case_seed)
    text, _ = mutate(rng.choice(corpus()), rng)
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--tool", choices=["opt", "run", "advise"], default="opt")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per case")
    ap.add_argument("--save", type=Path, help="keep each failing input in this directory")
    ap.add_argument("--replay", type=int, metavar="SEED", help="print one case's input")
    args = ap.parse_args()
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    if args.replay is not None:
        sys.stdout.write(replay(args.replay))
        return

    def progress(done: int, counts: Counter[str]) -> None:
        if done % 500 == 0:
            print(f"{done} cases: {dict(counts)}", file=sys.stderr, flush=True)

    report = fuzz(args.cases, args.tool, args.seed, args.timeout, progress=progress, save=args.save)
    for case_seed, names, result in report.failures:
        how = f" -p '{opt_pipeline(case_seed)}'" if args.tool == "opt" else ""
        print(f"--- {result.outcome} (exit {result.exit_code}) seed {case_seed}{how} {names}")
        print(result.detail)
    summary = ", ".join(f"{k} {report.counts[k]}" for k in OUTCOMES)
    print(f"{args.cases} {args.tool} cases in {report.seconds:.0f}s: {summary}")
    sys.exit(1 if report.failures else 0)


if __name__ == "__main__":
    main()
