"""The private xDSL names npuir depends on, and a check that the installed xDSL has them.

npuir reads IR with its own subclasses of xDSL's parser and lexer
(`npuir.parsing`): to stamp every op with its `file:line:col`, to parse MLIR's
top level (aliases, file metadata) with its own error messages, and to lex
string literals in linear time.  Those subclasses override or call names xDSL
does not publish, so npuir pins `xdsl` to the range it is tested with
(`TESTED`, pyproject.toml) and lists every such name here.  A test
(test/unit/test_xdsl_private.py) checks that the installed xDSL still has
each one and that the list names every private name `npuir.parsing` uses, so
moving to a new xDSL fails with a message naming what to port, never with an
`AttributeError` in the middle of a parse.
"""

from __future__ import annotations

import importlib
from importlib.metadata import version

__all__ = ["PRIVATE", "TESTED", "missing"]

TESTED = (0, 74)
"""The xDSL release series npuir is tested with: pyproject.toml asks for `xdsl>=0.74,<0.75`."""

PRIVATE: dict[str, dict[str, str]] = {
    "xdsl.parser.Parser": {
        "_current_token": "the top-level loop peeks at the next token",
        "_parse_alias_def": "the top level parses `#alias = ...` definitions",
        "_parse_file_metadata_dictionary": "the top level parses `{-# ... #-}` metadata",
        "_parse_block": "regions with several blocks",
        "_parse_block_body": "a region's entry block",
        "_register_ssa_definition": "overridden: remembers the names each region defines",
        "_get_op_by_name": "overridden: an unknown op name is located at the name",
        "_resume_from": "skipping over a `loc(#alias)` whose alias comes later",
        "_parse_tensor_literal_element": "a dense splat's one element, before its type",
        "_parse_dense_literal_type": "a dense literal's type, read before its elements",
        "ssa_values": "Parser.__init__ state, set by LocatingParser.__init__",
        "blocks": "Parser.__init__ state, set by LocatingParser.__init__",
        "forward_block_references": "Parser.__init__ state, set by LocatingParser.__init__",
        "forward_ssa_references": "Parser.__init__ state, set by LocatingParser.__init__",
    },
    "xdsl.utils.mlir_lexer.MLIRLexer": {
        "_lex_string_literal": "overridden: a UTF-8 escaped literal is a string, not bytes",
        "_unescaped_characters_regex": "replaced by a pattern that cannot backtrack",
    },
    "xdsl.parser.generic_parser": {
        "ParserState": "LocatingParser builds the parser state around its own lexer",
    },
}
"""Where each private name lives (a class or module), and what npuir uses it for."""


def _parser_instance_names() -> set[str]:
    """The attributes an xDSL `Parser` sets up when constructed (`ssa_values`, ...)."""
    from xdsl.context import Context
    from xdsl.parser import Parser

    return set(vars(Parser(Context(), "")))


def _lookup(owner: str) -> object | None:
    module, _, attr = owner.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        pass
    try:
        return importlib.import_module(owner)
    except ImportError:
        return None


def missing() -> list[str]:
    """Each listed name the installed xDSL lacks, as `owner.name (what npuir uses it for)`."""
    gone: list[str] = []
    instance = _parser_instance_names()
    for owner, names in PRIVATE.items():
        found = _lookup(owner)
        for name, use in names.items():
            present = found is not None and (
                hasattr(found, name) or (owner == "xdsl.parser.Parser" and name in instance)
            )
            if not present:
                gone.append(f"{owner}.{name} ({use})")
    return gone


def installed() -> str:
    """The installed xDSL's version."""
    return version("xdsl")
