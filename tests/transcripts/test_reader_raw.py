from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from mini_harness import ToolHandlerError, ToolRegistry, ToolRuntime, TranscriptError
from mini_harness.transcripts import JsonlTranscript, TranscriptReader, line_hash


@pytest.fixture(name="log")
def _log(tmp_path: Path, registry: ToolRegistry) -> Path:
    """A transcript with successes and failures."""
    path = tmp_path / "t.jsonl"
    with JsonlTranscript(path) as sink:
        runtime = ToolRuntime(registry, sink)
        runtime.dispatch("echo", {"text": "a"})
        with pytest.raises(ToolHandlerError):
            runtime.dispatch("boom", {})
        runtime.dispatch("add", {"a": 1, "b": 2})
    return path


def _relink(lines: list[bytes]) -> list[bytes]:
    """Rebuild the prev chain after an edit, so only the edit itself is wrong."""
    out = [lines[0]]
    for line in lines[1:]:
        data = orjson.loads(line)
        data["prev"] = line_hash(out[-1][:-1])
        out.append(orjson.dumps(data) + b"\n")
    return out


def _drop_field(field: str) -> Callable[[list[bytes]], list[bytes]]:
    def edit(lines: list[bytes]) -> list[bytes]:
        data = orjson.loads(lines[3])
        del data[field]
        lines[3] = orjson.dumps(data) + b"\n"
        return _relink(lines)

    return edit


EDITS: dict[str, Callable[[list[bytes]], list[bytes]]] = {
    "untouched": lambda lines: lines,
    "torn": lambda lines: [*lines[:-1], lines[-1][:20]],
    "nul tail": lambda lines: [*lines, b"\0" * 100],
    "broken middle": lambda lines: [*lines[:2], b"{oops\n", *lines[3:]],
    "deleted line": lambda lines: [*lines[:2], *lines[3:]],
    "swapped pair": lambda lines: [*lines[:2], lines[3], lines[2], *lines[4:]],
    "missing output": _drop_field("output"),
    "missing callId": _drop_field("callId"),
    "bad last event": lambda lines: [*lines[:-1], b'{"type":"ToolCalled","seq":9,"ts":"x"}\n'],
    "bom": lambda lines: [b"\xef\xbb\xbf" + lines[0], *lines[1:]],
    "crlf": lambda lines: [line.replace(b"\n", b"\r\n") for line in lines],
    "wrong type": lambda lines: [
        *lines[:3],
        lines[3].replace(b'"durationMs":', b'"durationMs":"x","d":'),
        *lines[4:],
    ],
}


def _outcome(read: Callable[[TranscriptReader], list[tuple[int, int]]], path: Path) -> object:
    reader = TranscriptReader(path)
    try:
        positions = read(reader)
    except TranscriptError as exc:
        # Same class and place; the wording of the field problem may differ.
        return type(exc).__name__, getattr(exc, "line", None), getattr(exc, "offset", None)
    tail = reader.torn_tail
    torn = None if tail is None else (tail.line, tail.offset, tail.length)
    return positions, reader.problems, torn, reader.head_hash, reader.records_read


class TestRawRecords:
    @pytest.mark.parametrize("edit", sorted(EDITS))
    def test_raw_and_typed_classify_alike(self, log: Path, edit: str) -> None:
        """The raw iterator reports the same lines, problems, tails and errors as the typed one."""
        log.write_bytes(b"".join(EDITS[edit](log.read_bytes().splitlines(keepends=True))))
        typed = _outcome(lambda r: [(rec.line, rec.offset) for rec in r], log)
        raw = _outcome(lambda r: [(rec[0], rec[1]) for rec in r.raw()], log)
        assert raw == typed

    def test_raw_records_are_the_parsed_lines(self, log: Path) -> None:
        """Each raw record carries the line's JSON object as written."""
        lines = log.read_bytes().splitlines()
        records = list(TranscriptReader(log).raw())
        assert [record[5] for record in records] == [orjson.loads(line) for line in lines]
        assert [(record[0], record[1]) for record in records[:3]] == [
            (1, 0),
            (2, len(lines[0]) + 1),
            (3, len(lines[0]) + len(lines[1]) + 2),
        ]
        assert [record[4] for record in records] == [line_hash(line) for line in lines]
        assert [(record[2], record[3]) for record in records] == [
            (data["seq"], data.get("prev")) for data in map(orjson.loads, lines)
        ]


def _line_by_line(reader: TranscriptReader) -> list[tuple[int, int]]:
    """Read with open() and one resume() per line, as a fold with a loop of its own does."""
    handle, offset = reader.open()
    positions: list[tuple[int, int]] = []
    line, seq, prev = 1, 0, None
    with handle:
        for raw in handle:
            for record in reader.resume(
                (raw,), handle, line=line, offset=offset, seq=seq, prev=prev
            ):
                positions.append((record[0], record[1]))
                seq, prev = record[2] + 1, record[4]
            if reader.torn_tail is not None:
                break
            line += 1
            offset += len(raw)
    return positions


class TestResume:
    @pytest.mark.parametrize("edit", sorted(EDITS))
    def test_line_by_line_reads_like_raw(self, log: Path, edit: str) -> None:
        """Handing the lines over one at a time finds what one raw pass finds."""
        log.write_bytes(b"".join(EDITS[edit](log.read_bytes().splitlines(keepends=True))))
        whole = _outcome(lambda r: [(rec[0], rec[1]) for rec in r.raw()], log)
        assert _outcome(_line_by_line, log) == whole

    def test_resume_checks_the_state_it_is_given(self, log: Path) -> None:
        """The seq and prev handed over are what the first line is checked against."""
        lines = log.read_bytes().splitlines(keepends=True)
        reader = TranscriptReader(log)
        offset = len(lines[0]) + len(lines[1])
        records = list(reader.resume(lines[2:4], [], line=3, offset=offset, seq=7, prev="0" * 32))
        assert [(record[0], record[1]) for record in records] == [
            (3, offset),
            (4, offset + len(lines[2])),
        ]
        assert [(p.line, p.message) for p in reader.problems] == [
            (3, "seq 2, expected 7"),
            (3, "prev does not match the hash of the line before"),
        ]
        assert (reader.records_read, reader.head_hash) == (2, line_hash(lines[3][:-1]))
