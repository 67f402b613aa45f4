"""A node's worker processes: CPU-bound work of its polled sources (a feed's parse) runs there.

One interpreter runs one thread of Python at a time, so a node whose fetchers parse in its own
process uses one core however many the host has, and its answers to the hub's polls wait
behind the parses. Sources hand such work here instead: a bounded pool of processes, as many
as the host's cores unless configured, started with the node (and again after a loss). The
calling fetcher thread waits off the interpreter while a worker runs the job.

Workers start from a fork server (never a fork of the threaded node itself) that has already
imported the modules the jobs need, so a new worker is ready in milliseconds. A worker that
dies (a parser's crash on hostile input, the kernel's OOM killer) costs the jobs it had in
flight, which fail with `WorkerLost`, and no more: the next job starts a new pool. A node that
dies takes its workers with it, `kill -9` included: each watches the node's process and exits
with it (otherwise the pool's own pipes would keep the workers and their fork server alive).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import select
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

log = logging.getLogger(__name__)

_T = TypeVar("_T")


class WorkerLost(Exception):
    """The worker running a job ended before answering; the job may be tried again."""


class WorkerProcesses:
    """A bounded pool of worker processes that runs picklable calls and waits for them."""

    def __init__(self, workers: int, preload: Sequence[str] = ()) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self._workers = workers
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(list(preload))
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._closed = False

    def start(self) -> None:
        """Start the fork server and a first worker in the background, so that a node's first
        parse does not wait for them (they import the parsers: half a second of CPU)."""
        threading.Thread(target=self._warm, name="workers-start", daemon=True).start()

    def run(self, call: Callable[..., _T], *args: object) -> _T:
        """`call(*args)` in a worker; its exception is raised here. WorkerLost when the worker
        died under it (the pool is replaced for the next job)."""
        pool = self._current()
        try:
            return pool.submit(call, *args).result()
        except BrokenProcessPool as error:
            self._replace(pool)
            raise WorkerLost("the worker process ended before answering") from error

    def close(self) -> None:
        """Stop the workers; jobs not started are cancelled, and no new one runs."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def _warm(self) -> None:
        with contextlib.suppress(WorkerLost, CancelledError):  # closed meanwhile
            self.run(os.getpid)

    def _current(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._closed:
                raise WorkerLost("the node's worker processes are stopped")
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    self._workers,
                    mp_context=self._context,
                    initializer=_exit_with,
                    initargs=(os.getpid(),),
                )
            return self._pool

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        """Drop a broken pool, once, whichever of its callers notices first."""
        with self._lock:
            if self._pool is broken:
                self._pool = None
                log.warning("a worker process died; starting new workers")
        broken.shutdown(wait=False, cancel_futures=True)


def _exit_with(node_pid: int) -> None:
    """In each worker: end this process as soon as the node's ends."""
    try:
        node = os.pidfd_open(node_pid)
    except ProcessLookupError:
        os._exit(0)
    threading.Thread(target=_await_exit, args=(node,), name="node-watch", daemon=True).start()


def _await_exit(node: int) -> None:
    select.select([node], [], [])  # a process's pidfd turns readable when it ends
    os._exit(0)
