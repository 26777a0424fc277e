"""`npu-fuse-kernels`: the decomposed RMSNorm and rotary embedding a model writes, as the one
fused kernel Ascend runs for each.

transformers writes Llama's RMSNorm and rotary embedding in eager ops, and an export keeps
them so: six `npu` ops for a norm, six for each rotary, each a launch and a pass over HBM.
TorchAir's graph fusion runs each as one kernel (`npu_rms_norm`, `npu_rotary_mul`); this
pass does the same, so the costs are the fused kernels'.  It rewrites, in functions not yet
lowered onto streams, each chain whose intermediate values have no other use:

- `gamma * (x * rsqrt(sum(x * x, -1, keepdims) / N + eps))`, N the last dim, `gamma` a
  vector of it (either operand order of each product; the normalised value may pass
  through a cast, as a half-precision model's f32 norm does) -> `npu.rms_norm %x, %gamma
  {epsilon}`, with `x` before any cast to f32;
- `x * cos + concat(-x[..., D/2:], x[..., :D/2]) * sin` (rotate-half) ->
  `npu.rotary_embedding %x, %cos, %sin`.

```mlir
%s = npu.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
%m = npu.reduce_sum %s {axes = array<i64: -1>, keepdims} : (tensor<4x8xf32>) -> tensor<4x1xf32>
%v = npu.div %m, %n : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
%e = npu.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
%r = npu.rsqrt %e : (tensor<4x1xf32>) -> tensor<4x1xf32>
%h = npu.mul %x, %r : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
%y = npu.mul %gamma, %h : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// becomes
%y = npu.rms_norm %x, %gamma {epsilon = 1.0e-06 : f32} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
```

The fused op keeps the root's location and `npu.op_name`.  A chain the pass does not
recognise is left as it is; nothing here is an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import FloatAttr, ModuleOp, StringAttr, TensorType, f32
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import VerifyException

from npuir.analysis.program import is_lowered
from npuir.dialects import npu
from npuir.dialects.npu_fused import RotaryEmbeddingOp
from npuir.passes import IRState


def _op(value: SSAValue, kind: type[Operation]) -> Operation | None:
    owner = value.owner
    return owner if isinstance(owner, kind) else None


def _only_use(value: SSAValue) -> bool:
    return value.has_one_use()


def _scalar(value: SSAValue) -> float | None:
    """The value of a one-element `npu.constant`, or None."""
    const = _op(value, npu.ConstantOp)
    if not isinstance(const, npu.ConstantOp):
        return None
    values = const.value.get_values()
    return float(values[0]) if len(values) == 1 else None


def _shape(value: SSAValue) -> tuple[int, ...]:
    ty = value.type
    return tuple(ty.get_shape()) if isinstance(ty, TensorType) else ()


def _pairs(op: Operation) -> list[tuple[SSAValue, SSAValue]]:
    """A commutative op's operands in both orders."""
    a, b = op.operands
    return [(a, b), (b, a)]


@dataclass
class _Match:
    root: Operation
    fused: Operation
    dead: list[Operation]


def _rms_norm(root: Operation) -> _Match | None:
    if not isinstance(root, npu.MulOp):
        return None
    for gamma, h in _pairs(root):
        dims = _shape(gamma)
        if len(dims) != 1 or not _only_use(h):
            continue
        cast = _op(h, npu.CastOp)
        inner = cast.operands[0] if cast is not None else h
        found = _normalised(inner, dims[0])
        if found is None or (cast is not None and not _only_use(inner)):
            continue
        x, chain, eps = found
        dead = [*([cast] if cast is not None else []), *chain]
        source = _op(x, npu.CastOp)
        if source is not None and _shape(source.operands[0]) == _shape(x):
            dead.append(source)  # erased too once the chain no longer reads it
            x = source.operands[0]  # the norm's input before its cast to f32
        fused = npu.RmsNormOp.create(
            operands=[x, gamma],
            result_types=[root.results[0].type],
            attributes={"epsilon": FloatAttr(eps, f32)},
        )
        try:
            inferred = fused.infer_result_types([x.type, gamma.type])
        except VerifyException:
            continue  # gamma of another type than x: not this kernel
        if inferred != [root.results[0].type]:
            continue
        return _Match(root, fused, dead)
    return None


def _normalised(h: SSAValue, dim: int) -> tuple[SSAValue, list[Operation], float] | None:
    """`x * rsqrt(sum(x * x) / dim + eps)`: (x, the chain's ops from h back, eps)."""
    mul = _op(h, npu.MulOp)
    if mul is None:
        return None
    for x, r in _pairs(mul):
        rsqrt = _op(r, npu.RsqrtOp)
        if rsqrt is None or not _only_use(r):
            continue
        add = _op(rsqrt.operands[0], npu.AddOp)
        if add is None or not _only_use(add.results[0]):
            continue
        for var, eps_value in _pairs(add):
            eps = _scalar(eps_value)
            div = _op(var, npu.DivOp)
            if eps is None or eps <= 0 or div is None or not _only_use(var):
                continue
            total, count = div.operands
            reduce = _op(total, npu.ReduceSumOp)
            if _scalar(count) != float(dim) or reduce is None or not _only_use(total):
                continue
            rank = len(_shape(x))
            axes = reduce.attributes.get("axes")
            keeps = "keepdims" in reduce.attributes
            if not keeps or axes is None or [a % rank for a in axes.get_values()] != [rank - 1]:  # type: ignore[attr-defined]
                continue
            square = _op(reduce.operands[0], npu.MulOp)
            if (
                square is None
                or not _only_use(reduce.operands[0])
                or list(square.operands) != [x, x]
            ):
                continue
            return x, [mul, rsqrt, add, div, reduce, square], eps
    return None


def _rotary(root: Operation) -> _Match | None:
    if not isinstance(root, npu.AddOp):
        return None
    for direct, rotated in _pairs(root):
        first, second = _op(direct, npu.MulOp), _op(rotated, npu.MulOp)
        if first is None or second is None or not (_only_use(direct) and _only_use(rotated)):
            continue
        for x, cos in _pairs(first):
            for turned, sin in _pairs(second):
                cat = _op(turned, npu.ConcatOp)
                if cat is None or not _only_use(turned) or len(cat.operands) != 2:
                    continue
                halves = _rotate_half(cat, x)
                if halves is None:
                    continue
                fused = RotaryEmbeddingOp.create(
                    operands=[x, cos, sin], result_types=[root.results[0].type]
                )
                try:
                    inferred = fused.infer_result_types([x.type, cos.type, sin.type])
                except VerifyException:
                    continue  # tables that do not broadcast to x: not a rotary
                if inferred != [root.results[0].type]:
                    continue
                return _Match(root, fused, [first, second, cat, *halves])
    return None


def _rotate_half(cat: Operation, x: SSAValue) -> list[Operation] | None:
    """The ops of `concat(-x[..., D/2:], x[..., :D/2])` along the last dim, or None."""
    shape = _shape(x)
    if not shape or shape[-1] % 2 or "axis" not in cat.attributes:
        return None
    axis = cat.attributes["axis"].value.data % len(shape)  # type: ignore[attr-defined]
    neg = _op(cat.operands[0], npu.NegOp)
    low = _op(cat.operands[1], npu.SliceOp)
    high = _op(neg.operands[0], npu.SliceOp) if neg is not None else None
    if axis != len(shape) - 1 or neg is None or low is None or high is None:
        return None
    half = shape[-1] // 2
    for piece, start in ((high, half), (low, 0)):
        if piece.operands[0] != x or not _only_use(piece.results[0]):
            return None
        offsets = list(piece.attributes["offsets"].get_values())  # type: ignore[attr-defined]
        sizes = list(piece.attributes["sizes"].get_values())  # type: ignore[attr-defined]
        strides = piece.attributes.get("strides")
        if strides is not None and set(strides.get_values()) != {1}:  # type: ignore[attr-defined]
            return None
        if offsets != [0] * (len(shape) - 1) + [start] or sizes != [*shape[:-1], half]:
            return None
    if not _only_use(cat.operands[0]):
        return None
    return [neg, low, high]


_PATTERNS = (_rms_norm, _rotary)


@dataclass(frozen=True)
class NpuFuseKernelsPass(ModulePass):
    """Rewrite decomposed RMSNorm and rotary-embedding chains as Ascend's fused kernels."""

    name = "npu-fuse-kernels"

    REQUIRES: ClassVar[tuple[IRState, ...]] = ()

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in [f for f in op.ops if isinstance(f, FuncOp) and not is_lowered(f)]:
            for root in list(func.body.walk()):
                if root.parent is None:
                    continue  # erased as part of an earlier match
                for pattern in _PATTERNS:
                    found = pattern(root)
                    if found is not None:
                        _apply(found)
                        break


def _apply(match: _Match) -> None:
    root, fused = match.root, match.fused
    fused.location = root.location
    name = root.attributes.get(npu.OP_NAME)
    if isinstance(name, StringAttr):
        fused.attributes[npu.OP_NAME] = name
    Rewriter.insert_op(fused, InsertPoint.before(root))
    root.results[0].replace_all_uses_with(fused.results[0])
    Rewriter.erase_op(root)
    # Users before producers, so each is unused when its turn comes; an op still read
    # elsewhere (a cast the model reuses) stays.
    for dead in match.dead:
        if dead.parent is not None and all(not r.uses for r in dead.results):
            Rewriter.erase_op(dead)
