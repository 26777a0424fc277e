"""Rendering a diagnostic: the message, the source line and a caret under the column."""

from __future__ import annotations

from npuir.diagnostics import Diagnostic, SourceLocation, SourceManager


def render(line: str, column: int, message: str = "bad") -> list[str]:
    sources = SourceManager()
    sources.add("f.mlir", line + "\n")
    return (
        Diagnostic("error", message, SourceLocation("f.mlir", 1, column))
        .render(sources)
        .split("\n")
    )


def test_the_caret_sits_under_the_column() -> None:
    assert render("abc def", 5) == ["f.mlir:1:5: error: bad", "abc def", "    ^"]


def test_control_characters_are_escaped_and_the_caret_follows_the_escapes() -> None:
    assert render("a\x00b\x1bc \u200bd", 8, "got \x07") == [
        "f.mlir:1:8: error: got \\x07",
        "a\\x00b\\x1bc \\u200bd",
        " " * 18 + "^",
    ]


def test_tabs_are_kept_so_the_caret_lines_up() -> None:
    assert render("\tx = 1", 2) == ["f.mlir:1:2: error: bad", "\tx = 1", "\t^"]


def test_printable_unicode_is_shown_as_written() -> None:
    assert render('stream.switch "流"', 15)[1] == 'stream.switch "流"'
