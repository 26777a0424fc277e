"""Seeded generator of *valid* npuir programs, for the mode-correctness harness.

`program(seed)` returns a `Generated`: module text plus how to run it (the entry
functions, one per rank, or one function on `ranks` SPMD ranks, and gear shapes).
Every program is well formed and, as written, computes a defined result; it mixes

- several ranks (1, 2 or 4) as one function per rank (MPMD, each rank's compute differs)
  or one function on all ranks (SPMD), with collectives (`all_reduce`, `all_to_all`,
  `all_gather`, `reduce_scatter`; sdma or aiv) of two communicator groups and group
  sizes dividing the rank count, issued in the same order on every rank (as HCCL
  requires), and sometimes two collectives of different groups back to back;
- `stream.switch` scopes (tags with fixed priorities), nested scopes, `coreset.limit`
  scopes inside and outside them, `coreset.stream_limit`, and `stream.wait_tensor`
  on earlier values, inside scopes and outside, and scopes holding only a wait;
- gear programs: a function whose dim 0 takes gears (`#gear.dims`), run on a gear shape.

What it does not promise: that the written program is free of a hold-and-wait
deadlock (aiv collectives under core limits can deadlock as written); the harness
runs the program as written first and judges the modes only against a run that
finished.  Half the aiv collectives placed in a scope get an innermost `coreset.limit`
one vector core below the device's (what `coreset-check`'s hold-and-wait warning
suggests), so that some programs with aiv collectives have no hazard and the modes
reschedule them rather than keep them as written.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

ROWS, COLS = 8, 16
T = f"tensor<{ROWS}x{COLS}xf32>"
UNARY = ("relu", "exp", "neg", "sigmoid", "sqrt", "rsqrt", "gelu", "silu")
BINARY = ("add", "mul", "sub", "maximum")
KINDS = ("all_reduce", "all_to_all", "all_gather", "reduce_scatter")
TAGS = ("a", "b", "c")
CORES = {"tiny": (2, 4), "910b2": (24, 48)}
"""Cube and vector cores of each target (`npuir.backends.npu.hardware` presets)."""


@dataclass
class Generated:
    """One program and how to run it."""

    text: str
    entries: list[str] | None = None
    """One function per rank (MPMD), or None for `entry` on `ranks` ranks."""
    entry: str = "main"
    ranks: int = 1
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict[str, tuple[int, ...]])
    seed: int = 0

    @property
    def rank_count(self) -> int:
        return len(self.entries) if self.entries else self.ranks


@dataclass
class _Collective:
    kind: str
    group: str
    size: int
    mode: str


class _Function:
    """Emits one function's body."""

    def __init__(
        self,
        rng: random.Random,
        name: str,
        dynamic: bool,
        priorities: dict[str, int],
        cores: tuple[int, int],
    ) -> None:
        self.rng = rng
        # Its own stream of numbers, so that adding it kept every seed's other choices.
        self.extra = random.Random(rng.random())
        self.name = name
        self.dynamic = dynamic
        self.t = f"tensor<?x{COLS}xf32>" if dynamic else T
        self.lines: list[str] = []
        self.values: list[str] = ["%a0", "%a1", "%a2"]
        self.extra_outputs: list[tuple[str, str]] = []
        self.counter = 0
        self.priorities = priorities
        self.cores = cores

    def fresh(self, stem: str = "v") -> str:
        self.counter += 1
        return f"%{stem}{self.counter}"

    def operand(self) -> str:
        pool = self.values[-6:] if self.rng.random() < 0.7 else self.values
        return self.rng.choice(pool)

    # -- ops ------------------------------------------------------------------

    def compute(
        self, indent: str, out: list[str], scope_values: list[str], plain: bool = False
    ) -> str:
        rng = self.rng
        a = self.operand()
        if rng.random() < 0.25 and len(self.values) > 3:
            dep = rng.choice(self.values)
            w = self.fresh("w")
            out.append(f"{indent}{w} = stream.wait_tensor {a} after {dep} : {self.t}, {self.t}")
            a = w
            scope_values.append(w)
        v = self.fresh()
        if rng.random() < 0.45:
            op = rng.choice(UNARY)
            if op in ("sqrt", "rsqrt"):  # keep the domain: sqrt of a square plus one
                sq = self.fresh()
                one = self.fresh()
                out.append(f"{indent}{sq} = npu.mul {a}, {a} : ({self.t}, {self.t}) -> {self.t}")
                out.append(f"{indent}{one} = npu.exp {sq} : ({self.t}) -> {self.t}")
                a = one
            out.append(f"{indent}{v} = npu.{op} {a} : ({self.t}) -> {self.t}")
        elif rng.random() < 0.12 and not self.dynamic and not plain:
            b = self.operand()
            out.append(
                f"{indent}{v} = npu.matmul {a}, {b} {{transpose_b}} : ({T}, {T}) -> tensor<{ROWS}x{ROWS}xf32>"
            )
            self.extra_outputs.append((v, f"tensor<{ROWS}x{ROWS}xf32>"))
            return v
        elif rng.random() < 0.08 and not self.dynamic:
            out.append(f"{indent}{v} = npu.softmax {a} : ({T}) -> {T}")
        else:
            op = rng.choice(BINARY)
            b = self.operand()
            out.append(f"{indent}{v} = npu.{op} {a}, {b} : ({self.t}, {self.t}) -> {self.t}")
        scope_values.append(v)
        return v

    def collective(
        self, c: _Collective, indent: str, out: list[str], scope_values: list[str]
    ) -> str:
        a = self.operand()
        v = self.fresh("c")
        attrs = f'{{group_size = {c.size} : i64, mode = "{c.mode}", group = "{c.group}"}}'
        if c.kind in ("all_reduce", "all_to_all"):
            out.append(f"{indent}{v} = npu.{c.kind} {a} {attrs} : ({T}) -> {T}")
            scope_values.append(v)
            return v
        rows = ROWS * c.size if c.kind == "all_gather" else ROWS // c.size
        rt = f"tensor<{rows}x{COLS}xf32>"
        out.append(f"{indent}{v} = npu.{c.kind} {a} {attrs} : ({T}) -> {rt}")
        self.extra_outputs.append((v, rt))
        return v

    # -- scopes ---------------------------------------------------------------

    def wait_only_scope(self) -> None:
        """A scope that holds nothing but a `stream.wait_tensor` (TorchAir allows it)."""
        rng = self.extra
        tensor, dep = rng.choice(self.values), rng.choice(self.values)
        w, out = self.fresh("w"), self.fresh("s")
        if rng.random() < 0.5:
            tag = rng.choice(TAGS)
            prio = self.priorities[tag]
            head = f'{out} = stream.switch "{tag}"' + (f" priority {prio}" if prio else "")
            tail = f"stream.yield {w} : {self.t}"
        else:
            head = f"{out} = coreset.limit vector {rng.randint(1, self.cores[1])}"
            tail = f"coreset.yield {w} : {self.t}"
        self.lines += [
            f"  {head} -> {self.t} {{",
            f"    {w} = stream.wait_tensor {tensor} after {dep} : {self.t}, {self.t}",
            f"    {tail}",
            "  }",
        ]
        self.values.append(out)

    def statement(self, coll: _Collective | None, depth: int = 0) -> None:
        """One op (a collective when given), maybe wrapped in scopes, appended to the body."""
        rng = self.rng
        if depth == 0 and len(self.values) > 3 and self.extra.random() < 0.05:
            self.wait_only_scope()
        shape = rng.random()
        if depth >= 3 or shape < 0.4:
            out: list[str] = []
            scope_values: list[str] = []
            if coll is not None:
                self.collective(coll, "  ", out, scope_values)
            else:
                self.compute("  ", out, scope_values)
            self.lines += out
            self.values += scope_values
            return
        # A scope (maybe nested), holding a few ops; it yields its last value of type T.
        kinds = ["switch"]
        if rng.random() < 0.35:
            kinds.append(rng.choice(("limit", "switch")))
        if rng.random() < 0.25:
            kinds = ["limit", *kinds[1:]]
        # (Decided by its own seed, so that every other choice of a seed stays as it was.)
        spare = random.Random(f"{self.name}/{self.counter}/{len(self.lines)}").random() < 0.5
        if coll is not None and coll.mode == "aiv" and spare:
            # What coreset-check's hold-and-wait warning suggests: the aiv collective
            # leaves a core free for the ops beside it, so the modes may reschedule it.
            kinds.append("spare")
        body: list[str] = []
        inner_values: list[str] = []
        extras_before = len(self.extra_outputs)
        indent = "  " * (len(kinds) + 1)
        n_ops = rng.randint(1, 3)
        placed = coll is None
        for i in range(n_ops):
            if not placed and (i == n_ops - 1 or rng.random() < 0.5):
                self.collective(coll, indent, body, inner_values)  # type: ignore[arg-type]
                placed = True
            else:
                self.compute(indent, body, inner_values)
            if inner_values and inner_values[-1] not in self.values:
                self.values.append(inner_values[-1])
        if not inner_values:
            self.compute(indent, body, inner_values, plain=True)
        inside = set(inner_values)
        self.values = [v for v in self.values if v not in inside]
        # The scope yields its last value of the common type and every extra output made
        # inside it (matmuls, gathers), which the function returns.
        extras = self.extra_outputs[extras_before:]
        del self.extra_outputs[extras_before:]
        results = [(inner_values[-1], self.t), *extras]
        types = ", ".join(t for _, t in results)
        lines: list[str] = body
        for level in reversed(range(len(kinds))):
            pad = "  " * (level + 1)
            outer = [self.fresh("s") for _ in results]
            yielded = ", ".join(v for v, _ in results)
            kind = kinds[level]
            if kind == "switch":
                tag = rng.choice(TAGS)
                prio = self.priorities[tag]
                head = f'{pad}{", ".join(outer)} = stream.switch "{tag}"'
                head += f" priority {prio}" if prio else ""
                head += f" -> {types} {{"
                tail = f"{pad}  stream.yield {yielded} : {types}"
            elif kind == "spare":
                head = f"{pad}{', '.join(outer)} = coreset.limit vector {self.cores[1] - 1}"
                head += f" -> {types} {{"
                tail = f"{pad}  coreset.yield {yielded} : {types}"
            else:
                cube = rng.choice((None, rng.randint(1, self.cores[0])))
                vec = rng.randint(1, self.cores[1])
                counts = (f"cube {cube} " if cube else "") + f"vector {vec}"
                head = f"{pad}{', '.join(outer)} = coreset.limit {counts} -> {types} {{"
                tail = f"{pad}  coreset.yield {yielded} : {types}"
            lines = [head, *lines, tail, f"{pad}}}"]
            results = [(o, t) for o, (_, t) in zip(outer, results)]
        self.lines += lines
        self.values.append(results[0][0])
        self.extra_outputs += results[1:]

    def emit(self, plan: list[_Collective | None], gears: bool) -> str:
        stream_limits = []
        if self.rng.random() < 0.2:
            tag = self.rng.choice(TAGS)
            stream_limits.append(
                f'  coreset.stream_limit "{tag}" vector {self.rng.randint(1, self.cores[1])}'
            )
        for item in plan:
            self.statement(item)
        outs = [(v, self.t) for v in self.values[-2:]] + self.extra_outputs
        gear_attr = " {gear.dims = #gear.dims<0: [8, 16]>}" if gears else ""
        args = ", ".join(f"%a{i}: {self.t}{gear_attr}" for i in range(3))
        results = ", ".join(t for _, t in outs)
        head = f"  func.func @{self.name}({args}) -> ({results}) {{"
        ret = "    func.return " + ", ".join(v for v, _ in outs) + " : " + results
        body = ["  " + line for line in stream_limits + self.lines]
        return "\n".join([head, *body, ret, "  }"])


def program(seed: int, max_ops: int = 14) -> Generated:
    """The valid program of `seed` (see the module docstring)."""
    rng = random.Random(seed)
    family = rng.random()
    if family < 0.15:
        priorities = {tag: rng.choice((0, 0, 1, 2)) for tag in TAGS}
        f = _Function(rng, "main", True, priorities, CORES["tiny"])
        plan: list[_Collective | None] = [None] * rng.randint(2, max_ops)
        text = f.emit(plan, gears=True)
        rows = rng.choice((8, 16))
        shapes = {str(i): (rows, COLS) for i in range(3)}
        module = f'module attributes {{npu.target = "tiny"}} {{\n{text}\n}}\n'
        return Generated(module, shapes=shapes, seed=seed)
    ranks = rng.choice((1, 2, 2, 4))
    sizes = [g for g in (2, 4) if ranks % g == 0]
    colls: list[_Collective] = []
    if sizes:
        for _ in range(rng.randint(1, 4)):
            colls.append(
                _Collective(
                    rng.choice(KINDS),
                    rng.choice(("g0", "g1")),
                    rng.choice(sizes),
                    "aiv" if rng.random() < 0.25 else "sdma",
                )
            )
    n_compute = rng.randint(2, max_ops)
    spmd = ranks == 1 or rng.random() < 0.3
    target = rng.choice(("tiny", "910b2"))
    priorities = {tag: rng.choice((0, 0, 1, 2)) for tag in TAGS}
    funcs = []
    names = ["main"] if spmd else [f"rank{r}" for r in range(ranks)]
    for name in names:
        # Every rank issues the same collectives in the same order; its compute differs.
        plan = [None] * n_compute
        slots = sorted(rng.sample(range(n_compute + len(colls)), len(colls)))
        for slot, c in zip(slots, colls):
            plan.insert(slot, c)
        function = _Function(rng, name, False, priorities, CORES[target])
        funcs.append(function.emit(plan, gears=False))
    module = f'module attributes {{npu.target = "{target}"}} {{\n' + "\n".join(funcs) + "\n}\n"
    if spmd:
        return Generated(module, entry="main", ranks=ranks, seed=seed)
    return Generated(module, entries=names, seed=seed)


if __name__ == "__main__":
    import sys

    print(program(int(sys.argv[1]) if len(sys.argv) > 1 else 0).text)
