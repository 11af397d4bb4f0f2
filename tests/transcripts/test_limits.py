"""Limits, encoding and redaction at the point lines are written (items 13-15)."""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
from pathlib import Path

import orjson
import pytest

from mini_harness import (
    InvalidInputError,
    ToolDefinition,
    ToolHandlerError,
    ToolRegistry,
    ToolRuntime,
    TranscriptWriteError,
)
from mini_harness.errors import RedactionError
from mini_harness.events import RunStarted, ToolCalled, ToolFailed, ToolSucceeded, UnknownEvent
from mini_harness.transcripts import (
    DEFAULT_MAX_EVENT_BYTES,
    JsonlTranscript,
    Redactor,
    is_omitted,
    read_transcript,
    verify_transcript,
)

TS = "2026-01-01T00:00:00.000000Z"


def _big_registry(registry: ToolRegistry, size: int) -> ToolRegistry:
    registry.register(
        ToolDefinition("big", "Returns a large text.", {"type": "object"}),
        lambda _: {"text": "x" * size},
    )
    return registry


class TestSizeCap:
    def test_oversize_output_is_recorded_as_a_marker(
        self, tmp_path: Path, registry: ToolRegistry
    ) -> None:
        """An output over the cap is written as a marker with its size and SHA-256; the
        caller still gets the whole output."""
        log = tmp_path / "t.jsonl"
        cap = 64 * 1024
        with JsonlTranscript(log, max_event_bytes=cap) as sink:
            result = ToolRuntime(_big_registry(registry, 200_000), sink).dispatch("big", {})
        assert len(result.output["text"]) == 200_000
        encoded = orjson.dumps(result.output)
        assert all(len(line) <= cap for line in log.read_bytes().splitlines())
        succeeded = read_transcript(log)[-1].event
        assert isinstance(succeeded, ToolSucceeded)
        assert succeeded.output == {
            "$omitted": f"value over the {cap}-byte event size cap",
            "bytes": len(encoded),
            "sha256": hashlib.sha256(encoded).hexdigest(),
        }
        assert is_omitted(succeeded.output)
        assert verify_transcript(log).ok

    def test_oversize_input_and_error_are_cut(self, tmp_path: Path, registry: ToolRegistry) -> None:
        """An oversize input becomes a marker and an oversize error keeps its kind and start."""
        log = tmp_path / "t.jsonl"
        with (
            JsonlTranscript(log, max_event_bytes=4096) as sink,
            pytest.raises(InvalidInputError),
        ):
            ToolRuntime(registry, sink).dispatch("echo", {"text": 1, "pad": "y" * 10_000})
        called, failed = (r.event for r in read_transcript(log)[2:])
        assert isinstance(called, ToolCalled)
        assert is_omitted(called.input)
        assert isinstance(failed, ToolFailed)
        assert failed.error.kind == "invalid_input"
        assert failed.error.message.startswith("Invalid input for echo.text: expected string")
        assert verify_transcript(log).ok

    def test_oversize_handler_error_keeps_kind_and_start(
        self, tmp_path: Path, registry: ToolRegistry
    ) -> None:
        """A huge exception message is cut to its start with a note saying how big it was."""

        def fail(_: object) -> object:
            raise RuntimeError("z" * 100_000)

        registry.register(ToolDefinition("fail", "Fails loudly.", {"type": "object"}), fail)
        log = tmp_path / "t.jsonl"
        with JsonlTranscript(log, max_event_bytes=4096) as sink, pytest.raises(ToolHandlerError):
            ToolRuntime(registry, sink).dispatch("fail", {})
        failed = read_transcript(log)[-1].event
        assert isinstance(failed, ToolFailed)
        assert (failed.error.kind, failed.error.type) == ("handler_error", "RuntimeError")
        assert failed.error.message.endswith("over the 4096-byte event size cap]")
        assert "[... error of " in failed.error.message

    def test_oversize_event_without_payload_is_refused_whole(self, tmp_path: Path) -> None:
        """An event with nothing that may be dropped is refused and nothing is written."""
        log = tmp_path / "t.jsonl"
        with JsonlTranscript(log, max_event_bytes=2048) as sink:
            sink.append(UnknownEvent("Note", TS, {"text": "small"}))
            size = log.stat().st_size
            with pytest.raises(TranscriptWriteError, match="over the 2048-byte event size cap"):
                sink.append(UnknownEvent("Note", TS, {"text": "n" * 5000}))
            assert log.stat().st_size == size
            sink.append(UnknownEvent("Note", TS, {"text": "after"}))
        assert verify_transcript(log).ok

    def test_run_started_is_never_capped(self, tmp_path: Path) -> None:
        """A run's tool definitions are written whole, whatever the cap: replay needs them."""
        log = tmp_path / "t.jsonl"
        with JsonlTranscript(log, max_event_bytes=2048) as sink:
            sink.append(RunStarted(TS, "run", "0", (ToolDefinition("n" * 5000, "", {}),)))
        (run,) = [r.event for r in read_transcript(log) if isinstance(r.event, RunStarted)]
        assert run.tools[0].name == "n" * 5000

    @pytest.mark.thorough
    def test_hundred_megabyte_output_with_the_default_cap(
        self, tmp_path: Path, registry: ToolRegistry
    ) -> None:
        """A 100 MB output under the default cap leaves a small line, not a 100 MB one."""
        log = tmp_path / "t.jsonl"
        with JsonlTranscript(log) as sink:
            ToolRuntime(_big_registry(registry, 100 * 1024 * 1024), sink).dispatch("big", {})
        assert log.stat().st_size < DEFAULT_MAX_EVENT_BYTES
        succeeded = read_transcript(log)[-1].event
        assert isinstance(succeeded, ToolSucceeded)
        assert succeeded.output["bytes"] == 100 * 1024 * 1024 + len('{"text":""}')


@dataclasses.dataclass
class _Point:
    x: int


class TestEncodingHazards:
    @pytest.mark.parametrize(
        "value",
        [b"bytes", "lone \ud800 surrogate", _Point(1), datetime.datetime(2026, 1, 1), {1, 2}],
        ids=["bytes", "lone surrogate", "dataclass", "datetime", "set"],
    )
    def test_non_json_values_are_refused_and_nothing_is_written(
        self, tmp_path: Path, value: object
    ) -> None:
        """The writer itself refuses values that are not JSON: no line, and the next append
        continues the chain cleanly."""
        log = tmp_path / "t.jsonl"
        with JsonlTranscript(log) as sink:
            sink.append(UnknownEvent("Note", TS, {"text": "before"}))
            size = log.stat().st_size
            with pytest.raises(TranscriptWriteError, match="cannot record ToolSucceeded"):
                sink.append(ToolSucceeded(TS, "run", "c", "echo", {"value": value}, 0.0))
            assert log.stat().st_size == size
            sink.append(UnknownEvent("Note", TS, {"text": "after"}))
        assert verify_transcript(log).ok

    def test_nan_and_infinity_are_written_as_null(self, tmp_path: Path) -> None:
        """Non-finite floats appended directly are normalised to null: the line stays valid."""
        log = tmp_path / "t.jsonl"
        with JsonlTranscript(log) as sink:
            sink.append(UnknownEvent("Note", TS, {"values": [float("nan"), float("inf")]}))
        assert b'"values":[null,null]' in log.read_bytes()
        assert verify_transcript(log).ok

    def test_dispatch_records_nan_output_as_invalid_output(
        self, tmp_path: Path, registry: ToolRegistry
    ) -> None:
        """Through dispatch, NaN never even reaches the writer: the call is invalid_output."""
        log = tmp_path / "t.jsonl"
        with JsonlTranscript(log) as sink, pytest.raises(Exception, match="not JSON"):
            ToolRuntime(registry, sink).dispatch("nan", {})
        failed = read_transcript(log)[-1].event
        assert isinstance(failed, ToolFailed)
        assert failed.error.kind == "invalid_output"
        assert all(orjson.loads(line) for line in log.read_bytes().splitlines())


SECRET = 'hunter2-"quoted"-\\back\\slash-ünï'


class TestRedaction:
    def test_secret_never_reaches_the_file(self, tmp_path: Path, registry: ToolRegistry) -> None:
        """A configured secret, in inputs, outputs and error messages, is nowhere in the raw
        bytes of the transcript, in any encoding; [REDACTED] stands in its place."""

        def leak(data: object) -> object:
            raise RuntimeError(f"auth failed for {SECRET}")

        registry.register(ToolDefinition("leak", "Leaks in errors.", {"type": "object"}), leak)
        log = tmp_path / "t.jsonl"
        redactor = Redactor.from_config(
            env_names=["API_TOKEN"],
            patterns=[r"sk-[A-Za-z0-9]{8,}"],
            environ={"API_TOKEN": SECRET},
        )
        with JsonlTranscript(log, redactor=redactor) as sink:
            runtime = ToolRuntime(registry, sink)
            runtime.dispatch("echo", {"text": f"token={SECRET} key=sk-abcdef123456"})
            with pytest.raises(ToolHandlerError):
                runtime.dispatch("leak", {SECRET: SECRET})
            with pytest.raises(InvalidInputError):
                runtime.dispatch("echo", {"text": {"nested": [SECRET]}})
        raw = log.read_bytes()
        for form in (SECRET.encode(), orjson.dumps(SECRET)[1:-1], b"hunter2", b"sk-abcdef"):
            assert form not in raw
        assert raw.count(b"[REDACTED]") == 8
        assert b'"text":"token=[REDACTED] key=[REDACTED]"' in raw
        assert b'"message":"Tool leak failed: RuntimeError: auth failed for [REDACTED]"' in raw
        assert verify_transcript(log).ok

    def test_a_value_the_redactor_cannot_walk_is_refused_like_any_non_json(
        self, tmp_path: Path
    ) -> None:
        """With a redactor, a value that is not JSON (a non-string key) is refused with the
        writer's own error, and nothing is written."""
        log = tmp_path / "t.jsonl"
        redactor = Redactor.from_config(env_names=["API_TOKEN"], environ={"API_TOKEN": SECRET})
        with JsonlTranscript(log, redactor=redactor) as sink:
            sink.append(UnknownEvent("Note", TS, {"text": "before"}))
            size = log.stat().st_size
            with pytest.raises(TranscriptWriteError, match="cannot record ToolCalled"):
                sink.append(ToolCalled(TS, "run", "c", "echo", {1: SECRET}))
            assert log.stat().st_size == size
        assert verify_transcript(log).ok

    def test_bad_patterns_are_refused(self) -> None:
        """A pattern that is not a regex, or that matches nothing at all, is refused."""
        with pytest.raises(RedactionError, match="not a valid regex"):
            Redactor.from_config(patterns=["("])
        with pytest.raises(RedactionError, match="matches the empty string"):
            Redactor.from_config(patterns=["x*"])

    def test_redacted_keys_that_collide_keep_both_values(
        self, tmp_path: Path, registry: ToolRegistry
    ) -> None:
        """Two keys that redact to the same text are both kept, numbered, with their values."""
        log = tmp_path / "t.jsonl"
        redactor = Redactor.from_config(secrets=["alpha", "beta"], patterns=["tok-[0-9]+"])
        tool_input = {
            "text": "x",
            "extra": {"alpha": 1, "beta": 2, "[REDACTED]": 3, "k tok-1": 4, "k tok-2": 5},
        }
        with JsonlTranscript(log, redactor=redactor) as sink:
            ToolRuntime(registry, sink).dispatch("echo", tool_input)
        called = read_transcript(log)[2].event
        assert isinstance(called, ToolCalled)
        assert called.input == {
            "text": "x",
            "extra": {
                "[REDACTED-2]": 1,
                "[REDACTED-3]": 2,
                "[REDACTED]": 3,
                "k [REDACTED]": 4,
                "k [REDACTED-2]": 5,
            },
        }

    def test_unset_or_empty_variable_is_refused(self) -> None:
        """A variable named for redaction that is unset (a typo?) or empty is an error, not a
        redactor that silently hides nothing."""
        with pytest.raises(RedactionError) as unset:
            Redactor.from_config(env_names=["API_TOKNE"], environ={"API_TOKEN": "x"})
        assert unset.value.message == "--redact-env API_TOKNE: the variable is not set"
        with pytest.raises(RedactionError) as empty:
            Redactor.from_config(env_names=["EMPTY"], environ={"EMPTY": ""})
        assert empty.value.message == "--redact-env EMPTY: the variable is set but empty"

    def test_nothing_configured_is_inactive(self) -> None:
        """A redactor given nothing to hide is one the writer skips entirely."""
        redactor = Redactor.from_config(env_names=[], secrets=[""])
        assert not redactor.active
        assert redactor.redact_text("anything") == "anything"
