from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mini_harness import (
    InvalidInputError,
    InvalidOutputError,
    MemorySink,
    ToolCallError,
    ToolCancelledError,
    ToolDefinition,
    ToolHandlerError,
    ToolRegistry,
    ToolResult,
    ToolRuntime,
    ToolTimeoutError,
    UnknownToolError,
)
from mini_harness.events import RunStarted, ToolCalled, ToolFailed, ToolSucceeded, TranscriptStarted

OBJECT = {"type": "object"}


@pytest.fixture(name="sink")
def _sink() -> MemorySink:
    return MemorySink()


@pytest.fixture(name="runtime")
def _runtime(registry: ToolRegistry, sink: MemorySink) -> ToolRuntime:
    return ToolRuntime(registry, sink)


def _types(sink: MemorySink) -> list[str]:
    return [type(e).__name__ for e in sink.events]


class TestSuccess:
    def test_echo_returns_a_tool_result(self, runtime: ToolRuntime) -> None:
        """dispatch returns name, input, output and a duration."""
        result = runtime.dispatch("echo", {"text": "hello"})
        assert (result.name, result.input, result.output) == (
            "echo",
            {"text": "hello"},
            {"text": "hello"},
        )
        assert result.duration_ms >= 0

    def test_events_of_a_run(self, runtime: ToolRuntime, sink: MemorySink) -> None:
        """A run records its header, RunStarted once, then ToolCalled + terminal per call."""
        runtime.dispatch("echo", {"text": "a"})
        runtime.dispatch("echo", {"text": "b"})
        assert _types(sink) == [
            "TranscriptStarted",
            "RunStarted",
            "ToolCalled",
            "ToolSucceeded",
            "ToolCalled",
            "ToolSucceeded",
        ]
        run = sink.events[1]
        assert isinstance(run, RunStarted)
        assert [t.name for t in run.tools] == [
            "echo",
            "list_files",
            "read_file",
            "search_text",
            "boom",
            "nan",
            "add",
        ]
        called, done = sink.events[2], sink.events[3]
        assert isinstance(called, ToolCalled)
        assert isinstance(done, ToolSucceeded)
        assert called.call_id == done.call_id
        assert called.run_id == done.run_id == runtime.run_id
        assert len(sink) == 6

    def test_call_ids_are_unique(self, runtime: ToolRuntime, sink: MemorySink) -> None:
        """Every call in a run gets its own id."""
        for _ in range(50):
            runtime.dispatch("echo", {"text": "x"})
        ids = [e.call_id for e in sink.events if isinstance(e, ToolCalled)]
        assert len(set(ids)) == 50

    def test_duration_comes_from_the_monotonic_clock(self, registry: ToolRegistry) -> None:
        """durationMs is measured with the injected monotonic clock, never wall time."""
        ticks = iter([0, 2_500_000])
        runtime = ToolRuntime(registry, MemorySink(), monotonic_ns=lambda: next(ticks))
        assert runtime.dispatch("echo", {"text": "x"}).duration_ms == 2.5

    def test_the_wait_for_approval_is_not_the_tools_time(self, registry: ToolRegistry) -> None:
        """A person who takes 7 s at the approval prompt does not make a 2.5 ms tool's
        durationMs 7,002.5: the tool's own time is measured after the approval (sync and
        async dispatch alike)."""
        now = [0]

        def slow_person(call: object) -> None:
            now[0] += 7_000_000_000  # seven seconds on the prompt, then approved
            return

        def clock() -> int:  # 2.5 ms pass between two readings
            now[0] += 2_500_000
            return now[0]

        for dispatch in ("sync", "async"):
            now[0] = 0
            runtime = ToolRuntime(registry, MemorySink(), monotonic_ns=clock, approver=slow_person)
            if dispatch == "sync":
                result = runtime.dispatch("echo", {"text": "x"})
            else:
                result = asyncio.run(runtime.dispatch_async("echo", {"text": "x"}))
            assert result.duration_ms == 2.5, dispatch

    @pytest.mark.parametrize(
        ("elapsed_ns", "expected"),
        [
            (1_234_567, 1.235),
            (1_234_499, 1.234),
            (999, 0.001),
            (400, 0.0),
            (12_000_000, 12.0),
            # Half a microsecond: ties go to the even microsecond, as documented.
            (500, 0.0),
            (2_500, 0.002),
            (5_500, 0.006),
            (2_499_500, 2.5),
        ],
    )
    def test_duration_is_rounded_to_microseconds(
        self, registry: ToolRegistry, elapsed_ns: int, expected: float
    ) -> None:
        """durationMs keeps microseconds, rounded (ties to even); a failed call's is rounded
        the same way."""
        ticks = iter([0, elapsed_ns, 0, elapsed_ns])
        sink = MemorySink()
        runtime = ToolRuntime(registry, sink, monotonic_ns=lambda: next(ticks))
        assert runtime.dispatch("echo", {"text": "x"}).duration_ms == expected
        with pytest.raises(InvalidInputError):
            runtime.dispatch("echo", {"text": 1})
        failed = [e for e in sink.events if isinstance(e, ToolFailed)]
        assert failed[0].duration_ms == expected

    def test_result_is_frozen(self, runtime: ToolRuntime) -> None:
        """A ToolResult cannot be changed after dispatch returned it."""
        result = runtime.dispatch("echo", {"text": "hello"})
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            result.output = {"text": "changed"}  # type: ignore[misc]
        assert result.output == {"text": "hello"}

    def test_async_handler(self, sink: MemorySink) -> None:
        """An async handler works through the sync dispatch and through dispatch_async."""
        registry = ToolRegistry()

        async def double(data: Any) -> Any:
            await asyncio.sleep(0)
            return {"n": data["n"] * 2}

        registry.register(ToolDefinition("double", "Doubles n.", OBJECT), double)
        runtime = ToolRuntime(registry, sink)
        assert runtime.dispatch("double", {"n": 2}).output == {"n": 4}
        assert asyncio.run(runtime.dispatch_async("double", {"n": 3})).output == {"n": 6}
        assert _types(sink).count("ToolSucceeded") == 2


class TestFailures:
    @pytest.mark.parametrize(
        ("name", "tool_input", "error", "kind", "message"),
        [
            ("nope", {}, UnknownToolError, "unknown_tool", "Unknown tool: nope"),
            (
                "echo",
                {"text": 1},
                InvalidInputError,
                "invalid_input",
                "Invalid input for echo.text: expected string",
            ),
            ("boom", {}, ToolHandlerError, "handler_error", "Tool boom failed: ValueError: boom"),
            ("nan", {}, InvalidOutputError, "invalid_output", "$.value: nan is not a JSON number"),
        ],
    )
    def test_failure_is_recorded_then_raised(
        self,
        runtime: ToolRuntime,
        sink: MemorySink,
        name: str,
        tool_input: Any,
        error: type[ToolCallError],
        kind: str,
        message: str,
    ) -> None:
        """Each failure is recorded as ToolFailed with its kind, then raised as a typed error."""
        with pytest.raises(error) as info:
            runtime.dispatch(name, tool_input)
        assert message in info.value.message
        assert _types(sink)[-2:] == ["ToolCalled", "ToolFailed"]
        failed = sink.events[-1]
        assert isinstance(failed, ToolFailed)
        assert failed.error.kind == kind == info.value.kind
        assert message in failed.error.message
        assert info.value.call_id == failed.call_id

    def test_handler_error_keeps_type_without_traceback(
        self, runtime: ToolRuntime, sink: MemorySink
    ) -> None:
        """The exception's type and message are kept; no traceback goes into the event."""
        with pytest.raises(ToolHandlerError):
            runtime.dispatch("boom", {})
        failed = sink.events[-1]
        assert isinstance(failed, ToolFailed)
        assert failed.error.type == "ValueError"
        assert "Traceback" not in failed.error.message

    @pytest.mark.parametrize(
        "output",
        [b"bytes", object(), {"x": float("inf")}, {1: "int key"}, "\ud800", {"s": {1, 2}}],
    )
    def test_non_json_output_is_invalid_output(self, sink: MemorySink, output: object) -> None:
        """Bytes, objects, NaN/Infinity, non-string keys and lone surrogates never reach a line."""
        registry = ToolRegistry()
        registry.register(ToolDefinition("bad", "Bad output.", OBJECT), lambda _: output)
        with pytest.raises(InvalidOutputError):
            ToolRuntime(registry, sink).dispatch("bad", {})
        failed = sink.events[-1]
        assert isinstance(failed, ToolFailed)
        assert failed.error.kind == "invalid_output"

    def test_non_json_input_is_invalid_input(self, runtime: ToolRuntime, sink: MemorySink) -> None:
        """Input that is not JSON (from the Python API) fails validation and is recorded."""
        with pytest.raises(InvalidInputError, match="not a JSON value"):
            runtime.dispatch("echo", {"text": b"raw"})
        called = sink.events[-2]
        assert isinstance(called, ToolCalled)
        assert isinstance(called.input, str)

    @pytest.mark.parametrize(
        "value",
        [uuid.UUID(int=7), type("Name", (str,), {})("a"), {"nested": uuid.UUID(int=7)}],
        ids=["uuid", "str-subclass", "nested-uuid"],
    )
    def test_input_json_encodes_but_no_schema_reads_is_invalid_input(
        self, runtime: ToolRuntime, sink: MemorySink, value: object
    ) -> None:
        """orjson writes a UUID or a str subclass as a string, but validation cannot read it:
        the call fails as invalid input, recorded, instead of a ValueError left in doubt."""
        with pytest.raises(InvalidInputError, match="Invalid input for echo: not a JSON value"):
            runtime.dispatch("echo", {"text": value})
        failed = sink.events[-1]
        assert isinstance(failed, ToolFailed)
        assert failed.error.kind == "invalid_input"

    def test_timeout_sync_and_async(self, sink: MemorySink) -> None:
        """A handler past its timeout is recorded as ToolFailed{timeout}."""
        registry = ToolRegistry()

        def slow(_: Any) -> Any:
            time.sleep(1)
            return {}

        async def slow_async(_: Any) -> Any:
            await asyncio.sleep(1)
            return {}

        registry.register(ToolDefinition("slow", "Slow.", OBJECT), slow, timeout=0.05)
        registry.register(ToolDefinition("slow_a", "Slow.", OBJECT), slow_async, timeout=0.05)
        runtime = ToolRuntime(registry, sink)
        for name in ("slow", "slow_a"):
            with pytest.raises(ToolTimeoutError, match=f"Tool {name} timed out after 0.05 s"):
                runtime.dispatch(name, {})
            with pytest.raises(ToolTimeoutError):
                asyncio.run(runtime.dispatch_async(name, {}))
        kinds = [e.error.kind for e in sink.events if isinstance(e, ToolFailed)]
        assert kinds == ["timeout"] * 4

    def test_cancellation_is_recorded(self, sink: MemorySink) -> None:
        """A cancelled async dispatch records ToolFailed{cancelled} and stays cancelled."""
        registry = ToolRegistry()

        async def forever(_: Any) -> Any:
            await asyncio.sleep(60)

        registry.register(ToolDefinition("forever", "Never ends.", OBJECT), forever)
        runtime = ToolRuntime(registry, sink)

        async def main() -> None:
            task = asyncio.create_task(runtime.dispatch_async("forever", {}))
            await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(main())
        failed = sink.events[-1]
        assert isinstance(failed, ToolFailed)
        assert failed.error.kind == "cancelled"
        assert ToolCancelledError.kind == "cancelled"

    def test_keyboard_interrupt_is_recorded_and_propagates(self, sink: MemorySink) -> None:
        """Ctrl-C in a handler leaves ToolFailed{cancelled} and still interrupts the caller."""
        registry = ToolRegistry()

        def interrupted(_: Any) -> Any:
            raise KeyboardInterrupt

        registry.register(ToolDefinition("ctrl_c", "Interrupted.", OBJECT), interrupted)
        with pytest.raises(KeyboardInterrupt):
            ToolRuntime(registry, sink).dispatch("ctrl_c", {})
        failed = sink.events[-1]
        assert isinstance(failed, ToolFailed)
        assert failed.error.kind == "cancelled"


class TestAttempt:
    """attempt() dispatches like dispatch() and returns a failure instead of raising it."""

    def test_success_returns_the_result(self, runtime: ToolRuntime) -> None:
        """attempt() returns the same ToolResult dispatch() would, and records success."""
        result = runtime.attempt("echo", {"text": "hi"})
        assert isinstance(result, ToolResult)
        assert result.output == {"text": "hi"}
        assert isinstance(runtime.sink, MemorySink)
        assert isinstance(runtime.sink.events[-1], ToolSucceeded)

    @pytest.mark.parametrize(
        ("name", "tool_input", "error"),
        [
            ("ehco", {}, UnknownToolError),
            ("echo", {"text": 1}, InvalidInputError),
            ("boom", {}, ToolHandlerError),
        ],
    )
    def test_failure_is_returned_not_raised(
        self,
        runtime: ToolRuntime,
        name: str,
        tool_input: dict[str, object],
        error: type[ToolCallError],
    ) -> None:
        """A failed call comes back as its ToolCallError, recorded as ToolFailed of that kind."""
        outcome = runtime.attempt(name, tool_input)
        assert type(outcome) is error
        assert isinstance(runtime.sink, MemorySink)
        failed = runtime.sink.events[-1]
        assert isinstance(failed, ToolFailed)
        assert failed.error.kind == error.kind


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)


class TestProperties:
    # The registry fixture holds no per-call state, so sharing it across examples is safe.
    @settings(
        max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(tool_input=JSON, name=st.sampled_from(["echo", "add", "nope"]))
    def test_any_json_input_gives_one_terminal_event(
        self, registry: ToolRegistry, tool_input: Any, name: str
    ) -> None:
        """Arbitrary JSON never raises anything but our typed errors; one terminal per call."""
        sink = MemorySink()
        runtime = ToolRuntime(registry, sink)
        with contextlib.suppress(InvalidInputError, UnknownToolError):
            runtime.dispatch(name, tool_input)
        events = sink.events
        assert isinstance(events[0], TranscriptStarted)
        assert [type(e).__name__ for e in events[2:]] in (
            ["ToolCalled", "ToolSucceeded"],
            ["ToolCalled", "ToolFailed"],
        )
