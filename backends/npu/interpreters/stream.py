"""Interpreter functions for the `stream` dialect.

Where work runs does not change what it computes: `stream.wait_tensor`
returns its tensor.  Scopes are flattened by the rank executor.
"""

from __future__ import annotations

from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from npuir.dialects import stream


@register_impls
class StreamFunctions(InterpreterFunctions):
    """`stream.wait_tensor` as the identity on its tensor."""

    @impl(stream.WaitTensorOp)
    def run_wait_tensor(
        self, interpreter: Interpreter, op: stream.WaitTensorOp, args: PythonValues
    ) -> PythonValues:
        return (args[0],)
