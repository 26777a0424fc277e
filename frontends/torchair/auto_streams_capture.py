"""`auto_streams()` in capture mode: npuir's `auto` schedule written with npugraph_ex's ops.

Under `reduce-overhead` (or npugraph_ex's own `"npugraph_ex"` mode) the pass applies the
same schedule as in graph mode (`npuir.frontends.torchair.auto_streams`) and then says it
with the ops npugraph_ex reads, which are the ones its documented custom-pass example
writes (`Ascend/torchair/docs/zh/npugraph_ex/advanced/post_grad_custom_pass.md`):

- `air.scope_enter(keys, values)` / `air.scope_exit()` become
  `npugraph_ex.scope_enter(keys, values)` / `npugraph_ex.scope_exit()`: the keys
  (`_user_stream_label`, `_user_stream_priority`, `_op_aicore_num`, `_op_vectorcore_num`)
  are the ones npugraph_ex's passes read (`apply_event_closure_with_multi_stream`,
  `replace_core_limit_nodes` in `_acl_concrete_graph/graph_pass.py`);
- `air.wait_tensor(self, dependency)` becomes `r = npugraph_ex.record()` right after the
  dependency's node (in its scope, so on its stream) and `npugraph_ex.wait([r])` where the
  wait stood, the ordered node reading `self` itself.

The fork and join events capture needs are npugraph_ex's own to add (its
`apply_event_closure_with_multi_stream`, as npuir's `capture-close` does), so the pass
writes none.  `WRITTEN` lists every op name and key written, each with the Ascend/torchair
file that defines it (read at commit fced8842).
"""

from __future__ import annotations

from typing import Any

import torch

from . import npugraph_ex_ops
from .auto_streams import (
    AICORE_NUM,
    SCOPE_ENTER,
    SCOPE_EXIT,
    STREAM_LABEL,
    STREAM_PRIORITY,
    VECTORCORE_NUM,
    WAIT_TENSOR,
    AutoStreams,
    AutoStreamsReport,
)
from .configs.compiler_config import CAPTURE_MODE, CompilerConfig

CAPTURE_MODES = (CAPTURE_MODE, "npugraph_ex")
"""The modes that capture: TorchAir's `reduce-overhead`, and npugraph_ex's own config's
`"npugraph_ex"` (`Ascend/torchair/python/torchair/configs/compiler_config.py`, `mode`)."""

_SRC = "npugraph_ex/npugraph_ex/"
WRITTEN: dict[str, str] = {
    "npugraph_ex.scope_enter.default": _SRC + "scope/_scope.py (lib.define scope_enter)",
    "npugraph_ex.scope_exit.default": _SRC + "scope/_scope.py (lib.define scope_exit)",
    "npugraph_ex.record.default": _SRC + "ops/_record_wait.py (lib.define record)",
    "npugraph_ex.wait.default": _SRC + "ops/_record_wait.py (lib.define wait)",
    STREAM_LABEL: _SRC
    + "_acl_concrete_graph/graph_pass.py (apply_event_closure_with_multi_stream)",
    STREAM_PRIORITY: _SRC + "_acl_concrete_graph/graph_pass.py (_core_limit_handle_scope_enter)",
    AICORE_NUM: _SRC + "scope/__init__.py (limit_core_num)",
    VECTORCORE_NUM: _SRC + "scope/__init__.py (limit_core_num)",
}
"""Every op name and scope key the capture variant writes, with the file of Ascend/torchair
that defines or reads it."""


def is_capture(config: Any) -> bool:
    """Whether `config` (npuir's `CompilerConfig`, or TorchAir's, whose options are
    `OptionValue`s) asks for capture mode."""
    mode = getattr(config, "mode", None)
    mode = mode if isinstance(config, CompilerConfig) else getattr(mode, "value", mode)
    return mode in CAPTURE_MODES


def rewrite(auto: AutoStreams, gm: torch.fx.GraphModule) -> AutoStreamsReport:
    """`auto`'s schedule applied to `gm` in place with npugraph_ex's ops, or why not."""
    npugraph_ex_ops.register()
    report = auto.rewrite(gm, None)
    if report.changed:
        to_npugraph_ex(gm.graph)
        gm.recompile()
    return report


def to_npugraph_ex(graph: torch.fx.Graph) -> None:
    """Say the `air::` scope and wait ops of `graph` with npugraph_ex's."""
    ops = torch.ops.npugraph_ex
    recorded: dict[torch.fx.Node, torch.fx.Node] = {}
    for node in list(graph.nodes):
        target = str(node.target) if node.op == "call_function" else ""
        if target == SCOPE_ENTER:
            node.target = ops.scope_enter.default
        elif target == SCOPE_EXIT:
            node.target = ops.scope_exit.default
        elif target == WAIT_TENSOR:
            tensor, dependency = node.args[0], node.args[1]
            assert isinstance(tensor, torch.fx.Node) and isinstance(dependency, torch.fx.Node)
            record = recorded.get(dependency)
            if record is None:
                with graph.inserting_after(dependency):
                    record = recorded[dependency] = graph.call_function(ops.record.default, ())
            with graph.inserting_before(node):
                graph.call_function(ops.wait.default, ([record],))
            node.replace_all_uses_with(tensor)
            graph.erase_node(node)


__all__ = ["CAPTURE_MODES", "WRITTEN", "is_capture", "rewrite", "to_npugraph_ex"]
