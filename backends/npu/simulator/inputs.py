"""What the simulator reads from the IR: per-node arrays, computed once per program.

The event loop (`loop`) runs programs; this module turns one `Program` into the
integer arrays it touches (`Prepared`): stream order, dependences, the record
each wait is bound to, and for each compute op its engine's core pool, its `blockDim` (how
many blocks its work is split into), how many of them may run at once, its launch cost and
one block's duration.  Ops of the same signature share one reading (`SimCache`), and
`NodeCosts` gives planners the same numbers.

Every cost comes from `npuir.backends.npu.timing`: a block's duration (`timing.block_ns`:
an op of ``B`` blocks runs each block on one core with ``1/C`` of HBM, ``C`` its engine's
cores, so an op granted all its blocks' cores at once takes what the roofline says for it
on ``B`` cores), the launch, a hold-and-wait op's or a collective's run, a record's and a
wait's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from npuir.analysis.program import NodeKind, Program, StreamInfo
from npuir.backends.npu.hardware import Hardware
from npuir.dialects import coreset, stream
from npuir.dialects.coreset import CoresAttr
from npuir.dialects.npu import (
    CORE_ENGINES,
    CollectiveOp,
    CommMode,
    NpuOp,
    tensor_bytes,
)
from npuir.dialects.scope import ScopeOp

from .. import timing
from ..cost import OpWork, op_work, parallelism, runs_without_task
from ..profile import Profile, ProfiledCost

__all__ = [
    "COMPUTE",
    "NPOOLS",
    "POOL_ENGINES",
    "RECORD",
    "WAIT",
    "CoreLimitFn",
    "NodeCosts",
    "Prepared",
    "SimCache",
    "UnloweredScopes",
    "coreset_limit",
    "granted_ns",
    "refuse_unlowered_scopes",
]

CoreLimitFn = Callable[[Program, int, str], int | None]
"""``limit(program, node, engine)``: the most cores of `engine` the node may take, or None
for unlimited (the device maximum).  `coreset_limit` is the default; a core-limit analysis
can pass its own."""

POOL_ENGINES: tuple[str, ...] = CORE_ENGINES
"""Engines with a pool of cores per rank, in pool-index order."""

NPOOLS = len(POOL_ENGINES)
"""Core pools per rank: a rank's pool ``i`` is global pool ``rank * NPOOLS + i``."""
_POOL_INDEX = {e: i for i, e in enumerate(POOL_ENGINES)}
_VECTOR_POOL = _POOL_INDEX["vector"]

# Node kinds as the ints `Prepared.kind` holds (the event loop compares ints, not enums).
COMPUTE = int(NodeKind.COMPUTE)
RECORD = int(NodeKind.RECORD)
WAIT = int(NodeKind.WAIT)

# Memo keys pack (work id, cores granted) into one int.
_CORE_KEY = 1 << 20


# ---------------------------------------------------------------------------------------------
# Per-op inputs
# ---------------------------------------------------------------------------------------------


class UnloweredScopes(ValueError):
    """The simulator was asked to read lowered core limits from IR that still has scopes."""


def refuse_unlowered_scopes(program: Program) -> None:
    """Raise `UnloweredScopes` if an op of `program` still stands in a `coreset.limit` or
    `stream.switch` scope (`coreset_limit` would ignore its limit)."""
    for op in program.ops:
        parent = op.parent_op()
        if isinstance(parent, ScopeOp):
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
    kinds, event_of, event_id = prog.kind, prog.event_of, prog.event_id
    if max(event_id, default=-1) < 0:  # no physical ids (a search's lowered programs)
        wait = NodeKind.WAIT
        return [e if k is wait else -1 for k, e in zip(kinds, event_of)]
    latest: dict[int, int] = {}
    bound = [-1] * len(prog)
    for n in range(len(prog)):
        kind = kinds[n]
        if kind is NodeKind.WAIT:
            record = event_of[n]
            eid = event_id[record]
            bound[n] = latest.get(eid, record) if eid >= 0 else record
        elif kind is NodeKind.RECORD and event_id[n] >= 0:
            latest[event_id[n]] = n
    return bound


def _value_readers(value: SSAValue) -> list[Operation]:
    """The ops that read `value`, through `stream.wait_tensor` results and scope yields
    (which are never nodes of a program: `build_program` keeps them apart)."""
    out: list[Operation] = []
    stack = [value]
    while stack:
        v = stack.pop()
        for use in v.uses:
            user = use.operation
            if isinstance(user, stream.WaitTensorOp):
                if use.index == 0:  # the tensor, not the `after` dependency
                    stack.append(user.result)
            elif isinstance(user, stream.YieldOp | coreset.YieldOp):
                parent = user.parent_op()
                if parent is not None:
                    stack.append(parent.results[use.index])
            else:
                out.append(user)
    return out


def _value_users(prog: Program, value: SSAValue, cache: SimCache) -> list[int]:
    """Nodes of `prog` that read `value` (`_value_readers`, read from the IR once per
    cache: a search simulates many programs of the same ops)."""
    readers = cache.readers.get(value)
    if readers is None:
        readers = cache.readers[value] = _value_readers(value)
    index = prog.index
    return [index[op] for op in readers if op in index]


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
    """Duration of a collective (launch included); 0 for ops costed by the cores granted
    and for ops that run without a device task."""

    @staticmethod
    def of(op: NpuOp, hw: Hardware, works: dict[OpWork, int]) -> _OpInfo:
        work = op_work(op, hw)
        wid = works.setdefault(work, len(works))
        out = sum(tensor_bytes(r.type) for r in op.results if isinstance(r.type, TensorType))
        if work.engine == "comm":
            fixed = timing.collective_task_ns(hw, work)
            aiv = work.mode == CommMode.AIV
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
        if runs_without_task(op):
            # GE gives it no device task: no launch, no cores, no time (`runs_without_task`).
            return _OpInfo(work, wid, work.engine, out, -1, 0, 0, False, False, 0)
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
        self.block_ns: dict[int, int] = {}
        """One block's duration by (work id, blockDim) packed as in `_CORE_KEY`."""
        self.readers: dict[SSAValue, list[Operation]] = {}
        """The ops that read each function argument (`_value_readers`)."""


class Prepared:
    """One program's per-node arrays, computed once from the IR.

    A search that simulates many lowered schedules of one program prepares that program
    once and takes a `view` of it for each schedule: the per-op work (engine, cores,
    blocks and their duration, collective keys, byte sizes) is gathered from it, and only
    what the schedule changes (streams, order, records and waits) is read again."""

    # Per-node arrays gathered by `view` (a view copies them through `origin`).
    _GATHERED = (
        "prof_ns",
        "pool",
        "want",
        "accum",
        "par",
        "work_id",
        "fixed",
        "engine",
        "coll",
        "blocks",
        "launch",
        "block_ns",
        "result_bytes",
    )

    def __init__(
        self,
        prog: Program,
        hw: Hardware,
        limits: CoreLimitFn,
        cache: SimCache,
        profile: Profile | None = None,
        memory: bool = True,
    ) -> None:
        n_nodes = len(prog)
        self._structure(prog)
        self.hw = hw
        self.cache = cache
        self.profile = profile
        # Profiled ops: task duration (-1: costed by the model) and block dim.
        self.prof_ns = [-1] * n_nodes
        self.profiled = 0
        self.compute_ops = 0
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
        # Block dispatch (ordinary compute ops): blockDim, launch cost and one block's
        # duration; blocks 0 marks every other node.
        self.blocks = [0] * n_nodes
        self.launch = [0] * n_nodes
        self.block_ns = [0] * n_nodes
        self.coll_by_key: dict[tuple[str, int], int] = {}
        self.result_bytes = [0] * n_nodes
        self._fill(range(n_nodes), limits, True)
        self._padded: dict[str, list[object]] = {}
        # Memory: argument sizes and their readers (node results' readers are data deps);
        # not read for a run measured without its memory (`memory=False`).
        self.arg_bytes: list[int] = []
        self.arg_users: list[list[int]] = []
        for arg in prog.func.body.block.args if memory else ():
            self.arg_bytes.append(tensor_bytes(arg.type) if isinstance(arg.type, TensorType) else 0)
            self.arg_users.append(_value_users(prog, arg, cache))

    def _structure(self, prog: Program) -> None:
        """What depends on the program's streams and issue order, not on its ops' work."""
        n_nodes = len(prog)
        self.prog = prog
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
        stream_nodes = self.stream_nodes
        for n, s in enumerate(self.stream):
            prev[n] = last[s]
            last[s] = n
            stream_nodes[s].append(n)
        self.bound = _bound_records(prog)

    def __getstate__(self) -> dict[str, object]:
        """What a worker process needs to run a view (`run.span_task`): the arrays, not the
        IR, the cache or the profile (a worker's `prog` is None: it cannot describe a node,
        which a span does not ask)."""
        self.deps  # noqa: B018 -- read from the IR here, where the IR is
        state = dict(self.__dict__)
        for name in ("prog", "cache", "profile", "_padded"):
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self.prog = None
        self.cache = None  # type: ignore[assignment]
        self.profile = None
        self._padded = {}

    @functools.cached_property
    def deps(self) -> list[list[int]]:
        """Per node, its producers (read when races or the critical path ask)."""
        return [[p for p, _ in deps] if deps else [] for deps in self.prog.deps]

    def _fill(self, nodes: Iterable[int], limits: CoreLimitFn, count: bool) -> None:
        """Read the work of `nodes` from their ops (through the cache) under `limits`;
        `count` adds them to `compute_ops` and `profiled`."""
        prog, hw, cache, profile = self.prog, self.hw, self.cache, self.profile
        costs = cache.profiled.setdefault(profile, {}) if profile is not None else None
        block_memo = cache.block_ns
        coll_count: dict[str, int] = {}

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
        prof_ns, blocks, launch, block_ns = self.prof_ns, self.blocks, self.launch, self.block_ns
        on = stream.STREAM_ON
        for n in nodes:
            kind = kinds[n]
            if kind != COMPUTE:
                if kind == RECORD:
                    fixed[n] = timing.record_cost(hw)
                elif kind == WAIT:
                    fixed[n] = timing.wait_cost(hw)
                continue
            op = ops[n]
            info = by_op.get(op)
            if info is None:
                assert isinstance(op, NpuOp)  # (once per op: the cache holds npu ops only)
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
            prof_ns[n] = -1
            blocks[n] = launch[n] = block_ns[n] = 0
            if info.accum:
                want[n] = _clamp(limits(prog, n, POOL_ENGINES[info.pool]), info.total)
                accum[n] = True
            elif info.pool >= 0:
                limit = limits(prog, n, info.engine)
                want[n] = info.par if limit is None else max(1, min(limit, info.par))
            if count:
                self.compute_ops += 1
            if costs is not None and profile is not None:
                cost = costs.get(op, _UNSEEN)
                if cost is _UNSEEN:
                    cost = costs[op] = profile.lookup(op)
                if isinstance(cost, ProfiledCost):
                    self._use_profile(n, info, cost, limits, count)
            if not info.accum and info.pool >= 0:
                if prof_ns[n] >= 0:
                    # A profiled task time is one block's time on its block dim, launch
                    # included.
                    blocks[n] = par[n]
                    block_ns[n] = prof_ns[n]
                else:
                    b = blocks[n] = want[n]
                    key = info.work_id * _CORE_KEY + b
                    ns = block_memo.get(key)
                    if ns is None:
                        ns = block_memo[key] = timing.block_ns(hw, info.work, b)
                    block_ns[n] = ns
                    launch[n] = timing.launch_cost(hw)
            if info.collective and count:
                assert isinstance(op, CollectiveOp)
                group = op.group
                k = coll_count.get(group, 0)
                coll_count[group] = k + 1
                self.coll[n] = (group, op.group_size, k)
                self.coll_by_key[(group, k)] = n

    @staticmethod
    def unscheduled(
        prog: Program,
        hw: Hardware,
        limits: CoreLimitFn,
        cache: SimCache,
        profile: Profile | None = None,
    ) -> Prepared:
        """The inputs of `prog`'s ops whatever its streams (it may be unpartitioned): what
        `view` gathers from for each schedule of it.  `limits` is read with `prog` itself,
        not the one-stream copy that is prepared."""

        def limit_of(_: Program, n: int, engine: str) -> int | None:
            return limits(prog, n, engine)

        return Prepared(_on_one_stream(prog), hw, limit_of, cache, profile, memory=False)

    def view(
        self,
        lowered: Program,
        origin: Sequence[int],
        limits: CoreLimitFn,
        redo: Iterable[int] = (),
    ) -> Prepared:
        """The inputs of `lowered`, a schedule of this program: the same ops on other
        streams, perhaps in another order, with records and waits added (`origin[n]` is the
        node of this program that lowered node `n` is, -1 for a record or wait it adds; every
        node of this program appears once).  What an op costs is copied from here, so
        `limits` (of `lowered`'s nodes) must give each op the limits it was prepared with,
        but for `redo` (nodes of this program), whose work is read again under `limits`.
        Cheap: a search prepares its program once and views it per schedule.  No memory
        inputs (`memory=False`)."""
        out = Prepared.__new__(Prepared)
        out._structure(lowered)
        out.hw, out.cache, out.profile = self.hw, self.cache, self.profile
        out.profiled, out.compute_ops = self.profiled, self.compute_ops
        padded = self._padded
        if not padded:
            # One more entry, at index -1, for the nodes a lowering adds (origin -1).
            for name in self._GATHERED:
                column: list[object] = getattr(self, name)
                padded[name] = [*column, _BLANK[name]]
        for name in self._GATHERED:
            setattr(out, name, list(map(padded[name].__getitem__, origin)))
        fixed, kind = out.fixed, out.kind
        record, wait = timing.record_cost(self.hw), timing.wait_cost(self.hw)
        new_of = [-1] * len(self.kind)
        for n, o in enumerate(origin):
            if o < 0:
                fixed[n] = record if kind[n] == RECORD else wait
            else:
                new_of[o] = n
        out.coll_by_key = {key: new_of[n] for key, n in self.coll_by_key.items()}
        out._fill([new_of[b] for b in redo], limits, False)
        out._padded = {}
        out.arg_bytes, out.arg_users = [], []
        return out

    def _use_profile(
        self, n: int, info: _OpInfo, cost: ProfiledCost, limits: CoreLimitFn, count: bool
    ) -> None:
        """Node `n` costs what the profile says: its task duration, on its block dim."""
        if count:
            self.profiled += 1
        self.prof_ns[n] = cost.duration_ns
        if info.collective:
            self.fixed[n] = cost.duration_ns
        elif not info.accum and info.pool >= 0:
            demand = max(1, min(cost.cores_for(info.engine) or info.par, info.total))
            self.par[n] = demand
            limit = limits(self.prog, n, info.engine)
            self.want[n] = demand if limit is None else max(1, min(limit, demand))


_UNSEEN = object()


def _on_one_stream(prog: Program) -> Program:
    """`prog` with every node on one stream (what preparing its ops' work needs of it)."""
    return Program(
        prog.func,
        ops=prog.ops,
        kind=prog.kind,
        stream=[0] * len(prog),
        deps=prog.deps,
        event_of=prog.event_of,
        event_id=prog.event_id,
        streams=[StreamInfo("s0", stream.MAIN_TAG, 0)],
        given_index=prog.given_index,
    )


_BLANK: dict[str, object] = {
    "prof_ns": -1,
    "pool": -1,
    "want": 0,
    "accum": False,
    "par": 0,
    "work_id": -1,
    "fixed": 0,
    "engine": "",
    "coll": None,
    "blocks": 0,
    "launch": 0,
    "block_ns": 0,
    "result_bytes": 0,
}
"""A record's or wait's entry in each gathered column (`Prepared.__init__`'s defaults)."""


def _clamp(limit: int | None, total: int) -> int:
    return total if limit is None else max(1, min(limit, total))


def granted_ns(
    prep: Prepared, n: int, granted: int, hw: Hardware, works: list[OpWork], memo: dict[int, int]
) -> int:
    """How long node `n` runs once started with `granted` cores (launch included), for
    every node but ordinary compute ops (see `_run_ns`): a hold-and-wait op runs all its
    cores for its whole run.

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
        dur = memo[key] = timing.held_ns(hw, works[wid], granted, prep.par[n])
    return dur


def _run_ns(
    prep: Prepared, n: int, cores: int, hw: Hardware, works: list[OpWork], memo: dict[int, int]
) -> int:
    """How long node `n` runs if it holds `cores` cores from its start to its end.

    An ordinary compute op runs its blocks in waves of ``min(cores, want)``: its launch,
    then ``ceil(blocks / wave)`` block durations.  Other nodes: `granted_ns`."""
    blocks = prep.blocks[n]
    if not blocks:
        return granted_ns(prep, n, cores, hw, works, memo)
    wave = min(cores, prep.want[n])
    return prep.launch[n] + -(-blocks // wave) * prep.block_ns[n]


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
        one_stream = _on_one_stream(prog)
        limit_fn = limits if limits is not None else coreset_limit

        def limit_of(_: Program, n: int, engine: str) -> int | None:
            return limit_fn(prog, n, engine)

        self._hw = hw
        self._prep = Prepared(one_stream, hw, limit_of, cache, profile)
        self._works = list(cache.works)
        self._memo: dict[int, int] = {}
        self.pool: list[int] = self._prep.pool
        """Per node, the index in `POOL_ENGINES` of the cores it takes (-1: none)."""
        self.want: list[int] = self._prep.want
        """Per node, the cores it asks for (0 for none)."""
        self.holds_and_waits: list[bool] = self._prep.accum
        """Per node, whether it collects cores until it has all it wants before starting."""

    def duration_ns(self, n: int, cores: int) -> int:
        """Node `n`'s run time (launch included) when it holds `cores` cores throughout
        (an ordinary op would spread onto more as they free up; see the simulator)."""
        return _run_ns(self._prep, n, max(1, cores), self._hw, self._works, self._memo)
