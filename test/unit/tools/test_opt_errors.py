"""`npuir-opt` on bad input: a located one-paragraph diagnostic, never a traceback.

Every case runs the tool as a user does (a subprocess) and checks the exit
code, the `file:line:col: error:` prefix at the right place, the source line
with a caret under the column, and that no Python traceback escapes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from npuir.transforms import PASSES

ROOT = Path(__file__).resolve().parents[3]
SEED = ROOT / "examples" / "seed_multistream.mlir"
OPS_FILES = sorted((ROOT / "test" / "dialects").glob("*/ops.mlir"))

T = "tensor<4x8xf16>"

GOOD = f"""func.func @f(%a: {T}) -> {T} {{
  %0 = npu.relu %a : ({T}) -> {T}
  func.return %0 : {T}
}}
"""


def run_opt(*args: str | Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "npuir.tools.opt", *map(str, args)],
        input=stdin,
        capture_output=True,
        check=False,
    )


def loc_of(text: str, needle: str, nth: int = 0) -> tuple[int, int]:
    """1-based line and column of the `nth` occurrence of `needle` in `text`."""
    offset = -1
    for _ in range(nth + 1):
        offset = text.index(needle, offset + 1)
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column


def assert_located_error(
    proc: subprocess.CompletedProcess[bytes],
    path: Path,
    source: str,
    where: tuple[int, int],
    message: str,
) -> None:
    """Exit 1; `path:line:col: error: message`, the source line, a caret; no traceback."""
    stderr = proc.stderr.decode()
    assert proc.returncode == 1, stderr
    assert "Traceback" not in stderr
    assert proc.stdout == b""
    line, col = where
    lines = stderr.splitlines()
    assert lines[0].startswith(f"{path}:{line}:{col}: error: "), stderr
    assert message in lines[0], stderr
    assert lines[1] == source.splitlines()[line - 1]
    assert lines[2] == " " * (col - 1) + "^"


def write(tmp_path: Path, text: str, name: str = "input.mlir") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --------------------------------------------------------------------------
# Syntax
# --------------------------------------------------------------------------


def test_unknown_op_points_at_its_name(tmp_path: Path) -> None:
    text = GOOD.replace("npu.relu", "npu.frobnicate")
    path = write(tmp_path, text)
    assert_located_error(
        run_opt(path),
        path,
        text,
        loc_of(text, "npu.frobnicate"),
        "Operation npu.frobnicate is not registered",
    )


@pytest.mark.slow
def test_garbled_token(tmp_path: Path) -> None:
    text = GOOD.replace("npu.relu %a", "npu.relu %a $$")
    path = write(tmp_path, text)
    assert_located_error(run_opt(path), path, text, loc_of(text, "$$"), "Unexpected character: $")


@pytest.mark.slow
def test_unclosed_string_on_a_long_line_is_rejected_at_once(tmp_path: Path) -> None:
    # xDSL's own string pattern backtracks exponentially here (found by fuzzing
    # the examples); npuir's lexer matches one character at a time.
    text = GOOD.replace("npu.relu %a", 'npu.relu %a {note = "never closed ' + "x (y) " * 20 + "}")
    path = write(tmp_path, text)
    proc = subprocess.run(
        [sys.executable, "-m", "npuir.tools.opt", str(path)],
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert_located_error(
        proc, path, text, loc_of(text, '"never'), "End of file reached before closing string"
    )


@pytest.mark.slow
def test_a_string_as_the_first_token(tmp_path: Path) -> None:
    text = '"abc\n'
    path = write(tmp_path, text)
    assert_located_error(run_opt(path), path, text, (1, 1), "closing string literal")


def test_undefined_value_points_at_its_first_use(tmp_path: Path) -> None:
    text = GOOD.replace("npu.relu %a", "npu.relu %missing")
    path = write(tmp_path, text)
    assert_located_error(
        run_opt(path), path, text, loc_of(text, "%missing"), "use of undefined value '%missing'"
    )


@pytest.mark.slow
def test_truncated_file(tmp_path: Path) -> None:
    text = "\n".join(GOOD.splitlines()[:2]) + "\n"  # the function is never closed
    path = write(tmp_path, text)
    proc = run_opt(path)
    stderr = proc.stderr.decode()
    assert proc.returncode == 1
    assert "Traceback" not in stderr
    assert stderr.startswith(f"{path}:3:1: error: unexpected end of input"), stderr


@pytest.mark.slow
def test_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    data = GOOD.encode().replace(b"npu.relu", b"npu.r\xffelu")
    path = tmp_path / "input.mlir"
    path.write_bytes(data)
    proc = run_opt(path)
    stderr = proc.stderr.decode()
    assert proc.returncode == 1
    assert "Traceback" not in stderr
    line, col = loc_of(GOOD, "elu %a")
    lines = stderr.splitlines()
    assert lines[0] == f"{path}:{line}:{col}: error: input is not valid UTF-8 (byte 0xff)"
    # The bad byte is shown escaped, the caret under it.
    assert lines[1] == GOOD.splitlines()[line - 1].replace("npu.relu", "npu.r\\xffelu")
    assert lines[2] == " " * (col - 1) + "^"


@pytest.mark.slow
def test_a_binary_file_shows_its_line_escaped(tmp_path: Path) -> None:
    path = tmp_path / "input.mlir"
    path.write_bytes(b"func.func @f() {\x01\x1b[31m\n  func.return\n}\n")
    proc = run_opt(path)
    stderr = proc.stderr.decode()
    assert proc.returncode == 1
    assert "Traceback" not in stderr
    assert stderr.splitlines() == [
        f"{path}:1:17: error: Unexpected character: \\x01",
        "func.func @f() {\\x01\\x1b[31m",
        " " * 16 + "^",
    ]
    assert not any(c < " " for c in stderr.replace("\n", ""))


@pytest.mark.slow
def test_bad_type(tmp_path: Path) -> None:
    text = GOOD.replace("%a: tensor<4x8xf16>", "%a: tensor<4x8xfoo>")
    path = write(tmp_path, text)
    assert_located_error(run_opt(path), path, text, loc_of(text, "foo>"), "Expected shape type")


@pytest.mark.slow
def test_operand_of_the_wrong_kind_is_located_at_the_op(tmp_path: Path) -> None:
    text = "func.func @f(%a: i32) {\n  %0 = npu.neg %a : (i32) -> i32\n  func.return\n}\n"
    path = write(tmp_path, text)
    assert_located_error(
        run_opt(path),
        path,
        text,
        loc_of(text, "%0"),
        "'npu.neg' op i32 should be of base attribute tensor",
    )


# --------------------------------------------------------------------------
# Verification
# --------------------------------------------------------------------------

NESTED = f"""module {{
  func.func @f(%a: {T}, %b: tensor<16x4xf16>) -> {T} {{
    %r = coreset.limit cube 4 -> {T} {{
      %s = stream.switch "1" -> {T} {{
        %ok = npu.relu %a : ({T}) -> {T}
        %bad = npu.matmul %a, %b : ({T}, tensor<16x4xf16>) -> {T}
        stream.yield %ok : {T}
      }}
      coreset.yield %s : {T}
    }}
    func.return %r : {T}
  }}
}}
"""


@pytest.mark.slow
def test_verifier_error_deep_in_a_region_points_at_that_op(tmp_path: Path) -> None:
    path = write(tmp_path, NESTED)
    assert_located_error(
        run_opt(path),
        path,
        NESTED,
        loc_of(NESTED, "%bad"),
        "'npu.matmul' op inner dimensions differ",
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("bad_chunk", "needle", "message"),
    [
        (GOOD.replace("npu.relu", "npu.nope"), "npu.nope", "Operation npu.nope is not registered"),
        (NESTED, "%bad", "'npu.matmul' op inner dimensions differ"),
    ],
    ids=["parse", "verify"],
)
def test_error_in_third_chunk_has_its_absolute_line(
    tmp_path: Path, bad_chunk: str, needle: str, message: str
) -> None:
    text = f"{GOOD}// -----\n{GOOD}\n// -----\n\n{bad_chunk}// -----\n{GOOD}"
    path = write(tmp_path, text)
    where = loc_of(text, needle)
    assert where[0] > loc_of(bad_chunk, needle)[0]  # the file's line, not the chunk's
    assert_located_error(run_opt(path, "--split-input-file"), path, text, where, message)


@pytest.mark.slow
def test_verify_diagnostics_prints_the_error_and_exits_zero(tmp_path: Path) -> None:
    path = write(tmp_path, f"{GOOD}// -----\n{NESTED}")
    proc = run_opt(path, "--split-input-file", "--verify-diagnostics")
    assert proc.returncode == 0, proc.stderr.decode()
    chunks = proc.stdout.decode().split("// -----\n")
    assert len(chunks) == 2
    assert chunks[0].startswith("builtin.module {")
    line, col = loc_of(f"{GOOD}// -----\n{NESTED}", "%bad")
    assert chunks[1].startswith(f"{path}:{line}:{col}: error: 'npu.matmul' op")


# --------------------------------------------------------------------------
# Usage errors (exit 2)
# --------------------------------------------------------------------------


@pytest.mark.slow
def test_bad_pass_option_lists_the_valid_values(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    proc = run_opt(path, "-p", "stream-partition{mode=sideways}")
    stderr = proc.stderr.decode()
    assert proc.returncode == 2, stderr
    assert "Traceback" not in stderr
    assert "sideways" in stderr
    modes = PASSES["stream-partition"]().MODES  # type: ignore[attr-defined]
    for mode in modes:
        assert mode in stderr


@pytest.mark.slow
def test_unknown_pass_option_lists_the_options(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    proc = run_opt(path, "-p", "stream-partition{colour=red}")
    stderr = proc.stderr.decode()
    assert proc.returncode == 2, stderr
    assert "Traceback" not in stderr
    assert "colour" in stderr and "mode" in stderr


@pytest.mark.slow
def test_unknown_pass_lists_the_passes(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    proc = run_opt(path, "-p", "stream-partition,frobnicate")
    stderr = proc.stderr.decode()
    assert proc.returncode == 2, stderr
    assert "Traceback" not in stderr
    assert "unknown pass 'frobnicate'" in stderr
    for key in PASSES:
        assert key in stderr


@pytest.mark.slow
def test_unknown_flag(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    proc = run_opt(path, "--frobnicate")
    assert proc.returncode == 2
    assert b"Traceback" not in proc.stderr
    assert b"--frobnicate" in proc.stderr


def test_missing_input_file(tmp_path: Path) -> None:
    proc = run_opt(tmp_path / "nope.mlir")
    stderr = proc.stderr.decode()
    assert proc.returncode == 1
    assert "Traceback" not in stderr
    assert f"error: cannot read '{tmp_path / 'nope.mlir'}'" in stderr


# --------------------------------------------------------------------------
# Output files
# --------------------------------------------------------------------------


@pytest.mark.slow
def test_failing_run_leaves_an_existing_output_untouched(tmp_path: Path) -> None:
    bad = write(tmp_path, NESTED, "bad.mlir")
    out = tmp_path / "out.mlir"
    before = b"previous contents\n\x00\xff"
    out.write_bytes(before)
    proc = run_opt(bad, "-o", out)
    assert proc.returncode == 1
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.mlir", "out.mlir"]


@pytest.mark.slow
def test_failing_run_creates_no_output(tmp_path: Path) -> None:
    bad = write(tmp_path, f"{GOOD}// -----\n{NESTED}", "bad.mlir")
    out = tmp_path / "out.mlir"
    proc = run_opt(bad, "--split-input-file", "-o", out)
    assert proc.returncode == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.mlir"]


@pytest.mark.slow
def test_output_file_holds_exactly_what_stdout_would(tmp_path: Path) -> None:
    out = tmp_path / "out.mlir"
    to_file = run_opt(SEED, "-p", "npu-default", "-o", out)
    assert to_file.returncode == 0, to_file.stderr.decode()
    assert to_file.stdout == b""
    to_stdout = run_opt(SEED, "-p", "npu-default")
    assert to_stdout.returncode == 0
    assert out.read_bytes() == to_stdout.stdout
    assert b"stream.decl" in to_stdout.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.mlir"]


# --------------------------------------------------------------------------
# Warnings
# --------------------------------------------------------------------------

# A "product" combination whose shapes do not broadcast is dropped with a warning.
GEARS = """func.func @f(%x1: tensor<?x8xf32> {gear.dims = #gear.dims<0: [2, 4]>},
             %x2: tensor<?x8xf32> {gear.dims = #gear.dims<0: [2, 4]>}) -> tensor<?x8xf32>
    attributes {gear.policy = "product"} {
  %s = npu.add %x1, %x2 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  func.return %s : tensor<?x8xf32>
}
"""


@pytest.mark.slow
def test_warning_is_located_and_does_not_fail(tmp_path: Path) -> None:
    path = write(tmp_path, GEARS)
    proc = run_opt(path, "-p", "gear-multiversion")
    stderr = proc.stderr.decode()
    assert proc.returncode == 0, stderr
    line, col = loc_of(GEARS, "%s = npu.add")
    assert stderr.startswith(f"{path}:{line}:{col}: warning: dropping gear"), stderr
    assert "error:" not in stderr
    assert b"gear.dispatch" in proc.stdout


@pytest.mark.slow
def test_warnings_as_errors_fails_without_output(tmp_path: Path) -> None:
    path = write(tmp_path, GEARS)
    out = tmp_path / "out.mlir"
    proc = run_opt(path, "-p", "gear-multiversion", "--warnings-as-errors", "-o", out)
    stderr = proc.stderr.decode()
    assert proc.returncode == 1, stderr
    assert "Traceback" not in stderr
    line, col = loc_of(GEARS, "%s = npu.add")
    assert stderr.startswith(f"{path}:{line}:{col}: error: dropping gear"), stderr
    assert "warning:" not in stderr
    assert not out.exists()


# --------------------------------------------------------------------------
# Determinism and round trips
# --------------------------------------------------------------------------


@pytest.mark.slow
def test_output_is_deterministic() -> None:
    first = run_opt(SEED, "-p", "npu-default")
    second = run_opt(SEED, "-p", "npu-default")
    assert first.returncode == 0, first.stderr.decode()
    assert first.stdout == second.stdout
    assert first.stderr == second.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "path", [SEED, *OPS_FILES], ids=[str(p.relative_to(ROOT)) for p in [SEED, *OPS_FILES]]
)
def test_generic_form_parses_back_to_the_same_ir(path: Path) -> None:
    custom = run_opt(path)
    assert custom.returncode == 0, custom.stderr.decode()
    generic = run_opt(path, "--print-op-generic")
    assert generic.returncode == 0, generic.stderr.decode()
    assert generic.stdout != custom.stdout
    back = run_opt("-", stdin=generic.stdout)
    assert back.returncode == 0, back.stderr.decode()
    assert back.stdout == custom.stdout


@pytest.mark.slow
def test_every_dialect_has_an_ops_file() -> None:
    from npuir.dialects import DIALECTS

    assert [p.parent.name for p in OPS_FILES] == sorted(DIALECTS)
