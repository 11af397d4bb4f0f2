from __future__ import annotations

import pytest

from mini_harness import (
    InvalidInputError,
    MemorySink,
    ToolCallError,
    ToolHandlerError,
    ToolRegistry,
    ToolResult,
    ToolRuntime,
    UnknownToolError,
)
from mini_harness.events import ToolFailed, ToolSucceeded


@pytest.fixture(name="runtime")
def _runtime(registry: ToolRegistry) -> ToolRuntime:
    """The shared registry (its `boom` tool always raises), recording in memory."""
    return ToolRuntime(registry, MemorySink())


class TestAttempt:
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
