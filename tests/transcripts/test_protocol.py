from __future__ import annotations

import pytest

from mini_harness.transcripts.log_fold import CallProtocol


def _feed(steps: list[tuple[str, str]]) -> CallProtocol:
    protocol = CallProtocol()
    for line, (kind, call_id) in enumerate(steps, start=1):
        if kind == "ToolCalled":
            protocol.called(line, line - 1, "run", call_id, "echo")
        else:
            protocol.finished(line, line - 1, kind, call_id, "run", "echo")
    return protocol


class TestCallProtocol:
    def test_well_formed_calls_have_no_problems(self) -> None:
        """Interleaved calls that each end once are fine."""
        protocol = _feed(
            [
                ("ToolCalled", "a"),
                ("ToolCalled", "b"),
                ("ToolSucceeded", "b"),
                ("ToolFailed", "a"),
            ]
        )
        assert protocol.problems == []
        assert protocol.in_doubt() == []

    @pytest.mark.parametrize(
        ("steps", "message"),
        [
            ([("ToolSucceeded", "x")], "ToolSucceeded for call x, which has no ToolCalled"),
            (
                [("ToolCalled", "x"), ("ToolSucceeded", "x"), ("ToolFailed", "x")],
                "ToolFailed for call x, which already ended",
            ),
            ([("ToolCalled", "x"), ("ToolCalled", "x")], "callId x is used again"),
            (
                [("ToolCalled", "x"), ("ToolSucceeded", "x"), ("ToolCalled", "x")],
                "callId x is used again",
            ),
        ],
    )
    def test_invalid_sequences(self, steps: list[tuple[str, str]], message: str) -> None:
        """Each protocol violation is reported once, with its line and seq."""
        protocol = _feed(steps)
        assert [p.message for p in protocol.problems] == [message]
        problem = protocol.problems[0]
        assert problem.describe() == f"line {len(steps)} (seq {len(steps) - 1}): {message}"

    @pytest.mark.parametrize(
        ("run_id", "name", "message"),
        [
            (
                "other",
                "echo",
                "ToolFailed for call x is in run other, but its ToolCalled is in run run",
            ),
            (
                "run",
                "list_files",
                "ToolFailed for call x names tool list_files, but its ToolCalled names echo",
            ),
        ],
    )
    def test_a_terminal_of_another_run_or_tool_still_ends_the_call(
        self, run_id: str, name: str, message: str
    ) -> None:
        """The mismatch is reported; the call ends as its ToolCalled recorded it."""
        protocol = CallProtocol()
        protocol.called(1, 0, "run", "x", "echo")
        opened = protocol.finished(2, 1, "ToolFailed", "x", run_id, name)
        assert opened is not None
        assert (opened.run_id, opened.name) == ("run", "echo")
        assert [p.describe() for p in protocol.problems] == [f"line 2 (seq 1): {message}"]
        assert protocol.in_doubt() == []
        assert protocol.finished(3, 2, "ToolSucceeded", "x", "run", "echo") is None
        assert protocol.problems[-1].message == "ToolSucceeded for call x, which already ended"

    def test_open_call_is_in_doubt(self) -> None:
        """A ToolCalled with no terminal event is reported as in doubt, never dropped."""
        protocol = _feed([("ToolCalled", "a"), ("ToolCalled", "b"), ("ToolSucceeded", "a")])
        assert [c.call_id for c in protocol.in_doubt()] == ["b"]
