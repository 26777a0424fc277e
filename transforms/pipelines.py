"""Named pass pipelines, usable wherever a pass name is (`-p npu-default`)."""

from __future__ import annotations

PIPELINES: dict[str, str] = {
    "npu-default": (
        "gear-multiversion,stream-partition,coreset-lower,insert-events,coreset-check,sync-verify,"
        "mem-plan,mem-verify"
    ),
}
"""The standard pipelines; later passes (gears, core sets) join `npu-default`
in the order each needs the one before (docs/passes.md): gear-multiversion, stream-partition,
coreset-lower, insert-events, coreset-check, sync-verify, then the memory plan and its
check (mem-plan, mem-verify)."""

PIPELINE_SUMMARIES: dict[str, str] = {
    "npu-default": "The standard lowering: gear versions, streams, core limits, events, checks, memory plan.",
}
