"""Test passes that print what the analyses compute, for lit tests.

They are not npuir passes (as MLIR keeps its test passes in a test library): a lit
test loads them with `npuir-opt %test-passes -p test-dependence-graph`, where lit.cfg's
`%test-passes` is `--load-pass` of this file.

Each reports, as remarks located at the ops they describe, one line per
fact: `test-dependence-graph` the predecessors of every op; and
`test-happens-before` every cross-stream dependency with "ordered" or
"UNORDERED", then each stream's join before return.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass

from npuir.analysis.dependence import DependenceGraph
from npuir.analysis.happens_before import HappensBefore
from npuir.analysis.program import NodeKind, build_program, module_streams, scheduled_functions
from npuir.context import remark
from npuir.diagnostics import Kind

DEPENDENCES = Kind("test.analysis.dependences", "#{node} {described} <- [{predecessors}]")
"""A node's predecessors in the dependence graph (for lit tests); arguments: `node`, `described`,
`predecessors` (kind and op of each, comma-separated)."""
ORDERING = Kind(
    "test.analysis.ordering", "{producer} on {producer_stream} -> {consumer} on {stream}: {verdict}"
)
"""Whether happens-before orders a cross-stream dependency (for lit tests); arguments:
`producer`, `producer_stream`, `consumer`, `stream`, `verdict` ("ordered" or "UNORDERED")."""
UNJOINED = Kind("test.analysis.unjoined", "stream {stream} is not joined")
"""A stream the function's return does not wait for (for lit tests); argument: `stream`."""


def _funcs(module: ModuleOp) -> list[FuncOp]:
    return scheduled_functions(module)


@dataclass(frozen=True)
class TestDependenceGraphPass(ModulePass):
    """Print each op's data and control predecessors (test pass for DependenceGraph)."""

    name = "test-dependence-graph"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in _funcs(op):
            graph = DependenceGraph(func).run()
            prog = graph.prog
            for n in range(len(prog)):
                preds = ", ".join(
                    f"{k.name.lower()} {prog.describe(p)}" for p, k in graph.predecessors(n)
                )
                remark(
                    ctx,
                    prog.ops[n],
                    DEPENDENCES,
                    node=n,
                    described=prog.describe(n),
                    predecessors=preds,
                )


@dataclass(frozen=True)
class TestHappensBeforePass(ModulePass):
    """Print whether each cross-stream dependency is ordered (test pass for HappensBefore)."""

    name = "test-happens-before"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        streams = module_streams(op)
        for func in _funcs(op):
            prog = build_program(func, streams)
            hb = HappensBefore(prog).run()
            for n in range(len(prog)):
                if prog.kind[n] in (NodeKind.RECORD, NodeKind.WAIT):
                    continue
                for p, _ in prog.deps[n]:
                    if prog.stream[p] == prog.stream[n]:
                        continue
                    verdict = "ordered" if hb.ordered(p, n) else "UNORDERED"
                    remark(
                        ctx,
                        prog.ops[n],
                        ORDERING,
                        producer=prog.describe(p),
                        producer_stream=prog.stream_name(prog.stream[p]),
                        consumer=prog.describe(n),
                        stream=prog.stream_name(prog.stream[n]),
                        verdict=verdict,
                    )
            for ret, s in hb.unjoined():
                remark(ctx, prog.ops[ret], UNJOINED, stream=prog.stream_name(s))
