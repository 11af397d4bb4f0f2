"""The fold's fast loop against its general path: the same results on every file.

`TranscriptFold` reads the common lines (well-formed call events that break no rule) in a
loop of its own and hands every other line to the reader's general path; `fast=False`
reads every line the general way. A corpus of clean, damaged and odd transcripts is
folded both ways, and everything a caller can see must be identical: the items and the
state after each of them, the end results, the errors.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest
from click.testing import CliRunner

from mini_harness import ToolCallError, ToolRuntime
from mini_harness.cli import cli
from mini_harness.errors import MiniHarnessError
from mini_harness.events import FORMAT_VERSION
from mini_harness.replay import CallRecord, TranscriptFold
from mini_harness.replay import fold as fold_module
from mini_harness.transcripts import JsonlTranscript, TranscriptReader, line_hash
from mini_harness.transcripts.upcast import Upcasters
from tests.replay import registries
from tests.replay.generate import write_transcript
from tests.transcripts.test_reader_raw import EDITS as READER_EDITS

RUN_A = "a" * 32
RUN_B = "b" * 32
TS = "2026-01-01T00:00:00.000000Z"

Edit = Callable[[list[bytes]], list[bytes]]


def _relink(lines: list[bytes], *, slow: tuple[int, ...] = ()) -> list[bytes]:
    """Rewrite seq and prev so that only the edit itself is wrong (or nothing is).

    Lines that are not JSON objects are kept as they are. The lines at the indexes in
    `slow` end in a space: the reader accepts them, the fast loop leaves them to the
    general path.
    """
    out = [lines[0]]
    for seq, line in enumerate(lines[1:], start=1):
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError:
            data = None
        if type(data) is not dict:
            out.append(line)
            continue
        data["seq"] = seq
        data["prev"] = line_hash(out[-1][:-1])
        out.append(orjson.dumps(data) + (b" \n" if seq in slow else b"\n"))
    return out


def _line(kind: str, **fields: Any) -> bytes:
    """A line to be linked into place by _relink."""
    return orjson.dumps({"type": kind, "seq": 0, "ts": TS, "prev": "", **fields}) + b"\n"


def _edit_field(index: int, **changes: Any) -> Edit:
    """Change (or, with a value of ..., drop) fields of line `index`, then relink."""

    def edit(lines: list[bytes]) -> list[bytes]:
        data = orjson.loads(lines[index])
        for key, value in changes.items():
            if value is ...:
                data.pop(key, None)
            else:
                data[key] = value
        lines[index] = orjson.dumps(data) + b"\n"
        return _relink(lines)

    return edit


def _raw_field(index: int, **changes: Any) -> Edit:
    """Like _edit_field, without relinking: the edit also breaks the chain."""

    def edit(lines: list[bytes]) -> list[bytes]:
        data = orjson.loads(lines[index])
        data.update(changes)
        lines[index] = orjson.dumps(data) + b"\n"
        return lines

    return edit


def _insert(index: int, *extra: bytes, relink: bool = True) -> Edit:
    def edit(lines: list[bytes]) -> list[bytes]:
        lines[index:index] = extra
        return _relink(lines) if relink else lines

    return edit


def _replace(index: int, raw: bytes) -> Edit:
    def edit(lines: list[bytes]) -> list[bytes]:
        lines[index] = raw
        return lines

    return edit


CALL = {"runId": RUN_A, "callId": "x-1", "name": "echo"}

# Lines of the two-run log below: 1 TranscriptStarted, 2 RunStarted (a), 3/4 echo,
# 5/6 echo, 7/8 flaky (fails), 9 RunStarted (b), 10/11 echo.
EDITS: dict[str, Edit] = {
    **{f"reader: {name}": edit for name, edit in READER_EDITS.items()},
    "deleted terminal event": lambda lines: _relink([*lines[:3], *lines[4:]]),
    "deleted ToolCalled": lambda lines: _relink([*lines[:2], *lines[3:]]),
    "deleted RunStarted": lambda lines: _relink([lines[0], *lines[2:]]),
    "swapped calls, relinked": lambda lines: _relink(
        [*lines[:2], *lines[4:6], *lines[2:4], *lines[6:]]
    ),
    "terminal before its call": lambda lines: _relink([*lines[:2], lines[3], lines[2], *lines[4:]]),
    "edited output, not relinked": lambda lines: [
        *lines[:3],
        lines[3].replace(b'"one"', b'"ONE"'),
        *lines[4:],
    ],
    "edited output, relinked": lambda lines: _relink(
        [*lines[:3], lines[3].replace(b'"one"', b'"ONE"'), *lines[4:]]
    ),
    "seq gap": _raw_field(4, seq=40),
    "seq repeated": _raw_field(4, seq=3),
    "seq is a bool": _edit_field(1, seq=True),
    "seq as float": _raw_field(3, seq=3.0),
    "negative seq": _raw_field(3, seq=-1),
    "prev missing": _edit_field(5, prev=...),
    "prev null": _raw_field(5, prev=None),
    "prev a number": _raw_field(5, prev=7),
    "prev uppercase": lambda lines: _raw_field(5, prev=orjson.loads(lines[5])["prev"].upper())(
        lines
    ),
    "duplicate call id": _insert(
        6, _line("ToolCalled", **{**CALL, "callId": RUN_A[:12] + "-1"}, input={})
    ),
    "terminal twice": lambda lines: _relink([*lines[:4], lines[3], *lines[4:]]),
    "call id reused while open": lambda lines: _relink([*lines[:3], lines[2], *lines[3:]]),
    "call id reused while another is open": lambda lines: _relink(
        [*lines[:3], lines[4], lines[2], *lines[3:4], *lines[5:]]
    ),
    "terminal names another tool": _edit_field(3, name="flaky"),
    "failed names another tool": _edit_field(7, name="echo"),
    "terminal in a run not started yet": _edit_field(3, runId=RUN_B),
    "terminal in the other run": _edit_field(10, runId=RUN_A),
    "terminal in an unknown run": _edit_field(5, runId="c" * 32),
    "terminal with no call": _insert(6, _line("ToolSucceeded", **CALL, output=1, durationMs=1)),
    "failed with no call": _insert(
        6, _line("ToolFailed", **CALL, error={"kind": "k", "message": "m"}, durationMs=1)
    ),
    "call for an unknown run": _insert(
        4,
        _line("ToolCalled", **{**CALL, "runId": "c" * 32}, input={"text": "x"}),
        _line("ToolSucceeded", **{**CALL, "runId": "c" * 32}, output=1, durationMs=2),
    ),
    "run started again": lambda lines: _relink([*lines, lines[1]]),
    "unknown event types": _insert(
        4, _line("ModelReplied", text="hi"), _line("Checkpoint"), _line("ToolCalledV2", **CALL)
    ),
    "in doubt at the end": lambda lines: _relink(lines[:-1]),
    "in doubt mid-file": lambda lines: _relink([*lines[:3], *lines[4:]]),
    "several in doubt": lambda lines: _relink([*lines[:3], lines[4], *lines[6:9], lines[9]]),
    "interleaved calls": lambda lines: _relink(
        [*lines[:2], lines[2], lines[4], lines[3], lines[5], *lines[6:]]
    ),
    "runId of the wrong type": _edit_field(3, runId=5),
    "callId of the wrong type": _edit_field(2, callId=5),
    "terminal callId of the wrong type": _edit_field(3, callId=["x"]),
    "name of the wrong type": _edit_field(3, name=None),
    "ts of the wrong type": _edit_field(3, ts=1),
    "ts missing": _edit_field(2, ts=...),
    "type missing": _edit_field(2, type=...),
    "type a number": _edit_field(2, type=3),
    "input missing": _edit_field(2, input=...),
    "output missing": _edit_field(3, output=...),
    "durationMs a string": _edit_field(3, durationMs="1"),
    "durationMs a bool": _edit_field(3, durationMs=True),
    "durationMs an int": _edit_field(3, durationMs=2),
    "durationMs missing": _edit_field(3, durationMs=...),
    "failed without error kind": _edit_field(7, error={"message": "m"}),
    "failed with error a list": _edit_field(7, error=["k"]),
    "failed error message a number": _edit_field(7, error={"kind": "k", "message": 1}),
    "failed durationMs missing": _edit_field(7, durationMs=...),
    "extra fields": _edit_field(3, extra={"a": [1, 2]}, more=None),
    "key order changed": lambda lines: _relink(
        [
            *lines[:3],
            orjson.dumps(dict(reversed(list(orjson.loads(lines[3]).items())))) + b"\n",
            *lines[4:],
        ]
    ),
    "a call line the general path reads": lambda lines: _relink(lines, slow=(2,)),
    "a terminal line the general path reads": lambda lines: _relink(lines, slow=(3,)),
    "space after the object": _replace(3, b"{}  \n"),
    "a list line": _replace(3, b"[1, 2]\n"),
    "a string line": _replace(3, b'"ToolSucceeded"\n'),
    "a number line mid-file": _replace(5, b"42\n"),
    "an empty line": _insert(5, b"\n", relink=False),
    "a blank tail": lambda lines: [*lines, b"\n", b"   \n"],
    "pretty-printed tail": lambda lines: [*lines, b"{\n", b'  "type": "ToolCalled"\n', b"}\n"],
    "CRLF on one bad line": _replace(3, b'{"type":"ToolSucceeded"}\r\n'),
    "CRLF on one call line": lambda lines: [*lines[:3], lines[3][:-1] + b"\r\n", *lines[4:]],
    "CRLF on the last line": lambda lines: [*lines[:-1], lines[-1][:-1] + b"\r\n"],
    "torn after a call": lambda lines: [*lines[:3], lines[3][:-1]],
    "torn mid-line, then garbage": lambda lines: [*lines[:5], lines[5][:30], b"\0\0\0\n"],
    "only the header": lambda lines: lines[:1],
    "only a BOM": lambda lines: [b"\xef\xbb\xbf"],
    "BOM, then a torn header": lambda lines: [b"\xef\xbb\xbf" + lines[0][:20]],
    "BOM, then not a header": lambda lines: [b"\xef\xbb\xbf" + lines[1], *lines[2:]],
    "BOM, then a torn call": lambda lines: [b"\xef\xbb\xbf" + lines[0], lines[1], lines[2][:9]],
    "empty file": lambda lines: [],
    "header only, torn": lambda lines: [lines[0][:10]],
    "header not first": lambda lines: [lines[1], lines[0], *lines[2:]],
    "newer version": lambda lines: _relink(
        [lines[0].replace(b'"version":%d' % FORMAT_VERSION, b'"version":99'), *lines[1:]]
    ),
    "two headers": lambda lines: _relink([*lines, lines[0]]),
}


def _two_runs(path: Path) -> None:
    """Two runs: echo twice and a failing tool, then one echo call (11 lines)."""
    with JsonlTranscript(path) as sink:
        runtime = ToolRuntime(registries.recording(), sink, run_id=RUN_A)
        runtime.dispatch("echo", {"text": "one"})
        runtime.dispatch("echo", {"text": "two"})
        with pytest.raises(ToolCallError):
            runtime.dispatch("flaky", {})
        ToolRuntime(registries.recording(), sink, run_id=RUN_B).dispatch("echo", {"text": "3"})


def _state(fold: TranscriptFold) -> tuple[Any, ...]:
    reader = fold.reader
    return (
        fold.offset,
        reader.records_read,
        reader.head_hash,
        reader.torn_tail,
        list(reader.problems),
        fold.problems(),
        fold.summaries(),
        fold.totals(),
        fold.transcript_id,
        fold.selected_run,
        reader.bom,
    )


def _outcome(fold: TranscriptFold, stop: int | None = None) -> list[Any]:
    """Every item with the state after it, then the end state or the error."""
    seen: list[Any] = []
    items = iter(fold)
    assert isinstance(items, Generator)
    try:
        for index, item in enumerate(items):
            seen.append((type(item).__name__, item, _state(fold)))
            if index == stop:
                items.close()
                seen.append(("closed", _state(fold)))
                return seen
    except MiniHarnessError as exc:
        seen.append(("error", type(exc).__name__, str(exc), vars(exc), _state(fold)))
        return seen
    seen.append(("end", fold.finished, _state(fold)))
    return seen


def _fold_both(path: Path, **options: Any) -> tuple[list[Any], list[Any]]:
    upcasters = options.pop("upcasters", None)
    stop = options.pop("stop", None)
    outcomes = []
    for fast in (True, False):
        fold = TranscriptFold(path, fast=fast, **options)
        if upcasters is not None:
            fold.reader = TranscriptReader(path, upcasters=upcasters)
        outcomes.append(_outcome(fold, stop))
    return outcomes[0], outcomes[1]


def _assert_same(path: Path, **options: Any) -> list[Any]:
    fast, general = _fold_both(path, **options)
    assert fast == general
    return fast


@pytest.fixture(name="lines")
def _lines(tmp_path: Path) -> list[bytes]:
    path = tmp_path / "base.jsonl"
    _two_runs(path)
    return path.read_bytes().splitlines(keepends=True)


def _call(kind: str, call_id: str, **fields: Any) -> bytes:
    return _line(kind, runId=RUN_A, callId=call_id, name="echo", **fields)


def _called(call_id: str, name: str = "echo") -> bytes:
    return (
        _call("ToolCalled", call_id, input={"text": "x"})
        if name == "echo"
        else (_line("ToolCalled", runId=RUN_A, callId=call_id, name=name, input={}))
    )


def _ended(call_id: str) -> bytes:
    return _call("ToolSucceeded", call_id, output=1, durationMs=1)


# Call events inserted after run A's RunStarted (line index 2 on): every way a call id can
# come back. Each is folded with different lines left to the general path (SLOW), so that
# an id first seen by one path comes back on the other.
CALL_ID_CASES: dict[str, list[bytes]] = {
    "reused after it ended, then a terminal": [
        _called("z"),
        _ended("z"),
        _called("z"),
        _ended("z"),
    ],
    "a terminal first, then the call and a terminal": [_ended("z"), _called("z"), _ended("z")],
    "reused while open, then two terminals": [
        _called("z"),
        _called("z"),
        _ended("z"),
        _ended("z"),
    ],
    "reused while open by another tool": [
        _called("z"),
        _called("z", name="flaky"),
        _ended("z"),
        _ended("z"),
    ],
    "reused with another call open between": [
        _called("z"),
        _called("y"),
        _called("z"),
        _ended("y"),
        _ended("z"),
        _ended("z"),
    ],
}
SLOW = [(), (2,), (3,), (4,), (5,), (2, 4), (3, 5), (2, 3, 4, 5, 6, 7)]


class TestSamePathsSameResults:
    @pytest.mark.parametrize("case", sorted(CALL_ID_CASES))
    @pytest.mark.parametrize("slow", SLOW, ids=str)
    def test_call_ids_coming_back_on_either_path(
        self, tmp_path: Path, lines: list[bytes], case: str, slow: tuple[int, ...]
    ) -> None:
        """The fast loop's record of call ids and the protocol's agree, whichever path saw
        an id first: same problems, same records."""
        path = tmp_path / "t.jsonl"
        edited = [*lines[:2], *CALL_ID_CASES[case], *lines[2:]]
        path.write_bytes(b"".join(_relink(edited, slow=slow)))
        outcome = _assert_same(path)
        assert outcome[-1][0] == "end"
        fold = TranscriptFold(path)
        list(fold)
        assert any("callId z" in p.message or "call z" in p.message for p in fold.problems())

    @pytest.mark.parametrize("edit", sorted(EDITS))
    @pytest.mark.parametrize(
        "options",
        [{}, {"context_reports": True}, {"run": "2"}, {"run": "aaaa"}, {"run": "9"}],
        ids=["all", "context", "run-2", "run-a", "no-such-run"],
    )
    def test_corpus(
        self, tmp_path: Path, lines: list[bytes], edit: str, options: dict[str, Any]
    ) -> None:
        """Each edited file folds to identical items, state, problems and errors."""
        path = tmp_path / "t.jsonl"
        path.write_bytes(b"".join(EDITS[edit](list(lines))))
        _assert_same(path, **options)

    @pytest.mark.parametrize("stop", [0, 1, 2, 3, 4])
    def test_stopping_early(self, tmp_path: Path, lines: list[bytes], stop: int) -> None:
        """A consumer that stops after any item sees the same state both ways."""
        path = tmp_path / "t.jsonl"
        path.write_bytes(b"".join(EDITS["reader: torn"](list(lines))))
        outcome = _assert_same(path, stop=stop)
        assert outcome[-1][0] == "closed"

    @pytest.mark.parametrize(
        "edit", ["reader: untouched", "reader: torn", "duplicate call id", "only a BOM"]
    )
    def test_folding_twice(self, tmp_path: Path, lines: list[bytes], edit: str) -> None:
        """Iterating the same fold a second time goes on from the same state both ways."""
        path = tmp_path / "t.jsonl"
        path.write_bytes(b"".join(EDITS[edit](list(lines))))
        outcomes = []
        for fast in (True, False):
            fold = TranscriptFold(path, fast=fast)
            outcomes.append([_outcome(fold), _outcome(fold)])
        assert outcomes[0] == outcomes[1]

    @pytest.mark.parametrize("fast", [True, False])
    def test_a_terminal_of_another_run_or_tool_is_reported(
        self, tmp_path: Path, lines: list[bytes], fast: bool
    ) -> None:
        """Such a terminal event ends its call as the ToolCalled recorded it, and the fold
        says what does not match."""
        path = tmp_path / "t.jsonl"
        edit = _edit_field(10, runId=RUN_A, name="flaky")  # run b's echo call, line 11
        path.write_bytes(b"".join(edit(list(lines))))
        fold = TranscriptFold(path, fast=fast)
        records = [item for item in fold if isinstance(item, CallRecord)]
        assert (records[-1].run_id, records[-1].name, records[-1].status) == (
            RUN_B,
            "echo",
            "succeeded",
        )
        call_id = records[-1].call_id
        assert [(p.kind, p.describe()) for p in fold.problems()] == [
            (
                "protocol",
                f"line 11: ToolSucceeded for call {call_id} is in run {RUN_A}, but its "
                f"ToolCalled is in run {RUN_B}",
            )
        ]

    def test_the_corpus_reaches_both_ends(self, tmp_path: Path, lines: list[bytes]) -> None:
        """The corpus holds clean files, problems, torn tails and errors (a guard on itself)."""
        kinds: set[str] = set()
        for edit in EDITS.values():
            path = tmp_path / "t.jsonl"
            path.write_bytes(b"".join(edit(list(lines))))
            fast = _assert_same(path)
            end = fast[-1]
            if end[0] == "error":
                kinds.add(end[1])
            else:
                problems = {problem.kind for problem in end[-1][5]}
                kinds |= problems or {"clean"}
        assert kinds >= {
            "clean",
            "integrity",
            "protocol",
            "torn-tail",
            "TranscriptCorruptError",
            "TranscriptFormatError",
        }

    def test_upcast_files_fold_alike(self, tmp_path: Path, lines: list[bytes]) -> None:
        """A file of an older format version (read through an upcaster) folds alike."""
        older = FORMAT_VERSION - 1
        upcasters = Upcasters()
        upcasters.register(
            older, lambda data: {**data, "version": FORMAT_VERSION} if "version" in data else data
        )
        path = tmp_path / "old.jsonl"
        current = b'"version":%d' % FORMAT_VERSION
        old = [lines[0].replace(current, b'"version":%d' % older), *lines[1:]]
        path.write_bytes(b"".join(_relink(old)))
        outcome = _assert_same(path, upcasters=upcasters)
        assert outcome[-1][0] == "end"
        assert outcome[-1][-1][7].calls == 4

    @pytest.mark.parametrize("seed", range(40))
    def test_random_damage(self, tmp_path: Path, seed: int) -> None:
        """Random deletions, swaps, duplicates, byte edits and cuts in a larger file."""
        rng = random.Random(seed)
        path = tmp_path / "t.jsonl"
        write_transcript(path, 300, runs=3)
        lines = path.read_bytes().splitlines(keepends=True)
        for _ in range(rng.randint(1, 4)):
            index = rng.randrange(1, len(lines))
            action = rng.choice(["delete", "swap", "duplicate", "byte", "relink", "cut"])
            if action == "delete":
                del lines[index]
            elif action == "swap" and index + 1 < len(lines):
                lines[index], lines[index + 1] = lines[index + 1], lines[index]
            elif action == "duplicate":
                lines.insert(index, lines[index])
            elif action == "byte":
                line = bytearray(lines[index])
                line[rng.randrange(len(line) - 1)] = rng.choice(b'x"{}:,0 ')
                lines[index] = bytes(line)
            elif action == "relink":
                lines = _relink(lines[:1] + [line for line in lines[1:] if line.strip()])
            elif action == "cut":
                lines[-1] = lines[-1][: rng.randrange(len(lines[-1]))]
        path.write_bytes(b"".join(lines))
        _assert_same(path)
        _assert_same(path, run="2", context_reports=True)

    def test_fast_records_are_whole(self, tmp_path: Path) -> None:
        """The fast loop builds CallRecords field by field: each has every field, as built."""
        path = tmp_path / "t.jsonl"
        write_transcript(path, 60, runs=2)
        records = [item for item in TranscriptFold(path) if isinstance(item, CallRecord)]
        assert {record.status for record in records} == {"succeeded", "failed"}
        for record in records:
            fields = attrs.asdict(record, recurse=False)
            assert list(fields) == [field.name for field in attrs.fields(CallRecord)]
            built = CallRecord(**fields)
            assert record == built
            assert repr(record) == repr(built)


class TestCommandLine:
    @pytest.mark.parametrize(
        "edit", ["reader: untouched", "reader: torn", "reader: broken middle", "duplicate call id"]
    )
    @pytest.mark.parametrize("args", [[], ["--json"], ["--json", "--run", "2"]])
    def test_same_output_and_exit_code(
        self,
        tmp_path: Path,
        lines: list[bytes],
        monkeypatch: pytest.MonkeyPatch,
        edit: str,
        args: list[str],
    ) -> None:
        """`mini-harness replay` prints the same and exits the same on the general path."""
        path = tmp_path / "t.jsonl"
        path.write_bytes(b"".join(EDITS[edit](list(lines))))
        results = []
        for fast in (True, False):
            if not fast:
                general = fold_module.TranscriptFold._read_general
                monkeypatch.setattr(fold_module.TranscriptFold, "_read", general)
            result = CliRunner().invoke(cli, ["replay", str(path), *args])
            results.append((result.exit_code, result.stdout, result.stderr))
        assert results[0] == results[1]
