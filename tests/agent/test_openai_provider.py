"""The OpenAI-compatible provider, through the real `openai` SDK, against a loopback server."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from mini_harness.agent import Message, ModelRequest, ToolCall
from mini_harness.agent.providers.openai_chat import OpenAICompatibleProvider
from mini_harness.agent.providers.sdk import UNPARSED_KEY
from mini_harness.errors import ModelError
from tests.agent.wire_servers import (
    ECHO,
    MODES,
    TASK,
    OpenAIWireServer,
    Raw,
    Turn,
    answered,
    on_text_for,
)

KEY = "sk-test-0123456789abcdef-SECRET"


@pytest.fixture(name="server")
def _server() -> Iterator[OpenAIWireServer]:
    with OpenAIWireServer(api_key=KEY) as server:
        yield server


def make_provider(server: OpenAIWireServer) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(
        "test-model", base_url=server.base_url, api_key=KEY, timeout=5.0
    )


class TestRequests:
    def test_conversation_tools_and_params_go_out_in_chat_completions_form(
        self, server: OpenAIWireServer
    ) -> None:
        """System and user messages, function tools and parameters reach the server as the
        Chat Completions API names them."""
        server.script(Turn(text="hi"))
        request = ModelRequest(TASK.messages, TASK.tools, {"temperature": 0.2, "maxTokens": 50})
        make_provider(server).complete(request)
        body = server.requests[0].body
        assert body["model"] == "test-model"
        assert body["messages"] == [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Echo hi."},
        ]
        assert body["tools"] == [
            {
                "type": "function",
                "function": {
                    "name": "echo",
                    "description": "Echoes text.",
                    "parameters": ECHO.input_schema,
                },
            }
        ]
        assert (body["temperature"], body["max_tokens"]) == (0.2, 50)
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"

    def test_streaming_asks_for_usage(self, server: OpenAIWireServer) -> None:
        """A streamed request asks the server to report usage in its last chunk."""
        server.script(Turn(text="hi"))
        make_provider(server).complete(TASK, on_text=lambda _: None)
        body = server.requests[0].body
        assert body["stream"] is True
        assert body["stream_options"] == {"include_usage": True}


class TestResponses:
    @MODES
    def test_tool_call_comes_back_with_id_name_and_raw_arguments(
        self, server: OpenAIWireServer, stream: bool
    ) -> None:
        """A tool call is returned as the model made it, with finish reason tool_calls."""
        server.script(Turn(tool_calls=(("call_1", "echo", '{"text": "hi"}'),)))
        response = make_provider(server).complete(TASK, on_text=on_text_for(stream))
        assert response.message.tool_calls == (ToolCall("call_1", "echo", '{"text": "hi"}'),)
        assert response.message.content == ""
        assert response.finish_reason == "tool_calls"
        assert response.response_id == "chatcmpl-1"

    @MODES
    def test_malformed_arguments_are_kept_raw_and_sent_back_as_an_object(
        self, server: OpenAIWireServer, stream: bool
    ) -> None:
        """Arguments that are not JSON stay raw in the message, and the next request carries
        them wrapped in an object, which a strict server accepts."""
        raw = '{"text": "unterminated'
        server.script(Turn(tool_calls=(("call_1", "echo", raw),)), Turn(text="Sorry."))
        provider = make_provider(server)
        first = provider.complete(TASK, on_text=on_text_for(stream))
        assert first.message.tool_calls[0].arguments == raw
        result = Message("tool", "Invalid JSON arguments", tool_call_id="call_1", is_error=True)
        second = provider.complete(answered(TASK, first.message, result))
        assert second.message.content == "Sorry."
        assert server.rejections == []
        sent = server.requests[1].body["messages"][2]["tool_calls"][0]["function"]["arguments"]
        assert json.loads(sent) == {UNPARSED_KEY: raw}

    @MODES
    def test_length_finish_reason(self, server: OpenAIWireServer, stream: bool) -> None:
        """A response cut by the token limit ends with finish reason `length`."""
        server.script(Turn(text="The answer is", finish="length"))
        response = make_provider(server).complete(TASK, on_text=on_text_for(stream))
        assert (response.finish_reason, response.message.content) == ("length", "The answer is")

    @MODES
    def test_usage_with_cached_tokens(self, server: OpenAIWireServer, stream: bool) -> None:
        """Input, output and cached token counts are reported in both modes."""
        server.script(Turn(text="ok", input_tokens=120, output_tokens=9, cached_tokens=64))
        response = make_provider(server).complete(TASK, on_text=on_text_for(stream))
        usage = response.usage
        assert (usage.input_tokens, usage.output_tokens, usage.cached_tokens) == (120, 9, 64)

    def test_streamed_calls_without_index_from_lenient_servers(
        self, server: OpenAIWireServer
    ) -> None:
        """Fragments without `index` (some servers leave it out) and a name sent again
        still make two whole calls."""
        chunks = [
            {"id": "call_1", "type": "function", "function": {"name": "echo", "arguments": ""}},
            {"function": {"name": "echo", "arguments": '{"text":'}},
            {"function": {"arguments": ' "a"}'}},
            {"id": "call_2", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
        ]
        lines = [
            {
                "id": "c",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "delta": {"tool_calls": [chunk]}, "finish_reason": None}],
            }
            for chunk in chunks
        ]
        lines.append(
            {
                "id": "c",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
            }
        )
        body = "".join(f"data: {json.dumps(line)}\n\n" for line in lines) + "data: [DONE]\n\n"
        server.script(Raw(body.encode(), "text/event-stream"))
        response = make_provider(server).complete(TASK, on_text=lambda _: None)
        assert response.message.tool_calls == (
            ToolCall("call_1", "echo", '{"text": "a"}'),
            ToolCall("call_2", "ls", "{}"),
        )

    def test_tool_calls_with_finish_reason_stop_are_a_tool_call_stop(
        self, server: OpenAIWireServer
    ) -> None:
        """A server that says "stop" while calling tools still yields finish reason tool_calls."""
        server.script(Turn(tool_calls=(("call_1", "echo", "{}"),), finish="stop"))
        assert make_provider(server).complete(TASK).finish_reason == "tool_calls"


class TestHistoryValidation:
    def test_orphan_tool_call_is_rejected_with_the_servers_reason(
        self, server: OpenAIWireServer
    ) -> None:
        """A history whose tool call has no result is answered 400 and not retried."""
        call = Message("assistant", tool_calls=(ToolCall("call_9", "echo", "{}"),))
        request = answered(TASK, call, Message("user", "And now?"))
        retries: list[ModelError] = []
        with pytest.raises(ModelError, match="call_9 have no tool message") as raised:
            make_provider(server).complete(request, on_retry=retries.append)
        assert (raised.value.status, retries, server.unused) == (400, [], 0)
        assert len(server.rejections) == 1

    def test_valid_history_with_two_results_is_accepted(self, server: OpenAIWireServer) -> None:
        """Two calls answered by two tool messages, then a user turn, is a valid history."""
        server.script(Turn(text="done"))
        call = Message(
            "assistant",
            "Two calls.",
            tool_calls=(ToolCall("a", "echo", '{"text":"1"}'), ToolCall("b", "echo", "")),
        )
        request = answered(
            TASK,
            call,
            Message("tool", "1", tool_call_id="a", name="echo"),
            Message("tool", "failed", tool_call_id="b", name="echo", is_error=True),
            Message("user", "Thanks."),
        )
        assert make_provider(server).complete(request).message.content == "done"
        assert server.rejections == []
        sent = server.requests[0].body["messages"]
        assert sent[2]["tool_calls"][1]["function"]["arguments"] == "{}"
        assert sent[3] == {"role": "tool", "tool_call_id": "a", "content": "1"}

    def test_empty_reply_in_the_history_is_accepted(self, server: OpenAIWireServer) -> None:
        """An empty assistant reply (cut at zero tokens) goes back as empty content."""
        server.script(Turn(text="ok"))
        request = answered(TASK, Message("assistant", ""), Message("user", "Try again."))
        assert make_provider(server).complete(request).message.content == "ok"
        assert server.requests[0].body["messages"][2] == {"role": "assistant", "content": ""}
