"""The compact program graph: one function's work as flat arrays.

xDSL builds and rewrites IR at tens of thousands of ops per second, far too
slowly for the inner loop of a search or for 100k-op analyses.  So every npuir
analysis reads a function once into a `Program` — the ops that do work, in
issue order, each with its stream and its dependencies as integer indices —
and passes, the verifier, the simulator and automatic partitioning work on
that; a pass then rewrites the IR once at the end.

What counts as a node: every `npu` op, every `sync.record` / `sync.wait`, and
the function's `func.return` (on the default stream).  Scope ops
(`stream.switch`, `coreset.limit`) and their yields are transparent: a value
that leaves a scope is traced to the op that really produced it.
`stream.wait_tensor` is dissolved: its result is the value it waits on, and
every node that uses it gains a *control* dependency on the producer of its
`dep` (TorchAir's meaning: every later user of `self` waits for `dep`).
A dependency on a function argument is dropped: arguments are ready at the
start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue

from npuir.diagnostics import Kind, error
from npuir.dialects import coreset, gear, stream, sync
from npuir.dialects.npu import NpuOp
from npuir.dialects.scope import ScopeOp, Visit, issue_order
from npuir.dialects.stream import SwitchOp, WaitTensorOp
from npuir.gc_pause import without_collector

UNSCHEDULABLE_VALUE = Kind("schedule.unschedulable-value")
"""A value the schedule uses comes from an op it cannot run."""
UNKNOWN_OP = Kind("schedule.unknown-op")
"""An op the npu schedule does not know."""
WAIT_BEFORE_RECORD = Kind("sync.wait-before-record")
"""A `sync.wait` issued before its `sync.record`."""
USE_BEFORE_COMPUTE = Kind("schedule.use-before-compute")
"""An operand used before it is computed (a cycle)."""
NOT_PARTITIONED = Kind("stream.not-partitioned")
"""An analysis of lowered IR met an op without `stream.on`."""
UNDECLARED_STREAM = Kind("stream.undeclared")
"""`stream.on` names a stream no `stream.decl` declares."""

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
    index: dict[Operation, int] = field(default_factory=dict[Operation, int])
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

    def __len__(self) -> int:
        return len(self.ops)

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
            raise error(
                owner,
                f"'{owner.name}' cannot produce a value used by the schedule",
                UNSCHEDULABLE_VALUE,
            )
        return node, ()


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
        elif visit is Visit.OP and not isinstance(op, coreset.StreamLimitOp):
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
            raise error(op, f"'{op.name}' is not an op the npu schedule knows", UNKNOWN_OP)
        program.kind.append(kind)
        program.stream.append(_stream_index(op, kind, sym_index, streams is not None))
        program.event_id.append(-1)
        program.event_of.append(-1)

        deps: list[tuple[int, DepKind]] = []
        seen: set[int] = set()
        if kind is NodeKind.WAIT:
            assert isinstance(op, sync.WaitOp)
            owner = op.event.owner
            record = program.index.get(owner) if isinstance(owner, Operation) else None
            if record is None or record >= n:
                raise error(
                    op,
                    "'sync.wait' is issued before the 'sync.record' it waits on",
                    WAIT_BEFORE_RECORD,
                )
            program.event_of[n] = record
        elif kind is NodeKind.RECORD:
            assert isinstance(op, sync.RecordOp)
            program.event_of[n] = n
            program.event_id[n] = -1 if op.event_id_value is None else op.event_id_value
        else:
            for operand in op.operands:
                producer, controls = resolver.resolve(operand)
                for p, k in ((producer, DepKind.DATA), *((c, DepKind.CONTROL) for c in controls)):
                    if p < 0 or p in seen:
                        continue
                    if p >= n:
                        raise error(
                            op,
                            f"operand produced by {program.describe(p)} is used before it is "
                            "computed (a cycle, or a use before its definition)",
                            USE_BEFORE_COMPUTE,
                        )
                    seen.add(p)
                    deps.append((p, k))
        program.deps.append(deps)
    return program


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
            raise error(
                op,
                f"'{op.name}' has no '{stream.STREAM_ON}'; run stream-partition first",
                NOT_PARTITIONED,
            )
        name = name_or_none
    s = sym_index.get(name)
    if s is None:
        raise error(
            op,
            f"'{op.name}' names stream @{name}, which no 'stream.decl' declares",
            UNDECLARED_STREAM,
        )
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
    "defined_functions",
    "is_dispatcher",
    "is_lowered",
    "module_streams",
    "scheduled_functions",
]
