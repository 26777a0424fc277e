"""The one input loader: `npuir.load(path_or_stream)` reads any program npuir takes.

Every tool and the library read their input here, so that one file means one thing
wherever it is given.  The format is judged by content, never by the file name:

- a zip archive (`PK\\x03\\x04`) is a `torch.export` archive (`.pt2`, needs `npuir[torch]`);
- text whose first statement is a protobuf-text message (`graph {`, `op {`, `node {`,
  `name:` ...) is a GE / TorchAir graph dump (`npuir.frontends.ge`);
- anything else is MLIR, in npuir's custom syntax or the generic form.

`read(path_or_stream)` reads the bytes once and names the format (`Source`), `load_source`
turns a `Source` into a verified module, and `load` does both.  A file that cannot be read,
is not UTF-8 (for the text formats) or does not parse is a located `DiagnosticError`.  An
archive is read as data, without PyTorch.
"""

from __future__ import annotations

import enum
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from xdsl.dialects.builtin import ModuleOp

from npuir.context import NpuirContext, make_context
from npuir.diagnostics import INPUT_ERROR, Diagnostic, DiagnosticError
from npuir.parsing import decode_source, parse_module
from npuir.verifier import verify

__all__ = [
    "Format",
    "Source",
    "detect",
    "load",
    "load_source",
    "parse_file",
    "read",
    "source_of_text",
]

_ZIP_MAGIC = b"PK\x03\x04"

# Dumps start with one of these at the top level (after comments); .mlir cannot.
_DUMP_START = re.compile(
    r"\A(?:\s|#[^\n]*\n)*(?:(?:graph|op|node|attr)\s*:?\s*[{<]|(?:name|version)\s*:)"
)


def looks_like_dump(text: str) -> bool:
    """Whether `text` is a GE / TorchAir text dump rather than MLIR (judged by content)."""
    return _DUMP_START.match(text[:4096]) is not None


class Format(enum.Enum):
    """What an input file holds."""

    MLIR = "mlir"
    GE_DUMP = "ge-dump"
    PT2 = "pt2"


@dataclass(frozen=True)
class Source:
    """An input read once: its name for diagnostics, its bytes, and its format."""

    filename: str
    data: bytes
    format: Format

    def text(self, ctx: NpuirContext) -> str:
        """The decoded text of a text format (bad UTF-8 is a located error); `ctx`'s
        source manager learns it, so diagnostics can show the offending line."""
        text = decode_source(self.data, self.filename, ctx.diagnostics.sources)
        ctx.diagnostics.sources.add(self.filename, text)
        return text


def detect(data: bytes) -> Format:
    """The format of an input, judged by its content."""
    if data.startswith(_ZIP_MAGIC):
        return Format.PT2
    head = data[:4096].decode("utf-8", errors="replace")
    return Format.GE_DUMP if looks_like_dump(head) else Format.MLIR


def read(path_or_stream: str | Path | BinaryIO) -> Source:
    """Read an input: a path, `-` for standard input, or a binary stream."""
    if isinstance(path_or_stream, str | Path):
        name = str(path_or_stream)
        if name == "-":
            return _source("<stdin>", sys.stdin.buffer.read())
        try:
            with open(name, "rb") as f:
                return _source(name, f.read())
        except OSError as exc:
            raise DiagnosticError(
                Diagnostic.of(
                    "error",
                    INPUT_ERROR,
                    None,
                    action="read",
                    path=name,
                    reason=str(exc.strerror or exc),
                )
            ) from None
    stream_name = getattr(path_or_stream, "name", None)
    return _source(
        stream_name if isinstance(stream_name, str) else "<stream>", path_or_stream.read()
    )


def _source(filename: str, data: bytes) -> Source:
    return Source(filename, data, detect(data))


def source_of_text(filename: str, text: str) -> Source:
    """A `Source` for text already in memory (IR a pass or a tool produced)."""
    return _source(filename, text.encode("utf-8"))


def load_source(
    source: Source,
    ctx: NpuirContext | None = None,
    *,
    graph: str | None = None,
    strict: bool = False,
    verify_module: bool = True,
) -> ModuleOp:
    """The module `source` holds.  Warnings (a dump's unmapped op types, ...) go to
    `ctx.diagnostics`; `graph` picks a graph of a multi-graph GE dump; `strict` refuses
    what an importer would only warn about.  MLIR is verified unless `verify_module` is
    false (the importers always verify what they build)."""
    ctx = ctx if ctx is not None else make_context()
    if source.format is Format.PT2:
        return _load_pt2(source, ctx, strict)
    text = source.text(ctx)
    if source.format is Format.GE_DUMP:
        # The dump reader (lark and its grammar) is loaded only for a dump.
        from npuir.frontends.ge import import_text

        result = import_text(ctx, text, source.filename, graph, strict)
        for warning in result.warnings:
            ctx.diagnostics.add(warning)
        return result.module
    module = parse_module(ctx, text, source.filename, ctx.diagnostics.sources)
    if verify_module:
        verify(module)
    return module


def state_arrays(source: Source) -> dict[str, Any]:
    """The parameters, buffers and lifted constants a `.pt2` source holds, by the names
    `torch.state` gives on its imported arguments (read as data, `npuir.frontends.pt2`);
    empty for every other format: there every argument is an input."""
    if source.format is not Format.PT2:
        return {}
    from npuir.frontends.pt2 import read_pt2

    archive = read_pt2(source.filename, data=source.data)
    return {**archive.weights, **archive.constants}


def load(
    path_or_stream: str | Path | BinaryIO,
    ctx: NpuirContext | None = None,
    *,
    graph: str | None = None,
    strict: bool = False,
) -> ModuleOp:
    """Read and load an input in one step: a verified module, whatever the format."""
    return load_source(read(path_or_stream), ctx, graph=graph, strict=strict)


def parse_file(ctx: NpuirContext, path: str | Path) -> ModuleOp:
    """`npuir.parse_file`: `load(path, ctx)` (kept under the name the library has always had)."""
    return load(path, ctx)


def _load_pt2(source: Source, ctx: NpuirContext, strict: bool) -> ModuleOp:
    # The archive is read and checked as data (`npuir.frontends.pt2`: no pickle, no
    # evaluated string, no zip bomb) and its program walked as plain nodes
    # (`npuir.frontends.pt2_graph`): no tool needs torch to read it.
    from npuir.frontends.pt2 import read_pt2
    from npuir.frontends.torch import import_pt2

    archive = read_pt2(source.filename, data=source.data)
    return import_pt2(archive, strict=strict, diagnostics=ctx.diagnostics)
