"""Damage: torn tails, NUL and garbage tails, byte flips, encodings (items 1, 2, 8, 13)."""

from __future__ import annotations

import contextlib
import errno
import random
from pathlib import Path

import orjson
import pytest

from mini_harness import (
    ToolRegistry,
    ToolRuntime,
    TranscriptError,
    TranscriptFormatError,
    TranscriptWriteError,
)
from mini_harness.events import UnknownEvent
from mini_harness.transcripts import (
    JsonlTranscript,
    TranscriptReader,
    TranscriptRecord,
    repair_transcript,
    verify_transcript,
)
from mini_harness.transcripts import tail as tail_module


def _read(path: Path) -> tuple[TranscriptReader, list[TranscriptRecord]]:
    reader = TranscriptReader(path)
    return reader, list(reader)


class TestTruncation:
    def test_every_cut_of_the_last_record_is_a_torn_tail_and_appending_heals_it(
        self, corpus: list[Path], tmp_path: Path, registry: ToolRegistry
    ) -> None:
        """Cut at any byte of the last line: readers report a torn tail at its start; a
        writer copies exactly the fragment aside and then appends a clean line."""
        data = corpus[0].read_bytes()
        last_start = data.rstrip(b"\n").rfind(b"\n") + 1
        good_lines = data[:last_start].count(b"\n")
        for end in range(last_start + 1, len(data)):
            cut = tmp_path / f"cut-{end}.jsonl"
            cut.write_bytes(data[:end])
            reader = TranscriptReader(cut)
            assert len(list(reader)) == good_lines
            assert reader.torn_tail is not None
            assert (reader.torn_tail.offset, reader.torn_tail.length) == (
                last_start,
                end - last_start,
            )
            assert verify_transcript(cut).problems()[-1].startswith("torn tail")
            with JsonlTranscript(cut, fsync="never") as sink:
                ToolRuntime(registry, sink).dispatch("echo", {"text": "after"})
            assert (tmp_path / f"cut-{end}.jsonl.torn-{last_start}").read_bytes() == data[
                last_start:end
            ]
            report = verify_transcript(cut)
            assert report.torn_tail is None
            assert report.integrity == ()
            assert report.damaged == ()


class TestGarbageTails:
    def test_nul_tail_is_quarantined_by_repair(self, corpus: list[Path]) -> None:
        """4096 NULs after the last line (power loss) are set aside by repair, byte for byte."""
        log = corpus[0]
        size = log.stat().st_size
        with log.open("ab") as handle:
            handle.write(b"\0" * 4096)
        report = verify_transcript(log)
        assert report.torn_tail is not None
        assert report.problems() == [report.torn_tail.describe()]
        result = repair_transcript(log)
        assert [(q.offset, q.length) for q in result.quarantined] == [(size, 4096)]
        assert result.quarantined[0].path.read_bytes() == b"\0" * 4096
        assert result.after.ok
        assert log.stat().st_size == size

    def test_second_quarantine_at_the_same_offset_keeps_the_first_copy(
        self, corpus: list[Path]
    ) -> None:
        """Two torn tails at the same offset get two copies; neither overwrites the other."""
        log = corpus[0]
        for fragment in (b'{"type":"Tool', b"\0\0\0"):
            with log.open("ab") as handle:
                handle.write(fragment)
            repair_transcript(log)
        size = log.stat().st_size
        assert log.with_name(f"{log.name}.torn-{size}").read_bytes() == b'{"type":"Tool'
        assert log.with_name(f"{log.name}.torn-{size}.1").read_bytes() == b"\0\0\0"

    def test_tail_that_cannot_be_copied_is_not_cut(
        self, corpus: list[Path], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """If the copy aside fails, nothing is cut and nothing appended; a later writer
        still quarantines the tail and continues the chain."""
        log = corpus[0]
        with log.open("ab") as handle:
            handle.write(b'{"type":"Tool')
        before = log.read_bytes()

        def no_space(*_: object) -> tuple[Path, int]:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(tail_module, "_create_aside", no_space)
        sink = JsonlTranscript(log)
        for _ in range(2):
            with pytest.raises(TranscriptWriteError, match="nothing was cut"):
                sink.append(UnknownEvent("Note", "2026-01-01T00:00:00.000000Z", {}))
            assert log.read_bytes() == before
        monkeypatch.undo()
        sink.append(UnknownEvent("Note", "2026-01-01T00:00:00.000000Z", {}))
        sink.close()
        assert verify_transcript(log).ok

    def test_salvage_reads_past_mid_file_damage(self, corpus: list[Path]) -> None:
        """With salvage, a damaged middle line is reported once and reading goes on."""
        log = corpus[0]
        lines = log.read_bytes().splitlines(keepends=True)
        offset = sum(len(line) for line in lines[:2])
        lines[2] = b"\0garbage\n"
        log.write_bytes(b"".join(lines))
        reader = TranscriptReader(log, salvage=True)
        records = list(reader)
        assert len(records) == len(lines) - 1
        assert [(d.line, d.offset) for d in reader.damaged] == [(3, offset)]
        assert reader.problems == []
        report = verify_transcript(log)
        assert report.problems()[0].startswith(f"line 3 (byte {offset}) is damaged")


class TestByteFlips:
    @pytest.mark.parametrize("flips", [400, pytest.param(8000, marks=pytest.mark.thorough)])
    def test_reader_never_crashes_and_classifies_every_flip(
        self, corpus: list[Path], tmp_path: Path, flips: int
    ) -> None:
        """Any one changed byte gives a typed error or a reported problem, never a crash
        and never a silently different transcript."""
        rng = random.Random(6)
        target = tmp_path / "flipped.jsonl"
        originals = [(path.read_bytes(), _read(path)[0].head_hash) for path in corpus]
        outcomes: dict[str, int] = {}
        for _ in range(flips):
            data, head = rng.choice(originals)
            position = rng.randrange(len(data))
            damaged = bytearray(data)
            damaged[position] ^= rng.randrange(1, 256)
            target.write_bytes(bytes(damaged))
            try:
                reader, _ = _read(target)
            except TranscriptError as exc:
                outcome = type(exc).__name__
            else:
                if reader.problems:
                    outcome = "chain"
                elif reader.torn_tail is not None:
                    outcome = "torn tail"
                else:
                    assert reader.head_hash != head, f"flip at {position} went unnoticed"
                    outcome = "head hash"
            with contextlib.suppress(TranscriptError):
                verify_transcript(target)
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
        assert {"TranscriptCorruptError", "chain"} <= set(outcomes)


class TestEncodings:
    def test_bom_is_accepted_and_reported(self, corpus: list[Path]) -> None:
        """A UTF-8 BOM before line 1 is skipped (the chain still holds) and reported."""
        log = corpus[0]
        _, expected = _read(log)
        log.write_bytes(b"\xef\xbb\xbf" + log.read_bytes())
        reader, records = _read(log)
        assert reader.bom
        assert [(r.hash, r.event) for r in records] == [(r.hash, r.event) for r in expected]
        assert records[0].offset == 3
        assert reader.problems == []
        report = verify_transcript(log)
        assert report.problems() == [
            "the file starts with a UTF-8 byte order mark (written by another tool)"
        ]

    def test_crlf_is_refused_by_reader_and_writer(self, corpus: list[Path]) -> None:
        """A file converted to CRLF line endings is refused clearly, by readers and writers."""
        log = corpus[0]
        log.write_bytes(log.read_bytes().replace(b"\n", b"\r\n"))
        with pytest.raises(TranscriptFormatError, match="line 1 ends with CRLF"):
            list(TranscriptReader(log))
        with pytest.raises(TranscriptFormatError, match="CRLF line endings"):
            JsonlTranscript(log).recover()

    def test_pretty_printed_json_is_named(self, corpus: list[Path], tmp_path: Path) -> None:
        """A pretty-printed transcript is refused with a message that says so."""
        pretty = tmp_path / "pretty.jsonl"
        first = orjson.loads(corpus[0].read_bytes().splitlines()[0])
        pretty.write_bytes(orjson.dumps(first, option=orjson.OPT_INDENT_2) + b"\n")
        with pytest.raises(TranscriptFormatError, match="looks like pretty-printed JSON"):
            list(TranscriptReader(pretty))
