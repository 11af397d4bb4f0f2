"""The mock model: deterministic, offline, answers without tools."""

from __future__ import annotations

from mini_harness.agent import Message, MockProvider, ModelRequest
from mini_harness.agent.context import manual_tool_message, request_parts
from mini_harness.tools import default_registry


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

    def test_answers_a_follow_up(self) -> None:
        """A resumed run's follow-up (the latest user message) is the task it repeats."""
        request = ModelRequest(
            (
                Message("system", "s"),
                Message("user", "count the files"),
                Message("assistant", "There are 3."),
                Message("user", "now list them"),
            )
        )
        text = MockProvider().complete(request).message.content
        assert "Your task was: now list them\n" in text

    def test_input_usage_is_the_context_reports_total(self) -> None:
        """Its input tokens estimate the whole request, tool definitions included, so the
        report's Total and Provider input tokens agree (within the role labels the report
        adds to the conversation)."""
        tools = tuple(default_registry().list())
        messages = (Message("system", "be brief"), Message("user", "count the files"))
        usage = MockProvider().complete(ModelRequest(messages, tools)).usage
        total = sum(part.tokens for part in request_parts("be brief", (), tools, messages))
        assert usage.input_tokens is not None
        assert abs(usage.input_tokens - total) <= 5
        assert usage.input_tokens > 1000  # the definitions dominate
