"""ToolRuntime hands every event to its sink through emit(event), whatever the sink is."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from mini_harness import ToolRegistry, ToolRuntime
from mini_harness.errors import TranscriptWriteError
from mini_harness.events import Event, NullSink, ToolCalled
from mini_harness.transcripts import JsonlTranscript, verify_transcript


class SeeingEmit(JsonlTranscript):
    """A subclass that overrides emit, to see every event."""

    seen: list[str]

    def emit(self, event: Event) -> None:
        self.seen.append(type(event).__name__)
        super().emit(event)


class Forwarding:
    """A proxy with its own emit that forwards every other attribute."""

    def __init__(self, inner: JsonlTranscript) -> None:
        self.inner = inner
        self.seen: list[str] = []

    def emit(self, event: Event) -> None:
        self.seen.append(type(event).__name__)
        self.inner.emit(event)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


class TestEmit:
    def test_sinks_that_override_emit_see_every_event(
        self, tmp_path: Path, registry: ToolRegistry
    ) -> None:
        """A subclass of the writer and a forwarding proxy each see the run and both events."""
        subclassed = SeeingEmit(tmp_path / "a.jsonl")
        subclassed.seen = []
        proxy = Forwarding(JsonlTranscript(tmp_path / "b.jsonl"))
        for sink in (subclassed, proxy):
            ToolRuntime(registry, sink).dispatch("echo", {"text": "a"})
            assert sink.seen == ["RunStarted", "ToolCalled", "ToolSucceeded"]
        subclassed.close()
        proxy.inner.close()

    def test_replacing_the_sink_sends_later_events_to_the_new_one(
        self, tmp_path: Path, registry: ToolRegistry
    ) -> None:
        """Events go to the sink the runtime holds when they happen."""
        runtime = ToolRuntime(registry, NullSink())
        runtime.dispatch("echo", {"text": "dropped"})
        with JsonlTranscript(tmp_path / "t.jsonl") as writer:
            runtime.sink = writer
            runtime.dispatch("echo", {"text": "kept"})
        text = (tmp_path / "t.jsonl").read_text()
        assert '"kept"' in text
        assert '"dropped"' not in text

    def test_a_field_orjson_refuses_is_a_write_error(
        self, tmp_path: Path, registry: ToolRegistry
    ) -> None:
        """A run id with a lone surrogate cannot be written: the dispatch says so, unrun."""
        with JsonlTranscript(tmp_path / "t.jsonl") as writer:
            runtime = ToolRuntime(registry, writer, run_id="\udcff")
            with pytest.raises(TranscriptWriteError, match="not JSON"):
                runtime.dispatch("echo", {"text": "a"})

    def test_objects_in_fields_are_refused_not_converted(self, tmp_path: Path) -> None:
        """A call id that is an object is refused, not written as orjson would serialise it."""

        @dataclasses.dataclass
        class CallId:
            value: str

        with JsonlTranscript(tmp_path / "t.jsonl") as writer:
            writer.append(ToolCalled("2026-11-30T08:00:00.000000Z", "r", "c-1", "echo", {}))
            with pytest.raises(TranscriptWriteError, match="not JSON"):
                writer.emit(
                    ToolCalled("2026-11-30T08:00:00.000000Z", "r", CallId("c-2"), "echo", {})  # type: ignore[arg-type]
                )
        assert verify_transcript(tmp_path / "t.jsonl").integrity == ()
