"""The JSONL transcript writer: append-only, one os.write per line, under an exclusive lock."""

from __future__ import annotations

import errno
import fcntl
import functools
import os
import stat
import threading
import time
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path
from typing import Literal, NoReturn, get_args

from mini_harness.errors import (
    DecodeError,
    EventTooLargeError,
    TranscriptCorruptError,
    TranscriptFormatError,
    TranscriptWriteError,
)
from mini_harness.events import (
    Event,
    RunFinished,
    RunStarted,
    TranscriptStarted,
    event_type,
    new_id,
)
from mini_harness.transcripts.beside import open_directory
from mini_harness.transcripts.claim import Claim, ContinuingSink, hold_run
from mini_harness.transcripts.codec import (
    DEFAULT_MAX_EVENT_BYTES,
    Redactor,
    decode_line,
    encode_wire,
    event_to_wire,
    line_hash,
    shrink_wire,
)
from mini_harness.transcripts.tail import Quarantined, copy_aside, last_newline
from mini_harness.transcripts.upcast import check_first_line

FsyncMode = Literal["always", "batch", "never"]
FSYNC_MODES: tuple[str, ...] = get_args(FsyncMode)
DEFAULT_FSYNC: FsyncMode = "batch"
DEFAULT_BATCH_SECONDS = 1.0
_CREATE = os.O_CREAT | os.O_EXCL  # O_EXCL: a link at the name is never followed


class JsonlTranscript:
    """An event sink that appends to a JSONL transcript file.

    Several writers (threads, processes) may append to one file. Each append takes an
    exclusive `flock` on the file, learns the last `seq` and hash from the file if another
    writer moved it, writes the line with one `os.write`, and gives the lock back. A torn
    tail left by a crash (an unterminated line, NULs, lines that are not events) is copied
    to `<path>.torn-<offset>` and cut off under the lock before the next append
    (`quarantined` lists what was set aside). A file that is not a transcript this version
    writes is refused when it is opened (see upcast.check_first_line).

    The writer writes the file it opened, known by its identity (`st_dev`, `st_ino`), not
    whatever its path names later: each append checks, under the lock, that the path still
    names that file, and a writer whose file was moved or replaced (a parent directory
    renamed, another file put at its name) stops with an error that says so. The files
    set aside beside it are created through the descriptor of the directory it was opened
    in, never through a link planted at their names (see beside.py).

    One runtime (and writer) per process: a writer used in a child of `os.fork` notices the
    new process id on its next append and opens the file again (the same file, or it
    stops), so the child never shares the parent's open file (or its lock).

    `fsync`: "always" syncs every line before `append` returns (so `ToolCalled` is on disk
    before the handler runs); "batch" syncs in the first append at least `batch_seconds`
    after the last sync, and in `close()` (no timer: an idle writer stays unsynced until
    then); "never" leaves it to the OS. A sync never happens under the file's lock. A
    failed fsync makes the writer unusable: it is never retried. `max_event_bytes` caps one
    line (see codec.shrink_wire); `redactor` rewrites secrets.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        fsync: FsyncMode = DEFAULT_FSYNC,
        batch_seconds: float = DEFAULT_BATCH_SECONDS,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        redactor: Redactor | None = None,
    ) -> None:
        if fsync not in FSYNC_MODES:
            raise ValueError(f"fsync must be one of {', '.join(FSYNC_MODES)}, not {fsync!r}")
        self.path = Path(path)
        self.fsync: FsyncMode = fsync
        self.max_event_bytes = max_event_bytes
        self._batch_seconds = batch_seconds
        self._redactor = redactor if redactor is not None and redactor.active else None
        self._lock = threading.Lock()
        self._fd = -1
        self._dir_fd = -1  # the directory the file was opened in (see beside.py)
        self._name = ""
        self._where = ""  # the absolute path, checked to still name the file on each append
        self._identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the file opened
        self._pid = os.getpid()
        self._end = -1  # file size after our last append; -1: unknown
        self._next_seq = 0
        self._prev: str | None = None
        self._fatal: str | None = None
        self._unsynced = False
        self._last_sync = time.monotonic()
        self.transcript_id: str | None = None
        self.quarantined: list[Quarantined] = []
        self._open()
        try:
            check_first_line(self._fd, self.path)
        except (TranscriptFormatError, OSError) as exc:
            self._release()
            if isinstance(exc, OSError):
                raise TranscriptWriteError(
                    str(self.path), f"cannot read transcript {self.path}: {exc.strerror or exc}"
                ) from None
            raise

    def __repr__(self) -> str:
        return f"<JsonlTranscript(path={str(self.path)!r}, next_seq={self._next_seq})>"

    # --- lifecycle ------------------------------------------------------------------

    def _open(self) -> None:
        """Open (or create) the file through its directory's descriptor, which is kept for
        the files set aside beside it, and learn its identity (or, opening it again in a
        child of `os.fork`, check that the path still names the file first opened)."""
        reopening = self._identity is not None
        try:
            if self._dir_fd < 0:
                self._dir_fd, self._name = open_directory(self.path)
                self._where = os.path.abspath(self.path)
            self._fd, created = self._open_file(create=not reopening)
        except OSError as exc:
            raise TranscriptWriteError(
                str(self.path), f"cannot open transcript {self.path}: {exc.strerror or exc}"
            ) from None
        info = os.fstat(self._fd)
        if not stat.S_ISREG(info.st_mode):
            # A device, FIFO or socket never grows: every append would see an empty file and
            # start a new transcript, and fsync fails on most of them at close.
            self._release()
            raise TranscriptWriteError(
                str(self.path),
                f"cannot write transcript {self.path}: it is not a regular file "
                "(a device, FIFO or socket cannot hold a transcript)",
            )
        if reopening and (info.st_dev, info.st_ino) != self._identity:
            self._release()
            self._fatal = self._moved_message(info)
            raise TranscriptWriteError(str(self.path), self._fatal)
        self._identity = (info.st_dev, info.st_ino)
        self._end = -1
        if created and self.fsync != "never":
            # The new name must survive a power loss too, not only the lines in it.
            try:
                os.fsync(self._dir_fd)
            except OSError as exc:
                self._die(f"cannot sync the directory of new transcript {self.path}", exc)

    def _open_file(self, *, create: bool) -> tuple[int, bool]:
        """The file's descriptor, and whether it was created. A name that exists is opened
        as it is (a link the user made to a transcript is followed), but nothing is ever
        created through a link: one that leads nowhere is refused."""
        flags = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC
        for _ in range(3):  # the name may come and go meanwhile: try again, a few times
            if create:
                try:
                    return os.open(self._name, flags | _CREATE, 0o600, dir_fd=self._dir_fd), True
                except FileExistsError:
                    pass
            try:
                return os.open(self._name, flags, dir_fd=self._dir_fd), False
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    link = stat.S_ISLNK(os.lstat(self._name, dir_fd=self._dir_fd).st_mode)
                except FileNotFoundError:
                    link = False  # gone meanwhile: create it
                if link:
                    raise OSError(
                        errno.ENOENT,
                        "it is a symbolic link to a file that does not exist "
                        "(a transcript is never created through a link)",
                    ) from None
        raise OSError(errno.EAGAIN, "its name kept changing while it was being opened")

    def _moved_message(self, now: os.stat_result | None) -> str:
        what = "no file" if now is None else "another file"
        return (
            f"transcript {self.path} was moved or replaced while this process was writing "
            f"it: the path now names {what}; the writer stopped rather than go on writing "
            "a file that path no longer leads to"
        )

    def _check_place(self) -> int:
        """Under the file's lock: the file's size, if the path still names the file this
        writer opened; else stop for good (what was written stays in that file, synced
        when it is closed) and raise TranscriptWriteError."""
        try:
            now: os.stat_result | None = os.stat(self._where)
        except OSError:
            now = None
        if now is None or (now.st_dev, now.st_ino) != self._identity:
            self._fatal = self._moved_message(now)
            raise TranscriptWriteError(str(self.path), self._fatal)
        return now.st_size

    def _release(self) -> None:
        """Close the file's descriptor and its directory's (if open)."""
        for name in ("_fd", "_dir_fd"):
            fd = getattr(self, name)
            setattr(self, name, -1)
            if fd >= 0:
                with suppress(OSError):
                    os.close(fd)

    def _check_process(self, *, reopen: bool = True) -> None:
        """In a child of `os.fork`: let go of the parent's descriptor, and open the file
        again (unless only closing).

        The inherited descriptor shares the parent's open file description, and a lock
        taken on it would not exclude the parent. The thread lock is replaced too: a thread
        of the parent (which the child does not have) may have held it at the fork.
        """
        if self._pid == os.getpid():
            return
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._unsynced = False  # the parent syncs what it wrote
        if self._fd >= 0:
            with suppress(OSError):
                os.close(self._fd)
            self._fd = -1
            if reopen:  # through the directory first opened; the same file, or refused
                self._open()
                return
        if self._dir_fd >= 0:
            with suppress(OSError):
                os.close(self._dir_fd)
            self._dir_fd = -1

    def close(self) -> None:
        """Close the file; in batch mode sync it first (a failure is raised, not ignored)."""
        self._check_process(reopen=False)
        with self._lock:
            fd, self._fd = self._fd, -1
            if fd < 0:
                self._release()
                return
            try:
                if self._unsynced:
                    os.fsync(fd)
            except OSError as exc:
                self._fatal = f"fsync of transcript {self.path} failed: {exc.strerror}"
                raise TranscriptWriteError(str(self.path), self._fatal) from None
            finally:
                os.close(fd)
                self._release()

    def __enter__(self) -> JsonlTranscript:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _die(self, what: str, exc: OSError) -> NoReturn:
        """A durability failure: close for good. The page cache state is unknown afterwards,
        so a retried fsync could report success for data that never reached the disk."""
        self._fatal = f"{what}: {exc.strerror}; the transcript writer stopped"
        self._release()
        raise TranscriptWriteError(str(self.path), self._fatal) from None

    # --- appending ------------------------------------------------------------------

    def append(self, event: Event) -> None:
        """Append one event (`emit` is the same method).

        flock, a stat of the path (to learn that it still names this file, and whether
        another writer moved its end), one write, and unlock; an fsync follows, outside
        the lock, when the mode asks for one.
        """
        self._locked(event)

    emit = append

    def recover(self) -> list[Quarantined]:
        """Under the lock, quarantine a torn or garbage tail now; return what was set aside."""
        before = len(self.quarantined)
        self._locked(None)
        return self.quarantined[before:]

    @property
    def identity(self) -> tuple[int, int]:
        """(st_dev, st_ino) of the file this writer writes: what protects it from the tools
        (tools.workspace.Workspace.pin), whatever name it is reached by."""
        assert self._identity is not None  # set when the file was opened
        return self._identity

    @property
    def end(self) -> int:
        """Where the file's events ended when this writer last held the lock (-1: unknown).
        Right after `recover()`, every byte before it is a whole event."""
        return self._end

    def continuing(self, run_id: str, *, since: int, read: Iterable[str] = ()) -> ContinuingSink:
        """The sink of a run that resumes run `run_id`, planned from the events of the
        runs `read` as this file held them when its events ended at byte `since` (`end`
        right after `recover()`). Its RunStarted is written only if, under the lock, the
        claim holds (see claim.py); else nothing is, and the error says why."""
        claim = Claim(run_id, since, frozenset(read))
        return ContinuingSink(claim, self.append, functools.partial(self._locked, claim=claim))

    def _locked(self, event: Event | None, claim: Claim | None = None) -> None:
        """Under the thread lock and the file's: learn where the file ends if it moved (or
        always, to recover), write `event` if given (and if the `claim` holds); then sync
        as the mode asks."""
        if self._pid != os.getpid():  # the check of _check_process, without a call
            self._check_process()
        with self._lock:
            fd = self._fd
            if fd < 0 or self._fatal is not None:  # closed, or stopped (which it says)
                closed = self._fatal or f"transcript {self.path} is closed"
                raise TranscriptWriteError(str(self.path), closed)
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                size = self._check_place()  # the same stat says where the file ends
                if size != self._end or event is None:  # another writer moved it, or new to us
                    self._resync(size)
                if event is None:
                    return
                if claim is not None:
                    claim.check(fd, self._end)
                if self._next_seq == 0 and not isinstance(event, TranscriptStarted):
                    # A new file's header: at the time of the event it comes before.
                    self._write_event(TranscriptStarted(ts=event.ts, transcript_id=new_id()))
                self._write_event(event)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            if self.fsync != "never":
                self._after_write()

    def _after_write(self) -> None:
        now = time.monotonic()
        if self.fsync == "batch" and now - self._last_sync < self._batch_seconds:
            self._unsynced = True
            return
        try:
            os.fsync(self._fd)
        except OSError as exc:
            self._die(f"fsync of transcript {self.path} failed", exc)
        self._last_sync = now
        self._unsynced = False

    def _write_event(self, event: Event) -> None:
        """Under the file's lock: write `event` as the next line; advance seq and chain.

        If the write fails, the fragment is cut off before append gives the lock back; if it
        is interrupted, the end stays unknown (`_end` is not advanced), so the next append
        learns the file's state under the lock.
        """
        seq = self._next_seq
        try:
            wire = event_to_wire(event, seq, self._prev)
            if self._redactor is not None:
                wire = self._redactor.redact_wire(wire)
            line = encode_wire(wire)
        except TypeError as exc:  # orjson.JSONEncodeError: bytes, lone surrogates, objects
            raise TranscriptWriteError(
                str(self.path),
                f"cannot record {event_type(event)} in {self.path}: not JSON ({exc})",
            ) from None
        # The cap guards against tool payloads; a run's tool definitions come from the
        # developer's own code and replay needs them whole, so RunStarted is never capped.
        # Over it, the large payload is replaced by a marker (see codec.shrink_wire).
        size = len(line)
        if size > self.max_event_bytes and not isinstance(event, RunStarted):
            line = encode_wire(wire) if shrink_wire(wire, self.max_event_bytes) else b""
            if not line or len(line) > self.max_event_bytes:
                raise EventTooLargeError(
                    str(self.path),
                    f"cannot record {event_type(event)} in {self.path}: its line is {size} "
                    f"bytes, over the {self.max_event_bytes}-byte event size cap",
                )
        data = line + b"\n"
        try:
            written = os.write(self._fd, data)
            while written < len(data):  # a short write: rare
                written += os.write(self._fd, data[written:])
        except OSError as exc:  # never leave a fragment for the next append to glue onto
            try:
                os.ftruncate(self._fd, self._end)
            except OSError:
                self._end = -1
            raise TranscriptWriteError(
                str(self.path), f"cannot append to {self.path}: {exc.strerror}"
            ) from None
        self._end += len(data)
        self._prev = line_hash(line)
        self._next_seq = seq + 1
        # An agent run is held as running from its start to its end (see claim.py).
        if isinstance(event, RunStarted) and event.task is not None:
            hold_run(self._fd, event.run_id)
        elif isinstance(event, RunFinished):
            hold_run(self._fd, event.run_id, held=False)
        if isinstance(event, TranscriptStarted):
            self.transcript_id = event.transcript_id

    # --- learning where the file ends ------------------------------------------------

    def _resync(self, size: int) -> None:
        """Read the last event line (under the lock) to continue its seq and hash chain.

        Bytes after it that do not form events (an unterminated line, NULs, junk lines) are
        a torn tail: copied aside, then cut off. A line counts as an event exactly when the
        reader's decoder types it, so what is cut is exactly what the reader calls a torn
        tail; anything else would turn into damage in the middle once appended after. A
        failed read or cut of the file is said as a TranscriptWriteError.
        """
        self._end = -1  # unknown until understood: a failure below forces another resync
        self._next_seq, self._prev = 0, None
        if size == 0:
            self._end = 0
            return
        try:
            terminated = last_newline(self._fd, size)  # just past the last "\n", or 0
            scan = terminated
            while scan > 0:
                line_start = last_newline(self._fd, scan - 1)
                line = os.pread(self._fd, scan - 1 - line_start, line_start)
                try:
                    decoded = decode_line(line)
                except DecodeError:
                    scan = line_start
                    continue
                if line.endswith(b"\r"):
                    raise TranscriptFormatError(
                        str(self.path),
                        f"cannot append to {self.path}: it has CRLF line endings (byte "
                        f"{line_start}); transcripts use \\n only",
                    )
                if scan < size:
                    self._quarantine(scan, size)
                self._end = scan
                if isinstance(decoded.event, TranscriptStarted):
                    self.transcript_id = decoded.event.transcript_id
                self._next_seq = decoded.seq + 1
                self._prev = line_hash(line)
                return
            if terminated > 0:
                raise TranscriptCorruptError(
                    str(self.path),
                    f"cannot append to {self.path}: none of its lines is a transcript event; "
                    "run `mini-harness transcript verify` on it",
                    line=1,
                    offset=0,
                )
            self._quarantine(0, size)  # one unterminated fragment: a crash while creating it
        except OSError as exc:
            raise TranscriptWriteError(
                str(self.path),
                f"cannot append to {self.path}: reading or cutting its end failed: "
                f"{exc.strerror or exc}",
            ) from None

    def _quarantine(self, offset: int, size: int) -> None:
        """Copy a tail aside (durably, under a name no earlier copy has), then cut it off."""
        try:
            aside = copy_aside(self._fd, self._dir_fd, self.path, offset, size)
        except OSError as exc:
            raise TranscriptWriteError(
                str(self.path),
                f"cannot set aside the torn tail of {self.path} (byte {offset}): {exc.strerror}; "
                "nothing was cut",
            ) from None
        os.ftruncate(self._fd, offset)
        self._end = offset
        self.quarantined.append(aside)
