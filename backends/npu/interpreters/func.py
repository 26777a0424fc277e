"""Interpreter functions for the `func` dialect: calls, returns and function bodies.

The same three implementations as xDSL's `xdsl.interpreters.func`, kept here
because importing that module imports the whole `xdsl.interpreters` package
(every dialect's interpreter, RISC-V included), which costs about 0.3 s on
every `npuir-run`.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects import func
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    TerminatorValue,
    impl,
    impl_callable,
    impl_terminator,
    register_impls,
)


@register_impls
class FuncFunctions(InterpreterFunctions):
    """`func.return`, `func.call`, and calling a `func.func`."""

    @impl_terminator(func.ReturnOp)
    def run_return(
        self, interpreter: Interpreter, op: func.ReturnOp, args: tuple[Any, ...]
    ) -> tuple[TerminatorValue, PythonValues]:
        return ReturnedValues(args), ()

    @impl(func.CallOp)
    def run_call(
        self, interpreter: Interpreter, op: func.CallOp, args: tuple[Any, ...]
    ) -> PythonValues:
        return interpreter.call_op(op.callee, args)

    @impl_callable(func.FuncOp)
    def call_func(
        self, interpreter: Interpreter, op: func.FuncOp, args: tuple[Any, ...]
    ) -> PythonValues:
        first_block = op.body.blocks.first
        if first_block is None or not first_block.ops:
            return interpreter.call_external(op.sym_name.data, op, args)
        return interpreter.run_ssacfg_region(op.body, args, op.sym_name.data)
