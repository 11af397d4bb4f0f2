"""Loopback HTTP servers that speak the two model wire formats, for tests.

`OpenAIWireServer` answers `POST /v1/chat/completions`, `AnthropicWireServer` answers
`POST /v1/messages`, both on 127.0.0.1. A test scripts the replies in order:

- `Turn(text=..., tool_calls=(("call_1", "read_file", '{"path": "a"}'),), ...)`: a model
  turn, sent as one JSON body or as an SSE stream, whichever the request asked for (so one
  script serves streaming and non-streaming clients alike); `cut_after=N` closes the
  connection after N stream events (or half the JSON body), mid-response;
- `Failure(status, message, retry_after="0")`: an error status in the format's error body;
- `Stall(seconds)`: answers nothing for that long, then closes the connection;
- `Raw(body, content_type)`: a body sent as is (a proxy's page, a body of the wrong shape).

Every request is recorded (`requests`), and its history is VALIDATED against the
provider's message rules first: an invalid history is answered 400 with the reason (and
kept in `rejections`) without using a scripted reply. The rules checked are the ones real
servers enforce: every assistant tool call answered by exactly one tool result with its
id before the next turn, tool results only for the previous assistant's calls, tool-call
arguments that parse as a JSON object (OpenAI-compatible servers such as vLLM refuse
others), Anthropic's alternating roles with `tool_result` blocks first.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mini_harness.agent import Message, ModelRequest
from mini_harness.events import ToolDefinition
from tests.agent.wire_anthropic import AnthropicWireServer, validate_anthropic_messages
from tests.agent.wire_base import (
    Failure,
    Raw,
    RecordedRequest,
    Reply,
    ScriptError,
    Stall,
    Turn,
    WireServer,
)
from tests.agent.wire_openai import OpenAIWireServer, validate_openai_messages

__all__ = [
    "ECHO",
    "MODES",
    "TASK",
    "AnthropicWireServer",
    "Failure",
    "OpenAIWireServer",
    "Raw",
    "RecordedRequest",
    "Reply",
    "ScriptError",
    "Stall",
    "Turn",
    "WireServer",
    "answered",
    "on_text_for",
    "validate_anthropic_messages",
    "validate_openai_messages",
]

# What the provider tests send.
ECHO = ToolDefinition(
    "echo", "Echoes text.", {"type": "object", "properties": {"text": {"type": "string"}}}
)
TASK = ModelRequest(
    messages=(Message("system", "You are terse."), Message("user", "Echo hi.")),
    tools=(ECHO,),
)
MODES = pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])


def on_text_for(stream: bool) -> Callable[[str], None] | None:
    """What `complete` is given as on_text to stream (or, None, not to)."""
    return (lambda _: None) if stream else None


def answered(request: ModelRequest, *messages: Message) -> ModelRequest:
    """`request` continued with `messages` (the assistant's answer, tool results...)."""
    return ModelRequest(messages=(*request.messages, *messages), tools=request.tools)
