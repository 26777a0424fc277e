"""Where a search's independent tasks run: in this process, on a process pool, or on Ray.

A task is a top-level function and its arguments (both picklable: a pool or a Ray worker
runs them in another process) submitted under a key, such as (gear, candidate).  `results`
waits for every task and gives their results by key; a caller picks among them with
`best`, by (cost, key), never by the order in which they completed, so every executor and
every number of workers gives the same answer.

Tasks start when they are submitted on a pool or on Ray, so the caller can go on with its
own work meanwhile (the pipeline `npuir-advise` runs: the baselines are timed while it
searches); the serial executor runs them when their results are asked for, in submission
order.

`--jobs` spells an executor: `N` (a pool of N worker processes; 1 is serial), `ray` (Ray
with the CPUs it finds, or the cluster `RAY_ADDRESS` names) or `ray:N` (Ray on N CPUs).
Ray is an optional extra (`pip install 'npuir[ray]'`); its workers are processes of its
own, which import npuir afresh.

A search deep inside a pass (`stream-partition{mode=auto}`'s candidates) takes its executor
from `current()`: what the tool set with `using` (serial when none is set).  It runs its
tasks as a batch (`Executor.run`), whose results are its own, not those of the tasks the
tool submitted beside it.
"""

from __future__ import annotations

import multiprocessing
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from npuir.diagnostics import UsageError

__all__ = [
    "Executor",
    "ExecutorSpec",
    "ProcessExecutor",
    "RayExecutor",
    "SerialExecutor",
    "Task",
    "best",
    "current",
    "parse_jobs",
    "using",
]

K = TypeVar("K", bound=Hashable)
R = TypeVar("R")
C = TypeVar("C")

Task = tuple[Callable[..., R], tuple[Any, ...]]
"""A function and its arguments, run as one task."""

MAX_JOBS = 256
"""The most workers `--jobs` takes: a bound, so that a typo cannot fork thousands."""


@dataclass(frozen=True)
class ExecutorSpec:
    """What `--jobs` asked for: `kind` is "serial", "process" or "ray"; `workers` is the
    pool's size or Ray's CPUs (None: what Ray finds)."""

    kind: str
    workers: int | None

    def make(self) -> Executor[Any, Any]:
        if self.kind == "ray":
            return RayExecutor(self.workers)
        if self.kind == "process" and self.workers is not None and self.workers > 1:
            return ProcessExecutor(self.workers)
        return SerialExecutor()


def parse_jobs(text: str) -> ExecutorSpec:
    """`--jobs`'s value (see the module docstring); `UsageError` for anything else."""
    if text == "ray":
        return ExecutorSpec("ray", None)
    ray = text.startswith("ray:")
    count = text[4:] if ray else text
    if not (count.isascii() and count.isdigit() and 1 <= int(count) <= MAX_JOBS):
        raise UsageError(
            f"--jobs {text}: give a number of workers from 1 to {MAX_JOBS}, 'ray' or 'ray:N'"
        )
    workers = int(count)
    if ray:
        return ExecutorSpec("ray", workers)
    return ExecutorSpec("process" if workers > 1 else "serial", workers)


class Executor(ABC, Generic[K, R]):
    """Runs tasks submitted under keys; `results` gives every result by key."""

    def __enter__(self) -> Executor[K, R]:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @abstractmethod
    def submit(self, key: K, fn: Callable[..., R], *args: Any) -> None:
        """Run `fn(*args)` as the task `key` (keys are unique)."""

    @abstractmethod
    def results(self) -> dict[K, R]:
        """Every task's result by key, in submission order (waiting for the unfinished); a
        task's exception is raised here."""

    def run(self, tasks: Mapping[K, Task[R]]) -> dict[K, R]:
        """A batch: run `tasks` and give their results by key, in `tasks`' order, waiting
        for these only (not for tasks `submit`ted before).  Serial here; executors with
        workers run them there."""
        return {key: fn(*args) for key, (fn, args) in tasks.items()}

    def close(self) -> None:
        """Release the workers (what `with` does on leaving)."""


class SerialExecutor(Executor[K, R]):
    """Runs each task in this process when the results are asked for."""

    def __init__(self) -> None:
        self._tasks: dict[K, tuple[Callable[..., R], tuple[Any, ...]]] = {}

    def submit(self, key: K, fn: Callable[..., R], *args: Any) -> None:
        _unique(key, self._tasks)
        self._tasks[key] = (fn, args)

    def results(self) -> dict[K, R]:
        return {key: fn(*args) for key, (fn, args) in self._tasks.items()}


class ProcessExecutor(Executor[K, R]):
    """A pool of `workers` processes started by a fork server that has imported npuir's
    driver once (a fork of this process could copy a lock another thread holds)."""

    def __init__(self, workers: int, take_back: bool = True) -> None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["npuir.driver.advise"])
        self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
        self._futures: dict[K, Future[R]] = {}
        self.batched = 0
        """Tasks `run` was given."""
        self.taken_back = 0
        """Of those, the ones no worker had taken when their result was asked for, run
        here instead."""
        self.take_back = take_back
        """Whether `run` takes back what no worker has started (False: every task of a batch
        runs on a worker, whatever the load; for tests that must see workers run them)."""

    def submit(self, key: K, fn: Callable[..., R], *args: Any) -> None:
        _unique(key, self._futures)
        self._futures[key] = self._pool.submit(fn, *args)

    def results(self) -> dict[K, R]:
        return {key: future.result() for key, future in self._futures.items()}

    def run(self, tasks: Mapping[K, Task[R]]) -> dict[K, R]:
        """The batch goes to the pool; a task no worker has taken by the time its result is
        asked for is taken back and run here (the workers may be busy with what the tool
        submitted before, and this process would only wait)."""
        futures = {key: self._pool.submit(fn, *args) for key, (fn, args) in tasks.items()}
        self.batched += len(futures)
        out: dict[K, R] = {}
        for key, future in futures.items():
            if self.take_back and future.cancel():
                fn, args = tasks[key]
                out[key] = fn(*args)
                self.taken_back += 1
            else:
                out[key] = future.result()
        return out

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class RayExecutor(Executor[K, R]):
    """Tasks as Ray remote functions.  Starts Ray (on `cpus` CPUs, or joins the cluster
    `RAY_ADDRESS` names) unless it runs already, and shuts down only what it started."""

    def __init__(self, cpus: int | None) -> None:
        try:
            import ray
        except ImportError:
            raise UsageError(
                "--jobs ray needs Ray, an optional extra: pip install 'npuir[ray]'"
            ) from None
        self._ray = ray
        self._started = not ray.is_initialized()
        if self._started:
            ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
        self._refs: dict[K, Any] = {}

    def submit(self, key: K, fn: Callable[..., R], *args: Any) -> None:
        _unique(key, self._refs)
        self._refs[key] = self._ray.remote(fn).remote(*args)

    def results(self) -> dict[K, R]:
        values = self._ray.get(list(self._refs.values()))
        return dict(zip(self._refs, values, strict=True))

    def run(self, tasks: Mapping[K, Task[R]]) -> dict[K, R]:
        refs = [self._ray.remote(fn).remote(*args) for fn, args in tasks.values()]
        return dict(zip(tasks, self._ray.get(refs), strict=True))

    def close(self) -> None:
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()


_CURRENT: ContextVar[Executor[Any, Any] | None] = ContextVar("npuir_executor", default=None)


@contextmanager
def using(executor: Executor[Any, Any]) -> Iterator[None]:
    """Within this block, searches run their batches on `executor` (`current`)."""
    token = _CURRENT.set(executor)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current() -> Executor[Any, Any]:
    """The executor `using` set, or a serial one."""
    executor = _CURRENT.get()
    return executor if executor is not None else SerialExecutor()


def _unique(key: object, tasks: Mapping[Any, object]) -> None:
    if key in tasks:
        raise ValueError(f"task {key!r} was submitted twice")


def best(results: Mapping[K, R], cost: Callable[[R], C]) -> tuple[K, R]:
    """The result of least cost, ties going to the least key: the same whatever order the
    tasks finished in.  `results` must not be empty; costs and keys must be comparable."""
    key = min(results, key=lambda k: (cost(results[k]), k))
    return key, results[key]
