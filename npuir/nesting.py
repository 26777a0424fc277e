"""Bounding how deeply a data file nests before a recursive parser or `repr` walks it.

Python's JSON parser recurses in C once per level, `tomllib` once per level in Python,
and `repr` of a nested list in C; on npuir's deep-stack thread (`npuir.deep_stack`,
whose recursion limit is raised for deeply nested IR) a 100k-level array in a `--hw`
TOML file or in a `.pt2`'s JSON overflows the C stack -- a segfault, with no report --
long before the recursion limit is reached.  The readers of those formats measure the
nesting first with `bracket_depth` and refuse anything deeper than `MAX_DATA_DEPTH`,
which every real file stays far below (torch's JSON nests about 12 levels, a hardware
file 2) and the C stack is known to hold (thousands of levels on an 8 MiB stack).
"""

from __future__ import annotations

import re

__all__ = ["MAX_DATA_DEPTH", "bracket_depth"]

MAX_DATA_DEPTH = 256
"""The deepest `[`/`{` nesting a JSON or TOML input may have."""

_BRACKETS = re.compile(r"[\[\]{}]")


def bracket_depth(text: str, limit: int | None = None) -> tuple[int, int]:
    """The deepest nesting of `[`/`{` in `text` and the offset where it is first reached;
    with `limit`, the first depth over it and its offset (the scan stops there).

    Brackets inside strings and comments count too, an over-estimate that also bounds
    JSON kept inside strings (torch's tree specs), which is parsed later."""
    depth = deepest = 0
    where = 0
    for match in _BRACKETS.finditer(text):
        if match.group() in "[{":
            depth += 1
            if depth > deepest:
                deepest, where = depth, match.start()
                if limit is not None and depth > limit:
                    break
        else:
            depth = max(0, depth - 1)
    return deepest, where
