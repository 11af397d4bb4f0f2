from __future__ import annotations

import itertools
import os
import re
import stat
from pathlib import Path

import orjson
import pytest

from mini_harness import (
    ToolDefinition,
    ToolRegistry,
    ToolRuntime,
    TranscriptCorruptError,
    TranscriptFormatError,
    TranscriptWriteError,
)
from mini_harness.events import FORMAT_VERSION, ToolCalled, ToolSucceeded
from mini_harness.transcripts import JsonlTranscript, TranscriptReader, line_hash, read_transcript


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


class TestWireFormat:
    def test_lines_are_compact_camel_case_json(self, log: Path) -> None:
        """Each line is one compact JSON object with type, seq, ts and camelCase keys."""
        lines = _lines(log)
        assert all(line.endswith(b"\n") and b"\n" not in line[:-1] for line in lines)
        first = orjson.loads(lines[0])
        assert first["type"] == "TranscriptStarted"
        assert first["format"] == "mini-harness.transcript"
        assert first["version"] == FORMAT_VERSION
        assert "prev" not in first
        done = orjson.loads(lines[3])
        assert list(done)[:4] == ["type", "seq", "ts", "prev"]
        assert {"runId", "callId", "durationMs"} <= set(done)
        assert done["ts"].endswith("Z")
        assert len(done["ts"]) == len("2026-01-01T00:00:00.000000Z")
        assert b": " not in lines[3]

    def test_prev_is_the_hash_of_the_line_before(self, log: Path) -> None:
        """Every line after the first carries the hash of the previous line's exact bytes."""
        lines = _lines(log)
        for before, line in itertools.pairwise(lines):
            assert orjson.loads(line)["prev"] == line_hash(before[:-1])

    def test_new_files_are_private(self, log: Path) -> None:
        """A new transcript is created readable and writable by its owner only."""
        assert stat.S_IMODE(log.stat().st_mode) == 0o600


class TestAppend:
    def test_second_writer_continues_seq_and_chain(self, log: Path, registry: ToolRegistry) -> None:
        """Appending to an existing transcript continues its seq and hash chain."""
        with JsonlTranscript(log) as sink:
            ToolRuntime(registry, sink).dispatch("echo", {"text": "again"})
        reader = TranscriptReader(log)
        records = list(reader)
        assert [r.seq for r in records] == list(range(len(records)))
        assert reader.problems == []
        assert records[-1].event == records[-1].event
        assert isinstance(records[-1].event, ToolSucceeded)

    def test_torn_tail_is_quarantined_before_appending(
        self, log: Path, registry: ToolRegistry
    ) -> None:
        """A writer copies an unterminated tail aside, cuts it, then appends cleanly."""
        size = log.stat().st_size
        with log.open("ab") as handle:
            handle.write(b'{"type":"ToolCalled","seq":9')
        with JsonlTranscript(log) as sink:
            ToolRuntime(registry, sink).dispatch("echo", {"text": "after"})
        aside = log.with_name(f"t.jsonl.torn-{size}")
        assert aside.read_bytes() == b'{"type":"ToolCalled","seq":9'
        reader = TranscriptReader(log)
        list(reader)
        assert reader.torn_tail is None
        assert reader.problems == []

    def test_garbage_tail_is_quarantined_before_appending(
        self, log: Path, registry: ToolRegistry
    ) -> None:
        """Junk lines after the last event are a torn tail too: copied aside, then cut."""
        size = log.stat().st_size
        junk = b"not json\n" + b"\0" * 100 + b"\n" + b"\0" * 4096
        with log.open("ab") as handle:
            handle.write(junk)
        with JsonlTranscript(log) as sink:
            ToolRuntime(registry, sink).dispatch("echo", {"text": "after"})
        assert log.with_name(f"t.jsonl.torn-{size}").read_bytes() == junk
        reader = TranscriptReader(log)
        assert len(list(reader)) == 11
        assert reader.torn_tail is None
        assert reader.problems == []

    def test_last_line_the_reader_calls_torn_is_quarantined(
        self, log: Path, registry: ToolRegistry
    ) -> None:
        """A last line with a sound envelope but a broken event (a field renamed) is what the
        reader calls a torn tail, so a writer sets it aside instead of burying it mid-file."""
        lines = _lines(log)
        broken = lines[-1].replace(b'"name"', b'"nAme"', 1)
        log.write_bytes(b"".join(lines[:-1]) + broken)
        reader = TranscriptReader(log)
        list(reader)
        assert reader.torn_tail is not None
        assert reader.torn_tail.offset == log.stat().st_size - len(broken)
        with JsonlTranscript(log) as sink:
            ToolRuntime(registry, sink).dispatch("echo", {"text": "after"})
            assert [q.length for q in sink.quarantined] == [len(broken)]
        assert sink.quarantined[0].path.read_bytes() == broken
        reader = TranscriptReader(log)
        assert len(list(reader)) == 10
        assert reader.torn_tail is None
        assert reader.problems == []

    @pytest.mark.parametrize(
        ("content", "why"),
        [
            (b"hello\nworld\n", "line 1 is not TranscriptStarted"),
            (b"my notes", "it has no TranscriptStarted line"),
            (b'{"type":"ToolCalled","seq":0', "it has no TranscriptStarted line"),
        ],
        ids=["lines", "one-fragment", "fragment-of-another-event"],
    )
    def test_file_that_is_not_a_transcript_is_refused(
        self, tmp_path: Path, content: bytes, why: str
    ) -> None:
        """Somebody's file (with or without a newline) is refused on open, never moved aside."""
        path = tmp_path / "notes.txt"
        path.write_bytes(content)
        with pytest.raises(TranscriptFormatError) as info:
            JsonlTranscript(path)
        assert info.value.message == (
            f"{path} is not a mini-harness transcript ({why}); refusing to write to it"
        )
        assert path.read_bytes() == content
        assert list(tmp_path.iterdir()) == [path]

    @pytest.mark.parametrize(
        ("old", "new", "why"),
        [
            (b'"version":2', b'"version":99', "uses transcript format version 99"),
            (b'"version":2', b'"version":0', "uses transcript format version 0"),
            (b',"version":2', b"", "(line 1 has no format version)"),
            (b'"format":"mini-harness.transcript",', b"", "(line 1 is not TranscriptStarted)"),
        ],
        ids=["version-99", "version-0", "no-version", "no-format"],
    )
    def test_a_header_the_readers_refuse_is_refused_before_any_tool_runs(
        self, log: Path, registry: ToolRegistry, old: bytes, new: bytes, why: str
    ) -> None:
        """A file whose first line the readers would refuse is never appended to: opening
        it fails, so no call runs and no line of this version lands after that header."""
        lines = _lines(log)
        assert old in lines[0]
        lines[0] = lines[0].replace(old, new)
        log.write_bytes(b"".join(lines))
        ran: list[object] = []
        registry.register(
            ToolDefinition("spy", "Records that it ran.", {"type": "object"}), ran.append
        )
        with (
            pytest.raises(TranscriptFormatError, match=re.escape(why)),
            JsonlTranscript(log) as sink,
        ):
            ToolRuntime(registry, sink).dispatch("spy", {})
        assert ran == []
        assert log.read_bytes() == b"".join(lines)

    @pytest.mark.parametrize(
        "content",
        [b'{"type":"Transc', b'{"type":"TranscriptStarted","seq":0,"ts":"20', b"\0" * 4096, b" "],
        ids=["cut-type", "cut-header", "nuls", "space"],
    )
    def test_what_a_crash_while_creating_leaves_is_a_torn_tail(
        self, tmp_path: Path, registry: ToolRegistry, content: bytes
    ) -> None:
        """A cut header or NUL/whitespace junk without a newline is set aside, then written."""
        path = tmp_path / "t.jsonl"
        path.write_bytes(content)
        with JsonlTranscript(path) as sink:
            ToolRuntime(registry, sink).dispatch("echo", {"text": "a"})
        assert sink.quarantined[0].path.read_bytes() == content
        reader = TranscriptReader(path)
        assert len(list(reader)) == 4
        assert reader.torn_tail is None

    def test_fork_child_appends_its_own_lines(self, log: Path, registry: ToolRegistry) -> None:
        """After fork, parent and child both append through one writer without interleaving."""
        sink = JsonlTranscript(log)
        runtime = ToolRuntime(registry, sink)
        runtime.dispatch("echo", {"text": "parent-before"})
        pid = os.fork()
        if pid == 0:  # child
            try:
                for _ in range(50):
                    runtime.dispatch("echo", {"text": "child"})
            finally:
                os._exit(0)
        for _ in range(50):
            runtime.dispatch("echo", {"text": "parent"})
        os.waitpid(pid, 0)
        sink.close()
        reader = TranscriptReader(log)
        records = list(reader)
        assert reader.problems == []
        texts = [r.event.output["text"] for r in records if isinstance(r.event, ToolSucceeded)]
        assert texts.count("child") == 50
        assert texts.count("parent") == 50


class TestOpen:
    @pytest.mark.parametrize("kind", ["/dev/null", "fifo"])
    def test_only_a_regular_file_can_hold_a_transcript(self, tmp_path: Path, kind: str) -> None:
        """A device or a FIFO is refused when the writer opens it, before any event."""
        if kind == "fifo":
            path = tmp_path / "pipe"
            os.mkfifo(path)
        else:
            path = Path(kind)
        with pytest.raises(TranscriptWriteError) as info:
            JsonlTranscript(path)
        assert info.value.message == (
            f"cannot write transcript {path}: it is not a regular file "
            "(a device, FIFO or socket cannot hold a transcript)"
        )


class TestReader:
    def test_torn_tail_at_every_offset_of_the_last_record(self, log: Path, tmp_path: Path) -> None:
        """Cut anywhere inside the last line: the reader keeps the good lines, reports the tail."""
        data = log.read_bytes()
        last_start = data.rstrip(b"\n").rfind(b"\n") + 1
        cut = tmp_path / "cut.jsonl"
        for end in range(last_start + 1, len(data)):
            cut.write_bytes(data[:end])
            reader = TranscriptReader(cut)
            records = list(reader)
            assert len(records) == 7
            assert reader.torn_tail is not None
            assert reader.torn_tail.offset == last_start

    def test_nul_tail_is_a_torn_tail(self, log: Path) -> None:
        """4096 NULs after the last line (power loss) read as a torn tail, not as damage."""
        with log.open("ab") as handle:
            handle.write(b"\0" * 4096)
        reader = TranscriptReader(log)
        assert len(list(reader)) == 8
        assert reader.torn_tail is not None
        assert reader.torn_tail.length == 4096

    def test_bad_line_followed_by_good_ones_is_corruption(self, log: Path) -> None:
        """Damage mid-file is a hard error naming the line and its byte offset."""
        lines = _lines(log)
        offset = sum(len(line) for line in lines[:3])
        lines[3] = b"{broken\n"
        log.write_bytes(b"".join(lines))
        with pytest.raises(TranscriptCorruptError) as info:
            list(TranscriptReader(log))
        assert info.value.line == 4
        assert info.value.offset == offset
        assert "line 4" in info.value.message

    def test_edited_line_breaks_the_chain(self, log: Path) -> None:
        """An edited value is detected by the next line's prev."""
        log.write_bytes(
            log.read_bytes().replace(b'"output":{"text":"b"}', b'"output":{"text":"B"}')
        )
        reader = TranscriptReader(log)
        list(reader)
        assert [p.line for p in reader.problems] == [7]

    def test_deleted_line_is_detected(self, log: Path) -> None:
        """A missing line shows as a seq gap and a prev mismatch."""
        lines = _lines(log)
        del lines[4]
        log.write_bytes(b"".join(lines))
        reader = TranscriptReader(log)
        list(reader)
        assert any("seq" in p.message for p in reader.problems)
        assert any("prev" in p.message for p in reader.problems)

    def test_not_a_transcript(self, tmp_path: Path) -> None:
        """A file that is not a transcript is refused by name."""
        path = tmp_path / "notes.txt"
        path.write_text("hello\nworld\n")
        with pytest.raises(TranscriptFormatError, match="not a mini-harness transcript"):
            read_transcript(path)

    def test_newer_major_version_is_refused(self, log: Path) -> None:
        """A transcript of a newer format version is refused with a clear message."""
        lines = _lines(log)
        newer = FORMAT_VERSION + 1
        lines[0] = lines[0].replace(b'"version":%d' % FORMAT_VERSION, b'"version":%d' % newer)
        log.write_bytes(b"".join(lines))
        with pytest.raises(TranscriptFormatError, match=f"format version {newer}"):
            read_transcript(log)

    def test_unknown_event_type_is_kept(self, log: Path) -> None:
        """An event type this version does not know is read as UnknownEvent, not an error."""
        lines = _lines(log)
        extra = orjson.dumps(
            {
                "type": "ModelReplied",
                "seq": 8,
                "ts": "2026-01-01T00:00:00.000000Z",
                "prev": line_hash(lines[-1][:-1]),
                "text": "hi",
            }
        )
        log.write_bytes(b"".join(lines) + extra + b"\n")
        reader = TranscriptReader(log)
        records = list(reader)
        assert type(records[-1].event).__name__ == "UnknownEvent"
        assert reader.problems == []

    def test_missing_file(self, tmp_path: Path) -> None:
        """A missing transcript is a TranscriptError naming the path."""
        with pytest.raises(Exception, match="cannot read transcript"):
            read_transcript(tmp_path / "absent.jsonl")


class TestShortWrites:
    def test_short_writes_still_give_whole_lines(
        self, tmp_path: Path, registry: ToolRegistry, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """When the OS accepts only part of a line per write, the rest follows: no torn line."""
        real_write = os.write

        def dribble(fd: int, data: bytes | memoryview) -> int:
            return real_write(fd, bytes(data[:7]))

        path = tmp_path / "t.jsonl"
        with JsonlTranscript(path) as sink:
            runtime = ToolRuntime(registry, sink)
            monkeypatch.setattr(os, "write", dribble)
            runtime.dispatch("echo", {"text": "x" * 100})
            monkeypatch.undo()
        records = read_transcript(path)
        assert [r.seq for r in records] == [0, 1, 2, 3]
        event = records[-1].event
        assert isinstance(event, ToolSucceeded)
        assert event.output == {"text": "x" * 100}


class TestPath:
    """The writer names its file as pathlib does."""

    def test_a_trailing_slash_names_the_file(self, tmp_path: Path) -> None:
        """`dir/t.jsonl/` is the file t.jsonl, as pathlib reads it."""
        with JsonlTranscript(f"{tmp_path}/t.jsonl/") as sink:
            assert sink.path == tmp_path / "t.jsonl"
            sink.append(ToolCalled("2026-11-30T08:00:00.000000Z", "r", "c-1", "echo", {}))
        assert (tmp_path / "t.jsonl").is_file()

    def test_a_bytes_path_is_refused_before_anything_is_created(self, tmp_path: Path) -> None:
        """A bytes path is a TypeError, and no file appears."""
        with pytest.raises(TypeError, match="str"):
            JsonlTranscript(os.fsencode(tmp_path / "t.jsonl"))  # type: ignore[arg-type]
        assert not (tmp_path / "t.jsonl").exists()
