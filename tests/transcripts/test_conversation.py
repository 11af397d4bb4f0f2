"""The conversation's payloads on the wire: written by the one encoder, read by the one
decoder, in the shapes transcripts have always had."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from mini_harness.errors import FieldError
from mini_harness.events import (
    FileEffect,
    Message,
    ModelFailure,
    ModelIdentity,
    ProjectRules,
    ReplacedMessage,
    RunOrigin,
    ToolAnnotations,
    ToolCall,
    ToolDefinition,
    Usage,
    to_wire,
)
from mini_harness.transcripts.fields import structurer

# Each payload with the exact compact JSON a transcript line holds of it.
SHAPES: list[tuple[Any, bytes]] = [
    (Message("user", "hi"), b'{"role":"user","content":"hi"}'),
    (Message("assistant"), b'{"role":"assistant","content":""}'),
    (
        Message("assistant", "", (ToolCall("call_1", "read_file", '{"path":'),)),
        b'{"role":"assistant","content":"","toolCalls":[{"id":"call_1","name":"read_file",'
        b'"arguments":"{\\"path\\":"}]}',
    ),
    (
        Message("tool", "boom", tool_call_id="call_1", name="read_file", is_error=True),
        b'{"role":"tool","content":"boom","toolCallId":"call_1","name":"read_file","isError":true}',
    ),
    (Usage(), b'{"inputTokens":null,"outputTokens":null,"cachedTokens":null}'),
    (Usage(12, 3), b'{"inputTokens":12,"outputTokens":3,"cachedTokens":null}'),
    (ModelFailure("http_error", None, "m"), b'{"kind":"http_error","status":null,"message":"m"}'),
    (
        ReplacedMessage(5, None, None, 750, "[trimmed]"),
        b'{"index":5,"toolCallId":null,"name":null,"tokens":750,"content":"[trimmed]"}',
    ),
    (ProjectRules("AGENTS.md", "ab", "Hi"), b'{"path":"AGENTS.md","sha256":"ab","content":"Hi"}'),
    (ModelIdentity("mock", "mock"), b'{"provider":"mock","name":"mock"}'),
    (RunOrigin("r" * 32, 2), b'{"runId":"' + b"r" * 32 + b'","step":2}'),
    (FileEffect("a.txt", None, "cd"), b'{"path":"a.txt","before":null,"after":"cd"}'),
    (
        ToolDefinition("t", "A tool.", {"type": "object"}),
        b'{"name":"t","description":"A tool.","inputSchema":{"type":"object"}}',
    ),
    (
        ToolDefinition(
            "t",
            "A tool.",
            {"type": "object"},
            annotations=ToolAnnotations(title="T", idempotent_hint=False),
            output_schema={"type": "object"},
        ),
        b'{"name":"t","description":"A tool.","inputSchema":{"type":"object"},'
        b'"outputSchema":{"type":"object"},"annotations":{"title":"T","idempotentHint":false}}',
    ),
    (
        ToolDefinition("t", "A tool.", {"type": "object"}, annotations=ToolAnnotations()),
        b'{"name":"t","description":"A tool.","inputSchema":{"type":"object"}}',
    ),
]  # fmt: skip


class TestShapes:
    @pytest.mark.parametrize(("value", "line"), SHAPES)
    def test_written_as_recorded(self, value: Any, line: bytes) -> None:
        """Each payload is written with camelCase keys in declaration order; unset optional
        fields are left out, except the counts of usage and the nullable fields of the
        others, which are written as null."""
        assert orjson.dumps(to_wire(value)) == line

    @pytest.mark.parametrize(("value", "line"), SHAPES)
    def test_read_back(self, value: Any, line: bytes) -> None:
        """What is written reads back as the same value."""
        cls: Any = type(value)
        assert structurer(cls)(orjson.loads(line)) == value

    def test_an_older_message_without_content_reads(self) -> None:
        """A message without `content` has the empty text, as the agent layer always read it."""
        assert structurer(Message)({"role": "assistant"}) == Message("assistant")

    def test_usage_adds_up(self) -> None:
        """Usage sums per count; a count no one reported stays None."""
        assert Usage(1, None, None) + Usage(2, 5, None) == Usage(3, 5, None)


class TestRefused:
    @pytest.mark.parametrize(
        ("cls", "data", "where", "why"),
        [
            (Message, {"content": "x"}, ".role", "required field missing"),
            (Message, {"role": "robot"}, ".role",
             "expected one of 'system', 'user', 'assistant', 'tool'"),
            (Message, {"role": "assistant", "toolCalls": [{"id": "a", "name": "b"}]},
             ".toolCalls[0].arguments", "required field missing"),
            (Usage, {"inputTokens": "12"}, ".inputTokens", "expected an integer"),
            (ToolDefinition, {"name": "t", "description": "d", "inputSchema": {},
                              "annotations": {"readOnlyHint": 1}},
             ".annotations.readOnlyHint", "expected a boolean"),
        ],
    )  # fmt: skip
    def test_the_path_says_where(
        self, cls: type, data: dict[str, Any], where: str, why: str
    ) -> None:
        """A payload that does not fit its declaration says which field, by wire path, and why."""
        with pytest.raises(FieldError) as caught:
            structurer(cls)(data)
        assert (caught.value.path, caught.value.reason) == (where, why)
