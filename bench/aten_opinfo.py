#!/usr/bin/env python3
"""Core ATen numerics against PyTorch, on PyTorch's own OpInfo sample inputs.

    python bench/aten_opinfo.py                    # every covered op, every supported dtype
    python bench/aten_opinfo.py --dtypes float32 --samples 2 --ops cos sort

For each OpInfo of `torch.testing._internal.common_methods_invocations.op_db` whose op is
(or is named after) a Core ATen op npuir covers (`npuir.frontends.aten_core.coverage`),
each sample input in each dtype npuir has an element type for is traced to ATen with
`make_fx`, imported with the torch importer (strict: an op it cannot lower is a failure,
not an `npu.opaque`), run through the numpy kernels, and compared with eager PyTorch by
`torch.testing.assert_close` at the dtype's default tolerance.  A sample whose inputs npuir
cannot take (a complex tensor, an int16 index, a dynamic-size result) is refused by the
importer and counted as a failure of the op it reached, with the importer's reason.

The table has one row per covered Core ATen overload: the samples that reached it (their
traced graph calls it), how many passed, and the first failure's reason; an overload no
OpInfo sample reaches is listed as `no OpInfo`.  Exit 1 if any row fails.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

DTYPES = ("float32", "float16", "bfloat16", "int64", "int32", "bool")
"""The dtypes compared: npuir's floats and the integer and bool types OpInfos sample most."""


@dataclass
class Row:
    """One covered overload's outcome."""

    op: str
    samples: int = 0
    passed: int = 0
    failures: list[str] = field(default_factory=list)
    borrowed: bool = False
    """Whether the samples are other ops' OpInfos' (the op has none of its own)."""

    def add(self, who: str, failure: str | None) -> None:
        self.samples += 1
        if failure is None:
            self.passed += 1
        elif len(self.failures) < 3:
            self.failures.append(f"{who}: {failure}")

    @property
    def status(self) -> str:
        if not self.samples:
            return "no OpInfo"
        return "pass" if self.passed == self.samples else "FAIL"


def covered_ops() -> list[str]:
    """The Core ATen overloads npuir lowers (`aten.cos.default`, ...)."""
    from npuir.frontends.aten_core import coverage

    return [op for op, lowering, _, _ in coverage() if not lowering.startswith("not covered")]


def opinfos_for(packets: set[str]) -> list[Any]:
    """The OpInfos whose op is one of the ATen `packets` (by `aten_name` or name)."""
    from torch.testing._internal.common_methods_invocations import op_db

    found = []
    for info in op_db:
        names = {info.name, info.name.split(".")[-1], getattr(info, "aten_name", None)}
        names |= {info.name.removeprefix("nn.functional.")}
        if names & packets:
            found.append(info)
    return found


def _to_numpy(t: Any) -> Any:
    from npuir.frontends.torch import _numpy

    return _numpy(t)


def run_sample(info: Any, sample: Any) -> tuple[set[str], str | None]:
    """The ATen overloads the sample's trace calls, and None if npuir matches eager, else
    why not."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx
    from xdsl.dialects.func import FuncOp

    from npuir.backends.npu.numerics import run_ranks
    from npuir.diagnostics import DiagnosticError
    from npuir.frontends.torch import import_fx_graph
    from npuir.frontends.torchair import TorchairError

    structure = (sample.input, sample.args, sample.kwargs)
    leaves, spec = torch.utils._pytree.tree_flatten(structure)
    tensors = [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]

    def call(*ts: torch.Tensor) -> Any:
        it = iter(ts)
        filled = [next(it) if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]
        x, args, kwargs = torch.utils._pytree.tree_unflatten(filled, spec)
        return info.op(x, *args, **kwargs)

    try:
        expected = call(*tensors)
        graph = make_fx(call)(*tensors).graph
    except Exception as exc:  # the sample does not trace (an error input, a data-dependent op)
        return set(), f"untraceable: {type(exc).__name__}"
    called = {
        str(node.target)
        for node in graph.nodes
        if node.op == "call_function" and str(node.target).startswith("aten.")
    }
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = import_fx_graph(graph, strict=True)
        func = next(op for op in module.walk() if isinstance(op, FuncOp))
        inputs = [_to_numpy(t) for t in tensors]
        (outputs,) = run_ranks(module, [func], [inputs])
    except (TorchairError, DiagnosticError) as exc:
        return called, f"import: {_short(str(exc))}"
    except Exception as exc:
        return called, f"run: {type(exc).__name__}: {_short(str(exc))}"
    wanted = [t for t in torch.utils._pytree.tree_leaves(expected) if isinstance(t, torch.Tensor)]
    if len(wanted) != len(outputs):
        return called, f"{len(outputs)} results for eager's {len(wanted)}"
    for got, want in zip(outputs, wanted, strict=True):
        try:
            actual = torch.from_numpy(
                got.astype("float32") if got.dtype.name == "bfloat16" else got
            )
            if want.dtype == torch.bfloat16:
                actual = actual.to(torch.bfloat16)
            torch.testing.assert_close(actual, want.detach(), equal_nan=True)
        except Exception as exc:
            return called, f"mismatch: {_short(str(exc))}"
    return called, None


def _short(text: str) -> str:
    return " ".join(text.split())[:160]


def sweep(ops: Sequence[str], dtypes: Iterable[str], samples: int | None) -> dict[str, Row]:
    """Each covered overload's row, from the OpInfos of `ops` (all covered ones if empty)."""
    import torch

    covered = covered_ops()
    chosen = [op for op in covered if not ops or op.split(".")[1] in ops]
    rows = {op: Row(op) for op in chosen}
    others = {op: Row(op, borrowed=True) for op in chosen}
    packets = {op.split(".")[1] for op in chosen}
    for info in opinfos_for(packets):
        own = {info.name, getattr(info, "aten_name", None)}
        for name in dtypes:
            dtype = getattr(torch, name)
            if dtype not in info.supported_dtypes("cpu"):
                continue
            try:
                found = list(info.sample_inputs("cpu", dtype, requires_grad=False))
            except Exception:  # an OpInfo whose sample generator needs what is not here
                continue
            for sample in found[:samples]:
                called, failure = run_sample(info, sample)
                for op in called & rows.keys():
                    # A sample counts for the op its OpInfo is named after; other ops it
                    # reaches borrow it only if they have no OpInfo of their own.
                    mine = op.split(".")[1] in own
                    (rows if mine else others)[op].add(f"{info.name} {name}", failure)
    return {op: rows[op] if rows[op].samples else others[op] for op in chosen}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--ops", nargs="*", default=[], help="ATen op names (default: all)")
    parser.add_argument("--dtypes", nargs="*", default=list(DTYPES), choices=DTYPES)
    parser.add_argument("--samples", type=int, default=None, help="samples per OpInfo and dtype")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = sweep(args.ops, args.dtypes, args.samples)
    print("| op | samples | passed | status | first failure |")
    print("|---|---|---|---|---|")
    for row in rows.values():
        why = row.failures[0] if row.failures else ""
        lent = " (other ops' OpInfos)" if row.borrowed and row.samples else ""
        print(f"| `{row.op}` | {row.samples}{lent} | {row.passed} | {row.status} | {why} |")
    counts = {s: sum(1 for r in rows.values() if r.status == s) for s in ("pass", "FAIL")}
    none = sum(1 for r in rows.values() if r.status == "no OpInfo")
    print(
        f"\n{counts['pass']} pass, {counts['FAIL']} fail, {none} without an OpInfo sample, "
        f"of {len(rows)} covered overloads ({time.perf_counter() - start:.0f} s)"
    )
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
