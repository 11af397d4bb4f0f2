"""Format versions: newer refused, unknown types kept, older upcast on read (item 12)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from mini_harness import TranscriptFormatError
from mini_harness.events import ToolCalled, ToolFailed, ToolSucceeded, TranscriptStarted
from mini_harness.transcripts import (
    TranscriptReader,
    Upcasters,
    line_hash,
    read_transcript,
    verify_transcript,
)

FIXTURES = Path(__file__).parent / "fixtures"
TS = "2020-01-01T00:00:00.000000Z"


def _v0_lines() -> list[dict[str, Any]]:
    """A synthetic version 0: `tool`/`args`/`result` and `duration` in seconds."""
    return [
        {"type": "TranscriptStarted", "format": "mini-harness.transcript", "version": 0,
         "transcriptId": "t0"},
        {"type": "RunStarted", "runId": "r0", "harness": "0.0.1", "tools": []},
        {"type": "ToolCalled", "runId": "r0", "callId": "c1", "tool": "echo",
         "args": {"text": "old"}},
        {"type": "ToolSucceeded", "runId": "r0", "callId": "c1", "tool": "echo",
         "result": {"text": "old"}, "duration": 0.0025},
    ]  # fmt: skip


def _write_chain(path: Path, payloads: list[dict[str, Any]]) -> None:
    prev: str | None = None
    out = []
    for seq, payload in enumerate(payloads):
        line = {"type": payload["type"], "seq": seq, "ts": TS}
        if prev is not None:
            line["prev"] = prev
        line.update({k: v for k, v in payload.items() if k != "type"})
        encoded = orjson.dumps(line)
        prev = line_hash(encoded)
        out.append(encoded + b"\n")
    path.write_bytes(b"".join(out))


def _v0_to_v1(data: dict[str, Any]) -> dict[str, Any]:
    renames = {"tool": "name", "args": "input", "result": "output"}
    out = {renames.get(key, key): value for key, value in data.items()}
    if "duration" in out:
        out["durationMs"] = out.pop("duration") * 1000
    return out


class TestVersions:
    def test_kept_v1_fixture_reads_forever(self) -> None:
        """A transcript written by this version and kept in the tree still reads and verifies."""
        path = FIXTURES / "v1-echo.jsonl"
        events = [r.event for r in read_transcript(path)]
        assert [type(e).__name__ for e in events] == [
            "TranscriptStarted",
            "RunStarted",
            "ToolCalled",
            "ToolSucceeded",
            "ToolCalled",
            "ToolFailed",
        ]
        failed = events[-1]
        assert isinstance(failed, ToolFailed)
        assert failed.error.message == "Invalid input for echo.text: expected string"
        report = verify_transcript(path)
        assert report.ok
        assert report.head_hash == line_hash(path.read_bytes().splitlines()[-1])

    def test_older_version_is_upcast_on_read(self, tmp_path: Path) -> None:
        """Lines of an older version are upcast before typing; the chain over the stored
        bytes still verifies."""
        path = tmp_path / "v0.jsonl"
        _write_chain(path, _v0_lines())
        upcasters = Upcasters(current=1)
        upcasters.register(0, _v0_to_v1)
        reader = TranscriptReader(path, upcasters=upcasters)
        events = [r.event for r in reader]
        assert reader.problems == []
        assert isinstance(events[0], TranscriptStarted)
        assert events[0].version == 0
        assert events[2] == ToolCalled(TS, "r0", "c1", "echo", {"text": "old"})
        assert events[3] == ToolSucceeded(TS, "r0", "c1", "echo", {"text": "old"}, 2.5)
        assert verify_transcript(path, upcasters=upcasters).ok

    def test_older_version_without_upcaster_is_refused(self, tmp_path: Path) -> None:
        """An older version with no registered upcaster is refused clearly, not misread."""
        path = tmp_path / "v0.jsonl"
        _write_chain(path, _v0_lines())
        with pytest.raises(TranscriptFormatError, match="version 0, which this mini-harness"):
            read_transcript(path)

    def test_failing_upcaster_is_damage_of_that_line(self, tmp_path: Path) -> None:
        """An upcaster that cannot handle a line makes that line bad, not the reader crash."""
        path = tmp_path / "v0.jsonl"
        _write_chain(path, _v0_lines())
        upcasters = Upcasters(current=1)

        def fragile(data: dict[str, Any]) -> dict[str, Any]:
            if data["type"] == "ToolCalled":
                raise KeyError("args")
            return _v0_to_v1(data)

        upcasters.register(0, fragile)
        reader = TranscriptReader(path, upcasters=upcasters, salvage=True)
        list(reader)
        assert [d.line for d in reader.damaged] == [3]
        assert "cannot upcast from format version 0" in reader.damaged[0].reason

    def test_upcaster_must_come_from_an_older_version(self) -> None:
        """Registering an upcaster from the current version is a mistake and is refused."""
        with pytest.raises(ValueError, match="not older"):
            Upcasters(current=1).register(1, dict)
