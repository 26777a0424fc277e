"""`explain` finds the ops that held a waiting op's cores by a sweep (O(n log n)); it
finds exactly the ones a scan of every record finds."""

from __future__ import annotations

import random

from npuir.backends.npu.explain import _holders
from npuir.backends.npu.simulator import OpRecord


def _scan(records: list[OpRecord], i: int) -> list[int]:
    r = records[i]
    return [
        j
        for j, o in enumerate(records)
        if o.pool == r.pool and o.stream != r.stream and o.held_from < r.start <= o.end
    ]


def test_sweep_matches_a_scan_of_every_record() -> None:
    rng = random.Random(3)
    for _ in range(50):
        records: list[OpRecord] = []
        for node in range(rng.randint(1, 60)):
            held_from = rng.randint(0, 100)
            start = held_from + rng.choice((0, 0, rng.randint(0, 20)))
            end = start + rng.randint(0, 30)
            pool = rng.choice(("", "cube", "vector"))
            records.append(
                OpRecord(0, node, rng.randint(0, 3), start, end, 1, pool, pool, held_from)
            )
        waiting = [i for i, r in enumerate(records) if r.pool and rng.random() < 0.6]
        found = _holders(records, waiting)
        assert set(found) == set(waiting)
        for i in waiting:
            assert found[i] == _scan(records, i)
