#!/usr/bin/env python3
"""Core ATen numerics against PyTorch, on PyTorch's own OpInfo sample inputs.

    python bench/aten_opinfo.py                    # every covered op, every supported dtype
    python bench/aten_opinfo.py --dtypes float32 --samples 2 --ops cos sort
    python bench/aten_opinfo.py --shard 3/8 --json /tmp/s3.json   # one eighth of the OpInfos
    python bench/aten_opinfo.py --merge /tmp/s*.json --json docs/aten-opinfo.json
    python bench/aten_opinfo.py --shard 1/9 --opinfos pow erf --json /tmp/s1b.json  # a part

The whole sweep takes long (every sample of every OpInfo in every dtype), so `--shard i/n`
runs the i-th of n slices of the OpInfos (by a hash of their names) and `--json` writes its counts;
`--merge` adds shards' counts up (and `--json` writes the sum: docs/aten-opinfo.json is
what `dev/gen_docs.py` turns into the per-op, per-dtype table of docs/aten-opinfo.md).

For each OpInfo of `torch.testing._internal.common_methods_invocations.op_db` whose op is
(or is named after) a Core ATen op npuir covers (`npuir.frontends.aten_core.coverage`),
each sample input in each dtype npuir has an element type for is traced to ATen with
`make_fx`, imported with the torch importer (strict: an op it cannot lower is a failure,
not an `npu.opaque`), run through the numpy kernels, and compared with eager PyTorch by
`torch.testing.assert_close` at the dtype's default tolerance.  A sample whose inputs npuir
cannot take (a complex tensor, an int16 index, a dynamic-size result) is refused by the
importer and counted as a failure of the op it reached, with the importer's reason.

The result has one row per covered Core ATen overload and dtype: the samples that reached
it (their traced graph calls it), how many passed, how many the importer refused (with the
diagnostic's kind), and the failures with their largest error; an overload no OpInfo
sample reaches in a dtype says so.  Exit 1 if any row fails.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

PASS, REFUSED, FAILED = "pass", "refused", "fail"
"""A sample's outcomes: npuir matches eager; the importer refused a form of an op with a
located diagnostic (a form npuir does not take: a dynamic size, a boolean mask, a strided
view); anything else (a mismatch, a crash, an ill-typed op) fails."""

_REFUSALS = frozenset({"torch.unsupported-node", "torch.unmapped-form"})
"""The diagnostic kinds of an import that refuses a form of an op."""

UNSPECIFIED = frozenset({"empty", "empty_like", "empty_strided", "new_empty"})
"""OpInfos whose values are unspecified (uninitialised memory): only their shapes and dtypes
are compared."""

UNORDERED_TIES = frozenset({"sort", "topk", "argsort", "msort"})
"""OpInfos whose index results may order equal values either way (an unstable sort):
their values are compared, their indices checked to pick those values."""

ALIASES: dict[str, tuple[str, ...]] = {
    "convolution": ("nn.functional.conv1d", "nn.functional.conv2d"),
    "max_pool2d_with_indices": ("nn.functional.max_pool2d",),
    "max_pool3d_with_indices": ("nn.functional.max_pool3d",),
    "avg_pool2d": ("nn.functional.avg_pool2d",),
    "avg_pool1d": ("nn.functional.avg_pool1d",),
    "adaptive_avg_pool1d": ("nn.functional.adaptive_avg_pool1d",),
    "upsample_bilinear2d": ("nn.functional.upsample_bilinear", "nn.functional.interpolate"),
    "upsample_nearest2d": ("nn.functional.upsample_nearest", "nn.functional.interpolate"),
    "constant_pad_nd": ("nn.functional.pad",),
    "reflection_pad1d": ("nn.functional.pad",),
    "reflection_pad2d": ("nn.functional.pad",),
    "reflection_pad3d": ("nn.functional.pad",),
    "replication_pad2d": ("nn.functional.pad",),
    "replication_pad3d": ("nn.functional.pad",),
    "_softmax": ("softmax",),
    "_log_softmax": ("log_softmax",),
    "index": ("__getitem__",),
    "native_layer_norm": ("nn.functional.layer_norm",),
    "native_group_norm": ("nn.functional.group_norm",),
    "_native_batch_norm_legit": ("nn.functional.batch_norm",),
    "_native_batch_norm_legit_no_training": ("nn.functional.batch_norm",),
    "_adaptive_avg_pool2d": ("nn.functional.adaptive_avg_pool2d",),
    "col2im": ("nn.functional.fold",),
    "grid_sampler_2d": ("nn.functional.grid_sample",),
    "elu": ("nn.functional.elu",),
    "hardtanh": ("nn.functional.hardtanh",),
    "leaky_relu": ("nn.functional.leaky_relu",),
    "gelu": ("nn.functional.gelu",),
    "relu": ("nn.functional.relu",),
    "embedding": ("nn.functional.embedding",),
    "bitwise_and": ("__rand__",),
    "bitwise_or": ("__ror__",),
    "bitwise_xor": ("__rxor__",),
    "pow": ("__rpow__",),
    "remainder": ("__rmod__",),
    "sub": ("__rsub__",),
    "div": ("__rdiv__",),
    "mul": ("__rmul__",),
    "add": ("__radd__",),
    "_adaptive_avg_pool3d": ("nn.functional.adaptive_avg_pool3d",),
    "avg_pool3d": ("nn.functional.avg_pool3d",),
    "_cdist_forward": ("cdist",),
    "_pdist_forward": ("nn.functional.pdist",),
    "_embedding_bag": ("nn.functional.embedding_bag",),
    "_local_scalar_dense": ("item",),
    "_fft_r2c": tuple(
        f"fft.{n}" for n in "fft fft2 fftn rfft rfft2 rfftn ihfft ihfft2 ihfftn".split()
    ),
    "_fft_c2r": tuple(f"fft.{n}" for n in "irfft irfft2 irfftn hfft hfft2 hfftn".split()),
}
"""The OpInfos (beyond those named after the op) whose samples reach a Core ATen op."""

SAME_OP = {"aten._embedding_bag_forward_only.default": "aten._embedding_bag.default"}
"""Overloads a trace records in place of a core one, with its schema and its handler
(`F.embedding_bag` without gradients calls the forward-only one)."""

DTYPES = (
    "float32",
    "float16",
    "bfloat16",
    "float64",
    "int64",
    "int32",
    "int8",
    "uint8",
    "bool",
    "complex64",
)
"""The dtypes compared: every torch dtype npuir has an element type for."""


@dataclass
class Row:
    """One covered overload's outcome."""

    op: str
    samples: int = 0
    passed: int = 0
    refused: int = 0
    failures: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    borrowed: bool = False
    """Whether the samples are other ops' OpInfos' (the op has none of its own)."""
    kinds: list[str] = field(default_factory=list)
    """The diagnostic kinds of the refusals, each once."""
    max_error: float = 0.0
    """The largest absolute error of a failed comparison (inf: a crash or a wrong shape)."""

    def add(self, who: str, outcome: str, reason: str, error: float = math.inf) -> None:
        self.samples += 1
        if outcome == PASS:
            self.passed += 1
        elif outcome == REFUSED:
            self.refused += 1
            kind = reason.partition("(")[2].partition(")")[0]
            if kind and kind not in self.kinds:
                self.kinds.append(kind)
            if len(self.refusals) < 3:
                self.refusals.append(f"{who}: {reason}")
        else:
            self.max_error = max(self.max_error, error)
            if len(self.failures) < 3:
                self.failures.append(f"{who}: {reason}")

    def merge(self, other: Row) -> None:
        """`other`'s counts (another shard's, of the same op and dtype) added to these."""
        self.samples += other.samples
        self.passed += other.passed
        self.refused += other.refused
        self.failures = (self.failures + other.failures)[:3]
        self.refusals = (self.refusals + other.refusals)[:3]
        self.kinds += [k for k in other.kinds if k not in self.kinds]
        self.max_error = max(self.max_error, other.max_error)


def covered_ops() -> list[str]:
    """The Core ATen overloads npuir lowers (`aten.cos.default`, ...)."""
    from npuir.frontends.aten_core import coverage

    return [op for op, lowering, _, _ in coverage() if not lowering.startswith("not covered")]


def own_packets(info: Any) -> set[str]:
    """The ATen ops an OpInfo is named after (or is an alias of)."""
    names = {info.name, getattr(info, "aten_name", None)}
    names |= {packet for packet, infos in ALIASES.items() if info.name in infos}
    return {n for n in names if n}


def opinfos_for(packets: set[str]) -> list[Any]:
    """The OpInfos whose op is one of the ATen `packets` (by name, `aten_name` or
    `ALIASES`), or whose name ends in one (`masked.sum`, `special.erf`)."""
    from torch.testing._internal.common_methods_invocations import op_db

    return [
        info for info in op_db if own_packets(info) & packets or info.name.split(".")[-1] in packets
    ]


def _to_numpy(t: Any) -> Any:
    from npuir.frontends.torch import _numpy

    return _numpy(t)


def run_sample(info: Any, sample: Any) -> tuple[set[str], str, str, float]:
    """The ATen overloads the sample's trace calls, the outcome (`PASS`, `REFUSED`,
    `FAILED`, or "" for a sample eager PyTorch or its trace refuses), why, and a failed
    comparison's largest absolute error (inf for a failure that is not a comparison)."""
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

    if any(_partial_view(t) for t in tensors):
        return set(), "", "an input is a view into a larger storage", 0.0

    def call(*ts: torch.Tensor) -> Any:
        it = iter(ts)
        filled = [next(it) if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]
        x, args, kwargs = torch.utils._pytree.tree_unflatten(filled, spec)
        return info.op(x, *args, **kwargs)

    try:
        expected = call(*tensors)
        # `.item()` is a value make_fx cannot hold on real tensors; symbolically it is a
        # node (the other OpInfos trace as they run, with static shapes).
        mode: Literal["real", "symbolic"] = "symbolic" if info.name == "item" else "real"
        traced = make_fx(call, tracing_mode=mode)(*tensors)
    except Exception as exc:  # the sample does not trace (an error input, a data-dependent op)
        return set(), "", f"untraceable: {type(exc).__name__}", 0.0
    graph = traced.graph
    tensors = tensors + _lift_constants(traced)
    called = {
        SAME_OP.get(str(node.target), str(node.target))
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
        kind = exc.diagnostic.kind
        outcome = REFUSED if kind in _REFUSALS else FAILED
        return called, outcome, f"import ({kind}): {_short(exc.diagnostic.message)}", math.inf
    except Exception as exc:
        return called, FAILED, f"run: {type(exc).__name__}: {_short(str(exc))}", math.inf
    results = torch.utils._pytree.tree_leaves(expected)
    if info.name == "item":  # a Python number, as a 0-d tensor of the input's dtype
        results = [torch.tensor(v, dtype=tensors[0].dtype) for v in results]
    wanted = [t for t in results if isinstance(t, torch.Tensor)]
    if len(wanted) != len(outputs):
        return called, FAILED, f"{len(outputs)} results for eager's {len(wanted)}", math.inf
    if info.name in UNORDERED_TIES and len(wanted) == 2:
        outcome, reason = _check_ties(tensors[0], outputs, wanted)
        return called, outcome, reason, 0.0 if outcome == PASS else math.inf
    for got, want in zip(outputs, wanted, strict=True):
        if got.dtype.name == "bfloat16":
            actual = torch.from_numpy(got.astype("float32")).to(torch.bfloat16)
        else:
            actual = torch.from_numpy(got)
        if info.name in UNSPECIFIED:
            if actual.shape != want.shape or actual.dtype != want.dtype:
                shapes = f"{tuple(actual.shape)} {actual.dtype} for {tuple(want.shape)}"
                return called, FAILED, f"{shapes} {want.dtype}", math.inf
            continue
        try:
            torch.testing.assert_close(actual, want.detach(), equal_nan=True)
        except Exception as exc:
            if not _no_worse_than_eager(call, tensors, wanted.index(want), actual, want):
                error = _max_error(actual, want.detach())
                return called, FAILED, f"mismatch: {_short(str(exc))}", error
    return called, PASS, "", 0.0


def _lift_constants(traced: Any) -> list[Any]:
    """The tensors a trace holds as module attributes (`get_attr` nodes: a constant the op
    builds, such as a masked op's fill value), each made a placeholder after the inputs; the
    values to pass for them.  torch.export and AOT autograd lift such constants to inputs
    the same way, and the importer takes only placeholders."""
    graph = traced.graph
    constants = [node for node in graph.nodes if node.op == "get_attr"]
    if not constants:
        return []
    last = [node for node in graph.nodes if node.op == "placeholder"][-1:]
    values = []
    for node in constants:
        value = getattr(traced, node.target)
        anchor = graph.inserting_after(last[0]) if last else graph.inserting_before()
        with anchor:
            placeholder = graph.placeholder(f"const_{len(values)}")
        placeholder.meta = dict(node.meta)
        node.replace_all_uses_with(placeholder)
        graph.erase_node(node)
        last = [placeholder]
        values.append(value)
    return values


def _max_error(got: Any, want: Any) -> float:
    """The largest absolute difference of two tensors (NaN in both places agrees; inf for
    tensors of different shapes, a NaN in one only, or an infinity against a number)."""
    import torch

    if got.shape != want.shape:
        return math.inf
    a, b = (
        got.to(torch.complex128 if got.is_complex() else torch.float64),
        want.to(torch.complex128 if want.is_complex() else torch.float64),
    )
    both_nan = torch.isnan(a) & torch.isnan(b)
    diff = (a - b).abs()
    diff = torch.where(both_nan | (a == b), torch.zeros_like(diff), diff)
    return float(diff.max()) if diff.numel() else 0.0


def torch_strided() -> Any:
    import torch

    return torch.strided


def _partial_view(t: Any) -> bool:
    """Whether `t` is a view into more memory than its own elements (`as_strided` of it
    reads that memory; npuir's function arguments are values, which share none).  A
    sparse tensor counts as one: npuir has no sparse layout."""
    if t.layout != torch_strided():
        return True
    whole = t.untyped_storage().nbytes() == t.numel() * t.element_size()
    return bool(t.storage_offset() != 0 or not whole)


def _no_worse_than_eager(
    call: Any, tensors: Sequence[Any], index: int, got: Any, want: Any
) -> bool:
    """For f16 and bf16, the comparison PyTorch's own reference tests make: npuir's largest
    error against the op computed in f64 is no larger than eager's (plus the f16 atol).
    A low-precision result may round a last bit either way; only being less accurate than
    PyTorch fails."""
    import torch

    if want.dtype not in (torch.float16, torch.bfloat16):
        return False
    wide = [t.double() if t.is_floating_point() else t for t in tensors]
    try:
        truth = [
            t for t in torch.utils._pytree.tree_leaves(call(*wide)) if isinstance(t, torch.Tensor)
        ][index].double()
    except Exception:  # no f64 kernel of the op
        return False
    finite = torch.isfinite(truth)
    ours = (got.double() - truth).abs()[finite]
    eager = (want.detach().double() - truth).abs()[finite]
    if ours.numel() == 0:
        return True
    return bool(ours.max() <= eager.max() + 1e-5)


def _as_torch(array: Any) -> Any:
    import torch

    if array.dtype.name == "bfloat16":
        return torch.from_numpy(array.astype("float32")).to(torch.bfloat16)
    return torch.from_numpy(array)


def _check_ties(source: Any, outputs: Sequence[Any], wanted: Sequence[Any]) -> tuple[str, str]:
    """Values equal to eager's, and indices that pick those values out of `source` along
    the dim where the values and the source differ in size or order."""
    import torch

    values, index = _as_torch(outputs[0]), _as_torch(outputs[1])
    try:
        torch.testing.assert_close(values, wanted[0].detach(), equal_nan=True)
    except Exception as exc:
        return FAILED, f"mismatch: {_short(str(exc))}"
    if index.shape != wanted[1].shape or index.dtype != wanted[1].dtype:
        return FAILED, f"indices {tuple(index.shape)} {index.dtype} for {tuple(wanted[1].shape)}"
    if source.dim() == 0:
        return PASS, ""
    for dim in range(source.dim()):
        try:
            picked = source.detach().gather(dim, index)
            torch.testing.assert_close(picked, values, equal_nan=True, rtol=0, atol=0)
            return PASS, ""
        except Exception:
            continue
    return FAILED, "the indices do not pick the values"


def _short(text: str) -> str:
    return " ".join(text.split())[:160]


Key = tuple[str, str]
"""A row's key: (Core ATen overload, torch dtype name)."""


def sweep(
    ops: Sequence[str],
    dtypes: Iterable[str],
    samples: int | None,
    shard: tuple[int, int] = (0, 1),
) -> dict[Key, Row]:
    """Each (covered overload, dtype)'s row, from the OpInfos of `ops` (all covered ones if
    empty), their own samples where they have some, else other OpInfos' that reach them.
    `shard` (i, n) takes the OpInfos `_shard_of` puts in shard i of n."""
    own, lent = sweep_shard(ops, dtypes, samples, shard)
    return {key: own[key] if own[key].samples else lent[key] for key in own}


def sweep_shard(
    ops: Sequence[str],
    dtypes: Iterable[str],
    samples: int | None,
    shard: tuple[int, int] = (0, 1),
    done: Callable[[str, dict[Key, Row], dict[Key, Row]], None] | None = None,
    opinfos: Iterable[str] = (),
) -> tuple[dict[Key, Row], dict[Key, Row]]:
    """One shard's rows of own and of borrowed samples (kept apart so that shards add up
    before the choice between them).  `done`, if given, is called after each OpInfo with
    its name and the rows so far (a long shard writes them as it goes).  `opinfos`, if not
    empty, keeps only the OpInfos of those names (`name` or `name.variant`): the rest of a
    shard that was stopped, say."""
    import torch

    dtypes = list(dtypes)
    covered = covered_ops()
    chosen = [op for op in covered if not ops or op.split(".")[1] in ops]
    rows = {(op, d): Row(op) for op in chosen for d in dtypes}
    others = {(op, d): Row(op, borrowed=True) for op in chosen for d in dtypes}
    packets = {op.split(".")[1] for op in chosen}
    index, count = shard
    only = set(opinfos)
    for info in opinfos_for(packets):
        if _shard_of(info, count) != index or (only and _opinfo_name(info) not in only):
            continue
        own = own_packets(info)
        for name in dtypes:
            dtype = getattr(torch, name)
            if dtype not in info.supported_dtypes("cpu"):
                continue
            if dtype.is_complex and not info.name.startswith("fft."):
                continue  # npuir's complex tensors are the FFTs' (aten_core.COMPLEX_OK)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the generators' deprecation notes
                    found = list(info.sample_inputs("cpu", dtype, requires_grad=False))
            except Exception:  # an OpInfo whose sample generator needs what is not here
                continue
            for sample in found[:samples]:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # eager's own warnings on odd inputs
                    called, outcome, reason, error = run_sample(info, sample)
                if not outcome:
                    continue
                for op in called & set(chosen):
                    # A sample counts for the op its OpInfo is named after; other ops it
                    # reaches borrow it only if they have no OpInfo of their own.
                    mine = op.split(".")[1] in own
                    (rows if mine else others)[op, name].add(info.name, outcome, reason, error)
        if done is not None:
            done(_opinfo_name(info), rows, others)
    return rows, others


def _opinfo_name(info: Any) -> str:
    return f"{info.name}.{info.variant_test_name}" if info.variant_test_name else info.name


def _shard_of(info: Any, count: int) -> int:
    """The shard an OpInfo falls in: from its name alone, so that shards run at different
    times (or with different ops covered) still split the OpInfos the same way."""
    key = f"{info.name}.{info.variant_test_name}".encode()
    return zlib.crc32(key) % count


def status(row: Row) -> str:
    """pass (every sample passes or is refused, one at least passes), fail, refused (every
    sample refused), or no OpInfo (no sample in this dtype reaches the op)."""
    if not row.samples:
        return "no OpInfo"
    if row.passed + row.refused < row.samples:
        return "fail"
    return "pass" if row.passed else "refused"


def cell(row: Row) -> str:
    """A row as one table cell: its status, counts, and the largest error or the kinds."""
    state = status(row)
    if state == "no OpInfo":
        return "-"
    text = f"{state} {row.passed}/{row.samples}"
    if state == "fail":
        text += " (max err inf)" if math.isinf(row.max_error) else f" (max err {row.max_error:.2g})"
    elif row.refused:
        text += f", {row.refused} refused ({', '.join(row.kinds)})"
    return text


def to_json(
    own: dict[Key, Row], lent: dict[Key, Row], command: str, **extra: Any
) -> dict[str, Any]:
    """The rows as JSON, with `extra` entries (a shard's OpInfos done, its CPU time)."""

    def rows(table: dict[Key, Row]) -> list[dict[str, Any]]:
        return [{"dtype": d, **_finite(asdict(r))} for (_, d), r in table.items() if r.samples]

    return {"command": command, **extra, "own": rows(own), "lent": rows(lent)}


def _finite(row: dict[str, Any]) -> dict[str, Any]:
    # JSON has no infinity: a failure that is no comparison is written as -1.
    if math.isinf(row["max_error"]):
        row["max_error"] = -1.0
    return row


def from_json(data: dict[str, Any]) -> tuple[dict[Key, Row], dict[Key, Row]]:
    def rows(items: list[dict[str, Any]]) -> dict[Key, Row]:
        out = {}
        for item in items:
            item = dict(item)
            dtype = item.pop("dtype")
            row = Row(**item)
            if row.max_error < 0:
                row.max_error = math.inf
            out[row.op, dtype] = row
        return out

    return rows(data["own"]), rows(data["lent"])


def ops_of(command: str) -> set[str]:
    """The ATen op names a sweep's `--ops` chose (empty: all).  A merged file's command joins
    its runs' with "; then ": the ops of every `--ops` run in it (each swept all shards)."""
    chosen: set[str] = set()
    for run in command.split("; then "):
        words = run.split()
        if "--ops" not in words:
            continue
        rest = words[words.index("--ops") + 1 :]
        ends = [i for i, w in enumerate(rest) if w.startswith("--")]
        chosen |= set(rest[: ends[0]] if ends else rest)
    return chosen


def merge(
    parts: Sequence[tuple[dict[Key, Row], dict[Key, Row]]], commands: Sequence[str] = ()
) -> tuple[dict[Key, Row], ...]:
    """Shards' own and lent rows, added up per (op, dtype).  A part run with `--ops` (a
    rerun of some ops, after a fix) replaces what the parts before it said of those ops."""
    own: dict[Key, Row] = {}
    lent: dict[Key, Row] = {}
    for i, (part_own, part_lent) in enumerate(parts):
        rerun = ops_of(commands[i]) if i < len(commands) else set()
        for table in (own, lent):
            for key in [k for k in table if k[0].split(".")[1] in rerun]:
                del table[key]
        for mine, theirs in ((own, part_own), (lent, part_lent)):
            for key, row in theirs.items():
                if key in mine:
                    mine[key].merge(row)
                else:
                    mine[key] = row
    return own, lent


def table(
    own: dict[Key, Row], lent: dict[Key, Row], dtypes: Sequence[str], ops: Sequence[str] = ()
) -> list[str]:
    """The Markdown table: one line per covered overload (of `ops`, if any), one column
    per dtype."""
    out = ["| op | " + " | ".join(dtypes) + " |", "|---" * (len(dtypes) + 1) + "|"]
    for op in covered_ops():
        if ops and op.split(".")[1] not in ops:
            continue
        cells = []
        for d in dtypes:
            row = own.get((op, d))
            if row is None or not row.samples:
                row = lent.get((op, d), Row(op))
            cells.append(cell(row) + (" (lent)" if row.borrowed and row.samples else ""))
        out.append(f"| `{op}` | " + " | ".join(cells) + " |")
    return out


def failures(own: dict[Key, Row], lent: dict[Key, Row]) -> list[str]:
    """One line per failing (op, dtype): its first failures' reasons."""
    out = []
    for key in sorted(set(own) | set(lent)):
        row = own.get(key)
        if row is None or not row.samples:
            row = lent[key]
        if status(row) == "fail":
            out.append(f"- `{key[0]}` {key[1]}: " + "; ".join(row.failures).replace("|", "\\|"))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--ops", nargs="*", default=[], help="ATen op names (default: all)")
    parser.add_argument("--dtypes", nargs="*", default=list(DTYPES), choices=DTYPES)
    parser.add_argument("--samples", type=int, default=None, help="samples per OpInfo and dtype")
    parser.add_argument("--shard", default="0/1", help="i/n: the i-th of n slices of OpInfos")
    parser.add_argument(
        "--opinfos", nargs="*", default=[], help="only these OpInfos (name or name.variant)"
    )
    parser.add_argument("--json", type=Path, help="write the rows' counts here")
    parser.add_argument("--merge", type=Path, nargs="*", default=[], help="shards' JSON to add")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    runs: list[dict[str, Any]] = []
    if args.merge:
        data = [json.loads(p.read_text(encoding="utf-8")) for p in args.merge]
        commands = [d["command"] for d in data]
        own, lent = merge([from_json(d) for d in data], commands)
        command = "; then ".join(dict.fromkeys(commands))
        # Each part's command, whether it ran to the end, its OpInfos and times, for the
        # docs to say which shards ran and what an interrupted one did not reach.
        keys = ("command", "complete", "opinfos", "wall_s", "cpu_s")
        runs = [{k: d[k] for k in keys if k in d} for d in data]
    else:
        try:
            i, n = (int(v) for v in args.shard.split("/"))
            if not 0 <= i < n:
                raise ValueError
        except ValueError:
            parser.error(f"--shard wants i/n with 0 <= i < n, got {args.shard!r}")
        shown = " ".join(sys.argv[1:] if argv is None else argv)
        command = f"python bench/aten_opinfo.py {shown}".strip()
        swept: list[str] = []
        cpu = time.process_time()

        def write(name: str, own: dict[Key, Row], lent: dict[Key, Row], complete: bool) -> None:
            # After every OpInfo, so that a shard stopped part way still counts what it did.
            if name:
                swept.append(name)
            if args.json:
                timing = {
                    "wall_s": round(time.perf_counter() - start),
                    "cpu_s": round(time.process_time() - cpu),
                }
                extra = {"complete": complete, "opinfos": swept, **timing}
                text = json.dumps(to_json(own, lent, command, **extra), indent=1) + "\n"
                partial = args.json.with_name(args.json.name + ".part")
                partial.write_text(text)
                partial.replace(args.json)

        def each(name: str, own: dict[Key, Row], lent: dict[Key, Row]) -> None:
            write(name, own, lent, False)

        own, lent = sweep_shard(args.ops, args.dtypes, args.samples, (i, n), each, args.opinfos)
        write("", own, lent, True)
    if args.json and args.merge:
        text = json.dumps(to_json(own, lent, command, runs=runs), indent=1)
        args.json.write_text(text + "\n")
    dtypes = [d for d in DTYPES if any(k[1] == d for k in (*own, *lent))] or args.dtypes
    print("\n".join(table(own, lent, dtypes, args.ops)))
    bad = failures(own, lent)
    print("\n".join(bad))
    print(f"\n{len(bad)} failing (op, dtype) rows ({time.perf_counter() - start:.0f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
