"""The executors a search's independent work runs on (`npuir.executor`), `npuir-advise
--jobs` and auto's candidates: every executor and every number of workers gives the same
advice and the same plan, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import npuir
from npuir.deep_stack import on_deep_stack
from npuir.diagnostics import UsageError
from npuir.executor import (
    ExecutorSpec,
    ProcessExecutor,
    SerialExecutor,
    best,
    current,
    parse_jobs,
    using,
)
from npuir.tools.advise import run as advise_tool
from npuir.tools.opt import run as opt_tool

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SEED = str(EXAMPLES / "seed_multistream.mlir")
AUTO = "stream-partition{mode=auto ignore-tags=true}"


def _square_minus(x: int, y: int) -> int:
    return x * x - y


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("1", ExecutorSpec("serial", 1)),
        ("3", ExecutorSpec("process", 3)),
        ("ray", ExecutorSpec("ray", None)),
        ("ray:2", ExecutorSpec("ray", 2)),
    ],
)
def test_jobs_spells_an_executor(text: str, spec: ExecutorSpec) -> None:
    assert parse_jobs(text) == spec


@pytest.mark.parametrize("text", ["0", "-1", "two", "ray:", "ray:0", "rays", "1e3", "٣", "9999"])
def test_a_bad_jobs_value_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="--jobs"):
        parse_jobs(text)


def test_the_tool_refuses_a_bad_jobs_value_with_its_kind(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert advise_tool([SEED, "--jobs", "0", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)
    assert error["error"]["kind"] == "usage.invalid"
    assert "--jobs" in error["error"]["message"]


def test_npuir_opt_refuses_a_bad_jobs_value(capsys: pytest.CaptureFixture[str]) -> None:
    assert opt_tool([SEED, "-p", AUTO, "--jobs", "ray:0"]) == 2
    assert "--jobs ray:0" in capsys.readouterr().err


def test_best_breaks_ties_by_key_whatever_the_order_of_completion() -> None:
    costs = {("gear 1", 2): 5, ("gear 0", 1): 3, ("gear 0", 0): 3, ("gear 1", 0): 9}
    orders = [dict(costs), dict(reversed(list(costs.items())))]
    assert {best(o, lambda c: c) for o in orders} == {(("gear 0", 0), 3)}


def test_serial_runs_tasks_when_asked_and_refuses_a_key_twice() -> None:
    with SerialExecutor[str, int]() as pool:
        pool.submit("b", _square_minus, 3, 1)
        pool.submit("a", _square_minus, 2, 0)
        with pytest.raises(ValueError, match="twice"):
            pool.submit("a", _square_minus, 1, 1)
        assert list(pool.results().items()) == [("b", 8), ("a", 4)]


@pytest.mark.slow
def test_a_process_pool_gives_what_serial_gives() -> None:
    tasks = {(i % 3, i): (i, i // 2) for i in range(12)}
    outs = []
    for pool in (SerialExecutor[tuple[int, int], int](), ProcessExecutor[tuple[int, int], int](2)):
        with pool:
            for key, args in tasks.items():
                pool.submit(key, _square_minus, *args)
            outs.append(pool.results())
    assert outs[0] == outs[1] and list(outs[0]) == list(tasks)


def _advice(capsys: pytest.CaptureFixture[str], *jobs: str) -> str:
    assert advise_tool([SEED, "--json", *jobs]) == 0
    return capsys.readouterr().out


def _auto_plan(text: str) -> str:
    """The module `stream-partition{mode=auto}` plans for `text`, printed."""
    ctx = npuir.make_context()
    module = npuir.parse_text(ctx, text, "moe_decode.mlir")
    npuir.run_passes(ctx, module, npuir.build_pipeline(AUTO), verify_each=False)
    return npuir.print_ir(module)


def test_a_run_outside_any_executor_batches_serially() -> None:
    """`current` is serial unless a tool set one, and `using` sets it for its block only
    (through the deep-stack thread a pipeline runs on)."""
    pool = SerialExecutor[str, int]()
    assert isinstance(current(), SerialExecutor) and current() is not pool
    with using(pool):
        assert current() is pool
        assert on_deep_stack(current) is pool
        assert pool.run({"b": (_square_minus, (3, 1)), "a": (_square_minus, (2, 0))}) == {
            "b": 8,
            "a": 4,
        }
    assert current() is not pool


@pytest.mark.slow
def test_advice_and_auto_plans_are_the_same_on_every_executor(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Serial, a pool of two processes and Ray on two CPUs (real worker processes, not the
    local mode) give the same advice, and `stream-partition{mode=auto}`, its candidates run
    as batches on each, the same plan, byte for byte."""
    serial = _advice(capsys)
    assert json.loads(serial)["variants"]
    text = (EXAMPLES / "moe_decode.mlir").read_text()
    plan = _auto_plan(text)
    assert _advice(capsys, "--jobs", "2") == serial
    # Nothing taken back: every candidate of auto's batches runs on a worker, whatever the
    # machine's load (with taking back, a loaded parent may run them all itself).
    with ProcessExecutor[Any, Any](2, take_back=False) as pool:
        assert pool.run({i: (_square_minus, (i, 0)) for i in range(4)}) == {0: 0, 1: 1, 2: 4, 3: 9}
        pool.batched = 0
        with using(pool):
            assert _auto_plan(text) == plan
        assert pool.batched > 0 and pool.taken_back == 0
    # The same through npuir-opt --jobs 2 (its own pool).
    out = tmp_path / "out.mlir"
    assert (
        opt_tool([str(EXAMPLES / "moe_decode.mlir"), "-p", AUTO, "--jobs", "2", "-o", str(out)])
        == 0
    )
    assert out.read_text() == plan
    ray = pytest.importorskip("ray")
    # One Ray for both: the tool's executor joins it rather than starting its own.
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        assert _advice(capsys, "--jobs", "ray:2") == serial
        with parse_jobs("ray:2").make() as ray_pool, using(ray_pool):
            assert _auto_plan(text) == plan
    finally:
        ray.shutdown()
