"""IOS's exact stage search as a baseline mode: `stream-partition{mode=ios}`.

IOS (Ding et al., "IOS: Inter-Operator Scheduler for CNN Acceleration", MLSys'21; reimplemented
as a compiler pass in RAF) schedules a graph as a sequence of *stages*: the ops of a stage are
split into *groups*, each group runs as a chain on a stream of its own, and a stage starts once
the one before it has ended.  A dynamic program over the set of ops not scheduled yet finds the
sequence whose summed stage latencies are least:

    cost(S) = min over endings E of S: cost(S - E) + latency(E),   cost({}) = 0

where an *ending* E of S is a non-empty subset no edge leaves for S - E (it can run last).  A
stage's groups are the weakly connected components of its ops (ops joined by an edge must run
on one stream, in order); each is issued in topological order.  The paper's pruning is kept as
its defaults: at most `GROUP_OPS` (s = 3) ops per group and `STAGE_GROUPS` (r = 8) groups per
stage, and the graph cut into parts of at most `PART_OPS` (100) ops, searched one after
another (a part's ops in written order, which is topological).  A part whose search would
simulate more than `STAGE_BUDGET` stages or enumerate more than `ENDING_BUDGET` endings is cut
into its two halves (in written order), searched one after the other, recursively: the DP is
exponential in the graph's width (IOS's CNN blocks are narrow; a 200-op random graph's first
100 ops did not finish in minutes), and RAF's reimplementation cuts its blocks at 20 ops for
the same reason.  `IosSchedule.cuts` says how often.  Each state's endings are
enumerated as RAF's pass does: grown one op at a time from the empty set, an op joining only
once every op it feeds within the state is in, each set once.

What differs, and why:

- **Latency.** IOS measures each stage on the device; here each stage is simulated alone by
  npuir's simulator through the judge `auto` uses (`npuir.schedule.auto.Judge`: the stage's
  ops lowered with the minimal events, the program's core limits, one rank with mirrored
  peers), as a program of its own: the DP adds stage latencies, so a stage is costed as IOS
  costs it, in isolation.  The whole schedule is then what every mode gives: streams and an
  issue order, lowered by `insert-events`.  The barrier IOS puts between stages is not
  written: the events order every cross-stream dependency, which is all a barrier is needed
  for, so the stages may overlap where the simulator lets them.
- **No operator merge.** IOS's other stage kind merges same-shaped convolutions into one
  kernel; npuir has no such rewrite, so every stage is a concurrent one.
- **Collectives** keep their written order, as in every mode that places ops: each
  collective is an edge after the previous one of its group (`with_collective_chain`), so
  the stages never reorder them.
- **Streams.** Group `i` of a stage runs on stream `i` (0 the default one), streams reused
  from stage to stage; at most `max-streams` streams, pinned tags' streams included, so a
  stage has at most that many groups less the pinned streams.  A pinned op runs on its tag's
  stream whatever its group.  A function whose issue order is fixed (a `coreset.limit`
  scope) keeps its written order and takes the search's streams only.
- **No core limits are chosen**: the stages run under the limits the program writes, as
  every baseline does (`auto limits=true` chooses its own).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp

from npuir.analysis.core_limits import CoreLimits, limit_fn
from npuir.analysis.partition import Assignment, Request, with_collective_chain
from npuir.analysis.program import DEFAULT_STREAM, NodeKind, Program, StreamInfo
from npuir.backends.npu.hardware import Hardware
from npuir.backends.npu.profile import Profile
from npuir.backends.npu.simulator import SimCache
from npuir.dialects.stream import MAIN_TAG
from npuir.schedule.auto import Judge, LimitFn
from npuir.schedule.list_schedule import fresh_tag

GROUP_OPS = 3
"""IOS's s: the most ops of one group (a chain on one stream) in a stage."""
STAGE_GROUPS = 8
"""IOS's r: the most groups of one stage."""
PART_OPS = 100
"""The most ops of one part of the graph; parts are searched one after another."""
STAGE_BUDGET = 5_000
"""The most distinct stages a part's search may simulate; a part that would need more is
cut in two (found before any is simulated)."""
ENDING_BUDGET = 100_000
"""The most endings a part's search enumerates (over all its states); likewise."""


class OverBudget(Exception):
    """A part's search went over `STAGE_BUDGET` or `ENDING_BUDGET`."""


@dataclass(frozen=True)
class Stage:
    """Ops run together: each group a chain on a stream of its own (node indices, in issue
    order); `latency` is the stage simulated alone."""

    groups: tuple[tuple[int, ...], ...]
    latency: int


@dataclass(frozen=True)
class IosSchedule:
    """The stages the search chose, in order, and how much it searched."""

    stages: tuple[Stage, ...]
    states: int
    """DP states (sets of ops not scheduled yet) solved, over every part."""
    stages_costed: int
    """Distinct stages simulated."""
    cuts: int = 0
    """Parts cut in two for going over the budget (`STAGE_BUDGET`, `ENDING_BUDGET`)."""

    @property
    def latency(self) -> int:
        """IOS's objective: the stages' latencies summed."""
        return sum(stage.latency for stage in self.stages)


def _bits(mask: int) -> Iterator[int]:
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class PartSearch:
    """The dynamic program of one part: its ops are bits 0..len(nodes)-1."""

    def __init__(
        self,
        nodes: Sequence[int],
        deps: Sequence[Sequence[int]],
        max_groups: int,
        latency: Callable[[tuple[tuple[int, ...], ...]], int],
    ) -> None:
        self.nodes = list(nodes)
        bit = {node: i for i, node in enumerate(nodes)}
        n = len(nodes)
        self.preds = [0] * n
        self.succs = [0] * n
        for i, node in enumerate(nodes):
            for p in deps[node]:
                j = bit.get(p)
                if j is not None:  # a producer of an earlier part is done already
                    self.preds[i] |= 1 << j
                    self.succs[j] |= 1 << i
        self.max_groups = max_groups
        self.latency = latency
        self.best: dict[int, tuple[int, int]] = {0: (0, 0)}
        """State -> (its least summed latency, the ending chosen)."""
        self.stage_of: dict[int, tuple[tuple[tuple[int, ...], ...], int]] = {}
        """Ending -> its groups (node indices) and its latency."""
        self.enumerated = 0
        """Endings enumerated so far, over every state."""

    def groups(self, ending: int) -> list[int] | None:
        """`ending`'s weakly connected components (bit masks), or None when one has more
        than `GROUP_OPS` ops."""
        out: list[int] = []
        left = ending
        while left:
            low = left & -left
            comp, frontier = low, low
            while frontier:
                grown = 0
                for i in _bits(frontier):
                    grown |= (self.preds[i] | self.succs[i]) & ending
                frontier = grown & ~comp
                comp |= grown
                if comp.bit_count() > GROUP_OPS:
                    return None
            out.append(comp)
            left &= ~comp
        return out

    def endings(self, state: int) -> list[int]:
        """Every ending of `state` within the pruning (module docstring), in a fixed order."""
        found: set[int] = set()
        stack = [0]
        most = GROUP_OPS * self.max_groups
        while stack:
            decision = stack.pop()
            if decision.bit_count() >= most:
                continue
            for i in _bits(state & ~decision):
                # i may run last once every op it feeds within the state is in the ending.
                if self.succs[i] & state & ~decision:
                    continue
                grown = decision | 1 << i
                if grown in found or self.groups(grown) is None:
                    continue  # a component only grows as ops join: prune it now
                found.add(grown)
                stack.append(grown)
                self.enumerated += 1
                if self.enumerated > ENDING_BUDGET:
                    raise OverBudget
        return sorted(e for e in found if len(self.groups(e) or ()) <= self.max_groups)

    def cost(self, ending: int) -> int:
        known = self.stage_of.get(ending)
        if known is None:
            comps = self.groups(ending)
            assert comps is not None
            groups = tuple(
                tuple(self.nodes[i] for i in _bits(comp))
                for comp in sorted(comps, key=lambda c: c & -c)
            )
            known = self.stage_of[ending] = (groups, self.latency(groups))
        return known[1]

    def solve(self) -> list[Stage]:
        """The stages of the part, first to last.  Raises `OverBudget` before simulating
        anything when the part has more distinct endings than `STAGE_BUDGET` (or its
        enumeration more than `ENDING_BUDGET`)."""
        full = (1 << len(self.nodes)) - 1
        # First every state the endings reach, and their endings (no simulation yet) ...
        ends_of: dict[int, list[int]] = {0: []}
        distinct: set[int] = set()
        stack = [full]
        while stack:
            state = stack.pop()
            if state in ends_of:
                continue
            ends = ends_of[state] = self.endings(state)
            distinct.update(ends)
            if len(distinct) > STAGE_BUDGET:
                raise OverBudget
            stack.extend(state & ~e for e in ends if state & ~e not in ends_of)
        # ... then the states by size, each from the smaller ones its endings leave.
        for state in sorted(ends_of, key=int.bit_count):
            if state:
                ends = ends_of[state]
                choice = min(ends, key=lambda e: (self.best[state & ~e][0] + self.cost(e), e))
                self.best[state] = (self.best[state & ~choice][0] + self.cost(choice), choice)
        stages: list[Stage] = []
        state = full
        while state:
            ending = self.best[state][1]
            groups, latency = self.stage_of[ending]
            stages.append(Stage(groups, latency))
            state &= ~ending
        stages.reverse()
        return stages


def ios_stages(
    prog: Program,
    hw: Hardware,
    limits: LimitFn | None = None,
    profile: Profile | None = None,
    pinned: Sequence[str | None] | None = None,
    max_groups: int = STAGE_GROUPS,
    stream_of_pin: dict[str, int] | None = None,
) -> IosSchedule:
    """IOS's stages for `prog`'s compute nodes (module docstring): at most `max_groups`
    groups per stage; a pinned node (`pinned[n]`, a tag of `stream_of_pin`) is simulated on
    its tag's stream, the others of group `i` on stream `i`."""
    pins = list(pinned) if pinned is not None else [None] * len(prog)
    pin_stream = stream_of_pin or {}
    chained = with_collective_chain(prog)
    deps = [[p for p, _ in d] for d in chained.deps]
    cache = SimCache(hw)
    known: dict[tuple[int, str], int | None] = {}
    # Read the program's own limits once: a judge left to find them reads the module again.
    limit = limits if limits is not None else _written_limits(prog, hw)
    streams_needed = 1 + max(pin_stream.values(), default=0)

    simulated: dict[tuple[tuple[int, ...], ...], int] = {}

    def latency(groups: tuple[tuple[int, ...], ...]) -> int:
        # A part cut in two searches some of its stages again: each is simulated once.
        known_latency = simulated.get(groups)
        if known_latency is None:
            known_latency = simulated[groups] = simulate(groups)
        return known_latency

    def simulate(groups: tuple[tuple[int, ...], ...]) -> int:
        nodes = [n for group in groups for n in group]
        stream_of: list[int] = []
        for g, group in enumerate(groups):
            stream_of += [_stream(pins[n], g, pin_stream) for n in group]
        count = max(streams_needed, max(stream_of) + 1)
        infos = [StreamInfo(f"s{s}", MAIN_TAG if s == 0 else f"g{s}", 0) for s in range(count)]
        stage = _stage_program(chained, nodes)
        judge = Judge(stage, hw, limit or _unlimited, profile, cache, known)
        return judge("ios-stage", Assignment(infos, stream_of)).makespan

    compute = [n for n in range(len(prog)) if prog.kind[n] is NodeKind.COMPUTE]
    stages: list[Stage] = []
    states = cuts = 0
    parts = [compute[start : start + PART_OPS] for start in range(0, len(compute), PART_OPS)]
    parts.reverse()
    while parts:
        nodes = parts.pop()
        part = PartSearch(nodes, deps, max_groups, latency)
        try:
            stages += part.solve()
        except OverBudget:
            # Too wide for an exact search in time: its two halves (written order) one after
            # the other.  A part of one op never goes over.
            half = len(nodes) // 2
            parts += [nodes[half:], nodes[:half]]
            cuts += 1
            continue
        states += len(part.best) - 1
    return IosSchedule(tuple(stages), states, len(simulated), cuts)


def _unlimited(_prog: Program, _node: int, _engine: str) -> int | None:
    return None


def _written_limits(prog: Program, hw: Hardware) -> LimitFn | None:
    """The core limits `prog`'s module writes, as `coreset-lower` resolves them."""
    module = prog.ops[0].get_toplevel_object() if prog.ops else None
    if not isinstance(module, ModuleOp):
        return None
    return limit_fn(CoreLimits(module, hw).run())


def _stream(tag: str | None, group: int, pin_stream: dict[str, int]) -> int:
    """The stream of an op of a stage's group `group` pinned to `tag` (or None): a pinned
    op's tag's stream; else 0, the default stream, for the first group, and the others' come
    after the pinned tags' streams (`pin_stream`, the default tag not in it)."""
    if tag is not None:
        return pin_stream.get(tag, DEFAULT_STREAM)
    return DEFAULT_STREAM if group == 0 else group + len(pin_stream)


def _stage_program(prog: Program, nodes: Sequence[int]) -> Program:
    """The nodes of `prog` (in this order, which is topological) as a program of their own:
    their dependencies on each other kept, those on earlier stages dropped (done)."""
    position = {old: new for new, old in enumerate(nodes)}
    out = Program(prog.func, streams=list(prog.streams))
    for old in nodes:
        out.ops.append(prog.ops[old])
        out.kind.append(prog.kind[old])
        out.stream.append(DEFAULT_STREAM)
        out.deps.append([(position[p], k) for p, k in prog.deps[old] if p in position])
        out.event_of.append(-1)
        out.event_id.append(prog.event_id[old])
        out.pinned.append(None)
    return out


def assign_ios(
    req: Request, hw: Hardware, limits: LimitFn | None = None, profile: Profile | None = None
) -> Assignment:
    """`stream-partition{mode=ios}`: IOS's stages as streams and an issue order."""
    prog = req.prog
    pin_stream: dict[str, int] = {}
    streams = [StreamInfo("s0", MAIN_TAG, req.priorities.get(MAIN_TAG, 0))]
    for tag in req.pinned:
        if tag is not None and tag != MAIN_TAG and tag not in pin_stream:
            pin_stream[tag] = len(streams)
            streams.append(StreamInfo(f"s{len(streams)}", tag, req.priorities.get(tag, 0)))
    pins = dict(pin_stream)
    pin_stream[MAIN_TAG] = DEFAULT_STREAM
    pinned_streams = len(streams) - 1
    if len(streams) > req.max_streams:
        raise ValueError(f"the pinned tags need {len(streams)} streams, over {req.max_streams}")
    groups = max(1, min(STAGE_GROUPS, req.max_streams - pinned_streams))
    found = ios_stages(prog, hw, limits, profile, req.pinned, groups, pins)
    taken = set(pin_stream) | set(req.reserved)
    stream_of = [DEFAULT_STREAM] * len(prog)
    order: list[int] = []
    for stage in found.stages:
        for g, group in enumerate(stage.groups):
            for n in group:
                stream_of[n] = _stream(req.pinned[n], g, pins)
                order.append(n)
    # The groups' streams, numbered after the pinned ones; tags of their own, never a user's.
    used = sorted(set(stream_of) - set(range(len(streams))))
    renumber = {s: s for s in range(len(streams))}
    for s in used:
        tag = fresh_tag(len(streams), taken, "ios")
        taken.add(tag)
        renumber[s] = len(streams)
        streams.append(StreamInfo(f"s{len(streams)}", tag, 0))
    stream_of = [renumber[s] for s in stream_of]
    order += [n for n in range(len(prog)) if prog.kind[n] is not NodeKind.COMPUTE]
    keep = not req.reorderable or order == list(range(len(prog)))
    return Assignment(streams, stream_of, None if keep else order)


__all__ = [
    "ENDING_BUDGET",
    "GROUP_OPS",
    "PART_OPS",
    "STAGE_BUDGET",
    "STAGE_GROUPS",
    "IosSchedule",
    "OverBudget",
    "PartSearch",
    "Stage",
    "assign_ios",
    "ios_stages",
]
