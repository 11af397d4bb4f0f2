"""The JSONL transcript writer: append-only, one os.write per line, under an exclusive lock."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path
from types import TracebackType

import orjson

from mini_harness.errors import TranscriptCorruptError, TranscriptWriteError
from mini_harness.runtime.events import Event, TranscriptStarted, new_id, utc_timestamp
from mini_harness.transcripts.codec import encode_line, line_hash

_TAIL_CHUNK = 64 * 1024

# Bumped in every child after fork: a writer compares it instead of calling getpid() (a
# syscall) on every append.
_fork_generation = 0


def _after_fork_in_child() -> None:
    global _fork_generation  # noqa: PLW0603 - one process-wide counter
    _fork_generation += 1


os.register_at_fork(after_in_child=_after_fork_in_child)


class JsonlTranscript:
    """An event sink that appends to a JSONL transcript file.

    Several writers (threads, processes) may append to one file: each append takes an
    exclusive `flock`, learns the last `seq` and hash from the file if another writer moved
    it, and writes the whole line with one `os.write`. A torn last line left by a crash is
    copied to `<path>.torn-<offset>` and cut off before the first append.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._thread_lock = threading.Lock()
        self._fd = -1
        self._pid = -1
        self._generation = -1  # _fork_generation when _fd was opened
        self._end = -1  # file size after our last append; -1: unknown
        self._next_seq = 0
        self._prev: str | None = None
        self.transcript_id: str | None = None
        self._open()

    def __repr__(self) -> str:
        return f"<JsonlTranscript(path={str(self.path)!r}, next_seq={self._next_seq})>"

    # --- lifecycle ------------------------------------------------------------------

    def _open(self) -> None:
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
        try:
            self._fd = os.open(self.path, flags, 0o600)
        except OSError as exc:
            raise TranscriptWriteError(
                str(self.path), f"cannot open transcript {self.path}: {exc.strerror}"
            ) from None
        self._pid = os.getpid()
        self._generation = _fork_generation
        self._end = -1

    def close(self) -> None:
        with self._thread_lock:
            if self._fd >= 0 and self._pid == os.getpid():
                os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> JsonlTranscript:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- appending ------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        self.append(event)

    def append(self, event: Event) -> int:
        """Append one event; return the seq it was given.

        Four syscalls per append: lock, learn the file's end (lseek), write, unlock.
        """
        with self._thread_lock:
            if self._fd < 0:
                raise TranscriptWriteError(str(self.path), f"transcript {self.path} is closed")
            if self._generation != _fork_generation:
                # After fork the descriptor (and its flock) is shared with the parent: a lock
                # on it would not exclude the parent, so the child opens its own.
                self._open()
            fd = self._fd
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                size = os.lseek(fd, 0, os.SEEK_END)  # the file's size, cheaper than fstat
                if size != self._end:
                    self._resync(size)
                if self._next_seq == 0 and not isinstance(event, TranscriptStarted):
                    header = TranscriptStarted(ts=utc_timestamp(), transcript_id=new_id())
                    self._write_event(header)
                return self._write_event(event)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def _write_event(self, event: Event) -> int:
        seq = self._next_seq
        line = encode_line(event, seq, self._prev)
        self._write_all(line + b"\n")
        if isinstance(event, TranscriptStarted):
            self.transcript_id = event.transcript_id
        self._prev = line_hash(line)
        self._next_seq = seq + 1
        return seq

    def _write_all(self, data: bytes) -> None:
        start = self._end
        try:
            written = os.write(self._fd, data)
            if written != len(data):  # a short write: rare, so the loop lives here
                view = memoryview(data)[written:]
                while view:
                    view = view[os.write(self._fd, view) :]
        except OSError as exc:
            # Never leave a fragment for the next append to glue onto.
            try:
                os.ftruncate(self._fd, start)
            except OSError:
                self._end = -1
            raise TranscriptWriteError(
                str(self.path), f"cannot append to {self.path}: {exc.strerror}"
            ) from None
        self._end = start + len(data)

    # --- learning where the file ends ------------------------------------------------

    def _resync(self, size: int) -> None:
        """Read the last line (under the lock) to continue its seq and hash chain."""
        self._end = size
        if size == 0:
            self._next_seq, self._prev = 0, None
            return
        tail_start = self._last_newline(size)  # offset just past the last "\n", or 0
        if tail_start < size:
            self._quarantine(tail_start, size)
            if tail_start == 0:
                self._next_seq, self._prev = 0, None
                return
        line_start = self._last_newline(tail_start - 1)
        line = os.pread(self._fd, tail_start - 1 - line_start, line_start)
        try:
            data = orjson.loads(line)
            seq = data["seq"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            seq = None
        if type(seq) is not int:
            raise TranscriptCorruptError(
                str(self.path),
                f"cannot append to {self.path}: its last line (at byte {line_start}) is not a "
                "transcript event; run `mini-harness transcript verify` on it",
                line=-1,
                offset=line_start,
            )
        if data.get("type") == "TranscriptStarted":
            self.transcript_id = data.get("transcriptId")
        self._next_seq = seq + 1
        self._prev = line_hash(line)

    def _last_newline(self, end: int) -> int:
        """Offset just past the last b"\\n" before `end`, or 0 if there is none."""
        pos = end
        while pos > 0:
            start = max(0, pos - _TAIL_CHUNK)
            chunk = os.pread(self._fd, pos - start, start)
            index = chunk.rfind(b"\n")
            if index >= 0:
                return start + index + 1
            pos = start
        return 0

    def _quarantine(self, offset: int, size: int) -> None:
        """Copy an unterminated tail aside, then cut it off."""
        aside = self.path.with_name(f"{self.path.name}.torn-{offset}")
        fragment = os.pread(self._fd, size - offset, offset)
        fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(fragment)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.ftruncate(self._fd, offset)
        self._end = offset
