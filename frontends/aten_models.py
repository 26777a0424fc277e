"""The ATen forms `transformers` models emit that `aten_core` does not cover, for the importer.

`npuir.frontends.torch`'s `_Importer.handlers()` merges `handlers(importer)` into its table
last, so a form here replaces the plain mapping of the same op (`aten_core`'s `cat`,
`layer_norm`, `masked_fill`, `index_put_`, `slice`).  Each is lowered to npu ops that have
kernels and costs already, or to the table's own handlers:

- `aten.cat` with a legacy empty operand: transformers' `DynamicLayer` starts each layer's
  cache as `torch.tensor([])` (shape `(0,)`) and concatenates the new keys to it; torch skips
  a 1-D empty operand of a `cat` whatever the other operands' rank, so the import does too
  (`detach_` of that lifted constant computes nothing).
- `aten.dropout` in eval mode (`train=False`) or with `p=0`: the identity (training-mode
  dropout draws random numbers and is refused).
- `aten.layer_norm` (GPT-2, BERT, ViT): mean, variance, `rsqrt`, scale and shift over the
  normalised dims in npu's elementwise and reduction ops, with no torch needed (`aten_core`
  traces torch's decomposition, which a `.pt2` read as data cannot).
- `aten.conv2d` (ViT's patch embedding): `npu.conv2d` (cube) with its strides, symmetric
  pads, dilations and groups; an unbatched (CHW) input is refused.
- `aten.flatten.using_ints`: a reshape.
- `aten.diff` with `n`, `prepend` and `append` (transformers' packed-sequence check of the
  positions): a concatenation and `n` slice differences.
- In-place ops (`copy_`, `div_`, `index_put_`, `scatter_`, `masked_fill_`, ... : `INPLACE`),
  which `torch.export` keeps when the model writes into its own intermediate tensors
  (DeepSeek-V3's `expand_kv` fills the slices of a `new_empty` key, MoE routing fills an
  `empty_like` index, top-k weights are divided in place): the op's functional form (the
  same name without `_`, from the whole table, so another module's mapping serves), and the
  written tensor is rebound to the result, so its later readers (the FX graph names the
  tensor, not the write) read the new value.  A write into a slice (`x[..., :16] = y` is a
  `slice` and a `copy_`) is written back into the sliced tensor: the slice's base becomes
  the concatenation of its parts before, the written part and its parts after, through
  every slice of a slice.  Refused (a split under `torch.compile`, else `npu.opaque`): a
  write through a slice whose sibling slice is read after the write (torch's view would
  see the write; the imported value would not).  A write into another kind of view
  (`view`, `transpose`, a strided slice) rebinds only the view: the zoo has none.
- `aten.masked_fill` (DeepSeek-V3's group routing masks scores with -inf): `where(mask,
  value, x)` through the table's `where`, an infinite value as the dtype's largest finite
  one of its sign (npu constants are finite).
- `aten.histc` (MoE routing's tokens per expert): `npu_math` ops of fixed shape (compare
  each element's bin with every bin, count).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, i64
from xdsl.ir import Attribute

from npuir.backends.npu.kernels import numpy_dtype
from npuir.dialects import npu
from npuir.dialects.npu import dtype_name
from npuir.frontends.torchair import Tensor, ops
from npuir.frontends.torchair.graph import element_type, tensor_type


def _refuse(reason: str) -> Exception:
    """The importer's `UnsupportedOp`: its walk makes it the form's located warning or, under
    `torch.compile`, a split.  (Imported here: the importer imports this module.)"""
    from npuir.frontends.torch import UnsupportedOp

    return UnsupportedOp(reason)


def _legacy_empty(x: Any) -> bool:
    """A `(0,)`-shaped tensor: what torch's `cat` skips beside operands of any rank."""
    return isinstance(x, Tensor) and tuple(x.shape) == (0,)


def cat(tensors: Sequence[Any], dim: int = 0) -> Tensor:
    """`torch.cat`, skipping legacy empty operands as torch does."""
    kept = [t for t in tensors if not _legacy_empty(t)]
    if len(kept) == 1:
        only: Tensor = kept[0]
        return only
    return ops.cat(kept or list(tensors), dim)


def cast(x: Tensor, dtype: Any) -> Tensor:
    """`x` as `dtype` (None: unchanged)."""
    if dtype is None or dtype_name(element_type(dtype)) == x.dtype:
        return x
    return ops.to(x, dtype)


def dropout(x: Tensor, p: float, train: bool | None) -> Tensor:
    if train and p > 0:
        raise _refuse(f"dropout in training mode (p={p}) draws random numbers")
    return x


def diff(x: Tensor, n: int = 1, dim: int = -1, prepend: Any = None, append: Any = None) -> Tensor:
    """`torch.diff`: `prepend` and `append` concatenated along `dim`, then `n` times the
    later elements minus the earlier ones (a slice minus a slice).  transformers detects
    packed sequences with `diff(position_ids, prepend=...)`.  A bool tensor's difference is
    torch's `!=` of neighbours, which a subtraction is not: refused."""
    if x.dtype == "i1":
        raise _refuse("diff of a bool tensor")
    parts = [t for t in (prepend, x, append) if t is not None]
    if any(not isinstance(t, Tensor) for t in parts):
        raise _refuse("diff with a prepend or append that is not a tensor")
    y = parts[0] if len(parts) == 1 else ops.cat(parts, dim)
    for _ in range(n):
        size = y.shape[dim]
        if size is None:
            raise _refuse("diff along a dynamic dim")
        if size == 0:
            return y
        y = ops.sub(ops.slice(y, dim, 1, size), ops.slice(y, dim, 0, size - 1))
    return y


def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    shape = list(x.shape)
    if not shape:
        return ops.reshape(x, [1])
    a, b = start_dim % len(shape), end_dim % len(shape)
    merged = shape[a : b + 1]
    size = None if any(d is None for d in merged) else math.prod(d for d in merged if d)
    return ops.reshape(x, [*shape[:a], size, *shape[b + 1 :]])


INPLACE = (
    "aten.copy_.default",
    "aten.add_.Tensor",
    "aten.sub_.Tensor",
    "aten.mul_.Tensor",
    "aten.mul_.Scalar",
    "aten.div_.Tensor",
    "aten.div_.Scalar",
    "aten.index_put_.default",
    "aten.scatter_.value",
    "aten.scatter_.src",
    "aten.masked_fill_.Scalar",
    "aten.masked_fill_.Tensor",
    "aten.fill_.Scalar",
    "aten.zero_.default",
    "aten.clamp_.default",
    "aten.index_add_.default",
)
"""The in-place overloads rebound to their functional forms (`Forms.inplace`)."""


@dataclasses.dataclass(frozen=True)
class _Slice:
    """A `slice` node's result as a view: what it slices and where (unit step)."""

    base: Any  # the sliced FX node
    dim: int
    start: int
    end: int


class Forms:
    """The forms that need the importer: its scalar constants (`importer.tensor`), its whole
    handler table (an in-place op's functional form) and its environment (rebinding)."""

    def __init__(self, importer: Any) -> None:
        self.importer = importer
        self.views: dict[Any, _Slice] = {}
        """FX slice node -> where it views its base, for a write into it."""
        self._table: dict[str, Callable[..., Any]] | None = None

    def table(self) -> dict[str, Callable[..., Any]]:
        if self._table is None:
            self._table = self.importer.handlers()
        return self._table

    def scalar(self, value: float, like: Tensor) -> Tensor:
        made: Tensor = self.importer.tensor(value, like)
        return made

    def slice(
        self, x: Tensor, dim: int = 0, start: Any = None, end: Any = None, step: int = 1
    ) -> Tensor:
        """The importer's `slice`, remembering the view (static sizes, unit step)."""
        node = self.importer.node
        result: Tensor = self.importer.slice(x, dim, start, end, step)
        size = x.shape[dim]
        if node is not None and size is not None and step == 1 and isinstance(x, Tensor):
            lo = 0 if start is None else (start + size if start < 0 else start)
            hi = size if end is None or end >= size else (end + size if end < 0 else end)
            self.views[node] = _Slice(node.args[0], dim % len(x.shape), lo, hi)
        return result

    def masked_fill(self, x: Tensor, mask: Tensor, value: Any) -> Tensor:
        """`where(mask, value, x)`, by the table's `where` (a Core ATen op).  An infinite
        fill (a mask of -inf before a top-k or a softmax) is the dtype's largest finite
        value of that sign: npu constants are finite, and top-k, max and softmax order the
        masked entries the same, unless every entry of a row is masked."""
        where = self.table().get("aten.where.self")
        if where is None:
            opaque: Tensor = self.importer.opaque_op(self.importer.node)
            return opaque
        if isinstance(value, Tensor):
            fill = value
        else:
            number = float(value)
            if math.isinf(number):
                top = float(np.finfo(numpy_dtype(x.dtype)).max)
                number = top if number > 0 else -top
            fill = self.scalar(number, x)
        result: Tensor = where(mask, fill, x)
        return result

    def inplace(self, name: str) -> Callable[..., Tensor]:
        """`name` (an in-place overload) as its functional form with the write rebound."""
        functional = name.replace("_.", ".", 1)

        def build(target: Any, *args: Any, **kwargs: Any) -> Tensor:
            node = self.importer.node
            if name == "aten.copy_.default":
                value = self.copied(target, args[0])
            else:
                handler = self.table().get(functional)
                # No functional form: an op no npu op maps, as the op itself would be (the
                # written tensor is rebound to the opaque result all the same).
                value = (
                    self.importer.opaque_op(node)
                    if handler is None
                    else handler(target, *args, **kwargs)
                )
            self.write(node.args[0], value)
            return value

        return build

    def copied(self, target: Tensor, source: Any) -> Tensor:
        """`target.copy_(source)`'s new value: `source` broadcast to `target`'s shape, in its
        dtype."""
        if not isinstance(source, Tensor):
            source = self.scalar(source, target)
        source = cast(source, target.dtype)
        if tuple(source.shape) != tuple(target.shape):
            grown: Tensor = self.importer.expand(source, list(target.shape))
            source = grown
        return source

    def write(self, written: Any, value: Tensor) -> None:
        """Rebind the FX node `written` to `value`, and each slice it views through to the
        base with the written part in place."""
        env = self.importer.env
        while True:
            env[written] = value
            for other, view in self.views.items():
                if other is not written and view.base is written and self.read_later(other):
                    raise _refuse("a write into a tensor whose other slice is read after it")
            through = self.views.get(written)
            if through is None:
                break
            view = through
            base = env[view.base]
            size = base.shape[view.dim]
            parts = []
            if view.start > 0:
                parts.append(ops.slice(base, view.dim, 0, view.start))
            parts.append(value)
            if view.end < size:
                parts.append(ops.slice(base, view.dim, view.end, size))
            value = parts[0] if len(parts) == 1 else ops.cat(parts, view.dim)
            written = view.base

    HISTC_OPS = ("npu.floor", "npu.minimum", "npu.ge", "npu.le", "npu.eq", "npu.arange")
    """The npu ops (`npu_math`'s) `histc` is built from."""

    def npu_op(self, name: str, inputs: Sequence[Tensor], result: Any = None) -> Tensor:
        """One npu op by name (`result`: its type, for an op without operands)."""
        graph = self.importer.graph
        op_class = {op.name: op for op in npu.NPU_OPS}[name]
        values = [graph.value_of(t, name) for t in inputs]
        op = graph.add_op(op_class, values, {}, None if result is None else [result])
        return Tensor(graph, op.results[0])

    def histc(self, x: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
        """`torch.histc` in ops of fixed shape: each element's bin, `(x - lo) * bins /
        (hi - lo)` floored as torch computes it (the top edge into the last bin), compared
        with every bin's number, counted where `lo <= x <= hi`.  Given no range (`min ==
        max`), the range is the data's, widened by one when it is a point, as torch does.
        Built from `HISTC_OPS`; without them, `npu.opaque` as an op no npu op maps (MoE
        routing counts each expert's tokens with it)."""
        known = {op.name for op in npu.NPU_OPS}
        if any(name not in known for name in self.HISTC_OPS):
            opaque: Tensor = self.importer.opaque_op(self.importer.node)
            return opaque
        if any(d is None for d in x.shape):
            raise _refuse("histc of a tensor with dynamic dims")
        n = math.prod(d for d in x.shape if d is not None)
        flat = ops.reshape(x, [n])
        if min == max:
            lo = ops.neg(ops.amax(ops.neg(flat), [0], True))
            hi = ops.amax(flat, [0], True)
            point = cast(self.npu_op("npu.eq", [hi, lo]), x.dtype)
            lo, hi = ops.sub(lo, point), ops.add(hi, point)
        else:
            lo, hi = self.scalar(float(min), x), self.scalar(float(max), x)
        scaled = ops.div(ops.mul(ops.sub(flat, lo), self.scalar(bins, x)), ops.sub(hi, lo))
        floor = self.npu_op("npu.floor", [scaled])
        top = self.npu_op("npu.minimum", [floor, self.scalar(bins - 1, x)])
        which = ops.maximum(top, self.scalar(0, x))
        # in range: (x >= lo) * (x <= hi), as 0/1 of x's dtype
        inside = ops.mul(
            cast(self.npu_op("npu.ge", [flat, lo]), x.dtype),
            cast(self.npu_op("npu.le", [flat, hi]), x.dtype),
        )
        numbers = self.npu_op("npu.arange", [], tensor_type([bins], x.dtype))
        same = self.npu_op("npu.eq", [ops.reshape(which, [1, n]), ops.reshape(numbers, [bins, 1])])
        hits = ops.mul(cast(same, x.dtype), ops.reshape(inside, [1, n]))
        counted: Tensor = ops.sum(hits, [1])
        return counted

    def read_later(self, view: Any) -> bool:
        """Whether a node not yet imported reads `view` (a `copy_` into it writes, not reads)."""
        env = self.importer.env
        return any(
            user not in env
            and not (str(user.target) == "aten.copy_.default" and user.args[0] is view)
            for user in getattr(view, "users", ())
        )

    def layer_norm(
        self,
        x: Tensor,
        normalized_shape: Sequence[int],
        weight: Tensor | None = None,
        bias: Tensor | None = None,
        eps: float = 1e-5,
        *_: Any,
    ) -> Tensor:
        rank = len(x.shape)
        dims = list(range(rank - len(normalized_shape), rank))
        sizes = [x.shape[d] for d in dims]
        if any(s is None for s in sizes):
            raise _refuse("layer_norm over a dynamic dim")
        count = self.scalar(math.prod(s for s in sizes if s is not None), x)
        mean = ops.div(ops.sum(x, dims, True), count)
        centred = ops.sub(x, mean)
        var = ops.div(ops.sum(ops.mul(centred, centred), dims, True), count)
        y = ops.mul(centred, ops.rsqrt(ops.add(var, self.scalar(float(eps), x))))
        if weight is not None:
            y = ops.mul(y, weight)
        if bias is not None:
            y = ops.add(y, bias)
        return y

    def conv2d(
        self,
        x: Tensor,
        weight: Tensor,
        bias: Tensor | None = None,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
    ) -> Tensor:
        """`npu.conv2d` (cube), the NCHW convolution the dialect already has."""

        def pair(v: Any, what: str) -> list[int]:
            pair = list(v) if isinstance(v, list | tuple) else [v, v]
            if len(pair) == 1:
                pair = pair * 2
            if len(pair) != 2 or not all(isinstance(p, int) for p in pair):
                raise _refuse(f"conv2d {what} {v!r} (two ints or one)")
            return pair

        if len(x.shape) != 4 or len(weight.shape) != 4:
            raise _refuse("conv2d of a tensor that is not NCHW (a batch of images)")
        ph, pw = pair(padding, "padding")
        attrs: dict[str, Attribute] = {
            "strides": DenseArrayBase.from_list(i64, pair(stride, "stride")),
            "pads": DenseArrayBase.from_list(i64, [ph, ph, pw, pw]),
            "dilations": DenseArrayBase.from_list(i64, pair(dilation, "dilation")),
            "groups": IntegerAttr(int(groups), i64),
        }
        graph = self.importer.graph
        operands = [graph.value_of(t, "conv2d") for t in (x, weight, bias) if t is not None]
        op = graph.add_op(npu.Conv2dOp, operands, attrs)
        return Tensor(graph, op.results[0])


def handlers(importer: Any) -> dict[str, Callable[..., Any]]:
    """The forms, by target name, for `importer`'s walk."""
    forms = Forms(importer)

    def identity(x: Any, *_: Any, **__: Any) -> Any:
        return x

    table: dict[str, Callable[..., Any]] = {
        "aten.cat.default": cat,
        "aten.detach_.default": identity,
        "aten.dropout.default": dropout,
        "aten.flatten.using_ints": flatten,
        "aten.diff.default": diff,
        "aten.layer_norm.default": forms.layer_norm,
        "aten.conv2d.default": forms.conv2d,
        "aten.slice.Tensor": forms.slice,
        "aten.masked_fill.Scalar": forms.masked_fill,
        "aten.masked_fill.Tensor": forms.masked_fill,
        "aten.histc.default": forms.histc,
    }
    for name in INPLACE:
        table[name] = forms.inplace(name)
    return table
