"""Verification memoised by op signature (npuir.verifier) still checks what depends on
where an op stands: a later op with a signature that passed earlier is reported when
its module declares no such stream, when it ends its block without being a
terminator, when it uses a value before its definition, and when it stands outside
every function."""

from __future__ import annotations

from pathlib import Path

import pytest

import npuir
from npuir.diagnostics import VERIFY_ERROR, DiagnosticError

TWO_MODULES = """\
builtin.module {
  builtin.module {
    stream.decl @s "1" priority 0
    func.func @a(%x: tensor<8xf16>) -> tensor<8xf16> {
      %r = npu.relu %x {stream.on = @s} : (tensor<8xf16>) -> tensor<8xf16>
      func.return %r : tensor<8xf16>
    }
  }
  builtin.module {
    func.func @b(%x: tensor<8xf16>) -> tensor<8xf16> {
      %r = npu.relu %x {stream.on = @s} : (tensor<8xf16>) -> tensor<8xf16>
      func.return %r : tensor<8xf16>
    }
  }
}
"""

ENDS_BLOCK = """\
func.func @a(%x: tensor<8xf16>) -> tensor<8xf16> {
  %r = npu.relu %x : (tensor<8xf16>) -> tensor<8xf16>
  %s = npu.relu %x : (tensor<8xf16>) -> tensor<8xf16>
}
"""

WAIT_ON_AN_ARGUMENT = """\
stream.decl @s0 "a" priority 0
stream.decl @s1 "b" priority 0
func.func @a(%e: !sync.event) {
  %r = sync.record on @s0 {event_id = 0 : i64}
  sync.wait %r on @s1
  sync.wait %e on @s1
  func.return
}
"""

SAME_SIGNATURE_TWICE_BAD_RESULT = """\
func.func @a(%x: tensor<8xf16>) -> tensor<8xf16> {
  %r = npu.relu %x : (tensor<8xf16>) -> tensor<8xf16>
  %s = npu.relu %x : (tensor<8xf16>) -> tensor<4xf16>
  func.return %r : tensor<8xf16>
}
"""


def _error_at(text: str) -> tuple[int, int]:
    """Where verifying `text` fails (a verifier error: not a parse error)."""
    with pytest.raises(DiagnosticError) as info:
        npuir.parse_text(npuir.make_context(), text, "m.mlir")
    diagnostic = info.value.diagnostic
    assert diagnostic.kind == VERIFY_ERROR.code, diagnostic.render()
    assert diagnostic.location is not None
    return diagnostic.location.line, diagnostic.location.column


def test_stream_on_is_checked_against_each_ops_module() -> None:
    # The first relu (module 1 declares @s) passes; the second has its signature.
    assert _error_at(TWO_MODULES) == (11, 7)


def test_an_op_ending_its_block_is_verified_whole() -> None:
    assert _error_at(ENDS_BLOCK) == (3, 3)


def test_a_different_signature_is_verified() -> None:
    assert _error_at(SAME_SIGNATURE_TWICE_BAD_RESULT) == (3, 3)


def test_a_repeated_signature_is_verified_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from npuir.dialects.npu import ReluOp

    text = """\
func.func @a(%x: tensor<8xf16>) -> tensor<8xf16> {
  %a = npu.relu %x : (tensor<8xf16>) -> tensor<8xf16>
  %b = npu.relu %a : (tensor<8xf16>) -> tensor<8xf16>
  %c = npu.relu %b : (tensor<8xf16>) -> tensor<8xf16>
  func.return %c : tensor<8xf16>
}
"""
    module = npuir.parse_text(npuir.make_context(), text, "m.mlir")
    calls: list[str] = []
    original = ReluOp.verify_

    def counting(self: ReluOp) -> None:
        calls.append(self.name)
        original(self)

    monkeypatch.setattr(ReluOp, "verify_", counting)
    from npuir import verifier

    verifier.forget_passed_signatures()  # the parse's own walk
    verifier.verify(module)
    assert len(calls) == 1
    # A later walk (another copy, as a tool verifying many variants makes) checks no
    # signature again; a new signature it does.
    verifier.verify(module.clone())
    assert len(calls) == 1
    wider = npuir.parse_text(npuir.make_context(), text.replace("8xf16", "16xf16"), "w.mlir")
    calls.clear()
    verifier.verify(wider)
    assert calls == []  # (the parse verified it already)
    # Only the newest signatures are kept: one here, so each walk evicts the other's.
    monkeypatch.setattr(verifier, "_PASSED_KEPT", 1)
    monkeypatch.setattr(verifier, "_PASSED_VALUES", {})
    for each in (wider, module, wider, wider):
        verifier.verify(each)
    assert len(calls) == 3


def test_op_names_do_not_make_signatures(monkeypatch: pytest.MonkeyPatch) -> None:
    # Importers name every op (`npu.op_name`): a name is a label no check reads, so ops
    # that differ only in it share one verification; a different type is still checked.
    from npuir.dialects.npu import ReluOp

    ops = "".join(
        f'  %{v} = npu.relu %{u} {{npu.op_name = "{v}"}} : (tensor<8xf16>) -> tensor<8xf16>\n'
        for u, v in (("x", "a"), ("a", "b"), ("b", "c"))
    )
    text = f"func.func @a(%x: tensor<8xf16>) -> tensor<8xf16> {{\n{ops}  func.return %c : tensor<8xf16>\n}}\n"
    module = npuir.parse_text(npuir.make_context(), text, "m.mlir")
    calls: list[str] = []
    original = ReluOp.verify_

    def counting(self: ReluOp) -> None:
        calls.append(self.name)
        original(self)

    monkeypatch.setattr(ReluOp, "verify_", counting)
    from npuir import verifier

    verifier.forget_passed_signatures()
    verifier.verify(module)
    assert len(calls) == 1
    bad = text.replace(
        'npu.op_name = "c"} : (tensor<8xf16>) -> tensor<8xf16>',
        'npu.op_name = "c"} : (tensor<8xf16>) -> tensor<4xf16>',
    )
    assert bad != text
    assert _error_at(
        bad.replace("func.return %c : tensor<8xf16>", "func.return %b : tensor<8xf16>")
    ) == (4, 3)


def test_a_waits_event_source_is_checked_at_each_wait() -> None:
    # The second wait has the first's signature (event type, stream); its event is a
    # function argument, not a `sync.record`'s result.
    assert _error_at(WAIT_ON_AN_ARGUMENT) == (6, 3)


def test_what_a_walk_read_of_the_module_is_not_kept_for_the_next() -> None:
    # The stream declarations are read once per verification: after the one an op names
    # is erased, the next verification reports that op.
    from npuir.dialects.stream import DeclOp
    from npuir.verifier import verify

    text = TWO_MODULES.split("  builtin.module {\n    func.func @b")[0] + "}\n"
    module = npuir.parse_text(npuir.make_context(), text, "m.mlir")
    verify(module)
    decl = next(op for op in module.walk() if isinstance(op, DeclOp))
    block = decl.parent_block()
    assert block is not None
    block.erase_op(decl)
    with pytest.raises(DiagnosticError) as info:
        verify(module)
    assert "which no 'stream.decl' declares" in info.value.diagnostic.message


@pytest.mark.parametrize(
    ("text", "at"),
    [
        # An npu op at module level (a fuzzed input once crashed coreset-lower with it: the
        # core-limit analysis reads functions only), here after one in a function with its
        # signature, so the check cannot be memoised away.
        (
            "func.func @f(%x: tensor<8xf16>) -> tensor<8xf16> {\n"
            "  %r = npu.relu %x : (tensor<8xf16>) -> tensor<8xf16>\n"
            "  func.return %r : tensor<8xf16>\n"
            "}\n"
            "%s = npu.relu %q : (tensor<8xf16>) -> tensor<8xf16>\n"
            "func.func @g(%q: tensor<8xf16>) {\n  func.return\n}\n",
            (5, 1),
        ),
        # A scope at module level: its ops' parent is a scope, the scope's is the module.
        (
            'stream.switch "1" {\n  stream.yield\n}\n',
            (1, 1),
        ),
    ],
)
def test_a_program_op_outside_every_function_is_located(text: str, at: tuple[int, int]) -> None:
    from npuir.verifier import OUTSIDE_FUNCTION

    with pytest.raises(DiagnosticError) as info:
        npuir.parse_text(npuir.make_context(), text, "m.mlir")
    diagnostic = info.value.diagnostic
    assert diagnostic.kind == OUTSIDE_FUNCTION.code
    assert diagnostic.location is not None
    assert (diagnostic.location.line, diagnostic.location.column) == at


def test_the_fuzzed_module_level_op_is_an_error_not_a_crash(tmp_path: Path) -> None:
    # What the fuzzer found (seed 3535027883): a stray npu op between two functions whose
    # operands name the next function's arguments; npuir-opt reports it and exits 1.
    from npuir.tools import opt

    path = tmp_path / "m.mlir"
    path.write_text(
        "func.func @a() {\n  func.return\n}\n"
        "npu.relu %q : (tensor<8xf16>) -> tensor<8xf16>\n"
        "func.func @b(%q: tensor<8xf16>) {\n  func.return\n}\n"
    )
    assert opt.run([str(path), "-p", "stream-partition{mode=engine},coreset-lower"]) == 1
