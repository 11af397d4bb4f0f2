"""The codec's direct routes (encoding a dispatch's events, decoding common lines) change
nothing but speed: these tests hold them to the generic, strict paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from mini_harness.events import (
    ApprovalDecided,
    ApprovalRequested,
    ContextTrimmed,
    Event,
    ModelFailed,
    ModelRequested,
    ModelResponded,
    RunFinished,
    RunStarted,
    ToolCalled,
    ToolError,
    ToolFailed,
    ToolSucceeded,
)
from mini_harness.runtime import ToolRegistry, ToolRuntime
from mini_harness.transcripts import DecodeError, JsonlTranscript
from mini_harness.transcripts.codec import _BY_NAME, _converter, parse_line, wire_to_event

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False,
    allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)  # fmt: skip
PREV = "0123456789abcdef0123456789abcdef"


@pytest.fixture(name="lines")
def _lines(tmp_path: Path, registry: ToolRegistry) -> list[bytes]:
    """Lines of every event type: header, run, successes and each kind of failure."""
    path = tmp_path / "t.jsonl"
    with JsonlTranscript(path) as sink:
        runtime = ToolRuntime(registry, sink)
        for name, tool_input in (
            ("echo", {"text": "a"}),
            ("echo", {"text": 1}),
            ("boom", {}),
            ("nope", {}),
            ("add", {"a": 1, "b": 2.5}),
            ("add", {"a": "x"}),
        ):
            try:
                runtime.dispatch(name, tool_input)
            except Exception:  # every failure is recorded: the lines are the point
                continue
        sink.emit(ApprovalRequested("ts", runtime.run_id, "c9", "echo", "rule", "echo hi"))
        sink.emit(ApprovalDecided("ts", runtime.run_id, "c9", "echo", "approved", "user"))
        effect = {"path": "a.txt", "before": None, "after": "ab" * 32}
        sink.emit(ToolSucceeded("ts", runtime.run_id, "c9", "echo", {}, 1.0, effects=(effect,)))
        ts, run = "2026-01-02T03:04:05.123456Z", "a" * 32
        for event in _agent_run_events(ts, run):
            sink.append(event)
    return path.read_bytes().splitlines()


def _agent_run_events(ts: str, run: str) -> list[Event]:
    """One of each agent-run event (format version 2)."""
    message = {"role": "assistant", "content": "", "toolCalls": [{"id": "u1", "name": "echo",
               "arguments": "{}"}]}  # fmt: skip
    return [
        RunStarted(
            ts,
            run,
            "0.1.0",
            (),
            task="t",
            model={"provider": "mock", "name": "m"},
            system_prompt="s",
            project_rules=({"path": "AGENTS.md", "sha256": "0" * 64, "content": "be brief"},),
            max_steps=3,
        ),
        ModelRequested(ts, run, 1, "q1", ({"role": "user", "content": "t"},), {}, "h" * 64),
        ModelFailed(ts, run, "q1", {"kind": "rate_limited", "status": 429, "message": "m"}, 1, 2.5),
        ModelResponded(ts, run, "q1", message, "tool_calls", {"inputTokens": 3}, 4.0, "resp-1"),
        ToolCalled(ts, run, "c-9", "echo", {}, tool_use_id="u1", step=1),
        ContextTrimmed(ts, run, 2, ({"index": 3, "content": "[trimmed]"},), 90, 40, 50),
        RunFinished(ts, run, "max_steps", None, 2, {"inputTokens": 3}),
    ]


class TestFastDecoding:
    def test_every_event_type_decodes_as_the_strict_converter_decodes_it(
        self, lines: list[bytes]
    ) -> None:
        """Reading a line gives the very event that strict typing of the line gives."""
        kinds: set[str] = set()
        for line in lines:
            data = parse_line(line)
            kinds.add(data["type"])
            strict: object = _converter().structure(data, _BY_NAME[data["type"]])
            assert wire_to_event(data) == strict
        assert kinds == set(_BY_NAME)

    def test_numbers_are_typed_alike(self) -> None:
        """An integer durationMs reads as a float, as the strict path makes it."""
        data = {"type": "ToolSucceeded", "seq": 3, "ts": "t", "prev": PREV, "runId": "r",
                "callId": "c", "name": "echo", "output": None, "durationMs": 2}  # fmt: skip
        event = wire_to_event(data)
        assert isinstance(event, ToolSucceeded)
        assert type(event.duration_ms) is float
        assert event == _converter().structure(data, ToolSucceeded)

    def test_failed_with_violations(self) -> None:
        """A ToolFailed with violations keeps them as a tuple of objects."""
        violation = {"path": "echo.text", "keyword": "type", "message": "x"}
        error = {"kind": "invalid_input", "message": "m", "path": "echo.text",
                 "violations": [violation]}  # fmt: skip
        data = {"type": "ToolFailed", "seq": 3, "ts": "t", "runId": "r", "callId": "c",
                "name": "echo", "error": error, "durationMs": 0.5}  # fmt: skip
        event = wire_to_event(data)
        assert isinstance(event, ToolFailed)
        assert event.error == ToolError("invalid_input", "m", "echo.text", None, (violation,))

    @pytest.mark.parametrize(
        ("change", "message"),
        [
            ({"runId": 5}, "invalid ToolCalled: invalid value for type, expected str @ $.run_id"),
            (
                {"input": None, "drop": "input"},
                "invalid ToolCalled: required field missing @ $.input",
            ),
            (
                {"type": "ToolSucceeded", "output": 1, "durationMs": True},
                "invalid ToolSucceeded: invalid value for type, expected float @ $.duration_ms",
            ),
            (
                {"type": "ToolFailed", "error": {"kind": "x"}, "durationMs": 1},
                "invalid ToolFailed: required field missing @ $.error.message",
            ),
            (
                {"type": "RunStarted", "harness": "h", "tools": ["t"]},
                "invalid RunStarted: expected a mapping @ $.tools[0]",
            ),
            (
                {"type": "TranscriptStarted", "format": "f", "version": "1", "transcriptId": "x"},
                "invalid TranscriptStarted: invalid value for type, expected int @ $.version",
            ),
        ],
    )
    def test_unusual_lines_get_the_strict_message(
        self, change: dict[str, Any], message: str
    ) -> None:
        """A line the direct route does not take still fails with the converter's words."""
        data: dict[str, Any] = {"type": "ToolCalled", "seq": 2, "ts": "t", "runId": "r",
                                "callId": "c", "name": "echo", "input": {}}  # fmt: skip
        drop = change.pop("drop", None)
        data.update(change)
        if drop:
            del data[drop]
        with pytest.raises(DecodeError) as caught:
            wire_to_event(data)
        assert str(caught.value) == message
