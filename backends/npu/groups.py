"""Collective groups across ranks: which ranks form a collective's group, and which are missing.

A collective of `group_size` G is formed by consecutive ranks: 0..G-1, G..2G-1, and so on.
The simulator and the numeric executor both run groups this way.  A run of N ranks leaves a
group *partial* when it reaches past rank N-1 (one rank of a `group_size = 8` program, or a
third rank of a `group_size = 2` one): its missing members are not simulated.  Such a run is
refused unless the user asks for the missing peers to be mirrored -- taken to be copies of
the ranks present, cyclically, arriving at the same moment with the same inputs -- and then
`partial_groups` says exactly which peers were mirrored, for the report.

    partial_groups([collectives(f) for f in funcs], ranks)   # [] when every group is whole

Collectives pair up by issue order: the k-th collective of `group` on each rank of a
group is one collective.  The members must agree on what it is -- the same op, the same
`group_size` and `mode`, inputs of the same shape and element type -- or HCCL would mix
an `all_reduce` on one card with an `all_to_all` on the other.  `mismatched_pairs` finds
every member that disagrees with its group's first rank, for the simulator, the numeric
executor and `npuir-run` to refuse, located at both ops.

    mismatched_pairs([collectives(f) for f in funcs], ranks)  # [] when every pair agrees
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from xdsl.ir import Operation

from npuir.diagnostics import op_location
from npuir.dialects.npu import CollectiveOp

__all__ = [
    "MAX_MIRRORED",
    "Mismatch",
    "PartialGroup",
    "collectives",
    "group_range",
    "mismatched_pairs",
    "partial_groups",
    "ranks_text",
]


MAX_MIRRORED = 4096
"""The most missing ranks a mirrored run takes as copies of one group's present ones.
Each copy is a real input to the numeric collective (`numerics` stacks them), so the
bound keeps a huge `group_size` from turning into that many tensors; it is npuir's
limit, not the hardware's."""


def group_range(rank: int, group_size: int) -> range:
    """Every rank of `rank`'s group for a collective of `group_size`."""
    first = (rank // group_size) * group_size
    return range(first, first + group_size)


def collectives(root: Operation) -> list[CollectiveOp]:
    """The collectives under `root` (a function), in program order."""
    return [op for op in root.walk() if isinstance(op, CollectiveOp)]


def _describe(op: Operation) -> str:
    if op.results and op.results[0].name_hint:
        return f"'{op.name}' (%{op.results[0].name_hint})"
    return f"'{op.name}'"


def ranks_text(ranks: Sequence[int]) -> str:
    """`0-7` for a run of three or more consecutive ranks, else `0, 2`."""
    if len(ranks) > 2 and list(ranks) == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}-{ranks[-1]}"
    return ", ".join(map(str, ranks))


@dataclass(frozen=True)
class PartialGroup:
    """A collective whose group reaches past the ranks that run."""

    op: CollectiveOp
    group_size: int
    present: tuple[int, ...]
    """Ranks of the group that run."""
    missing: range
    """Ranks of the group that do not: the peers a mirrored run takes as copies (a range,
    never a list: `group_size = 1000000000` must not become a billion integers)."""

    @property
    def op_text(self) -> str:
        return _describe(self.op)

    def describe(self) -> str:
        """What is missing, in the words of the error and the report."""
        first, last = self.present[0], self.present[0] + self.group_size - 1
        return (
            f"{self.op_text} has group_size = {self.group_size} (ranks {first}-{last}), but only "
            f"rank(s) {ranks_text(self.present)} of its group run"
        )

    def to_json(self) -> dict[str, object]:
        return {
            "op": self.op_text,
            "group": self.op.group,
            "group_size": self.group_size,
            "ranks_present": list(self.present),
            "mirrored_ranks": list(self.missing[:MAX_MIRRORED]),
        }


def partial_groups(per_rank: Sequence[Iterable[CollectiveOp]], ranks: int) -> list[PartialGroup]:
    """Every collective of `per_rank[r]` (rank r's collectives) whose group is not whole in a
    run of `ranks` ranks, once per op and group, in rank then program order."""
    seen: set[tuple[int, int]] = set()
    out: list[PartialGroup] = []
    for rank, ops in enumerate(per_rank):
        for op in ops:
            members = group_range(rank, op.group_size)
            key = (id(op), members.start)
            if members.stop <= ranks or key in seen:
                continue
            seen.add(key)
            present = tuple(range(members.start, min(members.stop, ranks)))
            missing = range(max(members.start, ranks), members.stop)
            out.append(PartialGroup(op, op.group_size, present, missing))
    return out


@dataclass(frozen=True)
class Mismatch:
    """A collective whose peer on its group's first rank is a different collective."""

    op: CollectiveOp
    rank: int
    peer: CollectiveOp
    peer_rank: int
    index: int
    """Its position among its group's collectives (`#k`), on both ranks."""
    why: str

    def describe(self) -> str:
        """The error's words: what pairs with what, where the peer is, and how they differ."""
        where = op_location(self.peer)
        at = f" at {where}" if where is not None else ""
        return (
            f"{_describe(self.op)} on rank {self.rank} is collective #{self.index} of group "
            f'"{self.op.group}", so it pairs with {_describe(self.peer)} on rank '
            f"{self.peer_rank}{at}, but {self.why}; every rank must issue the same "
            "collectives in the same order"
        )


def _difference(op: CollectiveOp, peer: CollectiveOp) -> str | None:
    if op.name != peer.name:
        return f"one is '{op.name}' and the other '{peer.name}'"
    if op.group_size != peer.group_size:
        return f"their group sizes differ ({op.group_size} and {peer.group_size})"
    if op.mode != peer.mode:
        return f'their modes differ ("{op.mode}" and "{peer.mode}")'
    mine = [v.type for v in op.operands]
    theirs = [v.type for v in peer.operands]
    if mine != theirs:
        a = ", ".join(str(t) for t in mine)
        b = ", ".join(str(t) for t in theirs)
        return f"their inputs differ in shape or element type ({a} and {b})"
    return None


def mismatched_pairs(per_rank: Sequence[Sequence[CollectiveOp]], ranks: int) -> list[Mismatch]:
    """Every collective of `per_rank[r]` (rank r's collectives, in issue order) that differs
    from its counterpart on its group's first rank, in rank then issue order.  A member
    without a counterpart (a group left partial, or fewer collectives there) is not a
    mismatch: the run deadlocks or is partial, and says so itself."""
    keyed: list[dict[tuple[str, int], CollectiveOp]] = []
    # SPMD ranks pass one list many times: key it once.
    by_list: dict[int, dict[tuple[str, int], CollectiveOp]] = {}
    for ops in per_rank:
        mine = by_list.get(id(ops))
        if mine is None:
            seen: dict[str, int] = {}
            mine = by_list[id(ops)] = {}
            for op in ops:
                k = seen.get(op.group, 0)
                seen[op.group] = k + 1
                mine[(op.group, k)] = op
        keyed.append(mine)
    out: list[Mismatch] = []
    for rank, mine in enumerate(keyed):
        for (group, k), op in mine.items():
            first = group_range(rank, op.group_size).start
            if first == rank or first >= min(ranks, len(keyed)):
                continue
            peer = keyed[first].get((group, k))
            if peer is None or peer is op:
                continue
            why = _difference(op, peer)
            if why is not None:
                out.append(Mismatch(op, rank, peer, first, k, why))
    return out
