"""The loopback servers' own rules: what each wire format refuses in a history."""

from __future__ import annotations

import pytest

from tests.agent.wire_servers import validate_anthropic_messages, validate_openai_messages


class TestChatCompletionsRules:
    @pytest.mark.parametrize(
        ("messages", "reason"),
        [
            ([{"role": "tool", "tool_call_id": "x", "content": "r"}], "must follow"),
            (
                [
                    {"role": "user", "content": "u"},
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "x",
                                "type": "function",
                                "function": {"name": "e", "arguments": "{"},
                            }
                        ],
                    },
                ],
                "arguments is not a JSON object",
            ),
            (
                [
                    {"role": "user", "content": "u"},
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "x",
                                "type": "function",
                                "function": {"name": "e", "arguments": "{}"},
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": "x", "content": "r"},
                    {"role": "tool", "tool_call_id": "x", "content": "again"},
                ],
                "does not answer an unanswered tool call",
            ),
        ],
        ids=["tool-without-call", "arguments-not-json", "two-results-for-one-call"],
    )
    def test_rules_the_server_enforces(self, messages: list[object], reason: str) -> None:
        """The server's validator names the first broken rule of a history."""
        problem = validate_openai_messages(messages)
        assert problem is not None
        assert reason in problem


class TestMessagesRules:
    @pytest.mark.parametrize(
        ("messages", "reason"),
        [
            ([{"role": "assistant", "content": "hi"}], "first message must use the user role"),
            (
                [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
                "roles must alternate",
            ),
            (
                [
                    {"role": "user", "content": "a"},
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t1", "name": "e", "input": {}}],
                    },
                    {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": "other", "content": "r"}
                        ],
                    },
                ],
                "without tool_result blocks immediately after: t1",
            ),
            (
                [
                    {"role": "user", "content": "a"},
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t1", "name": "e", "input": {}}],
                    },
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "note"},
                            {"type": "tool_result", "tool_use_id": "t1", "content": "r"},
                        ],
                    },
                ],
                "tool_result blocks must come first",
            ),
        ],
        ids=["assistant-first", "user-twice", "wrong-result-id", "result-after-text"],
    )
    def test_rules_the_server_enforces(self, messages: list[object], reason: str) -> None:
        """The server's validator names the first broken rule of a history."""
        problem = validate_anthropic_messages(messages)
        assert problem is not None
        assert reason in problem


class TestValidHistories:
    def test_chat_completions_history_with_parallel_calls_is_valid(self) -> None:
        """Two calls answered in either order, then a user turn, break no rule."""
        call = {"type": "function", "function": {"name": "e", "arguments": "{}"}}
        messages = [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "u"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "a", **call}, {"id": "b", **call}],
            },
            {"role": "tool", "tool_call_id": "b", "content": "2"},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "user", "content": "more"},
        ]
        assert validate_openai_messages(messages) is None
        assert "a, b have no tool message" in str(validate_openai_messages(messages[:3]))

    def test_messages_history_with_parallel_calls_is_valid(self) -> None:
        """Two tool_use blocks answered by one user turn of two results break no rule."""
        use = {"type": "tool_use", "name": "e", "input": {}}
        messages = [
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": [{**use, "id": "a"}, {**use, "id": "b"}]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "b", "content": "2"},
                    {"type": "tool_result", "tool_use_id": "a", "content": "1", "is_error": True},
                    {"type": "text", "text": "more"},
                ],
            },
        ]
        assert validate_anthropic_messages(messages) is None
        assert "immediately after: a, b" in str(validate_anthropic_messages(messages[:2]))
