"""`torchair.ops`: torch-named functions that build `npu` ops.

Each function takes and returns `Tensor`s of the current graph and creates one
`npu` op (a few compose two or three, as torch decomposes them: `linear`,
`matmul` of a batch by a matrix).  Result shapes and dtypes come from the
dialect's own inference; a shape that does not infer raises `TorchairError`
at the calling line.

| torch name                                  | npu op |
|---------------------------------------------|--------|
| add sub mul div maximum                     | add sub mul div maximum (numpy broadcasting) |
| neg exp sqrt rsqrt relu gelu silu sigmoid   | the same names |
| to / cast                                   | cast |
| mm, matmul, linear; bmm                     | matmul; batch_matmul |
| softmax, rms_norm, swiglu                   | softmax, rms_norm, swiglu |
| sum / reduce_sum, amax / reduce_max         | reduce_sum, reduce_max |
| transpose / permute, reshape / view         | transpose, reshape |
| cat, slice / narrow                         | concat, slice |
| index_select, embedding                     | gather (`np.take` along a dim) |
| topk, nonzero                               | topk, nonzero |
| all_reduce reduce_scatter all_gather all_to_all | the collectives |

There is no `gather`: torch's `gather(input, dim, index)` picks one element
per index (`take_along_dim`), which `npu.gather` is not; `index_select` is
the torch name for what `npu.gather` does.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    i64,
)
from xdsl.ir import Attribute, Operation

from npuir.diagnostics import Kind
from npuir.dialects import npu
from npuir.dialects.npu import DYN

from .errors import fail
from .graph import Graph, Tensor, current_graph, element_type

# A bad argument to an op builder: `torchair.bad-op-argument.<what>`.  `what` names the
# builder (and the argument); values given are shown as Python writes them (repr).
NOT_A_TENSOR = Kind(
    "torchair.bad-op-argument.not-a-tensor", "{what}: expected a Tensor, got {value}"
)
"""An operand that is not a tensor of the current graph; arguments: `what`, `value`."""
NOT_AN_INT = Kind("torchair.bad-op-argument.not-an-int", "{what} must be an int, got {value}")
"""An integer argument that is not an int; arguments: `what`, `value`."""
NOT_DIMS = Kind(
    "torchair.bad-op-argument.dims", "{what} must be an int or a sequence of ints, got {value}"
)
"""Dims that are neither an int nor ints; arguments: `what`, `value`."""
DIM_RANGE = Kind(
    "torchair.bad-op-argument.dim-range", "{what} {dim} is out of range for a tensor of rank {rank}"
)
"""A dim outside the tensor's rank; arguments: `what`, `dim`, `rank`."""
GELU_APPROXIMATE = Kind(
    "torchair.bad-op-argument.gelu-approximate",
    'gelu: approximate must be "none" or "tanh", got {value}',
)
"""A gelu approximation torch does not have; argument: `value`."""
MATMUL_RANK = Kind(
    "torchair.bad-op-argument.matmul-rank",
    "matmul: operands of rank {rank_a} and {rank_b}; npuir supports rank >= 2",
)
"""matmul of a rank-1 operand; arguments: `rank_a`, `rank_b`."""
LINEAR_RANK = Kind(
    "torchair.bad-op-argument.linear-rank",
    "linear: input must have rank >= 2 and weight rank 2, got {input_rank} and {weight_rank}",
)
"""linear with operands of other ranks; arguments: `input_rank`, `weight_rank`."""
EPSILON = Kind(
    "torchair.bad-op-argument.epsilon", "rms_norm: epsilon must be a number, got {value}"
)
"""A non-numeric rms_norm epsilon; argument: `value`."""
PERM_LENGTH = Kind(
    "torchair.bad-op-argument.perm-length",
    "permute: {given} dims given for a tensor of rank {rank}",
)
"""A permutation of another length than the rank; arguments: `given`, `rank`."""
NOT_A_SHAPE = Kind(
    "torchair.bad-op-argument.shape", "reshape: shape must be a sequence of dims, got {value}"
)
"""A reshape target that is no sequence; argument: `value`."""
EMPTY_CAT = Kind(
    "torchair.bad-op-argument.empty-cat", "cat: expected a non-empty sequence of Tensors"
)
"""cat of nothing."""
SLICE_STEP = Kind("torchair.bad-op-argument.slice-step", "slice: step must be >= 1, got {step}")
"""A slice step below 1; argument: `step`."""
DYNAMIC_SLICE = Kind(
    "torchair.bad-op-argument.dynamic-slice",
    "slice: the sliced tensor has dynamic dims; npu.slice needs static sizes (give gears, or "
    "slice a static dim with explicit non-negative bounds)",
)
"""A slice npu.slice cannot express with static sizes."""
GROUP_SIZE = Kind(
    "torchair.bad-op-argument.group-size", "{what}: group_size must be >= 1, got {value}"
)
"""A collective's group size below 1; arguments: `what`, `value`."""
COMM_MODE = Kind(
    "torchair.bad-op-argument.comm-mode", "{what}: mode must be {choices}, got {value}"
)
"""A collective mode HCCL does not have; arguments: `what`, `choices`, `value`."""
GROUP_NAME = Kind(
    "torchair.bad-op-argument.group",
    "{what}: group must be a string naming the communicator, got {value}",
)
"""A collective group that is no string; arguments: `what`, `value`."""

__all__ = [
    "add",
    "all_gather",
    "all_reduce",
    "all_to_all",
    "amax",
    "bmm",
    "cast",
    "cat",
    "div",
    "embedding",
    "exp",
    "gelu",
    "index_select",
    "linear",
    "matmul",
    "maximum",
    "mm",
    "mul",
    "narrow",
    "neg",
    "nonzero",
    "permute",
    "reduce_max",
    "reduce_scatter",
    "reduce_sum",
    "relu",
    "reshape",
    "rms_norm",
    "rsqrt",
    "sigmoid",
    "silu",
    "slice",
    "softmax",
    "sqrt",
    "sub",
    "sum",
    "swiglu",
    "to",
    "topk",
    "transpose",
    "view",
]


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def _graph_of(what: str, *tensors: object) -> Graph:
    """The current graph, after checking every operand is one of its tensors."""
    graph = current_graph()
    for t in tensors:
        if not isinstance(t, Tensor):
            raise fail(NOT_A_TENSOR, what=what, value=repr(t))
    return graph


def _op(
    what: str,
    op_type: type[Operation],
    inputs: Sequence[Tensor],
    attributes: dict[str, Attribute] | None = None,
    result_type: Attribute | None = None,
    num_results: int = 1,
) -> Operation:
    graph = _graph_of(what, *inputs)
    operands = [graph.value_of(t, what) for t in inputs]
    return graph.add_op(
        op_type,
        operands,
        attributes,
        None if result_type is None else [result_type],
        num_results,
    )


def _one(
    what: str,
    op_type: type[Operation],
    inputs: Sequence[Tensor],
    attributes: dict[str, Attribute] | None = None,
    result_type: Attribute | None = None,
) -> Tensor:
    op = _op(what, op_type, inputs, attributes, result_type)
    return Tensor(inputs[0].graph, op.results[0])


def _int(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise fail(NOT_AN_INT, what=what, value=repr(value))
    return value


def _i64(value: int) -> IntegerAttr:
    return IntegerAttr(value, i64)


def _array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


def _dims(dim: int | Sequence[int] | None, what: str) -> list[int] | None:
    if dim is None:
        return None
    if isinstance(dim, int) and not isinstance(dim, bool):
        return [dim]
    if isinstance(dim, Sequence) and not isinstance(dim, str):
        return [_int(d, what) for d in dim]
    raise fail(NOT_DIMS, what=what, value=repr(dim))


def _rank(t: Tensor) -> int:
    return len(t.type.get_shape())


def _axis(dim: int, rank: int, what: str) -> int:
    _int(dim, what)
    if not -rank <= dim < rank:
        raise fail(DIM_RANGE, what=what, dim=dim, rank=rank)
    return dim % rank


# --------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------


def add(input: Tensor, other: Tensor) -> Tensor:
    """`input + other` with broadcasting."""
    return _one("add", npu.AddOp, [input, other])


def sub(input: Tensor, other: Tensor) -> Tensor:
    """`input - other` with broadcasting."""
    return _one("sub", npu.SubOp, [input, other])


def mul(input: Tensor, other: Tensor) -> Tensor:
    """`input * other` with broadcasting."""
    return _one("mul", npu.MulOp, [input, other])


def div(input: Tensor, other: Tensor) -> Tensor:
    """`input / other` with broadcasting."""
    return _one("div", npu.DivOp, [input, other])


def maximum(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise maximum with broadcasting."""
    return _one("maximum", npu.MaximumOp, [input, other])


def neg(input: Tensor) -> Tensor:
    return _one("neg", npu.NegOp, [input])


def exp(input: Tensor) -> Tensor:
    return _one("exp", npu.ExpOp, [input])


def sqrt(input: Tensor) -> Tensor:
    return _one("sqrt", npu.SqrtOp, [input])


def rsqrt(input: Tensor) -> Tensor:
    return _one("rsqrt", npu.RsqrtOp, [input])


def relu(input: Tensor) -> Tensor:
    return _one("relu", npu.ReluOp, [input])


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """GELU, exact unless `approximate="tanh"` (torch's argument)."""
    if approximate not in ("none", "tanh"):
        raise fail(GELU_APPROXIMATE, value=repr(approximate))
    attrs: dict[str, Attribute] = {}
    if approximate == "tanh":
        attrs["approximate"] = StringAttr("tanh")
    return _one("gelu", npu.GeluOp, [input], attrs)


def silu(input: Tensor) -> Tensor:
    return _one("silu", npu.SiluOp, [input])


def sigmoid(input: Tensor) -> Tensor:
    return _one("sigmoid", npu.SigmoidOp, [input])


def to(input: Tensor, dtype: object) -> Tensor:
    """Convert to `dtype` ("f16", "float32", `torch.bfloat16`, ...)."""
    _graph_of("to", input)
    target = TensorType(element_type(dtype), input.type.get_shape())
    return _one("to", npu.CastOp, [input], result_type=target)


cast = to


# --------------------------------------------------------------------------
# Matrix multiply
# --------------------------------------------------------------------------


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """`[M,K] @ [K,N]` on the cube unit."""
    return _one("mm", npu.MatmulOp, [input, mat2])


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """`[B,M,K] @ [B,K,N]` (leading batch dims broadcast, as `npu.batch_matmul` does)."""
    return _one("bmm", npu.BatchMatmulOp, [input, mat2])


def _flat_matmul(x: Tensor, w: Tensor, transpose_b: bool, what: str) -> Tensor:
    """`x[..., K] @ w` for x of rank >= 2: fold the leading dims into M, as torch does."""
    shape = x.shape
    attrs: dict[str, Attribute] = {"transpose_b": UnitAttr()} if transpose_b else {}
    if len(shape) == 2:
        return _one(what, npu.MatmulOp, [x, w], attrs)
    rows = reshape(x, (-1, shape[-1]) if None not in shape[:-1] else (None, shape[-1]))
    out = _one(what, npu.MatmulOp, [rows, w], attrs)
    return reshape(out, (*shape[:-1], out.shape[-1]))


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """torch's `matmul` for rank >= 2 operands: `mm`, `bmm`, or a batch times a matrix."""
    _graph_of("matmul", input, other)
    ra, rb = _rank(input), _rank(other)
    if ra < 2 or rb < 2:
        raise fail(MATMUL_RANK, rank_a=ra, rank_b=rb)
    if rb == 2:
        return _flat_matmul(input, other, False, "matmul")
    return _one("matmul", npu.BatchMatmulOp, [input, other])


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """`input @ weight.T + bias` (weight is `[out, in]`, as in `nn.Linear`)."""
    _graph_of("linear", input, weight)
    if _rank(input) < 2 or _rank(weight) != 2:
        raise fail(LINEAR_RANK, input_rank=_rank(input), weight_rank=_rank(weight))
    out = _flat_matmul(input, weight, True, "linear")
    return out if bias is None else add(out, bias)


# --------------------------------------------------------------------------
# Along an axis
# --------------------------------------------------------------------------


def softmax(input: Tensor, dim: int = -1) -> Tensor:
    return _one("softmax", npu.SoftmaxOp, [input], {"axis": _i64(_int(dim, "softmax: dim"))})


def rms_norm(input: Tensor, gamma: Tensor, epsilon: float = 1e-6) -> Tensor:
    """RMS normalisation over the last dim, scaled by `gamma` (torch_npu's `npu_rms_norm`)."""
    if not isinstance(epsilon, int | float) or isinstance(epsilon, bool):
        raise fail(EPSILON, value=repr(epsilon))
    return _one("rms_norm", npu.RmsNormOp, [input, gamma], {"epsilon": FloatAttr(epsilon, f32)})


def swiglu(input: Tensor, dim: int = -1) -> Tensor:
    """`silu(a) * b` of the two halves of `dim` (torch_npu's `npu_swiglu`)."""
    return _one("swiglu", npu.SwigluOp, [input], {"axis": _i64(_int(dim, "swiglu: dim"))})


def _reduce(
    what: str,
    op_type: type[Operation],
    input: Tensor,
    dim: int | Sequence[int] | None,
    keepdim: bool,
) -> Tensor:
    attrs: dict[str, Attribute] = {}
    axes = _dims(dim, f"{what}: dim")
    if axes is not None and axes:
        attrs["axes"] = _array(axes)
    if keepdim:
        attrs["keepdims"] = UnitAttr()
    return _one(what, op_type, [input], attrs)


def sum(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """Sum over `dim` (all dims when None)."""
    return _reduce("sum", npu.ReduceSumOp, input, dim, keepdim)


def amax(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """Maximum over `dim` (all dims when None or empty)."""
    return _reduce("amax", npu.ReduceMaxOp, input, dim, keepdim)


reduce_sum = sum
reduce_max = amax


# --------------------------------------------------------------------------
# Data movement
# --------------------------------------------------------------------------


def permute(input: Tensor, dims: Sequence[int]) -> Tensor:
    _graph_of("permute", input)
    perm = _dims(dims, "permute: dims") or []
    rank = _rank(input)
    if len(perm) != rank:
        raise fail(PERM_LENGTH, given=len(perm), rank=rank)
    return _one("permute", npu.TransposeOp, [input], {"perm": _array([p % rank for p in perm])})


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dims."""
    _graph_of("transpose", input)
    rank = _rank(input)
    a, b = _axis(dim0, rank, "transpose: dim0"), _axis(dim1, rank, "transpose: dim1")
    perm = list(range(rank))
    perm[a], perm[b] = perm[b], perm[a]
    return _one("transpose", npu.TransposeOp, [input], {"perm": _array(perm)})


def reshape(input: Tensor, shape: Sequence[int | None]) -> Tensor:
    """View `input` with `shape`; one dim may be -1 (solved), None is dynamic."""
    _graph_of("reshape", input)
    if isinstance(shape, int) or not isinstance(shape, Sequence):
        raise fail(NOT_A_SHAPE, value=repr(shape))
    dims = [DYN if d is None or d == -1 else _int(d, "reshape: dim") for d in shape]
    target = TensorType(input.type.element_type, dims)
    return _one("reshape", npu.ReshapeOp, [input], result_type=target)


view = reshape


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join `tensors` along `dim`."""
    if isinstance(tensors, Tensor) or not isinstance(tensors, Sequence) or not tensors:
        raise fail(EMPTY_CAT)
    return _one("cat", npu.ConcatOp, list(tensors), {"axis": _i64(_int(dim, "cat: dim"))})


def slice(
    input: Tensor, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1
) -> Tensor:
    """`input[..., start:end:step, ...]` along `dim` (aten's `slice`; bounds clamp as in torch)."""
    _graph_of("slice", input)
    shape = list(input.type.get_shape())
    ax = _axis(dim, len(shape), "slice: dim")
    if _int(step, "slice: step") < 1:
        raise fail(SLICE_STEP, step=step)
    others = [i for i, d in enumerate(shape) if d == DYN and i != ax]
    size = shape[ax]
    if others or (size == DYN and (start is None or end is None or start < 0 or end < 0)):
        raise fail(DYNAMIC_SLICE)
    lo = 0 if start is None else _int(start, "slice: start")
    hi = size if end is None else _int(end, "slice: end")
    if size != DYN:
        lo = min(max(lo + size if lo < 0 else lo, 0), size)
        hi = min(max(hi + size if hi < 0 else hi, 0), size)
    length = max(hi - lo, 0)  # the span read: npu.slice takes every step-th element of it
    offsets = [lo if i == ax else 0 for i in range(len(shape))]
    sizes = [length if i == ax else d for i, d in enumerate(shape)]
    attrs: dict[str, Attribute] = {"offsets": _array(offsets), "sizes": _array(sizes)}
    if step != 1:
        attrs["strides"] = _array([step if i == ax else 1 for i in range(len(shape))])
    return _one("slice", npu.SliceOp, [input], attrs)


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """`length` elements of `dim` from `start`."""
    return slice(input, dim, _int(start, "narrow: start"), start + _int(length, "narrow: length"))


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The slices of `input` at the i32/i64 `index` along `dim`."""
    return _one("index_select", npu.GatherOp, [input, index], {"axis": _i64(_int(dim, "dim"))})


def embedding(input: Tensor, weight: Tensor) -> Tensor:
    """Rows of `weight` at the ids in `input` (`F.embedding`'s argument order)."""
    return _one("embedding", npu.GatherOp, [weight, input], {"axis": _i64(0)})


def topk(input: Tensor, k: int, dim: int = -1) -> tuple[Tensor, Tensor]:
    """The `k` largest values along `dim` and their i64 indices."""
    op = _op(
        "topk",
        npu.TopkOp,
        [input],
        {"k": _i64(_int(k, "topk: k")), "axis": _i64(_int(dim, "topk: dim"))},
        num_results=2,
    )
    graph = input.graph
    return Tensor(graph, op.results[0]), Tensor(graph, op.results[1])


def nonzero(input: Tensor) -> Tensor:
    """Indices of the non-zero elements, `[?, rank]` i64; needs every vector core at once."""
    return _one("nonzero", npu.NonzeroOp, [input])


# --------------------------------------------------------------------------
# Collectives
# --------------------------------------------------------------------------


def _collective(
    what: str,
    op_type: type[Operation],
    input: Tensor,
    group_size: int,
    mode: str,
    group: str | None,
) -> Tensor:
    if _int(group_size, f"{what}: group_size") < 1:
        raise fail(GROUP_SIZE, what=what, value=group_size)
    if mode not in tuple(npu.CommMode):
        raise fail(
            COMM_MODE, what=what, choices=npu.CollectiveOp.MODE.spelled_choices(), value=repr(mode)
        )
    attrs: dict[str, Attribute] = {"group_size": _i64(group_size), "mode": StringAttr(mode)}
    if group is not None:
        if not isinstance(group, str):
            raise fail(GROUP_NAME, what=what, value=repr(group))
        attrs["group"] = StringAttr(group)
    return _one(what, op_type, [input], attrs)


def all_reduce(
    input: Tensor, group_size: int, mode: str = "sdma", group: str | None = None
) -> Tensor:
    """Sum over the `group_size` ranks of `group`; `mode="aiv"` runs on vector cores."""
    return _collective("all_reduce", npu.AllReduceOp, input, group_size, mode, group)


def reduce_scatter(
    input: Tensor, group_size: int, mode: str = "sdma", group: str | None = None
) -> Tensor:
    """Sum over the group, each rank keeping its part of dim 0."""
    return _collective("reduce_scatter", npu.ReduceScatterOp, input, group_size, mode, group)


def all_gather(
    input: Tensor, group_size: int, mode: str = "sdma", group: str | None = None
) -> Tensor:
    """Every rank's tensor joined along dim 0."""
    return _collective("all_gather", npu.AllGatherOp, input, group_size, mode, group)


def all_to_all(
    input: Tensor, group_size: int, mode: str = "sdma", group: str | None = None
) -> Tensor:
    """Dim 0 split into `group_size` chunks, chunk r sent to rank r."""
    return _collective("all_to_all", npu.AllToAllOp, input, group_size, mode, group)
