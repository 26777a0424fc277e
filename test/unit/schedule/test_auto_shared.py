"""`shared_searches`: within it, `assign_auto` searches a program once, and a copy of the
same IR gets the same answer without a second search; anything that changes what the
search reads (an op, a core limit, the stream cap) searches again, and outside the block
nothing is shared."""

from __future__ import annotations

import pytest
from xdsl.dialects.func import FuncOp

import npuir
import npuir.schedule.auto as auto
from npuir.analysis.program import Program, build_program
from npuir.backends.npu.hardware import load_hardware

TINY = load_hardware("tiny")
T = "(tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>"
BRANCHES = f"""\
  %a = npu.matmul %x, %w : {T}
  %b = npu.add %x, %w : {T}
  %c = npu.matmul %b, %w : {T}
  %d = npu.add %a, %c : {T}"""


def _program(body: str = BRANCHES) -> Program:
    text = (
        f"func.func @f(%x: tensor<64x64xf16>, %w: tensor<64x64xf16>) {{\n{body}\n  func.return\n}}"
    )
    module = npuir.parse_text(npuir.make_context(), text)
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    return build_program(func)


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the searches `assign_auto` runs."""
    calls: list[int] = []
    original = auto._search

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(auto, "_search", counting)
    return calls


def _auto(prog: Program, max_streams: int = 8, limits: auto.LimitFn | None = None) -> object:
    return auto.assign_auto(prog, [None] * len(prog), {}, max_streams, TINY, limits)


def test_a_copy_of_the_program_is_searched_once_with_the_same_answer(
    searches: list[int],
) -> None:
    alone = _auto(_program())
    assert len(searches) == 1
    with auto.shared_searches():
        first = _auto(_program())
        second = _auto(_program())
    assert len(searches) == 2
    assert first == second == alone
    assert first is not second  # each caller gets its own lists


def test_what_the_search_reads_is_part_of_the_key(searches: list[int]) -> None:
    def one_core(p: Program, n: int, engine: str) -> int | None:
        return 1

    other = BRANCHES.replace("%c = npu.matmul", "%c = npu.add")
    with auto.shared_searches():
        _auto(_program())
        _auto(_program(other))  # another op
        _auto(_program(), max_streams=2)  # another cap
        _auto(_program(), limits=one_core)  # other core limits
    assert len(searches) == 4


def test_nothing_is_shared_outside_the_block(searches: list[int]) -> None:
    with auto.shared_searches():
        _auto(_program())
    _auto(_program())
    _auto(_program())
    assert len(searches) == 3
