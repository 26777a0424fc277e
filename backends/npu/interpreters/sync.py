"""Interpreter functions for the `sync` dialect.

Events order work in time, which the simulator models; numerically a record
yields a token and a wait does nothing.
"""

from __future__ import annotations

from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from npuir.dialects import sync


@register_impls
class SyncFunctions(InterpreterFunctions):
    """`sync.record` and `sync.wait` as numeric no-ops."""

    @impl(sync.RecordOp)
    def run_record(
        self, interpreter: Interpreter, op: sync.RecordOp, args: PythonValues
    ) -> PythonValues:
        return (None,)

    @impl(sync.WaitOp)
    def run_wait(
        self, interpreter: Interpreter, op: sync.WaitOp, args: PythonValues
    ) -> PythonValues:
        return ()
