"""Mutation test of `mem-verify`: random damage to valid memory plans must never pass.

Each case builds a random annotated program (values of a few sizes, views,
two-result `topk`s, `stream.switch` scopes, `stream.wait_tensor`s), lowers it
with `npu-default` (which ends with `mem-plan` and `mem-verify`), then applies
one mutation: shift a buffer's offset by a few 512-byte steps, move it onto
another buffer's offset, shrink its size, or drop a `sync.wait`.  A brute-force
oracle written for this harness alone (its own buffer walk, happens-before by
graph search over stream order and record -> wait edges, every pair of
buffers compared) says whether the mutated plan is unsafe; `mem-verify` must
refuse exactly those (a *false accept* is an unsafe plan it passes, a *false
refusal* a safe one it refuses).

    python bench/mem_mutations.py --cases 5000 [--seed 0] [--ops 24]
    python bench/mem_mutations.py --cases 20 --interpreter examples/multi_branch.mlir
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, OpResult, SSAValue

import npuir
from npuir.analysis.happens_before import HappensBefore
from npuir.analysis.program import build_program, module_streams
from npuir.diagnostics import DiagnosticError
from npuir.dialects import mem, stream, sync
from npuir.dialects.npu import NpuOp, tensor_bytes
from npuir.transforms.mem_verify import check_plan

SHAPES = ("8x64", "16x64", "32x64", "4x64")


def random_program(seed: int, num_ops: int, num_tags: int = 3) -> str:
    """A random annotated function with values of several sizes, views and topk."""
    rng = random.Random(seed)
    args = [f"%a{i}: tensor<{s}xf16>" for i, s in enumerate(SHAPES)]
    lines = [f"func.func @g({', '.join(args)}) -> tensor<8x64xf16> {{"]
    by_shape: dict[str, list[str]] = {s: [f"%a{i}"] for i, s in enumerate(SHAPES)}
    every: list[tuple[str, str]] = [(f"%a{i}", s) for i, s in enumerate(SHAPES)]
    for i in range(num_ops):
        shape = rng.choice(SHAPES)
        ty = f"tensor<{shape}xf16>"
        pool = by_shape[shape]
        tag = rng.randrange(num_tags + 1)
        body: list[str] = []
        a = rng.choice(pool[-4:] if rng.random() < 0.7 else pool)
        b = rng.choice(pool[-4:] if rng.random() < 0.7 else pool)
        if rng.random() < 0.25:
            dep = rng.choice(every)[0]
            body.append(
                f"%w{i} = stream.wait_tensor {a} after {dep} : {ty}, tensor<{_shape_of(every, dep)}xf16>"
            )
            a = f"%w{i}"
        r = rng.random()
        results = [f"%v{i}"]
        types = [ty]
        if r < 0.35:
            op = rng.choice(("relu", "exp", "neg"))
            body.append(f"%v{i} = npu.{op} {a} : ({ty}) -> {ty}")
        elif r < 0.8:
            op = rng.choice(("add", "mul", "sub"))
            body.append(f"%v{i} = npu.{op} {a}, {b} : ({ty}, {ty}) -> {ty}")
        elif r < 0.9:
            body.append(f"%v{i} = npu.reshape {a} : ({ty}) -> {ty}")
        else:
            rows = int(shape.split("x")[0])
            body.append(
                f"%v{i}, %i{i} = npu.topk {a} {{k = 64 : i64}} : ({ty}) -> "
                f"({ty}, tensor<{rows}x64xi64>)"
            )
            results = [f"%v{i}", f"%i{i}"]
            types = [ty, f"tensor<{rows}x64xi64>"]
        if tag:
            outs = [f"%r{i}", f"%q{i}"][: len(results)]
            lines.append(f'  {", ".join(outs)} = stream.switch "{tag}" -> ({", ".join(types)}) {{')
            lines.extend("    " + line for line in body)
            lines.append(f"    stream.yield {', '.join(results)} : {', '.join(types)}")
            lines.append("  }")
            results = outs
        else:
            lines.extend("  " + line for line in body)
        if types[0] == ty:
            by_shape[shape].append(results[0])
            every.append((results[0], shape))
    lines.append(f"  func.return {by_shape['8x64'][-1]} : tensor<8x64xf16>")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _shape_of(every: list[tuple[str, str]], name: str) -> str:
    return next(s for n, s in every if n == name)


# -- the oracle ---------------------------------------------------------------------------


@dataclass
class _Buf:
    writer: Operation
    offset: int
    size: int
    need: int
    accesses: list[Operation] = field(default_factory=list[Operation])


def _root(value: SSAValue) -> SSAValue:
    """The written value `value` stands for: through waits and views, back to its writer."""
    while isinstance(value, OpResult):
        op = value.op
        if isinstance(op, stream.WaitTensorOp):
            value = op.tensor
        elif op.name in mem.VIEW_OPS:
            value = op.operands[0]
        else:
            break
    return value


def _edges(func: FuncOp) -> tuple[list[Operation], dict[Operation, list[Operation]]]:
    """Nodes in block order and happens-before edges: stream order, record -> wait
    (a wait with an event id bound to the latest record of that id before it)."""
    nodes = [
        op
        for op in func.body.block.ops
        if isinstance(op, NpuOp | sync.RecordOp | sync.WaitOp | ReturnOp)
    ]
    succ: dict[Operation, list[Operation]] = {op: [] for op in nodes}
    last_on: dict[str, Operation] = {}
    latest_id: dict[int, Operation] = {}
    for op in nodes:
        if isinstance(op, sync.RecordOp | sync.WaitOp):
            s = op.stream_name
        elif isinstance(op, ReturnOp):
            s = "s0"
        else:
            s = stream.stream_of(op) or "s0"
        if s in last_on:
            succ[last_on[s]].append(op)
        last_on[s] = op
        if isinstance(op, sync.WaitOp):
            record = op.event.owner
            assert isinstance(record, sync.RecordOp)
            rid = record.event_id_value
            bound = latest_id.get(rid, record) if rid is not None else record
            succ[bound].append(op)
        if isinstance(op, sync.RecordOp) and op.event_id_value is not None:
            latest_id[op.event_id_value] = op
    return nodes, succ


def _reach(start: Operation, succ: dict[Operation, list[Operation]]) -> set[Operation]:
    seen: set[Operation] = set()
    todo = list(succ[start])
    while todo:
        op = todo.pop()
        if op not in seen:
            seen.add(op)
            todo.extend(succ[op])
    return seen


def oracle_unsafe(func: FuncOp) -> bool:
    """Whether `func`'s plan lets two unordered buffers overlap, or misplaces one."""
    nodes, succ = _edges(func)
    bufs: dict[SSAValue, _Buf] = {}
    returned = {_root(v) for op in nodes if isinstance(op, ReturnOp) for v in op.operands}
    for op in nodes:
        if not isinstance(op, NpuOp):
            continue
        for v in op.operands:
            root = _root(v)
            if root in bufs:
                bufs[root].accesses.append(op)
        if op.name in mem.VIEW_OPS:
            src = _root(op.operands[0])
            place = mem.placement(op)
            want = (bufs[src].offset, bufs[src].size) if src in bufs else None
            if src in returned or want is None:
                continue
            if place is None or place[0] != want:
                return True
            continue
        places = mem.placement(op) or [(mem.UNPLANNED, 0)] * len(op.results)
        for res, (offset, size) in zip(op.results, places):
            assert isinstance(res.type, TensorType)
            bufs[res] = _Buf(op, offset, size, tensor_bytes(res.type), [op])
    live = {v: b for v, b in bufs.items() if v not in returned}
    pool = mem.pool_size(func)
    for b in live.values():
        if b.offset == mem.UNPLANNED or b.size < b.need:
            return True
        if pool is None or b.offset + b.size > pool:
            return True
    reach = {op: _reach(op, succ) for op in nodes}
    items = list(live.values())
    for i, b in enumerate(items):
        for c in items[i + 1 :]:
            if b.size == 0 or c.size == 0:
                continue
            if b.offset + b.size <= c.offset or c.offset + c.size <= b.offset:
                continue
            b_first = all(c.writer in reach[a] for a in b.accesses)
            c_first = all(b.writer in reach[a] for a in c.accesses)
            if not (b_first or c_first):
                return True
    return False


# -- mutations ----------------------------------------------------------------------------


def _planned(func: FuncOp) -> list[Operation]:
    return [
        op
        for op in func.body.block.ops
        if (p := mem.placement(op)) is not None
        and any(o != mem.UNPLANNED for o, _ in p)
        and op.name not in mem.VIEW_OPS
    ]


def mutate(func: FuncOp, rng: random.Random) -> str:
    """Damage `func`'s plan or events in place; what was done."""
    planned = _planned(func)
    waits = [op for op in func.body.block.ops if isinstance(op, sync.WaitOp)]
    kinds = ["shift", "onto", "shrink"] + (["drop-wait"] * 2 if waits else [])
    kind = rng.choice(kinds) if planned else "drop-wait"
    if kind == "drop-wait" and waits:
        wait = rng.choice(waits)
        block = wait.parent_block()
        assert block is not None
        block.erase_op(wait)
        return kind
    op = rng.choice(planned)
    places = list(mem.placement(op) or [])
    i = rng.choice([k for k, (o, _) in enumerate(places) if o != mem.UNPLANNED])
    offset, size = places[i]
    if kind == "shift":
        offset = max(0, offset + mem.ALIGN * rng.choice((-3, -2, -1, 1, 2, 3)))
    elif kind == "onto":
        other = rng.choice(planned)
        offset = next(o for o, _ in (mem.placement(other) or []) if o != mem.UNPLANNED)
    else:
        size = max(0, size - mem.ALIGN)
    places[i] = (offset, size)
    mem.set_placement(op, places)
    # Views repeat their source's place: keep them in step, so the damage is the overlap.
    for use in list(op.results[i].uses):
        if use.operation.name in mem.VIEW_OPS:
            mem.set_placement(use.operation, [(offset, size)])
    return kind


@dataclass
class Tally:
    cases: int = 0
    unsafe: int = 0
    false_accepts: int = 0
    false_refusals: int = 0
    by_kind: dict[str, int] = field(default_factory=dict[str, int])
    failures: list[str] = field(default_factory=list[str])


def lowered(seed: int, ops: int) -> Iterator[ModuleOp]:
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, random_program(seed, ops))
    npuir.run_passes(ctx, module, npuir.build_pipeline("npu-default"))
    yield module


def run(cases: int, seed: int = 0, ops: int = 24) -> Tally:
    """`cases` mutated plans, each judged by mem-verify and by the oracle."""
    tally = Tally()
    rng = random.Random(seed)
    base_seed = seed * 1_000_003
    program = 0
    while tally.cases < cases:
        module = next(lowered(base_seed + program, ops))
        program += 1
        func = next(op for op in module.ops if isinstance(op, FuncOp))
        if not _planned(func):
            continue
        for _ in range(8):
            if tally.cases >= cases:
                break
            copy = module.clone()
            cfunc = next(op for op in copy.ops if isinstance(op, FuncOp))
            kind = mutate(cfunc, rng)
            tally.cases += 1
            tally.by_kind[kind] = tally.by_kind.get(kind, 0) + 1
            unsafe = oracle_unsafe(cfunc)
            tally.unsafe += unsafe
            try:
                prog = build_program(cfunc, module_streams(copy))
                refused = check_plan(prog, HappensBefore(prog).run()) is not None
            except DiagnosticError:
                refused = True
            if unsafe and not refused:
                tally.false_accepts += 1
                tally.failures.append(f"false accept: program {program - 1}, {kind}")
            elif refused and not unsafe:
                tally.false_refusals += 1
                tally.failures.append(f"false refusal: program {program - 1}, {kind}")
    return tally


def interpreter_catches(path: str, cases: int, seed: int = 0) -> tuple[int, int, int]:
    """Of `cases` unsafe mutated plans of the example at `path` (shrinks left out: those
    overflow rather than overlap): how many `npuir-run --check --check-memory` fails with
    a corrupted output, how many its `sync-verify` refuses first (a dropped wait that also
    races), and how many were tried."""
    from npuir.driver.run import EXIT_CHECK, RunConfig, run_program

    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, open(path).read())
    npuir.run_passes(ctx, module, npuir.build_pipeline("npu-default"))
    rng = random.Random(seed)
    caught = refused = tried = 0
    while tried < cases:
        copy = module.clone()
        func = next(op for op in copy.ops if isinstance(op, FuncOp) and _planned(op))
        if mutate(func, rng) == "shrink" or not oracle_unsafe(func):
            continue
        tried += 1
        config = RunConfig(
            path=path, source=npuir.print_ir(copy), check=True, check_memory=True, mirror_peers=True
        )
        try:
            caught += run_program(config).status == EXIT_CHECK
        except DiagnosticError:
            refused += 1
    return caught, refused, tried


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ops", type=int, default=24)
    parser.add_argument(
        "--interpreter",
        metavar="EXAMPLE.mlir",
        action="append",
        help="instead: run --cases unsafe mutated plans of this example with "
        "npuir-run --check --check-memory and count the corrupted outputs caught",
    )
    args = parser.parse_args(argv)
    if args.interpreter:
        for path in args.interpreter:
            caught, refused, tried = interpreter_catches(path, args.cases, args.seed)
            print(
                f"{path}: of {tried} unsafe plans, --check-memory caught {caught} corrupted "
                f"outputs, sync-verify refused {refused} (races), {tried - caught - refused} "
                "passed"
            )
        return 0
    began = time.process_time()
    tally = run(args.cases, args.seed, args.ops)
    print(
        f"{tally.cases} mutated plans ({', '.join(f'{k} {v}' for k, v in sorted(tally.by_kind.items()))}): "
        f"{tally.unsafe} unsafe; false accepts {tally.false_accepts}, false refusals "
        f"{tally.false_refusals}; {time.process_time() - began:.1f} s CPU"
    )
    for line in tally.failures[:10]:
        print(line)
    return 1 if tally.false_accepts or tally.false_refusals else 0


if __name__ == "__main__":
    sys.exit(main())
