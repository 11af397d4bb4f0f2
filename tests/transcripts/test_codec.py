"""The codec: events to lines and back, decoding derived from the event declarations."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import msgspec
import pytest
from hypothesis import strategies as st

from mini_harness.errors import DecodeError, FieldError
from mini_harness.events import (
    KNOWN_EVENT_TYPES,
    MAX_JSON_DEPTH,
    ApprovalDecided,
    ApprovalRequested,
    ContextTrimmed,
    Event,
    FileEffect,
    JsonObject,
    ModelFailed,
    ModelFailure,
    ModelIdentity,
    ModelRequested,
    ModelResponded,
    ProjectRules,
    ReplacedMessage,
    RunFinished,
    RunStarted,
    ToolCall,
    ToolCalled,
    ToolDefinition,
    ToolError,
    ToolFailed,
    ToolSucceeded,
    TranscriptStarted,
    UnknownEvent,
)
from mini_harness.events import Message as RecordedMessage
from mini_harness.events import Usage as RecordedUsage
from mini_harness.events.vocabulary import KnownEvent
from mini_harness.events.wire import Declared as Wire
from mini_harness.events.wire import fields
from mini_harness.runtime import ToolRegistry, ToolRuntime
from mini_harness.transcripts import JsonlTranscript, decode_line, encode_line
from mini_harness.transcripts.codec import decode_wire, load_line
from mini_harness.transcripts.fields import structurer

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
        effect = FileEffect("a.txt", None, "ab" * 32)
        sink.emit(ToolSucceeded("ts", runtime.run_id, "c9", "echo", {}, 1.0, effects=(effect,)))
        ts, run = "2026-01-02T03:04:05.123456Z", "a" * 32
        for event in _agent_run_events(ts, run):
            sink.append(event)
    return path.read_bytes().splitlines()


def _agent_run_events(ts: str, run: str) -> list[Event]:
    """One of each agent-run event (format version 2)."""
    message = RecordedMessage("assistant", "", (ToolCall("u1", "echo", "{}"),))
    return [
        RunStarted(
            ts,
            run,
            "0.1.0",
            (),
            task="t",
            model=ModelIdentity("mock", "m"),
            system_prompt="s",
            project_rules=(ProjectRules("AGENTS.md", "0" * 64, "be brief"),),
            max_steps=3,
        ),
        ModelRequested(ts, run, 1, "q1", (RecordedMessage("user", "t"),), {}, "h" * 64),
        ModelFailed(ts, run, "q1", ModelFailure("rate_limited", 429, "m"), 1, 2.5),
        ModelResponded(ts, run, "q1", message, "tool_calls", RecordedUsage(3), 4.0, "resp-1"),
        ToolCalled(ts, run, "c-9", "echo", {}, tool_use_id="u1", step=1),
        ContextTrimmed(ts, run, 2, (ReplacedMessage(3, "u1", "echo", 9, "[trimmed]"),), 90, 40, 50),
        RunFinished(ts, run, "max_steps", None, 2, RecordedUsage(3)),
    ]


TS = "2026-01-02T03:04:05.123456Z"
EVENTS = [
    TranscriptStarted(ts=TS, transcript_id="t" * 32),
    RunStarted(TS, "r" * 32, "0.1.0", (ToolDefinition("echo", "", {"type": "object"}),)),
    ToolCalled(TS, "r" * 32, "c-1", "echo", {"text": ["a", 1, None, 2.5, True]}),
    ToolSucceeded(TS, "r" * 32, "c-1", "echo", {"text": "a"}, 0.021),
    ToolFailed(TS, "r" * 32, "c-2", "echo", ToolError("handler_error", "m", type="E"), 1.5),
    ToolFailed(
        TS,
        "r" * 32,
        "c-3",
        "echo",
        ToolError("invalid_input", "m", "echo.text", None, ({"path": "echo.text"},)),
        0.5,
    ),
]


class TestDecoding:
    @pytest.mark.parametrize("event", EVENTS, ids=lambda event: type(event).__name__)
    def test_every_event_type_reads_back_as_written(self, event: object) -> None:
        """A line decodes to the very event it was written from, envelope included."""
        line = encode_line(event, 7, PREV)  # type: ignore[arg-type]
        assert tuple(decode_line(line)) == (7, PREV, event)

    def test_every_line_a_writer_makes_decodes(self, lines: list[bytes]) -> None:
        """Each line of a real transcript (every event type) types to its own class."""
        kinds = {type(decode_line(line).event) for line in lines}
        assert kinds == set(KNOWN_EVENT_TYPES)

    def test_every_event_type_has_a_derived_decoder(self) -> None:
        """Every field of every event type has a wire key and a check: nothing is left out."""
        for cls in KNOWN_EVENT_TYPES:
            keys = [field.encode_name for field in fields(cls)]
            assert "ts" in keys
            assert all("_" not in key for key in keys)

    def test_an_integer_duration_is_kept_as_written(self) -> None:
        """An integer durationMs reads as that integer: reports show what the line says."""
        data = {"type": "ToolSucceeded", "seq": 3, "ts": "t", "prev": PREV, "runId": "r",
                "callId": "c", "name": "echo", "output": None, "durationMs": 2}  # fmt: skip
        _, _, event = decode_wire(data)
        assert isinstance(event, ToolSucceeded)
        assert event.duration_ms == 2

    def test_an_integer_duration_in_a_line_is_kept_as_written(self) -> None:
        """Decoded from the line's bytes too, `"durationMs":0` stays 0 and is written back so."""
        line = (b'{"type":"ToolSucceeded","seq":3,"ts":"t","runId":"r","callId":"c",'
                b'"name":"echo","output":null,"durationMs":0}')  # fmt: skip
        decoded = decode_line(line)
        assert type(decoded.event.duration_ms) is int  # type: ignore[union-attr]
        assert encode_line(decoded.event, 3, None) == line

    @pytest.mark.parametrize(
        "digits", [b"123456789012345678901234567890", b"-18446744073709551616"]
    )
    def test_a_number_beyond_64_bits_reads_as_before(self, digits: bytes) -> None:
        """An integer too large for 64 bits (no writer here makes one) reads as the float
        it always read as, so the event can be shown and written again."""
        for line in (
            b'{"type":"ToolCalled","seq":2,"ts":"t","runId":"r","callId":"c","name":"n",'
            b'"input":{"n":' + digits + b"}}",
            b'{"type":"Later","seq":2,"ts":"t","n":' + digits + b"}",
        ):
            event = decode_line(line).event
            value = event.data["n"] if isinstance(event, UnknownEvent) else event.input["n"]  # type: ignore[union-attr]
            assert value == float(digits)
            assert b'"n":' in encode_line(event, 2, None)

    def test_a_number_beyond_a_double_is_not_json(self) -> None:
        """1e400 is no number a reader can hold: the line is not JSON, as it always was."""
        line = (b'{"type":"ToolCalled","seq":2,"ts":"t","runId":"r","callId":"c","name":"n",'
                b'"input":1e400}')  # fmt: skip
        with pytest.raises(DecodeError, match=r"^not JSON \(number is infinity"):
            decode_line(line)

    def test_failed_with_violations(self) -> None:
        """A ToolFailed's nested error becomes a ToolError, its violations a tuple of objects."""
        violation = {"path": "echo.text", "keyword": "type", "message": "x"}
        error = {"kind": "invalid_input", "message": "m", "path": "echo.text",
                 "violations": [violation]}  # fmt: skip
        data = {"type": "ToolFailed", "seq": 3, "ts": "t", "runId": "r", "callId": "c",
                "name": "echo", "error": error, "durationMs": 0.5}  # fmt: skip
        _, _, event = decode_wire(data)
        assert isinstance(event, ToolFailed)
        assert event.error == ToolError("invalid_input", "m", "echo.text", None, (violation,))

    def test_an_unknown_type_is_kept(self) -> None:
        """A type this version does not know becomes an UnknownEvent with its payload."""
        line = b'{"type":"Later","seq":4,"ts":"t","prev":"' + PREV.encode() + b'","x":[1]}'
        assert decode_line(line).event == UnknownEvent("Later", "t", {"x": [1]})

    @pytest.mark.parametrize(
        ("change", "message"),
        [
            ({"runId": 5}, "invalid ToolCalled: expected a string @ $.runId"),
            ({"drop": "input"}, "invalid ToolCalled: required field missing @ $.input"),
            (
                {"type": "ToolSucceeded", "output": 1, "durationMs": True},
                "invalid ToolSucceeded: expected a number @ $.durationMs",
            ),
            (
                {"type": "ToolFailed", "error": {"kind": "x"}, "durationMs": 1},
                "invalid ToolFailed: required field missing @ $.error.message",
            ),
            (
                {
                    "type": "ToolFailed",
                    "error": {"kind": "x", "message": "m", "violations": [{}, 3]},
                    "durationMs": 1,
                },
                "invalid ToolFailed: expected an object @ $.error.violations[1]",
            ),
            (
                {"type": "RunStarted", "harness": "h", "tools": ["t"]},
                "invalid RunStarted: expected an object @ $.tools[0]",
            ),
            (
                {"type": "RunStarted", "harness": "h", "tools": {}},
                "invalid RunStarted: expected an array @ $.tools",
            ),
            (
                {"type": "TranscriptStarted", "format": "f", "version": "1", "transcriptId": "x"},
                "invalid TranscriptStarted: expected an integer @ $.version",
            ),
            ({"seq": -1}, 'missing or invalid "seq"'),
            ({"ts": 1}, 'missing or invalid "ts"'),
            ({"prev": 1}, 'invalid "prev"'),
            ({"drop": "type"}, 'missing "type"'),
        ],
    )
    def test_a_wrong_field_is_named_with_its_wire_path(
        self, change: dict[str, Any], message: str
    ) -> None:
        """A line that does not fit its type says which field, by its wire path, and why."""
        data: dict[str, Any] = {"type": "ToolCalled", "seq": 2, "ts": "t", "runId": "r",
                                "callId": "c", "name": "echo", "input": {}}  # fmt: skip
        drop = change.pop("drop", None)
        data.update(change)
        if drop:
            del data[drop]
        with pytest.raises(DecodeError) as caught:
            decode_wire(data)
        assert str(caught.value) == message


class Usage(Wire, frozen=True):
    """A nested value, as model events will carry."""

    input_tokens: int
    output_tokens: int = 0


class Message(Wire, frozen=True):
    role: Literal["user", "assistant"]
    content: str
    usage: Usage | None = None


class Declared(KnownEvent, frozen=True):
    """An event type declared the way new ones are: fields, types, defaults."""

    ts: str
    run_id: str
    messages: tuple[Message, ...]
    usage: Usage
    stop_reason: str | None = None
    tags: tuple[str, ...] = ()
    extra: JsonObject = msgspec.field(default_factory=dict)


class Counted(Wire, frozen=True):
    """A declared value with a check of its own, beyond its fields' types."""

    ts: str
    count: int

    def __post_init__(self) -> None:
        if self.count < 0:
            raise ValueError("count must not be negative")


class TestDeclaredClasses:
    def test_a_validator_of_the_declaration_runs_when_decoding(self) -> None:
        """A declared class's own validator checks a decoded value as it checks a built one."""
        assert structurer(Counted)({"ts": "t", "count": 2}) == Counted("t", 2)
        with pytest.raises(FieldError, match="count"):
            structurer(Counted)({"ts": "t", "count": -1})

    def test_nested_values_decode_from_the_declaration(self) -> None:
        """Nested declared values, tuples of them and literals decode with no code of their own."""
        data = {"ts": "t", "runId": "r", "usage": {"inputTokens": 3, "outputTokens": 4},
                "messages": [{"role": "user", "content": "hi"},
                             {"role": "assistant", "content": "yo",
                              "usage": {"inputTokens": 1}}]}  # fmt: skip
        assert structurer(Declared)(data) == Declared(
            "t",
            "r",
            (Message("user", "hi"), Message("assistant", "yo", Usage(1, 0))),
            Usage(3, 4),
        )

    def test_absent_optional_fields_take_their_defaults(self) -> None:
        """A field added later with a default leaves older lines readable."""
        data = {"ts": "t", "runId": "r", "messages": [], "usage": {"inputTokens": 0}}
        decoded = structurer(Declared)(data)
        assert (decoded.stop_reason, decoded.tags, decoded.extra) == (None, (), {})

    @pytest.mark.parametrize(
        ("change", "message"),
        [
            ({"messages": [{"role": "robot", "content": ""}]},
             "expected one of 'user', 'assistant' @ $.messages[0].role"),
            ({"usage": {"inputTokens": 1.5}}, "expected an integer @ $.usage.inputTokens"),
            ({"tags": ["a", 2]}, "expected a string @ $.tags[1]"),
            ({"stopReason": 3}, "expected a string @ $.stopReason"),
            ({"usage": None}, "expected an object @ $.usage"),
        ],
    )  # fmt: skip
    def test_nested_problems_say_where(self, change: JsonObject, message: str) -> None:
        """A wrong value deep inside says its whole path."""
        data = {"ts": "t", "runId": "r", "messages": [], "usage": {"inputTokens": 0}, **change}
        with pytest.raises(FieldError) as caught:
            structurer(Declared)(data)
        assert f"{caught.value.reason} @ ${caught.value.path}" == message


def _nested(depth: int) -> bytes:
    """A ToolCalled line whose input nests `depth` levels."""
    value = b"[" * depth + b"]" * depth
    return (
        b'{"type":"ToolCalled","seq":2,"ts":"t","prev":"'
        + PREV.encode()
        + (b'","runId":"r","callId":"c","name":"echo","input":' + value + b"}")
    )


class TestDepth:
    def test_a_value_at_the_limit_reads(self) -> None:
        """An input nested exactly MAX_JSON_DEPTH levels is an ordinary line."""
        assert decode_line(_nested(MAX_JSON_DEPTH)).event.input is not None  # type: ignore[union-attr]

    @pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 1000, 5000, 100_000])
    def test_a_deeper_value_is_refused_by_name(self, depth: int) -> None:
        """Deeper nesting, even beyond what the JSON parser takes, says how deep is allowed."""
        with pytest.raises(DecodeError, match=f"^nested deeper than {MAX_JSON_DEPTH} levels$"):
            load_line(_nested(depth))

    def test_many_shallow_brackets_are_fine(self) -> None:
        """A long flat list of objects is not deep: only nesting counts."""
        line = _nested(1).replace(b"[]", b"[" + b",".join([b"{}"] * 500) + b"]")
        assert len(decode_line(line).event.input) == 500  # type: ignore[union-attr]

    def test_brackets_inside_strings_do_not_count(self) -> None:
        """A string full of brackets next to a parse error is still just not JSON."""
        line = b'{"x":"' + b"[" * 2000 + b'",}'
        with pytest.raises(DecodeError, match=r"^not JSON"):
            load_line(line)
