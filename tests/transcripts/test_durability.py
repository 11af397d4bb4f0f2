"""Durability: fsync modes, fatal fsync failures, short writes and ENOSPC (items 3-5)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from mini_harness import ToolDefinition, ToolRegistry, ToolRuntime, TranscriptWriteError
from mini_harness.events import UnknownEvent
from mini_harness.transcripts import JsonlTranscript, verify_transcript
from tests.transcripts.faults import FsyncSpy, inject_write


def _event(text: str) -> UnknownEvent:
    """An event outside the call protocol, so that files of just these verify clean."""
    return UnknownEvent("Note", "2026-01-01T00:00:00.000000Z", {"text": text})


class TestFsyncModes:
    def test_always_syncs_tool_called_before_the_handler_runs(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, registry: ToolRegistry
    ) -> None:
        """In always mode the handler starts only after ToolCalled is on disk, and dispatch
        returns only after the terminal event is."""
        log = tmp_path / "t.jsonl"
        spy = FsyncSpy(monkeypatch, log)
        seen: list[tuple[int, int]] = []

        def handler(data: object) -> object:
            seen.append((log.stat().st_size, spy.log_syncs[-1]))
            return data

        probe = ToolDefinition("probe", "Records sync state.", {"type": "object"})
        registry.register(probe, handler)
        with JsonlTranscript(log, fsync="always") as sink:
            ToolRuntime(registry, sink).dispatch("probe", {})
            assert spy.log_syncs[-1] == log.stat().st_size
        size_at_handler, synced_at_handler = seen[0]
        assert synced_at_handler == size_at_handler
        assert b'"ToolCalled"' in log.read_bytes()[:size_at_handler]

    def test_new_file_syncs_its_directory(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Creating a transcript syncs its directory, so the name survives a power loss."""
        log = tmp_path / "t.jsonl"
        spy = FsyncSpy(monkeypatch, log)
        JsonlTranscript(log, fsync="always").close()
        assert spy.synced == ["dir"]
        spy.synced.clear()
        JsonlTranscript(log, fsync="always").close()
        assert spy.synced == []

    def test_batch_syncs_when_closed(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """In batch mode appends within the interval are not synced one by one; close syncs."""
        log = tmp_path / "t.jsonl"
        spy = FsyncSpy(monkeypatch, log)
        sink = JsonlTranscript(log, fsync="batch", batch_seconds=3600)
        for text in ("a", "b", "c"):
            sink.append(_event(text))
        assert spy.log_syncs == []
        sink.close()
        assert spy.log_syncs == [log.stat().st_size]

    def test_batch_syncs_once_the_interval_passed(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """In batch mode an append after the interval syncs everything written so far."""
        log = tmp_path / "t.jsonl"
        spy = FsyncSpy(monkeypatch, log)
        with JsonlTranscript(log, fsync="batch", batch_seconds=0.0) as sink:
            sink.append(_event("a"))
            assert spy.log_syncs == [log.stat().st_size]

    def test_never_mode_never_syncs(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """In never mode neither the file nor its directory is ever synced."""
        log = tmp_path / "t.jsonl"
        spy = FsyncSpy(monkeypatch, log)
        with JsonlTranscript(log, fsync="never") as sink:
            sink.append(_event("a"))
        assert spy.synced == []

    def test_unknown_mode_is_refused(self, tmp_path: Path) -> None:
        """A mode other than always, batch or never is refused by name."""
        with pytest.raises(ValueError, match="always, batch, never"):
            JsonlTranscript(tmp_path / "t.jsonl", fsync="sometimes")  # type: ignore[arg-type]


class TestFsyncFailure:
    def test_failed_fsync_stops_the_writer_for_good(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A failed fsync raises, and every later append fails without syncing again."""
        log = tmp_path / "t.jsonl"
        JsonlTranscript(log, fsync="never").close()
        spy = FsyncSpy(monkeypatch, log, fail=True)
        sink = JsonlTranscript(log, fsync="always")
        with pytest.raises(TranscriptWriteError, match=r"fsync of transcript .* failed"):
            sink.append(_event("a"))
        calls = len(spy.synced)
        spy.fail = False
        with pytest.raises(TranscriptWriteError, match="writer stopped"):
            sink.append(_event("b"))
        assert len(spy.synced) == calls
        sink.close()

    def test_failed_fsync_at_close_is_raised(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """In batch mode the sync at close is checked: its failure is raised, not ignored."""
        log = tmp_path / "t.jsonl"
        sink = JsonlTranscript(log, fsync="batch", batch_seconds=3600)
        sink.append(_event("a"))
        FsyncSpy(monkeypatch, log, fail=True)
        with pytest.raises(TranscriptWriteError, match="fsync"):
            sink.close()

    def test_failed_fsync_fails_the_dispatch(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, registry: ToolRegistry
    ) -> None:
        """A dispatch whose ToolCalled cannot be synced never runs its handler."""
        log = tmp_path / "t.jsonl"
        JsonlTranscript(log, fsync="never").close()
        ran: list[object] = []
        registry.register(ToolDefinition("mark", "Marks.", {"type": "object"}), ran.append)
        FsyncSpy(monkeypatch, log, fail=True)
        with pytest.raises(TranscriptWriteError):
            ToolRuntime(registry, JsonlTranscript(log, fsync="always")).dispatch("mark", {})
        assert ran == []


class TestShortWrites:
    def test_short_writes_are_completed(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, registry: ToolRegistry
    ) -> None:
        """A write that takes only a few bytes at a time still produces whole, valid lines."""
        log = tmp_path / "t.jsonl"
        JsonlTranscript(log).close()
        real = os.write
        inject_write(monkeypatch, log, lambda fd, data: real(fd, data[:7]))
        with JsonlTranscript(log) as sink:
            ToolRuntime(registry, sink).dispatch("echo", {"text": "short " * 50})
        monkeypatch.undo()
        report = verify_transcript(log)
        assert report.ok
        assert report.lines == 4

    def test_enospc_cuts_back_to_the_record_start(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A write that fails half-way leaves no fragment; the next append is clean."""
        log = tmp_path / "t.jsonl"
        with JsonlTranscript(log) as sink:
            sink.append(_event("before"))
        size = log.stat().st_size
        real = os.write

        def half_then_full(fd: int, data: bytes) -> int:
            if len(data) > 20:
                return real(fd, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")

        sink = JsonlTranscript(log)
        inject_write(monkeypatch, log, half_then_full)
        with pytest.raises(TranscriptWriteError, match="No space left on device"):
            sink.append(_event("lost"))
        assert log.stat().st_size == size
        monkeypatch.undo()
        sink.append(_event("after"))
        sink.close()
        report = verify_transcript(log)
        assert report.ok
        assert report.last_seq == 2
        assert b"lost" not in log.read_bytes()
