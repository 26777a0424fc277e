"""Pure IR analyses that passes share: construct on IR, `run()`, then query.

What a pass author imports (`from npuir.analysis import build_program, ...`):

- `build_program(func, streams)`: the compact program graph (`Program`) of one
  function, which every analysis, the simulator and the auto search read;
  `module_streams(module)` gives the streams it indexes, `scheduled_functions(module)`
  the functions a pass should visit; `NodeKind` and `DepKind` classify its nodes
  and edges;
- `DependenceGraph(func).run()`: data and control predecessors, reachability;
- `HappensBefore(program).run()`: vector clocks over a lowered program, which
  orders which (`ordered(a, b)`, `missing(n)`, `unjoined()`);
- `StreamWindows(happens_before, nodes)`: which of some chosen nodes of each stream may run
  at the same time as a node, in O(log n) a query (`window(n, stream)`);
- `CoreLimits(module, device).run()`: each op's effective cube/vector core limit
  (`of(op)`), from `coreset.limit` scopes and stream limits;
- `partition`: the baseline stream assignments (`assign`);
- `manager`: the analysis cache passes share through the context
  (`analyses(ctx).get(LoweredFunction, func, tuple(streams))`); a pass that
  changes no IR declares `PRESERVES = ALL` so the cache survives it.

Each name is imported on first use, so importing one analysis module does not
load the others.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "Program": "npuir.analysis.program",
    "NodeKind": "npuir.analysis.program",
    "DepKind": "npuir.analysis.program",
    "StreamInfo": "npuir.analysis.program",
    "build_program": "npuir.analysis.program",
    "module_streams": "npuir.analysis.program",
    "scheduled_functions": "npuir.analysis.program",
    "is_lowered": "npuir.analysis.program",
    "DependenceGraph": "npuir.analysis.dependence",
    "HappensBefore": "npuir.analysis.happens_before",
    "StreamWindows": "npuir.analysis.overlap",
    "CoreLimits": "npuir.analysis.core_limits",
    "limit_fn": "npuir.analysis.core_limits",
    "LoweredFunction": "npuir.analysis.manager",
    "analyses": "npuir.analysis.manager",
}

__all__ = [
    "CoreLimits",
    "DepKind",
    "DependenceGraph",
    "HappensBefore",
    "LoweredFunction",
    "NodeKind",
    "Program",
    "StreamInfo",
    "StreamWindows",
    "analyses",
    "build_program",
    "is_lowered",
    "limit_fn",
    "module_streams",
    "scheduled_functions",
]

if TYPE_CHECKING:
    from npuir.analysis.core_limits import CoreLimits, limit_fn
    from npuir.analysis.dependence import DependenceGraph
    from npuir.analysis.happens_before import HappensBefore
    from npuir.analysis.manager import LoweredFunction, analyses
    from npuir.analysis.overlap import StreamWindows
    from npuir.analysis.program import (
        DepKind,
        NodeKind,
        Program,
        StreamInfo,
        build_program,
        is_lowered,
        module_streams,
        scheduled_functions,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'npuir.analysis' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
