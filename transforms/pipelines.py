"""Named pass pipelines, usable wherever a pass name is (`-p npu-default`).

A schedule has two lowering targets, and each is a named pipeline rather than a `target=`
option: a pipeline here is a pass list that the pass manager expands by name, with no
options of its own, and the two targets differ by passes (capture mode adds
`capture-close` and `capture-verify`), not by an option of one pass.  So
`-p npu-capture` is spelled like `-p npu-default`, and a configured pipeline
(`configured_pipeline("npu-capture", {"stream-partition": {...}})`) sets pass options
the same way for both.
"""

from __future__ import annotations

PIPELINES: dict[str, str] = {
    "npu-default": (
        "gear-multiversion,stream-partition,coreset-lower,insert-events,coreset-check,sync-verify,"
        "mem-plan,mem-verify"
    ),
    "npu-capture": (
        "gear-multiversion,stream-partition,coreset-lower,insert-events,capture-close,"
        "coreset-check,sync-verify,capture-verify,mem-plan,mem-verify,core-deadlock-check"
    ),
}
"""The standard pipelines; later passes (gears, core sets) join `npu-default`
in the order each needs the one before (docs/passes.md): gear-multiversion, stream-partition,
coreset-lower, insert-events, coreset-check, sync-verify, then the memory plan and its
check (mem-plan, mem-verify).  `npu-capture` is the capture-mode target (`reduce-overhead`,
npugraph_ex; docs/capture-mode.md): the same, with `capture-close` after the events (fork
and join each side stream, record_stream marks, capture-mode core limits) and
`capture-verify` after the race check, and `core-deadlock-check` last (what npugraph_ex's
`deadlock_check` reports after capture, found before it)."""

PIPELINE_SUMMARIES: dict[str, str] = {
    "npu-default": "The standard lowering: gear versions, streams, core limits, events, checks, memory plan.",
    "npu-capture": "The capture-mode lowering (reduce-overhead / npugraph_ex): npu-default with "
    "every side stream forked from and joined to the capture stream, and checked.",
}
