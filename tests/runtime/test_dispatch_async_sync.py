"""dispatch_async with sync handlers: they run off the event loop, in daemon threads."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from typing import Any

import pytest

from mini_harness import MemorySink, ToolDefinition, ToolRegistry, ToolRuntime
from mini_harness.events import ToolFailed, ToolSucceeded
from mini_harness.runtime.handler_threads import HandlerThreads

OBJECT = {"type": "object"}
REQUEST = contextvars.ContextVar("REQUEST", default="none")


def napping_runtime(sink: MemorySink) -> ToolRuntime:
    registry = ToolRegistry()

    def nap(data: Any) -> Any:
        time.sleep(data["seconds"])
        thread = threading.current_thread()
        return {"daemon": thread.daemon, "main": thread is threading.main_thread()}

    registry.register(ToolDefinition("nap", "Sleeps.", OBJECT), nap)
    registry.register(
        ToolDefinition("request", "Reads a context variable.", OBJECT),
        lambda _: {"request": REQUEST.get()},
    )
    return ToolRuntime(registry, sink)


class TestSyncHandlersOffTheLoop:
    def test_concurrent_calls_overlap(self) -> None:
        """Two sync calls dispatched together take the time of one, in daemon threads."""
        runtime = napping_runtime(MemorySink())

        async def main() -> list[Any]:
            calls = (runtime.dispatch_async("nap", {"seconds": 0.4}) for _ in range(2))
            return list(await asyncio.gather(*calls))

        started = time.monotonic()
        results = asyncio.run(main())
        assert time.monotonic() - started < 0.75
        assert [r.output for r in results] == [{"daemon": True, "main": False}] * 2

    def test_cancellation_does_not_wait_for_the_handler(self) -> None:
        """Cancelling a running sync call records `cancelled` at once, not when it ends."""
        sink = MemorySink()
        runtime = napping_runtime(sink)

        async def main() -> float:
            task = asyncio.create_task(runtime.dispatch_async("nap", {"seconds": 5}))
            await asyncio.sleep(0.05)
            cancelled_at = time.monotonic()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return time.monotonic() - cancelled_at

        assert asyncio.run(main()) < 0.5
        failed = sink.events[-1]
        assert isinstance(failed, ToolFailed)
        assert failed.error.kind == "cancelled"

    def test_handler_sees_the_callers_context(self) -> None:
        """Context variables set by the caller reach a sync handler, as with asyncio.to_thread."""
        sink = MemorySink()
        runtime = napping_runtime(sink)

        async def main() -> Any:
            REQUEST.set("r-1")
            return (await runtime.dispatch_async("request", {})).output

        assert asyncio.run(main()) == {"request": "r-1"}
        assert isinstance(sink.events[-1], ToolSucceeded)


class TestSharedHandlerThreads:
    def test_sync_calls_reuse_threads_instead_of_starting_one_each(self) -> None:
        """Fifty sync calls in a row under dispatch_async run on the same few threads."""
        registry = ToolRegistry()
        seen: list[threading.Thread] = []  # held, so that no thread object's id is reused
        registry.register(
            ToolDefinition("where", "Says nothing.", OBJECT),
            lambda _: seen.append(threading.current_thread()),
        )
        runtime = ToolRuntime(registry, MemorySink())

        async def main() -> None:
            for _ in range(50):
                await runtime.dispatch_async("where", {})

        def pool_threads() -> set[threading.Thread]:
            return {t for t in threading.enumerate() if t.name == "mini-harness-tool"}

        before = pool_threads()  # other tests in this process may have started some
        asyncio.run(main())
        assert len(seen) == 50
        assert len(pool_threads() - before) <= 1
        assert len({id(thread) for thread in seen}) <= len(before) + 1

    def test_handlers_that_never_return_do_not_starve_later_calls(self) -> None:
        """Abandoned handlers stop counting against the limit: a later call still runs."""
        pool = HandlerThreads(limit=2)
        stuck = threading.Event()
        for _ in range(2):
            pool.submit(threading.Event.wait, stuck).abandon()
        time.sleep(0.05)  # both are running (and abandoned) by now
        done = threading.Event()
        pool.submit(threading.Event.set, done)
        try:
            assert done.wait(2)
        finally:
            stuck.set()

    def test_a_job_abandoned_before_it_starts_never_runs(self) -> None:
        """A call that timed out while queued does not run its handler later."""
        pool = HandlerThreads(limit=1)
        hold = threading.Event()
        pool.submit(threading.Event.wait, hold)
        ran: list[int] = []
        pool.submit(ran.append, 1).abandon()
        hold.set()
        last = threading.Event()
        pool.submit(threading.Event.set, last)
        assert last.wait(2)
        assert ran == []
