"""What both SDK providers do alike, each through its real SDK against its loopback server:
responses read back, every failed attempt reported, errors mapped, keys never shown."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from mini_harness.agent import Message, ModelRequest, ToolCall
from mini_harness.agent.providers.anthropic_messages import AnthropicProvider
from mini_harness.agent.providers.openai_chat import OpenAICompatibleProvider
from mini_harness.agent.providers.sdk import ResponseParts, SdkProvider
from mini_harness.errors import MiniHarnessError, ModelError
from tests.agent.wire_servers import (
    MODES,
    TASK,
    AnthropicWireServer,
    Failure,
    OpenAIWireServer,
    Raw,
    Stall,
    Turn,
    WireServer,
    on_text_for,
)

KEY = "sk-test-0123456789abcdef-SECRET"


@attrs.frozen
class Wire:
    """A loopback server of one format, and what differs between the formats."""

    server: WireServer
    response_id: str  # the id the server gives its first response
    busy_status: int  # an error status the SDK retries
    malformed: tuple[Raw, ...]  # 200s whose JSON body has the wrong shape

    def provider(
        self,
        *,
        max_retries: int = 2,
        timeout: float = 5.0,
        key: str = KEY,
        base_url: str | None = None,
    ) -> SdkProvider[Any, Any, Any]:
        """The provider of this format, for the server (or `base_url`: a URL on the server's
        path that only a proxy can reach)."""
        if base_url is not None:
            base_url += self.server.prefix
        if isinstance(self.server, OpenAIWireServer):
            return OpenAICompatibleProvider(
                "test-model",
                base_url=base_url or self.server.base_url,
                api_key=key,
                max_retries=max_retries,
                timeout=timeout,
            )
        return AnthropicProvider(
            "claude-test",
            api_key=key,
            base_url=base_url or self.server.base_url,
            max_retries=max_retries,
            timeout=timeout,
        )


def _json(body: bytes) -> Raw:
    return Raw(body, "application/json")


@pytest.fixture(name="wire", params=["openai", "anthropic"])
def _wire(request: pytest.FixtureRequest) -> Iterator[Wire]:
    if request.param == "openai":
        with OpenAIWireServer(api_key=KEY) as server:
            yield Wire(
                server,
                "chatcmpl-1",
                500,
                (
                    _json(b'{"id": "x", "choices": []}'),
                    _json(b'{"choices": [{"index": 0, "message": {"content": 5}}]}'),
                    _json(b'{"choices": [{"index": 0, "message": "hi"}]}'),
                    _json(
                        b'{"choices": [{"index": 0, "message": {"content": "hi"}, '
                        b'"finish_reason": "stop"}], "usage": {"prompt_tokens": "many", '
                        b'"completion_tokens": 1, "total_tokens": 1}}'
                    ),
                ),
            )
    else:
        with AnthropicWireServer(api_key=KEY) as server:
            yield Wire(
                server,
                "msg_1",
                529,
                (
                    _json(b'{"id": "msg_1", "type": "message"}'),
                    _json(b'{"content": [{"type": "text", "text": 7}]}'),
                    _json(
                        b'{"id": "msg_1", "type": "message", "role": "assistant", "content": '
                        b'[{"type": "text", "text": "hi"}], "stop_reason": "end_turn", '
                        b'"usage": {"input_tokens": -3, "output_tokens": 1}}'
                    ),
                ),
            )


class TestRequests:
    def test_unknown_parameter_is_a_clear_error(self, wire: Wire) -> None:
        """A parameter the provider does not know is refused before anything is sent."""
        request = ModelRequest(TASK.messages, params={"temprature": 0.2})
        with pytest.raises(MiniHarnessError, match="Unknown model parameter 'temprature'"):
            wire.provider().complete(request)
        assert wire.server.requests == []

    def test_parameter_of_the_wrong_type_is_a_clear_error(self, wire: Wire) -> None:
        """A parameter value of the wrong type is refused before anything is sent."""
        request = ModelRequest(TASK.messages, params={"maxTokens": "lots"})
        with pytest.raises(MiniHarnessError, match="'maxTokens' must be a positive integer"):
            wire.provider().complete(request)
        assert wire.server.requests == []


class TestResponses:
    @MODES
    def test_several_tool_calls_come_back_in_order(self, wire: Wire, stream: bool) -> None:
        """Text and several tool calls come back as the model made them, in order, with
        finish reason tool_calls and the server's response id."""
        calls = (
            ("call_a", "echo", '{"text":"one"}'),
            ("call_b", "list_files", "{}"),
            ("call_c", "echo", '{"text":"three, a longer one"}'),
        )
        wire.server.script(Turn(text="Working.", tool_calls=calls))
        response = wire.provider().complete(TASK, on_text=on_text_for(stream))
        assert response.message == Message(
            "assistant", "Working.", tool_calls=tuple(ToolCall(*c) for c in calls)
        )
        assert response.finish_reason == "tool_calls"
        assert response.response_id == wire.response_id

    def test_unknown_tool_name_is_passed_through(self, wire: Wire) -> None:
        """A call to a tool that was never offered comes back as made: the loop decides."""
        wire.server.script(Turn(tool_calls=(("call_1", "no_such_tool", "{}"),)))
        response = wire.provider().complete(TASK)
        assert response.message.tool_calls == (ToolCall("call_1", "no_such_tool", "{}"),)

    def test_streamed_text_arrives_in_pieces(self, wire: Wire) -> None:
        """Streamed text reaches on_text piece by piece, and the response holds all of it."""
        wire.server.script(Turn(text="Hello from the loopback model.", piece=5))
        pieces: list[str] = []
        response = wire.provider().complete(TASK, on_text=pieces.append)
        assert pieces[:2] == ["Hello", " from"]
        assert len(pieces) == 6
        assert "".join(pieces) == response.message.content == "Hello from the loopback model."
        assert response.finish_reason == "stop"


class TestErrors:
    def test_rate_limit_then_success(self, wire: Wire) -> None:
        """A 429 is retried by the SDK: one on_retry with the server's message, then the answer."""
        wire.server.script(Failure(429, "Rate limit reached, slow down"), Turn(text="fine"))
        retries: list[ModelError] = []
        response = wire.provider().complete(TASK, on_retry=retries.append)
        assert response.message.content == "fine"
        assert [(e.kind, e.status, e.attempt) for e in retries] == [("rate_limited", 429, 1)]
        assert "Rate limit reached, slow down" in retries[0].message

    def test_retry_after_is_waited_for(self, wire: Wire) -> None:
        """The wait a 429 asks for is kept before the next attempt."""
        wire.server.script(Failure(429, "slow down", retry_after="0.6"), Turn(text="fine"))
        started = time.monotonic()
        assert wire.provider().complete(TASK).message.content == "fine"
        assert 0.6 <= time.monotonic() - started < 3

    def test_retry_after_too_long_is_not_waited_for(self, wire: Wire) -> None:
        """A server that asks for more than a minute's wait gets no retry: the rate limit is
        the final failure, at once."""
        wire.server.script(Failure(429, "come back tomorrow", retry_after="86400"))
        retries: list[ModelError] = []
        with pytest.raises(ModelError, match="come back tomorrow") as raised:
            wire.provider().complete(TASK, on_retry=retries.append)
        assert (raised.value.kind, raised.value.attempt, retries) == ("rate_limited", 1, [])
        assert len(wire.server.requests) == 1

    def test_server_errors_until_giving_up(self, wire: Wire) -> None:
        """Server errors: every retried attempt is reported, then the last one raises
        http_error with the server's message."""
        status = wire.busy_status
        wire.server.script(*[Failure(status, "The server had an error")] * 3)
        retries: list[ModelError] = []
        with pytest.raises(ModelError) as raised:
            wire.provider(max_retries=2).complete(TASK, on_retry=retries.append)
        assert [(e.kind, e.status, e.attempt) for e in retries] == [
            ("http_error", status, 1),
            ("http_error", status, 2),
        ]
        error = raised.value
        assert (error.kind, error.status, error.attempt) == ("http_error", status, 3)
        assert error.message == f"Model request failed with HTTP {status}: The server had an error"
        assert len(wire.server.requests) == 3

    def test_client_error_is_not_retried(self, wire: Wire) -> None:
        """A 400 fails at once with the server's message, and no retry is reported."""
        wire.server.script(Failure(400, "Invalid value for 'model'"))
        retries: list[ModelError] = []
        with pytest.raises(ModelError, match="HTTP 400: Invalid value for 'model'") as raised:
            wire.provider().complete(TASK, on_retry=retries.append)
        assert (raised.value.kind, raised.value.status, retries) == ("http_error", 400, [])

    def test_wrong_key_is_an_auth_error_that_never_shows_the_key(self, wire: Wire) -> None:
        """A 401 is kind auth; the key the server echoed back is redacted from the message."""
        wrong = "sk-wrong-key-9876543210"
        with pytest.raises(ModelError) as raised:
            wire.provider(key=wrong).complete(TASK)
        assert (raised.value.kind, raised.value.status) == ("auth", 401)
        assert wrong not in str(raised.value)
        assert "Incorrect API key provided: [REDACTED]" in raised.value.message

    def test_key_never_appears_in_retries_or_the_final_error(self, wire: Wire) -> None:
        """Even a server that puts the key in its error messages, as is or upper-cased,
        cannot leak it through us."""
        wire.server.script(
            Failure(503, f"overloaded (key {KEY})"), Failure(503, f"overloaded ({KEY.upper()})")
        )
        retries: list[ModelError] = []
        with pytest.raises(ModelError) as raised:
            wire.provider(max_retries=1).complete(TASK, on_retry=retries.append)
        messages = [e.message for e in retries] + [raised.value.message, str(raised.value)]
        assert len(messages) == 3
        assert all(KEY.lower() not in m.lower() and "[REDACTED]" in m for m in messages)

    def test_stream_cut_mid_way_is_an_invalid_response(self, wire: Wire) -> None:
        """A stream that stops before its end is a clear invalid_response, after the text
        that did arrive was shown."""
        wire.server.script(Turn(text="partial answer", piece=4, cut_after=4))
        pieces: list[str] = []
        with pytest.raises(ModelError) as raised:
            wire.provider().complete(TASK, on_text=pieces.append)
        assert raised.value.kind == "invalid_response"
        assert "response stream was cut off" in raised.value.message
        assert pieces
        assert "partial answer".startswith("".join(pieces))

    def test_interrupt_while_streaming_propagates_as_is(self, wire: Wire) -> None:
        """Ctrl-C during a stream reaches the caller as KeyboardInterrupt, not a ModelError."""
        wire.server.script(Turn(text="a long answer"))

        def interrupt(_: str) -> None:
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            wire.provider().complete(TASK, on_text=interrupt)

    def test_a_bug_in_the_callers_code_is_not_a_model_error(self, wire: Wire) -> None:
        """An error raised by our own code while a response is read (here the on_text
        callback) reaches the caller as it is, not disguised as an invalid response."""
        wire.server.script(Turn(text="some text"))

        def broken(_: str) -> None:
            raise TypeError("a bug in the printer")

        with pytest.raises(TypeError, match="a bug in the printer"):
            wire.provider().complete(TASK, on_text=broken)

    @MODES
    def test_a_bug_in_the_reading_code_is_not_a_model_error(
        self, wire: Wire, stream: bool, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An error raised by our own code while it reads a well-formed response reaches
        the caller as it is: only what the server sent is reported as invalid_response."""

        def broken(*args: object) -> None:
            raise KeyError("a bug in the reading code")

        monkeypatch.setattr(ResponseParts, "add_call", broken)
        monkeypatch.setattr(ResponseParts, "call", broken)
        wire.server.script(Turn(tool_calls=(("call_1", "echo", '{"text": "hi"}'),)))
        with pytest.raises(KeyError, match="a bug in the reading code"):
            wire.provider().complete(TASK, on_text=on_text_for(stream))

    def test_body_cut_mid_way_is_retried_and_reported(self, wire: Wire) -> None:
        """A whole-JSON body that breaks off is retried by the SDK, and the attempt reported."""
        wire.server.script(Turn(text="lost", cut_after=1), Turn(text="whole"))
        retries: list[ModelError] = []
        response = wire.provider().complete(TASK, on_retry=retries.append)
        assert response.message.content == "whole"
        assert [(e.kind, e.attempt) for e in retries] == [("invalid_response", 1)]

    def test_error_body_cut_mid_way_is_reported_as_a_retried_attempt(self, wire: Wire) -> None:
        """An error status whose body breaks off is still one reported, retried attempt."""
        body = b'{"error": {"message": "upstream failed"}}'
        wire.server.script(Raw(body, "application/json", status=502, cut=True), Turn(text="ok"))
        retries: list[ModelError] = []
        response = wire.provider().complete(TASK, on_retry=retries.append)
        assert response.message.content == "ok"
        assert [(e.kind, e.attempt) for e in retries] == [("invalid_response", 1)]

    @MODES
    def test_no_answer_in_time_is_a_timeout(self, wire: Wire, stream: bool) -> None:
        """A server that does not answer within the timeout: each attempt times out."""
        wire.server.script(Stall(2.0), Stall(2.0))
        retries: list[ModelError] = []
        with pytest.raises(ModelError) as raised:
            wire.provider(max_retries=1, timeout=0.3).complete(
                TASK, on_text=on_text_for(stream), on_retry=retries.append
            )
        assert [e.kind for e in retries] == ["timeout"]
        assert (raised.value.kind, raised.value.attempt) == ("timeout", 2)

    def test_success_status_with_an_unreadable_body(self, wire: Wire) -> None:
        """A 200 whose body is not a response (a proxy's page, JSON of the wrong shape) is
        an invalid_response, not a crash."""
        for reply in (Raw(b"<html>502 Bad Gateway</html>"), *wire.malformed):
            wire.server.script(reply)
            with pytest.raises(ModelError) as raised:
                wire.provider(max_retries=0).complete(TASK)
            assert raised.value.kind == "invalid_response", reply

    def test_unreachable_server(self, wire: Wire) -> None:
        """Nothing listening on the port is an http_error saying the server cannot be reached."""
        with type(wire.server)() as gone:
            provider = attrs.evolve(wire, server=gone).provider(max_retries=0)
        with pytest.raises(ModelError, match="Could not reach the model server") as raised:
            provider.complete(TASK)
        assert (raised.value.kind, raised.value.status) == ("http_error", None)


class TestProxies:
    """The SDKs' HTTP client reads the standard proxy variables, as for any user of the SDK."""

    def test_http_proxy_carries_the_request(
        self, wire: Wire, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With HTTP_PROXY set, the request goes to the proxy, which is asked for the whole
        URL of a host the test machine cannot resolve (here the server plays the proxy)."""
        host, port = wire.server.base_url.split("//")[1].split("/")[0].split(":")
        monkeypatch.setenv("HTTP_PROXY", f"http://{host}:{port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        wire.server.script(Turn(text="through the proxy"))
        response = wire.provider(base_url="http://model.invalid").complete(TASK)
        assert response.message.content == "through the proxy"
        (request,) = wire.server.requests
        assert request.path == f"http://model.invalid{type(wire.server).path}"

    def test_https_proxy_is_asked_for_a_tunnel(
        self, wire: Wire, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With HTTPS_PROXY set, an https server is reached through a tunnel the proxy is
        asked for; a proxy that refuses it means the server cannot be reached."""
        host, port = wire.server.base_url.split("//")[1].split("/")[0].split(":")
        monkeypatch.setenv("HTTPS_PROXY", f"http://{host}:{port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        with pytest.raises(ModelError, match="Could not reach the model server") as raised:
            wire.provider(base_url="https://model.invalid", max_retries=0).complete(TASK)
        assert raised.value.kind == "http_error"
        assert [r.path for r in wire.server.requests] == ["model.invalid:443"]

    def test_no_proxy_reaches_a_loopback_server_directly(
        self, wire: Wire, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Proxy variables that point nowhere do not stop a server NO_PROXY names."""
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
            monkeypatch.setenv(name, "http://127.0.0.1:9")
        monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
        wire.server.script(Turn(text="direct"))
        assert wire.provider(max_retries=0).complete(TASK).message.content == "direct"
        assert wire.server.requests[0].path == type(wire.server).path
