"""Golden transcripts: every way a dispatch can end, from the API and from the CLI."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mini_harness.events import ToolCalled, ToolFailed, ToolSucceeded
from mini_harness.runtime import ToolDefinition, ToolRegistry
from mini_harness.testing import Golden
from mini_harness.transcripts import CallProtocol, TranscriptReader
from mini_harness.transcripts.reader import TranscriptRecord

HELLO = '{"text":"hello"}'


@pytest.fixture(name="tools")
def _tools(registry: ToolRegistry) -> ToolRegistry:
    """The shared test registry plus a tool that always runs past its timeout."""

    async def slow(_: object) -> object:
        await asyncio.sleep(5)
        return {}

    registry.register(
        ToolDefinition("slow", "Sleeps past its timeout.", {"type": "object"}), slow, timeout=0.02
    )
    return registry


def records(path: Path) -> list[TranscriptRecord]:
    """Read a golden back: it must be a transcript with an intact chain and call protocol."""
    reader = TranscriptReader(path)
    read = list(reader)
    assert reader.problems == []
    assert reader.torn_tail is None
    protocol = CallProtocol()
    for record in read:
        event = record.event
        if isinstance(event, ToolCalled):
            protocol.called(record.line, record.seq, event.run_id, event.call_id, event.name)
        elif isinstance(event, ToolSucceeded | ToolFailed):
            kind = type(event).__name__
            protocol.finished(
                record.line, record.seq, kind, event.call_id, event.run_id, event.name
            )
    assert protocol.problems == []
    assert protocol.in_doubt() == []
    return read


class TestApiTranscripts:
    @pytest.mark.parametrize(
        ("tool", "tool_input", "kind"),
        [
            pytest.param("echo", {"text": "hello"}, None, id="success"),
            pytest.param("add", {"a": 1, "b": "2"}, "invalid_input", id="invalid-input"),
            pytest.param("add", {"a": 1, "b": 2, "c": 3}, "invalid_input", id="extra-property"),
            pytest.param("nope", {}, "unknown_tool", id="unknown-tool"),
            pytest.param("boom", {}, "handler_error", id="handler-failure"),
            pytest.param("slow", {}, "timeout", id="timeout"),
            pytest.param("nan", {}, "invalid_output", id="invalid-output"),
        ],
    )
    def test_one_call(
        self, golden: Golden, tools: ToolRegistry, tool: str, tool_input: object, kind: str | None
    ) -> None:
        """One dispatch is recorded as RunStarted, ToolCalled and its terminal event."""
        outcome = golden.runtime(tools).attempt(tool, tool_input)
        assert getattr(outcome, "kind", None) == kind
        golden.check_transcript()
        assert len(records(golden.path("jsonl"))) == 4

    def test_multi_run(self, golden: Golden, tools: ToolRegistry) -> None:
        """Two runs append to one file; ids are numbered across both runs."""
        first = golden.runtime(tools)
        first.attempt("echo", {"text": "one"})
        first.attempt("add", {"a": 1, "b": 2})
        second = golden.runtime(tools)
        second.attempt("boom", {})
        second.attempt("echo", {"text": "two"})
        golden.check_transcript()
        read = records(golden.path("jsonl"))
        assert [type(r.event).__name__ for r in read].count("RunStarted") == 2

    def test_async_dispatch(self, golden: Golden, tools: ToolRegistry) -> None:
        """dispatch_async records the same events as dispatch."""
        runtime = golden.runtime(tools)

        async def main() -> None:
            await runtime.attempt_async("echo", {"text": "async"})
            await runtime.attempt_async("slow", {})

        asyncio.run(main())
        golden.check_transcript()
        records(golden.path("jsonl"))


class TestCliTranscripts:
    @pytest.mark.parametrize(
        "args",
        [
            pytest.param(["--tool", "echo", "--tool-input", HELLO], id="success"),
            pytest.param(["--tool", "echo", "--tool-input", '{"text":1}'], id="invalid-input"),
            pytest.param(["--tool", "nope", "--tool-input", "{}"], id="unknown-tool"),
        ],
    )
    def test_cli_log(self, golden: Golden, args: list[str]) -> None:
        """The CLI's --log transcript of each outcome, checked before its printed output."""
        log = golden.tmp_path / "t.jsonl"
        outcome = golden.cli(*args, "--log", str(log))
        golden.check_transcript(log)
        golden.check_text(outcome.render())
        records(golden.path("jsonl"))

    def test_runs_append(self, golden: Golden) -> None:
        """Three CLI runs with one --log make one file of three runs."""
        log = golden.tmp_path / "t.jsonl"
        golden.cli("--tool", "echo", "--tool-input", HELLO, "--log", str(log))
        golden.cli("--tool", "echo", "--tool-input", "[1]", "--transcript", str(log))
        golden.cli("--tool", "nope", "--log", str(log))
        golden.check_transcript(log)
        assert len(records(golden.path("jsonl"))) == 10
