"""Stage one of the GE importer: the protobuf text grammar and its located messages."""

from __future__ import annotations

import pytest

from npuir.diagnostics import PARSE_ERROR, DiagnosticError
from npuir.frontends.protobuf_text import Ident, Message, parse, unescape


def test_fields_keep_order_location_and_repeats() -> None:
    msg = parse('name: "g"\nop {\n  input: "a:0"\n  input: "b:1"\n}\nop: { }\n', "d.txt")
    assert msg.get("name") == "g"
    ops = list(msg.messages("op"))
    assert [(o.line, o.column) for o in ops] == [(2, 1), (6, 1)]
    assert ops[0].all("input") == ["a:0", "b:1"]
    assert ops[0].entries("input")[1].line == 4
    assert ops[1].fields == {}


def test_scalars_enums_numbers_and_short_repeated_form() -> None:
    msg = parse("a: DT_FLOAT16 b: -3 c: 1.5e-3 d: 0x1F e: true f: [1, -2] g: -inf h: 2.0f", "x")
    assert isinstance(msg.get("a"), Ident) and msg.get("a") == "DT_FLOAT16"
    assert msg.get("b") == -3 and msg.get("c") == pytest.approx(1.5e-3)
    assert msg.get("d") == 31 and msg.get("e") == "true"
    assert msg.all("f") == [1, -2]
    assert msg.get("g") == float("-inf") and msg.get("h") == 2.0


def test_angle_brackets_separators_and_comments() -> None:
    msg = parse("# a comment\nm < x: 1; y: 2, > n { }", "x")
    inner = msg.get("m")
    assert isinstance(inner, Message) and inner.get("y") == 2


def test_strings_escapes_and_concatenation() -> None:
    msg = parse(r"""s: "a\n\"b\"" t: 'it\'s' u: "\101\x42" "C" """, "x")
    assert msg.get("s") == 'a\n"b"'
    assert msg.get("t") == "it's"
    assert msg.get("u") == "ABC"
    assert unescape(r"\\n") == "\\n"


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("op {\n  name: 1\n", "d.txt:3:1", "a message is not closed with '}'"),
        ('op {\n  name: "x\n}', "d.txt:2:9", "a string is not closed on its line"),
        ("op {\n  a: b: c\n}", "d.txt:2:7", "unexpected ':'"),
        ("}", "d.txt:1:1", "unexpected '}'"),
        ("a: [1,", "d.txt:1:7", "unexpected end of input; expected"),
        ("a: 1 \x01", "d.txt:1:6", "unexpected byte 0x01"),
    ],
)
def test_syntax_errors_are_located(text: str, where: str, message: str) -> None:
    with pytest.raises(DiagnosticError) as info:
        parse(text, "d.txt")
    rendered = info.value.diagnostic.render()
    assert rendered.startswith(f"{where}: error: "), rendered
    assert message in rendered


def test_where_an_identifier_stands_says_what_it_is() -> None:
    # A field name may be followed by its ':' after a comment or a line break; `[x]`
    # after ':' is a one-value list, before it an extension's field name; a value may
    # be named like a field.
    msg = parse("a # c\n : 1\nb: [x]\n[ext.f]: 2\nc: op\nop { d: [e, -f] }", "x")
    assert msg.get("a") == 1 and msg.entries("a")[0].line == 1
    assert msg.all("b") == ["x"] and isinstance(msg.get("b"), Ident)
    assert msg.get("[ext.f]") == 2
    assert msg.get("c") == "op"
    inner = msg.get("op")
    assert isinstance(inner, Message) and inner.all("d") == ["e", "-f"]


def test_separators_end_fields_once() -> None:
    assert parse("a: 1, b: 2; c { }, d: [1, 2];", "x").get("d") is not None
    for text, column in (("a: 1,, b: 2", 6), (", a: 1", 1)):
        with pytest.raises(DiagnosticError) as info:
            parse(text, "d.txt")
        diagnostic = info.value.diagnostic
        assert diagnostic.kind == PARSE_ERROR.code
        assert diagnostic.location is not None
        assert (diagnostic.location.line, diagnostic.location.column) == (1, column)


def test_adjacent_strings_across_lines_and_comments_keep_later_locations() -> None:
    msg = parse('s: "a" # "not a string\n  "b"\nt: 1', "x")
    assert msg.get("s") == "ab"
    assert msg.entries("t")[0].line == 3


def test_a_long_string_and_deep_indentation_read_whole() -> None:
    # Every token's pattern runs without backtracking: a 1 MB string and a 10k-space
    # indent read in time and memory linear in them.
    long = "x" * 1_000_000
    msg = parse(f'{" " * 10_000}s: "{long}"\n{" " * 10_000}t: 2', "x")
    assert msg.get("s") == long and msg.entries("t")[0].column == 10_001


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            "a {\n  i: " + "9" * 5000 + "\n}",
            "t.txt:2:6",
            "integer of 5000 digits is too long (at most 4300)",
        ),
        ("a {\n  i: 0x" + "f" * 4400 + "\n}", "t.txt:2:6", "integer of 4400 digits is too long"),
        ("f: 1e999999", "t.txt:1:4", "number 1e999999 is out of range of a double (at most 1.79"),
        # A syntax error after the number: lark reads the text, with the same refusal.
        ("f: -1.5e400 }", "t.txt:1:4", "number -1.5e400 is out of range of a double"),
    ],
)
def test_a_number_beyond_python_s_is_a_located_error(text: str, where: str, message: str) -> None:
    with pytest.raises(DiagnosticError) as info:
        parse(text, "t.txt")
    rendered = info.value.diagnostic.render()
    assert rendered.startswith(where), rendered
    assert message in rendered, rendered


def test_inf_spelled_out_is_still_infinity() -> None:
    assert parse("f: inf g: -inf", "t.txt").get("g") == float("-inf")


def test_the_fast_reader_and_lark_build_the_same_messages() -> None:
    from npuir.frontends import protobuf_text

    text = (
        "a: [1, 2, \"x\" 'y'] b: [] c { d: -inf e: 3; } f < g: 0x1F, > h: 1.5e3f # c\n"
        " i: true j: [a, b] k: { l: 'm' }"
    )
    fast = protobuf_text._read_fast(text)
    assert fast == protobuf_text._parser().parse(text)
    assert [type(v) for v in fast.all("j")] == [Ident, Ident]


def test_repeated_blocks_read_once_keep_their_own_positions() -> None:
    # A block met a third time is placed on the template read the second time: the same
    # messages as lark builds, every position its own (a block opening mid-line, one
    # spread over lines, one nested in another, a separator after one).
    from npuir.frontends import protobuf_text

    block = 'd { name: "y" s { dim: 2\n dim: 3 } a { k: "x" v { i: 1 } } }'
    text = "".join(
        f"op {{ n: {i}{' ' * i} {block}{';' if i % 2 else ''}\n  {block}\n}}\n" for i in range(5)
    )
    fast = protobuf_text._read_fast(text, share=True)
    assert fast == protobuf_text._parser().parse(text)
    placed = [d for op in fast.messages("op") for d in op.messages("d")]
    assert sum(d.text_key() is not None for d in placed) >= 6
    assert len({id(d.text_key()) for d in placed if d.text_key() is not None}) == 1
    last = placed[-1]
    assert (last.line, last.column) == (text.count("\n") - 2, 3)
    dims = last.get("s").entries("dim")
    assert [(e.line, e.column) for e in dims] == [(last.line, 21), (last.line + 1, 2)]


def test_a_bad_number_in_a_repeated_block_is_located() -> None:
    block = "d { s { dim: 2 } }"
    text = f"op {{ {block} }}\n" * 3 + "op { d { s { dim: 9" + "9" * 5000 + " } } }\n"
    with pytest.raises(DiagnosticError) as info:
        parse(text, "t.txt")
    location = info.value.diagnostic.location
    assert location is not None
    assert (location.line, location.column) == (4, 19)
