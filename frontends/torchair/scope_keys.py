"""The keys of TorchAir's `air::scope_enter` (the `_user_stream_label` TorchAir writes), and
npuir's own for a mistake carried through a trace.  Apart from `air_ops` (which imports
torch) so that a `.pt2` is imported without torch."""

from __future__ import annotations

STREAM_LABEL = "_user_stream_label"
STREAM_PRIORITY = "_user_stream_priority"
INNER_PARALLEL = "_enable_inner_parallel"
AICORE_NUM = "_op_aicore_num"
VECTORCORE_NUM = "_op_vectorcore_num"
ERROR = "_npuir_error"
"""A scope key carrying a mistake found while dynamo or `torch.export` traced the
model: an exception raised inside a trace reaches the user as the tracer's own
error, so the message travels in the graph and the converter raises it, located
at the model's line."""
ERROR_KIND = "_npuir_error_kind"
"""Beside `ERROR`: the diagnostic kind of the carried mistake."""
ERROR_ARG = "_npuir_error_arg:"
"""Beside `ERROR`: the prefix of the keys carrying the mistake's arguments, one key per
argument (`_npuir_error_arg:value`), each value as text; its message is rendered from
them and its kind."""
