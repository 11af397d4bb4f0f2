"""The mock model: deterministic, offline, answers without tools."""

from __future__ import annotations

from mini_harness.agent import Message, MockProvider, ModelRequest
from mini_harness.agent.context import manual_tool_message


class TestMock:
    def test_answers_the_task_without_tools(self) -> None:
        """The mock repeats the task in its answer and calls no tool."""
        request = ModelRequest((Message("system", "s"), Message("user", "count the files")))
        response = MockProvider().complete(request)
        assert "count the files" in response.message.content
        assert response.message.tool_calls == ()
        assert response.finish_reason == "stop"

    def test_repeats_the_task_not_a_tool_result(self) -> None:
        """With a tool result after the task (`--tool` given with a task), the mock still
        repeats the task."""
        request = ModelRequest(
            (
                Message("system", "s"),
                Message("user", "count the files"),
                manual_tool_message({"name": "echo"}),
            )
        )
        text = MockProvider().complete(request).message.content
        assert "Your task was: count the files\n" in text
        assert "Result of the tool run" not in text

    def test_deterministic(self) -> None:
        """The same request gets the same response."""
        request = ModelRequest((Message("user", "x"),))
        assert MockProvider().complete(request) == MockProvider().complete(request)

    def test_name(self) -> None:
        """Its provider name prints as `mock`."""
        assert MockProvider("mock").name == "mock"
