"""The JSONL transcript writer: append-only, one os.write per line, under an exclusive lock."""

from __future__ import annotations

import fcntl
import hashlib
import os
import stat
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from types import TracebackType
from typing import TYPE_CHECKING, Literal, NoReturn, get_args

import orjson

from mini_harness.errors import (
    TranscriptCorruptError,
    TranscriptFormatError,
    TranscriptWriteError,
)
from mini_harness.events import (
    Event,
    JsonObject,
    JsonValue,
    RunStarted,
    ToolCalled,
    ToolSucceeded,
    TranscriptStarted,
    event_type,
    new_id,
)
from mini_harness.transcripts.codec import (
    HASH_HEX_DIGITS,
    STRICT,
    DecodeError,
    decode_line,
    encode_line,
    encode_wire,
    event_to_wire,
    line_hash,
    refuse_non_json,
    tool_called_fields,
    tool_succeeded_fields,
)
from mini_harness.transcripts.first_line import check_first_line
from mini_harness.transcripts.limits import DEFAULT_MAX_EVENT_BYTES, shrink_wire
from mini_harness.transcripts.tail import (
    copy_aside,
    last_newline,
    sync_directory,
)

if TYPE_CHECKING:
    from pathlib import Path

    from mini_harness.transcripts.redaction import Redactor
    from mini_harness.transcripts.tail import Quarantined

FsyncMode = Literal["always", "batch", "never"]
FSYNC_MODES: tuple[str, ...] = get_args(FsyncMode)
DEFAULT_FSYNC: FsyncMode = "batch"
DEFAULT_BATCH_SECONDS = 1.0
DEFAULT_LOCK_LEASE = 0.005
"""Seconds a writer keeps the file's lock after taking it (see JsonlTranscript)."""

# Bound once: these run on every append. (os.write and os.fsync are looked up per call, so
# that tests can inject failures.)
_sha256 = hashlib.sha256
_dumps = orjson.dumps
_flock, _LOCK_EX, _LOCK_UN, _LOCK_NB = fcntl.flock, fcntl.LOCK_EX, fcntl.LOCK_UN, fcntl.LOCK_NB
_lseek, _SEEK_END = os.lseek, os.SEEK_END
_monotonic = time.monotonic


# Bumped in every child after fork: a writer compares it instead of calling getpid() (a
# syscall) on every append.
_fork_generation = 0
# A writer's _fd in a child after fork: the inherited descriptor was closed, open again.
_REOPEN = -2
# Every open writer of this process, so that a forked child can renew their thread locks
# (another thread may have held one at the fork, and it would never be released there).
_writers: weakref.WeakSet[JsonlTranscript] = weakref.WeakSet()


class _LeaseKeeper:
    """One daemon thread per process that ends the leases of idle writers.

    A writer that takes the file's lock keeps it until its lease ends (`lock_lease` seconds
    later), so the appends in between cost one write each instead of lock, lseek, write and
    unlock. A busy writer gives the lock back itself: every append looks at the clock when
    it is done. The keeper is for the writer that falls idle with the lock: it wakes when a
    lease ends and releases the lock of a writer that is not appending. Either way another
    writer (or another process) waits about one lease for its turn, and an idle writer
    never keeps the file locked.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._watched: set[JsonlTranscript] = set()
        self._thread: threading.Thread | None = None

    def watch(self, writer: JsonlTranscript) -> None:
        """Called by a writer that took the lock (under its own thread lock).

        Under the keeper's lock, so that the keeper cannot drop a writer it found without
        the lock while that writer takes it again.
        """
        with self._cond:
            if writer in self._watched:  # the keeper will find the new lease end itself
                return
            self._watched.add(writer)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="mini-harness-lock-lease", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._watched:
                    self._cond.wait()
                now = _monotonic()
                ended = []
                wake = now + 3600.0
                for writer in list(self._watched):
                    if not writer._held:
                        self._watched.discard(writer)
                    elif writer._lease_end <= now:
                        ended.append(writer)
                    else:
                        wake = min(wake, writer._lease_end)
                if not ended:
                    if self._watched:
                        self._cond.wait(wake - now)
                    continue
            # Outside the keeper's lock: a writer calls watch() while holding its own lock.
            for writer in ended:
                writer._lease_expired()
            # A writer that was busy gives the lock back when its append is done; look again
            # shortly in case that append was already past its own look at the clock.
            time.sleep(_BUSY_RETRY_SECONDS)


_keeper = _LeaseKeeper()
# How long the keeper waits before looking again at writers whose lease ended while they
# were appending. It never blocks on a writer, so a thread of this process waiting for the
# lock held by another of its writers cannot stop it.
_BUSY_RETRY_SECONDS = 0.001
# flock is not fair: a writer that takes the lock again right after its lease ended would
# usually win against a process that was waiting for it, and could keep it for as long as
# it appends. So after a lease ends, a writer's next append first waits this long, letting
# a waiter (woken by the release) take its turn: after every lease while it has seen
# another writer lately (the lock was taken, or the file grew, when it took the lock), and
# after every _UNCONTENDED_PAUSE_EVERY-th lease otherwise, so that a waiter it cannot see
# waits a few leases at most while a lone writer rarely pauses.
_HANDOFF_SECONDS = 0.0002
_UNCONTENDED_PAUSE_EVERY = 8


def _after_fork_in_child() -> None:
    global _fork_generation, _keeper  # noqa: PLW0603 - process-wide state
    _fork_generation += 1
    _keeper = _LeaseKeeper()  # the parent's thread does not exist here
    for writer in list(_writers):
        writer._thread_lock = threading.Lock()
        writer._held = False  # the lock belongs to the parent's open file description
        if writer._fd >= 0:
            # The inherited descriptor shares the parent's open file description, and
            # with it any lock the parent holds: kept open here, it would keep that lock
            # alive after the parent died. The child opens its own on first use.
            with suppress(OSError):
                os.close(writer._fd)
            writer._fd = _REOPEN


os.register_at_fork(after_in_child=_after_fork_in_child)


def path_text(path: str | os.PathLike[str]) -> str:
    """`str(pathlib.Path(path))` without importing pathlib: "." for "", no "." parts, no
    repeated or trailing slashes, ".." kept; a str path only (pathlib refuses bytes too)."""
    text = os.fspath(path)
    if not isinstance(text, str):
        raise TypeError(f"a transcript path must be a str, not {type(text).__name__}")
    if text.startswith("/"):
        lead = "//" if text.startswith("//") and not text.startswith("///") else "/"
    else:
        lead = ""
    parts = [part for part in text.split("/") if part and part != "."]
    return lead + "/".join(parts) if parts else (lead or ".")


class JsonlTranscript:
    """An event sink that appends to a JSONL transcript file.

    Several writers (threads, processes) may append to one file. A writer appends only while
    it holds an exclusive `flock` on the file; when it takes the lock it learns the last
    `seq` and hash from the file if another writer moved it, and every line is written with
    one `os.write`. It keeps the lock for `lock_lease` seconds (default 5 ms) after taking
    it, so a burst of appends pays for the lock once: a busy writer gives it back after the
    append that finds the lease ended, and a background thread gives back the lock of an
    idle writer when its lease ends. With `lock_lease=0` the lock is taken and released around
    every append. Other writers wait for at most about one lease (longer only if this
    process cannot run Python code, e.g. while stopped). A torn tail left by a crash (an
    unterminated line, NULs, lines that are not events) is copied to `<path>.torn-<offset>`
    and cut off before the first append (`quarantined` lists what was set aside). A file
    that is not a transcript at all is refused when it is opened (see first_line.py).

    `fsync`: "always" syncs every line before `append` returns (so `ToolCalled` is on disk
    before the handler runs); "batch" syncs in the first append at least `batch_seconds`
    after the last sync, and in `close()` (no timer: an idle writer stays unsynced until
    then); "never" leaves it to the OS. A failed fsync makes the writer unusable: it is never
    retried. `max_event_bytes` caps one line (see limits.py); `redactor` rewrites secrets.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        fsync: FsyncMode = DEFAULT_FSYNC,
        batch_seconds: float = DEFAULT_BATCH_SECONDS,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        redactor: Redactor | None = None,
        lock_lease: float = DEFAULT_LOCK_LEASE,
    ) -> None:
        if fsync not in FSYNC_MODES:
            raise ValueError(f"fsync must be one of {', '.join(FSYNC_MODES)}, not {fsync!r}")
        if not lock_lease >= 0:
            raise ValueError(f"lock_lease must be >= 0 seconds, not {lock_lease!r}")
        # Kept as the text of Path(path) (the `path` property makes the Path itself when
        # asked: pathlib is slow to import, and a plain dispatch never needs it).
        self._path = path_text(path)
        self._path_obj: Path | None = None
        self.fsync: FsyncMode = fsync
        self.max_event_bytes = max_event_bytes
        self._batch_seconds = batch_seconds
        self._redactor = redactor if redactor is not None and redactor.active else None
        self._thread_lock = threading.Lock()
        self._lease = lock_lease
        self._held = False  # this writer holds the file's flock (see _LeaseKeeper)
        self._lease_end = 0.0  # monotonic time the lease ends (0: no lease, see _appended)
        self._resume_after = 0.0  # after a lease ended: no new lock before this time
        self._contended = False  # another writer was seen when the lock was last taken
        self._leases = 0  # leases ended so far
        self._fd = -1
        self._pid = -1
        self._generation = -1  # _fork_generation when _fd was opened
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
            check_first_line(self._fd, self._path)
        except (TranscriptFormatError, OSError) as exc:
            os.close(self._fd)
            self._fd = -1
            if isinstance(exc, OSError):
                raise TranscriptWriteError(
                    str(self.path), f"cannot read transcript {self.path}: {exc.strerror or exc}"
                ) from None
            raise
        _writers.add(self)

    def __repr__(self) -> str:
        return f"<JsonlTranscript(path={str(self.path)!r}, next_seq={self._next_seq})>"

    @property
    def path(self) -> Path:
        """The transcript's path."""
        if self._path_obj is None:
            from pathlib import Path

            self._path_obj = Path(self._path)
        return self._path_obj

    # --- lifecycle ------------------------------------------------------------------

    def _open(self) -> None:
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
        try:
            try:
                self._fd = os.open(self._path, flags | os.O_EXCL, 0o600)
                created = True
            except FileExistsError:
                self._fd = os.open(self._path, flags, 0o600)
                created = False
        except OSError as exc:
            raise TranscriptWriteError(
                str(self.path), f"cannot open transcript {self.path}: {exc.strerror}"
            ) from None
        if not stat.S_ISREG(os.fstat(self._fd).st_mode):
            # A device, FIFO or socket never grows: every append would see an empty file and
            # start a new transcript, and fsync fails on most of them at close.
            os.close(self._fd)
            self._fd = -1
            raise TranscriptWriteError(
                str(self.path),
                f"cannot write transcript {self.path}: it is not a regular file "
                "(a device, FIFO or socket cannot hold a transcript)",
            )
        self._pid = os.getpid()
        self._generation = _fork_generation
        self._held = False
        self._end = -1
        if created and self.fsync != "never":
            # The new name must survive a power loss too, not only the lines in it.
            try:
                sync_directory(self._path)
            except OSError as exc:
                self._die(f"cannot sync the directory of new transcript {self.path}", exc)

    def close(self) -> None:
        """Close the file; in batch mode sync it first (a failure is raised, not ignored)."""
        with self._thread_lock:
            self._release()
            fd, self._fd = self._fd, -1
            if fd < 0 or self._pid != os.getpid():
                return
            try:
                if self._unsynced:
                    os.fsync(fd)
            except OSError as exc:
                self._fatal = f"fsync of transcript {self.path} failed: {exc.strerror}"
                raise TranscriptWriteError(str(self.path), self._fatal) from None
            finally:
                os.close(fd)

    def __enter__(self) -> JsonlTranscript:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _die(self, what: str, exc: OSError) -> None:
        """A durability failure: close for good. The page cache state is unknown afterwards,
        so a retried fsync could report success for data that never reached the disk."""
        self._fatal = f"{what}: {exc.strerror}; the transcript writer stopped"
        self._release()
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)
        raise TranscriptWriteError(str(self.path), self._fatal) from None

    # --- appending ------------------------------------------------------------------

    def append(self, event: Event) -> int:
        """Append one event; return the seq it was given.

        One write per append while the writer holds the file's lock; taking the lock adds
        flock and an lseek (to learn whether another writer moved the file); an fsync
        follows when the mode asks for one.
        """
        with self._thread_lock:
            if not self._held or self._generation != _fork_generation:
                self._acquire(event.ts, event)
            try:
                seq = self._write_event(event)
                self._appended()
            except BaseException:  # e.g. an event that is not JSON, or Ctrl-C
                if not self._lease_end:  # no lease (lock_lease=0, fsync="always"): no
                    self._release()  # keeper ends this lock, so give it back now
                raise
            return seq

    def emit_tool_called(  # noqa: PLR0917 - positional: called on every dispatch
        self,
        ts: str,
        run_id: str,
        call_id: str,
        name: str,
        tool_input: JsonValue,
        input_json: bytes | None,
    ) -> None:
        """Append ToolCalled(...) without making the event (ToolRuntime's hot path).

        The line is the one `append(ToolCalled(...))` writes, byte for byte; anything
        unusual (no cached input JSON, redaction, a line over the cap, a field orjson
        refuses) takes `append`.
        """
        if input_json is not None and self._redactor is None:
            fields = tool_called_fields(ts, run_id, call_id, name, input_json)
            if self._append_direct(fields):
                return
        self.append(ToolCalled(ts, run_id, call_id, name, tool_input, input_json=input_json))

    def emit_tool_succeeded(  # noqa: PLR0917 - positional: called on every dispatch
        self,
        ts: str,
        run_id: str,
        call_id: str,
        name: str,
        output: JsonValue,
        duration_ms: float,
        output_json: bytes | None,
    ) -> None:
        """Append ToolSucceeded(...) without making the event (as emit_tool_called)."""
        if output_json is not None and self._redactor is None:
            fields = tool_succeeded_fields(ts, run_id, call_id, name, output_json, duration_ms)
            if self._append_direct(fields):
                return
        event = ToolSucceeded(ts, run_id, call_id, name, output, duration_ms)
        self.append(event)

    def _append_direct(self, fields: JsonObject) -> bool:
        """The direct route: write `fields` as the next line (encode_direct, inlined: this
        runs twice per dispatch); False (nothing written) when the line must take `append`
        instead (the first line of a file, a string orjson refuses, over the cap)."""
        with self._thread_lock:
            try:
                if not self._held or self._generation != _fork_generation:
                    self._acquire(fields["ts"])
                prev = self._prev
                if prev is None:
                    return False
                fields["seq"] = seq = self._next_seq
                fields["prev"] = prev
                try:
                    line = _dumps(fields, default=refuse_non_json, option=STRICT)
                except TypeError:
                    return False
                if len(line) > self.max_event_bytes:
                    return False
                self._write_line(line, seq)
                if _monotonic() >= self._lease_end or self.fsync != "never":
                    self._appended()
            except BaseException:
                if not self._lease_end:  # as in append: no keeper ends this lock
                    self._release()
                raise
            return True

    def _appended(self) -> None:
        """After a line is written: give the lock back if the lease ended; sync per the mode."""
        if self._held and _monotonic() >= self._lease_end:
            if self._lease_end:  # a lease (not the lock of a single append) ended
                self._end_lease()
            else:
                self._release()
        if self.fsync != "never":
            self._after_write()

    def _end_lease(self) -> None:
        """Release the lock at the end of a lease, and decide whether to pause before the
        next one (see _HANDOFF_SECONDS)."""
        self._release()
        self._leases += 1
        if self._contended or self._leases % _UNCONTENDED_PAUSE_EVERY == 0:
            self._resume_after = _monotonic() + _HANDOFF_SECONDS

    def _acquire(self, ts: str, event: Event | None = None) -> None:
        """Take the file's lock (under the thread lock) and catch up with other writers."""
        fd = self._fd
        if fd < 0 or self._generation != _fork_generation:
            fd = self._usable_fd()
        if self._resume_after:
            delay = self._resume_after - _monotonic()
            self._resume_after = 0.0
            if delay > 0:
                time.sleep(delay)
        try:
            _flock(fd, _LOCK_EX | _LOCK_NB)
            contended = False
        except BlockingIOError:  # another writer has it: wait for it
            _flock(fd, _LOCK_EX)
            contended = True
        try:
            size = _lseek(fd, 0, _SEEK_END)  # the file's size, cheaper than fstat
            if size != self._end or self._next_seq == 0:
                if self._end >= 0 and size != self._end:
                    contended = True  # another writer appended since this one's last lease
                self._catch_up(size, ts, event)
        except BaseException:
            _flock(fd, _LOCK_UN)
            raise
        self._held = True
        self._contended = contended
        # With fsync="always" every append ends in a sync, before which the lock is given
        # back (_after_write): a lease could never cover a second line, so none is taken.
        if self._lease > 0 and self.fsync != "always":
            self._lease_end = _monotonic() + self._lease
            _keeper.watch(self)
        else:
            self._lease_end = 0.0

    def _release(self) -> None:
        """Give the file's lock back, if this writer holds it (under the thread lock)."""
        if self._held:
            self._held = False
            if self._fd >= 0 and self._generation == _fork_generation:
                _flock(self._fd, _LOCK_UN)

    def _lease_expired(self) -> None:
        """The keeper's call: release the lock of a writer whose lease ended, unless it is
        appending (then that append gives it back when done)."""
        if not self._thread_lock.acquire(blocking=False):
            return
        try:
            if self._held and _monotonic() >= self._lease_end:
                self._end_lease()
        finally:
            self._thread_lock.release()

    def _usable_fd(self) -> int:
        if self._fd < 0 and self._fd != _REOPEN:
            raise TranscriptWriteError(
                str(self.path), self._fatal or f"transcript {self.path} is closed"
            )
        # After fork the descriptor (and its flock) is shared with the parent: a lock on it
        # would not exclude the parent, so the child opens its own.
        self._open()
        return self._fd

    def _catch_up(self, size: int, ts: str, event: Event | None) -> None:
        """Under the lock: follow another writer's appends, and start a new file's header.

        `ts` is the time of the event about to be appended (`event`, unless the caller has
        not made one): a header never postdates what follows it.
        """
        if size != self._end:
            self._resync(size)
        if self._next_seq == 0 and not isinstance(event, TranscriptStarted):
            self._write_event(TranscriptStarted(ts=ts, transcript_id=new_id()))

    def emit(self, event: Event) -> None:
        self.append(event)

    def recover(self) -> list[Quarantined]:
        """Under the lock, quarantine a torn or garbage tail now; return what was set aside."""
        with self._thread_lock:
            if self._fd < 0 or self._generation != _fork_generation:
                self._usable_fd()
            before = len(self.quarantined)
            self._release()  # _flocked unlocks the file when done: no lease survives it
            with self._flocked():
                self._resync(os.lseek(self._fd, 0, os.SEEK_END))
            return self.quarantined[before:]

    @contextmanager
    def _flocked(self) -> Iterator[None]:
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _after_write(self) -> None:
        now = time.monotonic()
        if self.fsync == "batch" and now - self._last_sync < self._batch_seconds:
            self._unsynced = True
            return
        # Other writers never wait for this writer's disk: the lease ends before a sync.
        self._release()
        try:
            os.fsync(self._fd)
        except OSError as exc:
            self._die(f"fsync of transcript {self.path} failed", exc)
        self._last_sync = now
        self._unsynced = False

    def _write_event(self, event: Event) -> int:
        seq = self._next_seq
        try:
            if self._redactor is None:
                line = encode_line(event, seq, self._prev)
            else:
                line = encode_wire(
                    self._redactor.redact_wire(event_to_wire(event, seq, self._prev))
                )
        except TypeError as exc:  # orjson.JSONEncodeError: bytes, lone surrogates, objects
            raise TranscriptWriteError(
                str(self.path),
                f"cannot record {event_type(event)} in {self.path}: not JSON ({exc})",
            ) from None
        # The cap guards against tool payloads; a run's tool definitions come from the
        # developer's own code and replay needs them whole, so RunStarted is never capped.
        if len(line) > self.max_event_bytes and not isinstance(event, RunStarted):
            line = self._capped(event, seq, len(line))
        self._write_line(line, seq)
        if isinstance(event, TranscriptStarted):
            self.transcript_id = event.transcript_id
        return seq

    def _write_line(self, line: bytes, seq: int) -> None:
        """Write the encoded line of event `seq` with its newline; advance seq and chain.

        If the write fails, the fragment is cut off (still under the lock), then the lock
        is given back; if it is interrupted, the lock is given back. Either way the next
        append takes the lock again and learns the file's state from it.
        """
        data = line + b"\n"
        start = self._end
        try:
            written = os.write(self._fd, data)
            if written != len(data):  # a short write: rare, so the loop lives elsewhere
                self._write_rest(data, written)
        except OSError as exc:
            try:
                self._unwrite(start, exc)
            finally:
                self._release()
        except BaseException:
            self._release()
            raise
        self._end = start + len(data)
        self._prev = _sha256(line).hexdigest()[:HASH_HEX_DIGITS]  # line_hash, inlined
        self._next_seq = seq + 1

    def _capped(self, event: Event, seq: int, size: int) -> bytes:
        """The line with its large payload replaced by a marker (see limits.py)."""
        wire = event_to_wire(event, seq, self._prev)
        if self._redactor is not None:
            wire = self._redactor.redact_wire(wire)
        line = encode_wire(wire) if shrink_wire(wire, self.max_event_bytes) else b""
        if not line or len(line) > self.max_event_bytes:
            raise TranscriptWriteError(
                str(self.path),
                f"cannot record {event_type(event)} in {self.path}: its line is {size} bytes, "
                f"over the {self.max_event_bytes}-byte event size cap",
            )
        return line

    def _write_rest(self, data: bytes, written: int) -> None:
        view = memoryview(data)[written:]
        while view:
            view = view[os.write(self._fd, view) :]

    def _unwrite(self, start: int, exc: OSError) -> NoReturn:
        """A write failed: never leave a fragment for the next append to glue onto."""
        try:
            os.ftruncate(self._fd, start)
        except OSError:
            self._end = -1
        raise TranscriptWriteError(
            str(self.path), f"cannot append to {self.path}: {exc.strerror}"
        ) from None

    # --- learning where the file ends ------------------------------------------------

    def _resync(self, size: int) -> None:
        """`_resync_to`, with a failed read or cut of the file said as a TranscriptWriteError."""
        try:
            self._resync_to(size)
        except OSError as exc:
            raise TranscriptWriteError(
                str(self.path),
                f"cannot append to {self.path}: reading or cutting its end failed: "
                f"{exc.strerror or exc}",
            ) from None

    def _resync_to(self, size: int) -> None:
        """Read the last event line (under the lock) to continue its seq and hash chain.

        Bytes after it that do not form events (an unterminated line, NULs, junk lines) are
        a torn tail: copied aside, then cut off. A line counts as an event exactly when the
        reader's decoder types it, so what is cut is exactly what the reader calls a torn
        tail; anything else would turn into damage in the middle once appended after.
        """
        self._end = -1  # unknown until understood: a failure below forces another resync
        self._next_seq, self._prev = 0, None
        if size == 0:
            self._end = 0
            return
        terminated = self._last_newline(size)  # just past the last "\n", or 0
        scan = terminated
        while scan > 0:
            line_start = self._last_newline(scan - 1)
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

    def _last_newline(self, end: int) -> int:
        return last_newline(self._fd, end)

    def _quarantine(self, offset: int, size: int) -> None:
        """Copy a tail aside (durably, under a name no earlier copy has), then cut it off."""
        try:
            aside = copy_aside(self._fd, self.path, offset, size)
        except OSError as exc:
            raise TranscriptWriteError(
                str(self.path),
                f"cannot set aside the torn tail of {self.path} (byte {offset}): {exc.strerror}; "
                "nothing was cut",
            ) from None
        os.ftruncate(self._fd, offset)
        self._end = offset
        self.quarantined.append(aside)
