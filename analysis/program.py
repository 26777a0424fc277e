"""The compact program graph: one function's work as flat arrays.

xDSL builds and rewrites IR at tens of thousands of ops per second, far too
slowly for the inner loop of a search or for 100k-op analyses.  So every npuir
analysis reads a function once into a `Program` — the ops that do work, in
issue order, each with its stream and its dependencies as integer indices —
and passes, the verifier, the simulator and automatic partitioning work on
that; a pass then rewrites the IR once at the end.

What counts as a node: every `npu` op, every `sync.record` / `sync.wait`, and
the function's `func.return` (on the default stream).  `npu.constant` is no
node: like a function argument, its value is there from the start.  Scope ops
(`stream.switch`, `coreset.limit`) and their yields are transparent: a value
that leaves a scope is traced to the op that really produced it.
`stream.wait_tensor` is dissolved: its result is the value it waits on, and
every node that uses `self` after the wait in program order -- through the
wait's result or `self` itself, anywhere in the function: in the wait's scope,
nested, or after the scope closes on any stream -- gains a *control*
dependency on the producer of its `dep` (in a lowered function, which the
lowering made use the wait's result, through that result) (the seed's meaning, docs/ir.md:
"all nodes that use self" wait for `dep`).  `self` is traced through scopes
and earlier waits, so a value that leaves a scope is the value it was inside.
A dependency on a function argument is dropped: arguments are ready at the
start.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import IntEnum

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue

from npuir.diagnostics import Kind, error
from npuir.dialects import coreset, gear, stream, sync
from npuir.dialects.npu import ConstantOp, NpuOp
from npuir.dialects.scope import ScopeOp, Visit, issue_order
from npuir.dialects.stream import SwitchOp, WaitTensorOp
from npuir.gc_pause import without_collector

UNSCHEDULABLE_VALUE = Kind(
    "schedule.unschedulable-value", "'{op_name}' cannot produce a value used by the schedule"
)
"""A value the schedule uses comes from an op it cannot run; argument: `op_name`."""
UNKNOWN_OP = Kind("schedule.unknown-op", "'{op_name}' is not an op the npu schedule knows")
"""An op the npu schedule does not know; argument: `op_name`."""
WAIT_BEFORE_RECORD = Kind(
    "sync.wait-before-record", "'sync.wait' is issued before the 'sync.record' it waits on"
)
"""A `sync.wait` issued before its `sync.record`."""
USE_BEFORE_COMPUTE = Kind(
    "schedule.use-before-compute",
    "operand produced by {producer} is used before it is computed (a cycle, or a use before "
    "its definition)",
)
"""An operand used before it is computed (a cycle); argument: `producer`."""
NOT_PARTITIONED = Kind(
    "stream.not-partitioned", "{needs} needs a partitioned {unit}; run stream-partition first"
)
"""A pass or analysis of partitioned IR given IR that is not; arguments: `needs` (the pass),
`unit` ("module" or "function")."""
OP_NOT_PARTITIONED = Kind(
    "stream.op-not-partitioned", "'{op_name}' has no '{attribute}'; run stream-partition first"
)
"""An analysis of lowered IR met an op without `stream.on`; arguments: `op_name`, `attribute`."""
UNDECLARED_STREAM = Kind(
    "stream.undeclared", "'{op_name}' names stream @{stream}, which no 'stream.decl' declares"
)
"""`stream.on` names a stream no `stream.decl` declares; arguments: `op_name`, `stream`."""

DEFAULT_STREAM = 0
"""Index of the default stream in `Program.streams`."""


class NodeKind(IntEnum):
    """What a node of the program graph is."""

    COMPUTE = 0
    RECORD = 1
    WAIT = 2
    RETURN = 3


class DepKind(IntEnum):
    """Why one node must follow another."""

    DATA = 0
    CONTROL = 1


@dataclass(frozen=True)
class StreamInfo:
    """A stream of a lowered module, or a scope tag before partitioning."""

    symbol: str
    tag: str
    priority: int


@dataclass
class Program:
    """One function as arrays indexed by node (issue order).

    `deps[n]` lists `(producer, kind)` pairs; `users[p]` lists the nodes
    depending on `p`.  `stream[n]` indexes `streams` (-1 while unassigned).
    For sync nodes, `event_of[n]` is the record a wait waits on (itself for a
    record), and `event_id[n]` the physical id, or -1.
    """

    func: FuncOp
    ops: list[Operation] = field(default_factory=list[Operation])
    kind: list[NodeKind] = field(default_factory=list[NodeKind])
    stream: list[int] = field(default_factory=list[int])
    deps: list[list[tuple[int, DepKind]]] = field(default_factory=list[list[tuple[int, DepKind]]])
    event_of: list[int] = field(default_factory=list[int])
    event_id: list[int] = field(default_factory=list[int])
    streams: list[StreamInfo] = field(default_factory=list[StreamInfo])
    given_index: dict[Operation, int] | None = field(default=None, repr=False, compare=False)
    """`index` as the builder set it; None: derived from `ops` on first use."""
    pinned: list[str | None] = field(default_factory=list[str | None])
    """Per node, the tag of its innermost `stream.switch` (None outside every scope)."""
    scopes: dict[str, SwitchOp] = field(default_factory=dict[str, SwitchOp])
    """Each tag's first `stream.switch`, in order of appearance."""
    priorities: dict[str, int] = field(default_factory=dict[str, int])
    """Each tag's priority, as its first scope gives it."""
    priority_clash: SwitchOp | None = None
    """The first scope that gives its tag another priority than an earlier one did."""
    wait_tensors: list[tuple[WaitTensorOp, str | None]] = field(
        default_factory=list[tuple[WaitTensorOp, str | None]]
    )
    """Every `stream.wait_tensor` in program order, with the tag of its innermost scope."""
    wait_positions: list[int] = field(default_factory=list[int])
    """Per entry of `wait_tensors`, the first node after it in program order."""

    def __len__(self) -> int:
        return len(self.ops)

    @property
    def index(self) -> dict[Operation, int]:
        """Each op's node.  An op standing at several nodes (`lowered_program` stands a
        compute op in for its records and waits) maps to its compute node.  Derived on
        first use: a search lowers thousands of programs and the simulator reads none of
        their indexes."""
        if self.given_index is None:
            ops, kinds = self.ops, self.kind
            index = {op: i for i, op in enumerate(ops)}
            if len(index) < len(ops):
                index.update(
                    (ops[i], i)
                    for i, k in enumerate(kinds)
                    if k is not NodeKind.WAIT and k is not NodeKind.RECORD
                )
            self.given_index = index
        return self.given_index

    @index.setter
    def index(self, value: dict[Operation, int]) -> None:
        self.given_index = value

    def users(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in self.ops]
        for n, deps in enumerate(self.deps):
            for p, _ in deps:
                out[p].append(n)
        return out

    def describe(self, n: int) -> str:
        """`'npu.add' (%x)`: an op and its first result's name, for messages."""
        op = self.ops[n]
        if op.results and op.results[0].name_hint:
            return f"'{op.name}' (%{op.results[0].name_hint})"
        return f"'{op.name}'"

    def stream_name(self, s: int) -> str:
        if s < 0:
            return "<unassigned>"
        info = self.streams[s]
        return f'@{info.symbol} ("{info.tag}")'


class _Resolver:
    """Traces SSA values to the node that produced them, through scopes and waits."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._cache: dict[SSAValue, tuple[int, tuple[int, ...]]] = {}

    def resolve(self, value: SSAValue) -> tuple[int, tuple[int, ...]]:
        """(producer node or -1 for an argument, control producers)."""
        cached = self._cache.get(value)
        if cached is not None:
            return cached
        result = self._resolve(value)
        self._cache[value] = result
        return result

    def _resolve(self, value: SSAValue) -> tuple[int, tuple[int, ...]]:
        if isinstance(value, BlockArgument):
            return -1, ()
        owner = value.owner
        assert isinstance(owner, Operation)
        if isinstance(owner, ConstantOp):
            return -1, ()
        if isinstance(owner, stream.WaitTensorOp):
            data, ctrl = self.resolve(owner.tensor)
            dep, dep_ctrl = self.resolve(owner.dep)
            extra = (dep,) if dep >= 0 else ()
            return data, ctrl + dep_ctrl + extra
        if isinstance(owner, ScopeOp):
            assert isinstance(value, OpResult)
            return self.resolve(owner.source_of(value))
        node = self.program.index.get(owner)
        if node is None:
            raise error(owner, UNSCHEDULABLE_VALUE, op_name=owner.name)
        return node, ()


def waited_value(value: SSAValue) -> SSAValue:
    """The value `value` stands for as a wait's `self`: traced back through
    `stream.wait_tensor` results and out of scopes to the value they yield."""
    while isinstance(value, OpResult):
        owner = value.op
        if isinstance(owner, stream.WaitTensorOp):
            value = owner.tensor
        elif isinstance(owner, ScopeOp):
            value = owner.source_of(value)
        else:
            break
    return value


def _later_waits(program: Program) -> dict[SSAValue, list[tuple[int, SSAValue]]]:
    """Each waited-on value's waits: (first node after the wait, the wait's `dep`)."""
    table: dict[SSAValue, list[tuple[int, SSAValue]]] = {}
    for (wait, _), at in zip(program.wait_tensors, program.wait_positions):
        table.setdefault(waited_value(wait.tensor), []).append((at, wait.dep))
    return table


def _flatten(block: Block, program: Program) -> None:
    """Issue order: ops in program order, scopes entered where they stand.

    Built on the one walk over scopes (`issue_order`); it also records each node's
    innermost tag, each tag's first scope and priority, and where the
    `stream.wait_tensor`s stand.
    """
    tags: list[str | None] = [None]
    for visit, op in issue_order(block):
        if visit is Visit.EXIT:
            if isinstance(op, stream.SwitchOp):
                tags.pop()
        elif isinstance(op, stream.SwitchOp):
            name = op.tag_name
            if name not in program.scopes:
                program.scopes[name] = op
                program.priorities[name] = op.priority_value
            elif program.priorities[name] != op.priority_value and program.priority_clash is None:
                program.priority_clash = op
            tags.append(name)
        elif isinstance(op, stream.WaitTensorOp):
            program.wait_tensors.append((op, tags[-1]))
            program.wait_positions.append(len(program.ops))
        elif visit is Visit.OP and not isinstance(op, coreset.StreamLimitOp | ConstantOp):
            program.ops.append(op)
            program.pinned.append(tags[-1])


def module_streams(module: ModuleOp) -> list[StreamInfo]:
    """The module's `stream.decl`s in order (empty before partitioning)."""
    return [
        StreamInfo(op.symbol, op.tag.data, op.priority_value)
        for op in module.ops
        if isinstance(op, stream.DeclOp)
    ]


@without_collector
def build_program(func: FuncOp, streams: list[StreamInfo] | None = None) -> Program:
    """Read `func` into a `Program`.

    With `streams` (the module's declarations), each node's stream comes from
    its `stream.on` (records and waits name theirs; `func.return` is on the
    default stream); without, every stream is -1.  An operand used before its
    producer in issue order — a cycle, e.g. through `stream.wait_tensor` — is a
    located error: xDSL does not check dominance.
    """
    program = Program(func)
    if streams is not None:
        program.streams = list(streams)
    sym_index = {info.symbol: i for i, info in enumerate(program.streams)}
    _flatten(func.body.block, program)
    flat = program.ops
    program.index = {op: i for i, op in enumerate(flat)}

    resolver = _Resolver(program)
    # Before lowering a later use is ordered by its place; a lowered function carries the
    # ordering in its data (`stream.bind_later_uses`), so a reissue cannot move a use from
    # before a wait to after it and give it an ordering the program never asked for.
    waits = _later_waits(program) if program.wait_tensors and streams is None else {}
    for n, op in enumerate(flat):
        if isinstance(op, NpuOp):
            kind = NodeKind.COMPUTE
        elif isinstance(op, sync.RecordOp):
            kind = NodeKind.RECORD
        elif isinstance(op, sync.WaitOp):
            kind = NodeKind.WAIT
        elif isinstance(op, ReturnOp):
            kind = NodeKind.RETURN
        else:
            raise error(op, UNKNOWN_OP, op_name=op.name)
        program.kind.append(kind)
        program.stream.append(_stream_index(op, kind, sym_index, streams is not None))
        program.event_id.append(-1)
        program.event_of.append(-1)

        deps: list[tuple[int, DepKind]] = []
        seen: dict[int, int] = {}
        if kind is NodeKind.WAIT:
            assert isinstance(op, sync.WaitOp)
            owner = op.event.owner
            record = program.index.get(owner) if isinstance(owner, Operation) else None
            if record is None or record >= n:
                raise error(op, WAIT_BEFORE_RECORD)
            program.event_of[n] = record
        elif kind is NodeKind.RECORD:
            assert isinstance(op, sync.RecordOp)
            program.event_of[n] = n
            program.event_id[n] = -1 if op.event_id_value is None else op.event_id_value
        else:
            for operand in op.operands:
                producer, controls = resolver.resolve(operand)
                if waits:
                    controls = controls + _waited_before(n, operand, waits, resolver)
                for p, k in ((producer, DepKind.DATA), *((c, DepKind.CONTROL) for c in controls)):
                    if p < 0:
                        continue
                    if p in seen:
                        if k is DepKind.DATA:  # read as well as waited for: a data dependency
                            deps[seen[p]] = (p, k)
                        continue
                    if p >= n:
                        raise error(op, USE_BEFORE_COMPUTE, producer=program.describe(p))
                    seen[p] = len(deps)
                    deps.append((p, k))
        program.deps.append(canonical_deps(deps) if streams is not None else deps)
    return program


def canonical_deps(deps: Iterable[tuple[int, DepKind]]) -> list[tuple[int, DepKind]]:
    """`deps` with one entry per producer, in producer order: a producer the node both
    reads and waits for is a data dependency.  A lowered function's graph lists its
    dependencies so, whether it is read from the IR or made by the pass that wrote it
    (`stream-partition` hands on the graph of what it wrote), so the two are equal."""
    kinds: dict[int, DepKind] = {}
    for p, k in deps:
        kinds[p] = min(k, kinds.get(p, k))
    return sorted(kinds.items())


def _waited_before(
    n: int,
    operand: SSAValue,
    waits: dict[SSAValue, list[tuple[int, SSAValue]]],
    resolver: _Resolver,
) -> tuple[int, ...]:
    """The producers node `n` must follow because a wait on `operand`'s value stands
    before it in program order."""
    found = waits.get(waited_value(operand))
    if not found:
        return ()
    out: list[int] = []
    for at, dep in found:
        if at <= n:
            producer, controls = resolver.resolve(dep)
            out.extend(controls)
            if producer >= 0:
                out.append(producer)
    return tuple(out)


def _stream_index(op: Operation, kind: NodeKind, sym_index: dict[str, int], lowered: bool) -> int:
    if not lowered:
        return -1
    if kind is NodeKind.RETURN:
        return DEFAULT_STREAM if sym_index else -1
    if isinstance(op, sync.RecordOp | sync.WaitOp):
        name = op.stream_name
    else:
        name_or_none = stream.stream_of(op)
        if name_or_none is None:
            raise error(op, OP_NOT_PARTITIONED, op_name=op.name, attribute=stream.STREAM_ON)
        name = name_or_none
    s = sym_index.get(name)
    if s is None:
        raise error(op, UNDECLARED_STREAM, op_name=op.name, stream=name)
    return s


def is_dispatcher(func: FuncOp) -> bool:
    """Whether `func` only dispatches to gear versions (it schedules nothing itself)."""
    first = func.body.blocks.first
    return first is not None and any(isinstance(op, gear.DispatchOp) for op in first.ops)


def defined_functions(module: ModuleOp) -> list[FuncOp]:
    """The module's functions that have a body: external declarations
    (`func.func private @f(...) -> ...`) name code npuir does not see."""
    return [f for f in module.ops if isinstance(f, FuncOp) and not f.is_declaration]


def scheduled_functions(module: ModuleOp) -> list[FuncOp]:
    """The module's functions that run on the device's streams (not gear
    dispatchers, not declarations)."""
    return [f for f in defined_functions(module) if not is_dispatcher(f)]


def is_lowered(func: FuncOp) -> bool:
    """Whether `func` has been through `stream-partition` (its ops carry `stream.on`)."""
    for op in func.body.walk():
        if isinstance(op, stream.SwitchOp):
            return False
        if isinstance(op, NpuOp):
            return stream.STREAM_ON in op.attributes
    return False


__all__ = [
    "DEFAULT_STREAM",
    "DepKind",
    "NodeKind",
    "Program",
    "StreamInfo",
    "build_program",
    "canonical_deps",
    "defined_functions",
    "is_dispatcher",
    "is_lowered",
    "module_streams",
    "scheduled_functions",
    "waited_value",
]
