"""The `coreset` dialect: how many cube and vector cores work may take.

Mirrors TorchAir's core limiting: `limit_core_num` becomes a `coreset.limit`
scope around operators, `set_stream_limit` a `coreset.stream_limit` on a
stream tag, and a module-wide `coreset.global` attribute the global limit.
Each count is resolved on its own (op scope > stream > global > device); an
omitted count is unlimited.  Counts are whole numbers >= 1 here; passes that
know the device check the upper bound.  After `coreset-lower` each op that uses
cores carries its effective `coreset.cores`.
"""

from __future__ import annotations

from xdsl.dialects.builtin import I64, IntegerAttr, StringAttr, i64
from xdsl.ir import Attribute, Block, Dialect, Operation, ParametrizedAttribute, Region
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    opt_prop_def,
    param_def,
    prop_def,
    traits_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, SingleBlockImplicitTerminator
from xdsl.utils.exceptions import VerifyException

from npuir.dialects import scope, validation
from npuir.dialects.attributes import AttributeVerifier, VerifiesDialectAttributes
from npuir.dialects.npu import LIMITED_ENGINES, Engine

GLOBAL = "coreset.global"
"""Module attribute holding the global limit, a `#coreset.cores`."""

CORES = "coreset.cores"
"""Op attribute written by `coreset-lower`: the op's effective limits."""

ENGINES = LIMITED_ENGINES
"""The engines a limit counts, in the order the syntax spells them."""

# A count of 0 in `#coreset.cores` stands for "not given" (unlimited); the
# syntax never spells it, and parsed counts must be >= 1.
_UNSET = 0


def _parse_counts(parser: Parser | AttrParser) -> dict[str, int]:
    """`[cube N] [vector M]`, in that order, at least one."""
    counts: dict[str, int] = {}
    for engine in ENGINES:
        if parser.parse_optional_keyword(engine) is not None:
            start = parser.pos
            number = parser.parse_optional_number()
            if isinstance(number, float):
                error = validation.ValidationError(
                    validation.CORE_COUNT_TYPE, subject=f"{engine} count", value=number
                )
                validation.refuse_parsed(parser, start, error)
            if number is None:
                number = parser.parse_integer(allow_boolean=False, allow_negative=True)
            assert isinstance(number, int)  # a float was refused above
            counts[engine] = number
    if not counts:
        parser.raise_error("expected 'cube N' and/or 'vector M'")
    return counts


NO_LIMIT = -1
"""A `coreset.stream_limit` count meaning "no limit": `set_stream_limit`'s default."""


def _check_counts(counts: dict[str, int | None], no_limit: bool = False) -> None:
    if all(v is None for v in counts.values()):
        raise VerifyException("needs at least one of 'cube' and 'vector'")
    for engine, value in counts.items():
        if value is not None:
            validation.core_count(f"{engine} count", value, engine=engine, no_limit=no_limit)


@irdl_attr_definition
class CoresAttr(ParametrizedAttribute):
    """A pair of core limits, `#coreset.cores<cube N, vector M>`.

    Either count may be omitted (unlimited), but not both.
    """

    name = "coreset.cores"

    cube: IntegerAttr[I64] = param_def()
    vector: IntegerAttr[I64] = param_def()

    def __init__(self, cube: int | None, vector: int | None) -> None:
        super().__init__(
            IntegerAttr(_UNSET if cube is None else cube, i64),
            IntegerAttr(_UNSET if vector is None else vector, i64),
        )

    @property
    def cube_count(self) -> int | None:
        value = self.cube.value.data
        return None if value == _UNSET else value

    @property
    def vector_count(self) -> int | None:
        value = self.vector.value.data
        return None if value == _UNSET else value

    def count(self, engine: str) -> int | None:
        return self.cube_count if engine == Engine.CUBE else self.vector_count

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            counts: dict[str, int] = {}
            for i, engine in enumerate(ENGINES):
                if i and counts and parser.parse_optional_punctuation(",") is None:
                    break
                if parser.parse_optional_keyword(engine) is not None:
                    start = parser.pos
                    value = parser.parse_integer(allow_boolean=False)
                    if value < 1:
                        # 0 would read back as "not given": reject it here.
                        parser.raise_error(
                            f"{engine} count must be a whole number >= 1, got {value}", start
                        )
                    counts[engine] = value
            if not counts:
                parser.raise_error("expected 'cube N' and/or 'vector M'")
        return [IntegerAttr(counts.get(e, _UNSET), i64) for e in ENGINES]

    def print_parameters(self, printer: Printer) -> None:
        parts = [f"{e} {c}" for e in ENGINES if (c := self.count(e)) is not None]
        printer.print_string("<" + ", ".join(parts) + ">")

    def verify(self) -> None:
        for engine in ENGINES:
            value = getattr(self, engine).value.data
            if value < 0:
                raise VerifyException(f"{engine} count must be a whole number >= 1, got {value}")
        if self.cube_count is None and self.vector_count is None:
            raise VerifyException("#coreset.cores needs at least one of 'cube' and 'vector'")


@irdl_op_definition
class YieldOp(scope.ScopeYieldOp):
    """Passes values out of a `coreset.limit` scope.

    ```mlir
    coreset.yield %a : tensor<3x3xf32>
    ```
    """

    name = "coreset.yield"

    traits = lazy_traits_def(lambda: (HasParent(LimitOp),))


@irdl_op_definition
class LimitOp(scope.ScopeOp):
    """Bounds the cores each op in its body may take (TorchAir's `limit_core_num`).

    Limits are lexical: a `stream.switch` nested inside keeps the limit.

    ```mlir
    %r = coreset.limit cube 6 vector 12 -> tensor<3x3xf32> {
      %a = npu.add %x, %y : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
      coreset.yield %a : tensor<3x3xf32>
    }
    ```
    """

    name = "coreset.limit"

    traits = traits_def(VerifiesDialectAttributes(), SingleBlockImplicitTerminator(YieldOp))

    cube = opt_prop_def(IntegerAttr[I64])
    vector = opt_prop_def(IntegerAttr[I64])

    def __init__(
        self,
        cube: int | None,
        vector: int | None,
        body: Region,
        result_types: list[Attribute] | None = None,
    ) -> None:
        props: dict[str, Attribute] = {}
        if cube is not None:
            props["cube"] = IntegerAttr(cube, i64)
        if vector is not None:
            props["vector"] = IntegerAttr(vector, i64)
        super().__init__(properties=props, result_types=[result_types or []], regions=[body])

    def count(self, engine: str) -> int | None:
        attr = self.cube if engine == Engine.CUBE else self.vector
        return None if attr is None else attr.value.data

    @classmethod
    def parse(cls, parser: Parser) -> LimitOp:
        counts = _parse_counts(parser)
        types = scope.parse_result_types(parser)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = scope.parse_body(parser, YieldOp)
        properties: dict[str, Attribute] = {
            engine: scope.i64_attr(count) for engine, count in counts.items()
        }
        return scope.build_parsed(cls, properties, types, attrs, body)

    def print(self, printer: Printer) -> None:
        for engine in ENGINES:
            if (value := self.count(engine)) is not None:
                printer.print_string(f" {engine} {value}")
        scope.print_tail(printer, self, self.result_types, self.body)

    def verify_(self) -> None:
        _check_counts({e: self.count(e) for e in ENGINES})
        scope.verify_scope(self)


def wrap(op: Operation, engine: str, count: int) -> LimitOp:
    """Put `op` alone in a `coreset.limit` scope giving `engine` `count` cores, in its place
    (its results' uses read the scope's); the scope takes `op`'s location.  How the passes
    that choose limits (`coreset-partition`, `stream-partition{limits=true}`) write them."""
    block = op.parent_block()
    assert block is not None
    body = Block()
    limit = LimitOp(
        count if engine == Engine.CUBE else None,
        count if engine == Engine.VECTOR else None,
        Region(body),
        [r.type for r in op.results],
    )
    limit.location = op.location
    block.insert_op_before(limit, op)
    for result, new in zip(op.results, limit.results):
        result.replace_all_uses_with(new)
    op.detach()
    body.add_op(op)
    body.add_op(YieldOp(*op.results))
    return limit


@irdl_op_definition
class StreamLimitOp(IRDLOperation):
    """Bounds the cores of every op on one stream (TorchAir's `set_stream_limit`).

    In a graph it holds for the whole function, for the stream with that tag.  A count
    of -1 (`NO_LIMIT`, `set_stream_limit`'s default) means no limit for that engine.

    ```mlir
    coreset.stream_limit "1" cube 3 vector 8
    coreset.stream_limit "2" cube -1 vector 8
    ```
    """

    name = "coreset.stream_limit"

    traits = traits_def(VerifiesDialectAttributes())

    tag = prop_def(StringAttr)
    cube = opt_prop_def(IntegerAttr[I64])
    vector = opt_prop_def(IntegerAttr[I64])

    assembly_format = "$tag (`cube` $cube^)? (`vector` $vector^)? attr-dict"

    def __init__(self, tag: str, cube: int | None, vector: int | None) -> None:
        props: dict[str, Attribute] = {"tag": StringAttr(tag)}
        if cube is not None:
            props["cube"] = IntegerAttr(cube, i64)
        if vector is not None:
            props["vector"] = IntegerAttr(vector, i64)
        super().__init__(properties=props)

    def count(self, engine: str) -> int | None:
        """The count as written (-1 for no limit), None when omitted."""
        attr = self.cube if engine == Engine.CUBE else self.vector
        return None if attr is None else attr.value.data

    def limit(self, engine: str) -> int | None:
        """The limit this op sets for `engine`: None when omitted or -1 (no limit)."""
        count = self.count(engine)
        return None if count == NO_LIMIT else count

    def verify_(self) -> None:
        if self.tag.data != validation.MAIN_STREAM:  # the main stream may be limited too
            validation.stream_tag(self.tag.data)
        _check_counts({e: self.count(e) for e in ENGINES}, no_limit=True)


class CoresetAttributeVerifier(AttributeVerifier):
    """`coreset.global` (on the module) and `coreset.cores` (on an op) hold a `#coreset.cores`."""

    def verify_operation_attribute(self, op: Operation, name: str, value: Attribute) -> None:
        if name in (GLOBAL, CORES) and not isinstance(value, CoresAttr):
            raise VerifyException(f"'{name}' must be a #coreset.cores attribute, got {value}")


Coreset = Dialect(
    "coreset", [LimitOp, YieldOp, StreamLimitOp], [CoresAttr], [CoresetAttributeVerifier()]
)
