"""The OpenAI-compatible provider, through the real `openai` SDK, against a loopback server."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from mini_harness.agent.openai_provider import OpenAICompatibleProvider
from mini_harness.agent.provider import Message, ModelError, ModelRequest, ToolCall
from mini_harness.agent.wire_form import UNPARSED_KEY
from mini_harness.errors import MiniHarnessError
from tests.agent.wire_servers import (
    Failure,
    OpenAIWireServer,
    Raw,
    Stall,
    Turn,
)

KEY = "sk-test-0123456789abcdef-SECRET"
ECHO = {
    "name": "echo",
    "description": "Echoes text.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}
TASK = ModelRequest(
    messages=(Message("system", "You are terse."), Message("user", "Echo hi.")),
    tools=(ECHO,),
)


@pytest.fixture(name="server")
def _server() -> Iterator[OpenAIWireServer]:
    with OpenAIWireServer(api_key=KEY) as server:
        yield server


def make_provider(
    server: OpenAIWireServer, *, max_retries: int = 2, timeout: float = 5.0, key: str = KEY
) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(
        "test-model",
        base_url=server.base_url,
        api_key=key,
        max_retries=max_retries,
        timeout=timeout,
    )


MODES = pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])


def answered(request: ModelRequest, response_message: Message, *results: Message) -> ModelRequest:
    """`request` continued with the assistant's message and its tool results."""
    return ModelRequest(
        messages=(*request.messages, response_message, *results), tools=request.tools
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
                    "parameters": ECHO["inputSchema"],
                },
            }
        ]
        assert (body["temperature"], body["max_tokens"]) == (0.2, 50)
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"

    def test_unknown_parameter_is_a_clear_error(self, server: OpenAIWireServer) -> None:
        """A parameter the provider does not know is refused before anything is sent."""
        request = ModelRequest(TASK.messages, params={"temprature": 0.2})
        with pytest.raises(MiniHarnessError, match="Unknown model parameter 'temprature'"):
            make_provider(server).complete(request)
        assert server.requests == []

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
        response = make_provider(server).complete(
            TASK, on_text=(lambda _: None) if stream else None
        )
        assert response.message.tool_calls == (ToolCall("call_1", "echo", '{"text": "hi"}'),)
        assert response.message.content == ""
        assert response.finish_reason == "tool_calls"
        assert response.response_id == "chatcmpl-1"

    @MODES
    def test_several_tool_calls_in_one_response_keep_their_order(
        self, server: OpenAIWireServer, stream: bool
    ) -> None:
        """Three calls in one response come back in the order the model made them."""
        calls = (
            ("call_a", "echo", '{"text": "one"}'),
            ("call_b", "list_files", "{}"),
            ("call_c", "echo", '{"text": "three, a longer one"}'),
        )
        server.script(Turn(text="Working.", tool_calls=calls))
        response = make_provider(server).complete(
            TASK, on_text=(lambda _: None) if stream else None
        )
        assert response.message.tool_calls == tuple(ToolCall(*c) for c in calls)
        assert response.message.content == "Working."

    @MODES
    def test_malformed_arguments_are_kept_raw_and_sent_back_as_an_object(
        self, server: OpenAIWireServer, stream: bool
    ) -> None:
        """Arguments that are not JSON stay raw in the message, and the next request carries
        them wrapped in an object, which a strict server accepts."""
        raw = '{"text": "unterminated'
        server.script(Turn(tool_calls=(("call_1", "echo", raw),)), Turn(text="Sorry."))
        provider = make_provider(server)
        first = provider.complete(TASK, on_text=(lambda _: None) if stream else None)
        assert first.message.tool_calls[0].arguments == raw
        result = Message("tool", "Invalid JSON arguments", tool_call_id="call_1", is_error=True)
        second = provider.complete(answered(TASK, first.message, result))
        assert second.message.content == "Sorry."
        assert server.rejections == []
        sent = server.requests[1].body["messages"][2]["tool_calls"][0]["function"]["arguments"]
        assert json.loads(sent) == {UNPARSED_KEY: raw}

    def test_unknown_tool_name_is_passed_through(self, server: OpenAIWireServer) -> None:
        """A call to a tool that was never offered comes back as made: the loop decides."""
        server.script(Turn(tool_calls=(("call_1", "no_such_tool", "{}"),)))
        response = make_provider(server).complete(TASK)
        assert response.message.tool_calls == (ToolCall("call_1", "no_such_tool", "{}"),)

    @MODES
    def test_length_finish_reason(self, server: OpenAIWireServer, stream: bool) -> None:
        """A response cut by the token limit ends with finish reason `length`."""
        server.script(Turn(text="The answer is", finish="length"))
        response = make_provider(server).complete(
            TASK, on_text=(lambda _: None) if stream else None
        )
        assert (response.finish_reason, response.message.content) == ("length", "The answer is")

    @MODES
    def test_usage_with_cached_tokens(self, server: OpenAIWireServer, stream: bool) -> None:
        """Input, output and cached token counts are reported in both modes."""
        server.script(Turn(text="ok", input_tokens=120, output_tokens=9, cached_tokens=64))
        response = make_provider(server).complete(
            TASK, on_text=(lambda _: None) if stream else None
        )
        usage = response.usage
        assert (usage.input_tokens, usage.output_tokens, usage.cached_tokens) == (120, 9, 64)

    def test_streamed_text_arrives_in_pieces(self, server: OpenAIWireServer) -> None:
        """Streamed text reaches on_text piece by piece, and the response holds all of it."""
        server.script(Turn(text="Hello from the loopback model.", piece=5))
        pieces: list[str] = []
        response = make_provider(server).complete(TASK, on_text=pieces.append)
        assert pieces[:2] == ["Hello", " from"]
        assert len(pieces) == 6
        assert "".join(pieces) == response.message.content == "Hello from the loopback model."
        assert response.finish_reason == "stop"

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


class TestErrors:
    def test_rate_limit_then_success(self, server: OpenAIWireServer) -> None:
        """A 429 is retried by the SDK: one on_retry with the server's message, then the answer."""
        server.script(Failure(429, "Rate limit reached, slow down"), Turn(text="fine"))
        retries: list[ModelError] = []
        response = make_provider(server).complete(TASK, on_retry=retries.append)
        assert response.message.content == "fine"
        assert [(e.kind, e.status, e.attempt) for e in retries] == [("rate_limited", 429, 1)]
        assert "Rate limit reached, slow down" in retries[0].message

    def test_server_errors_until_giving_up(self, server: OpenAIWireServer) -> None:
        """500s: every retried attempt is reported, then the last one raises http_error 500."""
        server.script(*[Failure(500, "The server had an error")] * 3)
        retries: list[ModelError] = []
        with pytest.raises(ModelError) as raised:
            make_provider(server, max_retries=2).complete(TASK, on_retry=retries.append)
        assert [(e.kind, e.status, e.attempt) for e in retries] == [
            ("http_error", 500, 1),
            ("http_error", 500, 2),
        ]
        error = raised.value
        assert (error.kind, error.status, error.attempt) == ("http_error", 500, 3)
        assert error.message == "Model request failed with HTTP 500: The server had an error"
        assert len(server.requests) == 3

    def test_client_error_is_not_retried(self, server: OpenAIWireServer) -> None:
        """A 400 fails at once with the server's message, and no retry is reported."""
        server.script(Failure(400, "Invalid value for 'model'"))
        retries: list[ModelError] = []
        with pytest.raises(ModelError, match="HTTP 400: Invalid value for 'model'") as raised:
            make_provider(server).complete(TASK, on_retry=retries.append)
        assert (raised.value.kind, raised.value.status, retries) == ("http_error", 400, [])

    def test_wrong_key_is_an_auth_error_that_never_shows_the_key(
        self, server: OpenAIWireServer
    ) -> None:
        """A 401 is kind auth; the key the server echoed back is redacted from the message."""
        wrong = "sk-wrong-key-9876543210"
        with pytest.raises(ModelError) as raised:
            make_provider(server, key=wrong).complete(TASK)
        assert (raised.value.kind, raised.value.status) == ("auth", 401)
        assert wrong not in str(raised.value)
        assert "Incorrect API key provided: [redacted]" in raised.value.message

    def test_key_never_appears_in_retries_or_the_final_error(
        self, server: OpenAIWireServer
    ) -> None:
        """Even a server that puts the key in its error messages cannot leak it through us."""
        server.script(*[Failure(503, f"overloaded (key {KEY})")] * 2)
        retries: list[ModelError] = []
        with pytest.raises(ModelError) as raised:
            make_provider(server, max_retries=1).complete(TASK, on_retry=retries.append)
        messages = [e.message for e in retries] + [raised.value.message, str(raised.value)]
        assert len(messages) == 3
        assert all(KEY not in m and "[redacted]" in m for m in messages)

    def test_stream_cut_mid_way_is_an_invalid_response(self, server: OpenAIWireServer) -> None:
        """A stream that stops before its end is a clear invalid_response, after the text
        that did arrive was shown."""
        server.script(Turn(text="partial answer", piece=4, cut_after=3))
        pieces: list[str] = []
        with pytest.raises(ModelError) as raised:
            make_provider(server).complete(TASK, on_text=pieces.append)
        assert raised.value.kind == "invalid_response"
        assert "response stream was cut off" in raised.value.message
        assert pieces == ["part", "ial "]

    def test_interrupt_while_streaming_propagates_as_is(self, server: OpenAIWireServer) -> None:
        """Ctrl-C during a stream reaches the caller as KeyboardInterrupt, not a ModelError."""
        server.script(Turn(text="a long answer"))

        def interrupt(_: str) -> None:
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            make_provider(server).complete(TASK, on_text=interrupt)

    def test_body_cut_mid_way_is_retried_and_reported(self, server: OpenAIWireServer) -> None:
        """A whole-JSON body that breaks off is retried by the SDK, and the attempt reported."""
        server.script(Turn(text="lost", cut_after=1), Turn(text="whole"))
        retries: list[ModelError] = []
        response = make_provider(server).complete(TASK, on_retry=retries.append)
        assert response.message.content == "whole"
        assert [(e.kind, e.attempt) for e in retries] == [("invalid_response", 1)]

    def test_error_body_cut_mid_way_is_reported_as_a_retried_attempt(
        self, server: OpenAIWireServer
    ) -> None:
        """An error status whose body breaks off is still one reported, retried attempt."""
        body = b'{"error": {"message": "upstream failed"}}'
        server.script(Raw(body, "application/json", status=502, cut=True), Turn(text="ok"))
        retries: list[ModelError] = []
        response = make_provider(server).complete(TASK, on_retry=retries.append)
        assert response.message.content == "ok"
        assert [(e.kind, e.attempt) for e in retries] == [("invalid_response", 1)]

    def test_no_answer_in_time_is_a_timeout(self, server: OpenAIWireServer) -> None:
        """A server that does not answer within the timeout: each attempt times out."""
        server.script(Stall(2.0), Stall(2.0))
        retries: list[ModelError] = []
        with pytest.raises(ModelError) as raised:
            make_provider(server, max_retries=1, timeout=0.3).complete(
                TASK, on_retry=retries.append
            )
        assert [e.kind for e in retries] == ["timeout"]
        assert (raised.value.kind, raised.value.attempt) == ("timeout", 2)

    @pytest.mark.parametrize(
        "reply",
        [
            Raw(b"<html>502 Bad Gateway</html>"),
            Raw(b'{"id": "x", "choices": []}', "application/json"),
            Raw(b'{"choices": [{"index": 0, "message": {"content": 5}}]}', "application/json"),
        ],
        ids=["html-page", "no-choices", "content-not-text"],
    )
    def test_success_status_with_an_unreadable_body(
        self, server: OpenAIWireServer, reply: Raw
    ) -> None:
        """A 200 whose body is not a completion is an invalid_response, not a crash."""
        server.script(reply)
        with pytest.raises(ModelError) as raised:
            make_provider(server).complete(TASK)
        assert raised.value.kind == "invalid_response"

    def test_unreachable_server(self) -> None:
        """Nothing listening on the port is an http_error saying the server cannot be reached."""
        with OpenAIWireServer() as server:
            provider = make_provider(server, max_retries=0)
        with pytest.raises(ModelError, match="Could not reach the model server") as raised:
            provider.complete(TASK)
        assert (raised.value.kind, raised.value.status) == ("http_error", None)


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
