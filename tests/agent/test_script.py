"""The scripted model: responses from a file, in order, with clear errors."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mini_harness.agent import Message, ModelRequest, ScriptProvider, ToolCall
from mini_harness.errors import ModelError, ScriptError

Script = Callable[[list[dict[str, Any]]], Path]
REQUEST = ModelRequest((Message("user", "t"),))


class TestScript:
    def test_responses_in_order(self, write_script: Script) -> None:
        """Responses come back in the script's order, with default call ids."""
        provider = ScriptProvider(
            write_script(
                [{"toolCalls": [{"name": "echo", "arguments": {"text": "a"}}]}, {"text": "b"}]
            )
        )
        first = provider.complete(REQUEST)
        assert first.message.tool_calls == (ToolCall("call_1_1", "echo", '{"text":"a"}'),)
        assert first.finish_reason == "tool_calls"
        second = provider.complete(REQUEST)
        assert (second.message.content, second.finish_reason) == ("b", "stop")

    def test_raw_arguments_kept(self, write_script: Script) -> None:
        """String arguments are sent as they are, even when they are not JSON."""
        provider = ScriptProvider(
            write_script([{"toolCalls": [{"id": "x", "name": "e", "arguments": "{oops"}]}])
        )
        assert provider.complete(REQUEST).message.tool_calls[0] == ToolCall("x", "e", "{oops")

    def test_too_many_requests(self, write_script: Script) -> None:
        """Asking for more responses than the script has fails clearly."""
        provider = ScriptProvider(write_script([{"text": "only"}]))
        provider.complete(REQUEST)
        with pytest.raises(ModelError, match=r"has 1 response; the run asked for response 2"):
            provider.complete(REQUEST)

    def test_unused(self, write_script: Script) -> None:
        """The provider says which responses were never served."""
        provider = ScriptProvider(write_script([{"text": "a"}, {"text": "b"}, {"text": "c"}]))
        provider.complete(REQUEST)
        assert provider.unused() == (2, 3)

    def test_streams_text(self, write_script: Script) -> None:
        """With on_text, the response's text is passed on."""
        chunks: list[str] = []
        ScriptProvider(write_script([{"text": "hello"}])).complete(REQUEST, on_text=chunks.append)
        assert chunks == ["hello"]

    def test_delay(self, write_script: Script) -> None:
        """A response with delayMs takes that long to come back."""
        provider = ScriptProvider(write_script([{"text": "slow", "delayMs": 60}]))
        started = time.monotonic()
        provider.complete(REQUEST)
        assert time.monotonic() - started >= 0.06

    @pytest.mark.parametrize(
        ("content", "message"),
        [
            ("[]", "expected a non-empty list of responses"),
            ('[{"text": 3}]', "response 1.text: must be a string"),
            ("[{}]", "response 1: needs text or toolCalls"),
            ('[{"toolCalls": [{"arguments": {}}]}]', "toolCalls[0].name: must be a non-empty"),
            ('[{"text": "a", "finishReason": "done"}]', "response 1.finishReason: must be one of"),
            ("{", "is not valid JSON"),
            ('[{"text": "a", "delayMs": -1}]', "response 1.delayMs: must be a number"),
            ('[{"text": "a", "delayMs": "1"}]', "response 1.delayMs: must be a number"),
            (
                '[{"text": "a", "tool_calls": [{"name": "echo"}]}]',
                "response 1.tool_calls: unknown key (did you mean 'toolCalls'?)",
            ),
            (
                '[{"text": "a", "delay_ms": 5}]',
                "response 1.delay_ms: unknown key (did you mean 'delayMs'?)",
            ),
            (
                '[{"toolCalls": [{"name": "echo", "input": {}}]}]',
                "response 1.toolCalls[0].input: unknown key",
            ),
            (
                '[{"text": "a", "usage": {"input_tokens": 3}}]',
                "response 1.usage.input_tokens: unknown key",
            ),
            (
                '{"response": [{"text": "a"}]}',
                "$.response: unknown key (did you mean 'responses'?)",
            ),
        ],
    )
    def test_bad_scripts(self, tmp_path: Path, content: str, message: str) -> None:
        """A script that cannot be used is refused with a message naming what is wrong."""
        path = tmp_path / "s.json"
        path.write_text(content)
        with pytest.raises(ScriptError, match=re.escape(message)) as caught:
            ScriptProvider(path)
        assert str(path) in caught.value.message

    def test_missing_file(self, tmp_path: Path) -> None:
        """A script file that does not exist is refused."""
        with pytest.raises(ScriptError, match="cannot be read"):
            ScriptProvider(tmp_path / "none.json")
