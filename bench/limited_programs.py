"""Seeded generator of three-rank programs with core limits, for the placing modes' pair rule.

`candidate(seed)` returns a `Generated` (`valid_programs`' record of a program and how to
run it): three ranks (one function per rank, or one function on three ranks) issuing the
same collectives over all three (`all_reduce`, `all_to_all`, `all_gather`,
`reduce_scatter`; sdma or aiv) in the same order, and streams of three kinds side by side:

- `lim`: a `coreset.stream_limit` below the device on vector (sometimes cube too);
- `side`: a second limited stream whose counts fit beside `lim`'s, or none;
- `full`: a stream left at the device's full cores -- a stream limit at the device's
  counts (`-1` on some engine: `set_stream_limit`'s "no limit"), or no limit at all;

plus the default stream, whose ops no scope holds and which every placing mode is free to
move.  Some aiv collectives sit in a `coreset.limit` scope that leaves cores to the
others.  Ops read earlier values (sometimes through `stream.wait_tensor`), so streams are
ordered by data in some places and only by the default stream's issue order in others:
the shape where a mode that spreads the default stream's ops makes two streams overlap
that never did as written, and the pair rule of seed 003 (any two streams' cores must fit
the device) breaks.

Not every candidate passes `coreset-check` as written; `bench/mode_fallbacks.py` keeps
the ones that do and run correctly (`accepted`), which is the population the rule is
about: a written program the compiler itself accepts and runs.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from valid_programs import Generated

RANKS = 3
ROWS, COLS = 12, 16
"""Twelve rows: every collective over three ranks divides them."""
T = f"tensor<{ROWS}x{COLS}xf32>"
UNARY = ("relu", "exp", "neg", "sigmoid", "gelu", "silu")
BINARY = ("add", "mul", "sub", "maximum")
KINDS = ("all_reduce", "all_to_all", "all_gather", "reduce_scatter")
CORES = {"tiny": (2, 4), "910b2": (24, 48)}
"""Cube and vector cores of each target (`npuir.backends.npu.hardware` presets)."""


class _Body:
    """One function's body: values, lines, and the outputs it returns."""

    def __init__(self, rng: random.Random, cores: tuple[int, int]) -> None:
        self.rng = rng
        self.cores = cores
        self.lines: list[str] = []
        self.values = ["%a0", "%a1", "%a2"]
        self.outputs: list[tuple[str, str]] = []
        self.count = 0

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"%{stem}{self.count}"

    def pick(self, recent: int = 4) -> str:
        pool = self.values[-recent:] if self.rng.random() < 0.7 else self.values
        return self.rng.choice(pool)

    def compute(self, out: list[str], pad: str, engine: str, first: str | None = None) -> str:
        """An op of `engine` ("vector": elementwise, "cube": a matmul, "any": either) that
        reads `first` when given; returns the value later ops may read."""
        rng = self.rng
        a = first if first is not None else self.pick()
        if rng.random() < 0.2 and len(self.values) > 3:
            w = self.fresh("w")
            out.append(f"{pad}{w} = stream.wait_tensor {a} after {self.pick(8)} : {T}, {T}")
            a = w
        v = self.fresh("v")
        r = rng.random()
        if engine == "cube" or (engine == "any" and r < 0.2):
            mt = f"tensor<{ROWS}x{ROWS}xf32>"
            b = self.pick()
            out.append(f"{pad}{v} = npu.matmul {a}, {b} {{transpose_b}} : ({T}, {T}) -> {mt}")
            # The square result feeds nothing else: it is returned.
            self.outputs.append((v, mt))
            return a
        if r < 0.5:
            out.append(f"{pad}{v} = npu.{rng.choice(UNARY)} {a} : ({T}) -> {T}")
        else:
            b = self.pick()
            out.append(f"{pad}{v} = npu.{rng.choice(BINARY)} {a}, {b} : ({T}, {T}) -> {T}")
        return v

    def collective(
        self, out: list[str], pad: str, kind: str, mode: str, first: str | None = None
    ) -> str:
        a = first if first is not None else self.pick()
        v = self.fresh("c")
        attrs = f'{{group_size = {RANKS} : i64, mode = "{mode}", group = "g0"}}'
        if kind in ("all_reduce", "all_to_all"):
            out.append(f"{pad}{v} = npu.{kind} {a} {attrs} : ({T}) -> {T}")
            return v
        rows = ROWS * RANKS if kind == "all_gather" else ROWS // RANKS
        rt = f"tensor<{rows}x{COLS}xf32>"
        out.append(f"{pad}{v} = npu.{kind} {a} {attrs} : ({T}) -> {rt}")
        self.outputs.append((v, rt))
        return a

    def scoped(
        self,
        heads: list[tuple[str, str]],
        fill: list[str | tuple[str, str]],
        engine: str,
        first: str | None,
    ) -> None:
        """`fill` (ops: "op", or a collective (kind, mode)) inside nested scopes `heads`
        ((keyword line, yield op) outermost first), its ops of `engine`; the innermost
        yields its last value.  The first op reads `first` when given."""
        pad = "  " * (len(heads) + 2)
        body: list[str] = []
        made: list[str] = []
        outputs_before = len(self.outputs)
        for i, item in enumerate(fill):
            if isinstance(item, tuple):
                v = self.collective(body, pad, *item, first if i == 0 else None)
            else:
                v = self.compute(body, pad, engine, first if i == 0 else None)
            if v not in self.values:
                self.values.append(v)
                made.append(v)
        # When every op returned what it read (matmuls, gathers), the scope yields a value
        # from outside it: an op there would run unlimited beside the limited streams.
        last = made[-1] if made else (first or self.pick())
        extras = self.outputs[outputs_before:]
        del self.outputs[outputs_before:]
        results = [(last, T), *extras]
        lines = body
        for level in reversed(range(len(heads))):
            head, yield_op = heads[level]
            p = "  " * (level + 2)
            outer = [self.fresh("s") for _ in results]
            types = ", ".join(t for _, t in results)
            yielded = ", ".join(v for v, _ in results)
            lines = [
                f"{p}{', '.join(outer)} = {head} -> {types} {{",
                *lines,
                f"{p}  {yield_op} {yielded} : {types}",
                f"{p}}}",
            ]
            results = [(o, t) for o, (_, t) in zip(outer, results)]
        self.lines += lines
        self.values = [v for v in self.values if v not in made]
        self.values.append(results[0][0])
        self.outputs += results[1:]


def _stream_limits(rng: random.Random, cores: tuple[int, int]) -> tuple[list[str], int, int]:
    """The `coreset.stream_limit` lines of one function, `lim`'s vector count and `side`'s
    (0: no `side` stream)."""
    cube, vector = cores
    v = rng.randint(1, vector - 1)
    c = rng.choice((None, rng.randint(1, cube)))
    lines = ['coreset.stream_limit "lim"' + (f" cube {c}" if c else "") + f" vector {v}"]
    w = 0
    if rng.random() < 0.5:
        w = rng.randint(1, vector - v)
        lines.append(f'coreset.stream_limit "side" vector {w}')
    full = rng.random()
    if full < 0.4:
        lines.append(f'coreset.stream_limit "full" cube {cube} vector {vector}')
    elif full < 0.6:
        lines.append(f'coreset.stream_limit "full" cube {cube} vector -1')
    return lines, v, w


def candidate(seed: int, max_ops: int = 12) -> Generated:
    """The program of `seed` (the module docstring), not yet judged."""
    rng = random.Random(seed)
    target = rng.choice(("910b2", "910b2", "tiny"))
    cores = CORES[target]
    kinds = [
        (rng.choice(KINDS), "aiv" if rng.random() < 0.3 else "sdma")
        for _ in range(rng.randint(1, 3))
    ]
    spmd = rng.random() < 0.3
    names = ["main"] if spmd else [f"rank{r}" for r in range(RANKS)]
    funcs = []
    for name in names:
        body = _Body(rng, cores)
        limits, v, w = _stream_limits(rng, cores)
        # An aiv collective holds cores while it waits: in a scope that leaves the others
        # theirs (beside `lim` and `side`), on a stream of its own.
        room = cores[1] - max(v, w)
        # The default stream's ops first: some independent, which a mode may spread.
        for _ in range(rng.randint(1, 4)):
            body.values.append(body.compute(body.lines, "    ", "any"))
        joined = body.values[-1]
        tags = ["lim", "lim", "full"] + (["side"] if w else [])
        pending = list(kinds)
        for _ in range(rng.randint(2, max_ops // 2)):
            # (Most scopes start from what the default stream made last: ordered after it.)
            first = joined if rng.random() < 0.95 else None
            if pending and rng.random() < 0.4:
                kind, mode = pending.pop(0)
                if mode == "aiv":
                    heads = [('stream.switch "comm"', "stream.yield")]
                    heads.append((f"coreset.limit vector {rng.randint(1, room)}", "coreset.yield"))
                    body.scoped(heads, [(kind, mode)], "vector", first)
                    continue
                tag = rng.choice(tags)
                fill: list[str | tuple[str, str]] = ["op"] * rng.randint(0, 2)
                fill.insert(rng.randrange(len(fill) + 1), (kind, mode))
            else:
                tag = rng.choice(tags)
                fill = ["op"] * rng.randint(1, 3)
            engine = "cube" if tag == "full" else "vector"
            body.scoped([(f'stream.switch "{tag}"', "stream.yield")], fill, engine, first)
        for kind, mode in pending:
            heads = [('stream.switch "comm"', "stream.yield")]
            if mode == "aiv":
                heads.append((f"coreset.limit vector {rng.randint(1, room)}", "coreset.yield"))
            body.scoped(heads, [(kind, mode)], "vector", joined)
        outs = [(v, T) for v in body.values[-2:]] + body.outputs
        args = ", ".join(f"%a{i}: {T}" for i in range(3))
        types = ", ".join(t for _, t in outs)
        lines = [f"  func.func @{name}({args}) -> ({types}) {{"]
        lines += ["    " + line for line in limits]
        lines += body.lines
        lines.append("    func.return " + ", ".join(v for v, _ in outs) + " : " + types)
        lines.append("  }")
        funcs.append("\n".join(lines))
    module = f'module attributes {{npu.target = "{target}"}} {{\n' + "\n".join(funcs) + "\n}\n"
    if spmd:
        return Generated(module, entry="main", ranks=RANKS, seed=seed)
    return Generated(module, entries=names, seed=seed)


if __name__ == "__main__":
    print(candidate(int(sys.argv[1]) if len(sys.argv) > 1 else 0).text)
