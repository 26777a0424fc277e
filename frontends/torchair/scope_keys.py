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
STREAM_LIMIT = "_npuir_stream_limit"
"""`set_stream_limit` / `reset_stream_limit` on torch: an `air::scope_enter` (closed at
once) whose value is the stream tag; the ops issued on that stream after it are limited."""
STREAM_LIMIT_CUBE = "_npuir_stream_limit_cube"
"""Beside `STREAM_LIMIT`: the cube count, as text ("-1": no limit)."""
STREAM_LIMIT_VECTOR = "_npuir_stream_limit_vector"
"""Beside `STREAM_LIMIT`: the vector count, as text ("-1": no limit)."""
