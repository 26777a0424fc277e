"""TorchAir's scopes for torch models, as `npuir.frontends.torch_scope` (kept for old imports).

The implementation is `npuir.torchair.scope` (one set of functions for torch
models and for the builder, one validation) over the `air::` ops of
`npuir.frontends.torchair.air_ops`; this module re-exports them:

```python
from npuir.frontends import torch_scope as scope   # same as: from npuir.torchair import scope
with scope.npu_stream_switch("1"):
    scope.npu_wait_tensor(in4, add_result)
```
"""

from __future__ import annotations

from npuir.frontends.torchair.air_ops import (
    AICORE_NUM,
    ERROR,
    INNER_PARALLEL,
    STREAM_LABEL,
    STREAM_PRIORITY,
    VECTORCORE_NUM,
    register,
)
from npuir.frontends.torchair.scope import (
    get_stream_limit,
    limit_core_num,
    npu_stream_switch,
    npu_wait_tensor,
    reset_stream_limit,
    set_stream_limit,
)

__all__ = [
    "AICORE_NUM",
    "ERROR",
    "INNER_PARALLEL",
    "STREAM_LABEL",
    "STREAM_PRIORITY",
    "VECTORCORE_NUM",
    "get_stream_limit",
    "limit_core_num",
    "npu_stream_switch",
    "npu_wait_tensor",
    "register",
    "reset_stream_limit",
    "set_stream_limit",
]
