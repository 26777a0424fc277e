"""Deterministic discrete-event simulation of lowered programs on an NPU model.

The simulator runs one `Program` per rank (the same one N times for SPMD, one
per rank for MPMD) against a `Hardware` in integer nanoseconds, in graph mode:
the host is not modelled and every op is already enqueued.  The package's modules:
`inputs` reads the IR once into per-node arrays (and gives planners the same
costs, `NodeCosts`); `loop` runs the events; `measure` reads a finished run into
the result types of `results`; `run` holds the entry points.  Import from the
package: what it exports below is its interface.

What runs when (every cost and the rules below that involve one are
`npuir.backends.npu.timing`'s; this package applies them):

- **Streams.** Each stream runs its nodes first-in first-out in issue order.
  A `sync.record` takes `timing.record_cost`; a `sync.wait` blocks its stream
  until the record it is bound to has executed, then takes `timing.wait_cost`.
  With physical event ids a wait is bound to the latest record of its id
  issued before it (what `HappensBefore.bound_record` computes).
  `func.return` costs nothing, and so do ops GE runs without a device task
  (metadata-only views such as `npu.reshape`; `cost.runs_without_task`).
- **Cores: block dispatch.** Each rank has a pool of cube, vector and AI CPU
  cores.  This is CANN's kernel launch model (`aclrtLaunchKernelAttrValue.schemMode`,
  https://www.hiascend.com/document/detail/zh/canncommercial/82RC1/API/appdevgapi/aclcppdevg_03_1814.html):
  a kernel of `blockDim` N runs N blocks, each to completion on one core.  In
  the common mode (``schemMode = 0``) it starts as soon as *one* core is free
  and its blocks go to cores as they become free; in the batch mode
  (``schemMode = 1``) it starts only when all N cores are free at once.
  - An ordinary op is ``B = min(parallelism, core limit)`` blocks
    (`cost.parallelism`; the limit from `coreset.cores`), at most ``B`` of them
    running at once.  It starts when it heads its stream and one core of its
    engine is free; from then on, whenever cores of its pool are free and it is
    first in line, it takes as many as it has blocks left.  Its launch
    (`timing.launch_cost`) is paid once, at its start: blocks dispatched during the
    launch wait for it on their cores, later ones start at once.  One block
    runs ``timing.block_ns(work, B)`` (`inputs`):
    an op granted all ``B`` cores at its start takes exactly what the cost
    model gives for ``B`` cores.  The op ends with its last block.
  - A `full_core_sync` op is the batch mode: it takes free cores as they
    appear and *holds* them until it has all it asks for (its limit, or every
    core of its engine), then runs on all of them and releases them at its end.
  - An aiv-mode collective is gang-scheduled: its blocks spin until their peers
    (the other blocks and the other ranks' copies) arrive, so every block must
    be resident at once.  Its blocks go to vector cores as they free up (the
    common mode) and each holds its core from then on; once it holds all it
    asks for it waits for its group, and the ring transfer starts only when
    every member is there; all its cores are released when it ends.  (HCCL's
    AIV mode launches the collective as a vector kernel that polls flags in
    peers' memory -- an assumption about its block layout: one per vector core
    it asks for.)
  - Free cores go to the waiting requests (ops queued at the head of their
    stream, and started ops with blocks left) in order of stream priority
    (lower number first), then issue order; a hold-and-wait request that is
    accumulating keeps its place in that order, and nothing behind it gets a
    core meanwhile.
  - Mixed cube/vector kernels, which on separated-architecture chips (910B)
    launch groups of 1 AIC + 2 AIV, are not modelled: every `npu` op names one
    engine, so none is a mixed kernel.
  Blocks dispatched together end together, so they are one event: an op costs
  one event per instant at which it gains cores, not one per block.
- **Collectives.** Take ``timing.collective_task_ns`` (a launch and the ring time).  A
  collective of group size G is formed by consecutive ranks (0..G-1,
  G..2G-1, ...): the k-th collective of a communicator `group` on each of
  those ranks.  It starts on all of them at once, when every simulated member
  is at its head (and, for aiv, holds its cores).  A group that reaches past
  the ranks simulated (one rank of a G=8 program) is refused unless the caller
  asks for ``mirror_peers``: then its missing members are taken to be
  identical and to arrive at the same moment (`npuir.backends.npu.groups`).
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

Speed: per-node work (engine, `OpWork`, blocks and their duration, core
request, collective key, bound record) is read from the IR once per program,
shared between ops of the same signature and, through a `SimCache`, between
calls; the event loop then touches only integer arrays and heaps
(`bench/sim_throughput.py` measures it).

    progs = [build_program(func, module_streams(module))]
    result = simulate(progs, PRESETS["tiny"])
    result.makespan_ns, result.races, result.deadlock
"""

from .inputs import (
    POOL_ENGINES,
    CoreLimitFn,
    NodeCosts,
    Prepared,
    SimCache,
    UnloweredScopes,
    coreset_limit,
    refuse_unlowered_scopes,
)
from .results import BlockedOp, Deadlock, OpRecord, Race, SimResult
from .run import Span, simulate, simulate_span, span_task

__all__ = [
    "POOL_ENGINES",
    "BlockedOp",
    "CoreLimitFn",
    "Deadlock",
    "NodeCosts",
    "OpRecord",
    "Prepared",
    "Race",
    "SimCache",
    "SimResult",
    "Span",
    "UnloweredScopes",
    "coreset_limit",
    "refuse_unlowered_scopes",
    "simulate",
    "simulate_span",
    "span_task",
]
