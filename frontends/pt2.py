"""Reading a `torch.export` archive (`.pt2`) as data, never as code.

`torch.export.load` unpickles parts of an archive with `weights_only=False`
(weights marked `use_pickle`, tensor constants, torchbind and opaque objects,
and a fallback when the safe load of the sample inputs fails), and torch's JSON
deserializer hands every symbolic-shape string to `sympy.sympify`, which
evaluates it.  A crafted `.pt2` could therefore run code on the machine of
whoever imports it.  This module reads the archive itself:

- the zip directory, checked before anything is read: at most `MAX_ENTRIES`
  entries, a JSON entry at most `MAX_JSON_BYTES`, no compressed entry that
  expands more than `MAX_RATIO` times (a zip bomb), and weights that fit the
  host's available memory (refused up front, naming the size);
- `archive_format` (must be `pt2`) and `byteorder` (must be `little`);
- the serialized program `models/<name>.json`, parsed as JSON after a check
  that no bracket nests deeper than `MAX_JSON_DEPTH` (deeper JSON would
  exhaust the C stack of the JSON parser); every `expr_str` (a symbolic
  shape) must be arithmetic over shape symbols (`s0`, `u3`, ...) and torch's
  shape functions (sympy's `Symbol('s0', integer=True)` spelling of a bare
  symbol is read as its name), every node `target` an operator name of the shape
  `torch.ops.NS.OP[.OVERLOAD]`, `_operator.NAME` or `math.NAME` that torch's
  `getattr` walk cannot turn into a Python attribute (`_target_problem`; ATen's
  dunder operators such as `__and__` are operators), and every range-constraint
  key a shape symbol; `guards_code` (Python source) is dropped unread;
- the weights and tensor constants named by `data/weights/<name>_weights_config.json`
  and `data/constants/<name>_constants_config.json`: each a raw little-endian
  payload with its dtype, sizes, strides and storage offset, read with numpy.

Refused, each with a message naming the entry (`ARCHIVE/ENTRY:1:COL: error:`
at the entry's key): every entry marked `use_pickle`, legacy pickled weight
or constant files, torchbind (`custom_obj_*`) and opaque (`opaque_obj_*`)
constants, sparse layouts, symbolic weight sizes, and payloads shorter than
their tensor.  Never read: `data/sample_inputs/` (a pickle torch writes into
every archive; npuir makes its own inputs), `extra/`, AOTInductor and
ExecuTorch payloads.  Nothing here imports torch; `exported_program` (which
needs it) rebuilds the `ExportedProgram` from the checked JSON with the weights
as tensors and no sample inputs, so torch never unpickles or evaluates
anything of the archive.
"""

from __future__ import annotations

import io
import json
import re
import types
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ml_dtypes
import numpy as np

from npuir.diagnostics import INPUT_ERROR, Diagnostic, DiagnosticError, Kind, SourceLocation
from npuir.frontends.protobuf_text import MAX_DIGITS, TOO_LONG
from npuir.frontends.pt2_graph import plain_expression
from npuir.host import available_bytes, gib
from npuir.nesting import MAX_DATA_DEPTH, bracket_depth

if TYPE_CHECKING:
    import torch

__all__ = [
    "MAX_ENTRIES",
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_RATIO",
    "Pt2Archive",
    "exported_program",
    "read_pt2",
]

# An archive whose layout or JSON is not what torch.export.save writes: `pt2.invalid.<what>`.
NO_ARCHIVE_FORMAT = Kind(
    "pt2.invalid.no-archive-format",
    "not a torch.export archive: it has no 'archive_format' entry",
)
"""A zip without the `archive_format` entry every torch.export archive has."""
NOT_PT2 = Kind("pt2.invalid.archive-format", "archive_format is not 'pt2'")
"""An `archive_format` entry that names another format."""
BIG_ENDIAN = Kind("pt2.invalid.byteorder", "only little-endian archives are read")
"""A big-endian archive."""
MISSING_ENTRY = Kind("pt2.invalid.missing-entry", "the archive has no entry '{entry}'")
"""An entry the archive's layout needs; argument: `entry`."""
UNREADABLE_ENTRY = Kind("pt2.invalid.unreadable-entry", "cannot read the entry: {reason}")
"""An entry the zip reader cannot inflate; argument: `reason` (the zip reader's)."""
NOT_UTF8 = Kind("pt2.invalid.not-utf8", "the entry is not UTF-8 ({reason} at byte {byte})")
"""A JSON entry that is not UTF-8; arguments: `reason`, `byte`."""
BAD_JSON = Kind("pt2.invalid.json", "invalid JSON: {reason}")
"""A JSON entry that does not parse; argument: `reason` (the JSON parser's)."""
NO_CONFIG = Kind("pt2.invalid.no-config", "the payload config has no 'config' object")
"""A weights or constants config without its `config` object."""
NO_DESCRIPTION = Kind(
    "pt2.invalid.no-payload-description", "{what} '{fqn}' has no payload description"
)
"""A tensor whose config entry is no object; arguments: `what` ("weight" or "constant"),
`fqn`."""
NO_PAYLOAD = Kind("pt2.invalid.no-payload", "{what} '{fqn}' names no payload in the archive")
"""A tensor whose payload the archive does not hold; arguments: `what`, `fqn`."""
NO_TENSOR_META = Kind("pt2.invalid.no-tensor-meta", "{what} '{fqn}' has no tensor_meta")
"""A tensor without `tensor_meta`; arguments: `what`, `fqn`."""
BAD_DTYPE = Kind("pt2.invalid.dtype", "{what} '{fqn}' has dtype {dtype}, which npuir does not read")
"""A tensor of a dtype npuir does not read; arguments: `what`, `fqn`, `dtype` (as written)."""
NOT_STRIDED = Kind("pt2.invalid.layout", "{what} '{fqn}' is not a strided (dense) tensor")
"""A sparse or otherwise non-strided tensor; arguments: `what`, `fqn`."""
BAD_SIZES = Kind("pt2.invalid.sizes", "{what} '{fqn}' has symbolic or malformed sizes/strides")
"""A tensor whose sizes or strides are not integers, or not as many; arguments: `what`,
`fqn`."""
NEGATIVE_SIZES = Kind(
    "pt2.invalid.negative-sizes", "{what} '{fqn}' has negative sizes, strides or offset"
)
"""A tensor with a negative size, stride or offset (or more than 64 dims); arguments:
`what`, `fqn`."""
SHORT_PAYLOAD = Kind(
    "pt2.invalid.short-payload",
    "{what} '{fqn}' needs {needed} elements of its payload '{payload}', which holds {elements}",
)
"""A tensor reaching past its payload; arguments: `what`, `fqn`, `needed`, `payload`,
`elements`."""
NO_GRAPH_MODULE = Kind(
    "pt2.invalid.no-graph-module", "the serialized program has no 'graph_module'"
)
"""A program without its graph module."""
BAD_RANGE_CONSTRAINTS = Kind("pt2.invalid.range-constraints", "range_constraints is not an object")
"""A program whose `range_constraints` is no object."""
NO_PROGRAM = Kind("pt2.invalid.no-program", "the archive holds no program (models/*.json)")
"""An archive without a program."""
SEVERAL_PROGRAMS = Kind(
    "pt2.invalid.several-programs",
    "the archive holds several programs ({models}); npuir reads one",
)
"""An archive with several programs and none named `model`; argument: `models`."""
TORCH_REBUILD = Kind("pt2.invalid.torch-rebuild", "torch cannot rebuild the program: {reason}")
"""torch's deserializer refuses a program the checks let through; argument: `reason`."""

# A pickled entry, or a string torch would evaluate: refused, never read
# (`pt2.unsafe-entry.<what>`).
PICKLED_TENSOR = Kind(
    "pt2.unsafe-entry.pickle",
    "{what} '{fqn}' is stored as a pickle ('{name}', use_pickle), which can run code when "
    "loaded; npuir reads only raw tensor payloads from a .pt2 and refuses it (re-export the "
    "model with plain tensors)",
)
"""A tensor stored with `use_pickle`; arguments: `what`, `fqn`, `name` (its payload)."""
PICKLED_OBJECT = Kind(
    "pt2.unsafe-entry.pickled-object",
    "{what} '{fqn}' is a pickled object ('{name}'), which can run code when loaded; npuir "
    "reads only raw tensor payloads from a .pt2 and refuses it",
)
"""A custom or opaque object (a pickle); arguments: `what`, `fqn`, `name`."""
LEGACY_PICKLE = Kind(
    "pt2.unsafe-entry.legacy-pickle",
    "the weights or constants are one pickle (the legacy format), which can run code when "
    "loaded; npuir refuses it (re-save with a current torch.export.save)",
)
"""Weights or constants saved as one pickle (older torch.export.save)."""
LONG_EXPRESSION = Kind(
    "pt2.unsafe-entry.long-expression",
    "a shape expression of {length} characters; refused (torch would evaluate it)",
)
"""A shape expression longer than any torch writes; argument: `length`."""
NOT_ARITHMETIC = Kind(
    "pt2.unsafe-entry.not-arithmetic",
    "shape expression {expression} has {rest}, which is not arithmetic; refused (torch would "
    "evaluate it)",
)
"""A shape expression with more than arithmetic; arguments: `expression`, `rest` (quoted,
cut short)."""
NOT_A_SYMBOL = Kind(
    "pt2.unsafe-entry.not-a-symbol",
    "shape expression {expression} names '{name}', which is no shape symbol; refused (torch "
    "would evaluate it)",
)
"""A shape expression naming something other than a shape symbol or function; arguments:
`expression`, `name`."""
EXPRESSION_NOT_TEXT = Kind(
    "pt2.unsafe-entry.expression-not-text",
    "a shape expression is not text; refused (torch would evaluate it)",
)
"""An `expr_str` that is not a string."""
BAD_TARGET = Kind(
    "pt2.unsafe-entry.target",
    "node target '{target}' is not an operator name ({why}); npuir reads "
    "torch.ops.NAMESPACE.OP[.OVERLOAD], _operator.NAME and math.NAME",
)
"""A node target that names no operator; arguments: `target` (cut short), `why`."""
BAD_CONSTRAINT = Kind(
    "pt2.unsafe-entry.range-constraint", "range constraint '{name}' is not a shape symbol"
)
"""A range constraint keyed by something other than a shape symbol; argument: `name`."""

# An input that would take more than it may: `input.too-large.<what>`.
TOO_MANY_ENTRIES = Kind(
    "input.too-large.entries", "the archive has {entries} entries, more than {limit}"
)
"""An archive with more entries than `MAX_ENTRIES`; arguments: `entries`, `limit`."""
ZIP_BOMB = Kind(
    "input.too-large.zip-bomb",
    "entry '{entry}' expands from {compressed} to {size} bytes (over {ratio}x: a zip bomb); "
    "refused unread",
)
"""A compressed entry expanding past `MAX_RATIO`; arguments: `entry`, `compressed`,
`size`, `ratio`."""
ENTRY_TOO_LARGE = Kind("input.too-large.entry", "entry is {size} bytes, more than {limit}")
"""An entry beyond the size its role allows; arguments: `size`, `limit`."""
BEYOND_HOST = Kind(
    "input.too-large.host-memory",
    "the {what}s take {total}, more than the {available} this host has available; refused "
    "before reading",
)
"""Tensors that would not fit the host's memory; arguments: `what`, `total` and
`available` (readable sizes), `bytes` and `available_bytes` (byte counts)."""
INPUT_TOO_DEEP = Kind(
    "input.too-deep", "JSON nested more than {limit} levels deep (torch writes about 12)"
)
"""Data nested deeper than `npuir.nesting.MAX_DATA_DEPTH`; argument: `limit`."""

MAX_ENTRIES = 100_000
"""Entries an archive may hold (torch writes a dozen plus one per weight)."""

MAX_JSON_BYTES = 256 * 1024 * 1024
"""The largest JSON entry read (a 100k-node program serializes to about 60 MB)."""

MAX_JSON_DEPTH = MAX_DATA_DEPTH
"""How deeply brackets may nest in a JSON entry (`npuir.nesting`): torch's own JSON nests
about 12 levels; at 100k levels Python's JSON parser overflows the C stack."""

MAX_RATIO = 100
"""The most a compressed entry may expand (torch stores its entries uncompressed)."""

MAX_SAMPLE_BYTES = 64 * 1024 * 1024
"""The most of the sample-inputs entry read (to find `set_dim_gears` marks in it)."""

# torch._export.serde.schema.ScalarType -> numpy dtype (complex and fp8 are not read).
_DTYPES: dict[int, np.dtype[Any]] = {
    1: np.dtype(np.uint8),
    2: np.dtype(np.int8),
    3: np.dtype(np.int16),
    4: np.dtype(np.int32),
    5: np.dtype(np.int64),
    6: np.dtype(np.float16),
    7: np.dtype(np.float32),
    8: np.dtype(np.float64),
    12: np.dtype(np.bool_),
    13: np.dtype(ml_dtypes.bfloat16),
    28: np.dtype(np.uint16),
    34: np.dtype(np.uint32),
    35: np.dtype(np.uint64),
}
_STRIDED = 7  # schema.Layout.Strided

# Symbols torch's ShapeEnv makes (s0, u3, zuf0, ...) and the functions its shape
# expressions use; nothing else may appear in an expression sympy will evaluate.
_SYMBOL = re.compile(r"[a-z]{1,4}[0-9]{1,6}")
_SHAPE_FUNCTIONS = frozenset(
    """FloorDiv ModularIndexing Where PythonMod Mod CleanDiv CeilToInt FloorToInt CeilDiv
    LShift RShift PowByNatural FloatPow TruncToFloat TruncToInt IntTrueDiv FloatTrueDiv
    ToFloat RoundToInt RoundDecimal Identity IsNonOverlappingAndDenseIndicator
    BitwiseFn_bitwise_and BitwiseFn_bitwise_or Max Min Eq Ne Le Lt Ge Gt And Or Not Abs
    floor ceiling sqrt oo int_oo True False
    Add Mul Pow Integer Rational Equality Unequality StrictLessThan LessThan
    StrictGreaterThan GreaterThan true false""".split()
)
"""torch's shape functions, and the sympy classes `srepr` spells expressions with (torch
2.13 writes `Mul(Integer(64), Symbol('s70', positive=True, integer=True))`): each a
constructor of numbers and symbols, which sympify evaluates to the same expression."""
_EXPR_TOKEN = re.compile(
    r"\s*(?:([A-Za-z_][A-Za-z0-9_]*)|([0-9]+(?:\.[0-9]+)?(?:e[-+]?[0-9]+)?)|"
    r"(\*\*|//|==|!=|<=|>=|[-+*/%(),<>&|~^]))"
)
_MAX_EXPR = 10_000
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PRIVATE_NAMESPACES = frozenset(
    {"_c10d_functional", "_c10d_functional_autograd", "_quantized", "_inductor_test"}
)
"""The `torch.ops` namespaces with a leading underscore that torch itself registers (its
collectives); every other namespace is a public name (`aten`, `prims`, `air`, `npu`, a
library's own such as `transformers`)."""
_OPS_ATTRIBUTES = frozenset({"load_library", "import_module", "loaded_libraries"})
"""What `torch.ops` holds besides namespaces: a target under one of these would call it."""
_PYTHON_ATTRIBUTES = frozenset(
    {
        *dir(types.ModuleType),
        *dir(types.FunctionType),
        *vars(types.ModuleType("namespace")),
        "__dict__",
        "__getattr__",
        "__builtins__",
        "__globals__",
        "__path__",
        "__file__",
        "__all__",
        "__wrapped__",
        "__self__",
        "__func__",
    }
)
"""Names every Python module, function or class answers with an attribute of its own.
torch's deserializer resolves a target with `getattr` one name at a time, so a target such
as `torch.ops.aten.__class__.__init__` would reach Python internals, never an operator;
ATen's own dunder operators (`__and__`, `__lshift__`, ...) are none of these names."""


STATE_ATTR = "torch.state"
"""On an imported argument that is a parameter, buffer or lifted constant: its name among
the archive's weights and constants (`gate.weight`).  A run of the `.pt2` takes its value
from the archive (`npuir.frontends.load.state_arrays`); it is not an input."""


@dataclass
class Pt2Archive:
    """What npuir reads of a `.pt2`: the checked program JSON and the tensors as numpy."""

    path: str
    model: str
    """The model's name in the archive (`models/<model>.json`)."""
    program: dict[str, Any]
    """The serialized `ExportedProgram` (torch's schema), with `guards_code` dropped."""
    weights: dict[str, np.ndarray[Any, Any]] = field(default_factory=dict)
    """Parameters and buffers by fully qualified name (read-only views of the payloads)."""
    constants: dict[str, np.ndarray[Any, Any]] = field(default_factory=dict)
    """Lifted tensor constants by name."""
    parameters: set[str] = field(default_factory=set)
    """The names in `weights` that are parameters (`torch.nn.Parameter`)."""
    entry: str = ""
    """Where the program is, as its diagnostics name it (`ARCHIVE/ROOT/models/model.json`)."""
    text: str = ""
    """The program entry's JSON text, to locate what the importer finds wrong in it."""
    sample_inputs: bytes = b""
    """The first bytes of the sample-inputs entry (a pickle, never loaded: only searched)."""

    def locate(self, needle: str | None = None) -> SourceLocation:
        """The program entry at the first occurrence of `needle` (line 1, column 0 when
        there is none)."""
        entry = self.entry or f"{self.path}/models/{self.model}.json"
        at = self.text.find(needle) if needle else -1
        if at < 0:
            return SourceLocation(entry, 1, 0)
        line = self.text.count("\n", 0, at) + 1
        return SourceLocation(entry, line, at - (self.text.rfind("\n", 0, at) + 1) + 1)


class _Reader:
    def __init__(self, path: str, data: bytes | None = None) -> None:
        self.path = path
        self.data = data
        self.root = ""
        self.names: dict[str, zipfile.ZipInfo] = {}

    # -- errors -----------------------------------------------------------

    def fail(
        self, kind: Kind, entry: str | None = None, key: str | None = None, /, **args: Any
    ) -> DiagnosticError:
        """An error of `kind` with `args`, located at `entry` (at the first occurrence of
        `key` in it, if given)."""
        if entry is None:
            where = SourceLocation(self.path, 1, 0)
            return DiagnosticError(Diagnostic.of("error", kind, where, **args))
        line, column = 1, 0
        if key is not None:
            line, column = self._position(entry, json.dumps(key))
        where = SourceLocation(f"{self.path}/{self.root}{entry}", line, column)
        return DiagnosticError(Diagnostic.of("error", kind, where, **args))

    def unreadable(self, reason: str) -> DiagnosticError:
        """The archive itself cannot be opened (`input.unreadable`)."""
        where = SourceLocation(self.path, 1, 0)
        return DiagnosticError(
            Diagnostic.of("error", INPUT_ERROR, where, action="load", path=self.path, reason=reason)
        )

    def _position(self, entry: str, needle: str) -> tuple[int, int]:
        try:
            text = self.zip.read(self.root + entry).decode("utf-8", "replace")
        except (OSError, zipfile.BadZipFile, ValueError, EOFError):
            return 1, 0
        at = text.find(needle)
        if at < 0:
            return 1, 0
        line = text.count("\n", 0, at) + 1
        return line, at - (text.rfind("\n", 0, at) + 1) + 1

    # -- the zip ------------------------------------------------------------

    def open(self) -> None:
        try:
            source = io.BytesIO(self.data) if self.data is not None else self.path
            self.zip: zipfile.ZipFile = zipfile.ZipFile(source)
            infos = self.zip.infolist()
        except OSError as exc:
            raise self.unreadable(exc.strerror or str(exc)) from None
        except (zipfile.BadZipFile, ValueError, EOFError, RuntimeError) as exc:
            raise self.unreadable(f"not a torch.export archive (a zip file): {exc}") from None
        if len(infos) > MAX_ENTRIES:
            raise self.fail(TOO_MANY_ENTRIES, entries=len(infos), limit=MAX_ENTRIES)
        for info in infos:
            expanded = info.file_size > MAX_RATIO * max(info.compress_size, 1) + 65536
            if info.compress_type != zipfile.ZIP_STORED and expanded:
                raise self.fail(
                    ZIP_BOMB,
                    entry=info.filename,
                    compressed=info.compress_size,
                    size=info.file_size,
                    ratio=MAX_RATIO,
                )
            self.names[info.filename] = info
        formats = [n for n in self.names if n == "archive_format" or n.endswith("/archive_format")]
        if not formats:
            raise self.fail(NO_ARCHIVE_FORMAT)
        self.root = min(formats, key=len)[: -len("archive_format")]
        if self.read_bytes("archive_format", 64).strip() != b"pt2":
            raise self.fail(NOT_PT2, "archive_format")
        if "byteorder" in self.relative() and self.read_bytes("byteorder", 64).strip() != b"little":
            raise self.fail(BIG_ENDIAN, "byteorder")

    def relative(self) -> set[str]:
        return {n[len(self.root) :] for n in self.names if n.startswith(self.root)}

    def has(self, entry: str) -> bool:
        return self.root + entry in self.names

    def read_bytes(self, entry: str, limit: int) -> bytes:
        info = self.names.get(self.root + entry)
        if info is None:
            raise self.fail(MISSING_ENTRY, entry=self.root + entry)
        if info.file_size > limit:
            raise self.fail(ENTRY_TOO_LARGE, entry, size=info.file_size, limit=limit)
        try:
            return self.zip.read(info)
        except (OSError, zipfile.BadZipFile, ValueError, EOFError, RuntimeError) as exc:
            raise self.fail(UNREADABLE_ENTRY, entry, reason=str(exc)) from None

    def read_json(self, entry: str) -> Any:
        return self.parse_json(entry, self.read_text(entry))

    def read_text(self, entry: str) -> str:
        data = self.read_bytes(entry, MAX_JSON_BYTES)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.fail(NOT_UTF8, entry, reason=exc.reason, byte=exc.start) from None

    def parse_json(self, entry: str, text: str) -> Any:
        depth, where = bracket_depth(text, MAX_JSON_DEPTH)
        if depth > MAX_JSON_DEPTH:
            line = text.count("\n", 0, where) + 1
            column = where - (text.rfind("\n", 0, where) + 1) + 1
            location = SourceLocation(f"{self.path}/{self.root}{entry}", line, column)
            raise DiagnosticError(
                Diagnostic.of("error", INPUT_TOO_DEEP, location, limit=MAX_JSON_DEPTH)
            )
        try:
            return json.loads(text, parse_int=_bounded_int)
        except _LongInteger as exc:
            # Located at the literal and said in npuir's terms, not Python's conversion limit.
            at = SourceLocation(f"{self.path}/{self.root}{entry}", *_offset_position(text, exc))
            digits = len(exc.literal.lstrip("-"))
            raise DiagnosticError(
                Diagnostic.of("error", TOO_LONG, at, digits=digits, limit=MAX_DIGITS)
            ) from None
        except (ValueError, RecursionError) as exc:
            raise self.fail(BAD_JSON, entry, reason=str(exc)) from None


class _LongInteger(Exception):
    """A JSON integer literal of more than `MAX_DIGITS` digits."""

    def __init__(self, literal: str) -> None:
        super().__init__(literal[:20])
        self.literal = literal


def _bounded_int(literal: str) -> int:
    """`json.loads`' integer hook: Python refuses to convert past `MAX_DIGITS` digits with a
    message naming its own setting; this names the literal's length and npuir's limit."""
    if len(literal) - literal.startswith("-") > MAX_DIGITS:
        raise _LongInteger(literal)
    return int(literal)


def _offset_position(text: str, exc: _LongInteger) -> tuple[int, int]:
    """Line and column of the long literal's first occurrence in `text`."""
    at = max(text.find(exc.literal), 0)
    return text.count("\n", 0, at) + 1, at - (text.rfind("\n", 0, at) + 1) + 1


def _check_expr(expr: str) -> tuple[Kind, dict[str, Any]] | None:
    """Why `expr` is not a plain shape expression (a kind and its arguments), or None when
    it is."""
    if len(expr) > _MAX_EXPR:
        return LONG_EXPRESSION, {"length": len(expr)}
    # sympy's spelling of a bare symbol, which torch writes for an unranged dynamic dim:
    # checked as its name (torch's sympify makes the same symbol of both).
    expr = plain_expression(expr)
    pos = 0
    while pos < len(expr):
        match = _EXPR_TOKEN.match(expr, pos)
        if match is None or match.end() == pos:
            rest = expr[pos:].strip()
            if not rest:
                return None
            return NOT_ARITHMETIC, {"expression": repr(expr[:80]), "rest": repr(rest[:20])}
        name = match.group(1)
        if name is not None and not (_SYMBOL.fullmatch(name) or name in _SHAPE_FUNCTIONS):
            return NOT_A_SYMBOL, {"expression": repr(expr[:80]), "name": name}
        pos = match.end()
    return None


def _walk(value: Any) -> Iterator[tuple[str, Any]]:
    """Every (key, value) pair of the nested dicts in `value`, iteratively."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for k, v in item.items():
                yield k, v
                if isinstance(v, dict | list):
                    stack.append(v)
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, dict | list))


def _int(value: Any) -> int | None:
    if isinstance(value, dict) and isinstance(value.get("as_int"), int):
        return int(value["as_int"])
    return None


class _Tensors:
    """The tensors of one payload config (weights or constants)."""

    def __init__(self, reader: _Reader, config_entry: str, directory: str, kind: str) -> None:
        self.reader = reader
        self.entry = config_entry
        self.directory = directory
        self.kind = kind
        self.payloads: dict[str, bytes] = {}

    def read(self) -> tuple[dict[str, np.ndarray[Any, Any]], set[str]]:
        r = self.reader
        config = r.read_json(self.entry)
        if not isinstance(config, dict) or not isinstance(config.get("config"), dict):
            raise r.fail(NO_CONFIG, self.entry)
        items: dict[str, Any] = config["config"]
        total = 0
        for fqn, meta in items.items():
            if not isinstance(meta, dict):
                raise r.fail(NO_DESCRIPTION, self.entry, fqn, what=self.kind, fqn=fqn)
            self._refuse_code(fqn, meta)
            name = meta.get("path_name")
            if not isinstance(name, str) or not r.has(self.directory + name) or "/" in name:
                raise r.fail(NO_PAYLOAD, self.entry, fqn, what=self.kind, fqn=fqn)
            if name not in self.payloads:
                self.payloads[name] = b""
                total += r.names[r.root + self.directory + name].file_size
        available = available_bytes()
        if available is not None and total > available:
            raise r.fail(
                BEYOND_HOST,
                self.entry,
                what=self.kind,
                total=gib(total),
                available=gib(available),
                bytes=total,
                available_bytes=available,
            )
        for name in self.payloads:
            self.payloads[name] = r.read_bytes(self.directory + name, 1 << 62)
        out: dict[str, np.ndarray[Any, Any]] = {}
        params: set[str] = set()
        for fqn, meta in items.items():
            out[fqn] = self._array(fqn, meta)
            if meta.get("is_param"):
                params.add(fqn)
        return out, params

    def _refuse_code(self, fqn: str, meta: dict[str, Any]) -> None:
        name = str(meta.get("path_name", ""))
        if meta.get("use_pickle"):
            raise self.reader.fail(
                PICKLED_TENSOR, self.entry, fqn, what=self.kind, fqn=fqn, name=name
            )
        if name.startswith(("custom_obj_", "opaque_obj_")):
            raise self.reader.fail(
                PICKLED_OBJECT, self.entry, fqn, what=self.kind, fqn=fqn, name=name
            )

    def _array(self, fqn: str, meta: dict[str, Any]) -> np.ndarray[Any, Any]:
        r = self.reader
        tm = meta.get("tensor_meta")
        if not isinstance(tm, dict):
            raise r.fail(NO_TENSOR_META, self.entry, fqn, what=self.kind, fqn=fqn)
        dtype = _DTYPES.get(tm.get("dtype", -1)) if isinstance(tm.get("dtype"), int) else None
        if dtype is None:
            raise r.fail(
                BAD_DTYPE, self.entry, fqn, what=self.kind, fqn=fqn, dtype=repr(tm.get("dtype"))
            )
        if tm.get("layout", _STRIDED) != _STRIDED:
            raise r.fail(NOT_STRIDED, self.entry, fqn, what=self.kind, fqn=fqn)
        sizes = [_int(s) for s in tm.get("sizes", [])]
        strides = [_int(s) for s in tm.get("strides", [])]
        offset = _int(tm.get("storage_offset", {"as_int": 0}))
        if None in sizes or None in strides or offset is None or len(sizes) != len(strides):
            raise r.fail(BAD_SIZES, self.entry, fqn, what=self.kind, fqn=fqn)
        shape = [int(s) for s in sizes if s is not None]
        steps = [int(s) for s in strides if s is not None]
        if any(s < 0 for s in shape) or any(s < 0 for s in steps) or offset < 0 or len(shape) > 64:
            raise r.fail(NEGATIVE_SIZES, self.entry, fqn, what=self.kind, fqn=fqn)
        payload = self.payloads[str(meta["path_name"])]
        elements = len(payload) // dtype.itemsize
        if 0 in shape:
            return np.zeros(shape, dtype)
        last = offset + sum((n - 1) * s for n, s in zip(shape, steps))
        if last >= elements:
            raise r.fail(
                SHORT_PAYLOAD,
                self.entry,
                fqn,
                what=self.kind,
                fqn=fqn,
                needed=last + 1,
                payload=str(meta["path_name"]),
                elements=elements,
            )
        flat = np.frombuffer(payload, dtype, count=elements)
        view = np.lib.stride_tricks.as_strided(
            flat[offset:], shape, [s * dtype.itemsize for s in steps], writeable=False
        )
        return view


def _target_problem(target: str) -> str | None:
    """Why a node target is no operator name npuir reads, or None when it is one.

    Only data is read here: the target is a name, matched against the importer's table.
    What makes it safe for torch's deserializer too (which resolves it by `getattr`) is
    its shape: `torch.ops.NS.OP[.OVERLOAD]` where `NS` resolves to an operator namespace
    (a public name, or one of `PRIVATE_NAMESPACES`, never an attribute of `torch.ops`
    itself), `OP` is no attribute every Python object has (ATen's dunder operators pass)
    and `OVERLOAD` no dunder; or `_operator.NAME` / `math.NAME` with a public `NAME`."""
    parts = target.split(".")
    if not all(_NAME.fullmatch(p) for p in parts):
        return "not a dotted name"
    if parts[:2] == ["torch", "ops"]:
        rest = parts[2:]
        if len(rest) not in (2, 3):
            return "not NAMESPACE.OP or NAMESPACE.OP.OVERLOAD under torch.ops"
        namespace = rest[0]
        if namespace.startswith("_") and namespace not in PRIVATE_NAMESPACES:
            return f"namespace '{namespace[:40]}' is private to Python or torch"
        if namespace in _OPS_ATTRIBUTES or namespace in _PYTHON_ATTRIBUTES:
            return f"'{namespace[:40]}' is an attribute of torch.ops, not a namespace"
        if rest[1] in _PYTHON_ATTRIBUTES:
            return f"'{rest[1]}' is a Python attribute, not an operator"
        if len(rest) == 3 and rest[2].startswith("__"):
            return f"overload '{rest[2][:40]}' is a Python attribute, not an overload"
        return None
    if parts[0] in ("_operator", "math"):
        if len(parts) != 2 or parts[1].startswith("_"):
            return f"not {parts[0]}.NAME with a public NAME"
        return None
    return "not under torch.ops, _operator or math"


def _check_program(reader: _Reader, entry: str, program: Any) -> None:
    if not isinstance(program, dict) or not isinstance(program.get("graph_module"), dict):
        raise reader.fail(NO_GRAPH_MODULE, entry)
    for key, value in _walk(program):
        if key == "expr_str":
            why = _check_expr(value) if isinstance(value, str) else (EXPRESSION_NOT_TEXT, {})
            if why is not None:
                kind, args = why
                raise reader.fail(kind, entry, value if isinstance(value, str) else None, **args)
        elif key == "target" and isinstance(value, str):
            problem = _target_problem(value)
            if problem is not None:
                raise reader.fail(BAD_TARGET, entry, value, target=value[:80], why=problem)
    constraints = program.get("range_constraints", {})
    if not isinstance(constraints, dict):
        raise reader.fail(BAD_RANGE_CONSTRAINTS, entry)
    for name in constraints:
        if not _SYMBOL.fullmatch(name):
            raise reader.fail(BAD_CONSTRAINT, entry, name, name=name[:80])
    program["guards_code"] = []


def read_pt2(path: str | Path, data: bytes | None = None) -> Pt2Archive:
    """Read `path` (or the archive's bytes `data`, named `path`) as described in the
    module docstring; raise a located `DiagnosticError` for an archive npuir refuses.
    Needs no torch."""
    reader = _Reader(str(path), data)
    try:
        reader.open()
        models = sorted(
            n[len("models/") : -len(".json")]
            for n in reader.relative()
            if n.startswith("models/") and n.endswith(".json") and n.count("/") == 1
        )
        if not models:
            raise reader.fail(NO_PROGRAM)
        if len(models) > 1 and "model" not in models:
            raise reader.fail(SEVERAL_PROGRAMS, models=", ".join(models))
        model = "model" if "model" in models else models[0]
        for legacy in (f"data/weights/{model}.pt", f"data/constants/{model}.pt"):
            if reader.has(legacy):
                raise reader.fail(LEGACY_PICKLE, legacy)
        entry = f"models/{model}.json"
        text = reader.read_text(entry)
        program = reader.parse_json(entry, text)
        _check_program(reader, entry, program)
        archive = Pt2Archive(
            str(path), model, program, entry=f"{path}/{reader.root}{entry}", text=text
        )
        samples = f"data/sample_inputs/{model}.pt"
        if reader.has(samples):
            # Searched for npuir's own marks (`set_dim_gears`), never unpickled.
            archive.sample_inputs = reader.read_bytes(samples, MAX_SAMPLE_BYTES)[:MAX_SAMPLE_BYTES]
        weights_entry = f"data/weights/{model}_weights_config.json"
        if reader.has(weights_entry):
            archive.weights, archive.parameters = _Tensors(
                reader, weights_entry, "data/weights/", "weight"
            ).read()
        constants_entry = f"data/constants/{model}_constants_config.json"
        if reader.has(constants_entry):
            archive.constants, _ = _Tensors(
                reader, constants_entry, "data/constants/", "constant"
            ).read()
        return archive
    finally:
        if hasattr(reader, "zip"):
            reader.zip.close()


def exported_program(archive: Pt2Archive) -> torch.export.ExportedProgram:
    """The `ExportedProgram` of a checked archive, rebuilt by torch's JSON deserializer
    from `archive.program` with `archive`'s tensors and no sample inputs (needs torch)."""
    import torch
    from torch._export.serde import schema
    from torch._export.serde.serialize import (
        ExportedProgramDeserializer,
        SerializeError,
        _dict_to_dataclass,
    )

    state: dict[str, torch.Tensor] = {}
    for fqn, array in archive.weights.items():
        tensor = _tensor(array)
        state[fqn] = (
            torch.nn.Parameter(tensor, requires_grad=False) if fqn in archive.parameters else tensor
        )
    constants: dict[str, Any] = {fqn: _tensor(a) for fqn, a in archive.constants.items()}
    where = SourceLocation(f"{archive.path}/models/{archive.model}.json", 1, 0)
    # Only torch's code runs in this block, on the archive's (untrusted) program: its
    # deserializer checks that input with `assert`s and lets type and key errors through,
    # so here those are the archive's faults, not npuir's (npuir's own code is outside).
    try:
        serialized = _dict_to_dataclass(schema.ExportedProgram, archive.program)
        return ExportedProgramDeserializer(None).deserialize(serialized, state, constants, None)
    except (
        SerializeError,
        KeyError,
        TypeError,
        ValueError,
        AttributeError,
        AssertionError,
        RuntimeError,
    ) as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DiagnosticError(
            Diagnostic.of("error", TORCH_REBUILD, where, reason=message[:300])
        ) from None


def _tensor(array: np.ndarray[Any, Any]) -> torch.Tensor:
    import torch

    if array.dtype == np.dtype(ml_dtypes.bfloat16):
        return torch.from_numpy(np.ascontiguousarray(array).view(np.uint16).copy()).view(
            torch.bfloat16
        )
    return torch.from_numpy(np.array(array, copy=True))
