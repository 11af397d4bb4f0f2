"""The lines of a transcript that start and finish its runs, found without reading the rest.

`mini-harness sessions` lists the runs of hundreds of sessions by what their RunStarted and
RunFinished lines say: the task, the model, the workspace, how the run ended, its steps
and tokens. Most of a session's bytes are the conversation and the tools' output, which a
listing does not need. `skim_runs` finds the lines it needs by their first bytes (the
writer puts `"type"` first), searched in the mapped file at the speed of a memory scan,
and types only those, by the codec's one decoder. Anything it cannot be sure of makes it
return None, and the caller reads the file whole (`TranscriptReader`, which says what is
wrong, if anything is):

- a file that does not end with a newline (a torn tail, or a run being written);
- a header of another format version, or a line that does not decode;
- a run's type named anywhere but at the start of a line (a line written in another key
  order, or an event that holds such an object): every run must be found;
- a run that started and did not finish (its model requests are counted by reading it
  whole), or a line longer than a reader holds.

The chain of hashes is not checked here: `transcript verify` does that.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator

from mini_harness.errors import DecodeError, HeaderError
from mini_harness.events import RunFinished, RunStarted
from mini_harness.transcripts.codec import decode_parts, line_hash
from mini_harness.transcripts.reader import (
    HEADER_LINE_BYTES,
    MAX_LINE_BYTES,
    IntegrityProblem,
    TornTail,
    TranscriptRecord,
)
from mini_harness.transcripts.upcast import read_header

_RUN = b'"type":"Run'
_AT_LINE_START = b'\n{"type":"Run'


class RunLines:
    """The header and the RunStarted and RunFinished records of a transcript, in file
    order: a source for the fold (history/fold.py) in place of a TranscriptReader."""

    def __init__(self, path: str, records: list[TranscriptRecord]) -> None:
        self.name = path
        self.records = records
        self.empty = False
        self.problems: list[IntegrityProblem] = []
        self.torn_tail: TornTail | None = None
        self.records_read = len(records)
        self.head_hash: str | None = None

    def __iter__(self) -> Iterator[TranscriptRecord]:
        return iter(self.records)


def skim_runs(path: str | os.PathLike[str]) -> RunLines | None:
    """The run lines of the regular file at `path`; None when the file must be read whole
    (see the module). OSError when it cannot be opened or mapped."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            return None
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            return _skimmed(os.fspath(path), mapped, size)


def _skimmed(path: str, mapped: mmap.mmap, size: int) -> RunLines | None:
    if mapped[size - 1] != ord("\n"):
        return None
    end = mapped.find(b"\n", 0, HEADER_LINE_BYTES)
    if end < 0:
        return None
    try:
        if read_header(mapped[:end]) is not None:
            return None  # an older format: its lines are upcast by the reader
        records = [_record(mapped[:end], 0)]
        open_runs: set[str] = set()
        found = mapped.find(_RUN, end)
        while found >= 0:
            after = found + len(_RUN)
            kind = _kind(mapped[after : after + 9])
            if kind is not None:
                start = found - 1  # the line's "{"
                if mapped[start - 1 : after] != _AT_LINE_START:
                    return None  # not a line of its own: this file is read whole
                stop = mapped.find(b"\n", after)
                if stop - start > MAX_LINE_BYTES:
                    return None
                record = _record(mapped[start:stop], start)
                if not isinstance(record.event, kind):
                    return None
                if isinstance(record.event, RunStarted):
                    open_runs.add(record.event.run_id)
                else:
                    open_runs.discard(record.event.run_id)
                records.append(record)
            found = mapped.find(_RUN, after)
    except (DecodeError, HeaderError):
        return None
    if open_runs:
        return None
    return RunLines(path, records)


def _kind(name: bytes) -> type[RunStarted] | type[RunFinished] | None:
    """The event type whose name goes on with `name` after `"type":"Run` (the 9 bytes
    after it), if it is one a listing reads."""
    if name.startswith(b'Started"'):
        return RunStarted
    if name == b'Finished"':
        return RunFinished
    return None


def _record(body: bytes, offset: int) -> TranscriptRecord:
    """One line (without its newline) typed by the codec's one decoder."""
    seq, prev, event = decode_parts(body)
    return TranscriptRecord(seq + 1, offset, seq, prev, line_hash(body), event)
