"""The Anthropic provider, through the real `anthropic` SDK, against a loopback server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mini_harness.agent import Message, ModelRequest, ToolCall
from mini_harness.agent.providers.anthropic_messages import DEFAULT_MAX_TOKENS, AnthropicProvider
from mini_harness.agent.providers.sdk import UNPARSED_KEY
from mini_harness.errors import ModelError
from tests.agent.wire_servers import (
    ECHO,
    MODES,
    TASK,
    AnthropicWireServer,
    Turn,
    answered,
    on_text_for,
)

KEY = "sk-ant-test-0123456789-SECRET"


@pytest.fixture(name="server")
def _server() -> Iterator[AnthropicWireServer]:
    with AnthropicWireServer(api_key=KEY) as server:
        yield server


def make_provider(server: AnthropicWireServer) -> AnthropicProvider:
    return AnthropicProvider("claude-test", api_key=KEY, base_url=server.base_url, timeout=5.0)


class TestRequests:
    def test_system_prompt_tools_and_max_tokens(self, server: AnthropicWireServer) -> None:
        """The system prompt goes in `system`, tools as Anthropic tools, and max_tokens is
        always sent (the default when the params give none)."""
        server.script(Turn(text="hi"), Turn(text="hi"))
        provider = make_provider(server)
        provider.complete(TASK)
        provider.complete(ModelRequest(TASK.messages, TASK.tools, {"maxTokens": 99}))
        first, second = (r.body for r in server.requests)
        assert first["system"] == "You are terse."
        assert first["messages"] == [
            {"role": "user", "content": [{"type": "text", "text": "Echo hi."}]}
        ]
        assert first["tools"] == [
            {"name": "echo", "description": "Echoes text.", "input_schema": ECHO.input_schema}
        ]
        assert (first["max_tokens"], second["max_tokens"]) == (DEFAULT_MAX_TOKENS, 99)
        assert server.presented_key(server.requests[0].headers) == KEY

    def test_temperature_and_top_p_reach_the_body(self, server: AnthropicWireServer) -> None:
        """The loop's temperature (and topP) reach the request body, though the SDK's
        create() no longer takes them as arguments."""
        server.script(Turn(text="hi"))
        params = {"temperature": 0.2, "topP": 0.9, "maxTokens": 50}
        make_provider(server).complete(ModelRequest(TASK.messages, TASK.tools, params))
        (body,) = (r.body for r in server.requests)
        assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.2, 0.9, 50)

    def test_tool_results_merge_into_one_user_turn_with_is_error(
        self, server: AnthropicWireServer
    ) -> None:
        """Consecutive tool results (and a user note after them) become one user message of
        tool_result blocks first, with is_error passed through; the server accepts it."""
        server.script(Turn(text="done"))
        call = Message(
            "assistant",
            "Calling.",
            tool_calls=(ToolCall("tu_1", "echo", '{"text":"a"}'), ToolCall("tu_2", "echo", "")),
        )
        request = answered(
            TASK,
            call,
            Message("tool", "a", tool_call_id="tu_1", name="echo"),
            Message("tool", "boom", tool_call_id="tu_2", name="echo", is_error=True),
            Message("user", "Go on."),
        )
        assert make_provider(server).complete(request).message.content == "done"
        assert server.rejections == []
        messages = server.requests[0].body["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "user"]
        assert messages[1]["content"] == [
            {"type": "text", "text": "Calling."},
            {"type": "tool_use", "id": "tu_1", "name": "echo", "input": {"text": "a"}},
            {"type": "tool_use", "id": "tu_2", "name": "echo", "input": {}},
        ]
        assert messages[2]["content"] == [
            {"type": "tool_result", "tool_use_id": "tu_1", "content": "a"},
            {"type": "tool_result", "tool_use_id": "tu_2", "content": "boom", "is_error": True},
            {"type": "text", "text": "Go on."},
        ]

    def test_empty_reply_in_the_history_is_left_out(self, server: AnthropicWireServer) -> None:
        """An empty assistant reply (cut at zero tokens) is left out of the history, and the
        user turns around it merge, so the server accepts the conversation."""
        server.script(Turn(text="ok"))
        request = answered(TASK, Message("assistant", ""), Message("user", "Try again."))
        assert make_provider(server).complete(request).message.content == "ok"
        assert server.rejections == []
        assert server.requests[0].body["messages"] == [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Echo hi."},
                    {"type": "text", "text": "Try again."},
                ],
            }
        ]

    @pytest.mark.parametrize(
        "raw",
        ['{"text": "no end', '{"n": 123456789012345678901234567890}'],
        ids=["broken", "wide-integer"],
    )
    def test_malformed_streamed_input_is_kept_raw_and_sent_back_as_an_object(
        self, server: AnthropicWireServer, raw: str
    ) -> None:
        """Input JSON that streams in broken (or with an integer no tool is given: it does
        not fit in 64 bits) stays raw in the message; the next request sends it as an
        object wrapping the raw text, which the server accepts, never a rounded copy."""
        server.script(Turn(tool_calls=(("tu_1", "echo", raw),)), Turn(text="Sorry."))
        provider = make_provider(server)
        first = provider.complete(TASK, on_text=lambda _: None)
        assert first.message.tool_calls == (ToolCall("tu_1", "echo", raw),)
        result = Message("tool", "Invalid JSON", tool_call_id="tu_1", is_error=True)
        assert provider.complete(answered(TASK, first.message, result)).message.content == "Sorry."
        assert server.rejections == []
        tool_use = server.requests[1].body["messages"][1]["content"][0]
        assert tool_use["input"] == {UNPARSED_KEY: raw}

    def test_whole_response_cannot_carry_malformed_input(self, server: AnthropicWireServer) -> None:
        """The server says so when a script asks for malformed input in a whole response."""
        server.script(Turn(tool_calls=(("tu_1", "echo", "{oops"),)))
        with pytest.raises(ModelError, match="only a streamed turn can send malformed input"):
            make_provider(server).complete(TASK)

    @MODES
    @pytest.mark.parametrize(
        ("wire", "neutral"),
        [("max_tokens", "length"), ("end_turn", "stop"), ("pause_turn", "other")],
    )
    def test_stop_reasons_are_mapped(
        self, server: AnthropicWireServer, stream: bool, wire: str, neutral: str
    ) -> None:
        """Anthropic's stop reasons map onto the neutral finish reasons."""
        server.script(Turn(text="The answer is", finish=wire))
        response = make_provider(server).complete(TASK, on_text=on_text_for(stream))
        assert response.finish_reason == neutral

    @MODES
    def test_usage_counts_the_whole_prompt_and_cache_reads(
        self, server: AnthropicWireServer, stream: bool
    ) -> None:
        """Input tokens include cache reads (Anthropic reports them apart); cached tokens
        are the cache reads."""
        server.script(Turn(text="ok", input_tokens=20, output_tokens=5, cached_tokens=100))
        usage = make_provider(server).complete(TASK, on_text=on_text_for(stream)).usage
        assert (usage.input_tokens, usage.output_tokens, usage.cached_tokens) == (120, 5, 100)


class TestHistoryValidation:
    def test_orphan_tool_use_is_rejected_with_the_servers_reason(
        self, server: AnthropicWireServer
    ) -> None:
        """A tool_use with no tool_result in the next user turn is answered 400."""
        call = Message("assistant", tool_calls=(ToolCall("tu_9", "echo", "{}"),))
        request = answered(TASK, call, Message("user", "And now?"))
        with pytest.raises(ModelError, match="without tool_result blocks immediately after: tu_9"):
            make_provider(server).complete(request)
        assert len(server.rejections) == 1
