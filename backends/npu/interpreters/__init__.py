"""xDSL interpreter functions for npuir's dialects, one file per dialect.

`npu_functions()` returns every implementation an `Interpreter` needs to run
a lowered npuir function numerically with numpy.
"""

from __future__ import annotations

from xdsl.interpreter import InterpreterFunctions


def npu_functions() -> list[InterpreterFunctions]:
    from npuir.backends.npu.interpreters.func import FuncFunctions
    from npuir.backends.npu.interpreters.gear import GearFunctions
    from npuir.backends.npu.interpreters.npu import NpuFunctions
    from npuir.backends.npu.interpreters.stream import StreamFunctions
    from npuir.backends.npu.interpreters.sync import SyncFunctions

    return [NpuFunctions(), StreamFunctions(), SyncFunctions(), GearFunctions(), FuncFunctions()]
