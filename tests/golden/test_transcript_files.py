"""Transcript files kept in the repository: the v1 fixture, read forever, and every golden."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from mini_harness.events import (
    FORMAT_VERSION,
    RunStarted,
    ToolCalled,
    ToolFailed,
    ToolSucceeded,
    TranscriptStarted,
)
from mini_harness.testing import Golden
from mini_harness.transcripts import TranscriptReader

HERE = Path(__file__).parent
V1_FIXTURE = HERE / "fixtures" / "v1-tool-calls.jsonl"
# Written once by mini-harness 0.1.0 and never regenerated: a reader that cannot read it
# breaks every transcript users already have.
V1_SHA256 = "0efb6f3145a56ead318da700f30bfb74d6b1d26ddbc443f603e081f5dad6298f"
GOLDEN_TRANSCRIPTS = sorted((HERE / "goldens").rglob("*.jsonl"))


class TestV1Fixture:
    def test_fixture_is_unchanged(self) -> None:
        """The v1 fixture is byte-for-byte the file that was checked in."""
        assert hashlib.sha256(V1_FIXTURE.read_bytes()).hexdigest() == V1_SHA256

    def test_reads_every_event(self) -> None:
        """A v1 transcript reads with its header, both runs and every call outcome."""
        reader = TranscriptReader(V1_FIXTURE)
        records = list(reader)
        assert reader.problems == []
        assert reader.torn_tail is None
        assert reader.header is not None
        assert reader.header.version == 1
        assert reader.header.transcript_id == "c650565049513a810a6985c86730ddbf"
        assert [r.seq for r in records] == list(range(19))
        outcomes: list[tuple[str, str, str]] = []
        for record in records:
            event = record.event
            if isinstance(event, ToolSucceeded):
                outcomes.append((event.call_id, event.name, "ok"))
            elif isinstance(event, ToolFailed):
                outcomes.append((event.call_id, event.name, event.error.kind))
        assert outcomes == [
            ("2413da464523-1", "echo", "ok"),
            ("2413da464523-2", "echo", "invalid_input"),
            ("2413da464523-3", "nope", "unknown_tool"),
            ("2413da464523-4", "boom", "handler_error"),
            ("2413da464523-5", "slow", "timeout"),
            ("2413da464523-6", "nan", "invalid_output"),
            ("2413da464523-7", "add", "ok"),
            ("6a2a9e47c940-1", "echo", "ok"),
        ]

    def test_event_fields(self) -> None:
        """Fields of a v1 file keep their values and types: runs, inputs, errors, durations."""
        records = list(TranscriptReader(V1_FIXTURE))
        runs = [r.event for r in records if isinstance(r.event, RunStarted)]
        assert [(run.run_id, run.harness) for run in runs] == [
            ("2413da4645230dc6b9bb5b740982b5e3", "0.1.0"),
            ("6a2a9e47c940866f78d705e414ec161e", "0.1.0"),
        ]
        assert [tool.name for tool in runs[0].tools] == ["echo", "boom", "slow", "nan", "add"]
        called = records[4].event
        assert isinstance(called, ToolCalled)
        assert called.input == {"text": 123}
        failed = records[5].event
        assert isinstance(failed, ToolFailed)
        assert failed.error.message == "Invalid input for echo.text: expected string"
        assert failed.error.path == "echo.text"
        assert failed.error.violations is not None
        succeeded = records[3].event
        assert isinstance(succeeded, ToolSucceeded)
        assert succeeded.output == {"text": "hello"}
        assert succeeded.duration_ms == 0.046
        assert succeeded.ts == "2026-11-30T05:32:27.328014Z"
        assert records[-1].hash == "48165d1c36c38dc0b0eeee6876ed0668"

    def test_normalized(self, golden: Golden) -> None:
        """The fixture's normalized form (the base for its replay goldens) stays stable."""
        golden.check_transcript(V1_FIXTURE)


class TestGoldenTranscripts:
    def test_goldens_exist(self) -> None:
        """The suite holds golden transcripts (a rename of the folder would skip the checks)."""
        assert len(GOLDEN_TRANSCRIPTS) >= 10

    @pytest.mark.parametrize("path", GOLDEN_TRANSCRIPTS, ids=[p.name for p in GOLDEN_TRANSCRIPTS])
    def test_golden_is_a_valid_transcript(self, path: Path) -> None:
        """Every golden transcript reads as a current-version transcript (the v1 fixture's
        normalized form: version 1) with an intact prev chain."""
        reader = TranscriptReader(path)
        records = list(reader)
        assert isinstance(records[0].event, TranscriptStarted)
        expected = 1 if path.name.startswith("TestV1Fixture") else FORMAT_VERSION
        assert records[0].event.version == expected
        assert reader.problems == []
        assert reader.torn_tail is None
