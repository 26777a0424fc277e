"""A small `.mlir` text emitter for the benchmark workloads.

Each value remembers its tensor type, so a generator states only the result
type of each op and the emitter writes the `functional-type` signature that
every `npu` op prints with.  `stream.switch` scopes are context managers:

    f = Func("forward")
    x = f.arg("x", Ty((64, 7168), "bf16"))
    with f.switch("shared") as scope:
        y = f.op("matmul", [x, w], Ty((64, 4096), "bf16"))
        (y_out,) = scope.yield_(y)
    text = module([f], header="// comment")

The text is verified by parsing it (`npuir.parse_text`); the emitter itself
checks only that a value is used where it is visible.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Ty:
    """A ranked tensor type: `Ty((64, 7168), "bf16")` is `tensor<64x7168xbf16>`."""

    shape: tuple[int, ...]
    dtype: str

    def __str__(self) -> str:
        dims = "".join(f"{d}x" for d in self.shape)
        return f"tensor<{dims}{self.dtype}>"

    def with_shape(self, *shape: int) -> Ty:
        return Ty(tuple(shape), self.dtype)


@dataclass
class _Scope:
    tag: str
    priority: int
    lines: list[str] = field(default_factory=list[str])
    defined: set[str] = field(default_factory=set[str])
    yielded: list[str] = field(default_factory=list[str])
    outputs: list[str] = field(default_factory=list[str])


class ScopeHandle:
    """What `Func.switch` yields: `yield_` names the values that leave the scope."""

    def __init__(self, func: Func, scope: _Scope) -> None:
        self._func = func
        self._scope = scope

    def yield_(self, *values: str) -> tuple[str, ...]:
        """The scope's results (`%v_out` for a yielded `%v`), visible after the scope."""
        if self._scope.yielded:
            raise ValueError("a scope yields once")
        self._scope.yielded = list(values)
        outs = tuple(self._func.fresh(f"{v[1:]}_out") for v in values)
        for out, value in zip(outs, values):
            self._func.types[out] = self._func.types[value]
        self._scope.outputs = list(outs)
        return outs


class Func:
    """One `func.func` under construction."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.args: list[tuple[str, Ty]] = []
        self.types: dict[str, Ty] = {}
        self._stack: list[_Scope] = [_Scope("", 0)]
        self._names: set[str] = set()
        self._counter = 0
        self.results: list[str] = []
        self._closed: list[_Scope] = []

    # -- names --------------------------------------------------------------------------
    def fresh(self, stem: str) -> str:
        """A new SSA name `%stem`, `%stem_1`, ... never used before in this function."""
        name = stem
        while name in self._names:
            self._counter += 1
            name = f"{stem}_{self._counter}"
        self._names.add(name)
        return f"%{name}"

    def ty(self, value: str) -> Ty:
        return self.types[value]

    def _check_visible(self, values: Sequence[str]) -> None:
        for v in values:
            if v not in self.types:
                raise ValueError(f"{v} is not defined")
            # A value defined in a scope that has closed may leave it only through its yield.
            if any(v in s.defined for s in self._closed):
                raise ValueError(f"{v} is defined inside a closed scope; yield it")

    # -- building -------------------------------------------------------------------------
    def arg(self, name: str, ty: Ty) -> str:
        value = self.fresh(name)
        self.args.append((value, ty))
        self.types[value] = ty
        return value

    def _emit(self, line: str) -> None:
        depth = len(self._stack)
        self._stack[-1].lines.append("  " * (depth + 1) + line)

    def op(
        self,
        name: str,
        operands: Sequence[str],
        result: Ty,
        attrs: str = "",
        stem: str | None = None,
    ) -> str:
        """`%r = npu.NAME operands {attrs} : (types) -> type`; returns `%r`."""
        (value,) = self._op(name, operands, [result], attrs, [stem or name])
        return value

    def op_n(
        self,
        name: str,
        operands: Sequence[str],
        results: Sequence[Ty],
        attrs: str = "",
        stems: Sequence[str] | None = None,
    ) -> tuple[str, ...]:
        """An op with several results (`npu.topk`), named by `stems`."""
        stems = list(stems) if stems is not None else [f"{name}{i}" for i in range(len(results))]
        return self._op(name, operands, results, attrs, stems)

    def _op(
        self,
        name: str,
        operands: Sequence[str],
        results: Sequence[Ty],
        attrs: str,
        stems: Sequence[str],
    ) -> tuple[str, ...]:
        self._check_visible(operands)
        values = tuple(self.fresh(stem) for stem in stems)
        for value, ty in zip(values, results):
            self.types[value] = ty
            self._stack[-1].defined.add(value)
        ins = ", ".join(str(self.types[o]) for o in operands)
        outs = ", ".join(str(t) for t in results)
        if len(results) > 1:
            outs = f"({outs})"
        attr_text = f" {{{attrs}}}" if attrs else ""
        self._emit(
            f"{', '.join(values)} = npu.{name} {', '.join(operands)}{attr_text} : ({ins}) -> {outs}"
        )
        return values

    @contextmanager
    def switch(self, tag: str, priority: int = 0) -> Iterator[ScopeHandle]:
        """A `stream.switch` scope; call `yield_` on the handle before leaving it."""
        scope = _Scope(tag, priority)
        self._stack.append(scope)
        yield ScopeHandle(self, scope)
        self._stack.pop()
        self._closed.append(scope)
        depth = len(self._stack)
        pad = "  " * (depth + 1)
        outs = ", ".join(scope.outputs)
        types = ", ".join(str(self.types[v]) for v in scope.yielded)
        prio = f" priority {priority}" if priority else ""
        head = f"{outs} = " if outs else ""
        arrow = f" -> {types}" if types else ""
        parent = self._stack[-1]
        parent.lines.append(f'{pad}{head}stream.switch "{tag}"{prio}{arrow} {{')
        parent.lines.extend(scope.lines)
        yielded = ", ".join(scope.yielded)
        tail = f" {yielded} : {types}" if scope.yielded else ""
        parent.lines.append(f"{pad}  stream.yield{tail}")
        parent.lines.append(f"{pad}}}")
        parent.defined.update(scope.outputs)

    def return_(self, *values: str) -> None:
        self._check_visible(values)
        self.results = list(values)

    # -- text -------------------------------------------------------------------------------
    def text(self) -> str:
        if len(self._stack) != 1:
            raise ValueError("a stream.switch scope is still open")
        args = ",\n      ".join(f"{v}: {t}" for v, t in self.args)
        res_types = [str(self.types[v]) for v in self.results]
        res = res_types[0] if len(res_types) == 1 else f"({', '.join(res_types)})"
        lines = [f"  func.func @{self.name}(\n      {args})\n      -> {res} {{"]
        lines.extend(self._stack[0].lines)
        vals = ", ".join(self.results)
        lines.append(f"    func.return {vals} : {', '.join(res_types)}")
        lines.append("  }")
        return "\n".join(lines)


def module(funcs: Sequence[Func], header: str = "", target: str = "910b2") -> str:
    """The module text: `header` comment lines, then the functions."""
    parts = [header.rstrip("\n")] if header else []
    parts.append(f'module attributes {{npu.target = "{target}"}} {{')
    parts.extend(f.text() for f in funcs)
    parts.append("}")
    return "\n".join(parts) + "\n"
