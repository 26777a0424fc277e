"""`torchair.scope`: `npu_stream_switch`, `npu_wait_tensor`, `limit_core_num`,
`set_stream_limit`, `get_stream_limit`, `reset_stream_limit`, at TorchAir's import path (`npuir.frontends.torchair.scope`)."""

from __future__ import annotations

from npuir.frontends.torchair.scope import (
    get_stream_limit,
    limit_core_num,
    npu_stream_switch,
    npu_wait_tensor,
    reset_stream_limit,
    set_stream_limit,
)

__all__ = [
    "get_stream_limit",
    "limit_core_num",
    "npu_stream_switch",
    "npu_wait_tensor",
    "reset_stream_limit",
    "set_stream_limit",
]
