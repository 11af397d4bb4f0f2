"""One contract, every sink: the in-memory sink and the JSONL transcript behave the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_harness import (
    InvalidInputError,
    MemorySink,
    ToolDefinition,
    ToolHandlerError,
    ToolRegistry,
    ToolRuntime,
    UnknownToolError,
)
from mini_harness.events import (
    Event,
    EventSink,
    RunStarted,
    ToolCalled,
    ToolFailed,
    ToolSucceeded,
    TranscriptStarted,
)
from mini_harness.transcripts import JsonlTranscript, TranscriptReader


class SinkContract:
    """Subclass once per sink; `read_back` returns (seq, event) pairs in order."""

    def make_sink(self, tmp_path: Path) -> EventSink:
        raise NotImplementedError

    def read_back(self, sink: EventSink) -> list[tuple[int, Event]]:
        raise NotImplementedError

    @pytest.fixture(name="sink")
    def _sink(self, tmp_path: Path) -> EventSink:
        return self.make_sink(tmp_path)

    def test_events_come_back_equal_and_in_order(
        self, sink: EventSink, registry: ToolRegistry
    ) -> None:
        """What dispatch emitted is what the sink gives back, header first, seq dense."""
        runtime = ToolRuntime(registry, sink)
        runtime.dispatch("echo", {"text": "héllo ✓"})
        with pytest.raises(InvalidInputError):
            runtime.dispatch("echo", {"text": 1})
        records = self.read_back(sink)
        assert [seq for seq, _ in records] == list(range(len(records)))
        kinds = [type(event) for _, event in records]
        assert kinds == [
            TranscriptStarted,
            RunStarted,
            ToolCalled,
            ToolSucceeded,
            ToolCalled,
            ToolFailed,
        ]
        succeeded = records[3][1]
        assert isinstance(succeeded, ToolSucceeded)
        assert succeeded.output == {"text": "héllo ✓"}
        failed = records[5][1]
        assert isinstance(failed, ToolFailed)
        assert failed.error.kind == "invalid_input"
        assert failed.error.path == "echo.text"

    def test_two_runs_share_one_sink(self, sink: EventSink, registry: ToolRegistry) -> None:
        """A second run appends its own RunStarted; seq keeps counting."""
        ToolRuntime(registry, sink).dispatch("echo", {"text": "1"})
        ToolRuntime(registry, sink).dispatch("echo", {"text": "2"})
        records = self.read_back(sink)
        runs = [e for _, e in records if isinstance(e, RunStarted)]
        assert len(runs) == 2
        assert runs[0].run_id != runs[1].run_id
        assert [seq for seq, _ in records] == list(range(7))
        assert sum(isinstance(e, TranscriptStarted) for _, e in records) == 1

    def test_messages_with_lone_surrogates_are_recorded(
        self, sink: EventSink, registry: ToolRegistry
    ) -> None:
        """An OSError about a non-UTF-8 path, or such a tool name, still ends its call with
        exactly one ToolFailed whose message shows the odd byte as an escape."""

        def open_odd(_: object) -> object:
            raise FileNotFoundError(2, "No such file or directory", "/tmp/caf\udce9.txt")

        registry.register(
            ToolDefinition("open_odd", "Fails on an odd path.", {"type": "object"}), open_odd
        )
        runtime = ToolRuntime(registry, sink)
        with pytest.raises(ToolHandlerError) as handler_error:
            runtime.dispatch("open_odd", {})
        with pytest.raises(UnknownToolError) as unknown:
            runtime.dispatch("caf\udce9", {})
        events = [event for _, event in self.read_back(sink)]
        assert [type(e).__name__ for e in events[2:]] == [
            "ToolCalled",
            "ToolFailed",
            "ToolCalled",
            "ToolFailed",
        ]
        failed, called, unknown_failed = events[3], events[4], events[5]
        assert isinstance(failed, ToolFailed)
        expected = (
            "Tool open_odd failed: FileNotFoundError: [Errno 2] No such file or directory: "
            "'/tmp/caf\\udce9.txt'"
        )
        assert failed.error.message == handler_error.value.message == expected
        assert isinstance(called, ToolCalled)
        assert called.name == "caf\\udce9"
        assert isinstance(unknown_failed, ToolFailed)
        names = ", ".join(tool.name for tool in registry)
        told = f"Unknown tool: caf\\udce9. Registered tools: {names}"
        assert unknown_failed.error.message == unknown.value.message == told

    def test_header_is_stamped_with_the_first_event_time(
        self, sink: EventSink, registry: ToolRegistry
    ) -> None:
        """The header never carries a later time than the RunStarted written after it."""
        runtime = ToolRuntime(registry, sink, timestamp=lambda: "2001-02-03T04:05:06.000007Z")
        runtime.dispatch("echo", {"text": "x"})
        header, run = (event for _, event in self.read_back(sink)[:2])
        assert header.ts == run.ts == "2001-02-03T04:05:06.000007Z"


class TestMemorySink(SinkContract):
    def make_sink(self, tmp_path: Path) -> EventSink:
        return MemorySink()

    def read_back(self, sink: EventSink) -> list[tuple[int, Event]]:
        assert isinstance(sink, MemorySink)
        return list(enumerate(sink.events))


class TestJsonlTranscript(SinkContract):
    def make_sink(self, tmp_path: Path) -> EventSink:
        return JsonlTranscript(tmp_path / "t.jsonl")

    def read_back(self, sink: EventSink) -> list[tuple[int, Event]]:
        assert isinstance(sink, JsonlTranscript)
        reader = TranscriptReader(sink.path)
        records = [(r.seq, r.event) for r in reader]
        assert reader.problems == []
        assert reader.torn_tail is None
        return records
