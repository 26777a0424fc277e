"""The parser: scoped value names in regions, and deeply nested input.

Nesting cases build their input from the same few generators: nested
`stream.switch` scopes, nested array attributes and nested function types.
Each must parse, verify, print (custom and generic) and read back equal at
1,000 levels, and fail with a located error past `MAX_NESTING`.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, FileLineColLoc, StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.parser import Parser

import npuir
from npuir import DiagnosticError, make_context, parse_text, print_ir
from npuir.deep_stack import MAX_NESTING, on_deep_stack
from npuir.dialects.validation import PRIORITY_NEGATIVE

T = "tensor<8xf16>"


def nested_switches(depth: int) -> str:
    """A function whose body is `depth` nested `stream.switch` scopes."""
    lines = [f"func.func @f(%a: {T}) -> {T} {{"]
    for i in range(depth):
        lines.append(f'%s{i} = stream.switch "s{i % 3}" -> {T} {{')
    lines.append(f"%x = npu.neg %a : ({T}) -> {T}")
    lines.append(f"stream.yield %x : {T}")
    for i in reversed(range(depth)):
        lines.append("}")
        lines.append(f"stream.yield %s{i} : {T}" if i else f"func.return %s0 : {T}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def with_attribute(attr: str) -> str:
    return (
        f"func.func @f(%a: {T}) -> {T} attributes {{deep = {attr}}} {{\n"
        f"  func.return %a : {T}\n}}\n"
    )


def nested_arrays(depth: int) -> str:
    return with_attribute("[" * depth + "1" + "]" * depth)


def nested_function_types(depth: int) -> str:
    ty = "i32"
    for _ in range(depth):
        ty = f"({ty}) -> i32"
    return with_attribute(ty)


def round_trips(text: str) -> None:
    """`text` parses and verifies, and both printed forms read back equal."""
    ctx = make_context()
    module = parse_text(ctx, text, "deep.mlir")
    for generic in (False, True):
        printed = print_ir(module, generic=generic)
        again = parse_text(ctx, printed, "printed.mlir")
        assert on_deep_stack(module.is_structurally_equivalent, again)


def located_error(text: str) -> DiagnosticError:
    with pytest.raises(DiagnosticError) as info:
        parse_text(make_context(), text, "deep.mlir")
    return info.value


# Scoped value names


def test_values_of_a_region_are_not_visible_after_it() -> None:
    text = f"""func.func @f(%a: {T}) -> {T} {{
  %r = stream.switch "1" -> {T} {{
    %inner = npu.neg %a : ({T}) -> {T}
    stream.yield %inner : {T}
  }}
  func.return %inner : {T}
}}
"""
    err = located_error(text)
    assert err.diagnostic.message == "use of undefined value '%inner'"
    assert err.diagnostic.location is not None
    assert (err.diagnostic.location.line, err.diagnostic.location.column) == (6, 15)


def test_outer_values_are_visible_inside_and_names_can_be_reused_after_a_region() -> None:
    text = f"""func.func @f(%a: {T}) -> {T} {{
  %r = stream.switch "1" -> {T} {{
    %x = npu.neg %a : ({T}) -> {T}
    stream.yield %x : {T}
  }}
  %s = stream.switch "2" -> {T} {{
    %x = npu.neg %r : ({T}) -> {T}
    stream.yield %x : {T}
  }}
  func.return %s : {T}
}}
"""
    module = parse_text(make_context(), text)
    assert len(list(module.walk())) == 9


def test_redefining_an_outer_value_inside_a_region_is_an_error() -> None:
    text = f"""func.func @f(%a: {T}) -> {T} {{
  %r = stream.switch "1" -> {T} {{
    %a = npu.neg %a : ({T}) -> {T}
    stream.yield %a : {T}
  }}
  func.return %r : {T}
}}
"""
    err = located_error(text)
    assert "%a is already defined" in err.diagnostic.message
    assert err.diagnostic.location is not None
    assert err.diagnostic.location.line == 3


def test_a_branch_to_a_block_the_region_lacks_is_located() -> None:
    text = """func.func @f() {
  "test.br"() [^missing] : () -> ()
}
"""
    ctx = make_context(allow_unregistered=True)
    with pytest.raises(DiagnosticError) as info:
        parse_text(ctx, text, "b.mlir")
    assert info.value.diagnostic.message == "reference to an undefined block '^missing'"
    assert info.value.diagnostic.location is not None
    assert info.value.diagnostic.location.line == 2


# Deep nesting


@pytest.mark.slow
def test_a_thousand_nested_scopes_parse_verify_walk_and_print() -> None:
    module = parse_text(make_context(), nested_switches(1000), "deep.mlir")
    assert on_deep_stack(lambda: sum(1 for _ in module.walk())) == 1 + 2 * 1000 + 3
    assert print_ir(module).count("stream.switch") == 1000


def test_nested_scopes_round_trip_in_both_forms() -> None:
    round_trips(nested_switches(200))


def test_a_thousand_nested_arrays_round_trip() -> None:
    round_trips(nested_arrays(1000))


def test_a_thousand_nested_function_types_round_trip() -> None:
    round_trips(nested_function_types(1000))


@pytest.mark.parametrize("make", [nested_arrays, nested_function_types])
def test_nesting_past_the_bound_is_a_located_error(make: type[object]) -> None:
    text = make(MAX_NESTING + 5)  # type: ignore[operator]
    err = located_error(text)
    assert err.diagnostic.message == f"nesting deeper than {MAX_NESTING} levels"
    loc = err.diagnostic.location
    assert loc is not None and loc.line == 1
    # The error points into the nest, past the bound, not at the end of the input.
    assert MAX_NESTING < loc.column < len(text.splitlines()[0])


def test_regions_count_towards_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    # The real bound takes thousands of scopes to reach; the mechanism is the same.
    monkeypatch.setattr(npuir.parsing, "MAX_NESTING", 40)
    err = located_error(nested_switches(45))
    assert err.diagnostic.message == "nesting deeper than 40 levels"
    loc = err.diagnostic.location
    # The func body is the first region: the 40th scope's '{' opens the 41st.
    assert loc is not None and loc.line == 41


_DESCEND = """
import sys
from npuir.deep_stack import on_deep_stack

def descend(n):
    # Each level passes through C (map), so it costs C stack, as a call through an
    # xDSL constructor or generator does, or any Python call once a frame-evaluation
    # hook (dynamo's, after a graph break) is installed.
    return 0 if n == 0 else 1 + sum(map(descend, [n - 1]))

print(on_deep_stack(descend, int(sys.argv[1])))
"""


def test_work_on_the_deep_stack_has_the_stack_it_reserves() -> None:
    # 20,000 levels through C overflow a default 8 MiB thread stack (a SIGSEGV, hence a
    # child process), and use a fraction of the deep stack.
    done = subprocess.run(
        [sys.executable, "-c", _DESCEND, "20000"], capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout.strip()) == (0, "20000"), done.stderr


def test_work_raised_on_the_deep_stack_reaches_the_caller() -> None:
    def fail() -> None:
        raise KeyError("from the deep thread")

    with pytest.raises(KeyError, match="from the deep thread"):
        on_deep_stack(fail)


# Integers too large to read


def test_a_gear_value_beyond_64_bits_is_located_at_the_number() -> None:
    text = (
        "func.func @f(%a: tensor<?x8xf16> {gear.dims = #gear.dims<0: [18446744073709551616]>})"
        " -> tensor<?x8xf16> {\n  func.return %a : tensor<?x8xf16>\n}\n"
    )
    err = located_error(text)
    assert err.diagnostic.message == "18446744073709551616 does not fit in 64 bits"
    loc = err.diagnostic.location
    assert loc is not None and (loc.line, loc.column) == (1, text.index("1844") + 1)


@pytest.mark.parametrize(
    ("literal", "where", "limit"),
    [
        ("9" * 5000, "tensor<{}xf16>", 4300),
        ("9" * 5000, "{} : i64", 4300),
        ("9" * 4301, "{}", 4300),
        ("0x" + "f" * 3571, "{}", 3570),
    ],
)
def test_an_integer_literal_python_cannot_convert_is_located(
    literal: str, where: str, limit: int
) -> None:
    text = with_attribute(where.format(literal))
    err = located_error(text)
    digits = len(literal.removeprefix("0x"))
    assert err.diagnostic.message == (
        f"integer literal of {digits} digits is too long (at most {limit})"
    )
    loc = err.diagnostic.location
    assert loc is not None and (loc.line, loc.column) == (1, text.index(literal) + 1)


def test_an_integer_out_of_range_of_its_type_is_located_at_the_op() -> None:
    text = (
        'func.func @f() {\n  stream.switch "1" priority 99999999999999999999 {\n  }\n'
        "  func.return\n}\n"
    )
    err = located_error(text)
    assert "out of range for type i64" in err.diagnostic.message
    loc = err.diagnostic.location
    assert loc is not None and (loc.line, loc.column) == (2, 3)


def test_a_dense_float_too_large_for_its_type_is_located_at_the_attribute() -> None:
    """xDSL packs a dense float without a range check; 1e40 does not fit f16 (fuzz seed
    3838016370 found the crash)."""
    text = "func.func @f() {\n  %c = npu.constant dense<1.0e+40> : tensor<f16>\n  func.return\n}\n"
    err = located_error(text)
    assert "out of range of its element type" in err.diagnostic.message
    loc = err.diagnostic.location
    assert loc is not None and (loc.line, loc.column) == (2, text.split("\n")[1].index("dense") + 1)


def test_the_longest_convertible_literal_is_read() -> None:
    module = parse_text(make_context(), with_attribute("9" * 4300 + " : i14300"))
    assert "9" * 4300 in print_ir(module)


# Empty input, declarations, functions with several blocks


@pytest.mark.parametrize("text", ["", "\n\n", "// only a comment\n// -----\n"])
def test_empty_input_is_an_empty_module(text: str) -> None:
    module = parse_text(make_context(), text, "empty.mlir")
    assert list(module.ops) == []
    assert print_ir(module) == "builtin.module {\n}\n"


def test_an_implicit_module_is_located_at_its_first_op() -> None:
    module = parse_text(make_context(), "// header\n\n" + nested_switches(1), "m.mlir")
    loc = npuir.diagnostics.op_location(module)
    assert loc is not None and (loc.line, loc.column) == (3, 1)


def test_an_external_declaration_parses_verifies_and_prints_back() -> None:
    text = "func.func private @ext(tensor<8xf16>) -> tensor<8xf16>\n"
    module = parse_text(make_context(), text)
    assert "func.func private @ext(tensor<8xf16>) -> tensor<8xf16>" in print_ir(module)


def test_a_function_with_several_blocks_is_not_supported() -> None:
    text = "func.func @f() {\n  func.return\n^bb1:\n  func.return\n}\n"
    err = located_error(text)
    assert err.diagnostic.message.startswith(
        "'func.func' op has 2 blocks: functions with control flow between blocks are not supported"
    )
    loc = err.diagnostic.location
    assert loc is not None and (loc.line, loc.column) == (1, 1)


# Strings


def test_non_ascii_strings_read_back_as_strings() -> None:
    text = (
        f'func.func @f(%a: {T}) -> {T} attributes {{note = "é", raw = "a\\"b\\\\c\\n\\t\\01"}} {{\n'
        f'  %r = stream.switch "流" -> {T} {{\n    stream.yield %a : {T}\n  }}\n'
        f"  func.return %r : {T}\n}}\n"
    )
    ctx = make_context()
    module = parse_text(ctx, text)
    func = next(iter(module.ops))
    assert func.attributes["note"] == StringAttr("é")
    assert func.attributes["raw"] == StringAttr('a"b\\c\n\t\x01')
    round_trips(text)


def test_a_string_that_is_not_utf8_stays_bytes() -> None:
    module = parse_text(make_context(), with_attribute('"\\FF\\FE"'))
    assert next(iter(module.ops)).attributes["deep"] == BytesAttr(b"\xff\xfe")


# Location aliases as `mlir-opt --mlir-print-debuginfo` prints them

DEBUGINFO = """#loc1 = loc("model.py":3:8)
module {
  func.func @f(%arg0: tensor<8xf16> loc(#loc1)) {
    "stream.switch"() <{priority = -1 : i64, tag = "1"}> ({
      "stream.yield"() : () -> () loc(#loc4)
    }) : () -> () loc(#loc3)
    "func.return"() : () -> () loc(#loc5)
  } loc(#loc2)
} loc(#loc)
#loc = loc("model.py":1:1)
#loc2 = loc("model.py":2:3)
#loc3 = loc("model.py":42:7)
#loc4 = loc("model.py":43:9)
#loc5 = loc("model.py":44:5)
"""


def test_location_aliases_defined_after_their_use_locate_diagnostics() -> None:
    err = located_error(DEBUGINFO)
    assert err.diagnostic.kind == PRIORITY_NEGATIVE.code
    loc = err.diagnostic.location
    assert loc is not None and (loc.filename, loc.line, loc.column) == ("model.py", 42, 7)


def test_every_op_and_argument_takes_its_aliased_location() -> None:
    module = parse_text(make_context(), DEBUGINFO.replace("-1 : i64", "0 : i64"))
    locs = [str(npuir.diagnostics.op_location(op)) for op in module.walk()]
    assert locs == [
        "model.py:1:1",
        "model.py:2:3",
        "model.py:42:7",
        "model.py:43:9",
        "model.py:44:5",
    ]
    func = next(iter(module.ops))
    assert isinstance(func, FuncOp)
    arg_loc = func.body.block.args[0].location
    assert isinstance(arg_loc, FileLineColLoc) and arg_loc.line.data == 3


def test_a_location_alias_never_defined_is_located_at_its_use() -> None:
    text = DEBUGINFO.replace('#loc3 = loc("model.py":42:7)\n', "")
    err = located_error(text)
    assert err.diagnostic.message == "undefined location alias '#loc3'"
    loc = err.diagnostic.location
    assert loc is not None and (loc.line, loc.column) == (6, 23)


def constant(value: str, ty: str) -> str:
    return f"func.func @f() -> {ty} {{\n  %c = npu.constant {value} : {ty}\n  func.return %c : {ty}\n}}\n"


def constant_attr(text: str) -> DenseIntOrFPElementsAttr:
    module = parse_text(make_context(), text, "c.mlir")
    (op,) = [op for op in module.walk() if op.name == "npu.constant"]
    value = op.properties["value"]
    assert isinstance(value, DenseIntOrFPElementsAttr)
    return value


def reference_attr(text: str) -> DenseIntOrFPElementsAttr:
    attr = Parser(make_context(), text).parse_attribute()
    assert isinstance(attr, DenseIntOrFPElementsAttr)
    return attr


def test_a_splat_is_kept_as_one_element_and_prints_back() -> None:
    # xDSL would build 10^10 Python floats here.
    text = constant("dense<1.5>", "tensor<100000x100000xf32>")
    attr = constant_attr(text)
    assert len(attr.data.data) == 4 and attr.get_values() == (1.5,)
    assert "dense<1.500000e+00> : tensor<100000x100000xf32>" in print_ir(
        parse_text(make_context(), text, "c.mlir")
    )


def test_a_hex_splat_is_one_element_too() -> None:
    attr = constant_attr(constant('dense<"0x0000C03F">', "tensor<1000x1000xf32>"))
    assert attr.get_values() == (1.5,)


@pytest.mark.parametrize(
    ("literal", "ty"),
    [
        ("[[1.5, -2.0e3], [3, 0.1]]", "tensor<2x2xf32>"),
        ("[1.0, 65504.0, -0.0]", "tensor<3xf16>"),
        ("[1.0e-300, 1.0]", "tensor<2xf32>"),
        ("[[-128, 127, 0]]", "tensor<1x3xi8>"),
        ("[9223372036854775807, -9223372036854775808]", "tensor<2xi64>"),
        ("[200, 1]", "tensor<2xi8>"),  # beyond the signed range: xDSL's own reading
        ('"0x0000803F00000040"', "tensor<2xf32>"),
    ],
)
def test_dense_literals_read_as_xdsl_reads_them(literal: str, ty: str) -> None:
    mine = constant_attr(constant(f"dense<{literal}>", ty))
    assert mine.data == reference_attr(f"dense<{literal}> : {ty}").data


@pytest.mark.parametrize(
    ("literal", "ty", "message"),
    [
        ("[1.0, 1.0e39]", "tensor<2xf32>", "dense element 1e+39 is out of range of f32"),
        ("[[1.0, 2.0]]", "tensor<2x1xf32>", "Shape mismatch"),
        ("[1.0, 2.0]", "tensor<3xf32>", "Shape mismatch"),
        ('"0x00"', "tensor<3xf32>", "Shape mismatch"),
    ],
)
def test_a_dense_literal_that_does_not_fit_is_located(literal: str, ty: str, message: str) -> None:
    exc = located_error(constant(f"dense<{literal}>", ty))
    assert message in str(exc.diagnostic.message)
    assert exc.diagnostic.location is not None and exc.diagnostic.location.line == 2


def test_a_dim_beyond_int64_is_located() -> None:
    exc = located_error(constant("dense<1.0>", "tensor<1000000000000000000000000000000xf32>"))
    assert "dimension 1000000000000000000000000000000 of" in exc.diagnostic.message
    assert "out of range (at most 9223372036854775807)" in exc.diagnostic.message
