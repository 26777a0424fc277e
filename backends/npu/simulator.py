"""Deterministic discrete-event simulation of lowered programs on an NPU model.

The simulator runs one `Program` per rank (the same one N times for SPMD, one
per rank for MPMD) against a `Hardware` in integer nanoseconds, in graph mode:
the host is not modelled, every op is already enqueued, and each compute op
pays the task-launch overhead (`hw.launch_ns`) on its stream.

What runs when:

- **Streams.** Each stream runs its nodes first-in first-out in issue order.
  A `sync.record` takes `hw.event_record_ns`; a `sync.wait` blocks its stream
  until the record it is bound to has executed, then takes `hw.event_wait_ns`.
  With physical event ids a wait is bound to the latest record of its id
  issued before it (what `HappensBefore.bound_record` computes).
  `func.return` costs nothing.
- **Cores.** Each rank has a pool of cube, vector and AI CPU cores.  An
  ordinary op at the head of its stream starts as soon as one core of its
  engine is free and takes up to ``min(limit, parallelism)`` of them for its
  whole run.  A `full_core_sync` op — and an aiv-mode collective, on vector
  cores — takes free cores as they appear and *holds* them until it has all
  it asks for (its limit, or every core of its engine).  Free cores go to the
  waiting requests in order of stream priority (lower number first), then
  issue order; a request that is accumulating keeps its place in that order.
- **Durations.** ``hw.launch_ns + cost.duration_ns(...)``: a compute op uses
  ``min(cores granted, parallelism)`` cores for its arithmetic and the static
  HBM share of all the cores it holds (`cost.static_hbm_share`); cores a
  `full_core_sync` op holds beyond its parallelism sit idle.  Collectives
  take ``hw.launch_ns + cost.collective_ns(...)``.
- **Collectives.** A collective of group size G is formed by consecutive
  ranks (0..G-1, G..2G-1, ...): the k-th collective of a communicator
  `group` on each of those ranks.  It starts on all of them at once, when
  every simulated member is at its head (and, for aiv, holds its cores).
  A group that reaches past the ranks simulated (one rank of a G=8 program)
  is refused unless the caller asks for ``mirror_peers``: then its missing
  members are taken to be identical and to arrive at the same moment
  (`npuir.backends.npu.groups`).
- **Races.** Independently of `sync-verify`, every node's producers
  (`Program.deps`) must have finished when it starts; a violation is a
  `Race`.  The run goes on as the hardware would.
- **Deadlock.** When nothing can progress but work remains, the run stops and
  `SimResult.deadlock` names every blocked op, what it holds, what it waits
  for, and the wait-for cycle.  The event loop ends when no event is pending,
  so the simulator never hangs.

Also measured: per-stream busy time, per-engine utilisation, the critical
path (which follows core contention as well as streams, data and events),
events used, and peak live memory.

Speed: per-node work (engine, `OpWork`, core request, collective key, bound
record) is read from the IR once per program, shared between ops of the same
signature and, through a `SimCache`, between calls; the event loop then
touches only integer arrays and heaps.  On a generated 100k-op program
(235k nodes with events) the event loop runs at about 700k nodes/s and a
whole `simulate` call at about 140k nodes/s (200k with a warm cache).

    progs = [build_program(func, module_streams(module))]
    result = simulate(progs, PRESETS["tiny"])
    result.makespan_ns, result.races, result.deadlock
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from npuir.analysis.program import DepKind, NodeKind, Program, StreamInfo
from npuir.dialects import coreset, stream
from npuir.dialects.coreset import CoresAttr
from npuir.dialects.npu import (
    CORE_ENGINES,
    CollectiveOp,
    NpuOp,
    tensor_bytes,
)
from npuir.gc_pause import collector_paused

from .cost import (
    OpWork,
    collective_ns,
    duration_ns,
    op_work,
    parallelism,
    static_hbm_share,
)
from .groups import partial_groups
from .hardware import Hardware
from .profile import Profile, ProfiledCost

__all__ = [
    "POOL_ENGINES",
    "BlockedOp",
    "CoreLimitFn",
    "Deadlock",
    "NodeCosts",
    "OpRecord",
    "Race",
    "SimCache",
    "SimResult",
    "coreset_limit",
    "simulate",
]

CoreLimitFn = Callable[[Program, int, str], int | None]
"""``limit(program, node, engine)``: the most cores of `engine` the node may take, or None
for unlimited (the device maximum).  `coreset_limit` is the default; a core-limit analysis
can pass its own."""

POOL_ENGINES: tuple[str, ...] = CORE_ENGINES
"""Engines with a pool of cores per rank, in pool-index order."""

_NPOOLS = len(POOL_ENGINES)
_POOL_INDEX = {e: i for i, e in enumerate(POOL_ENGINES)}
_VECTOR_POOL = _POOL_INDEX["vector"]

_COMPUTE = int(NodeKind.COMPUTE)
_RECORD = int(NodeKind.RECORD)
_WAIT = int(NodeKind.WAIT)
_RETURN = int(NodeKind.RETURN)

# Stream states.
_IDLE = 0  # the head node has not been looked at since the stream became free
_RUNNING = 1  # the head node is executing
_WAIT_EVENT = 2  # the head is a wait whose record has not executed
_WAIT_CORES = 3  # the head is queued for cores (possibly holding some)
_WAIT_PEERS = 4  # the head is a collective waiting for its group
_DONE = 5  # every node of the stream has run

# Memo keys pack (work id, cores granted) into one int.
_CORE_KEY = 1 << 20


# ---------------------------------------------------------------------------------------------
# Per-op inputs
# ---------------------------------------------------------------------------------------------


class UnloweredScopes(ValueError):
    """The simulator was asked to read lowered core limits from IR that still has scopes."""


def _refuse_unlowered_scopes(program: Program) -> None:
    for op in program.ops:
        parent = op.parent_op()
        if isinstance(parent, coreset.LimitOp | stream.SwitchOp):
            raise UnloweredScopes(
                f"'{op.name}' still stands in a '{parent.name}' scope: lower the program "
                "(coreset-lower) before simulating it with the lowered core limits, or pass "
                "limits= that resolves scopes"
            )


def coreset_limit(program: Program, node: int, engine: str) -> int | None:
    """The node's `coreset.cores` count for `engine` (written by `coreset-lower`), else None."""
    attr = program.ops[node].attributes.get(coreset.CORES)
    if isinstance(attr, CoresAttr):
        count: int | None = attr.count(engine)
        return count
    return None


def _bound_records(prog: Program) -> list[int]:
    """For each wait, the record releasing it; -1 elsewhere.

    The rule of `HappensBefore.bound_record`: with a physical id, the latest record of that
    id issued before the wait; without, the record the wait names.  Computed here directly so
    the simulator does not pay for the vector clocks.
    """
    latest: dict[int, int] = {}
    bound = [-1] * len(prog)
    kinds, event_of, event_id = prog.kind, prog.event_of, prog.event_id
    for n in range(len(prog)):
        kind = kinds[n]
        if kind is NodeKind.WAIT:
            record = event_of[n]
            eid = event_id[record]
            bound[n] = latest.get(eid, record) if eid >= 0 else record
        elif kind is NodeKind.RECORD and event_id[n] >= 0:
            latest[event_id[n]] = n
    return bound


def _value_users(prog: Program, value: SSAValue) -> list[int]:
    """Nodes that read `value`, through `stream.wait_tensor` results and scope yields."""
    out: list[int] = []
    stack = [value]
    while stack:
        v = stack.pop()
        for use in v.uses:
            user = use.operation
            node = prog.index.get(user)
            if node is not None:
                out.append(node)
            elif isinstance(user, stream.WaitTensorOp):
                if use.index == 0:  # the tensor, not the `after` dependency
                    stack.append(user.result)
            elif isinstance(user, stream.YieldOp | coreset.YieldOp):
                parent = user.parent_op()
                if parent is not None:
                    stack.append(parent.results[use.index])
    return out


@dataclass(frozen=True, slots=True)
class _OpInfo:
    """What the simulator needs of one op, shared by every op of the same signature."""

    work: OpWork
    work_id: int
    engine: str
    result_bytes: int
    pool: int
    """Pool index of the cores the op takes, -1 for none (sdma collectives)."""
    total: int
    """Cores in that pool."""
    par: int
    accum: bool
    """Hold-and-wait: full_core_sync ops and aiv collectives."""
    collective: bool
    fixed: int
    """Duration of a collective (launch included); 0 for ops costed by the cores granted."""

    @staticmethod
    def of(op: NpuOp, hw: Hardware, works: dict[OpWork, int]) -> _OpInfo:
        work = op_work(op, hw)
        wid = works.setdefault(work, len(works))
        out = sum(tensor_bytes(r.type) for r in op.results if isinstance(r.type, TensorType))
        if work.engine == "comm":
            fixed = hw.launch_ns + collective_ns(
                hw, work.collective or "", work.group_size, work.comm_bytes
            )
            aiv = work.mode == "aiv"
            return _OpInfo(
                work,
                wid,
                "comm",
                out,
                _VECTOR_POOL if aiv else -1,
                hw.vector_cores,
                0,
                aiv,
                True,
                fixed,
            )
        total = hw.cores(work.engine)
        return _OpInfo(
            work,
            wid,
            work.engine,
            out,
            _POOL_INDEX[work.engine],
            total,
            max(1, parallelism(hw, work)),
            op.full_core_sync,
            False,
            0,
        )


class SimCache:
    """What the simulator learned from the IR, for reuse across `simulate` calls on one `hw`.

    A search that simulates many schedules of the same ops (other stream assignments, other
    events, other core limits) passes one cache to every call, so each op is read from the
    IR once.  Keyed by op identity: valid while the ops it has seen are not modified in
    place (replacing ops is fine).  Core limits are not cached.
    """

    def __init__(self, hw: Hardware) -> None:
        self.hw = hw
        self.works: dict[OpWork, int] = {}
        self.ops: dict[Operation, _OpInfo] = {}
        self.signatures: dict[object, _OpInfo] = {}
        self.types: dict[Attribute, int] = {}
        self.type_by_id: dict[int, tuple[Attribute, int]] = {}
        self.profiled: dict[Profile, dict[Operation, ProfiledCost | None]] = {}


class _Prepared:
    """One program's per-node arrays, computed once from the IR."""

    def __init__(
        self,
        prog: Program,
        hw: Hardware,
        limits: CoreLimitFn,
        cache: SimCache,
        profile: Profile | None = None,
    ) -> None:
        n_nodes = len(prog)
        self.prog = prog
        # Profiled ops: task duration (-1: costed by the model) and block dim.
        self.prof_ns = [-1] * n_nodes
        self.profiled = 0
        self.compute_ops = 0
        costs = cache.profiled.setdefault(profile, {}) if profile is not None else None
        self.kind = list(map(int, prog.kind))
        self.stream = list(prog.stream)
        if n_nodes and not (0 <= min(self.stream) and max(self.stream) < len(prog.streams)):
            n = next(n for n, s in enumerate(self.stream) if not 0 <= s < len(prog.streams))
            raise ValueError(
                f"node {n} ({prog.describe(n)}) has no stream; "
                "the simulator needs a lowered function (run stream-partition first)"
            )
        self.num_streams = len(prog.streams)
        self.priority = [info.priority for info in prog.streams]
        self.stream_nodes: list[list[int]] = [[] for _ in prog.streams]
        self.prev_on_stream = prev = [-1] * n_nodes
        last = [-1] * self.num_streams
        for n, s in enumerate(self.stream):
            prev[n] = last[s]
            last[s] = n
            self.stream_nodes[s].append(n)
        self.deps = [[p for p, _ in deps] if deps else [] for deps in prog.deps]
        self.bound = _bound_records(prog)

        # Cores: pool index (-1: none), cores asked for, hold-and-wait flag.
        self.pool = [-1] * n_nodes
        self.want = [0] * n_nodes
        self.accum = [False] * n_nodes
        self.par = [0] * n_nodes
        # Work: id into the shared `works` table; a fixed duration where cores do not matter.
        self.work_id = [-1] * n_nodes
        self.fixed = [0] * n_nodes
        self.engine = [""] * n_nodes
        self.coll: list[tuple[str, int, int] | None] = [None] * n_nodes
        self.coll_by_key: dict[tuple[str, int], int] = {}
        coll_count: dict[str, int] = {}
        self.result_bytes = [0] * n_nodes

        # Types interned to small ints; an operand's type object is its producer's result
        # type, so keying on object identity first hashes each type object once.  The object
        # is kept with its key so that its id cannot be reused while the cache lives.
        by_id = cache.type_by_id
        interned = cache.types
        works = cache.works
        signatures = cache.signatures
        by_op = cache.ops

        def type_key(ty: Attribute) -> int:
            known = by_id.get(id(ty))
            if known is None:
                known = by_id[id(ty)] = (ty, interned.setdefault(ty, len(interned)))
            return known[1]

        kinds, ops, fixed = self.kind, prog.ops, self.fixed
        work_id, engine, pool, par = self.work_id, self.engine, self.pool, self.par
        want, accum, result_bytes = self.want, self.accum, self.result_bytes
        on = stream.STREAM_ON
        for n in range(n_nodes):
            kind = kinds[n]
            if kind != _COMPUTE:
                if kind == _RECORD:
                    fixed[n] = hw.event_record_ns
                elif kind == _WAIT:
                    fixed[n] = hw.event_wait_ns
                continue
            op = ops[n]
            assert isinstance(op, NpuOp)
            info = by_op.get(op)
            if info is None:
                # Ops with the same class, types and attributes (but for their stream) cost
                # the same; programs repeat a few shapes many times, so key the IR queries on
                # that.
                attrs = op.attributes
                signature = (
                    type(op),
                    *[type_key(v.type) for v in op.operands],
                    -1,
                    *[type_key(r.type) for r in op.results],
                    tuple(sorted((k, v) for k, v in attrs.items() if k != on))
                    if len(attrs) > 1 or on not in attrs
                    else (),
                )
                info = signatures.get(signature)
                if info is None:
                    info = signatures[signature] = _OpInfo.of(op, hw, works)
                by_op[op] = info
            work_id[n] = info.work_id
            engine[n] = info.engine
            result_bytes[n] = info.result_bytes
            pool[n] = info.pool
            par[n] = info.par
            fixed[n] = info.fixed
            if info.accum:
                want[n] = _clamp(limits(prog, n, POOL_ENGINES[info.pool]), info.total)
                accum[n] = True
            elif info.pool >= 0:
                limit = limits(prog, n, info.engine)
                want[n] = info.par if limit is None else max(1, min(limit, info.par))
            self.compute_ops += 1
            if costs is not None and profile is not None:
                cost = costs.get(op, _UNSEEN)
                if cost is _UNSEEN:
                    cost = costs[op] = profile.lookup(op)
                if isinstance(cost, ProfiledCost):
                    self._use_profile(n, info, cost, limits)
            if info.collective:
                assert isinstance(op, CollectiveOp)
                group = op.group
                k = coll_count.get(group, 0)
                coll_count[group] = k + 1
                self.coll[n] = (group, op.group_size, k)
                self.coll_by_key[(group, k)] = n

        # Memory: argument sizes and their readers (node results' readers are data deps).
        self.arg_bytes: list[int] = []
        self.arg_users: list[list[int]] = []
        for arg in prog.func.body.block.args:
            self.arg_bytes.append(tensor_bytes(arg.type) if isinstance(arg.type, TensorType) else 0)
            self.arg_users.append(_value_users(prog, arg))

    def _use_profile(self, n: int, info: _OpInfo, cost: ProfiledCost, limits: CoreLimitFn) -> None:
        """Node `n` costs what the profile says: its task duration, on its block dim."""
        self.profiled += 1
        self.prof_ns[n] = cost.duration_ns
        if info.collective:
            self.fixed[n] = cost.duration_ns
        elif not info.accum and info.pool >= 0:
            demand = max(1, min(cost.block_dim or info.par, info.total))
            self.par[n] = demand
            limit = limits(self.prog, n, info.engine)
            self.want[n] = demand if limit is None else max(1, min(limit, demand))


_UNSEEN = object()


def _clamp(limit: int | None, total: int) -> int:
    return total if limit is None else max(1, min(limit, total))


def _task_ns(
    prep: _Prepared, n: int, granted: int, hw: Hardware, works: list[OpWork], memo: dict[int, int]
) -> int:
    """How long node `n` runs once started with `granted` cores (launch included).

    `memo` keeps the durations of modelled ops by work and cores, for one `works` table."""
    wid = prep.work_id[n]
    if wid < 0 or prep.pool[n] < 0 or prep.coll[n] is not None:
        return prep.fixed[n]
    if prep.prof_ns[n] >= 0:
        # Fewer cores than the profiled block dim: proportionally longer (assumption:
        # kernels scale linearly in their block dim).
        dur = prep.prof_ns[n]
        dim = prep.par[n]
        return -(-dur * dim // granted) if granted < dim else dur
    key = wid * _CORE_KEY + granted
    dur = memo.get(key, -1)
    if dur < 0:
        work = works[wid]
        par = prep.par[n]
        used = min(granted, par) if par else granted
        share = static_hbm_share(hw, work.engine, granted)
        dur = memo[key] = hw.launch_ns + duration_ns(hw, work, used, share)
    return dur


class NodeCosts:
    """What the simulator would charge each node of one program, for planners that time a
    schedule themselves (the list scheduler behind `stream-partition{mode=auto}`).

    The same reading of the IR as `simulate` (and the same `limits`, `cache` and
    `profile`), so a planner and the simulator agree on every op's engine, core request
    and duration.  The program need not be partitioned: its streams are not looked at.
    """

    def __init__(
        self,
        prog: Program,
        hw: Hardware,
        *,
        limits: CoreLimitFn | None = None,
        cache: SimCache | None = None,
        profile: Profile | None = None,
    ) -> None:
        if cache is None:
            cache = SimCache(hw)
        one_stream = Program(
            prog.func,
            ops=prog.ops,
            kind=prog.kind,
            stream=[0] * len(prog),
            deps=prog.deps,
            event_of=prog.event_of,
            event_id=prog.event_id,
            streams=[StreamInfo("s0", "default", 0)],
            index=prog.index,
        )
        limit_fn = limits if limits is not None else coreset_limit

        def limit_of(_: Program, n: int, engine: str) -> int | None:
            return limit_fn(prog, n, engine)

        self._hw = hw
        self._prep = _Prepared(one_stream, hw, limit_of, cache, profile)
        self._works = list(cache.works)
        self._memo: dict[int, int] = {}
        self.pool: list[int] = self._prep.pool
        """Per node, the index in `POOL_ENGINES` of the cores it takes (-1: none)."""
        self.want: list[int] = self._prep.want
        """Per node, the cores it asks for (0 for none)."""
        self.holds_and_waits: list[bool] = self._prep.accum
        """Per node, whether it collects cores until it has all it wants before starting."""

    def duration_ns(self, n: int, cores: int) -> int:
        """Node `n`'s run time (launch included) when started with `cores` cores."""
        return _task_ns(self._prep, n, max(1, cores), self._hw, self._works, self._memo)


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


class OpRecord(NamedTuple):
    """One node's run on one rank.  `cores` were held from `held_from` (earlier than
    `start` for a hold-and-wait op) to `end`; `pool` names their engine ("" for none)."""

    rank: int
    node: int
    stream: int
    start: int
    end: int
    cores: int
    engine: str
    """"cube", "vector", "aicpu", "comm", or "" for records, waits and the return."""
    pool: str
    held_from: int


@dataclass(frozen=True)
class Race:
    """`consumer` started on `rank` at `at_ns` before its producer had finished."""

    rank: int
    consumer: int
    producer: int
    kind: DepKind
    at_ns: int
    producer_end: int | None
    """When the producer finished, or None if it had not started."""
    message: str

    def describe(self) -> str:
        return self.message


@dataclass(frozen=True)
class BlockedOp:
    """An op at the head of its stream that cannot go on, and why."""

    rank: int
    node: int
    stream: int
    op: str
    """`Program.describe` of the op."""
    stream_name: str
    reason: str
    """"cores", "event" or "peers"."""
    holds: int = 0
    """Cores of `pool` the op holds while it waits."""
    held_from: int = -1
    """Since when it holds them (-1 when it holds none)."""
    wants: int = 0
    """Cores of `pool` it needs in all (reason "cores")."""
    pool: str = ""
    core_holders: tuple[tuple[int, int, int], ...] = ()
    """(rank, node, cores) of every op holding cores of the same pool (reason "cores")."""
    record: int | None = None
    """The record a wait is bound to (reason "event")."""
    missing_peers: tuple[int, ...] = ()
    """Ranks of the group that have not arrived (reason "peers")."""
    blocked_by: tuple[tuple[int, int], ...] = ()
    """(rank, node) of the blocked ops this one waits for: edges of the wait-for graph."""
    detail: str = ""


@dataclass(frozen=True)
class Deadlock:
    """A state where nothing can progress but work remains."""

    time_ns: int
    blocked: tuple[BlockedOp, ...]
    cycle: tuple[tuple[int, int], ...]
    """(rank, node) of a wait-for cycle, each waiting for the next and the last for the first;
    empty when the blocked ops wait on something outside any cycle."""

    def describe(self) -> str:
        """One paragraph per blocked op, then the cycle."""
        by_key = {(b.rank, b.node): b for b in self.blocked}
        lines = [f"deadlock at {self.time_ns} ns: {len(self.blocked)} op(s) can never start"]
        for b in self.blocked:
            lines.append(f"  rank {b.rank}, stream {b.stream_name}: {b.op} {b.detail}")
        if self.cycle:
            steps = [f"rank {r} {by_key[(r, n)].op}" for r, n in self.cycle]
            steps.append(steps[0])
            lines.append("  wait-for cycle: " + " -> ".join(steps))
        return "\n".join(lines)


@dataclass
class SimResult:
    """What a simulation measured.  Times are integer nanoseconds."""

    hw_name: str
    ranks: int
    makespan_ns: int
    _op_source: Callable[[], list[OpRecord]] = field(repr=False, compare=False)
    """Builds `ops` when first asked for (a search never asks)."""
    stream_busy_ns: dict[tuple[int, int], int]
    """(rank, stream) -> time spent executing nodes (not blocked)."""
    utilisation: dict[str, float]
    """Engine -> busy core-ns / (cores * ranks * makespan)."""
    critical_path: list[tuple[int, int]]
    """(rank, node) from the first to the last-finishing node.  Each node's predecessor is,
    of its stream predecessor, producers, bound record, the node whose finish released the
    cores it was waiting for, and (for a collective) the same of every group member, the one
    that finished last before it started (the stream predecessor on ties)."""
    waits_executed: int
    records_executed: int
    event_ids: list[int]
    """Physical event ids the executed records used."""
    events_used: int
    """Most events one rank used: distinct physical ids plus records without one."""
    event_edges: list[tuple[int, int, int]]
    """(rank, record, wait) for every executed wait."""
    peak_memory_bytes: int
    """Largest peak over the ranks of the bytes of live values."""
    peak_memory_by_rank: list[int]
    races: list[Race] = field(default_factory=list[Race])
    deadlock: Deadlock | None = None
    compute_ops: int = 0
    """Compute ops (collectives included) of the distinct programs simulated."""
    profiled_ops: int = 0
    """How many of them took their cost from a profile (`npuir.backends.npu.profile`)."""
    _ops: list[OpRecord] | None = field(default=None, init=False, repr=False, compare=False)
    _by_key: dict[tuple[int, int], OpRecord] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def ops(self) -> list[OpRecord]:
        """Every node that ran, by rank then issue order."""
        if self._ops is None:
            self._ops = self._op_source()
        return self._ops

    def op(self, rank: int, node: int) -> OpRecord | None:
        """The record of `node` on `rank`, or None if it did not run."""
        if self._by_key is None:
            self._by_key = {(r.rank, r.node): r for r in self.ops}
        return self._by_key.get((rank, node))


# ---------------------------------------------------------------------------------------------
# The event loop
# ---------------------------------------------------------------------------------------------


class _Simulation:
    def __init__(self, preps: list[_Prepared], hw: Hardware, works: list[OpWork]) -> None:
        self.preps = preps
        self.hw = hw
        self.works = works
        self.ranks = len(preps)
        self.base: list[int] = []
        self.sbase: list[int] = []
        total = 0
        streams = 0
        self.g_rank: list[int] = []
        self.s_nodes: list[list[int]] = []
        self.s_rank: list[int] = []
        self.s_prio: list[int] = []
        for r, prep in enumerate(preps):
            self.base.append(total)
            self.sbase.append(streams)
            total += len(prep.kind)
            streams += prep.num_streams
            self.g_rank.extend([r] * len(prep.kind))
            self.s_nodes.extend(prep.stream_nodes)
            self.s_rank.extend([r] * prep.num_streams)
            self.s_prio.extend(prep.priority)
        self.total = total
        self.start = [-1] * total
        self.end = [-1] * total
        self.cores = [0] * total
        self.held_from = [-1] * total
        self.s_ptr = [0] * streams
        self.s_state = [_IDLE] * streams
        self.free = [hw.cores(e) for _ in preps for e in POOL_ENGINES]
        self.reqs: list[list[tuple[int, int]]] = [[] for _ in range(len(self.free))]
        self.waiters: dict[int, list[int]] = {}
        self.arrived: dict[tuple[str, int, int, int], list[int]] = {}
        self.group_of: dict[int, list[int]] = {}
        self.heap: list[tuple[int, int]] = []
        self.now = 0
        self.finished = 0
        self.races: list[Race] = []
        self.dirty_streams: list[int] = list(range(streams))
        self.dirty_pools: list[int] = []
        self.memo: dict[int, int] = {}
        # The node whose finish last returned cores to each pool, and for each node granted
        # cores at that instant, that node: the critical path follows core contention too.
        self.last_release = [-1] * len(self.free)
        self.core_pred: dict[int, int] = {}

    # -- running ------------------------------------------------------------------------------

    def run(self) -> None:
        heap = self.heap
        pop = heapq.heappop
        advance, grant, finish = self._advance, self._grant, self._finish
        # The order in which dirty streams and pools are visited does not change the outcome
        # (requests queue by priority and issue order, completions by time and node), and
        # visiting one twice is harmless, so plain lists do.
        while True:
            while self.dirty_streams or self.dirty_pools:
                streams, self.dirty_streams = self.dirty_streams, []
                for gs in streams:
                    advance(gs)
                pools, self.dirty_pools = self.dirty_pools, []
                for gp in pools:
                    grant(gp)
            if not heap:
                return
            t = heap[0][0]
            self.now = t
            while heap and heap[0][0] == t:
                finish(pop(heap)[1])

    def _advance(self, gs: int) -> None:
        state = self.s_state[gs]
        if state != _IDLE and state != _WAIT_EVENT:
            return
        nodes = self.s_nodes[gs]
        ptr = self.s_ptr[gs]
        if ptr == len(nodes):
            self.s_state[gs] = _DONE
            return
        r = self.s_rank[gs]
        prep = self.preps[r]
        n = nodes[ptr]
        g = self.base[r] + n
        kind = prep.kind[n]
        if kind == _COMPUTE:
            pool = prep.pool[n]
            if pool >= 0:
                gp = r * _NPOOLS + pool
                heapq.heappush(self.reqs[gp], (self.s_prio[gs], n))
                self.s_state[gs] = _WAIT_CORES
                self.dirty_pools.append(gp)
            elif prep.coll[n] is not None:
                self.s_state[gs] = _WAIT_PEERS
                self._arrive(r, n, g)
            else:
                self._start(r, n, g)
        elif kind == _WAIT:
            record = self.base[r] + prep.bound[n]
            rec_end = self.end[record]
            if 0 <= rec_end <= self.now:
                self._start(r, n, g)
            elif state == _IDLE:
                self.s_state[gs] = _WAIT_EVENT
                self.waiters.setdefault(record, []).append(gs)
        else:
            self._start(r, n, g)

    def _grant(self, gp: int) -> None:
        heap = self.reqs[gp]
        free = self.free[gp]
        if not free or not heap:
            return
        r = gp // _NPOOLS
        prep = self.preps[r]
        base = self.base[r]
        cores = self.cores
        releaser = self.last_release[gp]
        if releaser >= 0 and self.end[releaser] != self.now:
            releaser = -1
        while free and heap:
            n = heap[0][1]
            g = base + n
            want = prep.want[n]
            if prep.accum[n]:
                have = cores[g]
                if not have:
                    self.held_from[g] = self.now
                take = min(want - have, free)
                free -= take
                have += take
                cores[g] = have
                if have < want:
                    break
                heapq.heappop(heap)
                if releaser >= 0:
                    self.core_pred[g] = releaser
                if prep.coll[n] is not None:
                    self.s_state[self.sbase[r] + prep.stream[n]] = _WAIT_PEERS
                    self.free[gp] = free
                    self._arrive(r, n, g)
                else:
                    self._start(r, n, g)
            else:
                heapq.heappop(heap)
                take = want if want < free else free
                free -= take
                cores[g] = take
                self.held_from[g] = self.now
                if releaser >= 0:
                    self.core_pred[g] = releaser
                self._start(r, n, g)
        self.free[gp] = free

    def _arrive(self, r: int, n: int, g: int) -> None:
        coll = self.preps[r].coll[n]
        assert coll is not None
        group, size, k = coll
        first = (r // size) * size
        members = min(first + size, self.ranks) - first
        key = (group, size, first, k)
        arrived = self.arrived.setdefault(key, [])
        arrived.append(g)
        if len(arrived) == members:
            del self.arrived[key]
            for member in arrived:
                self.group_of[member] = arrived
                mr = self.g_rank[member]
                self._start(mr, member - self.base[mr], member)

    def _start(self, r: int, n: int, g: int) -> None:
        prep = self.preps[r]
        now = self.now
        dur = _task_ns(prep, n, self.cores[g], self.hw, self.works, self.memo)
        self.start[g] = now
        end = now + dur
        self.end[g] = end
        self.s_state[self.sbase[r] + prep.stream[n]] = _RUNNING
        heapq.heappush(self.heap, (end, g))

    def _finish(self, g: int) -> None:
        r = self.g_rank[g]
        n = g - self.base[r]
        prep = self.preps[r]
        gs = self.sbase[r] + prep.stream[n]
        self.s_state[gs] = _IDLE
        self.s_ptr[gs] += 1
        self.dirty_streams.append(gs)
        self.finished += 1
        held = self.cores[g]
        if held:
            gp = r * _NPOOLS + prep.pool[n]
            self.free[gp] += held
            self.dirty_pools.append(gp)
            self.last_release[gp] = g
        if prep.kind[n] == _RECORD:
            woken = self.waiters.pop(g, None)
            if woken:
                self.dirty_streams.extend(woken)

    def find_races(self) -> None:
        """Every node that started before one of its producers had finished.

        Checked once the run is over, from the start and end times: the same test as at each
        start, but independent of the order in which nodes starting at one instant are
        processed.
        """
        start, end = self.start, self.end
        for r, prep in enumerate(self.preps):
            base = self.base[r]
            for n, deps in enumerate(prep.deps):
                t = start[base + n]
                if t < 0 or not deps:
                    continue
                for i, p in enumerate(deps):
                    pe = end[base + p] if start[base + p] >= 0 else -1
                    if pe < 0 or pe > t:
                        self._race(r, n, p, prep.prog.deps[n][i][1], t, pe)

    def _race(self, r: int, n: int, p: int, kind: DepKind, now: int, producer_end: int) -> None:
        prog = self.preps[r].prog
        how = "uses the result of" if kind is DepKind.DATA else "must wait for"
        when = "had not started" if producer_end < 0 else f"finishes at {producer_end} ns"
        message = (
            f"race on rank {r}: {prog.describe(n)} on stream "
            f"{prog.stream_name(prog.stream[n])} starts at {now} ns and {how} "
            f"{prog.describe(p)} on stream {prog.stream_name(prog.stream[p])}, which {when}"
        )
        self.races.append(
            Race(r, n, p, kind, now, None if producer_end < 0 else producer_end, message)
        )

    # -- deadlock -----------------------------------------------------------------------------

    def deadlock(self) -> Deadlock:
        heads: dict[tuple[int, int], int] = {}  # (rank, node) -> global stream
        for gs, state in enumerate(self.s_state):
            if state != _DONE and self.s_ptr[gs] < len(self.s_nodes[gs]):
                r = self.s_rank[gs]
                heads[(r, self.s_nodes[gs][self.s_ptr[gs]])] = gs

        holders: dict[int, list[tuple[int, int, int]]] = {}
        for (r, n), _ in sorted(heads.items()):
            prep = self.preps[r]
            held = self.cores[self.base[r] + n]
            if held and prep.pool[n] >= 0:
                holders.setdefault(r * _NPOOLS + prep.pool[n], []).append((r, n, held))

        blocked: list[BlockedOp] = []
        for (r, n), gs in sorted(heads.items()):
            state = self.s_state[gs]
            if state == _WAIT_CORES:
                blocked.append(self._blocked_on_cores(r, n, holders))
            elif state == _WAIT_EVENT:
                blocked.append(self._blocked_on_event(r, n))
            else:
                blocked.append(self._blocked_on_peers(r, n))
        return Deadlock(self.now, tuple(blocked), _find_cycle(blocked))

    def _head_of(self, r: int, s: int) -> tuple[int, int] | None:
        gs = self.sbase[r] + s
        ptr = self.s_ptr[gs]
        nodes = self.s_nodes[gs]
        return (r, nodes[ptr]) if ptr < len(nodes) else None

    def _blocked(
        self,
        r: int,
        n: int,
        reason: str,
        detail: str,
        *,
        holds: int = 0,
        held_from: int = -1,
        wants: int = 0,
        pool: str = "",
        core_holders: tuple[tuple[int, int, int], ...] = (),
        record: int | None = None,
        missing_peers: tuple[int, ...] = (),
        blocked_by: tuple[tuple[int, int], ...] = (),
    ) -> BlockedOp:
        prep = self.preps[r]
        s = prep.stream[n]
        return BlockedOp(
            rank=r,
            node=n,
            stream=s,
            op=prep.prog.describe(n),
            stream_name=prep.prog.stream_name(s),
            reason=reason,
            holds=holds,
            held_from=held_from,
            wants=wants,
            pool=pool,
            core_holders=core_holders,
            record=record,
            missing_peers=missing_peers,
            blocked_by=blocked_by,
            detail=detail,
        )

    def _blocked_on_cores(
        self, r: int, n: int, holders: dict[int, list[tuple[int, int, int]]]
    ) -> BlockedOp:
        prep = self.preps[r]
        held = self.cores[self.base[r] + n]
        pool = POOL_ENGINES[prep.pool[n]]
        others = tuple(
            h for h in holders.get(r * _NPOOLS + prep.pool[n], []) if (h[0], h[1]) != (r, n)
        )
        need = prep.want[n] - held if prep.accum[n] else 1
        who = ", ".join(f"{self._name(hr, hn)} ({hc} cores)" for hr, hn, hc in others)
        detail = (
            (f"holds {held} and " if held else "")
            + f"waits for {need} more of the {self.hw.cores(pool)} {pool} cores"
            + (f", held by {who}" if who else "")
        )
        return self._blocked(
            r,
            n,
            "cores",
            detail,
            holds=held,
            held_from=self.held_from[self.base[r] + n] if held else -1,
            wants=prep.want[n],
            pool=pool,
            core_holders=others,
            blocked_by=tuple((hr, hn) for hr, hn, _ in others),
        )

    def _blocked_on_event(self, r: int, n: int) -> BlockedOp:
        prep = self.preps[r]
        prog = prep.prog
        record = prep.bound[n]
        rs = prep.stream[record]
        head = self._head_of(r, rs)
        detail = f"waits for {prog.describe(record)} on stream {prog.stream_name(rs)}" + (
            f", which is queued behind {self._name(*head)}" if head else ""
        )
        return self._blocked(
            r, n, "event", detail, record=record, blocked_by=(head,) if head else ()
        )

    def _blocked_on_peers(self, r: int, n: int) -> BlockedOp:
        prep = self.preps[r]
        coll = prep.coll[n]
        assert coll is not None
        group, size, k = coll
        first = (r // size) * size
        present = {self.g_rank[m] for m in self.arrived.get((group, size, first, k), [])}
        missing = tuple(p for p in range(first, min(first + size, self.ranks)) if p not in present)
        edges: list[tuple[int, int]] = []
        notes: list[str] = []
        for p in missing:
            peer = self.preps[p].coll_by_key.get((group, k))
            if peer is None:
                notes.append(f"rank {p} never issues it")
                continue
            head = self._head_of(p, self.preps[p].stream[peer])
            if head is None:
                continue
            edges.append(head)
            if head == (p, peer):
                notes.append(f"rank {p}'s copy is blocked itself")
            else:
                notes.append(f"rank {p}'s copy is queued behind {self._name(*head)}")
        held = self.cores[self.base[r] + n]
        pool = POOL_ENGINES[prep.pool[n]] if prep.pool[n] >= 0 else ""
        detail = (
            (f"holds {held} {pool} cores and " if held else "")
            + f"waits for collective #{k} of group '{group}' on rank(s) "
            + ", ".join(map(str, missing))
            + (f" ({'; '.join(notes)})" if notes else "")
        )
        return self._blocked(
            r,
            n,
            "peers",
            detail,
            holds=held,
            held_from=self.held_from[self.base[r] + n] if held else -1,
            wants=prep.want[n],
            pool=pool,
            missing_peers=missing,
            blocked_by=tuple(edges),
        )

    def _name(self, r: int, n: int) -> str:
        prog = self.preps[r].prog
        return f"{prog.describe(n)} on rank {r} stream {prog.stream_name(prog.stream[n])}"


def _find_cycle(blocked: Sequence[BlockedOp]) -> tuple[tuple[int, int], ...]:
    """The first cycle a depth-first search of the wait-for graph meets, in key order."""
    edges = {(b.rank, b.node): [e for e in b.blocked_by] for b in blocked}
    color: dict[tuple[int, int], int] = {}
    for root in sorted(edges):
        if color.get(root):
            continue
        path: list[tuple[int, int]] = [root]
        iters = [iter(edges[root])]
        color[root] = 1
        while iters:
            nxt = next(iters[-1], None)
            if nxt is None:
                color[path.pop()] = 2
                iters.pop()
                continue
            if nxt not in edges:
                continue
            c = color.get(nxt, 0)
            if c == 1:
                return tuple(path[path.index(nxt) :])
            if c == 0:
                color[nxt] = 1
                path.append(nxt)
                iters.append(iter(edges[nxt]))
    return ()


# ---------------------------------------------------------------------------------------------
# Results from the final state
# ---------------------------------------------------------------------------------------------


def _critical_path(sim: _Simulation, last: int) -> list[tuple[int, int]]:
    start, end, g_rank, base_of = sim.start, sim.end, sim.g_rank, sim.base
    group_of, core_pred, preps = sim.group_of, sim.core_pred, sim.preps
    path: list[tuple[int, int]] = []
    seen: set[int] = set()
    g = last
    while g >= 0:
        seen.add(g)
        r = g_rank[g]
        path.append((r, g - base_of[r]))
        t = start[g]
        best, best_end = -1, -1
        for member in group_of.get(g, (g,)):
            mr = g_rank[member]
            base = base_of[mr]
            mn = member - base
            prep = preps[mr]
            # The stream predecessor is looked at first so that it wins ties: the
            # plain FIFO chain.
            prev = prep.prev_on_stream[mn]
            if prev >= 0:
                p = base + prev
                pe = end[p]
                if best_end < pe <= t and p not in seen:
                    best, best_end = p, pe
            for q in prep.deps[mn]:
                p = base + q
                pe = end[p]
                if best_end < pe <= t and p not in seen:
                    best, best_end = p, pe
            if prep.kind[mn] == _WAIT:
                p = base + prep.bound[mn]
                pe = end[p]
                if best_end < pe <= t and p not in seen:
                    best, best_end = p, pe
            p = core_pred.get(member, -1)
            if p >= 0:
                pe = end[p]
                if best_end < pe <= t and p not in seen:
                    best, best_end = p, pe
        g = best
    path.reverse()
    return path


def _peak_memory(sim: _Simulation, r: int, makespan: int) -> int:
    """Peak bytes of live values on rank r: a node's results from its start to the end of
    its last data reader (its own end without one), arguments from 0 to their last reader.
    A reader that never ran keeps the value alive to the end."""
    prep = sim.preps[r]
    base = sim.base[r]
    n_nodes = len(prep.kind)
    start = sim.start[base : base + n_nodes]
    end = [makespan if e < 0 else e for e in sim.end[base : base + n_nodes]]
    dies = list(end)
    for n, deps in enumerate(prep.prog.deps):
        e = end[n]
        for p, kind in deps:
            if kind is DepKind.DATA and e > dies[p]:
                dies[p] = e
    deltas: list[tuple[int, int]] = []
    for size, users in zip(prep.arg_bytes, prep.arg_users, strict=True):
        if size and users:
            deltas.append((0, size))
            deltas.append((max(end[u] for u in users), -size))
    for n, size in enumerate(prep.result_bytes):
        if size and start[n] >= 0:
            deltas.append((start[n], size))
            deltas.append((dies[n], -size))
    # Frees sort before allocations at the same instant: a value dies when its last reader
    # ends, and memory freed then can hold a value born at that moment.
    deltas.sort()
    live = peak = 0
    for _, d in deltas:
        live += d
        if live > peak:
            peak = live
    return peak


def _op_records(sim: _Simulation) -> list[OpRecord]:
    """One `OpRecord` per node that ran, by rank then issue order."""
    pool_names = ("", *POOL_ENGINES)  # indexed by pool + 1
    ops: list[OpRecord] = []
    append = ops.append
    for r, prep in enumerate(sim.preps):
        base = sim.base[r]
        n_nodes = len(prep.kind)
        starts = sim.start[base : base + n_nodes]
        ends = sim.end[base : base + n_nodes]
        cores_of = sim.cores[base : base + n_nodes]
        held = sim.held_from[base : base + n_nodes]
        for n, (st, en, s, pool, cores, engine) in enumerate(
            zip(starts, ends, prep.stream, prep.pool, cores_of, prep.engine, strict=True)
        ):
            if st >= 0:
                append(
                    OpRecord(
                        r,
                        n,
                        s,
                        st,
                        en,
                        cores,
                        engine,
                        pool_names[pool + 1],
                        held[n] if cores else st,
                    )
                )
    return ops


def _collect(sim: _Simulation, deadlock: Deadlock | None) -> SimResult:
    hw = sim.hw
    busy: dict[tuple[int, int], int] = {}
    core_ns = dict.fromkeys(POOL_ENGINES, 0)
    waits = records = 0
    ids: set[int] = set()
    events_used = 0
    edges: list[tuple[int, int, int]] = []
    makespan = 0
    last = -1
    for r, prep in enumerate(sim.preps):
        base = sim.base[r]
        prog = prep.prog
        stream_busy = [0] * prep.num_streams
        pool_ns = [0] * (_NPOOLS + 1)
        rank_ids: set[int] = set()
        idless = 0
        n_nodes = len(prep.kind)
        starts = sim.start[base : base + n_nodes]
        ends = sim.end[base : base + n_nodes]
        cores_of = sim.cores[base : base + n_nodes]
        for n, (st, en, s, pool, cores, kind) in enumerate(
            zip(starts, ends, prep.stream, prep.pool, cores_of, prep.kind, strict=True)
        ):
            if st < 0:
                continue
            stream_busy[s] += en - st
            pool_ns[pool + 1] += cores * (en - st)
            if en >= makespan:
                makespan, last = en, base + n
            if kind == _WAIT:
                waits += 1
                edges.append((r, prep.bound[n], n))
            elif kind == _RECORD:
                records += 1
                eid = prog.event_id[n]
                if eid >= 0:
                    rank_ids.add(eid)
                else:
                    idless += 1
        for s, ns in enumerate(stream_busy):
            busy[(r, s)] = ns
        for i, engine in enumerate(POOL_ENGINES):
            core_ns[engine] += pool_ns[i + 1]
        ids |= rank_ids
        events_used = max(events_used, len(rank_ids) + idless)
    if deadlock is not None:
        makespan = max(makespan, deadlock.time_ns)
    util = {
        e: (core_ns[e] / (hw.cores(e) * sim.ranks * makespan) if makespan else 0.0)
        for e in POOL_ENGINES
    }
    peaks = [_peak_memory(sim, r, makespan) for r in range(sim.ranks)]
    return SimResult(
        hw_name=hw.name,
        ranks=sim.ranks,
        makespan_ns=makespan,
        _op_source=lambda: _op_records(sim),
        stream_busy_ns=busy,
        utilisation=util,
        critical_path=_critical_path(sim, last) if last >= 0 else [],
        waits_executed=waits,
        records_executed=records,
        event_ids=sorted(ids),
        events_used=events_used,
        event_edges=edges,
        peak_memory_bytes=max(peaks, default=0),
        peak_memory_by_rank=peaks,
        races=sim.races,
        deadlock=deadlock,
    )


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------


def simulate(
    programs: Sequence[Program],
    hw: Hardware,
    *,
    limits: CoreLimitFn | None = None,
    cache: SimCache | None = None,
    mirror_peers: bool = False,
    profile: Profile | None = None,
) -> SimResult:
    """Run `programs` (one per rank) on `hw` and measure what happens.

    SPMD: pass the same `Program` once per rank (its per-node work is computed once).
    `limits(program, node, engine)` gives each op's core limit; the default reads the
    `coreset.cores` attribute `coreset-lower` writes, unlimited where absent.  `cache` keeps
    what was read from the IR for later calls (see `SimCache`).  `mirror_peers` lets a
    collective whose group reaches past `programs` run as if the missing ranks were copies
    of the ones present (a planner looking at one rank of an SPMD program wants that).
    `profile` replaces the cost model's durations and core demands for the ops it covers
    (see `npuir.backends.npu.profile`); `SimResult.profiled_ops` says how many.

    Raises `ValueError` if `programs` is empty, a node has no stream (not lowered), a
    group is partial without `mirror_peers` (see `npuir.backends.npu.groups`), or
    `cache` was made for another device; `UnloweredScopes` when `limits` is the default
    but an op still stands in a `coreset.limit` or `stream.switch` scope (its limit would be
    ignored: run `coreset-lower`, or pass `limits=npuir.analysis.core_limits.limit_fn(...)`,
    which resolves scopes).  A deadlock is not an exception: it is
    `SimResult.deadlock`.
    """
    if not programs:
        raise ValueError("simulate needs at least one program (one per rank)")
    if cache is None:
        cache = SimCache(hw)
    elif cache.hw is not hw and cache.hw != hw:
        raise ValueError(f"the SimCache was made for {cache.hw.name}, not {hw.name}")
    if not mirror_peers:
        partial = partial_groups(
            [[op for op in prog.ops if isinstance(op, CollectiveOp)] for prog in programs],
            len(programs),
        )
        if partial:
            raise ValueError(
                partial[0].describe() + "; simulate every rank, or pass mirror_peers=True"
            )
    if limits is None:
        for prog in {id(p): p for p in programs}.values():
            _refuse_unlowered_scopes(prog)
    limit_fn = limits if limits is not None else coreset_limit
    # The run allocates many small objects and frees none of them in cycles; a collection
    # would walk the whole IR each time, so the collector is paused for the run.
    with collector_paused():
        prepared: dict[int, _Prepared] = {}
        preps: list[_Prepared] = []
        for prog in programs:
            prep = prepared.get(id(prog))
            if prep is None:
                prep = prepared[id(prog)] = _Prepared(prog, hw, limit_fn, cache, profile)
            preps.append(prep)
        sim = _Simulation(preps, hw, list(cache.works))
        sim.run()
        sim.find_races()
        deadlock = sim.deadlock() if sim.finished < sim.total else None
        result = _collect(sim, deadlock)
        result.compute_ops = sum(p.compute_ops for p in prepared.values())
        result.profiled_ops = sum(p.profiled for p in prepared.values())
        return result
