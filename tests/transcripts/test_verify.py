"""Verify and repair: tampering, the call protocol, in-doubt calls (items 9-12)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import orjson
import pytest
from msgspec.structs import replace

from mini_harness import ToolRegistry, ToolRuntime, TranscriptFormatError
from mini_harness.events import (
    FORMAT_VERSION,
    Event,
    RunStarted,
    ToolCalled,
    ToolError,
    ToolFailed,
    ToolSucceeded,
)
from mini_harness.transcripts import (
    JsonlTranscript,
    line_hash,
    read_transcript,
    repair_transcript,
    verify_transcript,
)

TS = "2026-01-01T00:00:00.000000Z"


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


class TestVerify:
    def test_clean_transcript(self, corpus: list[Path]) -> None:
        """A transcript as written verifies clean; its head hash is the last line's hash."""
        report = verify_transcript(corpus[2])
        assert report.ok
        assert report.problems() == []
        assert (report.lines, report.last_seq, report.runs, report.calls) == (7, 6, 2, 2)
        assert report.head_hash == line_hash(_lines(corpus[2])[-1][:-1])

    def test_unknown_event_types_are_noticed_not_problems(self, corpus: list[Path]) -> None:
        """An unknown event type is kept and reported as a notice; the file stays clean."""
        report = verify_transcript(corpus[3])
        assert report.ok
        assert report.notices() == [
            "1 event of unknown type ModelReplied kept (written by a newer mini-harness?)"
        ]

    def test_newer_major_version_is_unreadable(self, corpus: list[Path]) -> None:
        """A newer format version cannot be verified: it is refused, not half-checked."""
        log = corpus[0]
        newer = FORMAT_VERSION + 1
        current, later = b'"version":%d' % FORMAT_VERSION, b'"version":%d' % newer
        log.write_bytes(log.read_bytes().replace(current, later, 1))
        with pytest.raises(TranscriptFormatError, match=f"format version {newer}"):
            verify_transcript(log)


def _edit_value(lines: list[bytes], other: list[bytes]) -> list[bytes]:
    lines[3] = lines[3].replace(b'"text":"a"', b'"text":"A"')
    return lines


def _delete_line(lines: list[bytes], other: list[bytes]) -> list[bytes]:
    del lines[4]
    return lines


def _swap_lines(lines: list[bytes], other: list[bytes]) -> list[bytes]:
    lines[4], lines[5] = lines[5], lines[4]
    return lines


def _splice_line(lines: list[bytes], other: list[bytes]) -> list[bytes]:
    lines[4] = other[4]  # same seq, from another transcript
    return lines


class TestTampering:
    @pytest.mark.parametrize(
        ("tamper", "expected"),
        [
            (
                _edit_value,
                ["line 5 (seq 4, byte {4}): prev does not match the hash of the line before"],
            ),
            (
                _delete_line,
                [
                    "line 5 (seq 5, byte {4}): seq 5, expected 4",
                    "line 5 (seq 5, byte {4}): prev does not match the hash of the line before",
                ],
            ),
            (
                _swap_lines,
                [
                    "line 5 (seq 5, byte {4}): seq 5, expected 4",
                    "line 5 (seq 5, byte {4}): prev does not match the hash of the line before",
                    "line 6 (seq 4, byte {5}): seq 4, expected 6",
                    "line 6 (seq 4, byte {5}): prev does not match the hash of the line before",
                    "line 7 (seq 6, byte {6}): seq 6, expected 5",
                    "line 7 (seq 6, byte {6}): prev does not match the hash of the line before",
                ],
            ),
            (
                _splice_line,
                [
                    "line 5 (seq 4, byte {4}): prev does not match the hash of the line before",
                    "line 6 (seq 5, byte {5}): prev does not match the hash of the line before",
                ],
            ),
        ],
        ids=["edited value", "deleted line", "swapped lines", "spliced line"],
    )
    def test_tampering_is_caught(
        self, corpus: list[Path], tamper: object, expected: list[str]
    ) -> None:
        """Each kind of tampering shows as chain problems naming the line, seq and byte."""
        log = corpus[0]
        lines = tamper(_lines(log), _lines(corpus[1]))  # type: ignore[operator]
        log.write_bytes(b"".join(lines))
        starts = [sum(len(line) for line in lines[:i]) for i in range(len(lines))]
        report = verify_transcript(log)
        integrity = [p for p in report.problems() if "expected" in p or "prev" in p]
        assert integrity == [e.format(*starts) for e in expected]
        assert not report.ok


def _log_with(tmp_path: Path, events: Sequence[Event]) -> Path:
    log = tmp_path / "protocol.jsonl"
    with JsonlTranscript(log, fsync="never") as sink:
        for event in events:
            sink.append(event)
    return log


def _called(call_id: str) -> ToolCalled:
    return ToolCalled(TS, "run", call_id, "echo", {"text": call_id})


def _succeeded(call_id: str) -> ToolSucceeded:
    return ToolSucceeded(TS, "run", call_id, "echo", {"text": call_id}, 0.1)


def _failed(call_id: str) -> ToolFailed:
    return ToolFailed(TS, "run", call_id, "echo", ToolError("handler_error", "no"), 0.1)


class TestProtocol:
    @pytest.mark.parametrize(
        ("events", "problem"),
        [
            (
                [_succeeded("x")],
                "line 2 (seq 1): ToolSucceeded for call x, which has no ToolCalled",
            ),
            (
                [_called("x"), _succeeded("x"), _failed("x")],
                "line 4 (seq 3): ToolFailed for call x, which already ended",
            ),
            (
                [_called("x"), _succeeded("x"), _called("x")],
                "line 4 (seq 3): callId x is used again",
            ),
            (
                [_called("x"), replace(_succeeded("x"), name="read_file")],
                "line 3 (seq 2): ToolSucceeded for call x names tool read_file, but its "
                "ToolCalled names echo",
            ),
            (
                [_called("x"), replace(_failed("x"), run_id="other")],
                "line 3 (seq 2): ToolFailed for call x is in run other, but its ToolCalled "
                "is in run run",
            ),
        ],
        ids=[
            "terminal without ToolCalled",
            "double terminal",
            "reused callId",
            "terminal names another tool",
            "terminal in another run",
        ],
    )
    def test_protocol_errors_name_line_and_seq(
        self, tmp_path: Path, events: list[ToolCalled], problem: str
    ) -> None:
        """Calls that break the protocol are reported with their line and seq."""
        report = verify_transcript(_log_with(tmp_path, events))
        assert report.problems() == [problem]

    def test_in_doubt_call_is_reported_and_closed_by_repair(self, tmp_path: Path) -> None:
        """A ToolCalled without an end is in doubt; repair with close_in_doubt records it as
        interrupted, and the file then verifies clean."""
        log = _log_with(tmp_path, [_called("a"), _called("b"), _succeeded("a")])
        report = verify_transcript(log)
        assert report.problems() == [
            "line 3 (seq 2): call b (echo) is in doubt: ToolCalled without a terminal event"
        ]
        untouched = repair_transcript(log)
        assert untouched.closed == ()
        assert [c.call_id for c in untouched.after.in_doubt] == ["b"]
        result = repair_transcript(log, close_in_doubt=True)
        assert [c.call_id for c in result.closed] == ["b"]
        assert result.after.ok
        last = read_transcript(log)[-1].event
        assert isinstance(last, ToolFailed)
        assert (last.call_id, last.error.kind) == ("b", "interrupted")

    def test_repair_refuses_mid_file_damage_and_changes_nothing(self, corpus: list[Path]) -> None:
        """Repair never rewrites the middle of a transcript: damage there is left as it is."""
        log = corpus[0]
        lines = _lines(log)
        lines[2] = b"garbage\n"
        log.write_bytes(b"".join(lines) + b'{"torn')
        before = log.read_bytes()
        result = repair_transcript(log, close_in_doubt=True)
        assert result.refused is not None
        assert result.refused.startswith("line 3 (byte ")
        assert log.read_bytes() == before
        assert sorted(p.name for p in log.parent.iterdir()) == sorted(
            p.name for p in log.parent.iterdir() if ".torn-" not in p.name
        )


class TestSpliceFromOtherTranscript:
    def test_whole_transcript_appended_to_another_is_caught(self, corpus: list[Path]) -> None:
        """Concatenating two transcripts shows a second TranscriptStarted and a broken chain."""
        log = corpus[0]
        first = len(_lines(log)) + 1
        log.write_bytes(log.read_bytes() + corpus[1].read_bytes())
        report = verify_transcript(log)
        assert any(p.startswith(f"line {first} (seq 0") for p in report.problems())
        assert any("TranscriptStarted after line 1" in p for p in report.problems())
        assert orjson.loads(_lines(log)[first - 1])["type"] == "TranscriptStarted"


class TestClocks:
    def test_wall_clock_going_backwards_is_not_a_problem(
        self, tmp_path: Path, registry: ToolRegistry
    ) -> None:
        """Order is seq, never ts: a wall clock that jumps back still gives a clean file whose
        durations come from the monotonic clock."""
        stamps = iter(f"2026-01-01T00:00:{59 - n:02d}.000000Z" for n in range(60))
        ticks = iter(range(0, 10**9, 2_000_000))
        log = tmp_path / "t.jsonl"
        with JsonlTranscript(log) as sink:
            runtime = ToolRuntime(
                registry, sink, timestamp=lambda: next(stamps), monotonic_ns=lambda: next(ticks)
            )
            for text in ("a", "b"):
                runtime.dispatch("echo", {"text": text})
        records = read_transcript(log)
        assert [r.seq for r in records] == list(range(6))
        assert [r.event.ts for r in records[1:]] == sorted(
            (r.event.ts for r in records[1:]), reverse=True
        )
        done = [r.event for r in records if isinstance(r.event, ToolSucceeded)]
        assert [e.duration_ms for e in done] == [2.0, 2.0]
        assert verify_transcript(log).ok


class TestOneFold:
    def test_verify_and_the_history_fold_find_the_same(self, tmp_path: Path) -> None:
        """`transcript verify` and replay read a transcript with the one log fold: the same
        calls, failures, protocol problems and calls in doubt, whatever breaks the protocol."""
        from mini_harness.replay import TranscriptFold

        events: list[Event] = [
            RunStarted(TS, "run", "0.1.0", ()),
            _called("a"),
            _succeeded("a"),
            _called("b"),
            _failed("b"),
            _called("a"),  # reused
            _succeeded("z"),  # no ToolCalled
            _called("c"),
            replace(_failed("c"), name="read_file"),
            _called("d"),  # in doubt
        ]
        log = _log_with(tmp_path, events)
        report = verify_transcript(log)
        history = TranscriptFold(log).read()
        assert (report.calls, report.failed, report.runs) == (5, 2, 1)
        totals = history.totals
        assert (totals.calls, totals.succeeded, totals.failed, totals.in_doubt) == (4, 1, 2, 1)
        assert [p.describe() for p in report.protocol] == [
            f"line {p.line} (seq {p.line - 1}): {p.message}"
            for p in history.problems
            if p.kind == "protocol"
        ]
        assert [c.call_id for c in report.in_doubt] == ["d"]
