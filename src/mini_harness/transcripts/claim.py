"""A run is continued once, and never while it runs: what a resume checks under the lock.

`mini-harness resume` reads a transcript, plans from it, then appends a run that names the
run it continues (`resumedFrom`). Between the read and that append another process may
have resumed the same run, or the run may still be running and have gone on. So the
writer appends that RunStarted (the claim) only after checking, under the file's lock:

- that no RunStarted written since the history was read resumes the same run;
- that no event of the runs the plan was built from was written since (the plan would be
  stale: a call it means to dispatch may have run meanwhile);
- that no open writer still holds the run as being written. Each writer holds an agent
  run from its RunStarted to its RunFinished with an open-file-description lock on one
  byte far past the end of the file (a byte chosen by the run id): the kernel drops it
  when the process dies, however it dies, and closing another descriptor of the file does
  not (unlike a classic fcntl lock). Linux only; elsewhere this third check is skipped.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import struct
from collections.abc import Callable, Iterator

import attrs

from mini_harness.errors import DecodeError, RunContinuedError, RunInProgressError
from mini_harness.events import Event, RunStarted
from mini_harness.events.wire import camel
from mini_harness.transcripts.codec import decode_line

_SCAN_BYTES = 1 << 20
_RUN_LOCKS = 1 << 62  # the run locks' bytes start here, far beyond any file's end
_GETLK: int | None = getattr(fcntl, "F_OFD_GETLK", None)
_SETLK: int | None = getattr(fcntl, "F_OFD_SETLK", None)
_FLOCK = struct.Struct("hhqqi4x")  # struct flock on 64-bit Linux; l_pid is 0 for OFD locks


def resumes(event: RunStarted) -> str | None:
    """The id of the run `event` resumes, if it resumes one."""
    return event.resumed_from.run_id if event.resumed_from is not None else None


def hold_run(fd: int, run_id: str, *, held: bool = True) -> None:
    """Say, with a lock on `fd`, that run `run_id` is being written through it (or, not
    `held`, no longer). A lock another writer holds already is left to it."""
    if _SETLK is not None:
        kind = fcntl.F_WRLCK if held else fcntl.F_UNLCK
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, _SETLK, _FLOCK.pack(kind, os.SEEK_SET, _lock_byte(run_id), 1, 0))


def is_held(fd: int, run_id: str) -> bool:
    """Whether another open file (in any process) holds run `run_id` as being written."""
    if _GETLK is None:
        return False
    query = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, _lock_byte(run_id), 1, 0)
    try:
        answer = fcntl.fcntl(fd, _GETLK, query)
    except OSError:  # a file system without these locks: no writer can hold one either
        return False
    return bool(_FLOCK.unpack(answer)[0] != fcntl.F_UNLCK)


def _lock_byte(run_id: str) -> int:
    return _RUN_LOCKS + int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:6], "big")


@attrs.frozen
class Claim:
    """The claim of a run that resumes run `run_id`, planned from the history as the file
    held it up to byte `since` (where its events ended before it was read), built from
    the events of the runs `read`."""

    run_id: str
    since: int
    read: frozenset[str]

    def check(self, fd: int, end: int) -> None:
        """Under the file's lock (its events end at `end`): raise RunContinuedError or
        RunInProgressError if the claim cannot be made."""
        if is_held(fd, self.run_id):
            raise RunInProgressError(self.run_id, changed=False)
        for event in _events_between(fd, self.since, end, self._markers()):
            if isinstance(event, RunStarted) and resumes(event) == self.run_id:
                raise RunContinuedError(self.run_id, event.run_id)
            if getattr(event, "run_id", None) in self.read:
                raise RunInProgressError(self.run_id, changed=True)

    def _markers(self) -> tuple[bytes, ...]:
        ids = sorted({self.run_id, *self.read})
        resumed, run = camel("resumed_from"), camel("run_id")  # as the wire spells them
        return (f'"{resumed}"'.encode(), *(f'"{run}":"{run_id}"'.encode() for run_id in ids))


class ContinuingSink:
    """The sink of a run that resumes another (JsonlTranscript.continuing): its RunStarted
    goes through `append_claimed` (the claim), every other event through `append`."""

    def __init__(
        self,
        claim: Claim,
        append: Callable[[Event], None],
        append_claimed: Callable[[Event], None],
    ) -> None:
        self.claim = claim
        self._append = append
        self._append_claimed = append_claimed

    def __repr__(self) -> str:
        return f"<ContinuingSink(run_id={self.claim.run_id!r}, since={self.claim.since})>"

    def emit(self, event: Event) -> None:
        if isinstance(event, RunStarted) and resumes(event) == self.claim.run_id:
            self._append_claimed(event)
        else:
            self._append(event)


def _events_between(fd: int, start: int, end: int, markers: tuple[bytes, ...]) -> Iterator[Event]:
    """The events of the whole lines between bytes `start` and `end` of `fd` that contain
    one of `markers` (the others cannot matter, and are not decoded). Usually there is
    nothing to read: no one else wrote since the history was read."""
    buffer = bytearray()  # the start of a line, until its end is read
    position = start
    while position < end:
        chunk = os.pread(fd, min(_SCAN_BYTES, end - position), position)
        if not chunk:
            break
        position += len(chunk)
        line_start, search = 0, len(buffer)  # no newline in what the buffer held
        buffer += chunk
        while (newline := buffer.find(b"\n", search)) >= 0:
            line = bytes(buffer[line_start:newline])
            line_start = search = newline + 1
            if any(marker in line for marker in markers):
                try:
                    yield decode_line(line).event
                except DecodeError:
                    continue
        del buffer[:line_start]
