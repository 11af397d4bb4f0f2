"""Running handlers off the caller's thread: one shared, bounded pool of daemon threads,
timeouts, and coroutines run from sync code."""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

import attrs

from mini_harness.errors import HandlerTimeoutError

MAX_HANDLER_THREADS = 32
"""Threads that may run handlers at once; more calls wait for one to be free."""

_QUEUED, _RUNNING, _ABANDONED, _DROPPED, _DONE = range(5)


@attrs.define(eq=False)
class HandlerJob:
    """`func(arg)` given to the threads; `abandon()` when its caller stops waiting."""

    func: Callable[[Any], object]
    arg: object
    deliver: Callable[[], None] | None
    _pool: HandlerThreads
    state: int = _QUEUED
    value: object = None
    error: BaseException | None = None  # what func raised, for the caller

    def result(self) -> object:
        """What `func(arg)` returned; raises what it raised."""
        if self.error is not None:
            raise self.error
        return self.value

    def abandon(self) -> None:
        """The caller stopped waiting (timeout, cancellation): a queued job never runs, and a
        running one no longer counts against the limit (a handler cannot be stopped)."""
        with self._pool._lock:
            if self.state == _QUEUED:
                self.state = _DROPPED
            elif self.state == _RUNNING:
                self.state = _ABANDONED
                self._pool._stuck += 1


class HandlerThreads:
    """A pool of daemon threads, started as calls need them, up to `limit` at work.

    Daemon threads, unlike concurrent.futures' (joined at exit): an abandoned handler
    (timed out, or its caller cancelled) must not hold the process open. Such a handler
    keeps its thread until it returns, but no longer counts against the limit, so handlers
    that never return cannot starve the others. Threads do not survive `os.fork`: a child
    notices its new process id and starts its own.
    """

    def __init__(self, limit: int = MAX_HANDLER_THREADS) -> None:
        self._limit = limit
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()  # a thread of the parent may have held it at the fork
        self._jobs: queue.SimpleQueue[HandlerJob] = queue.SimpleQueue()
        self._threads = 0  # started and alive
        self._idle = 0  # waiting for a job
        self._queued = 0  # submitted, not yet taken by a thread
        self._stuck = 0  # running an abandoned job

    def submit(
        self, func: Callable[[Any], object], arg: object, deliver: Callable[[], None] | None = None
    ) -> HandlerJob:
        """Run `func(arg)` in one of the threads, then `deliver()` (which tells the caller
        `job.result()` is ready) once the thread counts as free again."""
        if self._pid != os.getpid():
            self._reset()
        job = HandlerJob(func, arg, deliver, self)
        with self._lock:
            self._queued += 1
            start = self._queued > self._idle and self._threads - self._stuck < self._limit
            if start:
                self._threads += 1
        self._jobs.put(job)
        if start:
            thread = threading.Thread(
                target=self._serve, args=(self._jobs,), name="mini-harness-tool", daemon=True
            )
            thread.start()
        return job

    def _serve(self, jobs: queue.SimpleQueue[HandlerJob]) -> None:
        with self._lock:
            self._idle += 1
        while True:
            job = jobs.get()
            with self._lock:
                self._queued -= 1
                if job.state != _QUEUED:  # dropped by its caller: this thread stays idle
                    continue
                self._idle -= 1
                job.state = _RUNNING
            try:
                job.value = job.func(job.arg)
            except BaseException as exc:  # handed to the caller by job.result()
                job.error = exc
            finally:
                with self._lock:
                    if job.state == _ABANDONED:
                        self._stuck -= 1
                    job.state = _DONE
                    # Counted idle before the caller hears back: its next call, made as
                    # soon as it has this result, finds this thread instead of a new one.
                    self._idle += 1
            if job.deliver is not None:
                job.deliver()


HANDLER_THREADS = HandlerThreads()
"""The one pool of the process."""


async def sync_off_loop(handler: Callable[[Any], Any], arg: object) -> object:
    """Run a sync handler in the shared handler threads; the loop keeps serving meanwhile.

    Not `asyncio.to_thread`: the default executor's threads are joined at exit, so one
    abandoned handler (timed out or cancelled) would hold the process open until it ends.
    """
    import asyncio

    loop = asyncio.get_running_loop()
    # The future only says the job is done; its outcome, exception included, is raised
    # here: an exception such as GeneratorExit set on the future would be thrown into the
    # task and escape every handler between it and the event loop.
    future: asyncio.Future[None] = loop.create_future()

    def settle() -> None:
        if not future.done():  # else the caller stopped waiting (timeout or cancellation)
            future.set_result(None)

    def deliver() -> None:
        with contextlib.suppress(RuntimeError):  # the loop is already closed
            loop.call_soon_threadsafe(settle)

    context = contextvars.copy_context()
    job = HANDLER_THREADS.submit(lambda value: context.run(handler, value), arg, deliver)
    try:
        await future
    except BaseException:
        job.abandon()
        raise
    output = job.result()
    if inspect.isawaitable(output):
        return await output
    return output


def run_coroutine(awaitable: Any, timeout: float | None) -> object:
    """Await `awaitable` from sync code, on an event loop of its own; HandlerTimeoutError past
    `timeout` seconds."""
    import asyncio  # only async handlers need it

    async def runner() -> object:
        try:
            return await asyncio.wait_for(awaitable, timeout)
        except TimeoutError:
            raise HandlerTimeoutError from None

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(runner())
    # Called from inside a running loop: run the coroutine on a loop of its own.
    return call_in_thread(lambda _: asyncio.run(runner()), None, None)


def call_in_thread(func: Callable[[Any], Any], arg: object, timeout: float | None) -> object:
    """Run func(arg) in the shared handler threads; HandlerTimeoutError if it does not finish in
    time.

    A thread cannot be killed: a timed-out handler keeps running in the background, but
    its result is discarded and the call is recorded as timed out.
    """
    done = threading.Event()
    job = HANDLER_THREADS.submit(func, arg, done.set)
    if not done.wait(timeout):
        job.abandon()
        raise HandlerTimeoutError
    return job.result()
